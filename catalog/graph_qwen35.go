package catalog

import "fmt"

// OpGDN is a Gated DeltaNet kernel (Qwen3-Next, Qwen3.5 linear-attention
// layers): the causal conv1d over the q, k and v channels, or the gated
// delta rule that updates each request's recurrent state. Its GDN field
// says which and carries the state's size.
const OpGDN = "gdn"

// GDN stages: the two kernels vLLM's GDN layer runs between its input and
// output projections (vllm/model_executor/layers/mamba/gdn, @36c110bd).
const (
	// GDNConv: causal_conv1d_fn over a prefill chunk (reading and writing
	// the conv state), causal_conv1d_update for a decode token.
	GDNConv = "conv"
	// GDNRule: fused_gdn_gating then the chunked gated delta rule
	// (chunk_gated_delta_rule) for prefill tokens, the fused recurrent one
	// (fused_recurrent_gated_delta_rule) for decode tokens: each reads
	// and writes the request's state matrices.
	GDNRule = "delta_rule"
)

// GDN describes one Gated DeltaNet kernel of a layer, all ranks together;
// TP splits the heads and channels (and so the state) evenly.
type GDN struct {
	Stage        string `json:"stage"` // GDNConv or GDNRule
	KeyHeads     int    `json:"key_heads"`
	ValueHeads   int    `json:"value_heads"`
	KeyHeadDim   int    `json:"key_head_dim"`
	ValueHeadDim int    `json:"value_head_dim"`
	ConvKernel   int    `json:"conv_kernel,omitempty"` // GDNConv: the conv's width in tokens
	// StateBytes is the part of a request's recurrent state this kernel
	// reads and writes, all ranks: the conv window (kernel − 1) × conv
	// channels in the model dtype, or the value heads' key_dim × value_dim
	// matrices in the ssm dtype.
	StateBytes float64 `json:"state_bytes"`
	StateDtype string  `json:"state_dtype"`
}

// srcQwen35 is the vLLM module the Qwen3.5 family mirrors (it builds on
// qwen3_next.py's layers and the GDN layer in layers/mamba/gdn).
const (
	srcQwen35    = "vllm/model_executor/models/qwen3_5.py@36c110bd"
	srcQwen35MTP = "vllm/model_executor/models/qwen3_5_mtp.py@36c110bd"
)

// GDN returns the kind's Gated DeltaNet kernel of stage, or nil.
func (k *LayerKind) GDN(stage string) *GDN {
	for i := range k.Ops {
		if g := k.Ops[i].GDN; g != nil && g.Stage == stage {
			return g
		}
	}
	return nil
}

// LinearStateBytes is the recurrent state one request keeps in one layer
// of this kind on one of tp ranks (0 for a layer without GDN kernels).
func (k *LayerKind) LinearStateBytes(tp int) float64 {
	s := 0.0
	for i := range k.Ops {
		if g := k.Ops[i].GDN; g != nil {
			s += g.StateBytes / float64(max(tp, 1))
		}
	}
	return s
}

// qwen35Graph builds the Qwen3.5 stack: Gated DeltaNet and gated
// full-attention layers as layer_types orders them, each followed by the
// MoE block (or the dense MLP), and the MTP draft.
func (b *builder) qwen35Graph(g *Graph) (*Graph, error) {
	m := b.m
	if len(m.LinearLayers) != m.NumLayers {
		return nil, fmt.Errorf("%s: layer_types do not match num_hidden_layers %d", m.ID, m.NumLayers)
	}
	moe := m.IsMoE()
	names := map[bool]string{true: "gdn", false: "attn"}
	groupLayers(g, m.NumLayers, func(i int) bool { return m.LinearLayers[i] }, func(lin bool) LayerKind {
		name := names[lin] + "_dense"
		if moe {
			name = names[lin] + "_moe"
		}
		return LayerKind{Name: name, Ops: b.qwen35LayerOps(lin)}
	})
	conv, ssm := m.LinearStateBytes(1)
	g.Notes = append(g.Notes,
		fmt.Sprintf("Gated DeltaNet layers (Qwen3NextGatedDeltaNet): %d key and %d value heads of %d×%d; each request keeps a %.0f-byte conv window and %.0f bytes of %s state matrices per layer (all ranks), "+
			"in vLLM's mamba KV cache groups, instead of a per-token KV cache", m.LinearKeyHeads, m.LinearValueHeads, m.LinearKeyHeadDim, m.LinearValueHeadDim, conv, ssm, m.SSMStateDtype),
		fmt.Sprintf("gated full attention (Qwen3NextAttention): q_proj emits a sigmoid output gate per head, per-head q/k RMSNorm, RoPE on %d of %d dims (M-RoPE rotates every section by the same position for text prompts)", m.RotaryDim, m.HeadDim))
	if moe {
		g.Notes = append(g.Notes, "Qwen3NextSparseMoeBlock: the shared expert's output is scaled by sigmoid(shared_expert_gate(x)), a 1-wide replicated GEMM")
	}
	if m.Wrapper != "" {
		g.Notes = append(g.Notes, wrapperNote(m))
	}
	if m.MTPHiddenLayers > 0 {
		g.Draft = b.qwen35MTP()
	}
	return g, nil
}

// qwen35LayerOps is one Qwen3_5DecoderLayer: GemmaRMSNorm with the fused
// residual add, the GDN or gated attention block, the second norm, then
// the MoE block or the dense MLP.
func (b *builder) qwen35LayerOps(linear bool) []Op {
	ops := []Op{elementwise("input_layernorm", b.bytes(4*b.H), ShardReplicated)}
	if linear {
		ops = append(ops, b.gdnOps()...)
	} else {
		ops = append(ops, b.gatedAttentionOps()...)
	}
	ops = append(ops, elementwise("post_attention_layernorm", b.bytes(4*b.H), ShardReplicated))
	if !b.m.IsMoE() {
		return append(ops, b.mlpOps("", b.m.IntermediateSize, false, true)...)
	}
	// Qwen3NextSparseMoeBlock: the shared expert's output times
	// sigmoid(shared_expert_gate(x)), a ReplicatedLinear of width 1.
	var out []Op
	for _, op := range b.moeOps() {
		out = append(out, op)
		if op.Name == "shared_experts.down_proj" {
			out = append(out,
				gemm("shared_expert_gate", 1, b.H, b.act, ShardReplicated),
				elementwise("shared_expert_gate.sigmoid_mul", b.bytes(2*b.H), ShardReplicated))
		}
	}
	return append(ops, out...)
}

// gdnOps mirror Qwen3NextGatedDeltaNet.forward: in_proj_qkvz and
// in_proj_ba (column-parallel over heads), the causal conv1d, the gating
// and gated delta rule, RMSNormGated with the z gate, out_proj (row-
// parallel) and its all_reduce.
func (b *builder) gdnOps() []Op {
	m := b.m
	nk, nv, kd, vd := m.LinearKeyHeads, m.LinearValueHeads, m.LinearKeyHeadDim, m.LinearValueHeadDim
	qkvz := gemm("in_proj_qkvz", 2*nk*kd+2*nv*vd, b.H, b.attnDt, ShardColumn)
	qkvz.Parts, qkvz.PartHeads = []int{nk * kd, nk * kd, nv * vd, nv * vd}, []int{nk, nk, nv, nv}
	ba := gemm("in_proj_ba", 2*nv, b.H, b.attnDt, ShardColumn)
	ba.Parts, ba.PartHeads = []int{nv, nv}, []int{nv, nv}
	conv, ssm := m.LinearStateBytes(1)
	return []Op{qkvz, ba,
		{Kind: OpGDN, Name: "conv1d", Shard: ShardSplit, GDN: &GDN{Stage: GDNConv, KeyHeads: nk, ValueHeads: nv, KeyHeadDim: kd, ValueHeadDim: vd,
			ConvKernel: m.LinearConvKernel, StateBytes: conv, StateDtype: b.act}},
		{Kind: OpGDN, Name: "gated_delta_rule", Shard: ShardSplit, GDN: &GDN{Stage: GDNRule, KeyHeads: nk, ValueHeads: nv, KeyHeadDim: kd, ValueHeadDim: vd,
			StateBytes: ssm, StateDtype: shortDtype(m.SSMStateDtype)}},
		// RMSNormGated: the core output and z read, the gated norm written.
		elementwise("norm_gated", b.bytes(3*nv*vd), ShardSplit),
		gemm("out_proj", b.H, nv*vd, b.attnDt, ShardRow),
		collective("out_proj.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)),
	}
}

// gatedAttentionOps mirror Qwen3NextAttention: qkv_proj whose q part is
// doubled for the output gate, per-head q/k RMSNorm, partial RoPE, the
// attention kernel, sigmoid(gate) × output, o_proj and its all_reduce.
func (b *builder) gatedAttentionOps() []Op {
	m := b.m
	h, kv, d := m.NumHeads, m.NumKVHeads, m.HeadDim
	qh := h
	if m.AttnOutputGate {
		qh = 2 * h
	}
	qkv := gemm("qkv_proj", (qh+2*kv)*d, b.H, b.attnDt, ShardColumn)
	qkv.Parts, qkv.PartHeads = []int{qh * d, kv * d, kv * d}, []int{h, kv, kv}
	kind := "gqa"
	if kv == h {
		kind = "mha"
	}
	ops := []Op{qkv,
		elementwise("qk_norm", b.bytes(2*(h+kv)*d), ShardSplit),
		elementwise("rotary_emb", b.bytes(2*(h+kv)*m.RotaryDim), ShardSplit),
		{Kind: OpAttention, Name: "attn", Shard: ShardSplit, Attn: &Attention{
			Kind: kind, Heads: h, KVHeads: kv, HeadDim: d, VHeadDim: d, KVCacheElems: 2 * kv * d, KVCacheShard: "heads",
		}},
	}
	if m.AttnOutputGate {
		ops = append(ops, elementwise("attn_output_gate", b.bytes(3*h*d), ShardSplit))
	}
	return append(ops, gemm("o_proj", b.H, h*d, b.attnDt, ShardRow),
		collective("o_proj.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)))
}

// qwen35MTP mirrors Qwen3_5MultiTokenPredictor (qwen3_5_mtp.py, on
// qwen3_next_mtp.py): the token embedding and the target's hidden state
// each normed (pre_fc_norm_embedding, pre_fc_norm_hidden), fc over both
// concatenated (ColumnParallelLinear, gather_output), one full-attention
// decoder layer with the MoE block, the final norm and the LM head.
// vLLM serves it with --speculative-config method "mtp".
func (b *builder) qwen35MTP() *Draft {
	m := b.m
	layer := b.qwen35LayerOps(false)
	layer[0].BytesPerToken = b.bytes(2 * b.H) // input_layernorm without a residual
	ops := append(b.embedOps(),
		elementwise("pre_fc_norm_embedding", b.bytes(2*b.H), ShardReplicated),
		elementwise("pre_fc_norm_hidden", b.bytes(2*b.H), ShardReplicated),
		gemm("fc", b.H, 2*b.H, b.attnDt, ShardColumn),
		collective("fc.all_gather", GroupTP, "all_gather", b.bytes(b.H)))
	ops = append(ops, layer...)
	ops = append(ops, b.headOps("norm", 4, "lm_head")...)
	name := "mtp"
	if m.IsMoE() {
		name = "mtp_moe"
	}
	return &Draft{Method: "mtp", Mirrors: srcQwen35MTP, Layers: []LayerKind{{
		Name: name, Count: m.MTPHiddenLayers, Ops: ops, KVCacheElems: 2 * m.NumKVHeads * m.HeadDim,
	}}}
}
