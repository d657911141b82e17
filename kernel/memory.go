package kernel

import (
	"fmt"
	"math"
	"slices"

	"blis/catalog"
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
//	num_blocks = floor(KV bytes / (block_size × KV bytes per token))            one KV cache group
//	num_blocks = floor(KV bytes / (block_size × group_size × per-layer bytes))  full + sliding groups
//	tokens     = num_blocks ÷ groups × block_size                               ("GPU KV cache size")
//
// The activation peak is that of the profile run (a dummy forward of
// max-num-batched-tokens tokens, then the sampler on min(max-num-seqs,
// max-num-batched-tokens) rows), estimated from the shapes as
//
//	max(forward, sampler) with
//	forward = T × dtype × (2·hidden + max(attention widths, MLP widths)) per rank
//	sampler = SamplerLogitsCopies × R × vocab × 4 B + T × hidden × dtype (the forward's output, still held)
//
// The KV bytes are split into blocks as vLLM's KV cache manager does (see
// kvLayout): one group of all layers for a plain model; for a model mixing
// full-attention and sliding-window layers, groups of group_size layers
// sharing one pool of blocks, each block one page of every layer in a group.
// The fit check and the maximum concurrency count one max-model-len
// request's blocks in every group, a sliding group's bounded by its window.
//
// With --pipeline-parallel-size each stage's GPUs hold only that stage's
// layers (its weights and KV), and vLLM's engine core gives every stage the
// fewest blocks any stage has room for (vllm/v1/core/kv_cache_utils.py
// get_kv_cache_configs): the plan returned is that stage's.
func PlanMemoryWith(d Deployment, a MemoryAssumptions) (MemoryPlan, error) {
	if err := Validate(d); err != nil {
		return MemoryPlan{}, err
	}
	if d.ppSize() == 1 {
		return planStage(d, a)
	}
	var best MemoryPlan
	for i := 0; i < d.ppSize(); i++ {
		ds := d
		ds.PPStage = i
		p, err := planStage(ds, a)
		p.PPStage = i
		if err != nil {
			return p, fmt.Errorf("pipeline stage %d of %d: %w", i+1, d.ppSize(), err)
		}
		if i == 0 || p.NumBlocks < best.NumBlocks {
			best = p
		}
	}
	return best, nil
}

// planStage is PlanMemoryWith for one pipeline stage (the whole model
// without pipeline parallelism).
func planStage(d Deployment, a MemoryAssumptions) (MemoryPlan, error) {
	s := newShape(d)
	var p MemoryPlan
	p.TotalBytes = d.Chip.VisibleMemBytes
	p.BudgetBytes = d.GPUMemoryUtilization * p.TotalBytes
	p.WeightBytes = s.weightBytes() + EngramGPUBytes(d) + engramProjBytes(d)
	p.ActivationBytes = s.activationPeak(d, a)
	p.NonTorchBytes = a.NonTorchBytes
	p.NCCLBytes = d.Chip.NCCLBytes(d.TP)
	if d.Model.IsMoE() && d.dpSize() > 1 {
		// The MoE layers' collectives span the whole DP × TP group.
		p.NCCLBytes = d.Chip.NCCLBytes(d.TP * d.dpSize())
	}
	if !d.EnforceEager {
		p.CUDAGraphBytes = a.CUDAGraphBytes
	}
	// The speculative draft's weights and KV layers (draftMemory).
	draftW, draftKV, draftLayers, err := draftMemory(d)
	if err != nil {
		return p, err
	}
	p.WeightBytes += draftW
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
	kv := newKVLayout(d, s)
	if d.Model.IsDSV4() {
		p.KVNote = dsv4KVNote(d, kv)
	}
	if draftKV > 0 && kv.layout.Groups == 1 {
		// The draft's attention layers join the target's one KV cache
		// group (same spec; a draft model of another attention shape is
		// sized here as if it did). With several groups (full and sliding
		// layers) the draft's layers are left out of the pool's sizing.
		p.KVBytesPerToken += draftKV
		kv.blockBytes += float64(d.BlockSize) * draftKV
		kv.layout.GroupSize += draftLayers
	}
	p.KVCache = kv.layout
	p.BlockBytes = kv.blockBytes
	// vLLM checks that one request of max_model_len fits before sizing the
	// pool, override or not, and refuses to start otherwise, with this
	// message (vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory,
	// main @ 001cabc1be16; the estimate is estimate_max_model_len's).
	if need := kv.requestBytes(d.MaxModelLen); need > p.KVBytes {
		estimate := ""
		if fitLen := kv.maxLenThatFits(p.KVBytes, d.MaxModelLen); fitLen > 0 {
			estimate = fmt.Sprintf("Based on the available memory, the estimated maximum model length is %d. ", fitLen)
		}
		return p, fmt.Errorf("--max-model-len %d: To serve at least one request with the models's max seq len (%d), (%.2f GiB KV cache is needed, "+
			"which is larger than the available KV cache memory (%.2f GiB). %sTry increasing `gpu_memory_utilization` or decreasing `max_model_len` "+
			"when initializing the engine. [%s on %d × %s, per GPU: budget %.2f GiB − weights %.2f GiB − activations %.2f GiB − other %.2f GiB; "+
			"a larger --tensor-parallel-size also helps]",
			d.MaxModelLen, d.MaxModelLen, need/gib, p.KVBytes/gib, estimate,
			d.Model.ID, d.TP*d.dpSize(), d.Chip.Name, p.BudgetBytes/gib, p.WeightBytes/gib, p.ActivationBytes/gib,
			(p.NonTorchBytes+p.NCCLBytes+p.CUDAGraphBytes)/gib)
	}
	p.NumBlocks = int(math.Floor(p.KVBytes / kv.blockBytes))
	if d.NumGPUBlocksOverride > 0 {
		// vLLM takes the override as given (may_override_num_blocks) and
		// allocates its KV tensors after the profile run has freed the
		// activations; a pool larger than what the GPU has left beside the
		// weights, CUDA graphs and other buffers fails there with CUDA out
		// of memory. Float arithmetic: no override overflows it.
		free := p.TotalBytes - p.WeightBytes - p.NonTorchBytes - p.NCCLBytes - p.CUDAGraphBytes
		if need := float64(d.NumGPUBlocksOverride) * kv.blockBytes; need > free {
			return p, fmt.Errorf("--num-gpu-blocks-override %d: a KV pool of %d blocks needs %.2f GiB per GPU, more than the %.2f GiB %s has "+
				"beside the weights (%.2f GiB), CUDA graphs and other buffers (%.2f GiB); vLLM's KV cache allocation would fail with CUDA out of memory. "+
				"At most %d blocks fit (the memory plan sizes %d)",
				d.NumGPUBlocksOverride, d.NumGPUBlocksOverride, need/gib, free/gib, d.Chip.Name, p.WeightBytes/gib,
				(p.NonTorchBytes+p.NCCLBytes+p.CUDAGraphBytes)/gib, int64(free/kv.blockBytes), p.NumBlocks)
		}
		p.NumBlocks, p.Overridden = d.NumGPUBlocksOverride, true
	}
	// _report_kv_cache_config: num_blocks // len(kv_cache_groups) × block_size.
	p.KVTokens = p.NumBlocks / kv.layout.Groups * d.BlockSize
	if d.Model.IsDSV4() {
		// For compressed attention vLLM reports the GPU KV cache size as
		// the maximum concurrency × max_model_len (vllm-project/vllm#51041).
		p.KVTokens = int(p.MaxConcurrency(d.MaxModelLen) * float64(d.MaxModelLen))
	}
	return p, nil
}

// kvLayout is how vLLM's KV cache manager lays the pool out, mirrored from
// vllm/v1/core/kv_cache_utils.py (main at 001cabc1be16):
// get_kv_cache_groups, _get_kv_cache_groups_uniform_page_size,
// get_kv_cache_config_from_groups and _max_memory_usage_bytes_from_groups.
//
// When every attention layer has the same spec (all full attention, or all
// the same sliding window: Mistral-style), there is one group of all layers
// and a block is one page of every layer. When full-attention and
// sliding-window layers mix (gpt-oss: window 128 on every other layer),
// layers are grouped by spec in order of first appearance, each type split
// into groups of group_size layers (the smallest type's count, or the
// largest's when that is under 1.5× the smallest; the last group of a type
// is padded), and every group draws from one pool of
//
//	num_blocks = available // (block_size × per-layer bytes per token) // group_size
//
// blocks; each request holds blocks in every group.
type kvLayout struct {
	layout     KVCacheLayout
	blockBytes float64 // bytes one block takes on this rank (over group_size layers, or all layers for one group)
}

func newKVLayout(d Deployment, s shape) kvLayout {
	if d.Model.IsHybridLinear() {
		return mambaKVLayout(d, s) // Gated DeltaNet state groups (mamba.go)
	}
	if d.Model.IsDSV4() {
		return dsv4KVLayout(d) // compressed caches and windows (dsv4.go)
	}
	bs := d.BlockSize
	windows, uniformBytes := layerWindows(d, s)
	// Distinct windows in order of first appearance and their layer counts.
	var types, counts []int
	for _, w := range windows {
		i := 0
		for i < len(types) && types[i] != w {
			i++
		}
		if i == len(types) {
			types, counts = append(types, w), append(counts, 0)
		}
		counts[i]++
	}
	one := kvLayout{
		layout:     KVCacheLayout{Groups: 1, GroupSize: len(windows), BlockSize: bs, MaxNumBatchedTokens: d.MaxNumBatchedTokens},
		blockBytes: float64(bs) * s.kvBytesPerToken(),
	}
	if len(types) == 1 && types[0] > 0 {
		// All layers slide with one window (Mistral-style): one group.
		one.layout.Sliding, one.layout.Window = 1, types[0]
	}
	// One group of all layers: is_kv_cache_spec_uniform, or
	// UniformTypeKVCacheSpecs. Mixed types whose per-layer sizes differ
	// (vLLM's page-size unification), more than one sliding window (which
	// vLLM's hybrid coordinator refuses) or over 64 groups are not
	// modelled; no catalog model has them, and they are sized as one
	// group of full-attention layers.
	nonFull := len(types)
	if slices.Contains(types, 0) {
		nonFull--
	}
	if len(types) <= 1 || !uniformBytes || nonFull > 1 {
		return one
	}
	size := kvGroupSize(counts...)
	l := KVCacheLayout{GroupSize: size, BlockSize: bs, MaxNumBatchedTokens: d.MaxNumBatchedTokens}
	for i, w := range types {
		for n := (counts[i] + size - 1) / size; n > 0; n-- {
			if l.Groups == 64 {
				return one
			}
			if w > 0 {
				l.Sliding |= 1 << uint(l.Groups)
				l.Window = w
			}
			l.Groups++
		}
	}
	return kvLayout{layout: l, blockBytes: float64(bs) * float64(size) * s.kvBytesLayer}
}

// kvGroupSize is _get_kv_cache_groups_uniform_page_size's group_size for
// layer types of the given counts: the smallest count, or the largest when
// that is under 1.5× the smallest.
func kvGroupSize(counts ...int) int {
	lo, hi := slices.Min(counts), slices.Max(counts)
	if float64(hi) < 1.5*float64(lo) {
		return hi
	}
	return lo
}

// requestBytes is the KV memory one request of maxLen tokens needs at most,
// over all groups (_max_memory_usage_bytes_from_groups).
func (k kvLayout) requestBytes(maxLen int) float64 {
	return float64(k.layout.RequestBlocks(maxLen)) * k.blockBytes
}

// maxLenThatFits is vLLM's estimate_max_model_len: the largest length whose
// request fits in kvBytes (0 when not even one token does).
func (k kvLayout) maxLenThatFits(kvBytes float64, maxLen int) int {
	lo, hi, best := 1, maxLen, 0
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if k.requestBytes(mid) <= kvBytes {
			best, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	return best
}

// layerWindows lists every attention layer's sliding window (0: full
// attention), bottom to top, from the model's operator graph (which knows
// whether vLLM's model file honours the config's window), and whether all
// layers add the same KV bytes per token on this rank.
func layerWindows(d Deployment, s shape) ([]int, bool) {
	g, err := catalog.LookupGraph(d.Model.ID)
	if err != nil {
		// No stored graph (a model built in a test): the config's own table.
		start, end := d.stageLayers()
		w := make([]int, end-start)
		for i := range w {
			if j := start + i; j < len(d.Model.SlidingLayers) && d.Model.SlidingLayers[j] {
				w[i] = d.Model.SlidingWindow
			}
		}
		return w, true
	}
	var w []int
	elems, uniform := -1, true
	// Every layer's kind, or only the pipeline stage's.
	var names []string
	if d.ppSize() > 1 {
		names = stageLayerKinds(d, g)
	} else {
		names = g.LayerKinds()
	}
	for _, name := range names {
		k := g.Kind(name)
		if k == nil {
			continue
		}
		a := k.Attention()
		if a == nil {
			continue
		}
		w = append(w, a.Window)
		if e := a.KVCacheElemsPerRank(d.TP); elems < 0 {
			elems = e
		} else if e != elems {
			uniform = false
		}
	}
	if len(w) == 0 {
		return make([]int, int(s.L)), true
	}
	return w, uniform
}

// activationPeak is the profile run's peak of PyTorch allocations beyond the
// weights (see PlanMemoryWith for the formula).
func (s shape) activationPeak(d Deployment, a MemoryAssumptions) float64 {
	T := float64(d.MaxNumBatchedTokens)
	R := float64(min(d.MaxNumSeqs, d.MaxNumBatchedTokens))
	attn := s.qkvOut + s.attnOut
	forward := T * s.dtypeB * (2*s.H + math.Max(attn, s.mlpWidth))
	sampler := a.SamplerLogitsCopies*R*float64(s.m.VocabSize)*4 + T*s.H*s.dtypeB
	if !d.lastStage() {
		sampler = 0 // only the last pipeline stage samples
	}
	if s.m.IsDSV4() {
		// DeepSeek-V4's prefill kv-gather workspace, reserved by the
		// profile run and held (dsv4Workspace).
		return math.Max(forward, sampler) + dsv4Workspace(d)
	}
	return math.Max(forward, sampler)
}
