// Package kernel prices one forward step of a vLLM engine: given the shape of
// the batch the scheduler formed, it returns how long the GPU(s) and host take,
// broken down by resource. It also sizes weights, reserves and the KV pool.
// It knows nothing of queues or requests: the engine hands it aggregates.
// With speculative decoding (Deployment.Spec) a step is the target's
// verification forward plus the proposer's draft passes (spec.go).
package kernel

import (
	"time"

	"blis/catalog"
)

// Batch is the shape of one scheduled step, aggregated by the engine so that
// pricing costs O(1) per step. Prefill rows are requests whose scheduled
// tokens are prompt (or recomputed) tokens; decode rows take one new token.
type Batch struct {
	NumPrefill    int // prefill (or chunked-prefill) rows
	NumDecode     int // decode rows
	PrefillTokens int // new tokens over all prefill rows
	DecodeTokens  int // new tokens over all decode rows (== NumDecode without spec decode)
	// PrefillAttnPairs is Σ over prefill rows of S·C + S·(S+1)/2, with S the
	// row's new tokens and C its already-computed context: the query×key
	// pairs of causal attention for a chunk appended to a cached context.
	PrefillAttnPairs float64
	PrefillContext   int64 // Σ C over prefill rows (cached KV tokens read)
	DecodeContext    int64 // Σ context length over decode rows (KV tokens read)
	// Sampled is the number of rows that produce a token this step (decode
	// rows plus prefill rows that finish their prompt).
	Sampled int
	// GroupTokens is, in a data-parallel group that steps in lockstep (a
	// MoE model with --data-parallel-size > 1), the tokens every rank's MoE
	// layers see: the whole group's, gathered (GroupStepTime sets it; 0
	// means this batch's own).
	GroupTokens int
	// Speculative decoding (Deployment.Spec): SpecTokens is the draft
	// tokens verified this step, summed over the decode rows that carry
	// drafts (SpecRows): such a row schedules 1 + its drafts new tokens,
	// all counted in DecodeTokens. Every row that samples (Sampled) then
	// gets Spec.NumTokens new drafts from the proposer, whose passes the
	// pricer adds to the step.
	SpecTokens int
	SpecRows   int
}

// Tokens is the total number of new tokens in the step.
func (b *Batch) Tokens() int { return b.PrefillTokens + b.DecodeTokens }

// Breakdown is a step's time per resource. Total is what the step costs on
// the simulated clock.
type Breakdown struct {
	Compute time.Duration // tensor-core time (GEMMs, attention FLOPs)
	Memory  time.Duration // HBM time (weights, KV reads/writes, activations)
	Comm    time.Duration // collectives (TP all-reduce over NVLink)
	Launch  time.Duration // GPU idle between piecewise CUDA graphs (or eager kernels) and the kernels launched eagerly between them
	Host    time.Duration // CPU-side scheduling, launch and output processing
	// Draft is the speculative proposer's share of the step (its draft
	// passes' compute, memory, collectives and launch waits; an n-gram
	// lookup's host time), already counted in the resources above: the
	// lead's "draft share" is Draft / Total.
	Draft time.Duration
	Total time.Duration
}

// Add adds o's times to b's, part by part: a step's stages, or a run's
// steps.
func (b *Breakdown) Add(o Breakdown) {
	b.Compute += o.Compute
	b.Memory += o.Memory
	b.Comm += o.Comm
	b.Launch += o.Launch
	b.Host += o.Host
	b.Draft += o.Draft
	b.Total += o.Total
}

// Pricer prices steps for one resolved deployment. Implementations precompute
// everything per deployment so StepTime does no allocation.
type Pricer interface {
	StepTime(b *Batch) Breakdown
	Name() string // e.g. "roofline-v1"
}

// GroupPricer prices one lockstep step of a data-parallel group: every
// rank's batch, the ranks waiting for each other at the MoE layers'
// collectives. Pricers that cannot (the roofline) are priced per rank by
// GroupStepTime.
type GroupPricer interface {
	GroupStepTime(bs []Batch) Breakdown
}

// GroupStepTime prices one lockstep data-parallel step with p: p's own
// group pricing when it has one, else the slowest rank's StepTime (each
// rank priced on its own tokens only).
func GroupStepTime(p Pricer, bs []Batch) Breakdown {
	if g, ok := p.(GroupPricer); ok {
		return g.GroupStepTime(bs)
	}
	var out Breakdown
	for i := range bs {
		if bd := p.StepTime(&bs[i]); bd.Total > out.Total {
			out = bd
		}
	}
	return out
}

// Deployment is what the kernel needs to know about one vLLM replica.
type Deployment struct {
	Model *catalog.Model
	Chip  *catalog.Chip
	TP    int // --tensor-parallel-size
	// DP is --data-parallel-size (0 or 1: none). Each DP rank is an engine
	// of TP GPUs with its own scheduler and KV cache; a MoE model's experts
	// are split over all DP × TP GPUs (vllm/model_executor/layers/fused_moe
	// FusedMoEParallelConfig: EP = DP × TP with --enable-expert-parallel,
	// else each expert TP-split DP × TP ways), attention and dense layers
	// over each rank's TP group.
	DP int
	// PP is --pipeline-parallel-size (0 or 1: none): the decoder layers
	// split into PP stages of TP GPUs each (PPLayerPartition), a step's
	// batch passing them in order. PPStage is the stage a pricer or a
	// memory plan describes; 0..PP−1 (NewPipeline and PlanMemory set it).
	PP, PPStage int
	// Fabric is the network between nodes and inside them (nil: the
	// chip's own NVLink and inter-node numbers); collectives that cross a
	// node use its network link.
	Fabric *catalog.Fabric
	// All2AllBackend is --all2all-backend, how expert-parallel MoE layers
	// move tokens to their experts ("" = vLLM's default).
	All2AllBackend string

	Quantization string // --quantization ("" = checkpoint's own dtype; "fp8" casts weights to FP8)
	KVCacheDtype string // --kv-cache-dtype: "auto", "fp8", "fp8_e4m3", "fp8_e5m2", "bfloat16"

	MaxNumBatchedTokens  int
	MaxNumSeqs           int
	MaxModelLen          int
	BlockSize            int
	GPUMemoryUtilization float64
	NumGPUBlocksOverride int  // 0 = size the pool from memory
	EnforceEager         bool // no CUDA graphs

	// CUDAGraphMode is compilation_config.cudagraph_mode: "" means vLLM's
	// default since v0.11, FULL_AND_PIECEWISE; also PIECEWISE, FULL,
	// FULL_DECODE_ONLY, NONE.
	CUDAGraphMode string
	// MaxCUDAGraphCaptureSize is --max-cudagraph-capture-size (0: vLLM's
	// default min(2 × max-num-seqs, 512), min(2 × max-num-seqs × (1 + k),
	// 512) with k speculative tokens); CaptureSizes, when given,
	// replaces vLLM's default list (compilation_config.cudagraph_capture_sizes).
	MaxCUDAGraphCaptureSize int
	CaptureSizes            []int
	// AsyncScheduling is --async-scheduling: the engine schedules and
	// prepares step N+1 while the GPU runs step N.
	AsyncScheduling bool
	// ExpertParallel is --enable-expert-parallel: the DP × TP GPUs each
	// hold 1/(DP·TP) of the experts whole instead of 1/(DP·TP) of every
	// expert (vllm/model_executor/layers/fused_moe/layer.py), the same bytes
	// per GPU; with one DP rank the MoE output is all-reduced over the TP
	// group.
	ExpertParallel bool
	// MoEBackend is the fused-MoE kernel family vLLM runs the experts on
	// when the environment forces one (MoEBackends()); "" or "auto" prices
	// with the law over every kernel measured for the experts' dtype.
	MoEBackend string
	// Spec is --speculative-config (zero value: no speculative decoding).
	Spec Speculation
	// Engram is --engram-config, where a model with Engram tables keeps
	// them (engram.go; nil: vLLM's defaults).
	Engram *EngramPlacement
}

// Speculation is what the step pricer needs of vLLM's
// --speculative-config: the proposer and how many tokens it drafts.
type Speculation struct {
	// Method is vLLM's method: "mtp", "eagle", "eagle3", "dspark",
	// "ngram", "draft_model", "suffix" ("" with NumTokens 0: off).
	Method string
	// NumTokens is num_speculative_tokens, k.
	NumTokens int
	// DraftModel is the draft's catalog id for "draft_model". For "eagle"
	// and "eagle3" it may name the head's checkpoint, which is not read:
	// the head is derived from the target (catalog.DeriveEagleDraft); for
	// "mtp" and "dspark" it is empty or the target.
	DraftModel string
	// DraftTP is draft_tensor_parallel_size (0: the target's TP).
	DraftTP int
}

// dpSize is the number of data-parallel ranks (at least 1).
func (d Deployment) dpSize() int { return max(d.DP, 1) }

// MoEBackends are the kernel families --moe-backend names, as vLLM's
// environment selects them (vllm/envs.py, model_executor/layers/fused_moe
// and quantization/mxfp4.py):
//   - triton: vLLM's Triton fused-MoE kernels (VLLM_USE_FLASHINFER_MOE_FP8=0,
//     VLLM_MOE_USE_DEEP_GEMM=0), OpenAI's Triton MXFP4 kernels on Hopper;
//   - flashinfer: FlashInfer's CUTLASS / TRT-LLM MoE kernels
//     (VLLM_USE_FLASHINFER_MOE_FP8=1, VLLM_USE_FLASHINFER_MOE_MXFP4_BF16=1);
//   - flashinfer-mxfp8: FlashInfer TRT-LLM MXFP4 experts with MXFP8
//     activations (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, Blackwell);
//   - marlin: Marlin weight-only kernels (VLLM_MXFP4_USE_MARLIN=1 for MXFP4,
//     vLLM's choice for int4 weights).
//
// Each call returns a fresh slice.
func MoEBackends() []string {
	return []string{"auto", "triton", "flashinfer", "flashinfer-mxfp8", "marlin"}
}

// CUDAGraphModes are vLLM's CUDA-graph modes (vllm/config/compilation.py
// CUDAGraphMode). Each call returns a fresh slice.
func CUDAGraphModes() []string {
	return []string{"FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "NONE"}
}

// MemoryPlan is how vLLM divides one GPU's memory at start-up. All sizes are
// bytes per GPU; KV numbers are for the whole replica's pool (every TP rank
// holds its shard of the same blocks, so blocks and tokens are per replica).
type MemoryPlan struct {
	TotalBytes      float64 // chip memory
	BudgetBytes     float64 // gpu_memory_utilization × total
	WeightBytes     float64 // this rank's share of the weights
	ActivationBytes float64 // profile run's activation peak at max-num-batched-tokens
	CUDAGraphBytes  float64
	NonTorchBytes   float64 // CUDA context, allocator slack
	NCCLBytes       float64
	KVBytes         float64 // what is left for the KV cache
	KVBytesPerToken float64 // per rank, all layers
	NumBlocks       int     // GPU KV blocks (vLLM's num_gpu_blocks)
	KVTokens        int     // NumBlocks ÷ groups × block size ("GPU KV cache size: N tokens")
	Overridden      bool    // NumBlocks came from --num-gpu-blocks-override
	// KVNote describes a KV layout the groups alone do not explain
	// (DeepSeek-V4's compressed caches and windows); "" otherwise.
	KVNote string
	// KVCache is how vLLM's KV cache manager splits the pool into KV cache
	// groups; the engine's KV manager takes it as is.
	KVCache KVCacheLayout
	// BlockBytes is one pool block on one rank: block size tokens of every
	// layer for one group, of a group's layers (one page each) for several
	// (what a KV connector moves per block and group).
	BlockBytes float64
	// PPStage is, with pipeline parallelism, the stage (0-based) this plan
	// is: the one with room for the fewest blocks, which every stage gets.
	PPStage int
}

// KVCacheLayout is vLLM's KV cache groups (vllm/v1/core/kv_cache_utils.py
// get_kv_cache_groups) in a comparable form: one full-attention group for a
// plain model; for a model mixing full-attention and sliding-window layers
// (gpt-oss), groups of GroupSize layers of one attention type each, in
// vLLM's order, all drawing one block per BlockSize tokens from the same
// pool, a block being one page of each of a group's layers. The zero value
// is a plain model.
type KVCacheLayout struct {
	Groups  int    // KV cache groups (1 for a plain model)
	Sliding uint64 // bit g set: group g is a sliding-window group
	// Mamba has bit g set where group g holds Gated DeltaNet (mamba-style)
	// state: one block per request whatever its length (mamba.go).
	Mamba uint64
	// MambaSpecBlocks is the extra state blocks a request holds in each
	// mamba group under speculative decoding: vLLM's MambaSpec keeps one
	// state per draft position (num_speculative_blocks =
	// num_speculative_tokens, counted by max_memory_usage_bytes and
	// MambaManager.get_num_blocks_to_allocate when prefix caching is off).
	MambaSpecBlocks int
	Window          int // the sliding groups' window, tokens
	GroupSize       int // layers per group (vLLM's group_size; the last group of a type may be padding)
	BlockSize       int // tokens per block
	// MaxNumBatchedTokens is --max-num-batched-tokens: during chunked
	// prefill a sliding-window request holds window − 1 computed tokens
	// plus one step's new tokens.
	MaxNumBatchedTokens int
}

// IsSliding reports whether group g is a sliding-window group.
func (l KVCacheLayout) IsSliding(g int) bool { return g < 64 && l.Sliding>>uint(g)&1 == 1 }

// MaxBlocks is the most blocks one request of maxModelLen tokens holds in
// group g at once: vLLM's KVCacheSpec.max_memory_usage_bytes in blocks
// (FullAttentionSpec: cdiv(max_model_len, block_size); SlidingWindowSpec:
// cdiv(min(window − 1 + max_num_batched_tokens, max_model_len),
// block_size) + 1, the +1 for a window that starts inside a block).
func (l KVCacheLayout) MaxBlocks(g, maxModelLen int) int {
	bs := max(l.BlockSize, 1)
	if l.IsMamba(g) {
		return 1 + l.MambaSpecBlocks
	}
	if !l.IsSliding(g) {
		return (maxModelLen + bs - 1) / bs
	}
	return (min(l.Window-1+l.MaxNumBatchedTokens, maxModelLen)+bs-1)/bs + 1
}

// RequestBlocks is MaxBlocks summed over the groups.
func (l KVCacheLayout) RequestBlocks(maxModelLen int) int {
	n := 0
	for g := 0; g < l.Groups; g++ {
		n += l.MaxBlocks(g, maxModelLen)
	}
	return n
}

// MaxConcurrency is vLLM's "Maximum concurrency for L tokens per request"
// (kv_cache_utils.py get_max_concurrency_for_kv_cache_config): the pool's
// blocks over the blocks one request of L tokens holds in all groups.
func (p MemoryPlan) MaxConcurrency(maxModelLen int) float64 {
	if maxModelLen <= 0 {
		return 0
	}
	if p.KVCache.Groups == 0 {
		return float64(p.KVTokens) / float64(maxModelLen)
	}
	return float64(p.NumBlocks) / float64(p.KVCache.RequestBlocks(maxModelLen))
}
