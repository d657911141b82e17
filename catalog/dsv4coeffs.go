package catalog

import "fmt"

// DSV4AttnLaw prices a whole DeepSeek-V4 attention module (vLLM 0.24.0
// vllm/models/deepseek_v4/attention.py DeepseekV4Attention: q low-rank
// projections, the single 512-dim KV head, the KV compressor, for CSA the
// lightning indexer, FlashMLA's sparse attention over the sliding window
// plus the compressed entries, and the grouped low-rank output
// projection), decode or prefill (kernel.DSV4DecodeTime,
// kernel.DSV4PrefillTime), for one layer kind: "csa" (compress ratio 4,
// top-k of the compressed entries chosen by the indexer) or "hca" (compress
// ratio 128, every compressed entry).
type DSV4AttnLaw struct {
	Kind        string  `yaml:"kind"`       // csa, hca
	GEMMDtype   string  `yaml:"gemm_dtype"` // fp8_block
	KVDtype     string  `yaml:"kv_dtype"`
	PeakKey     string  `yaml:"peak"`
	PeakFLOPS   float64 `yaml:"-"`
	MemBW       float64 `yaml:"-"`
	WeightBytes float64 `yaml:"weight_bytes"`
	KVBytes     float64 `yaml:"kv_bytes"`
	// PadHeads is the query heads the sparse kernel computes for fewer per
	// rank (FlashMLA's sparse kernels pad to 64 on SM90, 128 on SM100).
	PadHeads float64 `yaml:"pad_heads"`
	T0       float64 `yaml:"t0_s"`
	// EffMax and AttnEff are the fractions of the peak the projections
	// and the sparse attention reach at large work; WorkHalf is the
	// tokens × padded heads at which half of that is reached.
	EffMax   float64 `yaml:"eff_max"`
	AttnEff  float64 `yaml:"attn_eff"`
	WorkHalf float64 `yaml:"work_half"`
	BWEff    float64 `yaml:"bw_eff"`
	// Decode only: a fixed cost per (decode row, padded head), and the CSA
	// indexer's cost per compressed key scored (fp8 logits, their write
	// and the top-k over them), seconds.
	PerSeqHead      float64 `yaml:"per_seq_head_s,omitempty"`
	IndexerPerToken float64 `yaml:"indexer_per_token_s,omitempty"`
	// Prefill only: the cost per new token outside the GEMMs and the
	// attention, the CSA indexer's per (query, compressed key) pair scored,
	// and per compressed entry of each sequence's cache, seconds.
	PerToken       float64    `yaml:"per_token_s,omitempty"`
	IndexerPerPair float64    `yaml:"indexer_per_pair_s,omitempty"`
	PerCachedEntry float64    `yaml:"per_cached_entry_s,omitempty"`
	Provenance     Provenance `yaml:"provenance"`
}

// MHCLaw prices one DeepSeek-V4 manifold-constrained hyper-connection
// call (kernel.MHCTime): "pre" (vLLM's mhc_pre_tilelang: RMS-normalise the
// hc_mult residual streams, mix coefficients, Sinkhorn, and the weighted
// sum that is the sub-layer's input) or "post" (mhc_post_tilelang: the
// sub-layer output and the mixed streams written back as the new residual).
type MHCLaw struct {
	Op    string  `yaml:"op"` // pre, post
	MemBW float64 `yaml:"-"`
	T0    float64 `yaml:"t0_s"`
	BWEff float64 `yaml:"bw_eff"`
	// PerToken is the per-token cost beyond the bytes (the Sinkhorn
	// iterations on each token's hc_mult × hc_mult matrix), seconds.
	PerToken   float64    `yaml:"per_token_s"`
	Provenance Provenance `yaml:"provenance"`
}

func (l *DSV4AttnLaw) provenance() *Provenance { return &l.Provenance }
func (l *MHCLaw) provenance() *Provenance      { return &l.Provenance }

// DSV4DecodeFor and DSV4PrefillFor return the DeepSeek-V4 attention module
// law for a layer kind (csa, hca), GEMM dtype and KV-cache dtype.
func (c *Coefficients) DSV4DecodeFor(kind, gemmDtype, kvDtype string) (*DSV4AttnLaw, error) {
	return c.dsv4For("dsv4_attention_decode", c.DSV4Decode, kind, gemmDtype, kvDtype)
}

// DSV4PrefillFor: see DSV4DecodeFor.
func (c *Coefficients) DSV4PrefillFor(kind, gemmDtype, kvDtype string) (*DSV4AttnLaw, error) {
	return c.dsv4For("dsv4_attention_prefill", c.DSV4Prefill, kind, gemmDtype, kvDtype)
}

func (c *Coefficients) dsv4For(section string, laws []DSV4AttnLaw, kind, gemmDtype, kvDtype string) (*DSV4AttnLaw, error) {
	return lawFor(c, section, "kind/gemm_dtype/kv_dtype", laws, func(l *DSV4AttnLaw) []string { return []string{l.Kind, l.GEMMDtype, l.KVDtype} }, kind, gemmDtype, kvDtype)
}

// MHCFor returns the mHC law for op (pre, post).
func (c *Coefficients) MHCFor(op string) (*MHCLaw, error) {
	return lawFor(c, "mhc", "op", c.MHC, func(l *MHCLaw) []string { return []string{l.Op} }, op)
}

// validateDSV4 checks the DeepSeek-V4 sections.
func (c *Coefficients) validateDSV4(k *checker, dup func(section, id string)) {
	for _, s := range []struct {
		sec  string
		laws []DSV4AttnLaw
	}{{"dsv4_attention_decode", c.DSV4Decode}, {"dsv4_attention_prefill", c.DSV4Prefill}} { // in file order
		sec := s.sec
		for i, l := range s.laws {
			p := fmt.Sprintf("%s[%d]", sec, i)
			if l.Kind != "csa" && l.Kind != "hca" {
				k.failf(p+".kind", "%q is not csa or hca", l.Kind)
			}
			k.str(p+".gemm_dtype", l.GEMMDtype)
			k.str(p+".kv_dtype", l.KVDtype)
			dup(sec, l.Kind+"/"+l.GEMMDtype+"/"+l.KVDtype)
			k.peak(p+".peak", l.PeakKey)
			k.num(p+".weight_bytes", l.WeightBytes, 1e-3, maxBytes)
			k.num(p+".kv_bytes", l.KVBytes, 1e-3, maxBytes)
			k.num(p+".pad_heads", l.PadHeads, 0, 1e4)
			k.num(p+".t0_s", l.T0, 0, maxSeconds)
			k.num(p+".eff_max", l.EffMax, 1e-6, maxEff)
			k.num(p+".attn_eff", l.AttnEff, 1e-6, maxEff)
			k.num(p+".work_half", l.WorkHalf, 0, 1e15)
			k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
			k.num(p+".per_seq_head_s", l.PerSeqHead, 0, maxSeconds)
			k.num(p+".indexer_per_token_s", l.IndexerPerToken, 0, maxSeconds)
			k.num(p+".per_token_s", l.PerToken, 0, maxSeconds)
			k.num(p+".indexer_per_pair_s", l.IndexerPerPair, 0, maxSeconds)
			k.num(p+".per_cached_entry_s", l.PerCachedEntry, 0, maxSeconds)
			if l.Kind == "hca" && l.IndexerPerToken != 0 {
				k.failf(p+".indexer_per_token_s", "an hca law has no indexer")
			}
			if l.Kind == "hca" && l.IndexerPerPair != 0 {
				k.failf(p+".indexer_per_pair_s", "an hca law has no indexer")
			}
			k.prov(p+".provenance", l.Provenance)
		}
	}
	for i, l := range c.MHC {
		p := fmt.Sprintf("mhc[%d]", i)
		if l.Op != "pre" && l.Op != "post" {
			k.failf(p+".op", "%q is not pre or post", l.Op)
		}
		dup("mhc", l.Op)
		k.num(p+".t0_s", l.T0, 0, maxSeconds)
		k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
		k.num(p+".per_token_s", l.PerToken, 0, maxSeconds)
		k.prov(p+".provenance", l.Provenance)
	}
}

// resolveDSV4 fills the DeepSeek-V4 laws' chip peaks.
func (c *Coefficients) resolveDSV4(ch *Chip, peak func(string) (float64, error)) error {
	var err error
	for _, laws := range [][]DSV4AttnLaw{c.DSV4Decode, c.DSV4Prefill} {
		for i := range laws {
			if laws[i].PeakFLOPS, err = peak(laws[i].PeakKey); err != nil {
				return err
			}
			laws[i].MemBW = ch.MemBW
		}
	}
	for i := range c.MHC {
		c.MHC[i].MemBW = ch.MemBW
	}
	return nil
}
