package catalog

import "fmt"

// DeepSeek-V4's operator graph, mirrored from vLLM (vllm-project/vllm):
// vllm/model_executor/models/deepseek_v4.py @023da1fc (DeepseekV4Attention,
// DeepseekV4MoE, DeepseekV4DecoderLayer, DeepseekV4Model),
// vllm/model_executor/layers/deepseek_v4_attention.py @0a291a2e (the
// attention module, its caches and the indexer),
// vllm/model_executor/layers/deepseek_compressor.py (DeepseekCompressor,
// CompressorStateCache), vllm/model_executor/models/deepseek_v4_mtp.py
// @023da1fc (the MTP draft) and vllm/v1/kv_cache_interface.py
// (MLAAttentionSpec.storage_block_size, the 584-byte DeepSeek-V4 entry).
const (
	srcDSV4    = "vllm/model_executor/models/deepseek_v4.py@023da1fc"
	srcDSV4MTP = "vllm/model_executor/models/deepseek_v4_mtp.py@023da1fc"
)

// Attention kinds of DeepSeek-V4's three layer types.
const (
	AttnDSV4SWA = "dsv4_swa" // sliding window only (compress ratio 0)
	AttnDSV4CSA = "dsv4_csa" // compressed sparse attention (ratio 4, indexer top-k)
	AttnDSV4HCA = "dsv4_hca" // heavily compressed attention (ratio 128)
)

// dsv4EntryBytes is one DeepSeek-V4 KV cache entry (a raw window token or
// a compressed entry) in vLLM's fp8_ds_mla layout: the 448 no-RoPE dims in
// fp8, the 64 RoPE dims in bf16, 7 ue8m0 scales (one per 64) and one pad
// byte (kv_cache_interface.py MLAAttentionSpec.real_page_size_bytes: 584).
func dsv4EntryBytes(m *Model) int {
	nope := m.HeadDim - m.QKRopeHeadDim
	return nope + 2*m.QKRopeHeadDim + nope/64 + 1
}

// dsv4ModuleOps are the operators vLLM runs inside
// DeepseekV4MultiHeadLatentAttentionWrapper (the attention module the
// measured DeepSeek-V4 attention tables time as a whole): the input
// projections, norms, RoPE and cache inserts, the compressors and the
// indexer, and the grouped output projection. wo_b's all-reduce follows
// the module.
var dsv4ModuleOps = map[string]bool{
	"fused_wqa_wkv": true, "q_kv_norm": true, "wq_b": true, "q_norm_rope_kv_insert": true,
	"compressor.fused_wkv_wgate": true, "compressor.compress": true,
	"indexer.wq_b": true, "indexer.weights_proj": true, "indexer.compressor.fused_wkv_wgate": true,
	"indexer.compressor.compress": true, "indexer.q_rope_quant": true,
	"inv_rope_fp8_quant": true, "wo_a": true, "wo_b": true,
}

// deriveDSV4 builds DeepSeek-V4's graph. Every layer is a MoE layer; the
// kinds are the attention type (compress_ratios) crossed with the routing
// (token-id hash for the first num_hash_layers layers, learned otherwise).
func deriveDSV4(m *Model, f family) (*Graph, error) {
	if len(m.CompressRatios) != m.NumLayers || !m.IsMoE() || m.HCMult < 1 || m.OGroups < 1 {
		return nil, fmt.Errorf("%s: %s config is incomplete (compress_ratios, experts, hc_mult, o_groups)", m.ID, m.Architecture)
	}
	b := newBuilder(m, f)
	b.denseDt = b.attnDt
	b.expertDt = b.attnDt
	switch m.ExpertDtype {
	case "fp4":
		b.expertDt = "mxfp4"
	case "nvfp4":
		b.expertDt = "nvfp4"
	}
	H, hc := b.H, m.HCMult
	g := &Graph{
		Version: GraphVersion, Model: m.ID, Architecture: m.Architecture, Family: f.name, Mirrors: f.src,
		Dtype: b.act, Hidden: H, Vocab: b.vocab, TiedEmbeddings: m.TieEmbeddings,
		// DeepseekV4Model.forward repeats the embedding into hc_mult streams.
		Embed: append(b.embedOps(), elementwise("hc_expand", b.bytes((1+hc)*H), ShardReplicated)),
	}
	// After the last layer: its mHC post (the layer loop's last fused op
	// is a pre for a block that does not exist), the hc_head reduction of
	// the streams, the final norm and the LM head.
	g.Head = append(b.dsv4HCHead(), b.headOps("norm", 2, "lm_head")...)
	g.Head = append([]Op{elementwise("hc_post", b.bytes((1+2*hc)*H), ShardReplicated)}, g.Head...)

	type key struct {
		ratio        int
		hash, engram bool
	}
	groupLayers(g, m.NumLayers, func(i int) key {
		return key{ratio: m.CompressRatios[i], hash: i < m.NumHashLayers, engram: m.isEngramLayer(i)}
	}, func(k key) LayerKind {
		name := map[int]string{0: "swa", 4: "csa", 128: "hca"}[k.ratio]
		if k.hash {
			name += "_hash"
		}
		ops := b.dsv4LayerOps(k.ratio, k.hash)
		if k.engram {
			name += "_engram"
			ops = append(b.engramOps(), ops...)
		}
		return LayerKind{Name: name, Ops: ops}
	})
	if m.NumNextNLayers > 0 {
		g.Draft = b.dsv4MTP()
	}
	csa := b.dsv4Attention(4)
	g.Notes = append(g.Notes,
		fmt.Sprintf("DeepSeek-V4 attention as vLLM's FlashMLA sparse path runs it: one %d-wide KV head shared by %d query heads, every layer attending to its last %d raw tokens; "+
			"CSA layers (compress ratio 4) add the %d compressed entries a lightning indexer (%d heads × %d, replicated on every TP rank) picks from all of them, "+
			"HCA layers (ratio 128) every compressed entry; each cached entry is %d bytes (fp8_ds_mla) whatever --kv-cache-dtype, the indexer's keys %d bytes",
			m.HeadDim, m.NumHeads, m.SlidingWindow, m.IndexTopK, m.IndexHeads, m.IndexHeadDim, csa.EntryBytes, csa.IndexerCacheBytes),
		fmt.Sprintf("mHC: %d residual streams; each block's pre and post mixing (one fused post+pre kernel between blocks: a %d-way fp32 mixing projection and %d Sinkhorn iterations) is one memory-bound elementwise op",
			hc, (2+hc)*hc, m.HCSinkhornIters),
		fmt.Sprintf("the first %d layers route by vLLM's token-id table (tid2eid) instead of the learned top-k; routed experts are %s, linear layers fp8 with 128×128 block scales", m.NumHashLayers, b.expertDt))
	if e := m.Engram; e != nil {
		g.Notes = append(g.Notes, fmt.Sprintf("Engram at layers %v: %d hash heads a layer (n-gram orders 2..%d × %d heads), each gathering one %d-value fp8 row (%g bytes with scales) per token from tables of %.0f GiB in all; "+
			"the gather runs before the forward on a side stream (kernel/engram.go: host memory over UVA by default, --engram-config), the key/value projection and gated add at the start of the layer",
			e.Layers, e.HashHeads(), e.MaxNgram, e.Heads, e.HeadDim, e.RowBytes(), e.TableBytes()/(1<<30)))
	}
	return g, nil
}

// dsv4Coff is a compressor's overlap factor (DeepseekCompressor's coff):
// ratio-4 compressors pool overlapping windows of twice the ratio, with
// twice the kv and score channels; the others pool disjoint windows.
func dsv4Coff(ratio int) int {
	if ratio == 4 {
		return 2
	}
	return 1
}

// dsv4Attention is the attention kernel of a layer of compress ratio
// ratio (0: sliding window only), with the per-token cache components
// vLLM allocates for it (deepseek_v4_attention.py: DeepseekV4SWACache,
// the compressed MLAAttentionSpec, DeepseekV4IndexerCache; compressor
// CompressorStateCache: state_dim 2·coff·head_dim fp32 over a window of
// coff·ratio tokens, coff 2 for ratio 4 (overlapping windows) else 1).
func (b *builder) dsv4Attention(ratio int) *Attention {
	m := b.m
	a := &Attention{
		Kind: AttnDSV4SWA, Heads: m.NumHeads, KVHeads: 1, HeadDim: m.HeadDim, VHeadDim: m.HeadDim,
		Window: m.SlidingWindow, Sinks: true, QLoraRank: m.QLoraRank, QKRopeHeadDim: m.QKRopeHeadDim,
		KVCacheShard: "replicated", CompressRatio: ratio, EntryBytes: dsv4EntryBytes(m),
	}
	if ratio == 0 {
		return a
	}
	coff := dsv4Coff(ratio)
	a.StateTokens, a.StateBytes = coff*ratio, 2*coff*m.HeadDim*4
	a.Kind = AttnDSV4HCA
	if ratio == 4 {
		a.Kind = AttnDSV4CSA
		a.IndexTopK, a.IndexHeads, a.IndexHeadDim = m.IndexTopK, m.IndexHeads, m.IndexHeadDim
		// fp8 keys and one fp32 scale per 128 (DeepseekV4Indexer k_cache_head_dim).
		a.IndexerCacheBytes = m.IndexHeadDim + m.IndexHeadDim/128*4
		a.IndexerStateTokens, a.IndexerStateBytes = 2*ratio, 2*2*m.IndexHeadDim*4
	}
	return a
}

// dsv4LayerOps is one DeepseekV4DecoderLayer (the CUDA path): the fused
// mHC post+pre around the attention block, attn_norm, the attention
// module, the fused mHC post+pre around the MoE block, then the MoE
// (norm_gate: RMSNorm and router in one, shared experts inside FusedMoE).
func (b *builder) dsv4LayerOps(ratio int, hash bool) []Op {
	ops := b.dsv4MHC("hc_attn")
	ops = append(ops, elementwise("attn_norm", b.bytes(2*b.H), ShardReplicated))
	ops = append(ops, b.dsv4AttentionOps(ratio)...)
	ops = append(ops, b.dsv4MHC("hc_ffn")...)
	return append(ops, b.dsv4MoEOps(hash)...)
}

// dsv4MHC is one MHCFusedPostPreOp (mhc.py), a single fused kernel: the
// previous block's output and the hc_mult residual streams are read, the
// streams updated with the post and residual mixes and written, the
// hc_mult × hidden input normalised and projected onto the
// (2 + hc_mult) · hc_mult mixing logits (hc_fn, fp32, 2·24·4·hidden FLOPs
// a token: negligible beside the bytes), Sinkhorn-normalised, and the
// block's input written: per token (2 + 2·hc)·hidden values moved. It is
// memory-bound and represented as one elementwise op.
func (b *builder) dsv4MHC(prefix string) []Op {
	hc, H := b.m.HCMult, b.H
	return []Op{elementwise(prefix+"_post_pre", b.bytes((2+2*hc)*H), ShardReplicated)}
}

// dsv4HCHead is HCHeadOp, one fused kernel: the streams reduced to one
// hidden state through hc_head_fn's hc_mult mixing weights.
func (b *builder) dsv4HCHead() []Op {
	hc, H := b.m.HCMult, b.H
	return []Op{elementwise("hc_head", b.bytes((hc+1)*H), ShardReplicated)}
}

// dsv4AttentionOps mirrors DeepseekV4Attention and its module wrapper:
// fused_wqa_wkv (q_a and the single KV head, replicated), the fused q/kv
// RMSNorm, wq_b (column-parallel over heads), the per-head q norm with RoPE
// and the quantised insert of the new token into the window cache; for
// compressed layers the compressor (a replicated bf16 GEMM to kv and score
// states, then compress → norm → RoPE → fp8 store), for CSA the indexer
// (wq_b and weights_proj replicated, its own compressor, the query's RoPE
// and fp8 quantisation); the attention kernel; then the output path:
// inverse RoPE with fp8 quantisation, wo_a as a per-group batched GEMM
// (o_groups groups split over TP) and the row-parallel wo_b with its
// all-reduce.
func (b *builder) dsv4AttentionOps(ratio int) []Op {
	m := b.m
	H, h, d, ql := b.H, m.NumHeads, m.HeadDim, m.QLoraRank
	wqa := gemm("fused_wqa_wkv", ql+d, H, b.attnDt, ShardReplicated)
	wqa.Parts = []int{ql, d}
	ops := []Op{wqa,
		elementwise("q_kv_norm", b.bytes(2*(ql+d)), ShardReplicated),
		gemm("wq_b", h*d, ql, b.attnDt, ShardColumn),
		// q read and written, the new KV row read and its 584-byte entry written.
		elementwise("q_norm_rope_kv_insert", b.bytes(2*h*d+d)+float64(dsv4EntryBytes(m)), ShardSplit),
	}
	if ratio > 0 {
		coff := dsv4Coff(ratio)
		ops = append(ops,
			gemm("compressor.fused_wkv_wgate", 2*coff*d, H, b.act, ShardReplicated),
			// kv and score states (fp32) written, the window's states read
			// once per compressed entry, the entry stored: per token about
			// the state written and read.
			elementwise("compressor.compress", b.bytes(2*coff*d)+2*float64(2*coff*d*4), ShardReplicated))
	}
	if ratio == 4 {
		ih, id := m.IndexHeads, m.IndexHeadDim
		ops = append(ops,
			gemm("indexer.wq_b", ih*id, ql, b.attnDt, ShardReplicated),
			gemm("indexer.weights_proj", ih, H, b.act, ShardReplicated),
			gemm("indexer.compressor.fused_wkv_wgate", 2*2*id, H, b.act, ShardReplicated),
			elementwise("indexer.compressor.compress", b.bytes(2*2*id)+2*float64(2*2*id*4), ShardReplicated),
			elementwise("indexer.q_rope_quant", b.bytes(ih*id)+float64(ih*id), ShardReplicated))
	}
	ops = append(ops, Op{Kind: OpAttention, Name: "attn", Shard: ShardSplit, Attn: b.dsv4Attention(ratio)})
	g, ol := m.OGroups, m.OLoraRank
	woA := Op{Kind: OpGEMM, Name: "wo_a", Batch: g, N: ol, K: h / g * d, Dtype: b.attnDt, Shard: ShardSplit}
	return append(ops,
		elementwise("inv_rope_fp8_quant", b.bytes(h*d)+float64(h*d), ShardSplit),
		woA,
		gemm("wo_b", H, g*ol, b.attnDt, ShardRow),
		collective("wo_b.all_reduce", GroupTP, "all_reduce", b.bytes(H)))
}

// dsv4MoEOps mirrors DeepseekV4MoE with FusedMoE: NormGateLinear (the
// RMSNorm and the router GEMM in one, fp32 logits), on hash layers the
// token-id → experts lookup instead of a learned top-k, the shared expert
// (inside FusedMoE, reduced with the routed output), the DP dispatch, the
// experts, the DP combine and the TP all-reduce.
func (b *builder) dsv4MoEOps(hash bool) []Op {
	m := b.m
	ops := []Op{
		elementwise("ffn_norm", b.bytes(2*b.H), ShardReplicated),
		gemm("gate", m.NumExperts, b.H, b.act, ShardReplicated),
	}
	if hash {
		// tid2eid: top-k int32 expert ids gathered per token.
		ops = append(ops, elementwise("hash_route", float64(4*m.ExpertsPerToken), ShardReplicated))
	}
	// The shared experts are fp8 block linears like attention's
	// (deriveDSV4 sets denseDt to attnDt).
	ops = append(ops, b.mlpOps("shared_experts.", m.NumSharedExperts*m.SharedExpertIntermediateSize, false, false)...)
	return append(ops,
		collective("experts.dispatch", GroupDP, "all_gather", b.bytes(b.H)+float64(m.NumExperts)*4),
		Op{Kind: OpMoE, Name: "experts", Shard: ShardExperts, MoE: &MoE{
			Experts: m.NumExperts, TopK: m.ExpertsPerToken, Hidden: b.H, Inter: m.MoEIntermediateSize,
			Dtype: b.expertDt, Activation: "silu", Scoring: m.ScoringFunc, CorrectionBias: m.RoutingBias && !hash,
			SharedExperts: m.NumSharedExperts, SharedInter: m.SharedExpertIntermediateSize,
			Hash: hash, ActivationLimit: m.SwigluLimit,
		}},
		collective("experts.combine", GroupDP, "reduce_scatter", b.bytes(b.H)),
		collective("experts.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)))
}

// dsv4MTP mirrors DeepSeekV4MultiTokenPredictorLayer: its own embedding,
// enorm on the token embedding, hnorm on the target's hc_mult streams,
// h_proj (per stream) and e_proj (fp8, replicated) summed, one
// DeepseekV4DecoderLayer (layer index num_hidden_layers: vLLM gives it
// compress ratio 1, sliding window only, and learned routing), its mHC
// post, then in compute_logits hc_head, shared_head.norm and the head.
func (b *builder) dsv4MTP() *Draft {
	m := b.m
	H, hc := b.H, m.HCMult
	ops := append(b.embedOps(),
		elementwise("enorm", b.bytes(2*H), ShardReplicated),
		elementwise("hnorm", b.bytes(2*hc*H), ShardReplicated),
		gemm("e_proj", H, H, b.attnDt, ShardReplicated),
		// h_proj runs on every stream with one shared weight; the graph
		// keeps the weight's shape (its FLOPs are priced for one stream).
		gemm("h_proj", H, H, b.attnDt, ShardReplicated),
		elementwise("eh_add", b.bytes((2*hc+1)*H), ShardReplicated))
	if m.ExpertDtype == "nvfp4" {
		// NVFP4 checkpoints quantize the decoder layers' experts only; the
		// MTP layer's stay MXFP4 (DeepseekV4FP8Config._uses_nvfp4_experts).
		dt := b.expertDt
		b.expertDt = "mxfp4"
		defer func() { b.expertDt = dt }()
	}
	ops = append(ops, b.dsv4LayerOps(0, false)...)
	ops = append(ops, elementwise("hc_post", b.bytes((1+2*hc)*H), ShardReplicated))
	ops = append(ops, b.dsv4HCHead()...)
	ops = append(ops, b.headOps("shared_head.norm", 2, "shared_head.head")...)
	return &Draft{Method: "mtp", Mirrors: srcDSV4MTP, Layers: []LayerKind{{
		Name: "mtp_swa", Count: m.NumNextNLayers, Ops: ops,
	}}}
}

// DSV4LayerParams is one DeepSeek-V4 decoder layer's parameters by how
// vLLM stores and shards them.
type DSV4LayerParams struct {
	// AttnReplicated and AttnSharded are the fp8 block-quantized attention
	// linears: fused_wqa_wkv and the indexer's wq_b on every TP rank;
	// wq_b, wo_a and wo_b split over TP.
	AttnReplicated, AttnSharded float64
	// Unquantized replicated linears in the model dtype: the compressors'
	// fused_wkv_wgate and the indexer's weights_proj (quant_config=None).
	BF16 float64
	// FP32: mHC's hc_attn/ffn fn, base and scale, the compressors' ape
	// (absolute position embedding), attn_sink.
	FP32 float64
	// Norms in the model dtype: attn_norm, ffn_norm, q_norm, kv_norm, the
	// compressors' norms and the indexer's k LayerNorm (weight and bias).
	Norms float64
	// Gate is the router weight, HashTable the tid2eid int32 entries of a
	// hash layer (vocab × top-k).
	Gate, HashTable float64
	// Expert is one routed expert (w1, w2, w3), Shared the shared experts.
	Expert, Shared float64
}

// DSV4LayerParams counts a layer of compress ratio ratio (0, 4 or 128);
// hash marks a token-id-routed layer (deepseek_v4.py DeepseekV4Attention,
// DeepseekV4MoE, DeepseekV4DecoderLayer; deepseek_compressor.py;
// deepseek_v4_attention.py DeepseekV4Indexer).
func (m *Model) DSV4LayerParams(ratio int, hash bool) DSV4LayerParams {
	H, h, d, ql := float64(m.HiddenSize), float64(m.NumHeads), float64(m.HeadDim), float64(m.QLoraRank)
	hc := float64(m.HCMult)
	var p DSV4LayerParams
	p.AttnReplicated = H * (ql + d)
	p.AttnSharded = ql*h*d + h*d*float64(m.OLoraRank) + float64(m.OGroups*m.OLoraRank)*H
	p.Norms = 2*H + ql + d
	mix := (2 + hc) * hc
	p.FP32 = 2*(mix*hc*H+mix+3) + h
	compressor := func(dim float64, ratio int) {
		coff := float64(dsv4Coff(ratio))
		p.BF16 += H * 2 * coff * dim
		p.FP32 += float64(ratio) * coff * dim
		p.Norms += dim
	}
	if ratio > 0 {
		compressor(d, ratio)
	}
	if ratio == 4 {
		ih, id := float64(m.IndexHeads), float64(m.IndexHeadDim)
		p.AttnReplicated += ql * ih * id
		p.BF16 += H * ih
		p.Norms += 2 * id
		compressor(id, ratio)
	}
	p.Gate = H * float64(m.NumExperts)
	if hash {
		p.HashTable = float64(m.VocabSize * m.ExpertsPerToken)
	} else if m.RoutingBias {
		p.FP32 += float64(m.NumExperts)
	}
	p.Expert = 3 * H * float64(m.MoEIntermediateSize)
	p.Shared = 3 * H * float64(m.NumSharedExperts*m.SharedExpertIntermediateSize)
	return p
}

// Total is the layer's parameter count (the hash table's entries included).
func (p DSV4LayerParams) Total(experts int) float64 {
	return p.NonExpert() + float64(experts)*p.Expert
}

// NonExpert is every parameter but the routed experts'.
func (p DSV4LayerParams) NonExpert() float64 {
	return p.AttnReplicated + p.AttnSharded + p.BF16 + p.FP32 + p.Norms + p.Gate + p.HashTable + p.Shared
}

// DSV4Params is the model's total and active (per token: top-k routed
// experts) parameter counts, the MTP layer not included: embedding, LM
// head, final norm, hc_head and every decoder layer.
func (m *Model) DSV4Params() (total, active float64) {
	H, hc := float64(m.HiddenSize), float64(m.HCMult)
	outer := 2*float64(m.VocabSize)*H + H + hc*hc*H + hc + 1
	total, active = outer, outer
	for i, r := range m.CompressRatios {
		p := m.DSV4LayerParams(r, i < m.NumHashLayers)
		total += p.Total(m.NumExperts)
		active += p.NonExpert() - p.HashTable + float64(m.ExpertsPerToken)*p.Expert
	}
	return total, active
}
