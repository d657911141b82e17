package kernel

import (
	"fmt"
	"math"

	"blis/catalog"
)

// DeepSeek-V4 in the kernel: the per-rank shape (weights, per-token KV),
// the KV cache layout and the attention kernel's work. The model is
// described in catalog/graph_dsv4.go (vLLM deepseek_v4.py@023da1fc,
// deepseek_v4_attention.py@0a291a2e).

// dsv4Layers counts a stage's layers by compress ratio and routing.
type dsv4Layers struct {
	ratio []int  // per layer
	hash  []bool // per layer
}

func dsv4StageLayers(d Deployment) dsv4Layers {
	m := d.Model
	start, end := 0, m.NumLayers
	if d.ppSize() > 1 {
		start, end = d.stageLayers()
	}
	var l dsv4Layers
	for i := start; i < end && i < len(m.CompressRatios); i++ {
		l.ratio = append(l.ratio, m.CompressRatios[i])
		l.hash = append(l.hash, i < m.NumHashLayers)
	}
	return l
}

// dsv4Shape sets the per-rank numbers of a DeepSeek-V4 shape: the
// attention linears (fp8, averaged over the stage's layers, since the
// compressed layers carry compressors and CSA layers the indexer), the
// unquantized and fp32 tensors counted with the norms (in model-dtype
// units), the compressed KV bytes a token adds per layer on average, and
// the activation widths.
func dsv4Shape(d Deployment, s *shape) {
	m := d.Model
	l := dsv4StageLayers(d)
	n := float64(max(len(l.ratio), 1))
	var attn, other float64
	for i, r := range l.ratio {
		p := m.DSV4LayerParams(r, l.hash[i])
		attn += p.AttnReplicated + p.AttnSharded/s.tp
		// bf16 tensors at 1 unit, fp32 and int32 at 2 (normsLayer is in
		// the model dtype's bytes).
		other += p.Norms + p.BF16 + 2*p.FP32 + 2*p.HashTable
	}
	s.attnLinear = attn / n
	s.normsLayer = other / n
	s.kvBytesLayer = dsv4GrowBytes(m, l.ratio) / n
	h, dim := s.headsR, float64(m.HeadDim)
	s.qkvOut = float64(m.QLoraRank+m.HeadDim) + h*dim
	s.attnOut = h * dim
	hc := float64(m.HCMult)
	// hc_head (fp32) with the final norm; two RoPE caches (rope_theta and
	// compress_rope_theta) of max_position × rope dims.
	s.finalNorm += 2 * (hc*hc*s.H + hc + 1)
	s.ropeCache = 2 * float64(m.MaxPositions) * float64(m.QKRopeHeadDim) * s.dtypeB
}

// dsv4GrowBytes is what one more token of context adds, on every rank, to
// the compressed caches of layers of the given ratios: one 584-byte entry
// per ratio tokens, plus on CSA layers the indexer's 132-byte key per
// entry (vLLM MLAAttentionSpec with compress_ratio: storage_block_size =
// block_size / ratio entries per block).
func dsv4GrowBytes(m *catalog.Model, ratios []int) float64 {
	e := float64(dsv4Entry(m))
	idx := dsv4IndexKey(m)
	var b float64
	for _, r := range ratios {
		switch r {
		case 4:
			b += (e + idx) / 4
		case 128:
			b += e / 128
		}
	}
	return b
}

// dsv4Entry is one fp8_ds_mla entry: 448 fp8 no-RoPE dims, 64 bf16 RoPE
// dims, 7 ue8m0 scales and a pad byte (584 for head_dim 512).
func dsv4Entry(m *catalog.Model) int {
	nope := m.HeadDim - m.QKRopeHeadDim
	return nope + 2*m.QKRopeHeadDim + nope/64 + 1
}

// dsv4IndexKey is one CSA indexer key in bytes: fp8 index_head_dim and
// one fp32 scale per 128 (DeepseekV4Indexer k_cache_head_dim, 132).
func dsv4IndexKey(m *catalog.Model) float64 {
	return float64(m.IndexHeadDim + m.IndexHeadDim/128*4)
}

// dsv4MTPLayers is the MTP draft's layers a stage's cache holds: the
// last stage's, with --speculative-config method mtp.
func dsv4MTPLayers(d Deployment) int {
	if d.specK() > 0 && d.Spec.Method == "mtp" && d.lastStage() {
		return d.Model.NumNextNLayers
	}
	return 0
}

// dsv4WindowBytes is what one token adds, on every rank, to the caches
// vLLM bounds by a window: every layer's raw-token cache
// (DeepseekV4SWACache, 584 bytes a token) and the compressors' fp32 state
// (CompressorStateCache: 2·coff·head_dim fp32 a token, kept for coff·ratio
// tokens; CSA's indexer compressor the same at index_head_dim). During a
// prefill chunk every new token's state is written, so vLLM's sizing
// (SlidingWindowSpec.max_memory_usage_bytes: window − 1 +
// max_num_batched_tokens tokens) counts them per token like the raw
// window. mtpLayers adds the MTP draft's sliding-window-only layers.
func dsv4WindowBytes(m *catalog.Model, ratios []int, mtpLayers int) float64 {
	e := float64(dsv4Entry(m))
	state := func(dim, ratio int) float64 {
		coff := 1
		if ratio == 4 {
			coff = 2
		}
		return float64(2 * coff * dim * 4)
	}
	b := float64(mtpLayers) * e
	for _, r := range ratios {
		b += e
		switch r {
		case 4:
			b += state(m.HeadDim, 4) + state(m.IndexHeadDim, 4)
		case 128:
			b += state(m.HeadDim, 128)
		}
	}
	return b
}

// dsv4KVLayout is DeepSeek-V4's KV cache as the engine can hold it.
//
// vLLM (kv_cache_interface.py, deepseek_v4_attention.py, deepseek_compressor.py)
// forms one KV cache group per cache type: the compressed caches of the
// CSA and HCA layers (MLAAttentionSpec with compress_ratio: block_size
// tokens store block_size/ratio entries of 584 bytes), the indexer keys
// (132 bytes per CSA entry), the raw-token window of every layer
// (DeepseekV4SWACache, a SlidingWindowMLASpec of 584-byte tokens) and the
// compressors' fp32 states (SlidingWindowMLASpec over coff·ratio tokens),
// with block sizes chosen so the pages pack into one pool (the C4 page
// [256/4 entries × 584 B] sets the size; pages aligned to 576 bytes).
//
// The engine has one block size and groups that are full attention or
// one sliding window. The closest representation kept here: one full
// group whose block holds block_size tokens of every compressed cache
// (the bytes that grow with the context), and k sliding groups of the
// same block bytes with the raw window, together holding what the windowed
// caches hold per token (k = ⌈window bytes / growing bytes⌉, the last
// group padded as vLLM pads its groups). The engine's group mask allows
// 64 groups: when the windowed bytes exceed 63 times the growing bytes
// (DeepSeek-V4-Flash: 322,072 against 3,850 bytes a token), the block
// unit grows to a 63rd of the windowed bytes and the full group is
// over-counted by that much. Other differences from vLLM: the CSA
// compressors keep their state for 8 tokens, not the 128-token raw
// window the engine frees by (more held between prefill chunks and in
// decode: up to 120 tokens × 10 KiB per CSA layer and request); vLLM's
// per-type block sizes and 576-byte page alignment are not modelled.
func dsv4KVLayout(d Deployment) kvLayout {
	m := d.Model
	l := dsv4StageLayers(d)
	mtp := dsv4MTPLayers(d)
	grow := dsv4GrowBytes(m, l.ratio)
	win := dsv4WindowBytes(m, l.ratio, mtp)
	unit := math.Max(grow, win/63)
	if unit <= 0 {
		unit = win
	}
	k := max(1, int(math.Ceil(win/unit-1e-9)))
	groups := 1 + k
	if grow <= 0 {
		groups = k // sliding-window-only stage
	}
	lay := KVCacheLayout{Groups: groups, GroupSize: 1, BlockSize: d.BlockSize, MaxNumBatchedTokens: d.MaxNumBatchedTokens, Window: m.SlidingWindow}
	for g := groups - k; g < groups; g++ {
		lay.Sliding |= 1 << uint(g)
	}
	return kvLayout{layout: lay, blockBytes: float64(d.BlockSize) * unit}
}

// dsv4Attn is the work of DeepSeek-V4's attention kernels over a stage's
// layers, per step, from the batch's sums (FlashMLA sparse as vLLM runs
// it: queries padded to 64 or 128 heads per rank; each query reads its
// window of raw tokens plus, on CSA layers, the index_topk compressed
// entries the indexer picks after scoring every compressed entry, and on
// HCA layers every compressed entry).
type dsv4Attn struct {
	nSWA, nCSA, nHCA float64 // layers of each kind
	flopsPerKey      float64 // q·k and p·v over one 512-wide key, padded heads
	idxFlopsPerKey   float64 // indexer score per compressed key (replicated heads)
	entry, idxKey    float64 // bytes
	window, topK     float64
}

func newDSV4Attn(d Deployment) *dsv4Attn {
	m := d.Model
	l := dsv4StageLayers(d)
	a := &dsv4Attn{entry: float64(dsv4Entry(m)), idxKey: dsv4IndexKey(m),
		window: float64(m.SlidingWindow), topK: float64(m.IndexTopK)}
	for _, r := range l.ratio {
		switch r {
		case 0:
			a.nSWA++
		case 4:
			a.nCSA++
		case 128:
			a.nHCA++
		}
	}
	hr := float64(m.NumHeads) / float64(max(d.TP, 1))
	padded := 64.0
	if hr > 64 {
		padded = 128
	}
	a.flopsPerKey = 2 * 2 * float64(m.HeadDim) * padded
	a.idxFlopsPerKey = 2 * float64(m.IndexHeads*m.IndexHeadDim)
	return a
}

// work is the FLOPs and HBM bytes of every DeepSeek-V4 attention kernel of
// the stage for one step: nDec decode rows over decodeCtx context tokens
// in all, pre prefill tokens with pairs (query, key) pairs over nPre
// prefill rows holding prefillCtx tokens. Per-query bounds (window,
// top-k) are applied to the sums, exact when every row is on the same
// side of the bound.
func (a *dsv4Attn) work(nDec, decodeCtx, pre, pairs, nPre, prefillCtx float64) (flops, bytes float64) {
	// Keys attended per kind.
	swaKeys := math.Min(decodeCtx, nDec*a.window) + math.Min(pairs, pre*a.window)
	csaKeys := math.Min(decodeCtx/4, nDec*a.topK) + math.Min(pairs/4, pre*a.topK)
	hcaKeys := decodeCtx/128 + pairs/128
	idxKeys := decodeCtx/4 + pairs/4
	flops = a.flopsPerKey*((a.nSWA+a.nCSA+a.nHCA)*swaKeys+a.nCSA*csaKeys+a.nHCA*hcaKeys) +
		a.nCSA*idxKeys*a.idxFlopsPerKey
	// Bytes: decode reads the keys it attends and the indexer every
	// compressed key; prefill reads each row's cache once.
	readSWA := math.Min(decodeCtx, nDec*a.window) + math.Min(prefillCtx, nPre*a.window)
	readCSA := math.Min(decodeCtx/4, nDec*a.topK) + prefillCtx/4
	bytes = a.entry*((a.nSWA+a.nCSA+a.nHCA)*readSWA+a.nCSA*readCSA+a.nHCA*(decodeCtx+prefillCtx)/128) +
		a.nCSA*a.idxKey*(decodeCtx+prefillCtx)/4
	return flops, bytes
}

// dsv4Roofline replaces the generic attention terms of the roofline with
// DeepSeek-V4's: the attention kernels' work (dsv4Attn), the unquantized
// compressor and indexer GEMMs and mHC's fp32 mixing GEMMs (at the BF16
// rate), the cache writes of every new token (window entry, compressed
// entries, compressor states) and mHC's reads and writes of the hc_mult
// residual streams around both blocks of every layer.
func dsv4Roofline(d Deployment, s shape, r *roofline, attnRate, bf16 float64) {
	m := d.Model
	l := dsv4StageLayers(d)
	hc, H := float64(m.HCMult), s.H
	var extra float64
	for i, ratio := range l.ratio {
		p := m.DSV4LayerParams(ratio, l.hash[i])
		extra += p.BF16 + 2*(2+hc)*hc*hc*H
	}
	r.secGEMMPerToken += 2 * extra / bf16
	r.secPairFull, r.secPairSW, r.secDecodeCtxFull, r.secDecodeCtxSW, r.secPrefillCtxUp = 0, 0, 0, 0, 0
	r.bytesKVFull, r.bytesKVSW, r.window = 0, 0, 0
	r.bytesKVWrite = dsv4GrowBytes(m, l.ratio) + dsv4WindowBytes(m, l.ratio, 0)
	r.bytesActPerToken += s.L * s.dtypeB * 2 * (2 + 2*hc) * H
	r.dsv4, r.dsv4Rate = newDSV4Attn(d), attnRate
}

// dsv4Kind reports whether the layer kind's attention is DeepSeek-V4's.
func dsv4Kind(lk *catalog.LayerKind) bool { return dsv4Attention(lk.Attention()) }

// dsv4Attention reports whether a is a DeepSeek-V4 attention (sliding
// window only, CSA or HCA).
func dsv4Attention(a *catalog.Attention) bool {
	return a != nil && (a.Kind == catalog.AttnDSV4SWA || a.Kind == catalog.AttnDSV4CSA || a.Kind == catalog.AttnDSV4HCA)
}

// dsv4ModuleLaws are the fitted DeepSeek-V4 attention-module laws of one
// layer kind (catalog dsv4_attention_decode / dsv4_attention_prefill).
type dsv4ModuleLaws struct{ dec, pre *catalog.DSV4AttnLaw }

// dsv4Laws looks up the module laws for attention a, or nil when the
// chip's coefficients have none for the checkpoint. The law's kind is the
// layer's: CSA (compress ratio 4) its own, HCA and sliding-window-only
// layers (ratio 0) the HCA law, whose shape then has CompressRatio 0 (no
// compressor, no compressed entries: docs/calibration.md). The laws are
// fitted on fp8 block-scaled projections; the KV cache they read is
// always fp8_ds_mla (DeepSeek-V4's cache whatever --kv-cache-dtype, as
// the memory plan sizes it), so the KV dtype looked up is fp8.
func (r *resolver) dsv4Laws(a *catalog.Attention) *dsv4ModuleLaws {
	if a == nil {
		return nil
	}
	kind := "hca"
	if a.Kind == catalog.AttnDSV4CSA {
		kind = "csa"
	}
	gd := "bfloat16"
	if r.d.Model.WeightBlock > 0 {
		gd = "fp8_block"
	}
	dec, err := r.co.DSV4DecodeFor(kind, gd, "fp8")
	if err != nil {
		return nil
	}
	pre, err := r.co.DSV4PrefillFor(kind, gd, "fp8")
	if err != nil {
		return nil
	}
	return &dsv4ModuleLaws{dec: dec, pre: pre}
}

// dsv4ModuleShape is attention a's module on one of the deployment's TP
// ranks: query heads and output groups split by TP, the rest replicated.
func dsv4ModuleShape(d Deployment, a *catalog.Attention) DSV4Shape {
	m := d.Model
	tp := float64(max(d.TP, 1))
	return DSV4Shape{Hidden: float64(m.HiddenSize), Heads: float64(a.Heads) / tp, HeadDim: float64(a.HeadDim),
		QLoraRank: float64(m.QLoraRank), OLoraRank: float64(m.OLoraRank), OGroups: float64(m.OGroups) / tp,
		IndexHeads: float64(a.IndexHeads), IndexHeadDim: float64(a.IndexHeadDim), TopK: float64(a.IndexTopK),
		Window: float64(a.Window), CompressRatio: float64(a.CompressRatio)}
}

// dsv4Term resolves a DeepSeek-V4 attention op for the fitted pricer: the
// whole attention module of one layer, priced by the module laws of its
// kind (termDSV4Mod; resolveTerms then skips the module's other
// operators). Where the chip has no law for the checkpoint, the kernel is
// priced with the roofline's work instead (dsv4Attn for one layer of the
// op's kind, at the roofline's attention efficiency of the BF16 peak and
// the chip's streaming bandwidth, whichever bounds), the module's other
// operators one by one, and the substitution is recorded. It reports
// false for any other op.
func (r *resolver) dsv4Term(op catalog.Op, t *term) bool {
	a := op.Attn
	if !dsv4Attention(a) {
		return false
	}
	if laws := r.dsv4Laws(a); laws != nil {
		t.kind, t.v4Dec, t.v4Pre, t.v4 = termDSV4Mod, laws.dec, laws.pre, dsv4ModuleShape(r.d, a)
		t.name += " (" + a.Kind + " module, " + laws.dec.Kind + " law)"
		return true
	}
	one := newDSV4Attn(r.d)
	one.nSWA, one.nCSA, one.nHCA = 0, 0, 0
	switch a.Kind {
	case catalog.AttnDSV4SWA:
		one.nSWA = 1
	case catalog.AttnDSV4CSA:
		one.nCSA = 1
	default:
		one.nHCA = 1
	}
	// Layer kinds of the same attention kind (hash-routed or not) share
	// one work description, so that their terms merge.
	for i := range r.f.terms {
		if u := &r.f.terms[i]; u.kind == termDSV4 && *u.dsv4 == *one {
			one = u.dsv4
			break
		}
	}
	ra, err := DefaultRooflineAssumptions()
	if err != nil {
		r.err = err
		return true
	}
	t.kind, t.dsv4, t.rate = termDSV4, one, r.d.Chip.BF16FLOPS*ra.AttnEfficiency
	t.name += " (" + a.Kind + ")"
	r.sub("attention %s: no DeepSeek-V4 attention-module law on %s for these weights (fitted: fp8_block projections); the kernel is priced with the roofline (FLOPs at %.0f%% of the BF16 peak, or bytes at the streaming bandwidth) and the module's other operators one by one",
		a.Kind, r.d.Chip.Name, 100*ra.AttnEfficiency)
	return true
}

// dsv4ModuleTime is one layer's attention module for a step: nDec decode
// rows over decodeCtx context tokens in all (each counting its new token),
// nPre prefill rows adding pre tokens with pairs causal pairs onto
// prefillCtx cached tokens. Decode and prefill are priced as two module
// calls and summed, as the DSA term does. A step whose prefill rows each
// schedule one token runs them on vLLM's DeepSeek-V4 decode path (the
// module tables' one-token prefill rows equal their decode rows), so they
// join the decode rows; from the step's sums a mix of one-token and longer
// prefill rows cannot be told apart and is priced by the prefill law.
// Speculative decode rows count as one row each, as the MLA and DSA terms
// count them (NumDecode, not DecodeTokens).
func dsv4ModuleTime(dec, pre *catalog.DSV4AttnLaw, s DSV4Shape, nDec, decodeCtx, nPre, preTokens, pairs, prefillCtx float64) float64 {
	if nPre > 0 && preTokens == nPre {
		nDec, decodeCtx = nDec+nPre, decodeCtx+prefillCtx+preTokens
		nPre = 0
	}
	var t float64
	if nDec > 0 {
		k, ix := s.DecodeReads(nDec, decodeCtx)
		t += DSV4DecodeTime(dec, s, nDec, k, ix)
	}
	if nPre > 0 {
		ap, ip, e := s.PrefillReadsFromPairs(preTokens, pairs, prefillCtx+preTokens)
		t += DSV4PrefillTime(pre, s, preTokens, ap, ip, e)
	}
	return t
}

// mhcTerm resolves DeepSeek-V4's mHC operators for the fitted pricer.
// The graph fuses the previous block's post with the next block's pre
// (hc_attn_post_pre, hc_ffn_post_pre: two sites a layer) and adds the
// last layer's post after the stack (hc_post); vLLM runs a pre and a post
// call per site (mhc_pre_tilelang, mhc_post_tilelang), so each fused op is
// priced as one pre and one post over all the step's tokens (MHCTime),
// which already counts the last layer's post: hc_post is skipped. With no
// mHC law on the chip the ops stay memory-bound elementwise ops and the
// substitution is recorded. handled: t is an mHC term; skip: add nothing.
func (r *resolver) mhcTerm(op catalog.Op, t *term) (handled, skip bool) {
	m := r.d.Model
	if m.HCMult < 1 || (op.Name != "hc_attn_post_pre" && op.Name != "hc_ffn_post_pre" && op.Name != "hc_post") {
		return false, false
	}
	pre, err := r.co.MHCFor("pre")
	if err != nil {
		r.sub("mhc: no mHC law on %s; the fused post+pre kernels are priced as memory-bound elementwise operators", r.d.Chip.Name)
		return false, false
	}
	post, err := r.co.MHCFor("post")
	if err != nil {
		r.sub("mhc: no mHC law on %s; the fused post+pre kernels are priced as memory-bound elementwise operators", r.d.Chip.Name)
		return false, false
	}
	if op.Name == "hc_post" {
		return false, true
	}
	t.kind, t.mhcPre, t.mhcPost = termMHC, pre, post
	t.n, t.k = float64(m.HiddenSize), float64(m.HCMult)
	t.name += " (mHC pre + post laws)"
	return true, false
}

// dsv4KVNote says what the DeepSeek-V4 layout holds, for the memory plan.
func dsv4KVNote(d Deployment, kv kvLayout) string {
	m := d.Model
	l := dsv4StageLayers(d)
	mtp := dsv4MTPLayers(d)
	sliding := 0
	for g := 0; g < kv.layout.Groups; g++ {
		if kv.layout.IsSliding(g) {
			sliding++
		}
	}
	return fmt.Sprintf("DeepSeek-V4: %.0f B per context token in the compressed caches (CSA entries and indexer keys, HCA entries) and %.0f B per token of the last %d "+
		"in the raw windows and compressor states, held as %d full and %d sliding-window groups of %.0f-byte blocks sharing the pool; "+
		"tokens = maximum concurrency × max-model-len, as vLLM reports them for compressed attention",
		dsv4GrowBytes(m, l.ratio), dsv4WindowBytes(m, l.ratio, mtp), m.SlidingWindow, kv.layout.Groups-sliding, sliding, kv.blockBytes)
}

// dsv4PrefillChunk is deepseek_v4_attention.py's PREFILL_CHUNK_SIZE: the
// prefill rows whose cached context is gathered at once.
const dsv4PrefillChunk = 4

// dsv4Workspace is the bf16 kv-gather workspace DeepSeek-V4's prefill
// reserves (deepseek_v4_attention.py _forward_prefill: PREFILL_CHUNK_SIZE
// rows of M = N + window + max_num_batched_tokens head_dim-wide rows, N =
// cdiv(max_model_len, ratio) for the smallest ratio of the stage's
// compressed layers, 0 when none), held through the profile run.
func dsv4Workspace(d Deployment) float64 {
	m := d.Model
	ratio := 0
	for _, r := range dsv4StageLayers(d).ratio {
		if r > 0 && (ratio == 0 || r < ratio) {
			ratio = r
		}
	}
	n := 0
	if ratio > 0 {
		n = (d.MaxModelLen + ratio - 1) / ratio
	}
	rows := n + m.SlidingWindow + d.MaxNumBatchedTokens
	return float64(dsv4PrefillChunk*rows*m.HeadDim) * 2
}
