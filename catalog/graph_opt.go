package catalog

// srcOPT is the vLLM module the opt family mirrors.
const srcOPT = "vllm/model_executor/models/opt.py@3374d8fa"

// The opt family mirrors vLLM's opt.py (OPTForCausalLM): learned absolute
// positions instead of RoPE, LayerNorm (not RMSNorm, and not fused with the
// residual add: nn.LayerNorm, then a plain residual + out), multi-head
// attention with biased qkv_proj and out_proj, and a non-gated MLP (fc1,
// ReLU, fc2) with biases. The LM head is the token embedding.

// optEmbedOps: OPTDecoder.forward looks the tokens up in embed_tokens
// (VocabParallelEmbedding, all-reduced over TP), the positions in
// embed_positions (a plain nn.Embedding, replicated on every rank, read at
// position + 2) and adds the two.
func (b *builder) optEmbedOps() []Op {
	return append(b.embedOps(),
		Op{Kind: OpEmbedding, Name: "embed_positions", N: b.m.LearnedPositions, K: b.H, Dtype: b.act, Shard: ShardReplicated, BytesPerToken: b.bytes(2 * b.H)},
		elementwise("embed_add", b.bytes(3*b.H), ShardReplicated))
}

// optHeadOps: the final LayerNorm (OPTDecoder builds it only when
// do_layer_norm_before and not _remove_final_layer_norm; hidden read and
// written), then the tied LM head and the logits gather.
func (b *builder) optHeadOps() []Op {
	ops := b.headOps("final_layer_norm", 2, "lm_head")
	if !b.m.FinalLayerNorm {
		ops = ops[1:]
	}
	return ops
}

// optLayerOps mirrors OPTDecoderLayer.forward: each block is a LayerNorm
// (hidden read and written), the block, and residual + out as its own
// elementwise kernel (two tensors read, one written); with
// do_layer_norm_before false (OPT-350m) the LayerNorm follows the add
// instead of preceding the block, which moves no bytes.
func (b *builder) optLayerOps() []Op {
	m := b.m
	h, d, inter := m.NumHeads, m.HeadDim, m.IntermediateSize
	qkv := gemm("qkv_proj", 3*h*d, b.H, b.attnDt, ShardColumn)
	qkv.Parts, qkv.PartHeads, qkv.Bias = []int{h * d, h * d, h * d}, []int{h, h, h}, m.AttentionBias
	out := gemm("out_proj", b.H, h*d, b.attnDt, ShardRow)
	out.Bias = m.AttentionBias
	attn := []Op{qkv,
		{Kind: OpAttention, Name: "attn", Shard: ShardSplit, Attn: &Attention{
			Kind: "mha", Heads: h, KVHeads: h, HeadDim: d, VHeadDim: d,
			KVCacheElems: 2 * h * d, KVCacheShard: "heads",
		}},
		out, collective("out_proj.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)),
		elementwise("attn_residual_add", b.bytes(3*b.H), ShardReplicated),
	}
	// ColumnParallelLinear fc1, get_act_fn(activation_function) (ReLU: the
	// intermediate read and written), RowParallelLinear fc2.
	fc1 := gemm("fc1", inter, b.H, b.denseDt, ShardColumn)
	fc1.Bias = m.MLPBias
	fc2 := gemm("fc2", b.H, inter, b.denseDt, ShardRow)
	fc2.Bias = m.MLPBias
	mlp := []Op{fc1, elementwise("relu", b.bytes(2*inter), ShardSplit), fc2,
		collective("fc2.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)),
		elementwise("mlp_residual_add", b.bytes(3*b.H), ShardReplicated),
	}
	attnNorm := elementwise("self_attn_layer_norm", b.bytes(2*b.H), ShardReplicated)
	mlpNorm := elementwise("final_layer_norm", b.bytes(2*b.H), ShardReplicated)
	var ops []Op
	if m.PreLayerNorm {
		ops = append(append(append(append(ops, attnNorm), attn...), mlpNorm), mlp...)
	} else {
		ops = append(append(append(append(ops, attn...), attnNorm), mlp...), mlpNorm)
	}
	return ops
}
