// Package kernel prices one forward step of a vLLM engine: given the shape of
// the batch the scheduler formed, it returns how long the GPU(s) and host take,
// broken down by resource. It also sizes weights, reserves and the KV pool.
// It knows nothing of queues or requests: the engine hands it aggregates.
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
}

// Tokens is the total number of new tokens in the step.
func (b *Batch) Tokens() int { return b.PrefillTokens + b.DecodeTokens }

// Breakdown is a step's time per resource. Total is what the step costs on
// the simulated clock.
type Breakdown struct {
	Compute time.Duration // tensor-core time (GEMMs, attention FLOPs)
	Memory  time.Duration // HBM time (weights, KV reads/writes, activations)
	Comm    time.Duration // collectives (TP all-reduce over NVLink)
	Host    time.Duration // CPU-side scheduling, launch and output processing
	Total   time.Duration
}

// Pricer prices steps for one resolved deployment. Implementations precompute
// everything per deployment so StepTime does no allocation.
type Pricer interface {
	StepTime(b *Batch) Breakdown
	Name() string // e.g. "roofline-v1"
}

// Deployment is what the kernel needs to know about one vLLM replica.
type Deployment struct {
	Model *catalog.Model
	Chip  *catalog.Chip
	TP    int // --tensor-parallel-size

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
	// default min(2 × max-num-seqs, 512)); CaptureSizes, when given,
	// replaces vLLM's default list (compilation_config.cudagraph_capture_sizes).
	MaxCUDAGraphCaptureSize int
	CaptureSizes            []int
	// AsyncScheduling is --async-scheduling: the engine schedules and
	// prepares step N+1 while the GPU runs step N.
	AsyncScheduling bool
	// ExpertParallel is --enable-expert-parallel with one DP rank: the TP
	// group's GPUs each hold 1/TP of the experts whole instead of 1/TP of
	// every expert (vllm/model_executor/layers/fused_moe/layer.py), the
	// same bytes per GPU; the MoE output is all-reduced over the same group.
	ExpertParallel bool
}

// CUDA-graph modes (vllm/config/compilation.py CUDAGraphMode).
var CUDAGraphModes = []string{"FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "NONE"}

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
	KVTokens        int     // NumBlocks × block size ("GPU KV cache size: N tokens")
	Overridden      bool    // NumBlocks came from --num-gpu-blocks-override
}

// MaxConcurrency is vLLM's "Maximum concurrency for L tokens per request".
func (p MemoryPlan) MaxConcurrency(maxModelLen int) float64 {
	if maxModelLen <= 0 {
		return 0
	}
	return float64(p.KVTokens) / float64(maxModelLen)
}
