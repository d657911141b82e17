package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// The operator graph of a model: for each distinct kind of decoder layer,
// the GPU work vLLM launches for one token, in order — GEMMs with their
// unsharded shapes and how tensor parallelism splits them, attention,
// fused MoE, elementwise kernels and the collectives each parallel group
// adds — plus the stack (which kind sits at which depth), the embedding,
// the LM head and the speculative-decoding draft layers the checkpoint
// ships. A step pricer walks it in O(distinct ops): every op of a kind
// costs the same in every layer of that kind.
//
// Graphs are derived from the catalog's config.json (DeriveGraph) and
// stored beside it as graph.json, so that a change in the deriver shows up
// as a reviewable diff; a test fails when a stored graph differs from a
// fresh derivation (`go run ./cmd/blis catalog derive --write` rewrites them).

// GraphVersion is the schema version written into every graph.json.
const GraphVersion = 1

// Op kinds.
const (
	OpGEMM        = "gemm"        // a linear layer: [tokens, K] × [K, N] (Batch of them for a per-head bmm)
	OpAttention   = "attention"   // the attention kernel: scores, softmax and V over the KV cache, cache write included
	OpMoE         = "moe"         // vLLM's FusedMoE: top-k routing, grouped w13 GEMM, activation, grouped w2 GEMM, weighted sum
	OpElementwise = "elementwise" // a memory-bound kernel (norm, RoPE, activation); BytesPerToken is read + written
	OpEmbedding   = "embedding"   // the token-embedding gather (VocabParallelEmbedding), not a GEMM
	OpCollective  = "collective"  // a communication step over Group; BytesPerToken is the message size
)

// How an op is split over the tensor-parallel ranks.
const (
	// ShardColumn: N is split (ColumnParallelLinear, MergedColumnParallelLinear,
	// QKVParallelLinear, ParallelLMHead, VocabParallelEmbedding). With
	// PartHeads, a part with fewer heads than ranks gives each rank one
	// whole head (vLLM replicates KV heads when TP exceeds them).
	ShardColumn = "column"
	// ShardRow: K is split and each rank holds a partial sum
	// (RowParallelLinear); an all_reduce over "tp" follows.
	ShardRow = "row"
	// ShardReplicated: every rank does all of it (ReplicatedLinear, norms
	// over the hidden state).
	ShardReplicated = "replicated"
	// ShardSplit: the work divides evenly over the ranks (attention and
	// per-head kernels split with the heads, activations with the
	// intermediate columns, per-head bmm with Batch).
	ShardSplit = "split"
	// ShardExperts: FusedMoE. Without expert parallelism every expert is
	// split along its intermediate size over TP × DP ranks (vLLM flattens
	// TP across DP for MoE layers); with --enable-expert-parallel whole
	// experts are spread over the EP group of TP × DP ranks.
	ShardExperts = "experts"
)

// Parallel groups a collective runs over; the pricer multiplies by the
// group's actual size and skips groups of one rank.
const (
	// GroupTP is the tensor-parallel group (--tensor-parallel-size).
	GroupTP = "tp"
	// GroupDP is the data-parallel group (--data-parallel-size). Dense
	// models emit nothing over it (plain DP has no per-layer collective).
	// MoE layers with DP > 1 gather every DP rank's tokens before the
	// experts and scatter the results back after them: vLLM's default
	// --all2all-backend allgather_reducescatter (AgRsAll2AllManager in
	// vllm/distributed/device_communicators/all2all.py: dispatch =
	// all_gatherv, combine = reduce_scatterv over the DP group).
	GroupDP = "dp"
)

// Which rows (tokens) of a step an op processes.
const (
	// RowsSampled: one row per sequence that samples this step (vLLM
	// computes logits only at logits_indices), not every scheduled token.
	RowsSampled = "sampled"
)

// Which tokens an op runs for, when the prefill and decode paths differ
// (MLA). Empty means every token.
const (
	PhasePrefill = "prefill" // tokens of prefill chunks (and, for MLA's kv_b_proj, their cached context)
	PhaseDecode  = "decode"  // decode tokens
)

// Graph is one model's operator graph.
type Graph struct {
	Version      int    `json:"version"`
	Model        string `json:"model"`        // Hugging Face id
	Architecture string `json:"architecture"` // config.json architectures[0]
	Family       string `json:"family"`       // the vLLM model module mirrored, e.g. "deepseek_v2"
	Mirrors      string `json:"mirrors"`      // vLLM file and commit read, e.g. "vllm/model_executor/models/llama.py@0035bdf2"
	Dtype        string `json:"dtype"`        // activation dtype: "bf16" or "fp16"
	Hidden       int    `json:"hidden"`
	// Vocab is the embedding and LM-head row count padded to a multiple of
	// 64, as vLLM's ParallelLMHead pads it (DEFAULT_VOCAB_PADDING_SIZE).
	Vocab          int  `json:"vocab"`
	TiedEmbeddings bool `json:"tied_embeddings,omitempty"`

	Embed  []Op        `json:"embed"`  // before the first layer
	Layers []LayerKind `json:"layers"` // distinct layer kinds, in stack order of first appearance
	Stack  []StackRun  `json:"stack"`  // the decoder stack, bottom to top, in runs of kinds
	Head   []Op        `json:"head"`   // after the last layer: final norm, LM head, logits gather
	Draft  *Draft      `json:"draft,omitempty"`
	Notes  []string    `json:"notes,omitempty"`
}

// LayerKind is one kind of decoder layer and how many layers are of it.
type LayerKind struct {
	Name  string `json:"name"` // "dense", "moe", "moe_sliding", "mtp", ...
	Count int    `json:"count"`
	// KVCacheElems is the KV-cache elements one token adds to one layer of
	// this kind, all ranks together (0 when the layer has no attention).
	KVCacheElems int  `json:"kv_cache_elems"`
	Ops          []Op `json:"ops"`
}

// StackRun is Repeat consecutive copies of the layer kinds in Kinds:
// DeepSeek-V3 is [dense]×3 then [moe]×58, gpt-oss [moe_sliding, moe]×18.
type StackRun struct {
	Kinds  []string `json:"kinds"`
	Repeat int      `json:"repeat"`
}

// Draft is the speculative-decoding draft a checkpoint ships.
type Draft struct {
	// Method is the --speculative-config method that runs it ("mtp").
	Method  string `json:"method"`
	Mirrors string `json:"mirrors"`
	// Layers are the draft modules. vLLM runs one per speculative token,
	// reusing them round-robin when num_speculative_tokens exceeds Count
	// (spec_step_idx % num_mtp_layers). Each module's ops include its own
	// embedding, LM head and logits gather.
	Layers []LayerKind `json:"layers"`
	// Combine are ops the proposer runs once per step over every scheduled
	// token before the first pass (EAGLE-3's fc fusing three target hidden
	// states). Only derived drafts (DeriveEagleDraft) have them; stored
	// graphs do not carry the field.
	Combine []Op `json:"combine,omitempty"`
}

// Op is one GPU operation of a layer. Shapes are the whole model's
// (unsharded); Shard and Group say how parallelism divides them.
type Op struct {
	Kind  string `json:"kind"` // OpGEMM, OpAttention, ...
	Name  string `json:"name"` // vLLM's module name: "qkv_proj", "o_proj", "gate_up_proj", "experts", "o_proj.all_reduce", ...
	Rows  string `json:"rows,omitempty"`
	Phase string `json:"phase,omitempty"`

	// GEMM and embedding: output width N, input width K, and for a
	// batched per-head GEMM the batch (heads). Parts are the widths of the
	// projections fused into N (q, k, v; gate, up), PartHeads the heads
	// in each part. Dtype is the weight dtype ("bf16", "fp16", "fp8",
	// "mxfp4", "nvfp4", "int4", "fp32"); FP8 and FP4 GEMMs also quantize
	// their input, which is counted as part of the GEMM.
	N         int    `json:"n,omitempty"`
	K         int    `json:"k,omitempty"`
	Batch     int    `json:"batch,omitempty"`
	Parts     []int  `json:"parts,omitempty"`
	PartHeads []int  `json:"part_heads,omitempty"`
	Bias      bool   `json:"bias,omitempty"`
	Dtype     string `json:"dtype,omitempty"`
	Shard     string `json:"shard,omitempty"`

	Attn *Attention `json:"attention,omitempty"`
	MoE  *MoE       `json:"moe,omitempty"`
	GDN  *GDN       `json:"gdn,omitempty"` // OpGDN (graph_qwen35.go)

	// BytesPerToken: for elementwise and embedding ops the bytes read plus
	// written per token, whole model, in the activation dtype; for a
	// collective the size of the whole tensor per token (the reduced
	// tensor of an all_reduce, the gathered result of an all_gather, the
	// input of a reduce_scatter).
	BytesPerToken float64 `json:"bytes_per_token,omitempty"`
	Group         string  `json:"group,omitempty"`      // collective: GroupTP or GroupDP
	Collective    string  `json:"collective,omitempty"` // "all_reduce", "all_gather", "reduce_scatter"
}

// Attention describes one attention kernel.
type Attention struct {
	// Kind is "mha" (as many KV heads as query heads), "gqa" (fewer),
	// "mla" (multi-head latent attention, DeepSeek) or "dsa" (MLA whose
	// queries attend only to the IndexTopK cached tokens a lightning
	// indexer picks: DeepSeek sparse attention, DeepSeek-V3.2 and GLM-5).
	Kind    string `json:"kind"`
	Heads   int    `json:"heads"`
	KVHeads int    `json:"kv_heads"` // 1 for MLA: one latent vector per token
	// HeadDim is the query/key head size, VHeadDim the value head size.
	// For MLA these are the prefill (MHA) view, qk_nope+qk_rope and
	// v_head_dim; decode tokens attend as MQA over the latent:
	// q·k over KVLoraRank+QKRopeHeadDim, values of KVLoraRank.
	HeadDim  int `json:"head_dim"`
	VHeadDim int `json:"v_head_dim"`
	// Window is the sliding window in tokens (0: the full context).
	Window int `json:"window,omitempty"`
	// Chunked: the window is a chunk of chunked local attention (Llama 4),
	// priced and cached as a sliding window of the chunk's size.
	Chunked bool `json:"chunked,omitempty"`
	// Sinks: one learned logit per head joins the softmax (gpt-oss).
	Sinks bool `json:"sinks,omitempty"`

	KVLoraRank    int `json:"kv_lora_rank,omitempty"`
	QLoraRank     int `json:"q_lora_rank,omitempty"`
	QKNopeHeadDim int `json:"qk_nope_head_dim,omitempty"`
	QKRopeHeadDim int `json:"qk_rope_head_dim,omitempty"`

	// DSA's indexer: its heads and head size, and how many cached tokens
	// each query keeps (index_topk). IndexerCacheBytes is what one token
	// adds to the layer's indexer key cache on every rank, whatever the KV
	// cache dtype: fp8 keys plus one fp32 scale per 128 values
	// (DeepseekV32IndexerCache, uint8, head_dim + head_dim/128·4).
	IndexTopK         int `json:"index_topk,omitempty"`
	IndexHeads        int `json:"index_heads,omitempty"`
	IndexHeadDim      int `json:"index_head_dim,omitempty"`
	IndexerCacheBytes int `json:"indexer_cache_bytes,omitempty"`

	// KVCacheElems is what one token adds to this layer's KV cache, all
	// ranks together: 2 × KV heads × head_dim, or kv_lora_rank +
	// qk_rope_head_dim for MLA. KVCacheShard says how TP divides it:
	// "heads" (each rank holds max(1, KV heads / TP) heads) or
	// "replicated" (MLA: every rank holds the whole latent).
	KVCacheElems int    `json:"kv_cache_elems"`
	KVCacheShard string `json:"kv_cache_shard"`

	// DeepSeek-V4 attention (kinds "dsv4_swa", "dsv4_csa", "dsv4_hca"; see
	// graph_dsv4.go): CompressRatio tokens pool into one compressed entry
	// (0 for the sliding-window-only kind), and every layer also keeps the
	// last Window raw tokens. EntryBytes is one cached entry, raw or
	// compressed, on every rank (the fp8_ds_mla layout); CSA layers add
	// IndexerCacheBytes per compressed entry. Each compressor keeps, per
	// request, a window of StateTokens tokens of StateBytes each (fp32 kv
	// and score state), and CSA's indexer compressor IndexerStateTokens of
	// IndexerStateBytes.
	CompressRatio      int `json:"compress_ratio,omitempty"`
	EntryBytes         int `json:"entry_bytes,omitempty"`
	StateTokens        int `json:"state_tokens,omitempty"`
	StateBytes         int `json:"state_bytes,omitempty"`
	IndexerStateTokens int `json:"indexer_state_tokens,omitempty"`
	IndexerStateBytes  int `json:"indexer_state_bytes,omitempty"`
}

// MoE describes one FusedMoE layer's routed experts. Shared experts and
// the router are separate GEMM ops of the layer.
type MoE struct {
	Experts int `json:"experts"`
	TopK    int `json:"top_k"`
	// Hidden and Inter are one expert's sizes: w13 (gate and up, fused) is
	// a [Hidden → 2·Inter] GEMM, w2 (down) [Inter → Hidden].
	Hidden     int    `json:"hidden"`
	Inter      int    `json:"inter"`
	Dtype      string `json:"dtype"`
	Activation string `json:"activation"` // "silu" (SiluAndMul) or "swigluoai" (gpt-oss, clamped)
	Bias       bool   `json:"bias,omitempty"`
	// Routing: "softmax" or "sigmoid" scores; grouped top-k (DeepSeek
	// n_group/topk_group, 0 when plain); an e_score_correction_bias.
	Scoring        string `json:"scoring"`
	Groups         int    `json:"groups,omitempty"`
	TopKGroups     int    `json:"topk_groups,omitempty"`
	CorrectionBias bool   `json:"correction_bias,omitempty"`
	// SharedExperts of SharedInter intermediate size each run beside the
	// routed ones (as the layer's shared_experts.* GEMMs).
	SharedExperts int `json:"shared_experts,omitempty"`
	SharedInter   int `json:"shared_inter,omitempty"`
	// Hash: experts are picked by a fixed token-id table (DeepSeek-V4's
	// first num_hash_layers layers), not by the router's top-k.
	Hash bool `json:"hash,omitempty"`
	// ActivationLimit clamps the SwiGLU inputs (DeepSeek-V4's swiglu_limit).
	ActivationLimit float64 `json:"activation_limit,omitempty"`
}

// NumLayers is the decoder stack's depth.
func (g *Graph) NumLayers() int {
	n := 0
	for _, k := range g.Layers {
		n += k.Count
	}
	return n
}

// LayerKinds is the kind of every decoder layer, bottom to top: the stack's
// runs unrolled.
func (g *Graph) LayerKinds() []string {
	var out []string
	for _, run := range g.Stack {
		for r := 0; r < run.Repeat; r++ {
			out = append(out, run.Kinds...)
		}
	}
	return out
}

// Kind returns the layer kind named name, or nil.
func (g *Graph) Kind(name string) *LayerKind {
	for i := range g.Layers {
		if g.Layers[i].Name == name {
			return &g.Layers[i]
		}
	}
	return nil
}

// LMHead returns the LM-head GEMM.
func (g *Graph) LMHead() *Op { return findOp(g.Head, "lm_head") }

// Op returns the kind's first op named name, or nil.
func (k *LayerKind) Op(name string) *Op { return findOp(k.Ops, name) }

// Attention returns the kind's attention, or nil.
func (k *LayerKind) Attention() *Attention {
	for i := range k.Ops {
		if k.Ops[i].Attn != nil {
			return k.Ops[i].Attn
		}
	}
	return nil
}

// mlaModuleOps are the operators vLLM runs inside DeepseekV2MLAAttention
// (vllm/model_executor/layers/mla.py) around the attention kernel: the
// down- and up-projections, the latent norms, RoPE, the decode absorption
// GEMMs, o_proj and, with DSA, the indexer (mlaOps names them). Its o_proj
// all-reduce follows the module and is not among them.
var mlaModuleOps = map[string]bool{
	"fused_qkv_a_proj": true, "q_proj": true, "kv_a_proj_with_mqa": true,
	"q_a_layernorm": true, "q_b_proj": true, "kv_a_layernorm": true, "rotary_emb": true,
	"kv_b_proj": true, "q_nope_absorb": true, "v_up_proj": true, "o_proj": true,
	"indexer.wq_b": true, "indexer.wk": true, "indexer.k_norm": true, "indexer.weights_proj": true, "indexer.rotary_emb": true,
}

// attnModuleOps names, for each attention kind priced as a whole module,
// the operators that module runs beside the attention kernel: MLA and DSA
// (mlaModuleOps) and DeepSeek-V4's three kinds (dsv4ModuleOps).
var attnModuleOps = map[string]map[string]bool{
	"mla": mlaModuleOps, "dsa": mlaModuleOps,
	AttnDSV4SWA: dsv4ModuleOps, AttnDSV4CSA: dsv4ModuleOps, AttnDSV4HCA: dsv4ModuleOps,
}

// InAttentionModule reports whether op runs inside the kind's attention
// module beside the attention kernel, so that a price measured on the
// whole module (the MLA and DeepSeek-V4 module tables) already covers it.
// Only those layers have such a module; in other layers every operator
// stands alone.
func (k *LayerKind) InAttentionModule(op *Op) bool {
	a := k.Attention()
	if a == nil || op.Attn != nil {
		return false
	}
	return (op.Kind == OpGEMM || op.Kind == OpElementwise) && attnModuleOps[a.Kind][op.Name]
}

// MoE returns the kind's routed experts, or nil for a dense layer.
func (k *LayerKind) MoE() *MoE {
	for i := range k.Ops {
		if k.Ops[i].MoE != nil {
			return k.Ops[i].MoE
		}
	}
	return nil
}

func findOp(ops []Op, name string) *Op {
	for i := range ops {
		if ops[i].Name == name {
			return &ops[i]
		}
	}
	return nil
}

// KVCacheElemsPerToken is the KV-cache elements one token adds on one of
// tp tensor-parallel ranks, over the whole stack (sliding-window layers
// counted like full ones; draft layers not included). Multiply by the KV
// cache dtype's size for bytes.
func (g *Graph) KVCacheElemsPerToken(tp int) int {
	n := 0
	for i := range g.Layers {
		if a := g.Layers[i].Attention(); a != nil {
			n += g.Layers[i].Count * a.KVCacheElemsPerRank(tp)
		}
	}
	return n
}

// KVCacheElemsPerRank is what one token adds to this layer's cache on one
// of tp ranks.
func (a *Attention) KVCacheElemsPerRank(tp int) int {
	if a.KVCacheShard != "heads" || tp <= 1 || a.KVHeads < 1 {
		return a.KVCacheElems
	}
	per := a.KVCacheElems / a.KVHeads
	return per * max(1, a.KVHeads/tp)
}

// RankShape is a GEMM's shape on one of tp tensor-parallel ranks: the
// batch (1 for a plain GEMM), N and K.
func (o *Op) RankShape(tp int) (batch, n, k int) {
	batch, n, k = max(1, o.Batch), o.N, o.K
	if tp <= 1 {
		return
	}
	switch o.Shard {
	case ShardColumn:
		if len(o.PartHeads) == len(o.Parts) && len(o.Parts) > 0 {
			n = 0
			for i, p := range o.Parts {
				h := max(1, o.PartHeads[i])
				n += p / h * max(1, h/tp)
			}
			return
		}
		n = ceilDiv(o.N, tp)
	case ShardRow:
		k = ceilDiv(o.K, tp)
	case ShardSplit:
		batch = ceilDiv(batch, tp)
	}
	return
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Summary is a one-line description of the stack, e.g. "61 layers: 3 dense
// + 58 moe, MLA, MTP×1".
func (g *Graph) Summary() string {
	parts := make([]string, len(g.Layers))
	attn := []string{}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			attn = append(attn, s)
		}
	}
	for i, k := range g.Layers {
		parts[i] = fmt.Sprintf("%d %s", k.Count, k.Name)
		if a := k.Attention(); a != nil {
			add(strings.ToUpper(a.Kind))
			if a.IndexTopK > 0 {
				add(fmt.Sprintf("top-%d", a.IndexTopK))
			}
			switch {
			case a.Window > 0 && a.Chunked:
				add(fmt.Sprintf("chunk %d", a.Window))
			case a.Window > 0:
				add(fmt.Sprintf("window %d", a.Window))
			}
			if a.Sinks {
				add("sinks")
			}
		}
	}
	s := fmt.Sprintf("%d layers: %s", g.NumLayers(), strings.Join(parts, " + "))
	if len(attn) > 0 {
		s += ", " + strings.Join(attn, ", ")
	}
	if g.Draft != nil {
		s += fmt.Sprintf(", %s×%d", strings.ToUpper(g.Draft.Method), g.Draft.NumLayers())
	}
	return s
}

// vLLM sources each family mirrors: the model module and the commit of
// vllm-project/vllm it was read at.
const (
	srcLlama      = "vllm/model_executor/models/llama.py@0035bdf2"
	srcQwen2      = "vllm/model_executor/models/qwen2.py@cb24295e"
	srcQwen3      = "vllm/model_executor/models/qwen3.py@e745baff"
	srcQwen3MoE   = "vllm/model_executor/models/qwen3_moe.py@002456df"
	srcMixtral    = "vllm/model_executor/models/mixtral.py@f0e26957"
	srcDeepseek   = "vllm/model_executor/models/deepseek_v2.py@002d6073"
	srcDeepseekMT = "vllm/model_executor/models/deepseek_mtp.py@03356f8c"
	srcLlama4     = "vllm/model_executor/models/llama4.py@0121c95e"
	srcGptOss     = "vllm/model_executor/models/gpt_oss.py@a6b6cfaa"
	srcMiniMaxM2  = "vllm/model_executor/models/minimax_m2.py@01d99586"
	srcGranite    = "vllm/model_executor/models/granite.py@0328802b"
)

// family is how one vLLM model module builds its decoder layer.
type family struct {
	name, src string
	qkvBias   func(*Model) bool // QKVParallelLinear bias
	oBias     func(*Model) bool // o_proj bias
	qkNorm    string            // "": none; "head": per-head RMSNorm (Qwen3); "tp": MiniMaxText01RMSNormTP over all heads; "rope": weightless per-head RMSNorm on RoPE layers only (Llama 4)
	sinks     bool              // attention sinks (gpt-oss)
	sliding   bool              // honours the config's sliding layers
	// scaled: Granite's scalar multipliers. Each block's output is scaled
	// before its residual add, so the norms take no residual (plain
	// RMSNorm) and the scaled add is its own kernel; the embedding output
	// and the logits are scaled too.
	scaled bool
	moe    moeStyle
}

type moeStyle struct {
	routerName  string
	routerBias  bool
	routerDtype string // "" = the model dtype
	activation  string
	expertBias  bool
}

func yes(*Model) bool             { return true }
func no(*Model) bool              { return false }
func attnBias(m *Model) bool      { return m.AttentionBias }
func stdMoE(name string) moeStyle { return moeStyle{routerName: name, activation: "silu"} }

// graphFamilies maps config.json architectures to the vLLM module whose
// layer structure the deriver mirrors. Mistral, Yi and CodeLlama
// checkpoints are LlamaForCausalLM or MistralForCausalLM, which vLLM's
// registry serves with llama.py.
var graphFamilies = map[string]family{
	// llama.py: qkv_proj and o_proj carry attention_bias (or bias), the MLP mlp_bias.
	"LlamaForCausalLM":   {name: "llama", src: srcLlama, qkvBias: attnBias, oBias: attnBias, sliding: true},
	"MistralForCausalLM": {name: "llama", src: srcLlama, qkvBias: attnBias, oBias: attnBias, sliding: true},
	// qwen2.py: QKV always has a bias, o_proj none.
	"Qwen2ForCausalLM": {name: "qwen2", src: srcQwen2, qkvBias: yes, oBias: no, sliding: true},
	// qwen3.py: per-head q_norm and k_norm before RoPE.
	"Qwen3ForCausalLM": {name: "qwen3", src: srcQwen3, qkvBias: attnBias, oBias: no, qkNorm: "head", sliding: true},
	// qwen3_moe.py: Qwen3 attention; gate is a ReplicatedLinear with quant_config=None.
	"Qwen3MoeForCausalLM": {name: "qwen3_moe", src: srcQwen3MoE, qkvBias: attnBias, oBias: no, qkNorm: "head", sliding: true,
		moe: stdMoE("gate")},
	// mixtral.py: no biases; MixtralAttention takes no sliding window.
	"MixtralForCausalLM": {name: "mixtral", src: srcMixtral, qkvBias: no, oBias: no, moe: stdMoE("gate")},
	// gpt_oss.py: QKVParallelLinear and RowParallelLinear with their default
	// bias=True; sinks; sliding window on even layers; router is a bf16
	// nn.Linear with bias; FusedMoE with has_bias and swigluoai.
	"GptOssForCausalLM": {name: "gpt_oss", src: srcGptOss, qkvBias: yes, oBias: yes, sinks: true, sliding: true,
		moe: moeStyle{routerName: "router", routerBias: true, activation: "swigluoai", expertBias: true}},
	// minimax_m2.py: MiniMaxText01RMSNormTP q/k norms (an all_reduce of
	// the variances under TP), partial RoPE (rotary_dim), fp32 gate.
	"MiniMaxM2ForCausalLM": {name: "minimax_m2", src: srcMiniMaxM2, qkvBias: attnBias, oBias: no, qkNorm: "tp",
		moe: moeStyle{routerName: "gate", routerDtype: "fp32", activation: "silu"}},
	// deepseek_v2.py (DeepseekV3ForCausalLM subclasses it): MLA, shared experts, dense-first layers.
	"DeepseekV2ForCausalLM": {name: "deepseek_v2", src: srcDeepseek, moe: stdMoE("gate")},
	"DeepseekV3ForCausalLM": {name: "deepseek_v2", src: srcDeepseek, moe: stdMoE("gate")},
	// DeepSeek-V3.2 (registered to deepseek_v2.py's DeepseekV3ForCausalLM)
	// and GLM-5 (GlmMoeDsaForCausalLM, a DeepseekV2ForCausalLM subclass whose
	// router runs in fp32): MLA with the DSA indexer.
	"DeepseekV32ForCausalLM": {name: "deepseek_v2", src: srcDeepseek, moe: stdMoE("gate")},
	"GlmMoeDsaForCausalLM":   {name: "deepseek_v2", src: srcDeepseek, moe: moeStyle{routerName: "gate", routerDtype: "fp32", activation: "silu"}},
	// llama4.py: no biases; RoPE layers attend in chunks (use_irope) with a
	// weightless q/k RMSNorm after RoPE, NoPE layers globally with
	// temperature-tuned queries; Llama4MoE: a bf16 router, top-k then
	// sigmoid, one shared expert, one all-reduce of both.
	// deepseek_v4.py: compressed attention (sliding-window, CSA, HCA
	// layers), mHC, hash-routed and learned MoE layers (graph_dsv4.go).
	"DeepseekV4ForCausalLM": {name: "deepseek_v4", src: srcDSV4, moe: stdMoE("gate")},
	// granite.py: Llama's layer with attention_bias (or bias) on qkv_proj and
	// o_proj, mlp_bias on the MLP, and the four Granite multipliers.
	"GraniteForCausalLM": {name: "granite", src: srcGranite, qkvBias: attnBias, oBias: attnBias, scaled: true},
	// opt.py: learned positions, LayerNorm, MHA with biases, fc1/ReLU/fc2 (graph_opt.go).
	"OPTForCausalLM":    {name: "opt", src: srcOPT, qkvBias: attnBias, oBias: attnBias},
	"Llama4ForCausalLM": {name: "llama4", src: srcLlama4, qkvBias: no, oBias: no, qkNorm: "rope", sliding: true, moe: stdMoE("router")},
	// qwen3_5.py (graph_qwen35.go): Gated DeltaNet and gated full-attention layers.
	"Qwen3_5MoeForCausalLM": {name: "qwen3_5", src: srcQwen35, qkvBias: no, oBias: no, qkNorm: "head", moe: stdMoE("gate")},
	"Qwen3_5ForCausalLM":    {name: "qwen3_5", src: srcQwen35, qkvBias: no, oBias: no, qkNorm: "head"},
}

// shortDtype names a dtype the way graphs print it.
func shortDtype(s string) string {
	switch s {
	case "bfloat16":
		return "bf16"
	case "float16":
		return "fp16"
	case "float32":
		return "fp32"
	}
	return s
}

// builder holds one model's numbers while its graph is derived.
type builder struct {
	m   *Model
	f   family
	b   float64 // activation bytes per element
	act string  // activation dtype
	// Weight dtypes of the attention projections, dense MLPs and shared
	// experts, and routed experts, after the checkpoint's quantization.
	attnDt, denseDt, expertDt string
	H                         int
	vocab                     int
}

// newBuilder starts m's graph derivation: the activation size and dtype,
// the padded vocabulary and the attention weights' dtype; the derivers
// set the dense and expert dtypes their families call for.
func newBuilder(m *Model, f family) *builder {
	b := &builder{m: m, f: f, b: m.DtypeBytes, act: shortDtype(m.Dtype), H: m.HiddenSize,
		vocab: ceilDiv(m.VocabSize, vocabPaddingSize) * vocabPaddingSize}
	if b.b <= 0 {
		b.b = 2
	}
	b.attnDt = b.partDtype(m.AttnWeightDtype, m.AttnWeightBytesPerParam)
	return b
}

// DeriveGraph builds m's operator graph from its parsed config. The
// families covered are those in graphFamilies; any other architecture is
// an error that names it.
func DeriveGraph(m *Model) (*Graph, error) {
	f, ok := graphFamilies[m.Architecture]
	if !ok {
		known := make([]string, 0, len(graphFamilies))
		for a := range graphFamilies {
			known = append(known, a)
		}
		sort.Strings(known)
		return nil, fmt.Errorf("%s: no operator-graph deriver for architecture %q (covered: %s)",
			m.ID, m.Architecture, strings.Join(known, ", "))
	}
	if f.name == "deepseek_v4" {
		return deriveDSV4(m, f)
	}
	if (f.moe.routerName == "") == m.IsMoE() && f.name != "deepseek_v2" {
		return nil, fmt.Errorf("%s: architecture %s with %d experts does not match vLLM's %s module", m.ID, m.Architecture, m.NumExperts, f.name)
	}
	if f.name == "deepseek_v2" && !m.IsMLA() {
		return nil, fmt.Errorf("%s: %s without kv_lora_rank (DeepSeek-V1 style MHA) is not modelled", m.ID, m.Architecture)
	}
	if len(m.MoELayers) != 0 && len(m.MoELayers) != m.NumLayers || len(m.SlidingLayers) != 0 && len(m.SlidingLayers) != m.NumLayers {
		return nil, fmt.Errorf("%s: per-layer tables do not match num_hidden_layers %d", m.ID, m.NumLayers)
	}
	b := newBuilder(m, f)
	b.denseDt = b.partDtype(m.DenseWeightDtype, m.DenseWeightBytesPerParam)
	b.expertDt = b.weightDtype(m.WeightBytesPerParam)

	g := &Graph{
		Version: GraphVersion, Model: m.ID, Architecture: m.Architecture, Family: f.name, Mirrors: f.src,
		Dtype: b.act, Hidden: b.H, Vocab: b.vocab, TiedEmbeddings: m.TieEmbeddings,
		Embed: b.embedOps(),
		Head:  b.headOps("norm", 4, "lm_head"),
	}
	if f.scaled {
		// GraniteModel.forward: hidden_states *= embedding_multiplier; the
		// final norm takes no residual; GraniteForCausalLM's LogitsProcessor
		// multiplies the gathered logits by 1/logits_scaling (skipped at 1).
		g.Embed = append(g.Embed, elementwise("embedding_multiplier", b.bytes(2*b.H), ShardReplicated))
		g.Head = b.headOps("norm", 2, "lm_head")
		if m.LogitsScaling != 1 {
			scale := elementwise("logits_scale", b.bytes(2*b.vocab), ShardReplicated)
			scale.Rows = RowsSampled
			g.Head = append(g.Head, scale)
		}
	}

	if f.name == "opt" {
		g.Embed, g.Head = b.optEmbedOps(), b.optHeadOps()
	}
	if m.IsHybridLinear() {
		return b.qwen35Graph(g)
	}

	type kindKey struct {
		moe    bool
		window int
		nope   bool
	}
	groupLayers(g, m.NumLayers, func(i int) kindKey {
		k := kindKey{moe: len(m.MoELayers) > 0 && m.MoELayers[i]}
		if f.sliding && len(m.SlidingLayers) > 0 && m.SlidingLayers[i] {
			k.window = m.SlidingWindow
		}
		k.nope = len(m.NoPELayers) > 0 && m.NoPELayers[i]
		return k
	}, func(k kindKey) LayerKind {
		name := "dense"
		if k.moe {
			name = "moe"
		}
		switch {
		case k.window > 0 && m.AttentionChunk > 0:
			name += "_chunked"
		case k.window > 0:
			name += "_sliding"
		}
		if k.nope {
			name += "_nope"
		}
		return LayerKind{Name: name, Ops: b.layerOps(k.moe, k.window, k.nope)}
	})

	if !f.sliding && m.SlidingWindowLayers > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("the config sets a %d-token sliding window, which vLLM's %s module ignores: every layer attends to the full context", m.SlidingWindow, f.name))
	}
	switch f.name {
	case "deepseek_v2":
		if m.IsDSA() {
			g.Notes = append(g.Notes, fmt.Sprintf("DeepSeek sparse attention as vLLM's sparse MLA backends run it (FlashMLA sparse on Hopper, FlashInfer sparse MLA on Blackwell): "+
				"prefill and decode tokens both attend as MQA over the %d-wide latent cache, each query to the %d cached tokens the indexer keeps; "+
				"the indexer (%d heads × %d, fp8, replicated on every TP rank) scores every cached token of every query, and its %d-byte key cache sits beside the latent in the same KV block",
				m.KVLoraRank+m.QKRopeHeadDim, m.IndexTopK, m.IndexHeads, m.IndexHeadDim, m.IndexerCacheBytes()))
		} else {
			g.Notes = append(g.Notes,
				"MLA as vLLM's MLACommonImpl runs it: prefill tokens expand the latent through kv_b_proj (chunked prefills also for their cached context) and attend as MHA with q·k head "+
					fmt.Sprint(m.QKNopeHeadDim+m.QKRopeHeadDim)+" and v head "+fmt.Sprint(m.VHeadDim)+"; decode tokens absorb kv_b_proj into q_nope_absorb and v_up_proj and attend as MQA over the "+
					fmt.Sprint(m.KVLoraRank+m.QKRopeHeadDim)+"-wide latent cache")
		}
		if m.NumNextNLayers > 0 {
			g.Draft = b.deepseekMTP()
		}
	case "granite":
		g.Notes = append(g.Notes, fmt.Sprintf("Granite's multipliers as granite.py applies them: embeddings ×%g, each block's output ×%g before its residual add "+
			"(so the norms run without a fused residual), attention softmax scale %g (not 1/√%d), logits ÷%g", m.EmbeddingMultiplier, m.ResidualMultiplier,
			m.AttentionMultiplier, m.HeadDim, m.LogitsScaling))
	case "opt":
		g.Notes = append(g.Notes, fmt.Sprintf("OPT as opt.py runs it: a learned position table of %d rows (max_position_embeddings + 2) added to the token embedding, no RoPE; "+
			"LayerNorm %s each block with its residual add as its own kernel; fc1, ReLU, fc2; the LM head is the token embedding", m.LearnedPositions, map[bool]string{true: "before", false: "after"}[m.PreLayerNorm]))
	case "gpt_oss":
		g.Notes = append(g.Notes, "mxfp4 quantizes only the routed experts (vLLM's Mxfp4Config); attention, router, embedding and LM head stay "+b.act)
	}
	if m.Wrapper != "" {
		g.Notes = append(g.Notes, wrapperNote(m))
	}
	if m.NumMTPModules > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("the config declares %d MTP modules (use_mtp), but vLLM has no draft model for %s, so no draft layers are represented", m.NumMTPModules, m.Architecture))
	}
	if m.NumNextNLayers > 0 && f.name != "deepseek_v2" {
		g.Notes = append(g.Notes, fmt.Sprintf("num_nextn_predict_layers %d is not represented for %s", m.NumNextNLayers, m.Architecture))
	}
	return g, nil
}

// vocabPaddingSize is vLLM's DEFAULT_VOCAB_PADDING_SIZE
// (vllm/model_executor/layers/vocab_parallel_embedding.py).
const vocabPaddingSize = 64

// weightDtype names the dtype of the routed experts' (or, in a dense
// model, the MLPs') GEMM weights stored in bpp bytes per parameter:
// WeightDtype is theirs.
func (b *builder) weightDtype(bpp float64) string {
	if bpp >= b.m.DtypeBytes {
		return b.act
	}
	return b.m.WeightDtype
}

// partDtype names the dtype of one part's GEMM weights (attention, dense
// MLP / shared experts): the part's own format, which in a mixed-precision
// checkpoint differs from the experts'. A Model built without part formats
// (a literal in a test) falls back to the bytes-per-parameter rule.
func (b *builder) partDtype(dtype string, bpp float64) string {
	if dtype == "" || bpp >= b.m.DtypeBytes {
		return b.weightDtype(bpp) // the activation dtype when unquantized
	}
	return shortDtype(dtype)
}

func (b *builder) bytes(elems int) float64 { return float64(elems) * b.b }

func gemm(name string, n, k int, dtype, shard string) Op {
	return Op{Kind: OpGEMM, Name: name, N: n, K: k, Dtype: dtype, Shard: shard}
}

func elementwise(name string, bytes float64, shard string) Op {
	return Op{Kind: OpElementwise, Name: name, BytesPerToken: bytes, Shard: shard}
}

func collective(name, group, coll string, bytes float64) Op {
	return Op{Kind: OpCollective, Name: name, Group: group, Collective: coll, BytesPerToken: bytes}
}

// embedOps: VocabParallelEmbedding looks up the rows of its vocabulary
// shard and all-reduces the zero-filled result over TP.
func (b *builder) embedOps() []Op {
	return []Op{
		{Kind: OpEmbedding, Name: "embed_tokens", N: b.vocab, K: b.H, Dtype: b.act, Shard: ShardColumn, BytesPerToken: b.bytes(2 * b.H)},
		collective("embed_tokens.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)),
	}
}

// headOps: the final RMSNorm over every token (normElems × hidden read and
// written: 4 for the fused residual add), then ParallelLMHead on the
// sampled rows only and LogitsProcessor's all_gather of the vocabulary
// shards (tensor_model_parallel_all_gather; use_all_gather on CUDA).
func (b *builder) headOps(normName string, normElems int, headName string) []Op {
	return []Op{
		elementwise(normName, b.bytes(normElems*b.H), ShardReplicated),
		{Kind: OpGEMM, Name: headName, Rows: RowsSampled, N: b.vocab, K: b.H, Dtype: b.act, Shard: ShardColumn},
		{Kind: OpCollective, Name: "logits.all_gather", Rows: RowsSampled, Group: GroupTP, Collective: "all_gather", BytesPerToken: b.bytes(b.vocab)},
	}
}

// layerOps builds one decoder layer: attention block, then the dense MLP
// or the MoE block, each behind a fused residual-add RMSNorm (4 × hidden
// read and written).
func (b *builder) layerOps(moe bool, window int, nope bool) []Op {
	if b.f.scaled {
		return b.scaledLayerOps()
	}
	if b.f.name == "opt" {
		return b.optLayerOps()
	}
	ops := []Op{elementwise("input_layernorm", b.bytes(4*b.H), ShardReplicated)}
	if b.f.name == "deepseek_v2" {
		ops = append(ops, b.mlaOps()...)
	} else {
		ops = append(ops, b.attentionOps(window, nope)...)
	}
	ops = append(ops, elementwise("post_attention_layernorm", b.bytes(4*b.H), ShardReplicated))
	if moe {
		return append(ops, b.moeOps()...)
	}
	return append(ops, b.mlpOps("", b.m.IntermediateSize, b.m.MLPBias, true)...)
}

// scaledLayerOps mirrors GraniteDecoderLayer: a plain RMSNorm (hidden read
// and written), attention, then residual + out × residual_multiplier as one
// elementwise kernel (two tensors read, one written; torch.compile fuses
// the multiply into the add), and the same around the MLP.
func (b *builder) scaledLayerOps() []Op {
	ops := []Op{elementwise("input_layernorm", b.bytes(2*b.H), ShardReplicated)}
	ops = append(ops, b.attentionOps(0, false)...)
	ops = append(ops,
		elementwise("attn_residual_add", b.bytes(3*b.H), ShardReplicated),
		elementwise("post_attention_layernorm", b.bytes(2*b.H), ShardReplicated))
	ops = append(ops, b.mlpOps("", b.m.IntermediateSize, b.m.MLPBias, true)...)
	return append(ops, elementwise("mlp_residual_add", b.bytes(3*b.H), ShardReplicated))
}

// attentionOps: QKVParallelLinear, optional q/k norms, RoPE (not on a NoPE
// layer, which scales its queries instead), attention, RowParallelLinear
// o_proj and its all_reduce.
func (b *builder) attentionOps(window int, nope bool) []Op {
	m := b.m
	h, kv, d := m.NumHeads, m.NumKVHeads, m.HeadDim
	qkv := gemm("qkv_proj", (h+2*kv)*d, b.H, b.attnDt, ShardColumn)
	qkv.Parts, qkv.PartHeads = []int{h * d, kv * d, kv * d}, []int{h, kv, kv}
	qkv.Bias = b.f.qkvBias(m)
	ops := []Op{qkv}
	switch b.f.qkNorm {
	case "head": // RMSNorm(head_dim) over every q and k head
		ops = append(ops, elementwise("qk_norm", b.bytes(2*(h+kv)*d), ShardSplit))
	case "tp": // MiniMaxText01RMSNormTP.forward_qk: the q and k variances (fp32) are all-reduced
		ops = append(ops,
			elementwise("qk_norm", b.bytes(2*(h+kv)*d), ShardSplit),
			collective("qk_norm.all_reduce", GroupTP, "all_reduce", 2*4))
	case "rope": // Llama 4: after RoPE, on RoPE layers only
		if !nope {
			ops = append(ops, elementwise("qk_norm", b.bytes(2*(h+kv)*d), ShardSplit))
		}
	}
	if nope {
		// Llama4Attention._get_attn_scale: queries times a per-position scale.
		ops = append(ops, elementwise("attn_temperature", b.bytes(2*h*d), ShardSplit))
	} else {
		ops = append(ops, elementwise("rotary_emb", b.bytes(2*(h+kv)*m.RotaryDim), ShardSplit))
	}
	kind := "gqa"
	if kv == h {
		kind = "mha"
	}
	ops = append(ops, Op{Kind: OpAttention, Name: "attn", Shard: ShardSplit, Attn: &Attention{
		Kind: kind, Heads: h, KVHeads: kv, HeadDim: d, VHeadDim: d, Window: window, Sinks: b.f.sinks,
		Chunked:      window > 0 && m.AttentionChunk > 0,
		KVCacheElems: 2 * kv * d, KVCacheShard: "heads",
	}})
	o := gemm("o_proj", b.H, h*d, b.attnDt, ShardRow)
	o.Bias = b.f.oBias(m)
	return append(ops, o, collective("o_proj.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)))
}

// mlaOps mirrors DeepseekV2MLAAttention with vLLM's MLA backends
// (vllm/model_executor/layers/mla.py, vllm/v1/attention/backends/mla/common.py):
// q_a_proj and kv_a_proj_with_mqa fused into one replicated GEMM, the
// latent norms, q_b_proj, RoPE on the rope dims, then per phase: prefill
// expands the latent with kv_b_proj, decode multiplies q_nope by W_UK and
// the attention output by W_UV (both taken from kv_b_proj in the model
// dtype at load time), then o_proj.
func (b *builder) mlaOps() []Op {
	m := b.m
	h, nope, rope, v, kvl, ql := m.NumHeads, m.QKNopeHeadDim, m.QKRopeHeadDim, m.VHeadDim, m.KVLoraRank, m.QLoraRank
	var ops []Op
	if ql > 0 {
		a := gemm("fused_qkv_a_proj", ql+kvl+rope, b.H, b.attnDt, ShardReplicated)
		a.Parts = []int{ql, kvl + rope} // q_a_proj, kv_a_proj_with_mqa
		ops = append(ops, a,
			elementwise("q_a_layernorm", b.bytes(2*ql), ShardReplicated),
			gemm("q_b_proj", h*(nope+rope), ql, b.attnDt, ShardColumn))
	} else {
		ops = append(ops,
			gemm("q_proj", h*(nope+rope), b.H, b.attnDt, ShardColumn),
			gemm("kv_a_proj_with_mqa", kvl+rope, b.H, b.attnDt, ShardReplicated))
	}
	if m.IsDSA() {
		ops = append(ops, b.indexerOps()...)
	}
	kvB := gemm("kv_b_proj", h*(nope+v), kvl, b.attnDt, ShardColumn)
	kvB.Phase = PhasePrefill
	uk := Op{Kind: OpGEMM, Name: "q_nope_absorb", Phase: PhaseDecode, Batch: h, N: kvl, K: nope, Dtype: b.act, Shard: ShardSplit}
	uv := Op{Kind: OpGEMM, Name: "v_up_proj", Phase: PhaseDecode, Batch: h, N: v, K: kvl, Dtype: b.act, Shard: ShardSplit}
	ops = append(ops,
		elementwise("kv_a_layernorm", b.bytes(2*kvl), ShardReplicated),
		elementwise("rotary_emb", b.bytes(2*(h*rope+rope)), ShardSplit),
		kvB, uk,
		Op{Kind: OpAttention, Name: "attn", Shard: ShardSplit, Attn: b.mlaAttention()},
		uv,
		gemm("o_proj", b.H, h*v, b.attnDt, ShardRow),
		collective("o_proj.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)))
	return ops
}

// mlaAttention is the MLA attention kernel's description, with DSA's
// indexer numbers when the config has them.
func (b *builder) mlaAttention() *Attention {
	m := b.m
	a := &Attention{
		Kind: "mla", Heads: m.NumHeads, KVHeads: 1, HeadDim: m.QKNopeHeadDim + m.QKRopeHeadDim, VHeadDim: m.VHeadDim,
		KVLoraRank: m.KVLoraRank, QLoraRank: m.QLoraRank, QKNopeHeadDim: m.QKNopeHeadDim, QKRopeHeadDim: m.QKRopeHeadDim,
		KVCacheElems: m.KVLoraRank + m.QKRopeHeadDim, KVCacheShard: "replicated",
	}
	if m.IsDSA() {
		a.Kind = "dsa"
		a.IndexTopK, a.IndexHeads, a.IndexHeadDim = m.IndexTopK, m.IndexHeads, m.IndexHeadDim
		a.IndexerCacheBytes = m.IndexerCacheBytes()
	}
	return a
}

// indexerOps mirror DSA's Indexer (deepseek_v2.py): replicated on every
// TP rank (ReplicatedLinear), wq_b lifts the q_lora latent to the index
// heads, wk and its LayerNorm give one key per token, weights_proj (in the
// model dtype, unquantized) one weight per index head, RoPE on the rope
// part of the index query and key. The logits and top-k over the cached
// keys are the attention op's work.
func (b *builder) indexerOps() []Op {
	m := b.m
	ih, id, rope := m.IndexHeads, m.IndexHeadDim, m.QKRopeHeadDim
	return []Op{
		gemm("indexer.wq_b", ih*id, m.QLoraRank, b.attnDt, ShardReplicated),
		gemm("indexer.wk", id, b.H, b.attnDt, ShardReplicated),
		elementwise("indexer.k_norm", b.bytes(2*id), ShardReplicated),
		gemm("indexer.weights_proj", ih, b.H, b.act, ShardReplicated),
		elementwise("indexer.rotary_emb", b.bytes(2*(ih+1)*rope), ShardReplicated),
	}
}

// mlpOps: MergedColumnParallelLinear gate_up_proj, SiluAndMul,
// RowParallelLinear down_proj, and (when it reduces its own result) the
// all_reduce. prefix names a shared-expert MLP ("shared_experts.").
func (b *builder) mlpOps(prefix string, inter int, bias, reduce bool) []Op {
	gu := gemm(prefix+"gate_up_proj", 2*inter, b.H, b.denseDt, ShardColumn)
	gu.Parts, gu.Bias = []int{inter, inter}, bias
	down := gemm(prefix+"down_proj", b.H, inter, b.denseDt, ShardRow)
	down.Bias = bias
	ops := []Op{gu, elementwise(prefix+"silu_and_mul", b.bytes(3*inter), ShardSplit), down}
	if reduce {
		ops = append(ops, collective(prefix+"down_proj.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)))
	}
	return ops
}

// moeOps: the router GEMM (replicated, unquantized), shared experts on
// the rank's own tokens, the DP dispatch, FusedMoE, the DP combine and
// the TP all_reduce of the summed expert outputs.
func (b *builder) moeOps() []Op {
	m, st := b.m, b.f.moe
	rdt, rb := b.act, b.b
	if st.routerDtype == "fp32" {
		rdt, rb = "fp32", 4
	}
	router := gemm(st.routerName, m.NumExperts, b.H, rdt, ShardReplicated)
	router.Bias = st.routerBias
	ops := []Op{router}
	if m.NumSharedExperts > 0 {
		// DeepseekV2MoE: one DeepseekV2MLP of n_shared_experts × moe_intermediate_size, reduce_results=False.
		ops = append(ops, b.mlpOps("shared_experts.", m.NumSharedExperts*m.SharedExpertIntermediateSize, false, false)...)
	}
	ops = append(ops,
		// AgRsAll2AllManager.dispatch_router_logits gathers hidden states and router logits.
		collective("experts.dispatch", GroupDP, "all_gather", b.bytes(b.H)+float64(m.NumExperts)*rb),
		Op{Kind: OpMoE, Name: "experts", Shard: ShardExperts, MoE: &MoE{
			Experts: m.NumExperts, TopK: m.ExpertsPerToken, Hidden: b.H, Inter: m.MoEIntermediateSize,
			Dtype: b.expertDt, Activation: st.activation, Bias: st.expertBias,
			Scoring: m.ScoringFunc, Groups: m.NumExpertGroups, TopKGroups: m.TopKGroups, CorrectionBias: m.RoutingBias,
			SharedExperts: m.NumSharedExperts, SharedInter: m.SharedExpertIntermediateSize,
		}},
		collective("experts.combine", GroupDP, "reduce_scatter", b.bytes(b.H)),
		collective("experts.all_reduce", GroupTP, "all_reduce", b.bytes(b.H)))
	return ops
}

// deepseekMTP mirrors DeepSeekMultiTokenPredictorLayer: enorm on the
// token embedding, hnorm on the target's hidden state, eh_proj (an
// unquantized nn.Linear over both, concatenated), one decoder layer with
// layer index num_hidden_layers (so MoE when the stack's rule makes it
// one), the residual add, shared_head.norm and the LM head.
func (b *builder) deepseekMTP() *Draft {
	m := b.m
	L := m.NumLayers
	moe := m.IsMoE() && L >= m.FirstDenseLayers && L%max(1, m.MoELayerFreq) == 0
	layer := b.layerOps(moe, 0, false)
	layer[0].BytesPerToken = b.bytes(2 * b.H) // input_layernorm without a residual (residual=None)
	ops := append(b.embedOps(),
		elementwise("enorm", b.bytes(2*b.H), ShardReplicated),
		elementwise("hnorm", b.bytes(2*b.H), ShardReplicated),
		gemm("eh_proj", b.H, 2*b.H, b.act, ShardReplicated))
	ops = append(ops, layer...)
	ops = append(ops, elementwise("residual_add", b.bytes(3*b.H), ShardReplicated))
	ops = append(ops, b.headOps("shared_head.norm", 2, "shared_head.head")...)
	name := "mtp"
	if moe {
		name = "mtp_moe"
	}
	return &Draft{Method: "mtp", Mirrors: srcDeepseekMT, Layers: []LayerKind{{
		Name: name, Count: m.NumNextNLayers, Ops: ops, KVCacheElems: m.KVLoraRank + m.QKRopeHeadDim,
	}}}
}

// groupLayers fills g's layer kinds and stack from its n decoder layers:
// key classifies layer i, kind builds the LayerKind of a key the first time
// it appears (kinds stay in order of first appearance), each kind is
// counted and given its attention's per-token KV-cache elements, and the
// per-layer sequence is compressed into runs.
func groupLayers[K comparable](g *Graph, n int, key func(i int) K, kind func(K) LayerKind) {
	index := map[K]int{}
	perLayer := make([]string, n)
	for i := range n {
		k := key(i)
		j, seen := index[k]
		if !seen {
			j = len(g.Layers)
			index[k] = j
			lk := kind(k)
			if a := lk.Attention(); a != nil {
				lk.KVCacheElems = a.KVCacheElems
			}
			g.Layers = append(g.Layers, lk)
		}
		g.Layers[j].Count++
		perLayer[i] = g.Layers[j].Name
	}
	g.Stack = stackRuns(perLayer)
}

// stackRuns compresses the per-layer kinds into runs, trying a repeating
// pattern of up to four kinds at each point and keeping the one that
// covers the most layers (the shortest on ties).
func stackRuns(kinds []string) []StackRun {
	var runs []StackRun
	for i := 0; i < len(kinds); {
		bestP, bestReps := 1, 1
		for p := 1; p <= 4 && i+p <= len(kinds); p++ {
			reps := 1
			for i+(reps+1)*p <= len(kinds) && equalStrings(kinds[i+reps*p:i+(reps+1)*p], kinds[i:i+p]) {
				reps++
			}
			if (p == 1 || reps >= 2) && p*reps > bestP*bestReps {
				bestP, bestReps = p, reps
			}
		}
		runs = append(runs, StackRun{Kinds: append([]string(nil), kinds[i:i+bestP]...), Repeat: bestReps})
		i += bestP * bestReps
	}
	return runs
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// EncodeGraph is the stored form of g: indented JSON in the field order of
// the types, one op per line so that a change to an op is a one-line diff,
// with a final newline. The same graph always gives the same bytes.
func EncodeGraph(g *Graph) ([]byte, error) {
	var w graphWriter
	top := []field{
		w.value("version", g.Version), w.value("model", g.Model), w.value("architecture", g.Architecture),
		w.value("family", g.Family), w.value("mirrors", g.Mirrors), w.value("dtype", g.Dtype),
		w.value("hidden", g.Hidden), w.value("vocab", g.Vocab),
	}
	if g.TiedEmbeddings {
		top = append(top, w.value("tied_embeddings", true))
	}
	top = append(top, field{"embed", w.ops(g.Embed, 1)}, field{"layers", w.kinds(g.Layers, 1)},
		w.value("stack", g.Stack), field{"head", w.ops(g.Head, 1)})
	if g.Draft != nil {
		top = append(top, field{"draft", w.object([]field{
			w.value("method", g.Draft.Method), w.value("mirrors", g.Draft.Mirrors), {"layers", w.kinds(g.Draft.Layers, 2)},
		}, 1)})
	}
	if len(g.Notes) > 0 {
		top = append(top, field{"notes", w.lines(g.Notes, 1)})
	}
	out := w.object(top, 0)
	if w.err != nil {
		return nil, w.err
	}
	return append(out, '\n'), nil
}

type field struct {
	key string
	val []byte
}

// graphWriter lays out a graph; the first marshalling error sticks.
type graphWriter struct{ err error }

func (w *graphWriter) raw(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil && w.err == nil {
		w.err = err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (w *graphWriter) value(key string, v any) field { return field{key, w.raw(v)} }

func pad(depth int) string { return strings.Repeat("  ", depth) }

func (w *graphWriter) object(fields []field, depth int) []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, f := range fields {
		b.WriteString(pad(depth + 1))
		b.Write(w.raw(f.key))
		b.WriteString(": ")
		b.Write(f.val)
		if i < len(fields)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(pad(depth) + "}")
	return b.Bytes()
}

func (w *graphWriter) array(items [][]byte, depth int) []byte {
	if len(items) == 0 {
		return []byte("[]")
	}
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, it := range items {
		b.WriteString(pad(depth + 1))
		b.Write(it)
		if i < len(items)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(pad(depth) + "]")
	return b.Bytes()
}

func (w *graphWriter) ops(ops []Op, depth int) []byte {
	items := make([][]byte, len(ops))
	for i := range ops {
		items[i] = w.raw(&ops[i])
	}
	return w.array(items, depth)
}

func (w *graphWriter) lines(s []string, depth int) []byte {
	items := make([][]byte, len(s))
	for i := range s {
		items[i] = w.raw(s[i])
	}
	return w.array(items, depth)
}

func (w *graphWriter) kinds(kinds []LayerKind, depth int) []byte {
	items := make([][]byte, len(kinds))
	for i, k := range kinds {
		items[i] = w.object([]field{
			w.value("name", k.Name), w.value("count", k.Count), w.value("kv_cache_elems", k.KVCacheElems),
			{"ops", w.ops(k.Ops, depth+2)},
		}, depth+1)
	}
	return w.array(items, depth)
}

// DecodeGraph reads a stored graph strictly: unknown keys, trailing data,
// another schema version or an inconsistent stack are errors naming file.
func DecodeGraph(file string, data []byte) (*Graph, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var g Graph
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the graph", file)
	}
	if g.Version != GraphVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", file, g.Version, GraphVersion)
	}
	counts := map[string]int{}
	for _, k := range g.Layers {
		if k.Count < 1 || k.Name == "" {
			return nil, fmt.Errorf("%s: layer kind %q has count %d", file, k.Name, k.Count)
		}
		if _, dup := counts[k.Name]; dup {
			return nil, fmt.Errorf("%s: layer kind %q appears twice", file, k.Name)
		}
		counts[k.Name] = 0
	}
	for _, r := range g.Stack {
		if r.Repeat < 1 || len(r.Kinds) == 0 {
			return nil, fmt.Errorf("%s: stack run %v × %d is empty", file, r.Kinds, r.Repeat)
		}
		for _, k := range r.Kinds {
			if _, ok := counts[k]; !ok {
				return nil, fmt.Errorf("%s: stack names layer kind %q, which is not in layers", file, k)
			}
			counts[k] += r.Repeat
		}
	}
	for _, k := range g.Layers {
		if counts[k.Name] != k.Count {
			return nil, fmt.Errorf("%s: layer kind %q has count %d but the stack holds %d", file, k.Name, k.Count, counts[k.Name])
		}
	}
	return &g, nil
}

// GraphFile is one stored graph and a fresh derivation of it.
type GraphFile struct {
	Dir     string // folder under models/, "<org>--<name>"
	Path    string // "models/<dir>/graph.json", relative to the catalog package
	Model   string // the Hugging Face id the graph is derived for
	Derived []byte // EncodeGraph(DeriveGraph(model))
	Stored  []byte // the embedded graph.json; nil when there is none
}

// Stale reports whether the stored graph differs from the derivation.
func (f GraphFile) Stale() bool { return !bytes.Equal(f.Derived, f.Stored) }

// DeriveGraphs derives the graph of every embedded config (once per
// folder, for the model whose config it is) and pairs it with the stored
// graph.json, in folder order.
func DeriveGraphs() ([]GraphFile, error) {
	r := models()
	if r.err != nil {
		return nil, r.err
	}
	var out []GraphFile
	seen := map[string]bool{}
	for _, e := range modelTable {
		if e.twin != "" || seen[e.dir] {
			continue
		}
		seen[e.dir] = true
		m := r.index[strings.ToLower(e.hfID())]
		g, err := DeriveGraph(m)
		if err != nil {
			return nil, err
		}
		data, err := EncodeGraph(g)
		if err != nil {
			return nil, err
		}
		p := path.Join("models", e.dir, "graph.json")
		stored, err := fs.ReadFile(modelFS, p)
		if err != nil {
			stored = nil
		}
		out = append(out, GraphFile{Dir: e.dir, Path: p, Model: m.ID, Derived: data, Stored: stored})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// LookupGraph returns the stored operator graph of a model, found as
// LookupModel finds it; Model is set to the id looked up (a model that
// shares another's config gets that config's graph). Known models the
// catalog cannot represent give an *UnsupportedModelError saying what is
// missing.
func LookupGraph(name string) (*Graph, error) {
	m, err := LookupModel(name)
	if err != nil {
		return nil, err
	}
	dir := ""
	for _, e := range modelTable {
		if e.hfID() == m.ID {
			dir = e.dir
			break
		}
	}
	p := path.Join("models", dir, "graph.json")
	data, err := fs.ReadFile(modelFS, p)
	if err != nil {
		return nil, fmt.Errorf("catalog: %s has no stored operator graph (%s); run `go run ./cmd/blis catalog derive --write`", m.ID, p)
	}
	g, err := DecodeGraph("catalog/"+p, data)
	if err != nil {
		return nil, err
	}
	g.Model = m.ID
	return g, nil
}

// UnsupportedModel is a model the project knows of (its config is in the
// shared data) but the catalog cannot represent, with what is missing.
type UnsupportedModel struct {
	ID      string
	Aliases []string // lower case
	Short   string   // what is missing, in a few words
	Missing string   // what is missing, in full
}

// UnsupportedModelError is the lookup error for an UnsupportedModel.
type UnsupportedModelError struct{ Model UnsupportedModel }

func (e *UnsupportedModelError) Error() string {
	return fmt.Sprintf("model %s is known but not supported: %s", e.Model.ID, e.Model.Missing)
}

// unsupportedModels are the published configs the catalog knows of but
// cannot represent yet (models/PROVENANCE.md, "Configs ... that are not
// embedded").
// None at present; the lookups and `blis catalog list` still honour
// entries added here.
var unsupportedModels []UnsupportedModel

// UnsupportedModels lists the known models the catalog cannot represent,
// sorted by id.
func UnsupportedModels() []UnsupportedModel {
	out := make([]UnsupportedModel, len(unsupportedModels))
	for i, u := range unsupportedModels {
		u.Aliases = append([]string(nil), u.Aliases...)
		out[i] = u
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// lookupUnsupported matches name (any case) against the unsupported
// models' ids, the part after the slash, the catalog folder spelling and
// the aliases.
func lookupUnsupported(name string) (UnsupportedModel, bool) {
	key := strings.ToLower(strings.TrimSpace(name))
	key = strings.Replace(key, "--", "/", 1)
	for _, u := range unsupportedModels {
		id := strings.ToLower(u.ID)
		if key == id || key == id[strings.Index(id, "/")+1:] {
			return u, true
		}
		for _, a := range u.Aliases {
			if key == a {
				return u, true
			}
		}
	}
	return UnsupportedModel{}, false
}

// String is the op on one line, e.g. "gemm qkv_proj n=6144 k=4096 bf16 column parts=4096+1024+1024".
func (o *Op) String() string { return o.Kind + " " + o.Name + " " + o.Describe() }

// Describe is the op's shape, dtype and sharding on one line, without its
// kind and name.
func (o *Op) Describe() string {
	var f []string
	add := func(format string, args ...any) { f = append(f, fmt.Sprintf(format, args...)) }
	switch o.Kind {
	case OpGEMM, OpEmbedding:
		if o.Batch > 0 {
			add("batch=%d", o.Batch)
		}
		add("n=%d k=%d %s %s", o.N, o.K, o.Dtype, o.Shard)
		if len(o.Parts) > 0 {
			p := make([]string, len(o.Parts))
			for i, x := range o.Parts {
				p[i] = fmt.Sprint(x)
			}
			add("parts=%s", strings.Join(p, "+"))
		}
		if o.Bias {
			add("bias")
		}
	case OpAttention:
		a := o.Attn
		if a == nil {
			break
		}
		add("%s heads=%d kv_heads=%d head_dim=%d", a.Kind, a.Heads, a.KVHeads, a.HeadDim)
		if a.VHeadDim != a.HeadDim {
			add("v_head_dim=%d", a.VHeadDim)
		}
		if a.KVLoraRank > 0 {
			add("kv_lora_rank=%d qk_rope_head_dim=%d", a.KVLoraRank, a.QKRopeHeadDim)
		}
		if a.IndexTopK > 0 {
			add("index_topk=%d index_heads=%d index_head_dim=%d", a.IndexTopK, a.IndexHeads, a.IndexHeadDim)
		}
		if a.Window > 0 {
			add("window=%d", a.Window)
		}
		if a.Sinks {
			add("sinks")
		}
	case OpMoE:
		e := o.MoE
		if e == nil {
			break
		}
		add("%d experts top-%d w13 n=%d k=%d, w2 n=%d k=%d %s %s, %s routing", e.Experts, e.TopK, 2*e.Inter, e.Hidden, e.Hidden, e.Inter, e.Dtype, e.Activation, e.Scoring)
		if e.Groups > 0 {
			add("in %d groups (top %d)", e.Groups, e.TopKGroups)
		}
		if e.CorrectionBias {
			add("+ correction bias")
		}
		if e.Bias {
			add("bias")
		}
	case OpCollective:
		add("%s over %s", o.Collective, o.Group)
	case OpGDN:
		if g := o.GDN; g != nil {
			add("%s key_heads=%d value_heads=%d %dx%d state=%gB %s", g.Stage, g.KeyHeads, g.ValueHeads, g.KeyHeadDim, g.ValueHeadDim, g.StateBytes, g.StateDtype)
		}
	}
	if o.BytesPerToken > 0 {
		add("%g B/token", o.BytesPerToken)
	}
	if o.Kind == OpElementwise {
		add("%s", o.Shard)
	}
	if o.Phase != "" {
		add("(%s only)", o.Phase)
	}
	if o.Rows == RowsSampled {
		add("(sampled rows)")
	}
	return strings.Join(f, " ")
}

// wrapperNote says what a multimodal wrapper's graph leaves out: the vision
// tower, whose parameters still count in the weights vLLM loads.
func wrapperNote(m *Model) string {
	note := fmt.Sprintf("the decoder of the multimodal wrapper %s, read from its text_config: the vision tower is not represented (text-only prompts never run it)", m.Wrapper)
	if m.VisionParams > 0 {
		note += fmt.Sprintf("; its %.0f M parameters count in the weights, as vLLM loads them", m.VisionParams/1e6)
	}
	return note
}
