package kernel

import (
	"math"
	"strings"
	"testing"

	"blis/catalog"
)

// deploy builds a deployment with vLLM's `vllm serve` defaults on a large
// GPU (max-num-batched-tokens 8192, max-num-seqs 1024, block size 16,
// --gpu-memory-utilization 0.9).
func deploy(t testing.TB, model, chip string, tp int) Deployment {
	t.Helper()
	m, err := catalog.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.LookupChip(chip)
	if err != nil {
		t.Fatal(err)
	}
	return Deployment{
		Model: m, Chip: c, TP: tp, KVCacheDtype: "auto",
		MaxNumBatchedTokens: 8192, MaxNumSeqs: 1024, MaxModelLen: min(m.MaxPositions, 16384),
		BlockSize: 16, GPUMemoryUtilization: 0.9,
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		change func(*Deployment)
		want   string // "" = valid
	}{
		{"ok", "llama-3.1-8b", func(d *Deployment) {}, ""},
		{"tp 0", "llama-3.1-8b", func(d *Deployment) { d.TP = 0 }, "--tensor-parallel-size 0 must be ≥ 1"},
		{"tp 3", "llama-3.1-8b", func(d *Deployment) { d.TP = 3 },
			"--tensor-parallel-size 3 does not divide num_attention_heads 32 of meta-llama/Llama-3.1-8B"},
		{"tp 64", "llama-3.1-8b", func(d *Deployment) { d.TP = 64 }, "does not divide num_attention_heads 32"},
		{"tp 16 replicates kv heads", "llama-3.1-8b", func(d *Deployment) { d.TP = 16 }, ""},
		{"tp 8 on 4 kv heads", "qwen3-30b-a3b", func(d *Deployment) { d.TP = 8 }, ""},
		{"tp 7 kv 8", "yi-34b", func(d *Deployment) { d.TP = 7 }, "--tensor-parallel-size 7 does not divide num_key_value_heads 8 of 01-ai/Yi-34B"},
		{"tp 7 kv 4", "qwen2.5-7b", func(d *Deployment) { d.TP = 7 }, "--tensor-parallel-size 7 is not a multiple of num_key_value_heads 4"},
		{"mla tp 8", "deepseek-v3", func(d *Deployment) { d.TP = 8 }, ""},
		{"util 0", "llama-3.1-8b", func(d *Deployment) { d.GPUMemoryUtilization = 0 }, "--gpu-memory-utilization 0 must be in (0, 1]"},
		{"util 1.2", "llama-3.1-8b", func(d *Deployment) { d.GPUMemoryUtilization = 1.2 }, "--gpu-memory-utilization 1.2"},
		{"util NaN", "llama-3.1-8b", func(d *Deployment) { d.GPUMemoryUtilization = math.NaN() }, "--gpu-memory-utilization"},
		{"kv dtype", "llama-3.1-8b", func(d *Deployment) { d.KVCacheDtype = "int8" }, `--kv-cache-dtype "int8" is not supported (allowed: [auto bfloat16 float16 fp8 fp8_e4m3 fp8_e5m2])`},
		{"kv dtype empty is auto", "llama-3.1-8b", func(d *Deployment) { d.KVCacheDtype = "" }, ""},
		{"kv fp8_e5m2", "llama-3.1-8b", func(d *Deployment) { d.KVCacheDtype = "fp8_e5m2" }, ""},
		{"quantization awq", "llama-3.1-8b", func(d *Deployment) { d.Quantization = "awq" }, `--quantization "awq" is not supported`},
		{"quantization none", "llama-3.1-8b", func(d *Deployment) { d.Quantization = "none" }, ""},
		{"quantization fp8", "llama-3.1-8b", func(d *Deployment) { d.Quantization = "fp8" }, ""},
		{"fp8 on fp8 checkpoint", "deepseek-v3", func(d *Deployment) { d.Quantization = "fp8"; d.TP = 8 }, ""},
		{"fp8 on mxfp4", "gpt-oss-120b", func(d *Deployment) { d.Quantization = "fp8" }, "--quantization fp8 conflicts with openai/gpt-oss-120b's own mxfp4"},
		{"max model len", "llama-3.1-8b", func(d *Deployment) { d.MaxModelLen = 200000 }, "--max-model-len 200000 exceeds max_position_embeddings 131072"},
		{"mnbt < seqs", "llama-3.1-8b", func(d *Deployment) { d.MaxNumBatchedTokens = 512 }, "--max-num-batched-tokens 512 must be ≥ --max-num-seqs 1024"},
		{"block size", "llama-3.1-8b", func(d *Deployment) { d.BlockSize = 0 }, "--block-size 0 must be ≥ 1"},
		{"max num seqs", "llama-3.1-8b", func(d *Deployment) { d.MaxNumSeqs = -1 }, "--max-num-seqs -1 must be ≥ 1"},
		{"override", "llama-3.1-8b", func(d *Deployment) { d.NumGPUBlocksOverride = -5 }, "--num-gpu-blocks-override -5"},
		{"no model", "llama-3.1-8b", func(d *Deployment) { d.Model = nil }, "no model"},
		{"no chip", "llama-3.1-8b", func(d *Deployment) { d.Chip = nil }, "no chip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(t, tt.model, "h100", 1)
			tt.change(&d)
			err := Validate(d)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.want)
			}
			// The constructors reject what Validate rejects.
			if _, err := PlanMemory(d); err == nil {
				t.Errorf("PlanMemory accepted it")
			}
			if _, err := NewRoofline(d); err == nil {
				t.Errorf("NewRoofline accepted it")
			}
		})
	}
}

func TestKVBytesPerToken(t *testing.T) {
	tests := []struct {
		name  string
		model string
		tp    int
		kv    string
		want  float64
	}{
		{"llama-8b bf16", "llama-3.1-8b", 1, "auto", 32 * 8 * 128 * 2 * 2}, // 131072
		{"llama-8b explicit bf16", "llama-3.1-8b", 1, "bfloat16", 131072},
		{"llama-8b fp8", "llama-3.1-8b", 1, "fp8", 65536},
		{"llama-8b fp8_e4m3", "llama-3.1-8b", 1, "fp8_e4m3", 65536},
		{"llama-8b tp2", "llama-3.1-8b", 2, "auto", 65536},
		{"llama-8b tp16 replicated", "llama-3.1-8b", 16, "auto", 2 * 32 * 1 * 128 * 2},
		{"llama-2 mha fp16", "llama-2-7b", 1, "auto", 2 * 32 * 32 * 128 * 2},
		{"deepseek-v3 mla", "deepseek-v3", 1, "auto", (512 + 64) * 61 * 2},
		{"deepseek-v3 mla tp8 not split", "deepseek-v3", 8, "auto", (512 + 64) * 61 * 2},
		{"deepseek-v3 mla fp8", "deepseek-v3", 8, "fp8", (512 + 64) * 61},
		{"gpt-oss sliding counted full", "gpt-oss-120b", 1, "auto", 2 * 36 * 8 * 64 * 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(t, tt.model, "h100", tt.tp)
			d.KVCacheDtype = tt.kv
			got, err := KVBytesPerToken(d)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("KVBytesPerToken = %g, want %g", got, tt.want)
			}
		})
	}
}

func TestWeightBytes(t *testing.T) {
	tests := []struct {
		name  string
		model string
		tp    int
		quant string
		want  float64 // bytes per rank
		tol   float64 // relative
	}{
		// 8.03 B parameters × 2 B (embedding and LM head separate) plus the
		// 33.5 MB RoPE cache; vLLM logs 14.99 GiB = 16.09 GB.
		{"llama-8b", "llama-3.1-8b", 1, "", 16.06e9, 0.005},
		{"llama-8b logged", "meta-llama/Llama-3.1-8B-Instruct", 1, "", 14.99 * gib, 0.002},
		{"llama-8b tp2", "llama-3.1-8b", 2, "", 16.06e9 / 2, 0.005},
		// Online FP8: linear layers 1 B, embedding and LM head 2 B each.
		{"llama-8b --quantization fp8", "llama-3.1-8b", 1, "fp8", 6.98e9 + 2*1.05e9, 0.01},
		// 70.6 B parameters.
		{"llama-70b", "llama-3.1-70b", 1, "", 141.1e9, 0.005},
		// Qwen3-32B: vLLM logs 61.03 GiB at TP 1 and 30.59 GiB at TP 2 on H100
		// (search index id 27349653019).
		{"qwen3-32b", "qwen3-32b", 1, "", 61.03 * gib, 0.005},
		{"qwen3-32b tp2", "qwen3-32b", 2, "", 30.59 * gib, 0.01},
		// DeepSeek-V3: 671 B parameters without the MTP layer, FP8 with
		// 128×128 block scales; embedding and LM head (0.93 B each) in BF16.
		{"deepseek-v3", "deepseek-v3", 1, "", 671e9 + 2*0.93e9, 0.01},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deploy(t, tt.model, "h100", tt.tp)
			d.Quantization = tt.quant
			got, err := WeightBytes(d)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got/tt.want-1) > tt.tol {
				t.Errorf("WeightBytes = %.4g, want %.4g ± %.1f%%", got, tt.want, 100*tt.tol)
			}
		})
	}
}
