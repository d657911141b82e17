package kernel

import (
	"fmt"
	"math"
)

const gib = 1 << 30

// MemoryAssumptions are the constants of the start-up memory model that the
// model's shapes do not give. Each carries its source.
type MemoryAssumptions struct {
	// SamplerLogitsCopies is how many float32 [max_num_seqs × vocab] buffers
	// are live at the peak of the profile run's sampler pass (logits, the
	// float32 copy, temperature-scaled and softmax copies, top-k/top-p sort
	// values and int64 indices, logprobs). 9.6: in the public H100 profiling
	// table (vLLM v0.11.0, max-num-seqs 1024, max-num-batched-tokens 8192;
	// search index id 27349653019), (torch peak increase − tokens × hidden ×
	// 2 B) / (1024 × vocab × 4 B) is 9.60 for Llama-3.1-8B, 9.57 for
	// Qwen3-0.6B and Qwen3-32B, 9.56 for gpt-oss-120b.
	SamplerLogitsCopies float64
	// NonTorchBytes is memory the profile run allocates outside PyTorch's
	// allocator on one GPU (CUDA context growth, cuBLAS workspaces): 0.13 GiB
	// at TP 1 for every model in the same table. NCCL buffers for TP > 1
	// come from the chip (aiconfigurator's nccl_mem).
	NonTorchBytes float64
	// CUDAGraphBytes is vLLM's estimate of CUDA-graph memory, subtracted at
	// start-up since v0.21 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by
	// default; 0 with --enforce-eager). 0.42 GiB: the mean of the two
	// estimates seen in public logs, 0.36 GiB (gpustack/runner#251, vLLM
	// 0.27.1) and 0.48 GiB (Qwen2.5-7B-AWQ, kv_cache_facts.csv notes).
	CUDAGraphBytes float64
}

// DefaultMemoryAssumptions are the values PlanMemory uses.
var DefaultMemoryAssumptions = MemoryAssumptions{
	SamplerLogitsCopies: 9.6,
	NonTorchBytes:       0.13 * gib,
	CUDAGraphBytes:      0.42 * gib,
}

// PlanMemory sizes one replica's memory the way vLLM's V1 start-up does
// (vLLM v0.21+: vllm/v1/worker/gpu_worker.py Worker.determine_available_memory
// and vllm/v1/core/kv_cache_utils.py get_num_blocks /
// check_enough_kv_cache_memory), with the default MemoryAssumptions.
func PlanMemory(d Deployment) (MemoryPlan, error) {
	return PlanMemoryWith(d, DefaultMemoryAssumptions)
}

// PlanMemoryWith is PlanMemory with explicit assumptions.
//
//	budget     = gpu_memory_utilization × total (CUDA's total, what torch.cuda.mem_get_info reports)
//	KV bytes   = budget − weights − activation peak − non-torch − NCCL − CUDA graphs
//	num_blocks = floor(KV bytes / (block_size × KV bytes per token))
//
// The activation peak is that of the profile run (a dummy forward of
// max-num-batched-tokens tokens, then the sampler on min(max-num-seqs,
// max-num-batched-tokens) rows), estimated from the shapes as
//
//	max(forward, sampler) with
//	forward = T × dtype × (2·hidden + max(attention widths, MLP widths)) per rank
//	sampler = SamplerLogitsCopies × R × vocab × 4 B + T × hidden × dtype (the forward's output, still held)
//
// Sliding-window layers are sized as full-attention layers in this first
// version: vLLM's hybrid allocator gives them fewer blocks, so the pool of a
// model such as gpt-oss is underestimated.
func PlanMemoryWith(d Deployment, a MemoryAssumptions) (MemoryPlan, error) {
	if err := Validate(d); err != nil {
		return MemoryPlan{}, err
	}
	s := newShape(d)
	var p MemoryPlan
	p.TotalBytes = d.Chip.VisibleMemBytes
	p.BudgetBytes = d.GPUMemoryUtilization * p.TotalBytes
	p.WeightBytes = s.weightBytes()
	p.ActivationBytes = s.activationPeak(d, a)
	p.NonTorchBytes = a.NonTorchBytes
	p.NCCLBytes = d.Chip.NCCLBytes(d.TP)
	if !d.EnforceEager {
		p.CUDAGraphBytes = a.CUDAGraphBytes
	}
	p.KVBytes = p.BudgetBytes - p.WeightBytes - p.ActivationBytes - p.NonTorchBytes - p.NCCLBytes - p.CUDAGraphBytes
	p.KVBytesPerToken = s.kvBytesPerToken()

	if p.KVBytes <= 0 {
		return p, fmt.Errorf("%s does not fit on %s with --tensor-parallel-size %d and --gpu-memory-utilization %g: "+
			"per GPU, %.2f GiB budget (of %.2f GiB) − %.2f GiB weights − %.2f GiB activations − %.2f GiB non-torch, NCCL and CUDA graphs "+
			"leaves %.2f GiB for the KV cache; use a larger --tensor-parallel-size or a higher --gpu-memory-utilization "+
			"(a smaller --max-num-seqs or --max-num-batched-tokens shrinks the activation peak)",
			d.Model.ID, d.Chip.Name, d.TP, d.GPUMemoryUtilization,
			p.BudgetBytes/gib, p.TotalBytes/gib, p.WeightBytes/gib, p.ActivationBytes/gib,
			(p.NonTorchBytes+p.NCCLBytes+p.CUDAGraphBytes)/gib, p.KVBytes/gib)
	}
	// vLLM checks that one request of max_model_len fits before sizing the
	// pool (check_enough_kv_cache_memory), override or not.
	if need := float64(d.MaxModelLen) * p.KVBytesPerToken; need > p.KVBytes {
		fitLen := int(p.KVBytes / p.KVBytesPerToken)
		return p, fmt.Errorf("%s on %d × %s: one request of --max-model-len %d needs %.2f GiB of KV cache per GPU, "+
			"more than the %.2f GiB left (budget %.2f GiB − weights %.2f GiB − activations %.2f GiB − other %.2f GiB); "+
			"the largest --max-model-len that fits is %d; use a smaller --max-model-len, a larger --tensor-parallel-size "+
			"or a higher --gpu-memory-utilization",
			d.Model.ID, d.TP, d.Chip.Name, d.MaxModelLen, need/gib, p.KVBytes/gib,
			p.BudgetBytes/gib, p.WeightBytes/gib, p.ActivationBytes/gib,
			(p.NonTorchBytes+p.NCCLBytes+p.CUDAGraphBytes)/gib, fitLen)
	}
	p.NumBlocks = int(math.Floor(p.KVBytes / (float64(d.BlockSize) * p.KVBytesPerToken)))
	if d.NumGPUBlocksOverride > 0 {
		p.NumBlocks, p.Overridden = d.NumGPUBlocksOverride, true
	}
	p.KVTokens = p.NumBlocks * d.BlockSize
	return p, nil
}

// activationPeak is the profile run's peak of PyTorch allocations beyond the
// weights (see PlanMemoryWith for the formula).
func (s shape) activationPeak(d Deployment, a MemoryAssumptions) float64 {
	T := float64(d.MaxNumBatchedTokens)
	R := float64(min(d.MaxNumSeqs, d.MaxNumBatchedTokens))
	attn := s.qkvOut + s.attnOut
	forward := T * s.dtypeB * (2*s.H + math.Max(attn, s.mlpWidth))
	sampler := a.SamplerLogitsCopies*R*float64(s.m.VocabSize)*4 + T*s.H*s.dtypeB
	return math.Max(forward, sampler)
}
