package catalog

import (
	"fmt"
	"slices"
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
	b := g.actBytes()
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

// actBytes is the size of one activation element in the graph's dtype,
// the unit the drafts derived from it count bytes in.
func (g *Graph) actBytes() float64 {
	if g.Dtype == "fp32" {
		return 4
	}
	return 2
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

// DSpark (vLLM's method "dspark", PR #46995): a semi-autoregressive block
// drafter. The proposer (vllm/v1/worker/gpu/spec_decode/dspark/
// speculator.py@02957b5a, DSparkSpeculator on DFlashSpeculator) first
// projects the target's fused hidden states of every scheduled token into
// the draft's context KV, then runs ONE parallel forward of its stage stack
// over a block of num_speculative_tokens query positions per request (the
// anchor — the verified token — and k − 1 noise tokens; with
// sample_from_anchor, vLLM's default, every position predicts the next
// token), the LM head over every block position, and a sequential Markov
// loop: k steps, each adding a rank-r bias W₂(W₁[previous token]) to one
// position's logits and sampling it. The whole step is one FULL CUDA graph.

// srcDSpark is the vLLM module the derived DSpark stack mirrors.
const srcDSpark = "vllm/v1/worker/gpu/spec_decode/dspark/speculator.py@02957b5a"

// DSparkStages is the stage count of a DeepSeek DSpark stack: the DSpark
// checkpoints of DeepSeek-V4.1 ship three MTP-style stages under mtp.*
// (num_nextn_predict_layers 3; vllm/config/speculative.py@002e77c1
// hf_config_override: "n_predict to the number of MTP stages (3)"). The
// catalog's configs carry no dspark_* keys, so it is a constant.
const DSparkStages = 3

// DSparkMarkovRank is dspark_markov_rank of the published DeepSeek DSpark
// configs (256): the width of the Markov head's token embedding W₁ and of
// its projection W₂ onto the vocabulary.
const DSparkMarkovRank = 256

// DSparkTargetLayers is len(dspark_target_layer_ids) of the DeepSeek
// DSpark configs ([40, 41, 42] for V4-Flash): the target hidden states
// main_proj fuses into the draft's context.
const DSparkTargetLayers = 3

// DSparkDraft is a DSpark stack derived from a target's MTP layer.
type DSparkDraft struct {
	// Mirrors is the vLLM module the stack mirrors (srcDSpark).
	Mirrors string
	// Embed embeds the block's query tokens (anchor and noise tokens).
	Embed []Op
	// Stage is one stage (the MTP layer's decoder layer); Stage.Count is
	// DSparkStages.
	Stage LayerKind
	// Head is the final norm, the LM head and its logits gather, over
	// every block position (RowsSampled: one row per query position).
	Head []Op
	// Context runs once per step over every scheduled token: main_proj
	// (DSparkTargetLayers × hidden → hidden) and each stage's K/V
	// projection and cache write of the context (DFlash's
	// precompute_and_store_context_kv).
	Context []Op
	// Markov is one step of the Markov loop over one row per request,
	// run num_speculative_tokens times: the rank-r embedding gather, the
	// r → vocabulary GEMM (vocabulary-parallel, gathered like the LM
	// head's logits) and the bias add and sample over the vocabulary.
	Markov []Op
}

// DeriveDSparkDraft builds the DSpark stack for target g from its MTP
// layer (g.Draft, method mtp): the layer's embedding, its decoder layer
// repeated DSparkStages times as the stages, its head. The MTP layer's
// own eh_proj/enorm/hnorm are not part of a DSpark stage (its input is
// main_proj's fused context, priced in Context). A model without MTP
// layers has no DSpark shape to derive: the error names those that have.
func DeriveDSparkDraft(g *Graph) (*DSparkDraft, error) {
	if g == nil {
		return nil, fmt.Errorf("no target graph to derive a DSpark stack from")
	}
	if g.Draft == nil || g.Draft.Method != "mtp" || len(g.Draft.Layers) == 0 {
		return nil, fmt.Errorf("%s has no MTP layers to size a DSpark stack on; models that have: %v", g.Model, MTPModels())
	}
	mtp := &g.Draft.Layers[0]
	ops := mtp.Ops
	idx := func(name string) int {
		for i := range ops {
			if ops[i].Name == name {
				return i
			}
		}
		return -1
	}
	// The decoder layer sits between the fusion of the embedding with the
	// target's hidden state (DeepSeek-V3's eh_proj; DeepSeek-V4's e_proj
	// and h_proj, added in eh_add) and the head: after DeepSeek-V3's
	// residual_add, or from DeepSeek-V4's last mHC post (its streams'
	// reduction belongs to the head).
	eh, res, head := idx("eh_proj"), idx("residual_add"), 1
	if eh < 0 && res < 0 {
		eh, res, head = idx("eh_add"), idx("hc_post"), 0
	}
	if eh < 0 || res < 0 || res < eh {
		return nil, fmt.Errorf("%s: MTP layer %q lacks eh_proj/residual_add (or eh_add/hc_post) to split its decoder layer from", g.Model, mtp.Name)
	}
	dr := &DSparkDraft{
		Mirrors: srcDSpark,
		Stage: LayerKind{Name: "dspark_stage", Count: DSparkStages, KVCacheElems: mtp.KVCacheElems,
			Ops: slices.Clone(ops[eh+1 : res])},
		Head: slices.Clone(ops[res+head:]),
	}
	for _, op := range ops[:eh] {
		if op.Kind == OpEmbedding || (op.Kind == OpCollective && op.Name == "embed_tokens.all_reduce") {
			dr.Embed = append(dr.Embed, op)
		}
	}
	if len(dr.Embed) == 0 || len(dr.Head) == 0 {
		return nil, fmt.Errorf("%s: MTP layer %q has no embedding or LM head", g.Model, mtp.Name)
	}
	b := g.actBytes()
	H, V := g.Hidden, g.Vocab
	act := g.Dtype
	// The context: main_proj and main_norm, then each stage's K/V
	// projection of the fused context and its cache write.
	dr.Context = []Op{
		gemm("main_proj", H, DSparkTargetLayers*H, act, ShardReplicated),
		elementwise("main_norm", float64(2*H)*b, ShardReplicated),
	}
	kvN, kvShard := 0, ShardReplicated
	var kvDtype string
	if op := dr.Stage.Op("fused_qkv_a_proj"); op != nil && len(op.Parts) == 2 {
		kvN, kvDtype = op.Parts[1], op.Dtype // MLA: the kv_lora + rope part
	} else if op := dr.Stage.Op("fused_wqa_wkv"); op != nil && len(op.Parts) == 2 {
		kvN, kvDtype = op.Parts[1], op.Dtype // DeepSeek-V4: the single KV head
	} else if op := dr.Stage.Op("kv_a_proj_with_mqa"); op != nil {
		kvN, kvDtype = op.N, op.Dtype
	} else if op := dr.Stage.Op("qkv_proj"); op != nil && len(op.Parts) == 3 {
		kvN, kvDtype, kvShard = op.Parts[1]+op.Parts[2], op.Dtype, op.Shard
	}
	if kvN == 0 {
		return nil, fmt.Errorf("%s: MTP layer %q has no K/V projection to price DSpark's context on", g.Model, mtp.Name)
	}
	ctxKV := gemm("context_kv_proj", kvN, H, kvDtype, kvShard)
	ctxWrite := elementwise("context_kv_write", float64(mtp.KVCacheElems)*b, ShardReplicated)
	if a := dr.Stage.Attention(); a != nil && a.KVCacheShard == "heads" {
		ctxWrite.Shard = ShardSplit
	} else if a != nil && a.EntryBytes > 0 {
		// DeepSeek-V4: each context token's entry is stored in the
		// fp8_ds_mla layout (EntryBytes), which KVCacheElems does not count.
		ctxWrite.BytesPerToken = float64(a.EntryBytes)
	}
	for range DSparkStages {
		dr.Context = append(dr.Context, ctxKV, ctxWrite)
	}
	// One Markov step: gather W₁ rows, W₂ over the vocabulary shards
	// (fp32 logits), their gather, and the bias add + sample reading the
	// base logits and writing the step's.
	r := DSparkMarkovRank
	dr.Markov = []Op{
		{Kind: OpElementwise, Name: "markov_embed", Rows: RowsSampled, BytesPerToken: float64(2*r) * b, Shard: ShardReplicated},
		{Kind: OpGEMM, Name: "markov_bias", Rows: RowsSampled, N: V, K: r, Dtype: act, Shard: ShardColumn},
		{Kind: OpCollective, Name: "markov_bias.all_gather", Rows: RowsSampled, Group: GroupTP, Collective: "all_gather", BytesPerToken: float64(4 * V)},
		{Kind: OpElementwise, Name: "markov_add_sample", Rows: RowsSampled, BytesPerToken: float64(3 * 4 * V), Shard: ShardReplicated},
	}
	return dr, nil
}
