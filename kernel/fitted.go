package kernel

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"blis/catalog"
)

// FittedAssumptions are the fitted pricer's constants that no measured
// kernel table gives: the serving stack's host side of a step, the GPU's
// gaps between piecewise graphs and the floor of small memory-bound kernels
// (catalog.Stack, whose values and sources live in catalog/stacks/vllm.yaml),
// and the largest captured batch. How each is used:
//
//   - HostStepGraphed: a step replayed as one full CUDA graph;
//   - HostPiecewisePerLayer, PiecewiseGapPerLayer: per decoder layer of a
//     step run as piecewise graphs (attention launched eagerly between one
//     graph per layer: vLLM's PIECEWISE mode, and FULL_AND_PIECEWISE's
//     mixed batches), on the CPU and as GPU idle time; an eager step pays
//     the gaps too, having every boundary a piecewise one has;
//   - HostStepEager: a fully eager step (--enforce-eager, or a batch above
//     the largest capture size), never less than the piecewise step's host;
//     each kernel's launch floor is in the laws' T0;
//   - HostPerSampledToken: per row that produces a token;
//   - ElementwiseFloor: the shortest memory-bound kernel; bytes beyond it
//     move at the chip's HBM efficiency;
//   - CustomAllReduceMaxBytes: larger all-reduces go to NCCL.
type FittedAssumptions struct {
	catalog.Stack
	// MaxCUDAGraphTokens is the largest captured batch; 0 means vLLM's
	// default min(2 × max_num_seqs, 512) (vllm/config/compilation.py, v0.11+).
	MaxCUDAGraphTokens int
}

// DefaultFittedAssumptions are the values NewFitted uses: vLLM's serving
// stack as the catalog describes it.
func DefaultFittedAssumptions() (FittedAssumptions, error) {
	s, err := catalog.LookupStack("vllm")
	if err != nil {
		return FittedAssumptions{}, err
	}
	return FittedAssumptions{Stack: *s}, nil
}

// rows say which of the step's tokens an operator runs on.
const (
	rowsAll = iota
	rowsSampled
	rowsPrefill
	rowsDecode
	rowsGroup // the DP group's gathered tokens (Batch.GroupTokens): MoE and DP collectives
)

const (
	termGEMM = iota
	termAttn
	termMLA
	termDSA
	termMoE
	termElementwise
	termComm
	termGDN     // a Gated DeltaNet kernel (mamba.go)
	termDSV4    // DeepSeek-V4 attention kernel, priced with the roofline (no module law for the checkpoint's dtypes)
	termDSV4Mod // DeepSeek-V4 attention module, priced by its fitted laws (dsv4laws.go)
	termMHC     // DeepSeek-V4 mHC site: one pre and one post call (MHCTime)
)

// term is one operator of the graph, resolved against the deployment and
// the chip's fitted laws: priced once per step, times its count of layers.
type term struct {
	kind  uint8
	rows  uint8
	count float64
	calls float64 // collectives per layer (comm terms; 0 means 1)
	name  string

	gemm    *catalog.GEMMLaw
	grid    *gridRow // the GEMM/MoE law's measured residual at this shape; nil: none
	batch   float64  // per-head batched GEMMs (MLA absorb)
	n, k    float64
	dec     *catalog.AttnDecodeLaw
	pre     *catalog.AttnPrefillLaw
	attn    AttnShape
	window  float64
	mlaDec  *catalog.MLALaw
	mlaPre  *catalog.MLALaw
	mla     MLAShape
	dsa     DSAShape // termDSA: the MLA shape is dsa.MLAShape; mlaDec/mlaPre hold the DSA laws
	moe     *catalog.MoELaw
	moeSh   MoEShape
	bytes   float64 // elementwise: bytes per token; comm: message bytes per token
	lnBytes float64 // comm: ln bytes
	comm    *commCurve
	commBig *commCurve           // NCCL, for all-reduces above the custom kernel's limit
	gdn     gdnTerm              // termGDN
	dsv4    *dsv4Attn            // termDSV4: the kernel's work for one layer of its kind
	rate    float64              // termDSV4: attention FLOP/s
	v4Dec   *catalog.DSV4AttnLaw // termDSV4Mod
	v4Pre   *catalog.DSV4AttnLaw
	v4      DSV4Shape
	mhcPre  *catalog.MHCLaw // termMHC: n is the hidden size, k hc_mult
	mhcPost *catalog.MHCLaw
}

// fitted is the "fitted-v1" step pricer: the model's operator graph
// (catalog.Graph, derived from config.json as vLLM's model files build it)
// priced operator by operator with laws fitted to kernels measured under
// vLLM (catalog/coeffs, written by `blis calibrate ops`). A step's time is
// the sum over operators and resources — no overlap between compute,
// memory-bound kernels, collectives and the host — which is how a single
// CUDA stream runs them.
type fitted struct {
	terms          []term
	engram         engramCost // Engram lookups (engram.go)
	memBW          float64
	a              FittedAssumptions
	mode           string // effective cudagraph mode ("NONE" when eager)
	async          bool
	captureSizes   []int
	subs           []string
	hostGraphed    time.Duration
	hostPiecewise  time.Duration
	gapPiecewise   time.Duration
	hostEager      time.Duration
	hostPerSampled time.Duration
	elemFloor      float64
	// spec prices the speculative proposer's passes (nil: no speculative
	// decoding, or a pipeline stage before the last).
	spec *fittedDraft
	k    int // num_speculative_tokens (0: none)
	// needLn has bit r set when a term on row set r reads ln m (a
	// residual grid or a collective's curve).
	needLn uint8
}

// lnIf is ln x when a term on row set rows reads it, else 0.
func (f *fitted) lnIf(rows uint8, x float64) float64 {
	if f.needLn&(1<<rows) == 0 {
		return 0
	}
	return logPos(x)
}

// ErrNoCoefficients marks a chip with no fitted kernel coefficients (no
// measured per-operator tables of its own or of a sibling it borrows from):
// only the roofline can price it. NewFitted's other errors are real ones.
var ErrNoCoefficients = errors.New("no fitted kernel coefficients")

// NewFitted builds the fitted-v1 pricer for d with the default assumptions.
// It fails with ErrNoCoefficients when the chip has no fitted coefficients
// (callers may fall back to the roofline then), and otherwise when the model
// has no operator graph or a law is missing.
func NewFitted(d Deployment) (Pricer, error) {
	a, err := DefaultFittedAssumptions()
	if err != nil {
		return nil, err
	}
	return NewFittedWith(d, a)
}

// NewFittedWith is NewFitted with explicit assumptions.
func NewFittedWith(d Deployment, a FittedAssumptions) (Pricer, error) {
	if err := Validate(d); err != nil {
		return nil, err
	}
	co, err := catalog.LookupCoefficients(d.Chip.Name)
	if errors.Is(err, catalog.ErrNoCoefficients) {
		return nil, fmt.Errorf("%w for %s: only %s have measured per-operator tables (data/ops) to fit from",
			ErrNoCoefficients, d.Chip.Name, strings.Join(catalog.CoefficientChips(), ", "))
	}
	if err != nil {
		return nil, err
	}
	g, err := catalog.LookupGraph(d.Model.ID)
	if err != nil {
		return nil, err
	}
	mode := d.CUDAGraphMode
	switch {
	case d.EnforceEager, d.a2aDisablesGraphs():
		mode = "NONE"
	case mode == "":
		mode = "FULL_AND_PIECEWISE"
	}
	f := &fitted{
		memBW: d.Chip.MemBW * d.Chip.MemBWEfficiency, a: a, mode: mode, async: d.AsyncScheduling,
		hostGraphed: a.HostStepGraphed, hostPerSampled: a.HostPerSampledToken, elemFloor: a.ElementwiseFloor.Seconds(),
		k: d.specK(), engram: newEngramCost(d),
	}
	// One piecewise graph per decoder layer: vLLM splits the compiled model
	// at every attention op (CompilationConfig.splitting_ops).
	// A pipeline stage runs only its layers (counts by kind): the
	// embedding on the first stage, the head on the last.
	counts := make([]int, len(g.Layers))
	for i, lk := range g.Layers {
		counts[i] = lk.Count
	}
	if d.ppSize() > 1 {
		kinds := stageLayerKinds(d, g)
		if kinds == nil {
			return nil, fmt.Errorf("%s: the operator graph's stack (%d layers) does not cover num_hidden_layers %d", d.Model.ID, g.NumLayers(), d.Model.NumLayers)
		}
		clear(counts)
		for _, name := range kinds {
			for i := range g.Layers {
				if g.Layers[i].Name == name {
					counts[i]++
				}
			}
		}
	}
	layers := 0
	for _, c := range counts {
		layers += c
	}
	f.hostPiecewise = a.HostStepGraphed + time.Duration(layers)*a.HostPiecewisePerLayer
	f.gapPiecewise = time.Duration(layers) * a.PiecewiseGapPerLayer
	f.hostEager = max(a.HostStepEager, f.hostPiecewise)
	maxCap := a.MaxCUDAGraphTokens
	if d.MaxCUDAGraphCaptureSize > 0 {
		maxCap = d.MaxCUDAGraphCaptureSize
	}
	if maxCap <= 0 {
		// vllm/config/vllm.py _set_cudagraph_sizes: max_num_seqs ×
		// decode_query_len × 2, decode_query_len = 1 + k with
		// speculative decoding.
		maxCap = min(2*d.MaxNumSeqs*(1+d.specK()), 512)
	}
	// vLLM never captures a graph larger than a step can be
	// (vllm/config/vllm.py _set_cudagraph_sizes: min(max_num_batched_tokens,
	// max_cudagraph_capture_size)).
	maxCap = min(maxCap, d.MaxNumBatchedTokens)
	f.captureSizes = captureSizes(maxCap)
	if len(d.CaptureSizes) > 0 {
		f.captureSizes = append([]int(nil), d.CaptureSizes...)
		sort.Ints(f.captureSizes)
	}
	if k := d.specK(); k > 0 && mode != "NONE" && mode != "PIECEWISE" && len(f.captureSizes) > 0 {
		// The bound is max_cudagraph_capture_size as _set_cudagraph_sizes
		// leaves it: the list's largest size (its valid_max_size), which
		// the default list may stop short of maxCap and a given list sets.
		if f.captureSizes, err = specCaptureSizes(f.captureSizes, 1+k, f.captureSizes[len(f.captureSizes)-1]); err != nil {
			return nil, err
		}
	}
	if co.BorrowedFrom != "" {
		f.subs = append(f.subs, fmt.Sprintf("every law: fitted on %s's kernel tables (same architecture; %s has none), resolved against %s's peaks and bandwidth",
			co.BorrowedFrom, d.Chip.Name, d.Chip.Name))
	}
	var embed, head []catalog.Op
	if d.firstStage() {
		embed = g.Embed
	}
	if d.lastStage() {
		head = g.Head
	}
	if err := resolveTerms(d, co, f, embed, g.Layers, counts, head, false); err != nil {
		return nil, err
	}
	if d.lastStage() {
		// vLLM runs the proposer on the last pipeline stage, after the
		// sampler (gpu_model_runner.py propose_draft_token_ids).
		if f.spec, err = newFittedDraft(d, co, f, g); err != nil {
			return nil, err
		}
	}
	sort.Strings(f.subs)
	return f, nil
}

// resolveTerms appends to f the priced terms of the embedding ops, every
// layer kind's ops times its count (a count of 0 skips the kind) and the
// head ops, resolved against d and the chip's coefficients co; merge
// prices alike operators as one term whatever their names.
func resolveTerms(d Deployment, co *catalog.Coefficients, f *fitted, embed []catalog.Op, layers []catalog.LayerKind, counts []int, head []catalog.Op, merge bool) error {
	r := resolver{d: d, co: co, f: f, merge: merge}
	for _, op := range embed {
		r.add(op, 1)
	}
	for i := range layers {
		lk := &layers[i]
		if counts[i] == 0 {
			continue // not on this stage
		}
		for j := range lk.Ops {
			// The MLA and DSA laws are fitted on the whole attention
			// module (projections, norms, RoPE, the indexer, attention,
			// o_proj): its other operators are in the attention term's
			// price already.
			// So are DeepSeek-V4's, when its module laws cover the
			// checkpoint (dsv4Laws); else its operators are priced one
			// by one beside the roofline's kernel (termDSV4).
			if lk.InAttentionModule(&lk.Ops[j]) && (!dsv4Kind(lk) || r.dsv4Laws(lk.Attention()) != nil) {
				continue
			}
			r.add(lk.Ops[j], float64(counts[i]))
		}
	}
	for _, op := range head {
		r.add(op, 1)
	}
	return r.err
}

// captureSizes is vLLM's default list of CUDA-graph batch sizes up to max:
// 1, 2, 4, then every 8 to 256, then every 16 (vllm/config/compilation.py).
func captureSizes(maxSize int) []int {
	var s []int
	for _, v := range []int{1, 2, 4} {
		if v <= maxSize {
			s = append(s, v)
		}
	}
	for v := 8; v < 256 && v <= maxSize; v += 8 {
		s = append(s, v)
	}
	for v := 256; v <= maxSize; v += 16 {
		s = append(s, v)
	}
	return s
}

func (f *fitted) Name() string { return "fitted-v1" }

// Substitutions lists where a law fitted on another dtype or kernel stands
// in for one the measured tables lack.
func (f *fitted) Substitutions() []string { return f.subs }

// resolver turns graph operators into priced terms.
type resolver struct {
	d       Deployment
	merge   bool // merge terms across names (a draft's terms, never itemized)
	co      *catalog.Coefficients
	f       *fitted
	err     error
	grids   map[gridKey]*gridRow
	moeRows map[moeGridKey]*gridRow // nil value: layout not measured
	curves  map[curveKey]*commCurve
	// standIns holds the stand-in laws re-priced at the checkpoint's
	// weight bytes (gemmLaw, moeLaw), one per law and bytes, so that
	// identical operators keep merging into one term.
	standIns map[standInKey]any
}

type standInKey struct {
	kind, dtype string // "gemm" or "moe", the law's dtype
	bytes       float64
}

type curveKey struct {
	law                        *catalog.CommLaw
	gpus, span                 int
	allReduce, kernel, forward bool
	intraFrac, netFrac         float64
}

// commCurve returns the shared prepared curve of a collective law over a
// group of gpus whose members span span GPUs (a DP group's members sit TP
// apart), so that terms on the same law compare equal. A span larger than
// a node crosses nodes (commCurve.crossNode), at the fabric's network link
// when the deployment names one, else the chip's.
func (r *resolver) commCurve(l *catalog.CommLaw, gpus, span int, allReduce bool) *commCurve {
	k := curveKey{law: l, gpus: gpus, span: span, allReduce: allReduce}
	if c, ok := r.curves[k]; ok {
		return c
	}
	nl := r.d.nodeLink()
	c := newCommCurve(l, gpus)
	if span > nl.perNode && nl.perNode >= 1 {
		// Within a node the group is the node's share of it: the measured
		// curve at no more GPUs than a node holds.
		c = newCommCurve(l, min(gpus, nl.perNode)).crossNode(gpus, 1, allReduce, nl.bandwidth, nl.latency)
		r.sub("%s over %d GPUs spanning %d: crosses nodes of %d; the %d-GPU measured curve plus %s's network link (%.0f GB/s per GPU) and latency",
			l.Op, gpus, span, nl.perNode, nearestGPUs(l, min(gpus, nl.perNode)), nl.name, nl.bandwidth/1e9)
	}
	r.putCurve(k, c)
	return r.curves[k]
}

// kernelCurve is commCurve for an all-to-all kernel's leg: the measured
// NCCL all-to-all within a node; across nodes, its NVLink share on the
// node's curve and its network share on the link, concurrently.
func (r *resolver) kernelCurve(l *catalog.CommLaw, leg a2aLeg) *commCurve {
	k := curveKey{law: l, gpus: leg.gpus, span: leg.gpus, kernel: true, forward: leg.forward, intraFrac: leg.intraFrac, netFrac: leg.netFrac}
	if c, ok := r.curves[k]; ok {
		return c
	}
	nl := r.d.nodeLink()
	var c commCurve
	if leg.gpus <= nl.perNode || !(leg.netFrac > 0) {
		c = newCommCurve(l, leg.gpus)
	} else {
		c = newCommCurve(l, nl.perNode).kernelCrossNode(leg.intraFrac, leg.netFrac, nl.bandwidth, nl.latency, leg.forward)
		r.sub("%s over %d GPUs: crosses nodes of %d; %.0f%% of each message on the %d-GPU measured all-to-all, %.0f%% through %s's network link (%.0f GB/s per GPU), %s",
			leg.name, leg.gpus, nl.perNode, 100*leg.intraFrac, nearestGPUs(l, nl.perNode), 100*leg.netFrac, nl.name, nl.bandwidth/1e9, overlapWord(leg.forward))
	}
	r.putCurve(k, c)
	return r.curves[k]
}

func overlapWord(forward bool) string {
	if forward {
		return "pipelined (network, then NVLink forwarding)"
	}
	return "concurrently"
}

func (r *resolver) putCurve(k curveKey, c commCurve) {
	if r.curves == nil {
		r.curves = map[curveKey]*commCurve{}
	}
	r.curves[k] = &c
}

// nearestGPUs is the measured group size CommTime prices gpus at.
func nearestGPUs(l *catalog.CommLaw, gpus int) int {
	if p := nearestCommPoint(l, gpus); p != nil {
		return p.GPUs
	}
	return gpus
}

type gridKey struct {
	dtype string
	n, k  float64
}

// gridRow is a GEMM law's measured residual at one (n, k) over the grid's
// m axis: the factor measured/law, interpolated in log m at step time.
type gridRow struct {
	logM []float64 // ln of the grid's m values, ascending
	r    []float64
}

// newGridRow holds the factors r over an ascending axis of token counts (m).
func newGridRow(axis, r []float64) *gridRow {
	row := &gridRow{logM: make([]float64, len(axis)), r: r}
	for i, x := range axis {
		row.logM[i] = math.Log(x)
	}
	return row
}

// at returns the factor at ln m, linear in log m between grid points and
// clamped at the ends.
func (g *gridRow) at(lm float64) float64 {
	n := len(g.logM)
	if lm <= g.logM[0] {
		return g.r[0]
	}
	if lm >= g.logM[n-1] {
		return g.r[n-1]
	}
	i := sort.SearchFloat64s(g.logM, lm)
	if g.logM[i] == lm {
		return g.r[i]
	}
	w := (lm - g.logM[i-1]) / (g.logM[i] - g.logM[i-1])
	return g.r[i-1] + w*(g.r[i]-g.r[i-1])
}

// moeGrid returns the measured residual of a MoE law at the term's exact
// layout, or nil when the table did not measure that layout. Rows are
// shared, so that identical MoE operators of different layer kinds stay
// one term.
func (r *resolver) moeGrid(l *catalog.MoELaw, s MoEShape) *gridRow {
	g := r.co.MoEGridFor(l.Dtype)
	if g == nil {
		return nil
	}
	k := moeGridKey{l.Dtype, s.Hidden, s.Inter, s.TopK, s.Experts, math.Max(s.TP, 1), math.Max(s.EP, 1)}
	if row, ok := r.moeRows[k]; ok {
		return row
	}
	res := g.Row(k.hidden, k.inter, k.topk, k.experts, k.tp, k.ep)
	var row *gridRow
	if res != nil {
		row = newGridRow(g.Tokens, res)
	}
	if r.moeRows == nil {
		r.moeRows = map[moeGridKey]*gridRow{}
	}
	r.moeRows[k] = row
	return row
}

type moeGridKey struct {
	dtype                                string
	hidden, inter, topk, experts, tp, ep float64
}

// gemmGrid returns the shared residual row of a GEMM law at (n, k).
func (r *resolver) gemmGrid(l *catalog.GEMMLaw, n, k float64) *gridRow {
	g := r.co.GEMMGridFor(l.Dtype)
	if g == nil {
		return nil
	}
	key := gridKey{l.Dtype, n, k}
	if row, ok := r.grids[key]; ok {
		return row
	}
	row := newGridRow(g.M, g.Row(n, k))
	if r.grids == nil {
		r.grids = map[gridKey]*gridRow{}
	}
	r.grids[key] = row
	return row
}

func (r *resolver) sub(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	for _, x := range r.f.subs {
		if x == s {
			return
		}
	}
	r.f.subs = append(r.f.subs, s)
}

// halfDtype reports whether a graph op's dtype is a 16-bit float (or
// unset: the model's dtype).
func halfDtype(dtype string) bool {
	switch dtype {
	case "bf16", "bfloat16", "fp16", "float16", "":
		return true
	}
	return false
}

// halfLaws are the law dtypes, best first, for a 16-bit GEMM or MoE:
// bf16's, or under vLLM's online fp8 (--quantization fp8 without a
// checkpoint scheme: per-tensor weight scales, dynamic activations) fp8's.
func (r *resolver) halfLaws() []string {
	if r.d.Quantization == "fp8" {
		return []string{"fp8", "bfloat16"}
	}
	return []string{"bfloat16"}
}

// gemmLaw maps a graph GEMM's dtype to a fitted GEMM law: the checkpoint's
// quantized GEMMs take the laws of the kernel vLLM runs them with on this
// chip (ResolveQuant); a stand-in law is recorded as a substitution.
func (r *resolver) gemmLaw(dtype string) *catalog.GEMMLaw {
	m := r.d.Model
	var cands []string
	switch {
	case halfDtype(dtype):
		cands = r.halfLaws()
	case m.QuantMethod != "" && dtype == m.WeightDtype:
		qk, err := ResolveQuant(m, r.d.Chip)
		if err != nil {
			r.err = err
			return nil
		}
		cands = qk.GEMMLaws
	default:
		cands = []string{dtype}
	}
	if l := firstLaw(r, "gemm", dtype, cands, r.co.GEMMFor, func(l *catalog.GEMMLaw) *float64 { return &l.WeightBytes }); l != nil {
		return l
	}
	for _, alt := range []string{"fp8", "fp8_block", "bfloat16"} {
		if l, err := r.co.GEMMFor(alt); err == nil {
			r.sub("gemm %s: no %s law on %s, priced with %s", dtype, cands[0], r.d.Chip.Name, alt)
			return l
		}
	}
	r.err = fmt.Errorf("no GEMM law for %s weights on %s", dtype, r.d.Chip.Name)
	return nil
}

// quantBytes is the checkpoint's weight bytes per parameter when dtype is
// its quantized weight format and a stand-in law reads another amount
// (ok false otherwise). A stand-in from the same kernel family (Marlin's
// MoE law for NVFP4 weight-only experts, the BF16 GEMM for Marlin's W4A16
// GEMM, whose math is BF16) keeps its fitted efficiencies and reads the
// format's bytes, as the Marlin MoE law itself is fitted on int4 and MXFP4
// rows each at its own weight bytes.
func (r *resolver) quantBytes(dtype string, lawBytes float64) (float64, bool) {
	m := r.d.Model
	if m.QuantMethod == "" || dtype != m.WeightDtype || m.WeightBytesPerParam <= 0 || m.WeightBytesPerParam == lawBytes {
		return 0, false
	}
	return m.WeightBytesPerParam, true
}

// firstLaw returns the law of the first candidate fitted on this chip
// (lookup by dtype), or nil. A later candidate is a substitution the run
// reports; where it reads another weight format than the checkpoint's
// (quantBytes), a copy of it reads the checkpoint's bytes per parameter,
// made once per kind, law and bytes so that identical operators keep
// merging into one term. The GEMM and MoE searches are this one.
func firstLaw[L any](r *resolver, kind, dtype string, cands []string, lookup func(string) (*L, error), weightBytes func(*L) *float64) *L {
	for i, c := range cands {
		l, err := lookup(c)
		if err != nil {
			continue
		}
		if i == 0 {
			return l
		}
		bpp, ok := r.quantBytes(dtype, *weightBytes(l))
		if !ok {
			r.sub("%s %s: no %s law on %s, priced with %s", kind, dtype, cands[0], r.d.Chip.Name, c)
			return l
		}
		r.sub("%s %s: no %s law on %s, priced with %s at %.4g weight bytes per parameter", kind, dtype, cands[0], r.d.Chip.Name, c, bpp)
		k := standInKey{kind: kind, dtype: c, bytes: bpp}
		if in, ok := r.standIns[k].(*L); ok {
			return in
		}
		in := *l
		*weightBytes(&in) = bpp
		if r.standIns == nil {
			r.standIns = map[standInKey]any{}
		}
		r.standIns[k] = &in
		return &in
	}
	return nil
}

func (r *resolver) kvDtype() string {
	switch r.d.KVCacheDtype {
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		return "fp8"
	}
	return "bfloat16"
}

func (r *resolver) moeLaw(dtype string) *catalog.MoELaw {
	var cands []string
	m := r.d.Model
	switch {
	case m.QuantMethod != "" && dtype == m.WeightDtype:
		// The fused-MoE kernel vLLM runs the checkpoint's experts with on
		// this chip (ResolveQuant), its exact law first.
		qk, err := ResolveQuant(m, r.d.Chip)
		if err != nil {
			r.err = err
			return nil
		}
		cands = qk.MoELaws
	case m.ExpertDtype != "" && (dtype == "nvfp4" || dtype == "mxfp4"):
		// DeepSeek-V4's 4-bit experts beside its fp8 linears.
		qk, err := ExpertKernel(m, r.d.Chip, dtype)
		if err != nil {
			r.err = err
			return nil
		}
		cands = qk.MoELaws
	case halfDtype(dtype):
		cands = r.halfLaws()
	default:
		cands = []string{dtype}
	}
	if b := r.d.MoEBackend; b != "" && b != "auto" {
		cands = append(backendLaws(b, cands[0]), cands...)
	}
	if l := firstLaw(r, "moe", dtype, cands, r.co.MoEFor, func(l *catalog.MoELaw) *float64 { return &l.WeightBytes }); l != nil {
		return l
	}
	for _, c := range []string{"bfloat16", "fp8"} {
		if l, err := r.co.MoEFor(c); err == nil {
			r.sub("moe %s: no law on %s, priced with %s", dtype, r.d.Chip.Name, c)
			return l
		}
	}
	r.err = fmt.Errorf("no MoE law for %s experts on %s", dtype, r.d.Chip.Name)
	return nil
}

func (r *resolver) commLaw(op, impl string) *catalog.CommLaw {
	for i := range r.co.Comm {
		if c := &r.co.Comm[i]; c.Op == op && c.Impl == impl {
			return c
		}
	}
	return nil
}

func rowsOf(op catalog.Op) uint8 {
	switch {
	case op.Rows == catalog.RowsSampled:
		return rowsSampled
	case op.Phase == catalog.PhasePrefill:
		return rowsPrefill
	case op.Phase == catalog.PhaseDecode:
		return rowsDecode
	}
	return rowsAll
}

func (r *resolver) add(op catalog.Op, count float64) {
	if r.err != nil {
		return
	}
	tp := r.d.TP
	t := term{rows: rowsOf(op), count: count, name: op.Name}
	switch op.Kind {
	case catalog.OpGEMM:
		batch, n, k := op.RankShape(tp)
		t.kind, t.batch, t.n, t.k = termGEMM, float64(max(batch, 1)), float64(n), float64(k)
		if t.gemm = r.gemmLaw(op.Dtype); t.gemm == nil {
			return
		}
		t.grid = r.gemmGrid(t.gemm, t.n, t.k)
	case catalog.OpAttention:
		a := op.Attn
		heads := float64(a.Heads) / float64(tp)
		if r.dsv4Term(op, &t) {
			break
		}
		if a.Kind == "mla" || a.Kind == "dsa" {
			t.kind = termMLA
			t.name += " (MLA module)"
			t.mla = MLAShape{Hidden: float64(r.d.Model.HiddenSize), Heads: heads, QLoraRank: float64(a.QLoraRank),
				KVLoraRank: float64(a.KVLoraRank), RopeDim: float64(a.QKRopeHeadDim), NopeDim: float64(a.QKNopeHeadDim), VDim: float64(a.VHeadDim)}
			gd := "bfloat16"
			if r.d.Model.WeightBlock > 0 {
				gd = "fp8_block"
			}
			decFor, preFor := r.co.MLADecodeFor, r.co.MLAPrefillFor
			if a.Kind == "dsa" {
				// DeepSeek sparse attention: the module with its indexer,
				// priced by the laws fitted on the DSA module tables; the
				// prefill kernel vLLM picks depends on the heads per rank.
				t.kind = termDSA
				t.name = op.Name + " (DSA module)"
				t.dsa = DSAShape{MLAShape: t.mla, IndexHeads: float64(a.IndexHeads), IndexHeadDim: float64(a.IndexHeadDim), TopK: float64(a.IndexTopK)}
				decFor = r.co.DSADecodeFor
				preFor = func(g, kv string) (*catalog.MLALaw, error) { return r.co.DSAPrefillFor(g, kv, heads) }
			}
			var err error
			if t.mlaDec, err = decFor(gd, r.kvDtype()); err != nil {
				r.err = err
				return
			}
			if t.mlaPre, err = preFor(gd, r.kvDtype()); err != nil {
				r.err = err
				return
			}
			break
		}
		t.kind = termAttn
		t.attn = AttnShape{Heads: heads, KVHeads: math.Max(1, float64(a.KVHeads)/float64(tp)), HeadDim: float64(a.HeadDim)}
		t.window = float64(a.Window)
		var err error
		if t.dec, err = r.co.AttnDecodeFor(r.kvDtype()); err != nil {
			r.err = err
			return
		}
		if t.pre, err = r.co.AttnPrefillFor(r.kvDtype()); err != nil {
			r.err = err
			return
		}
	case catalog.OpMoE:
		m := op.MoE
		t.kind, t.rows = termMoE, rowsGroup
		ways := float64(tp * r.d.dpSize())
		t.moeSh = MoEShape{Hidden: float64(m.Hidden), Inter: float64(m.Inter), TopK: float64(m.TopK),
			Experts: float64(m.Experts), TP: ways, EP: 1}
		if r.d.ExpertParallel {
			t.moeSh.TP, t.moeSh.EP = 1, ways
		}
		if t.moe = r.moeLaw(m.Dtype); t.moe == nil {
			return
		}
		t.grid = r.moeGrid(t.moe, t.moeSh)
		if r.d.usesA2AKernels() {
			// The all-to-all kernels' dispatch before the experts and
			// combine after them (the graph's DP collectives are skipped).
			legs := a2aKernelLegs(r.d, m.Hidden, m.Experts, m.TopK, m.Dtype)
			a2a := r.commLaw("alltoall", "nccl")
			if a2a == nil {
				r.err = fmt.Errorf("no alltoall law on %s to price --all2all-backend %s", r.d.Chip.Name, r.d.all2allBackend())
				return
			}
			r.push(r.kernelTerm(a2a, legs[0], count))
			r.push(t)
			r.push(r.kernelTerm(a2a, legs[1], count))
			return
		}
	case catalog.OpGDN:
		t.kind = termGDN
		var err error
		if t.gdn, err = newGDNTerm(r.d, r.co, op.GDN); err != nil {
			r.err = err
			return
		}
	case catalog.OpElementwise, catalog.OpEmbedding:
		if handled, skip := r.mhcTerm(op, &t); skip {
			return
		} else if handled {
			break
		}
		t.kind = termElementwise
		t.bytes = op.BytesPerToken
		if op.Shard == catalog.ShardSplit || op.Shard == catalog.ShardColumn {
			t.bytes /= float64(tp)
		}
	case catalog.OpCollective:
		gpus, span, coll := tp, tp, op.Collective
		bytes := op.BytesPerToken
		switch {
		case op.Group == catalog.GroupDP && r.d.dpSize() > 1 && r.d.Model.IsMoE():
			if r.d.usesA2AKernels() {
				return // priced with the experts (OpMoE)
			}
			// allgather_reducescatter (vLLM's default, AgRsAll2AllManager):
			// every DP rank gathers the group's tokens before the experts
			// and reduce-scatters after, over the DP group, whose members
			// sit TP GPUs apart.
			gpus, span, t.rows = r.d.dpSize(), r.d.dpSize()*tp, rowsGroup
			if r.d.all2allBackend() == a2aNaive {
				// NaiveAll2AllManager: dispatch is one broadcast of each
				// rank's tokens from that rank (a ring broadcast of S moves
				// what an all-gather of S·n/(n−1) moves per GPU); combine
				// all-reduces the whole gathered buffer.
				n := float64(gpus)
				switch coll {
				case "all_gather":
					t.calls, bytes = n, bytes/(n-1)
					t.name += " (naive: broadcasts)"
				case "reduce_scatter":
					coll = "all_reduce"
					t.name += " (naive: all_reduce)"
				}
			}
		case op.Group != catalog.GroupTP || tp <= 1:
			return // the group has one member in this deployment
		}
		t.kind, t.bytes, t.lnBytes = termComm, bytes, math.Log(bytes)
		var small, big *catalog.CommLaw
		if coll == "all_reduce" {
			small = r.commLaw("all_reduce", "vllm_custom")
			big = r.commLaw("all_reduce", "nccl")
			if small == nil {
				small = big
			}
		} else {
			small = r.commLaw(coll, "nccl")
			big = small
		}
		if small == nil {
			r.err = fmt.Errorf("no %s law on %s", coll, r.d.Chip.Name)
			return
		}
		ar := coll == "all_reduce"
		t.comm, t.commBig = r.commCurve(small, gpus, span, ar), r.commCurve(big, gpus, span, ar)
	default:
		r.err = fmt.Errorf("operator %q: kind %q has no law", op.Name, op.Kind)
		return
	}
	r.push(t)
}

// kernelTerm is the comm term of one all-to-all kernel leg per layer.
func (r *resolver) kernelTerm(l *catalog.CommLaw, leg a2aLeg, count float64) term {
	c := r.kernelCurve(l, leg)
	return term{kind: termComm, rows: rowsGroup, count: count, name: leg.name,
		bytes: leg.bytes, lnBytes: math.Log(leg.bytes), comm: c, commBig: c}
}

// push adds t to the pricer's terms. Layer kinds share most operators
// (dense vs MoE layers, sliding vs full attention): each distinct operator
// is priced once per step, its count summed.
func (r *resolver) push(t term) {
	if t.grid != nil || t.kind == termComm {
		r.f.needLn |= 1 << t.rows
	}
	if r.merge {
		// Unnamed terms: identical operators merge whatever their names,
		// and memory-bound kernels on the same rows into one term of
		// their summed launches and count-weighted bytes (the same price:
		// Σ count·(floor + m·bytes/BW)).
		t.name = ""
		if t.kind == termElementwise {
			for i := range r.f.terms {
				if u := &r.f.terms[i]; u.kind == termElementwise && u.rows == t.rows {
					c := u.count + t.count
					u.bytes = (u.count*u.bytes + t.count*t.bytes) / c
					u.count = c
					return
				}
			}
		}
	}
	for i := range r.f.terms {
		u := &r.f.terms[i]
		c := u.count
		u.count = t.count
		if *u == t {
			u.count = c + t.count
			return
		}
		u.count = c
	}
	r.f.terms = append(r.f.terms, t)
}

// graphFor is how vLLM runs a step of tokens (pureDecode: no prefill rows)
// under the cudagraph mode (vllm/v1/cudagraph_dispatcher.py): the padded
// batch size, whether the step replays graphs at all, and whether it is one
// full graph (attention captured too) rather than piecewise graphs with
// attention launched eagerly between them.
func (f *fitted) graphFor(tokens int, pureDecode bool) (padded int, graphed, full bool) {
	if f.mode == "NONE" || len(f.captureSizes) == 0 || tokens > f.captureSizes[len(f.captureSizes)-1] {
		return tokens, false, false
	}
	i := sort.SearchInts(f.captureSizes, tokens)
	p := f.captureSizes[i]
	switch f.mode {
	case "FULL":
		return p, true, true
	case "PIECEWISE":
		return p, true, false
	case "FULL_DECODE_ONLY":
		if pureDecode {
			return p, true, true
		}
		return tokens, false, false
	}
	// FULL_AND_PIECEWISE: full graphs for pure decode, piecewise otherwise.
	return p, true, pureDecode
}

// uniformDecode is vLLM's uniform-decode batch, the one FULL_AND_PIECEWISE
// and FULL_DECODE_ONLY replay as a full graph (gpu_model_runner.py:
// max_query_len == uniform_decode_query_len and num_tokens == num_reqs ×
// it): no prefill rows and, with speculative decoding, every row verifying
// exactly k drafts (1 + k query tokens each).
func (f *fitted) uniformDecode(b *Batch) bool {
	if b.NumPrefill != 0 {
		return false
	}
	return f.k == 0 || (b.SpecRows == b.NumDecode && b.SpecTokens == f.k*b.NumDecode)
}

// StepTime prices one step: every operator of the graph at this step's
// shapes, summed. It allocates nothing.
func (f *fitted) StepTime(b *Batch) Breakdown {
	tokens := b.Tokens()
	if tokens <= 0 {
		return Breakdown{}
	}
	mAll, graphed, fullGraph := f.graphFor(tokens, f.uniformDecode(b))
	return f.stepTime(b, mAll, graphed, fullGraph)
}

// GroupStepTime prices one lockstep step of a MoE model's data-parallel
// group as vLLM runs it (vllm/v1/worker/dp_utils.py
// coordinate_batch_across_dp, main @ 00746147): the ranks all-reduce their
// CUDA-graph-padded token counts and the lowest cudagraph mode; unless some
// rank runs eagerly, every rank pads to the largest count and replays that
// graph, and the MoE layers see every rank's tokens. A rank with nothing
// scheduled runs a one-token dummy batch (DPEngineCoreProc
// execute_dummy_batch). Ranks wait for each other at every MoE layer, so
// the step lasts as long as its slowest rank. It allocates nothing.
func (f *fitted) GroupStepTime(bs []Batch) Breakdown {
	if len(bs) == 0 {
		return Breakdown{}
	}
	var dummy Batch
	dummy.NumDecode, dummy.DecodeTokens, dummy.DecodeContext = 1, 1, 1
	rank := func(i int) *Batch {
		if bs[i].Tokens() <= 0 {
			return &dummy
		}
		return &bs[i]
	}
	maxPadded, sum, mode := 0, 0, 2 // mode: 0 eager, 1 piecewise, 2 full graph
	for i := range bs {
		b := rank(i)
		p, graphed, full := f.graphFor(b.Tokens(), f.uniformDecode(b))
		maxPadded, sum = max(maxPadded, p), sum+b.Tokens()
		switch {
		case !graphed:
			mode = 0
		case !full:
			mode = min(mode, 1)
		}
	}
	group := sum
	if mode > 0 {
		group = maxPadded * len(bs)
	}
	var out Breakdown
	for i := range bs {
		b := *rank(i)
		b.GroupTokens = group
		m := b.Tokens()
		if mode > 0 {
			m = maxPadded
		}
		if bd := f.stepTime(&b, m, mode > 0, mode == 2); bd.Total > out.Total {
			out = bd
		}
	}
	return out
}

// work is the GPU work of the graph's terms for b at mAll tokens (after
// CUDA-graph padding), graphed or eager: seconds of compute, memory and
// collectives.
func (f *fitted) work(b *Batch, mAll int, graphed bool) (compute, memory, comm float64) {
	T := float64(mAll)
	G := T
	if b.GroupTokens > 0 {
		G = float64(b.GroupTokens)
	}
	// Logits rows: every sampling row, and every draft a row verifies
	// (the rejection sampler reads the target's logits at each draft
	// position: gpu_model_runner.py _calc_spec_decode_metadata).
	sampled := float64(max(b.Sampled, 0) + max(b.SpecTokens, 0))
	pre, dec := float64(max(b.PrefillTokens, 0)), float64(max(b.DecodeTokens, 0))
	decodeCtx, prefillCtx := float64(max(b.DecodeContext, 0)), float64(max(b.PrefillContext, 0))
	pairs := math.Max(b.PrefillAttnPairs, 0)
	nDec, nPre := float64(max(b.NumDecode, 0)), float64(max(b.NumPrefill, 0))
	// With speculative decoding a decode row verifies 1 + s query tokens
	// (DecodeTokens > NumDecode). The module laws (MLA, DSA, DeepSeek-V4)
	// include the projections, so they take every query token as a row;
	// per-query cache reads (DSA's top-k and indexer, DeepSeek-V4's window
	// and compressed entries) scale with the queries (ctxQ), while MLA's
	// latent is read once per request (FlashMLA with s_q > 1).
	qDec, ctxQ := nDec, decodeCtx
	if nDec > 0 && dec > nDec {
		qDec, ctxQ = dec, decodeCtx*dec/nDec
	}

	// ln m of the five row sets, for the residual grids and collectives.
	// Only the row sets some term reads ln m of (needLn) pay for a log.
	var lnT, lnS, lnP, lnD, lnG float64
	if f.needLn != 0 {
		lnT, lnS, lnP = f.lnIf(rowsAll, T), f.lnIf(rowsSampled, sampled), f.lnIf(rowsPrefill, pre)
		lnD, lnG = f.lnIf(rowsDecode, dec), f.lnIf(rowsGroup, G)
	}
	for i := range f.terms {
		t := &f.terms[i]
		m, lm := T, lnT
		switch t.rows {
		case rowsSampled:
			m, lm = sampled, lnS
		case rowsPrefill:
			m, lm = pre, lnP
		case rowsDecode:
			m, lm = dec, lnD
		case rowsGroup:
			m, lm = G, lnG
		}
		if m <= 0 {
			continue
		}
		switch t.kind {
		case termGEMM:
			var s float64
			if graphed {
				s = GEMMDeviceTime(t.gemm, m, t.n, t.k)
			} else {
				s = GEMMTime(t.gemm, m, t.n, t.k)
			}
			if t.grid != nil {
				s *= t.grid.at(lm)
			}
			compute += t.count * t.batch * s
		case termAttn:
			var s float64
			if nDec > 0 {
				kv := decodeCtx
				if t.window > 0 {
					kv = math.Min(kv, nDec*t.window)
				}
				s += AttnDecodeTime(t.dec, t.attn, nDec, kv)
			}
			if nPre > 0 {
				p, c := pairs, prefillCtx
				if t.window > 0 {
					p = math.Min(p, pre*t.window)
					c = math.Min(c, nPre*t.window)
				}
				s += AttnPrefillTime(t.pre, t.attn, pre, p, c)
			}
			compute += t.count * s
		case termMLA:
			var s float64
			if nDec > 0 {
				s += MLADecodeTime(t.mlaDec, t.mla, qDec, decodeCtx)
			}
			if nPre > 0 {
				s += MLAPrefillTime(t.mlaPre, t.mla, pre, pairs)
			}
			compute += t.count * s
		case termDSA:
			// Each query reads at most TopK cached tokens; from the step's
			// sums that is min(Σ context, rows × TopK), exact when every
			// context is on the same side of TopK (as windows are priced).
			var s float64
			if nDec > 0 {
				s += DSADecodeTime(t.mlaDec, t.dsa, qDec, ctxQ, math.Min(ctxQ, qDec*t.dsa.TopK))
			}
			if nPre > 0 {
				s += DSAPrefillTime(t.mlaPre, t.dsa, pre, math.Min(pairs, pre*t.dsa.TopK), pairs)
			}
			compute += t.count * s
		case termDSV4:
			fl, by := t.dsv4.work(nDec, decodeCtx, pre, pairs, nPre, prefillCtx)
			compute += t.count * math.Max(fl/t.rate, by/f.memBW)
		case termDSV4Mod:
			compute += t.count * dsv4ModuleTime(t.v4Dec, t.v4Pre, t.v4, qDec, ctxQ, nPre, pre, pairs, prefillCtx)
		case termMHC:
			memory += t.count * (MHCTime(t.mhcPre, m, t.n, t.k) + MHCTime(t.mhcPost, m, t.n, t.k))
		case termMoE:
			sh := t.moeSh
			sh.Tokens = m
			s := MoETime(t.moe, sh)
			if t.grid != nil {
				s *= t.grid.at(lm)
			}
			compute += t.count * s
		case termElementwise:
			memory += t.count * (f.elemFloor + m*t.bytes/f.memBW)
		case termGDN:
			compute += t.count * t.gdn.time(nPre, pre, nDec, dec)
		case termComm:
			bytes := m * t.bytes
			curve := t.comm
			if bytes > f.a.CustomAllReduceMaxBytes {
				curve = t.commBig
			}
			c := t.count
			if t.calls > 0 {
				c *= t.calls
			}
			comm += c * curve.at(bytes, lm+t.lnBytes)
		}
	}
	return compute, memory, comm
}

// stepTime prices b replayed at mAll tokens (after CUDA-graph padding),
// graphed or eager, as one full graph or piecewise, and the proposer's
// draft passes after it.
func (f *fitted) stepTime(b *Batch, mAll int, graphed, fullGraph bool) Breakdown {
	compute, memory, comm := f.work(b, mAll, graphed)
	sampled := float64(max(b.Sampled, 0))
	// A step outside one full graph has at least the boundaries of one
	// graph per layer: piecewise graphs, or every kernel launched eagerly.
	host, gaps := f.hostEager, f.gapPiecewise
	switch {
	case fullGraph:
		host, gaps = f.hostGraphed, 0
	case graphed:
		host = f.hostPiecewise
	}
	host += time.Duration(sampled) * f.hostPerSampled

	out := Breakdown{Compute: seconds(compute), Memory: seconds(memory), Comm: seconds(comm), Launch: gaps, Host: host}
	if f.spec != nil {
		f.spec.add(b, &out)
	}
	gpu := out.Compute + out.Memory + out.Comm + out.Launch
	// Engram rows not back from the side stream when their layer starts.
	if st := f.engram.stall(b.Tokens(), b.GroupTokens, gpu); st > 0 {
		out.Memory += st
		gpu += st
	}
	out.Total = gpu + out.Host
	if f.async {
		// --async-scheduling: the CPU work of the next step overlaps this
		// step's GPU work, so the slower of the two sets the pace.
		out.Total = max(gpu, out.Host)
	}
	return out
}

// OpTime is one priced operator of a step: how many layers run it, the
// resource it is charged to, and its time over all those layers.
type OpTime struct {
	Name     string
	Count    float64
	Resource string // "compute", "memory" or "comm"; the speculative proposer's line "draft" (GPU passes) or "host" (n-gram lookup)
	Time     time.Duration
}

// Explainer is a Pricer that can break a step down by operator, so that a
// user can see which operator a deployment's step time goes to.
type Explainer interface {
	Explain(b *Batch) []OpTime
}

// Explain prices each operator of the step alone (the host's share is in
// StepTime's Host, not here). It allocates and is not for the hot path.
func (f *fitted) Explain(b *Batch) []OpTime {
	out := make([]OpTime, 0, len(f.terms))
	for i := range f.terms {
		one := *f
		one.terms = f.terms[i : i+1]
		one.async = false
		one.spec = nil
		bd := one.StepTime(b)
		o := OpTime{Name: f.terms[i].name, Count: f.terms[i].count, Time: bd.Compute + bd.Memory + bd.Comm}
		if w := f.terms[i].window; w > 0 {
			o.Name += fmt.Sprintf(" (window %g)", w)
		}
		switch {
		case bd.Comm > 0:
			o.Resource = "comm"
		case bd.Memory > 0:
			o.Resource = "memory"
		default:
			o.Resource = "compute"
		}
		out = append(out, o)
	}
	if f.spec != nil {
		var bd Breakdown
		f.spec.add(b, &bd)
		res := "draft"
		if f.spec.f == nil {
			res = "host"
		}
		out = append(out, OpTime{Name: fmt.Sprintf("speculative proposer: %s, %d drafts", f.spec.name, f.spec.k), Count: 1, Resource: res, Time: bd.Draft})
	}
	return out
}

// Describe lists the priced operators, for `blis run --dry-run`.
func (f *fitted) Describe() string {
	var b strings.Builder
	for _, t := range f.terms {
		fmt.Fprintf(&b, "%s×%g ", t.name, t.count)
	}
	return b.String()
}

// backendLaws are the MoE laws that price a dtype's experts on one kernel
// family (--moe-backend), most specific first: the family's own fit where
// calibrate split the dtype's rows by kernel, else the law of the format
// that family runs (MXFP4 on Marlin, MXFP4 with MXFP8 activations).
func backendLaws(backend, dtype string) []string {
	switch {
	case backend == "marlin" && dtype == "w4a16_mxfp4":
		return []string{"w4a16_mxfp4_marlin"}
	case backend == "marlin" && dtype == "int4_wo":
		return []string{"int4_wo"}
	case backend == "flashinfer-mxfp8" && dtype == "w4a16_mxfp4":
		return []string{"w4a8_mxfp4_mxfp8"}
	case backend == "flashinfer-mxfp8":
		return nil
	}
	return []string{dtype + "_" + backend}
}

func logPos(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return math.Log(x)
}
