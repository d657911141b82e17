package catalog

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Fitted step-pricing coefficients, one file per chip, written by
// `blis calibrate ops --write` from the measured per-operator tables in
// data/ops (never by hand). kernel/laws.go evaluates them.
//
//go:embed coeffs
var coeffFS embed.FS

// Provenance says where one fitted law comes from and how well it fits.
type Provenance struct {
	// Files are the measured tables the law was fitted from, relative to
	// the repository root (data/ops/...).
	Files []string `yaml:"files"`
	// Method is how the numbers were fitted.
	Method string `yaml:"method"`
	// Scope is which rows of the files the law covers: shapes, dtypes,
	// kernels, ranges, and the held-out rule.
	Scope string `yaml:"scope"`
	// Rows is how many rows the law was fitted on; HeldOutRows how many
	// rows of whole held-out shapes it was checked on.
	Rows        int `yaml:"rows"`
	HeldOutRows int `yaml:"held_out_rows"`
	// FitMAPE and HeldOutMAPE are mean absolute percentage errors, in
	// percent, on the fitted and the held-out rows. HeldOutMAPE is nil
	// when no whole shape could be held out.
	FitMAPE     float64  `yaml:"fit_mape_pct"`
	HeldOutMAPE *float64 `yaml:"held_out_mape_pct"`
}

// GEMMLaw prices one linear layer's GEMM (kernel.GEMMTime) for one weight
// dtype as vLLM runs it.
type GEMMLaw struct {
	Dtype string `yaml:"dtype"` // bfloat16, fp8 (per-tensor), fp8_block (128×128 blocks), nvfp4
	// PeakKey names the chip's peak the law scales: bf16_flops, fp8_flops
	// or fp4_flops. PeakFLOPS and MemBW are filled from the chip.
	PeakKey   string  `yaml:"peak"`
	PeakFLOPS float64 `yaml:"-"`
	MemBW     float64 `yaml:"-"`
	// WeightBytes per weight element (scales included) and ActBytes per
	// activation element the GEMM reads.
	WeightBytes float64 `yaml:"weight_bytes"`
	ActBytes    float64 `yaml:"act_bytes"`
	// EffMax is the fraction of the peak a large GEMM reaches; OutHalf the
	// output size m·n at which the reached fraction is half of EffMax.
	EffMax  float64 `yaml:"eff_max"`
	OutHalf float64 `yaml:"out_half"`
	// BWEff is the fraction of HBM bandwidth the GEMM streams at; T0 its
	// fixed device latency in seconds.
	BWEff float64 `yaml:"bw_eff"`
	T0    float64 `yaml:"t0_s"`
	// QuantPerRow (seconds per token) and QuantBWEff price the separate
	// kernel that quantizes the bf16 activations (0 when there is none).
	QuantPerRow float64 `yaml:"quant_per_row_s"`
	QuantBWEff  float64 `yaml:"quant_bw_eff"`
	// HostFloor is the per-call floor measured where the table was timed
	// without CUDA graphs (host launch overhead, seconds; 0 otherwise).
	HostFloor  float64    `yaml:"host_floor_s"`
	Provenance Provenance `yaml:"provenance"`
}

// AttnDecodeLaw prices a GQA/MHA decode attention call (kernel.AttnDecodeTime).
type AttnDecodeLaw struct {
	KVDtype string  `yaml:"kv_dtype"` // bfloat16, fp8
	Kernel  string  `yaml:"kernel"`   // the kernel_source the law was fitted on
	KVBytes float64 `yaml:"kv_bytes"` // bytes per cached K or V element
	MemBW   float64 `yaml:"-"`
	T0      float64 `yaml:"t0_s"`
	BWEff   float64 `yaml:"bw_eff"`
	// PerSeqHead is the fixed cost of one (sequence, KV head) work item, seconds.
	PerSeqHead float64    `yaml:"per_seq_head_s"`
	Provenance Provenance `yaml:"provenance"`
}

// AttnPrefillLaw prices a GQA/MHA prefill (context) attention call
// (kernel.AttnPrefillTime).
type AttnPrefillLaw struct {
	KVDtype   string  `yaml:"kv_dtype"`
	Kernel    string  `yaml:"kernel"`
	KVBytes   float64 `yaml:"kv_bytes"`
	PeakFLOPS float64 `yaml:"-"` // bf16_flops: attention runs in bf16
	MemBW     float64 `yaml:"-"`
	T0        float64 `yaml:"t0_s"`
	EffMax    float64 `yaml:"eff_max"`
	// WorkHalf is the query-rows × heads count at which the reached
	// fraction of the peak is half of EffMax.
	WorkHalf float64 `yaml:"work_half"`
	// SoftmaxDim is the per-(query, key, head) cost that does not scale
	// with the head dimension, in head-dim equivalents.
	SoftmaxDim float64    `yaml:"softmax_dim"`
	BWEff      float64    `yaml:"bw_eff"`
	Provenance Provenance `yaml:"provenance"`
}

// MLALaw prices a whole DeepSeek-style multi-head latent attention module
// (q/kv down- and up-projections, RoPE, attention, o_proj), decode or
// prefill (kernel.MLADecodeTime, kernel.MLAPrefillTime).
type MLALaw struct {
	GEMMDtype   string  `yaml:"gemm_dtype"` // bfloat16, fp8_block, nvfp4
	KVDtype     string  `yaml:"kv_dtype"`
	PeakKey     string  `yaml:"peak"`
	PeakFLOPS   float64 `yaml:"-"`
	MemBW       float64 `yaml:"-"`
	WeightBytes float64 `yaml:"weight_bytes"`
	KVBytes     float64 `yaml:"kv_bytes"`
	T0          float64 `yaml:"t0_s"`
	EffMax      float64 `yaml:"eff_max"`
	// WorkHalf is the tokens × heads count at which the reached fraction
	// of the peak is half of EffMax.
	WorkHalf float64 `yaml:"work_half"`
	BWEff    float64 `yaml:"bw_eff"`
	// PerSeqHead is a fixed cost per (sequence, head) in decode, seconds.
	PerSeqHead float64 `yaml:"per_seq_head_s"`
	// DSA laws only (kernel.DSADecodeTime, kernel.DSAPrefillTime): the
	// sparse kernel's query-head padding (the heads it computes for fewer
	// per rank), and the lightning indexer's cost per cached token scored
	// in decode and per (query, key) pair scored in prefill (fp8 logits,
	// their fp32 write and the top-k over them), seconds.
	PadHeads        float64 `yaml:"pad_heads,omitempty"`
	IndexerPerToken float64 `yaml:"indexer_per_token_s,omitempty"`
	IndexerPerPair  float64 `yaml:"indexer_per_pair_s,omitempty"`
	// MinHeads..MaxHeads are the query heads per rank the law was fitted
	// on when vLLM runs a different kernel for other head counts under the
	// same dtypes (DSA prefill: FlashMLA sparse's fp8 cache takes the
	// decode kernel below 32 heads; on Blackwell a bf16 cache takes
	// FlashInfer at ≤ 16 heads). Both 0: every head count.
	MinHeads   float64    `yaml:"min_heads,omitempty"`
	MaxHeads   float64    `yaml:"max_heads,omitempty"`
	Provenance Provenance `yaml:"provenance"`
}

// MoELaw prices a fused routed-expert MoE layer (kernel.MoETime).
type MoELaw struct {
	Dtype       string  `yaml:"dtype"` // moe_dtype of the table
	PeakKey     string  `yaml:"peak"`
	PeakFLOPS   float64 `yaml:"-"`
	MemBW       float64 `yaml:"-"`
	WeightBytes float64 `yaml:"weight_bytes"`
	T0          float64 `yaml:"t0_s"`
	EffMax      float64 `yaml:"eff_max"`
	// TokHalf is the tokens per local expert, WidthHalf the per-rank
	// intermediate width, at which each compute ramp is one half.
	TokHalf   float64 `yaml:"tok_half"`
	WidthHalf float64 `yaml:"width_half"`
	BWEff     float64 `yaml:"bw_eff"`
	// BWWidthHalf is the per-rank intermediate width at which the
	// streamed bandwidth is half of BWEff.
	BWWidthHalf float64 `yaml:"bw_width_half"`
	// PerRoutedElem is the permutation/reduction cost per routed token
	// (token × top-k) per hidden element, seconds.
	PerRoutedElem float64    `yaml:"per_routed_elem_s"`
	Provenance    Provenance `yaml:"provenance"`
}

// CommLaw prices one collective (kernel.CommTime): t = Alpha + bytes / BusBW
// per group size.
type CommLaw struct {
	Op         string      `yaml:"op"`   // all_reduce, all_gather, reduce_scatter, alltoall
	Impl       string      `yaml:"impl"` // nccl, vllm_custom
	Points     []CommPoint `yaml:"points"`
	Provenance Provenance  `yaml:"provenance"`
}

// CommPoint is the law for one group size.
type CommPoint struct {
	GPUs  int     `yaml:"gpus"`
	Alpha float64 `yaml:"alpha_s"`
	// BW is the effective bytes per second of the message (bytes / BW is
	// the size-proportional part of the time).
	BW float64 `yaml:"bw"`
	// Measured are the table's own timings at this group size, by message
	// size (the mean of repeated rows), ascending: an affine law misses
	// NCCL's protocol switches and its bandwidth still rising at hundreds
	// of MB, so kernel.CommTime interpolates these and uses Alpha + bytes/BW
	// only beyond the largest.
	Measured []CommSample `yaml:"measured,omitempty"`
}

// CommSample is one measured message size and its time.
type CommSample struct {
	Bytes   float64 `yaml:"bytes"`
	Seconds float64 `yaml:"s"`
}

// Coefficients is one chip's fitted laws.
type Coefficients struct {
	Chip string `yaml:"chip"` // the catalog chip name
	// Data is the folder of measured tables the laws were fitted from;
	// Origin where those tables come from.
	Data        string           `yaml:"data"`
	Origin      string           `yaml:"origin"`
	Generator   string           `yaml:"generator"`
	GEMM        []GEMMLaw        `yaml:"gemm"`
	AttnDecode  []AttnDecodeLaw  `yaml:"attention_decode"`
	AttnPrefill []AttnPrefillLaw `yaml:"attention_prefill"`
	MLADecode   []MLALaw         `yaml:"mla_decode"`
	MLAPrefill  []MLALaw         `yaml:"mla_prefill"`
	DSADecode   []MLALaw         `yaml:"dsa_decode,omitempty"`
	DSAPrefill  []MLALaw         `yaml:"dsa_prefill,omitempty"`
	// DeepSeek-V4 attention modules by layer kind, and its mHC pre/post.
	DSV4Decode  []DSV4AttnLaw `yaml:"dsv4_attention_decode,omitempty"`
	DSV4Prefill []DSV4AttnLaw `yaml:"dsv4_attention_prefill,omitempty"`
	MHC         []MHCLaw      `yaml:"mhc,omitempty"`
	MoE         []MoELaw      `yaml:"moe"`
	Comm        []CommLaw     `yaml:"comm"`
	GDN         []GDNLaw      `yaml:"gdn,omitempty"` // Gated DeltaNet kernels (coeffs_gdn.go)
	// BorrowedFrom is the sibling chip whose laws these are (Chip's
	// CoefficientsFrom), resolved against this chip's peaks; "" when the
	// laws were fitted on this chip's own tables.
	BorrowedFrom string `yaml:"-"`
	// GEMMGrids are the GEMM laws' residual grids (<chip>.gemm-grid.txt),
	// shared read-only between copies.
	GEMMGrids []GEMMGrid `yaml:"-"`
	// MoEGrids are the MoE laws' residuals at the measured layouts
	// (<chip>.moe-grid.txt), shared read-only between copies.
	MoEGrids []MoEGrid `yaml:"-"`
}

// GEMMFor returns the GEMM law for a weight dtype.
func (c *Coefficients) GEMMFor(dtype string) (*GEMMLaw, error) {
	return lawFor(c, "gemm", "dtype", c.GEMM, func(l *GEMMLaw) []string { return []string{l.Dtype} }, dtype)
}

// AttnDecodeFor returns the decode-attention law for a KV-cache dtype.
func (c *Coefficients) AttnDecodeFor(kvDtype string) (*AttnDecodeLaw, error) {
	return lawFor(c, "attention_decode", "kv_dtype", c.AttnDecode, func(l *AttnDecodeLaw) []string { return []string{l.KVDtype} }, kvDtype)
}

// AttnPrefillFor returns the prefill-attention law for a KV-cache dtype.
func (c *Coefficients) AttnPrefillFor(kvDtype string) (*AttnPrefillLaw, error) {
	return lawFor(c, "attention_prefill", "kv_dtype", c.AttnPrefill, func(l *AttnPrefillLaw) []string { return []string{l.KVDtype} }, kvDtype)
}

// MLADecodeFor and MLAPrefillFor return the MLA module law for a GEMM dtype
// and KV-cache dtype.
func (c *Coefficients) MLADecodeFor(gemmDtype, kvDtype string) (*MLALaw, error) {
	return c.mlaFor("mla_decode", c.MLADecode, gemmDtype, kvDtype)
}

// MLAPrefillFor: see MLADecodeFor.
func (c *Coefficients) MLAPrefillFor(gemmDtype, kvDtype string) (*MLALaw, error) {
	return c.mlaFor("mla_prefill", c.MLAPrefill, gemmDtype, kvDtype)
}

func (c *Coefficients) mlaFor(section string, laws []MLALaw, gemmDtype, kvDtype string) (*MLALaw, error) {
	return lawFor(c, section, "gemm_dtype/kv_dtype", laws, func(l *MLALaw) []string { return []string{l.GEMMDtype, l.KVDtype} }, gemmDtype, kvDtype)
}

// DSADecodeFor and DSAPrefillFor return the DeepSeek-sparse-attention
// module law for a GEMM dtype and KV-cache dtype.
func (c *Coefficients) DSADecodeFor(gemmDtype, kvDtype string) (*MLALaw, error) {
	return c.mlaFor("dsa_decode", c.DSADecode, gemmDtype, kvDtype)
}

// DSAPrefillFor: see DSADecodeFor; heads (per rank) picks among laws
// fitted on different head ranges: the one whose range holds heads, else
// the nearest range (the larger heads on a tie).
func (c *Coefficients) DSAPrefillFor(gemmDtype, kvDtype string, heads float64) (*MLALaw, error) {
	var best *MLALaw
	bestDist := math.Inf(1)
	for i := range c.DSAPrefill {
		l := &c.DSAPrefill[i]
		if l.GEMMDtype != gemmDtype || l.KVDtype != kvDtype {
			continue
		}
		d := 0.0
		switch {
		case l.MinHeads == 0 && l.MaxHeads == 0:
		case heads < l.MinHeads:
			d = l.MinHeads - heads
		case heads > l.MaxHeads:
			d = heads - l.MaxHeads + 0.5 // a tie goes to the larger heads' range
		}
		if d < bestDist {
			best, bestDist = l, d
		}
	}
	if best != nil {
		return best, nil
	}
	return c.mlaFor("dsa_prefill", c.DSAPrefill, gemmDtype, kvDtype)
}

// MoEFor returns the MoE law for a moe_dtype.
func (c *Coefficients) MoEFor(dtype string) (*MoELaw, error) {
	return lawFor(c, "moe", "dtype", c.MoE, func(l *MoELaw) []string { return []string{l.Dtype} }, dtype)
}

// CommFor returns the law of one collective and implementation.
func (c *Coefficients) CommFor(op, impl string) (*CommLaw, error) {
	return lawFor(c, "comm", "op/impl", c.Comm, func(l *CommLaw) []string { return []string{l.Op, l.Impl} }, op, impl)
}

// lawFor returns the first of laws whose key (key's parts) is want, or an
// error naming the section, the key and the keys fitted, parts joined by
// "/". Every section's lookup is this one.
func lawFor[T any](c *Coefficients, section, keyName string, laws []T, key func(*T) []string, want ...string) (*T, error) {
	for i := range laws {
		if slices.Equal(key(&laws[i]), want) {
			return &laws[i], nil
		}
	}
	names := make([]string, len(laws))
	for i := range laws {
		names[i] = strings.Join(key(&laws[i]), "/")
	}
	return nil, fmt.Errorf("coefficients for %s: no %s law for %s %q; fitted: %s", c.Chip, section, keyName, strings.Join(want, "/"), strings.Join(names, ", "))
}

// Peak keys a law may name, and the chip field each reads.
var peakKeys = map[string]func(*Chip) float64{
	"bf16_flops": func(c *Chip) float64 { return c.BF16FLOPS },
	"fp8_flops":  func(c *Chip) float64 { return c.FP8FLOPS },
	"fp4_flops":  func(c *Chip) float64 { return c.FP4FLOPS },
}

// ParseCoefficients decodes one coefficient file strictly: unknown keys,
// missing provenance and impossible numbers are errors naming the file and
// the key. It does not resolve the chip; see Resolve.
func ParseCoefficients(name string, data []byte) (*Coefficients, error) {
	var c Coefficients
	if err := decodeStrictYAML(name, data, &c); err != nil {
		return nil, err
	}
	if err := c.validate(name); err != nil {
		return nil, err
	}
	return &c, nil
}

type checker struct {
	file string
	err  error
}

func (k *checker) failf(key, format string, args ...any) {
	if k.err == nil {
		k.err = fmt.Errorf("%s: key %q: %s", k.file, key, fmt.Sprintf(format, args...))
	}
}

// num checks one number: finite and in [lo, hi].
func (k *checker) num(key string, v, lo, hi float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		k.failf(key, "%g is outside [%g, %g]", v, lo, hi)
	}
}

func (k *checker) str(key, v string) {
	if strings.TrimSpace(v) == "" {
		k.failf(key, "missing")
	}
}

func (k *checker) peak(key, v string) {
	if _, ok := peakKeys[v]; !ok {
		k.failf(key, "%q is not one of bf16_flops, fp8_flops, fp4_flops", v)
	}
}

func (k *checker) prov(key string, p Provenance) {
	if len(p.Files) == 0 {
		k.failf(key+".files", "missing (every law names the tables it was fitted from)")
	}
	for _, f := range p.Files {
		if !strings.HasPrefix(f, "data/ops/") {
			k.failf(key+".files", "%q is not under data/ops/", f)
		}
	}
	k.str(key+".method", p.Method)
	k.str(key+".scope", p.Scope)
	if p.Rows < 1 {
		k.failf(key+".rows", "%d: a law is fitted on at least one row", p.Rows)
	}
	if p.HeldOutRows < 0 {
		k.failf(key+".held_out_rows", "%d is negative", p.HeldOutRows)
	}
	k.num(key+".fit_mape_pct", p.FitMAPE, 0, 1e6)
	if p.HeldOutMAPE != nil {
		k.num(key+".held_out_mape_pct", *p.HeldOutMAPE, 0, 1e6)
		if p.HeldOutRows == 0 {
			k.failf(key+".held_out_mape_pct", "set with held_out_rows 0")
		}
	} else if p.HeldOutRows > 0 {
		k.failf(key+".held_out_mape_pct", "missing with %d held-out rows", p.HeldOutRows)
	}
}

const (
	maxSeconds = 1.0  // no fixed cost reaches a second
	maxEff     = 10.0 // fractions of a catalog peak; >1 only when the catalog peak is low
	maxBytes   = 8.0  // bytes per element
)

func (c *Coefficients) validate(file string) error {
	k := &checker{file: file}
	if c.Chip == "" || c.Chip != strings.ToLower(c.Chip) {
		k.failf("chip", "want a non-empty lower-case chip name, got %q", c.Chip)
	}
	k.str("data", c.Data)
	k.str("origin", c.Origin)
	k.str("generator", c.Generator)
	seen := map[string]bool{}
	dup := func(section, id string) {
		if seen[section+"\x00"+id] {
			k.failf(section, "%q appears twice", id)
		}
		seen[section+"\x00"+id] = true
	}
	for i, l := range c.GEMM {
		p := fmt.Sprintf("gemm[%d]", i)
		k.str(p+".dtype", l.Dtype)
		dup("gemm", l.Dtype)
		k.peak(p+".peak", l.PeakKey)
		k.num(p+".weight_bytes", l.WeightBytes, 1e-3, maxBytes)
		k.num(p+".act_bytes", l.ActBytes, 1e-3, maxBytes)
		k.num(p+".eff_max", l.EffMax, 1e-6, maxEff)
		k.num(p+".out_half", l.OutHalf, 0, 1e15)
		k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
		k.num(p+".t0_s", l.T0, 0, maxSeconds)
		k.num(p+".quant_per_row_s", l.QuantPerRow, 0, maxSeconds)
		k.num(p+".quant_bw_eff", l.QuantBWEff, 0, maxEff)
		k.num(p+".host_floor_s", l.HostFloor, 0, maxSeconds)
		k.prov(p+".provenance", l.Provenance)
	}
	for i, l := range c.AttnDecode {
		p := fmt.Sprintf("attention_decode[%d]", i)
		k.str(p+".kv_dtype", l.KVDtype)
		dup("attention_decode", l.KVDtype)
		k.str(p+".kernel", l.Kernel)
		k.num(p+".kv_bytes", l.KVBytes, 1e-3, maxBytes)
		k.num(p+".t0_s", l.T0, 0, maxSeconds)
		k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
		k.num(p+".per_seq_head_s", l.PerSeqHead, 0, maxSeconds)
		k.prov(p+".provenance", l.Provenance)
	}
	for i, l := range c.AttnPrefill {
		p := fmt.Sprintf("attention_prefill[%d]", i)
		k.str(p+".kv_dtype", l.KVDtype)
		dup("attention_prefill", l.KVDtype)
		k.str(p+".kernel", l.Kernel)
		k.num(p+".kv_bytes", l.KVBytes, 1e-3, maxBytes)
		k.num(p+".t0_s", l.T0, 0, maxSeconds)
		k.num(p+".eff_max", l.EffMax, 1e-6, maxEff)
		k.num(p+".work_half", l.WorkHalf, 0, 1e15)
		k.num(p+".softmax_dim", l.SoftmaxDim, 0, 1e6)
		k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
		k.prov(p+".provenance", l.Provenance)
	}
	// Sections in the file's order, so that the first fault reported is
	// the same every run.
	for _, s := range []struct {
		sec  string
		laws []MLALaw
	}{{"mla_decode", c.MLADecode}, {"mla_prefill", c.MLAPrefill}, {"dsa_decode", c.DSADecode}, {"dsa_prefill", c.DSAPrefill}} {
		sec := s.sec
		for i, l := range s.laws {
			p := fmt.Sprintf("%s[%d]", sec, i)
			k.str(p+".gemm_dtype", l.GEMMDtype)
			k.str(p+".kv_dtype", l.KVDtype)
			dup(sec, fmt.Sprintf("%s/%s/%g-%g", l.GEMMDtype, l.KVDtype, l.MinHeads, l.MaxHeads))
			if l.MaxHeads < l.MinHeads {
				k.failf(p+".max_heads", "%g is below min_heads %g", l.MaxHeads, l.MinHeads)
			}
			k.peak(p+".peak", l.PeakKey)
			k.num(p+".weight_bytes", l.WeightBytes, 1e-3, maxBytes)
			k.num(p+".kv_bytes", l.KVBytes, 1e-3, maxBytes)
			k.num(p+".t0_s", l.T0, 0, maxSeconds)
			k.num(p+".eff_max", l.EffMax, 1e-6, maxEff)
			k.num(p+".work_half", l.WorkHalf, 0, 1e15)
			k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
			k.num(p+".per_seq_head_s", l.PerSeqHead, 0, maxSeconds)
			k.num(p+".pad_heads", l.PadHeads, 0, 1e4)
			k.num(p+".indexer_per_token_s", l.IndexerPerToken, 0, maxSeconds)
			k.num(p+".indexer_per_pair_s", l.IndexerPerPair, 0, maxSeconds)
			k.num(p+".min_heads", l.MinHeads, 0, 1e4)
			k.num(p+".max_heads", l.MaxHeads, 0, 1e4)
			k.prov(p+".provenance", l.Provenance)
		}
	}
	c.validateDSV4(k, dup)
	for i, l := range c.MoE {
		p := fmt.Sprintf("moe[%d]", i)
		k.str(p+".dtype", l.Dtype)
		dup("moe", l.Dtype)
		k.peak(p+".peak", l.PeakKey)
		k.num(p+".weight_bytes", l.WeightBytes, 1e-3, maxBytes)
		k.num(p+".t0_s", l.T0, 0, maxSeconds)
		k.num(p+".eff_max", l.EffMax, 1e-6, maxEff)
		k.num(p+".tok_half", l.TokHalf, 0, 1e12)
		k.num(p+".width_half", l.WidthHalf, 0, 1e12)
		k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
		k.num(p+".bw_width_half", l.BWWidthHalf, 0, 1e12)
		k.num(p+".per_routed_elem_s", l.PerRoutedElem, 0, maxSeconds)
		k.prov(p+".provenance", l.Provenance)
	}
	for i, l := range c.Comm {
		p := fmt.Sprintf("comm[%d]", i)
		k.str(p+".op", l.Op)
		k.str(p+".impl", l.Impl)
		dup("comm", l.Op+"/"+l.Impl)
		if len(l.Points) == 0 {
			k.failf(p+".points", "missing or empty")
		}
		last := 0
		for j, pt := range l.Points {
			q := fmt.Sprintf("%s.points[%d]", p, j)
			if pt.GPUs < 2 || pt.GPUs <= last {
				k.failf(q+".gpus", "%d: want group sizes ≥ 2 in increasing order", pt.GPUs)
			}
			last = pt.GPUs
			k.num(q+".alpha_s", pt.Alpha, 0, maxSeconds)
			k.num(q+".bw", pt.BW, 1, 1e15)
			for m, s := range pt.Measured {
				r := fmt.Sprintf("%s.measured[%d]", q, m)
				k.num(r+".bytes", s.Bytes, 1, 1e15)
				k.num(r+".s", s.Seconds, 1e-9, maxSeconds)
				if m > 0 && s.Bytes <= pt.Measured[m-1].Bytes {
					k.failf(r+".bytes", "%g: want message sizes in increasing order", s.Bytes)
				}
			}
		}
		k.prov(p+".provenance", l.Provenance)
	}
	c.validateGDN(k, dup)
	return k.err
}

// Resolve fills each law's chip peaks (PeakFLOPS, MemBW) from ch, which
// must be the chip the file names.
func (c *Coefficients) Resolve(ch *Chip) error {
	if ch.Name != c.Chip {
		return fmt.Errorf("coefficients for %q resolved against chip %q", c.Chip, ch.Name)
	}
	peak := func(key string) (float64, error) {
		v := peakKeys[key](ch)
		if v <= 0 {
			return 0, fmt.Errorf("coefficients for %s: the law needs the chip's %s, which is 0", c.Chip, key)
		}
		return v, nil
	}
	var err error
	for i := range c.GEMM {
		l := &c.GEMM[i]
		if l.PeakFLOPS, err = peak(l.PeakKey); err != nil {
			return err
		}
		l.MemBW = ch.MemBW
	}
	for i := range c.AttnDecode {
		c.AttnDecode[i].MemBW = ch.MemBW
	}
	for i := range c.GDN {
		c.GDN[i].PeakFLOPS, c.GDN[i].MemBW = ch.BF16FLOPS, ch.MemBW
	}
	for i := range c.AttnPrefill {
		c.AttnPrefill[i].PeakFLOPS, c.AttnPrefill[i].MemBW = ch.BF16FLOPS, ch.MemBW
	}
	for _, laws := range [][]MLALaw{c.MLADecode, c.MLAPrefill, c.DSADecode, c.DSAPrefill} {
		for i := range laws {
			if laws[i].PeakFLOPS, err = peak(laws[i].PeakKey); err != nil {
				return err
			}
			laws[i].MemBW = ch.MemBW
		}
	}
	if err := c.resolveDSV4(ch, peak); err != nil {
		return err
	}
	for i := range c.MoE {
		if c.MoE[i].PeakFLOPS, err = peak(c.MoE[i].PeakKey); err != nil {
			return err
		}
		c.MoE[i].MemBW = ch.MemBW
	}
	return nil
}

// MarshalCoefficients writes c in the embedded files' form. Same input,
// same bytes: fields in declaration order, laws in the order given,
// floats in Go's shortest exact form.
func MarshalCoefficients(c *Coefficients) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# Fitted step-pricing coefficients for " + c.Chip + ".\n")
	buf.WriteString("# Written by `blis calibrate ops --write` from " + c.Data + "; do not edit by hand.\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// RoundSig rounds x to sig significant digits, the precision the
// coefficient files keep.
func RoundSig(x float64, sig int) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', sig, 64), 64)
	return v
}

type coeffRegistry struct {
	byChip map[string]*Coefficients
	err    error
}

var (
	coeffOnce sync.Once
	coeffReg  coeffRegistry
)

func loadCoefficients(fsys fs.FS) coeffRegistry {
	r := coeffRegistry{byChip: map[string]*Coefficients{}}
	all, err := loadNamedYAML(fsys, "coeffs/*.yaml", "chip", ParseCoefficients, func(c *Coefficients) string { return c.Chip })
	if err != nil {
		return coeffRegistry{err: err}
	}
	for _, c := range all {
		r.byChip[c.Chip] = c
	}
	if err := loadGEMMGrids(fsys, r.byChip); err != nil {
		return coeffRegistry{err: err}
	}
	if err := loadMoEGrids(fsys, r.byChip); err != nil {
		return coeffRegistry{err: err}
	}
	return r
}

// CoefficientChips lists the chips that have fitted coefficients, sorted.
func CoefficientChips() []string {
	coeffOnce.Do(func() { coeffReg = loadCoefficients(coeffFS) })
	var out []string
	for k := range coeffReg.byChip {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ErrNoCoefficients marks LookupCoefficients' error for a chip with no
// fitted coefficients, neither its own nor a sibling's it borrows
// (coefficients_from).
var ErrNoCoefficients = errors.New("has no fitted coefficients")

// LookupCoefficients returns the fitted laws for a chip (any name or alias
// LookupChip accepts), with the chip's peaks filled in. The result is a
// fresh copy. Chips without measured per-operator tables have no file; for
// them the error wraps ErrNoCoefficients.
func LookupCoefficients(chip string) (*Coefficients, error) {
	coeffOnce.Do(func() { coeffReg = loadCoefficients(coeffFS) })
	if coeffReg.err != nil {
		return nil, coeffReg.err
	}
	ch, err := LookupChip(chip)
	if err != nil {
		return nil, err
	}
	c, ok := coeffReg.byChip[ch.Name]
	if !ok && ch.CoefficientsFrom != "" {
		if sib, ok2 := coeffReg.byChip[ch.CoefficientsFrom]; ok2 {
			cp := sib.clone()
			cp.Chip, cp.BorrowedFrom = ch.Name, sib.Chip
			if err := cp.Resolve(ch); err != nil {
				return nil, err
			}
			return cp, nil
		}
	}
	if !ok {
		have := CoefficientChips()
		return nil, fmt.Errorf("chip %q %w: only %s have measured per-operator tables (data/ops) to fit from", ch.Name, ErrNoCoefficients, strings.Join(have, ", "))
	}
	cp := c.clone()
	if err := cp.Resolve(ch); err != nil {
		return nil, err
	}
	return cp, nil
}

func (p Provenance) clone() Provenance {
	p.Files = append([]string(nil), p.Files...)
	if p.HeldOutMAPE != nil {
		v := *p.HeldOutMAPE
		p.HeldOutMAPE = &v
	}
	return p
}

// lawWithProvenance is a law type whose provenance clone deep-copies.
type lawWithProvenance[T any] interface {
	*T
	provenance() *Provenance
}

func (l *GEMMLaw) provenance() *Provenance        { return &l.Provenance }
func (l *AttnDecodeLaw) provenance() *Provenance  { return &l.Provenance }
func (l *AttnPrefillLaw) provenance() *Provenance { return &l.Provenance }
func (l *MLALaw) provenance() *Provenance         { return &l.Provenance }
func (l *MoELaw) provenance() *Provenance         { return &l.Provenance }

// cloneLaws copies laws with their provenance, sharing no slice.
func cloneLaws[T any, P lawWithProvenance[T]](laws []T) []T {
	out := append([]T(nil), laws...)
	for i := range out {
		p := P(&out[i]).provenance()
		*p = p.clone()
	}
	return out
}

func (c *Coefficients) clone() *Coefficients {
	d := *c
	d.GEMM = cloneLaws(c.GEMM)
	d.AttnDecode = cloneLaws(c.AttnDecode)
	d.AttnPrefill = cloneLaws(c.AttnPrefill)
	d.MLADecode = cloneLaws(c.MLADecode)
	d.MLAPrefill = cloneLaws(c.MLAPrefill)
	d.DSADecode = cloneLaws(c.DSADecode)
	d.DSAPrefill = cloneLaws(c.DSAPrefill)
	d.DSV4Decode = cloneLaws(c.DSV4Decode)
	d.DSV4Prefill = cloneLaws(c.DSV4Prefill)
	d.MHC = cloneLaws(c.MHC)
	d.MoE = cloneLaws(c.MoE)
	d.GDN = cloneLaws(c.GDN)
	d.Comm = append([]CommLaw(nil), c.Comm...)
	for i := range d.Comm {
		d.Comm[i].Points = append([]CommPoint(nil), c.Comm[i].Points...)
		for j := range d.Comm[i].Points {
			d.Comm[i].Points[j].Measured = append([]CommSample(nil), c.Comm[i].Points[j].Measured...)
		}
		d.Comm[i].Provenance = d.Comm[i].Provenance.clone()
	}
	return &d
}
