package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/catalog"
)

func TestCatalogShow(t *testing.T) {
	tests := []struct {
		model string
		want  []string
	}{
		{"llama-3.1-8b-instruct", []string{
			"Model         meta-llama/Llama-3.1-8B-Instruct",
			"32 layers: 32 dense, GQA",
			"gemm         qkv_proj                  n=6144 k=4096 bf16 column parts=4096+1024+1024",
			"gemm         down_proj                 n=4096 k=14336 bf16 row",
			"collective   o_proj.all_reduce         all_reduce over tp 8192 B/token",
			"KV cache 2048 elements per token per layer (4096 B in bf16)",
			"lm_head            n=128256 k=4096 bf16 column (sampled rows)",
			"Draft: none",
		}},
		{"deepseek-v3", []string{
			"61 layers: 3 dense + 58 moe, MLA, MTP×1",
			"[dense]×3 then [moe]×58",
			"fused_qkv_a_proj             n=2112 k=7168 fp8 replicated parts=1536+576",
			"256 experts top-8",
			`Draft: --speculative-config method "mtp"`,
			`Draft layer "mtp_moe" × 1`,
			"eh_proj",
		}},
		{"openai/gpt-oss-120b", []string{
			`Layer kind "moe_sliding" × 18`,
			"window=128 sinks",
			"128 experts top-4 w13 n=5760 k=2880, w2 n=2880 k=2880 mxfp4 swigluoai",
			"[moe_sliding, moe]×18",
			"W4A16 mxfp4 experts g32\n",
			"W4A16 mxfp4 experts g32 on SM100: linear cuBLAS bf16 (mxfp4 quantizes the experts only); MoE FlashInfer TRT-LLM mxfp4×bf16 MoE; math in bfloat16",
			"W4A16 mxfp4 experts g32 on SM90:",
			"MoE triton_kernels matmul_ogs mxfp4 MoE",
		}},
		{"kimi-k2.5", []string{
			"Quant format  W4A16 int4 g32 (compressed-tensors)\n",
			"on h200     W4A16 int4 g32 (compressed-tensors) on SM90: linear Marlin int4 W4A16; MoE fused_marlin_moe int4 W4A16; math in bfloat16",
			"on a100     W4A16 int4 g32 (compressed-tensors) on SM80: linear Marlin int4 W4A16",
		}},
		{"mixtral-8x7b", []string{"8 experts top-2", "experts.dispatch"}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			code, out, errOut := runCLI(t, "catalog", "show", tt.model)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestCatalogShowErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"catalog", "show", "llama-3.1-7b"}, "did you mean"},
		{[]string{"catalog", "show"}, "takes one model"},
		{[]string{"catalog", "show", "a", "b"}, "takes one model"},
		{[]string{"catalog", "list", "extra"}, "takes no arguments"},
		{[]string{"catalog", "derive", "--catalog-dir", "/nonexistent/blis"}, "not a directory"},
	}
	for _, tt := range tests {
		code, out, errOut := runCLI(t, tt.args...)
		if code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q (stdout %q)", tt.args, code, errOut, tt.want, out)
		}
	}
}

// Qwen3.5's hybrid stack shows its GDN kernels, and a dry run prints the
// memory plan with the raised attention block size.
func TestQwen35ShowAndDryRun(t *testing.T) {
	code, out, errOut := runCLI(t, "catalog", "show", "qwen3.5-397b")
	if code != 0 || !strings.Contains(out, "45 gdn_moe + 15 attn_moe") || !strings.Contains(out, "delta_rule key_heads=16 value_heads=64") {
		t.Errorf("catalog show: exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	code, out, errOut = runCLI(t, "run", "--model", "qwen3.5-397b", "--hardware", "h200", "--tensor-parallel-size", "8", "--dry-run")
	for _, w := range []string{"block size 528", "KV bytes per token (per GPU): 15360", "Setting attention block size to 528 tokens", "without support for prefix caching"} {
		if code != 0 || !strings.Contains(out+errOut, w) {
			t.Errorf("dry run: exit %d, lacks %q:\n%s%s", code, w, errOut, out)
		}
	}
}

func TestCatalogList(t *testing.T) {
	code, out, errOut := runCLI(t, "catalog", "list")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{
		"Models:",
		"deepseek-ai/DeepSeek-V3", "61 layers: 3 dense + 58 moe, MLA, MTP×1",
		"36 layers: 18 moe_sliding + 18 moe, GQA, window 128, sinks",
		"meta-llama/Llama-3.3-70B-Instruct", "80 layers: 80 dense, GQA",
		"nvidia/DeepSeek-V4-Flash-NVFP4", "deepseek-v4-flash-nvfp4",
		"Chips:", "h100",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("catalog list lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "graph:") {
		t.Errorf("a model has no graph:\n%s", out)
	}
	// With no unsupported model the section is left out, header and all.
	if n := len(catalog.UnsupportedModels()); n == 0 && strings.Contains(out, "Known but not supported") {
		t.Errorf("empty unsupported section printed:\n%s", out)
	} else if n > 0 && !strings.Contains(out, "Known but not supported") {
		t.Errorf("%d unsupported models not listed:\n%s", n, out)
	}
}

// catalog derive compares the stored graphs with a fresh derivation, exits 1
// when one is stale, and --write repairs it.
func TestCatalogDerive(t *testing.T) {
	src := filepath.Join("..", "..", "catalog", "models")
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name(), "graph.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, e.Name()), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name(), "graph.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCLI(t, "catalog", "derive", "--catalog-dir", dir)
	if code != 0 || !strings.Contains(out, "match a fresh derivation") {
		t.Fatalf("fresh copy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	stale := filepath.Join(dir, "mistralai--Mixtral-8x7B-v0.1", "graph.json")
	data, _ := os.ReadFile(stale)
	os.WriteFile(stale, []byte(strings.Replace(string(data), `"top_k":2`, `"top_k":3`, 1)), 0o644)
	os.Remove(filepath.Join(dir, "Qwen--Qwen3-8B", "graph.json"))
	code, out, errOut = runCLI(t, "catalog", "derive", "--catalog-dir", dir)
	if code != 1 || !strings.Contains(out, "stale: "+stale) || !strings.Contains(out, `"top_k":3`) ||
		!strings.Contains(out, "missing: ") || !strings.Contains(errOut, "catalog derive --write") {
		t.Fatalf("stale copy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	code, out, _ = runCLI(t, "catalog", "derive", "--write", "--catalog-dir", dir)
	if code != 0 || !strings.Contains(out, "2 written") {
		t.Fatalf("--write: exit %d, stdout %q", code, out)
	}
	if code, _, _ = runCLI(t, "catalog", "derive", "--catalog-dir", dir); code != 0 {
		t.Errorf("after --write: exit %d", code)
	}
}
