package kernel

import (
	"math"
	"strings"
	"testing"

	"blis/catalog"
)

func TestPlanMemoryArithmetic(t *testing.T) {
	d := deploy(t, "llama-3.1-8b", "h100", 1)
	p, err := PlanMemory(d)
	if err != nil {
		t.Fatal(err)
	}
	a := DefaultMemoryAssumptions
	if p.TotalBytes != d.Chip.VisibleMemBytes || p.BudgetBytes != 0.9*d.Chip.VisibleMemBytes {
		t.Errorf("total %g budget %g", p.TotalBytes, p.BudgetBytes)
	}
	if p.NonTorchBytes != a.NonTorchBytes || p.CUDAGraphBytes != a.CUDAGraphBytes || p.NCCLBytes != 0 {
		t.Errorf("reserves: non-torch %g, graphs %g, NCCL %g", p.NonTorchBytes, p.CUDAGraphBytes, p.NCCLBytes)
	}
	left := p.BudgetBytes - p.WeightBytes - p.ActivationBytes - p.NonTorchBytes - p.NCCLBytes - p.CUDAGraphBytes
	if math.Abs(p.KVBytes-left) > 1 {
		t.Errorf("KVBytes %g, want %g", p.KVBytes, left)
	}
	if p.KVBytesPerToken != 131072 {
		t.Errorf("KVBytesPerToken %g", p.KVBytesPerToken)
	}
	if want := int(p.KVBytes / (16 * 131072)); p.NumBlocks != want || p.KVTokens != 16*want || p.Overridden {
		t.Errorf("blocks %d tokens %d, want %d blocks", p.NumBlocks, p.KVTokens, want)
	}
	// Sampler-bound profile peak: 9.6 × 1024 rows × 128256 × 4 B + 8192 × 4096 × 2 B.
	if want := 9.6*1024*128256*4 + 8192*4096*2.0; math.Abs(p.ActivationBytes-want) > 1 {
		t.Errorf("activation %g, want %g", p.ActivationBytes, want)
	}
	if c := p.MaxConcurrency(d.MaxModelLen); c != float64(p.KVTokens)/float64(d.MaxModelLen) {
		t.Errorf("MaxConcurrency %g", c)
	}
}

func TestPlanMemoryKnobs(t *testing.T) {
	base := deploy(t, "llama-3.1-8b", "h100", 1)
	p0, err := PlanMemory(base)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("override", func(t *testing.T) {
		d := base
		d.NumGPUBlocksOverride = 1000
		p, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		if p.NumBlocks != 1000 || p.KVTokens != 16000 || !p.Overridden || p.KVBytes != p0.KVBytes {
			t.Errorf("%+v", p)
		}
	})
	t.Run("enforce eager frees the graph reserve", func(t *testing.T) {
		d := base
		d.EnforceEager = true
		p, _ := PlanMemory(d)
		if p.CUDAGraphBytes != 0 || math.Abs(p.KVBytes-p0.KVBytes-p0.CUDAGraphBytes) > 1 {
			t.Errorf("graphs %g, KV %g vs %g", p.CUDAGraphBytes, p.KVBytes, p0.KVBytes)
		}
	})
	t.Run("fp8 kv doubles the tokens", func(t *testing.T) {
		d := base
		d.KVCacheDtype = "fp8"
		p, _ := PlanMemory(d)
		if p.KVBytes != p0.KVBytes || p.NumBlocks < 2*p0.NumBlocks || p.NumBlocks > 2*p0.NumBlocks+1 {
			t.Errorf("blocks %d vs %d", p.NumBlocks, p0.NumBlocks)
		}
	})
	t.Run("lower utilization", func(t *testing.T) {
		d := base
		d.GPUMemoryUtilization = 0.5
		p, _ := PlanMemory(d)
		if p.KVBytes >= p0.KVBytes || math.Abs(p0.KVBytes-p.KVBytes-0.4*p0.TotalBytes) > 1 {
			t.Errorf("KV %g vs %g", p.KVBytes, p0.KVBytes)
		}
	})
	t.Run("tp2 adds NCCL and halves weights", func(t *testing.T) {
		d := base
		d.TP = 2
		p, _ := PlanMemory(d)
		if p.NCCLBytes != d.Chip.NCCLBytes(2) || p.NCCLBytes == 0 || math.Abs(p.WeightBytes/p0.WeightBytes-0.5) > 0.01 {
			t.Errorf("NCCL %g, weights %g vs %g", p.NCCLBytes, p.WeightBytes, p0.WeightBytes)
		}
		if p.KVTokens <= 2*p0.KVTokens {
			t.Errorf("TP2 pool %d tokens, TP1 %d", p.KVTokens, p0.KVTokens)
		}
	})
}

// An override is taken as given up to what the GPU holds beside the
// weights and buffers (vLLM's KV allocation), even above the memory plan's
// pool, and refused past it.
func TestOverrideBoundedByGPUMemory(t *testing.T) {
	d := deploy(t, "llama-3.1-8b", "h100", 1)
	p, err := PlanMemory(d)
	if err != nil {
		t.Fatal(err)
	}
	d.NumGPUBlocksOverride = p.NumBlocks + p.NumBlocks/20 // 5 % over the 0.9 budget: still fits the GPU
	if q, err := PlanMemory(d); err != nil || q.NumBlocks != d.NumGPUBlocksOverride {
		t.Fatalf("override %d: %v, %d blocks", d.NumGPUBlocksOverride, err, q.NumBlocks)
	}
	d.NumGPUBlocksOverride = p.NumBlocks * 2
	if _, err := PlanMemory(d); err == nil || !strings.Contains(err.Error(), "CUDA out of memory") {
		t.Fatalf("override %d: %v", d.NumGPUBlocksOverride, err)
	}
}

func TestPlanMemoryDoesNotFit(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		tp     int
		change func(*Deployment)
		want   []string
	}{
		{"llama-70b on one h100", "llama-3.1-70b", 1, func(*Deployment) {},
			[]string{"meta-llama/Llama-3.1-70B does not fit on h100", "GiB weights", "--tensor-parallel-size", "--gpu-memory-utilization"}},
		{"deepseek-v3 on 4 h100", "deepseek-v3", 4, func(*Deployment) {}, []string{"does not fit"}},
		{"qwen3-32b at full context on one h100", "qwen3-32b", 1, func(d *Deployment) { d.MaxModelLen = 40960 },
			[]string{"--max-model-len 40960: To serve at least one request with the models's max seq len (40960), (10.00 GiB KV cache is needed",
				"Based on the available memory, the estimated maximum model length is", "decreasing `max_model_len`"}},
		{"override does not bypass the check", "llama-3.1-70b", 1, func(d *Deployment) { d.NumGPUBlocksOverride = 10 }, []string{"does not fit"}},
		{"override beyond the GPU's memory", "llama-3.1-8b", 1, func(d *Deployment) { d.NumGPUBlocksOverride = 2_000_000_000 },
			[]string{"--num-gpu-blocks-override 2000000000: a KV pool of 2000000000 blocks needs 3906250.00 GiB per GPU", "At most 32588 blocks fit (the memory plan sizes 26097)", "CUDA out of memory", "At most"}},
		{"override near the int64 limit", "llama-3.1-8b", 1, func(d *Deployment) { d.NumGPUBlocksOverride = 9_000_000_000_000_000_000 },
			[]string{"--num-gpu-blocks-override 9000000000000000000", "CUDA out of memory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(t, tt.model, "h100", tt.tp)
			tt.change(&d)
			_, err := PlanMemory(d)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The memory model against vLLM's own start-up numbers. Note that
// SamplerLogitsCopies and NonTorchBytes were read off this same table, so
// the activation term agrees by construction; what this checks independently
// is the weight count per rank, the budget and the reserve arithmetic.
func TestPlanMemoryAgainstPublishedStartups(t *testing.T) {
	// vLLM v0.11.0 on H100, --max-model-len 16000, block size 128, util 0.9,
	// serve defaults (max-num-seqs 1024, max-num-batched-tokens 8192); v0.11
	// does not reserve CUDA-graph memory before sizing the pool. Source: the
	// public profiling table "vLLM Empirical Memory Profiling Results"
	// (search index id 27349653019); KV GiB is "Available KV cache memory".
	v011 := DefaultMemoryAssumptions
	v011.CUDAGraphBytes = 0
	tests := []struct {
		model  string
		tp     int
		kvGiB  float64
		relTol float64
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", 1, 51.38, 0.01},
		{"Qwen/Qwen3-0.6B", 1, 64.45, 0.01},
		{"Qwen/Qwen3-32B", 1, 4.45, 0.03},
		{"Qwen/Qwen3-32B", 2, 34.49, 0.01},
		// The table's run is RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic, the
		// same FP8 layout as NVIDIA's checkpoint.
		{"nvidia/Llama-3.3-70B-Instruct-FP8", 2, 32.00, 0.01},
	}
	for _, tt := range tests {
		d := deploy(t, tt.model, "h100", tt.tp)
		d.MaxModelLen, d.BlockSize = 16000, 128
		p, err := PlanMemoryWith(d, v011)
		if err != nil {
			t.Fatalf("%s: %v", tt.model, err)
		}
		got := p.KVBytes / gib
		t.Logf("%s TP%d: KV %.2f GiB, vLLM %.2f GiB (ratio %.3f)", tt.model, tt.tp, got, tt.kvGiB, got/tt.kvGiB)
		if math.Abs(got/tt.kvGiB-1) > tt.relTol {
			t.Errorf("%s TP%d: KV %.2f GiB, vLLM logged %.2f GiB", tt.model, tt.tp, got, tt.kvGiB)
		}
	}
}

// TestKVCacheGroupLayout checks the pool layout against vLLM's grouping
// rules (kv_cache_utils.py _get_kv_cache_groups_uniform_page_size): groups
// in order of first appearance, group_size the smallest type's layer count
// (the largest's when under 1.5× the smallest), one pool of
// available // (block_size × per-layer bytes) // group_size blocks, reported
// tokens num_blocks // groups × block_size, and the maximum concurrency
// num_blocks / Σ per-group blocks of one max-model-len request.
func TestKVCacheGroupLayout(t *testing.T) {
	// synth is Llama-3.1-8B with a layer pattern ('f' full, 's' sliding);
	// its ID has no stored graph, so the config's table is read.
	synth := func(pattern string, window int) func(*testing.T) Deployment {
		return func(t *testing.T) Deployment {
			d := deploy(t, "llama-3.1-8b", "h100", 1)
			m := *d.Model
			m.ID, m.NumLayers, m.SlidingWindow = "test/"+pattern, len(pattern), window
			m.SlidingLayers = make([]bool, len(pattern))
			for i, c := range pattern {
				m.SlidingLayers[i] = c == 's'
			}
			m.SlidingWindowLayers = strings.Count(pattern, "s")
			d.Model = &m
			return d
		}
	}
	real := func(model string, tp int) func(*testing.T) Deployment {
		return func(t *testing.T) Deployment {
			d := deploy(t, model, "h200", tp)
			d.MaxModelLen = 131072
			return d
		}
	}
	tests := []struct {
		name   string
		d      func(*testing.T) Deployment
		kinds  string // per group in order: 'f' full attention, 's' sliding
		window int
		size   int // group_size: layers one block spans
	}{
		{"llama-3.1-8b", real("llama-3.1-8b", 1), "f", 0, 32},
		// gpt-oss: layer 0 slides, so the sliding group comes first.
		{"gpt-oss-120b", real("gpt-oss-120b", 1), "sf", 128, 18},
		{"gpt-oss-20b tp2", real("gpt-oss-20b", 2), "sf", 128, 12},
		// 3 sliding : 1 full (Llama-4 style): group_size 8, three sliding groups.
		{"8 full + 24 sliding", synth(strings.Repeat("fsss", 8), 512), "fsss", 512, 8},
		// 12 sliding + 13 full (gpt-oss-20b + EAGLE in vLLM's comment):
		// group_size 13, the sliding group padded.
		{"12 sliding + 13 full", synth(strings.Repeat("sf", 12)+"f", 128), "sf", 128, 13},
		// 20 full + 30 sliding: 30 is not under 1.5 × 20, so group_size 20
		// and the sliding layers split into two groups of 15 (padded to 20).
		{"20 full + 30 sliding", synth(strings.Repeat("ffsss", 10), 4096), "fss", 4096, 20},
		// All layers sliding (Mistral-style): one group of all layers.
		{"all sliding", synth(strings.Repeat("s", 32), 4096), "s", 4096, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d(t)
			p, err := PlanMemory(d)
			if err != nil {
				t.Fatal(err)
			}
			want := KVCacheLayout{Groups: len(tt.kinds), GroupSize: tt.size, BlockSize: 16, MaxNumBatchedTokens: d.MaxNumBatchedTokens}
			per := 0 // blocks one max-model-len request holds
			for g, k := range tt.kinds {
				if k == 's' {
					want.Sliding |= 1 << uint(g)
					want.Window = tt.window
					per += (min(tt.window-1+d.MaxNumBatchedTokens, d.MaxModelLen)+15)/16 + 1
				} else {
					per += (d.MaxModelLen + 15) / 16
				}
			}
			if p.KVCache != want {
				t.Fatalf("layout %+v, want %+v", p.KVCache, want)
			}
			perLayer := p.KVBytesPerToken / float64(d.Model.NumLayers)
			if want := int(p.KVBytes / (16 * float64(tt.size) * perLayer)); p.NumBlocks != want {
				t.Errorf("num_blocks %d, want %d", p.NumBlocks, want)
			}
			if want := p.NumBlocks / len(tt.kinds) * 16; p.KVTokens != want {
				t.Errorf("tokens %d, want %d", p.KVTokens, want)
			}
			if want := float64(p.NumBlocks) / float64(per); p.MaxConcurrency(d.MaxModelLen) != want {
				t.Errorf("max concurrency %g, want %g", p.MaxConcurrency(d.MaxModelLen), want)
			}
			t.Logf("%d blocks of %d layers, %d tokens, %.2fx at %d", p.NumBlocks, tt.size, p.KVTokens, p.MaxConcurrency(d.MaxModelLen), d.MaxModelLen)
		})
	}
}

// TestGptOss120bMemoryReport: the start-up report for gpt-oss-120b, whose
// 36 layers alternate a 128-token sliding window and full attention
// (vLLM: two KV cache groups of 18 layers, a block 16 tokens × 18 layers ×
// 8 KV heads × 64 × 2 (K, V) × 2 B = 589,824 B).
//
// Public vLLM logs of gpt-oss-120b on H100 report memory, not the KV token
// count: "Model loading took 65.9651 GiB" (vllm#23278, Aug 2025, Marlin
// MXFP4 MoE, which pads each expert to intermediate 2944 and hidden 3072
// (vllm/model_executor/layers/quantization/mxfp4.py): 65.8 GiB by the same
// count as BLIS), "64.38 GiB" (vllm#33155, v0.14.1, Triton MXFP4 MoE), and
// with --gpu-memory-utilization 0.95 --max-num-batched-tokens 1024
// "Available KV cache memory: 1.71 GiB", too little for one 131,072-token
// request (vllm#27508, v0.11). BLIS counts the checkpoint's unpadded
// experts (60.71 GiB), so it leaves 3.7–5.3 GiB more for the KV cache than
// those runs; the backend-dependent MoE padding is not modelled.
func TestGptOss120bMemoryReport(t *testing.T) {
	d := deploy(t, "gpt-oss-120b", "h200", 1)
	d.MaxModelLen = 131072
	p, err := PlanMemory(d)
	if err != nil {
		t.Fatal(err)
	}
	const block = 16 * 18 * 2048
	if p.KVBytesPerToken != 36*2048 {
		t.Fatalf("KV bytes per token %g", p.KVBytesPerToken)
	}
	blocks := int(p.KVBytes / block)
	// One request of 131,072 tokens: 8192 full blocks + ⌈(127 + 8192)/16⌉ + 1 = 521 sliding.
	if p.NumBlocks != blocks || p.KVTokens != blocks/2*16 || p.MaxConcurrency(131072) != float64(blocks)/8713 {
		t.Fatalf("%d blocks, %d tokens, %.2fx; want %d, %d, %.2fx", p.NumBlocks, p.KVTokens, p.MaxConcurrency(131072), blocks, blocks/2*16, float64(blocks)/8713)
	}
	t.Logf("H200: KV %.2f GiB, %d blocks, GPU KV cache size %d tokens, maximum concurrency %.2fx at 131,072",
		p.KVBytes/gib, p.NumBlocks, p.KVTokens, p.MaxConcurrency(131072))

	// One H100 at vLLM's defaults: one 131,072-token request needs 8713
	// blocks = 4.79 GiB, more than the 2.60 GiB left.
	d = deploy(t, "gpt-oss-120b", "h100", 1)
	d.MaxModelLen = 131072
	if _, err := PlanMemory(d); err == nil || !strings.Contains(err.Error(), "(4.79 GiB KV cache is needed") {
		t.Fatalf("want the two groups' 4.79 GiB need, got %v", err)
	}
	// vllm#27508's settings: the sliding half needs ⌈(127 + 1024)/16⌉ + 1 = 73 blocks.
	d.GPUMemoryUtilization, d.MaxNumBatchedTokens = 0.95, 1024
	p, err = PlanMemory(d)
	if err != nil {
		t.Fatal(err)
	}
	if need := float64(8192+73) * block; p.KVBytes < need {
		t.Fatalf("KV %.2f GiB against a need of %.2f GiB", p.KVBytes/gib, need/gib)
	}
	t.Logf("H100, util 0.95, 1024 batched tokens: weights %.2f GiB (vLLM 64.38–65.97), KV %.2f GiB (vLLM 1.71 with padded weights, no CUDA-graph reserve)",
		p.WeightBytes/gib, p.KVBytes/gib)
}

// TestGraphKVBytesMatchShape: the operator graph's per-layer KV elements
// (what the group layout reads) agree with the shape's KV bytes per token
// for every catalog model and TP size.
func TestGraphKVBytesMatchShape(t *testing.T) {
	for _, m := range catalog.Models() {
		g, err := catalog.LookupGraph(m.ID)
		if err != nil {
			continue
		}
		for _, tp := range []int{1, 2, 4, 8} {
			d := deploy(t, m.ID, "h200", tp)
			if Validate(d) != nil {
				continue
			}
			s := newShape(d)
			want := float64(g.KVCacheElemsPerToken(tp)) * s.dtypeB
			for i := range g.Layers { // DSA's indexer keys: fixed bytes, any KV dtype
				a := g.Layers[i].Attention()
				switch {
				case a == nil:
				case a.CompressRatio > 0: // DeepSeek-V4: compressed entries and their indexer keys grow with the context
					want += float64(g.Layers[i].Count) * float64(a.EntryBytes+a.IndexerCacheBytes) / float64(a.CompressRatio)
				case a.EntryBytes == 0:
					want += float64(g.Layers[i].Count * a.IndexerCacheBytes)
				}
			}
			if got := s.kvBytesPerToken(); math.Abs(got-want) > 1e-6*want {
				t.Errorf("%s TP%d: shape %g B/token, graph %g", m.ID, tp, got, want)
			}
		}
	}
}

// GPU KV cache sizes reported in public vLLM start-up logs (the issue
// threads named per row) for every published start-up whose model and chip
// are in the catalog. ±5 % is asserted only where the deployment is
// stated and physically comparable with BLIS's defaults; the table is
// logged for the record (go test -v -run KVPoolAgainstPublishedLogs).
//
// The other published start-ups found have a chip outside the catalog (RTX 3090 /
// 4090 / 5090 / PRO 6000, L40S, T4, A100 40 GB, GB10, AMD), a model outside
// it (AWQ/GPTQ/NVFP4 checkpoints, Qwen3-14B, Qwen3-VL, MiniMax-M2.7,
// DeepSeek-V4, Granite, unnamed models) or the V0 engine.
func TestKVPoolAgainstPublishedLogs(t *testing.T) {
	tests := []struct {
		source string
		model  string
		tp     int
		maxLen int
		tokens int
		assert bool   // ±5 %
		why    string // when not asserted
	}{
		// vllm-project/vllm#19996, vLLM 0.9.1.dev (V1), 1× H100 80GB,
		// max_model_len 131072. Utilisation unstated: vLLM's default 0.9.
		// The run may carry an EAGLE draft head (≈ 1 GiB, 2 % of the pool),
		// and 0.9.1 reserved no CUDA-graph memory before sizing (+0.42 GiB,
		// +0.8 %): both inside the band.
		{"vllm#19996", "meta-llama/Llama-3.1-8B-Instruct", 1, 131072, 410128, true, ""},
		// vllm-project/vllm#21348, July 2025 (vLLM 0.9.2/0.10.0), 4× H100
		// TP4, defaults (util 0.9, max_model_len 40960), launched with
		// LMCacheConnectorV1; "Available KV cache memory: 8.11 GiB".
		{"vllm#21348", "Qwen/Qwen3-235B-A22B-FP8", 4, 40960, 178880, false,
			"not comparable: BLIS's weights and sampler peak for this checkpoint match vLLM's own logs " +
				"(TestQwen3MoEFP8StartupComponents); the 1.5 GiB per GPU left over (1.9 GiB without the " +
				"CUDA-graph reserve, which mid-2025 vLLM did not make) went outside weights and activations " +
				"in this TP4 run: NCCL on a 4-GPU NVSwitch group (NVLS buffers, which NCCL enables above " +
				"2 GPUs on H100/H200: 2.25 GiB per GPU at 8, vllm#9699), the LMCache connector, and the " +
				"profiling change the thread points at (vllm#19312); the row states none of them"},
	}
	t.Logf("%-11s %-34s %3s %10s %10s %6s", "row", "model", "tp", "predicted", "logged", "ratio")
	for _, tt := range tests {
		d := deploy(t, tt.model, "h100", tt.tp)
		d.MaxModelLen = tt.maxLen
		p, err := PlanMemory(d)
		if err != nil {
			t.Fatalf("%s: %v", tt.source, err)
		}
		r := float64(p.KVTokens) / float64(tt.tokens)
		t.Logf("%-11s %-34s %3d %10d %10d %6.3f", tt.source, tt.model, tt.tp, p.KVTokens, tt.tokens, r)
		switch {
		case tt.assert && math.Abs(r-1) > 0.05:
			t.Errorf("%s: %d tokens against vLLM's %d (ratio %.3f), outside ±5 %%", tt.source, p.KVTokens, tt.tokens, r)
		case !tt.assert:
			t.Logf("  %s", tt.why)
		}
	}
}

// TestQwen3MoEFP8StartupComponents checks, term by term, the start-up plan
// of Qwen3-235B-A22B-FP8 against the one vLLM log of it that breaks memory
// down (kv_cache_facts.csv, search index id 38962983769: vLLM 0.10.2, 8×
// L40S, TP8 with expert parallelism, max-num-seqs 256 and
// max-num-batched-tokens 2048 as vLLM's defaults for < 70 GiB GPUs; per GPU
// "27.72 GiB" weights and "1.4 GiB peak activation"). Weights and
// activations do not depend on the chip, so an H100 deployment of the same
// shape stands in for the L40S.
func TestQwen3MoEFP8StartupComponents(t *testing.T) {
	d := deploy(t, "Qwen/Qwen3-235B-A22B-FP8", "h100", 8)
	d.MaxNumSeqs, d.MaxNumBatchedTokens, d.MaxModelLen = 256, 2048, 32768
	p, err := PlanMemory(d)
	if err != nil {
		t.Fatal(err)
	}
	// FP8 experts and attention with 128×128 block scales; embeddings,
	// LM head, norms and routers (mlp.gate, in modules_to_not_convert) in BF16.
	if w := p.WeightBytes / gib; math.Abs(w/27.72-1) > 0.01 {
		t.Errorf("weights %.2f GiB per GPU, vLLM logged 27.72", w)
	}
	// The profile run's peak is the sampler's (256 rows × 151,936 vocab),
	// far above fused_moe's workspace at 2048 tokens.
	if a := p.ActivationBytes / gib; math.Abs(a-1.4) > 0.05 {
		t.Errorf("activation peak %.2f GiB, vLLM logged 1.4", a)
	}
	t.Logf("weights %.2f GiB (vLLM 27.72), activation %.2f GiB (vLLM 1.4)", p.WeightBytes/gib, p.ActivationBytes/gib)
}

// fused_moe's buffers hold whole experts' intermediates under expert
// parallelism and every DP rank's tokens under DP, so a forward-bound
// profile peak grows with both.
func TestActivationPeakMoEParallelism(t *testing.T) {
	peak := func(ep bool, dp int) float64 {
		d := deploy(t, "Qwen/Qwen3-30B-A3B", "h100", 2)
		d.MaxNumSeqs, d.MaxNumBatchedTokens, d.MaxModelLen, d.ExpertParallel, d.DP = 8, 16384, 16384, ep, dp
		p, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		return p.ActivationBytes
	}
	tpSplit, ep, epDP2 := peak(false, 1), peak(true, 1), peak(true, 2)
	if !(tpSplit < ep && ep < epDP2) {
		t.Errorf("activation peak GiB: TP-split %.2f, EP %.2f, EP with DP 2 %.2f; want increasing", tpSplit/gib, ep/gib, epDP2/gib)
	}
}

// A multimodal wrapper's vision tower counts in each rank's weights, split
// over TP like the decoder (Qwen3-VL: 595 M parameters in bf16).
func TestVisionTowerWeights(t *testing.T) {
	for _, tp := range []int{1, 4} {
		d := deploy(t, "Qwen/Qwen3-VL-32B-Instruct", "h100", tp)
		with, err := WeightBytes(d)
		if err != nil {
			t.Fatal(err)
		}
		m := *d.Model
		m.VisionParams = 0
		d.Model = &m
		without, _ := WeightBytes(d)
		if got, want := with-without, 595266800*2/float64(tp); math.Abs(got-want) > 1 {
			t.Errorf("TP%d: vision tower adds %g bytes, want %g", tp, got, want)
		}
	}
}

// TestKVPoolAgainstMaxNumSeqs128Runs checks the pool at the deployments of
// the H100 inference-perf runs with --max-num-seqs 128 and a small token
// budget (the regime where a Llama-2-7B replica is KV-bound: 128 requests
// of 1–2k tokens need 130–260k tokens of KV against a pool of about 119k).
// The block counts are the total_kv_blocks the inference-sim project
// records for those runs (inference-sim/inference-sim
// testdata/trained_physics_iter29.json @ f90a1e3a; block size 16, util 0.9).
// A pool a few per cent off would move the batch such a replica runs, so
// the band is ±2 %.
func TestKVPoolAgainstMaxNumSeqs128Runs(t *testing.T) {
	tests := []struct {
		model  string
		tp     int
		budget int // --max-num-batched-tokens
		blocks int
	}{
		{"meta-llama/Llama-2-7b-hf", 1, 2048, 7463},
		{"Qwen/Qwen2.5-7B-Instruct", 1, 2048, 65352},
		{"mistralai/Mistral-Nemo-Instruct-2407", 1, 2048, 19251},
		{"mistralai/Mistral-Nemo-Instruct-2407", 2, 1024, 48009},
		{"01-ai/Yi-34B", 2, 2048, 20793},
		{"meta-llama/Llama-3.1-70B-Instruct", 4, 2048, 30425},
		{"meta-llama/Llama-3.1-70B-Instruct", 4, 8192, 30251},
	}
	for _, tt := range tests {
		d := deploy(t, tt.model, "h100", tt.tp)
		d.MaxNumSeqs, d.MaxNumBatchedTokens = 128, tt.budget
		p, err := PlanMemory(d)
		if err != nil {
			t.Fatalf("%s TP%d: %v", tt.model, tt.tp, err)
		}
		r := float64(p.NumBlocks) / float64(tt.blocks)
		t.Logf("%-38s TP%d budget %4d: %6d blocks, run %6d (ratio %.4f)", tt.model, tt.tp, tt.budget, p.NumBlocks, tt.blocks, r)
		if math.Abs(r-1) > 0.02 {
			t.Errorf("%s TP%d budget %d: %d blocks against the run's %d (ratio %.3f), outside ±2 %%", tt.model, tt.tp, tt.budget, p.NumBlocks, tt.blocks, r)
		}
	}
}
