package catalog

import (
	"fmt"
	"sort"
)

// Speculative-decoding drafts the catalog derives rather than stores: the
// EAGLE heads vLLM runs beside a target (vllm/model_executor/models/
// llama_eagle.py @00da9231 and llama_eagle3.py @00bd1493, proposer
// vllm/v1/spec_decode/eagle.py @008603a3). A head is one Llama decoder
// layer sized like the target, so its graph follows from the target's.

// srcLlamaEagle and srcLlamaEagle3 are the vLLM modules the derived heads mirror.
const (
	srcLlamaEagle  = "vllm/model_executor/models/llama_eagle.py@00da9231"
	srcLlamaEagle3 = "vllm/model_executor/models/llama_eagle3.py@00bd1493"
)

// EagleThreeDraftVocab is the draft_vocab_size of the published EAGLE-3
// heads for the catalog's targets: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B and
// RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3 (config.json:
// LlamaForCausalLMEagle3, 1 layer, hidden 4096, intermediate 14336, 32/8
// heads, vocab_size 128256, draft_vocab_size 32000), and SpecForge's heads
// for Qwen3, gpt-oss, DeepSeek-V3 and Kimi-K2, all 32000.
const EagleThreeDraftVocab = 32000

// DeriveEagleDraft builds the draft of an EAGLE ("eagle") or EAGLE-3
// ("eagle3") head for target g: one decoder layer with the target's hidden
// size and attention shape (full attention: the head has no sliding
// window), a dense gated MLP, and the head's LM head over draftVocab rows
// (0: the target's vocabulary, as an EAGLE-1 head shares the target's LM
// head and an EAGLE-3 config without draft_vocab_size defaults to it).
//
//   - eagle3: the layer's qkv_proj reads 2 × hidden (the normed token
//     embedding concatenated with the normed hidden state); Combine is the
//     fc GEMM 3·hidden → hidden that fuses three of the target's hidden
//     states, run once per step over every token before the first pass
//     (EagleProposer.propose: combine_hidden_states); the head's own final
//     norm, then lm_head over draftVocab and the draft-to-target vocabulary
//     scatter (compute_logits writes fp32 logits of the full vocabulary).
//   - eagle: fc 2·hidden → hidden over the embedding and the hidden state
//     inside every pass, the layer without its input norm, and the target's
//     LM head.
//
// The MLP is the target's dense intermediate size; a target without dense
// layers (gpt-oss, Qwen3-MoE) gets a dense MLP as wide as the experts one
// token runs (top_k × moe_intermediate plus shared experts), an assumption:
// published heads for MoE targets vary (SpecForge's gpt-oss-120B head is
// 6 × hidden wide, its Kimi-K2 head the target's dense width). MLA targets
// are refused: their EAGLE heads are DeepSeek layers (deepseek_eagle.py),
// and their checkpoints ship MTP modules instead (method mtp).
func DeriveEagleDraft(g *Graph, method string, draftVocab int) (*Draft, error) {
	if g == nil {
		return nil, fmt.Errorf("no target graph to derive an EAGLE head from")
	}
	if method != "eagle" && method != "eagle3" {
		return nil, fmt.Errorf("%s: EAGLE head method %q: allowed eagle, eagle3", g.Model, method)
	}
	if draftVocab < 0 {
		return nil, fmt.Errorf("%s: draft vocabulary %d must be ≥ 0 (0: the target's)", g.Model, draftVocab)
	}
	var attn *Attention
	inter := 0
	for i := range g.Layers {
		k := &g.Layers[i]
		if a := k.Attention(); a != nil && attn == nil {
			attn = a
		}
		if op := k.Op("gate_up_proj"); op != nil && inter == 0 {
			inter = op.N / 2
		}
	}
	if attn == nil {
		return nil, fmt.Errorf("%s: the operator graph has no attention layer to size an EAGLE head on", g.Model)
	}
	if attn.Kind == "mla" || attn.Kind == "dsa" {
		return nil, fmt.Errorf("%s: no EAGLE head is derived for a %s target; use method mtp (models with MTP layers: %v)",
			g.Model, attn.Kind, MTPModels())
	}
	if inter == 0 {
		for i := range g.Layers {
			if m := g.Layers[i].MoE(); m != nil {
				inter = m.TopK*m.Inter + m.SharedExperts*m.SharedInter
				break
			}
		}
	}
	if inter == 0 {
		return nil, fmt.Errorf("%s: the operator graph has no MLP to size an EAGLE head on", g.Model)
	}
	b := 2.0
	switch g.Dtype {
	case "fp32":
		b = 4
	}
	act := g.Dtype
	H, h, kv, d := g.Hidden, attn.Heads, attn.KVHeads, attn.HeadDim
	by := func(elems int) float64 { return float64(elems) * b }

	vocab := g.Vocab
	headVocab := vocab
	if draftVocab > 0 {
		headVocab = ceilDiv(draftVocab, vocabPaddingSize) * vocabPaddingSize
	}
	qkvIn := H
	if method == "eagle3" {
		qkvIn = 2 * H
	}
	ops := []Op{
		{Kind: OpEmbedding, Name: "embed_tokens", N: vocab, K: H, Dtype: act, Shard: ShardColumn, BytesPerToken: by(2 * H)},
		collective("embed_tokens.all_reduce", GroupTP, "all_reduce", by(H)),
	}
	if method == "eagle3" {
		ops = append(ops,
			elementwise("input_layernorm", by(2*H), ShardReplicated),
			elementwise("hidden_norm", by(2*H), ShardReplicated))
	} else {
		ops = append(ops, gemm("fc", H, 2*H, act, ShardReplicated))
	}
	qkv := gemm("qkv_proj", (h+2*kv)*d, qkvIn, act, ShardColumn)
	qkv.Parts, qkv.PartHeads = []int{h * d, kv * d, kv * d}, []int{h, kv, kv}
	kind := "gqa"
	if kv == h {
		kind = "mha"
	}
	gu := gemm("gate_up_proj", 2*inter, H, act, ShardColumn)
	gu.Parts = []int{inter, inter}
	ops = append(ops, qkv,
		elementwise("rotary_emb", by(2*(h+kv)*d), ShardSplit),
		Op{Kind: OpAttention, Name: "attn", Shard: ShardSplit, Attn: &Attention{
			Kind: kind, Heads: h, KVHeads: kv, HeadDim: d, VHeadDim: d,
			KVCacheElems: 2 * kv * d, KVCacheShard: "heads",
		}},
		gemm("o_proj", H, h*d, act, ShardRow),
		collective("o_proj.all_reduce", GroupTP, "all_reduce", by(H)),
		elementwise("post_attention_layernorm", by(4*H), ShardReplicated),
		gu,
		elementwise("silu_and_mul", by(3*inter), ShardSplit),
		gemm("down_proj", H, inter, act, ShardRow),
		collective("down_proj.all_reduce", GroupTP, "all_reduce", by(H)))
	if method == "eagle3" {
		ops = append(ops, elementwise("norm", by(4*H), ShardReplicated))
	} else {
		ops = append(ops, elementwise("residual_add", by(3*H), ShardReplicated))
	}
	ops = append(ops,
		Op{Kind: OpGEMM, Name: "lm_head", Rows: RowsSampled, N: headVocab, K: H, Dtype: act, Shard: ShardColumn},
		Op{Kind: OpCollective, Name: "logits.all_gather", Rows: RowsSampled, Group: GroupTP, Collective: "all_gather", BytesPerToken: by(headVocab)})
	dr := &Draft{Method: method, Mirrors: srcLlamaEagle, Layers: []LayerKind{{
		Name: method, Count: 1, KVCacheElems: 2 * kv * d, Ops: ops,
	}}}
	if method == "eagle3" {
		dr.Mirrors = srcLlamaEagle3
		dr.Combine = []Op{gemm("fc", H, 3*H, act, ShardReplicated)}
		if headVocab != vocab {
			// compute_logits: fp32 logits of the full vocabulary filled
			// with -inf, the draft's logits scattered into them.
			dr.Layers[0].Ops = append(dr.Layers[0].Ops, Op{Kind: OpElementwise, Name: "draft_id_to_target_id",
				Rows: RowsSampled, BytesPerToken: float64(4 * (vocab + 2*headVocab)), Shard: ShardReplicated})
		}
	}
	return dr, nil
}

// NumLayers is the number of draft modules the checkpoint holds, all
// loaded (vLLM's num_nextn_predict_layers for MTP).
func (d *Draft) NumLayers() int {
	n := 0
	for _, k := range d.Layers {
		n += k.Count
	}
	return n
}

// MTPModels lists the catalog models whose operator graph carries MTP draft
// layers (--speculative-config method mtp), sorted.
func MTPModels() []string {
	var out []string
	for _, m := range Models() {
		g, err := LookupGraph(m.ID)
		if err == nil && g.Draft != nil && g.Draft.Method == "mtp" {
			out = append(out, m.ID)
		}
	}
	sort.Strings(out)
	return out
}
