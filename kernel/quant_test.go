package kernel

import (
	"strings"
	"testing"

	"blis/catalog"
)

// quantVariant is a catalog model with its quantization replaced, so one
// architecture can carry every format.
func quantVariant(t *testing.T, model, method, dtype, act string, block int, scheme string) *catalog.Model {
	t.Helper()
	base, err := catalog.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	m := *base
	m.QuantMethod, m.WeightDtype, m.ActDtype, m.WeightBlock, m.QuantScheme = method, dtype, act, block, scheme
	m.WeightGroup, m.ActOrder = 0, strings.Contains(scheme, "act-order")
	if strings.Contains(scheme, " g32") {
		m.WeightGroup = 32
	} else if strings.Contains(scheme, " g128") {
		m.WeightGroup = 128
	}
	bpp := map[string]float64{"fp8": 1, "int8": 1, "int4": 0.5 + 2.0/128, "nvfp4": 0.5 + 1.0/16, "mxfp4": 0.5 + 1.0/32}[dtype]
	m.WeightBytesPerParam, m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam = bpp, bpp, bpp
	return &m
}

func chip(t *testing.T, name string) *catalog.Chip {
	t.Helper()
	c, err := catalog.LookupChip(name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The kernel vLLM runs each format with on Ampere, Hopper and Blackwell.
func TestResolveQuant(t *testing.T) {
	const moe = "qwen3-30b-a3b"
	tests := []struct {
		name, method, dtype, act string
		block                    int
		scheme                   string
		chip                     string
		linear, moe, compute     string // substrings of the kernels; exact compute dtype
		gemmLaw, moeLaw          string // the exact laws wanted first
	}{
		{"fp8 A100", "fp8", "fp8", "fp8", 0, "W8A8 fp8 per-tensor", "a100", "Marlin fp8 W8A16", "fused_marlin_moe fp8", "bfloat16", "fp8_marlin", "fp8_marlin"},
		{"fp8 H100", "fp8", "fp8", "fp8", 0, "W8A8 fp8 per-tensor", "h100", "CUTLASS scaled_mm fp8", "triton", "fp8", "fp8", "fp8"},
		{"fp8 block H200", "fp8", "fp8", "fp8", 128, "W8A8 fp8 128×128 blocks", "h200", "block fp8", "block fp8", "fp8", "fp8_block", "fp8_block"},
		{"fp8 block B200", "fp8", "fp8", "fp8", 128, "W8A8 fp8 128×128 blocks", "b200", "block fp8", "FlashInfer TRT-LLM block fp8", "fp8", "fp8_block", "fp8_block"},
		{"fp8 W8A16 H100", "compressed-tensors", "fp8", "", 0, "W8A16 fp8", "h100", "Marlin fp8 W8A16", "fused_marlin_moe fp8", "bfloat16", "fp8_marlin", "fp8_marlin"},
		{"nvfp4 B200", "modelopt", "nvfp4", "nvfp4", 0, "W4A4 nvfp4 g16", "b200", "nvfp4 W4A4", "FlashInfer", "fp4", "nvfp4", "nvfp4"},
		{"nvfp4 GB200", "modelopt", "nvfp4", "nvfp4", 0, "W4A4 nvfp4 g16", "gb200", "nvfp4 W4A4", "FlashInfer", "fp4", "nvfp4", "nvfp4"},
		{"nvfp4 H100", "modelopt", "nvfp4", "nvfp4", 0, "W4A4 nvfp4 g16", "h100", "Marlin nvfp4 W4A16", "fused_marlin_moe nvfp4", "bfloat16", "w4a16", "w4a16_nvfp4"},
		{"nvfp4 A100", "modelopt", "nvfp4", "nvfp4", 0, "W4A4 nvfp4 g16", "a100", "Marlin nvfp4 W4A16", "fused_marlin_moe nvfp4", "bfloat16", "w4a16", "w4a16_nvfp4"},
		{"nvfp4 W4A16 B200", "compressed-tensors", "nvfp4", "", 0, "W4A16 nvfp4 g16", "b200", "Marlin nvfp4 W4A16", "fused_marlin_moe", "bfloat16", "w4a16", "w4a16_nvfp4"},
		{"mxfp4 B200", "mxfp4", "mxfp4", "", 0, "W4A16 mxfp4 experts g32", "b200", "cuBLAS bf16", "TRT-LLM mxfp4×bf16", "bfloat16", "bfloat16", "w4a16_mxfp4"},
		{"mxfp4 H200", "mxfp4", "mxfp4", "", 0, "W4A16 mxfp4 experts g32", "h200", "cuBLAS bf16", "triton_kernels", "bfloat16", "bfloat16", "w4a16_mxfp4"},
		{"mxfp4 A100", "mxfp4", "mxfp4", "", 0, "W4A16 mxfp4 experts g32", "a100", "cuBLAS bf16", "fused_marlin_moe mxfp4", "bfloat16", "bfloat16", "w4a16_mxfp4_marlin"},
		{"ct mxfp4 W4A16 H100", "compressed-tensors", "mxfp4", "", 0, "W4A16 mxfp4 g32 (compressed-tensors)", "h100", "Marlin mxfp4 W4A16", "fused_marlin_moe mxfp4", "bfloat16", "w4a16", "w4a16_mxfp4_marlin"},
		{"awq H100", "awq", "int4", "", 0, "W4A16 int4 g128 (AWQ, zero points)", "h100", "Marlin int4", "fused_marlin_moe int4", "bfloat16", "w4a16", "int4_wo"},
		{"gptq H100", "gptq", "int4", "", 0, "W4A16 int4 g128 (GPTQ)", "h100", "Machete int4", "fused_marlin_moe int4", "bfloat16", "w4a16", "int4_wo"},
		{"ct W4A16 g32 H200", "compressed-tensors", "int4", "", 0, "W4A16 int4 g32 (compressed-tensors)", "h200", "Marlin int4", "fused_marlin_moe int4", "bfloat16", "w4a16", "int4_wo"},
		{"gptq act-order H100", "gptq", "int4", "", 0, "W4A16 int4 g128 (GPTQ, act-order)", "h100", "Marlin int4", "fused_marlin_moe int4", "bfloat16", "w4a16", "int4_wo"},
		{"awq B200", "awq", "int4", "", 0, "W4A16 int4 g128 (AWQ)", "b200", "Marlin int4", "fused_marlin_moe int4", "bfloat16", "w4a16", "int4_wo"},
		{"gptq 8-bit A100", "gptq", "int8", "", 0, "W8A16 int8 g128 (GPTQ)", "a100", "Marlin int8", "fused_marlin_moe int8", "bfloat16", "w4a16", "int8_wo"},
		{"int8 W8A8 A100", "compressed-tensors", "int8", "int8", 0, "W8A8 int8", "a100", "CUTLASS scaled_mm int8", "int8 W8A8", "int8", "int8", "int8"},
		{"int8 W8A8 H100", "compressed-tensors", "int8", "int8", 0, "W8A8 int8", "h100", "CUTLASS scaled_mm int8", "int8 W8A8", "int8", "int8", "int8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := quantVariant(t, moe, tt.method, tt.dtype, tt.act, tt.block, tt.scheme)
			k, err := ResolveQuant(m, chip(t, tt.chip))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(k.Linear, tt.linear) || !strings.Contains(k.MoE, tt.moe) || k.Compute != tt.compute ||
				k.GEMMLaws[0] != tt.gemmLaw || k.MoELaws[0] != tt.moeLaw {
				t.Errorf("got %+v\nwant linear ~%q, moe ~%q, compute %s, laws %s / %s", k, tt.linear, tt.moe, tt.compute, tt.gemmLaw, tt.moeLaw)
			}
			if !strings.Contains(k.String(), tt.scheme) {
				t.Errorf("summary %q does not name the format %q", k, tt.scheme)
			}
		})
	}
	// A dense model has no MoE kernel; an unquantized one runs BF16.
	dense := quantVariant(t, "llama-3.1-8b", "awq", "int4", "", 0, "W4A16 int4 g128 (AWQ)")
	if k, err := ResolveQuant(dense, chip(t, "h100")); err != nil || k.MoE != "" {
		t.Errorf("dense AWQ: %+v, %v", k, err)
	}
	plain, _ := catalog.LookupModel("llama-3.1-8b")
	if k, err := ResolveQuant(plain, chip(t, "b200")); err != nil || k.Compute != "bfloat16" || k.GEMMLaws[0] != "bfloat16" {
		t.Errorf("unquantized: %+v, %v", k, err)
	}
}

// vLLM has no W8A8 int8 GEMM on Blackwell: the deployment is refused with
// the model, chip, format and the chips that can run it.
func TestResolveQuantRefusesInt8OnBlackwell(t *testing.T) {
	for _, c := range []string{"b200", "b300", "gb200"} {
		d := deploy(t, "llama-3.1-8b", c, 1)
		d.Model = quantVariant(t, "llama-3.1-8b", "compressed-tensors", "int8", "int8", 0, "W8A8 int8 (compressed-tensors)")
		err := Validate(d)
		if err == nil {
			t.Fatalf("%s: W8A8 int8 accepted", c)
		}
		for _, w := range []string{d.Model.ID, c, "W8A8 int8", "SM100", "a100, h100, h200"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c, err, w)
			}
		}
		if _, err := NewRoofline(d); err == nil {
			t.Errorf("%s: roofline priced W8A8 int8", c)
		}
	}
	d := deploy(t, "llama-3.1-8b", "h100", 1)
	d.Model = quantVariant(t, "llama-3.1-8b", "compressed-tensors", "int8", "int8", 0, "W8A8 int8 (compressed-tensors)")
	if err := Validate(d); err != nil {
		t.Errorf("h100 W8A8 int8: %v", err)
	}
}

// ModelOptFp8Config's minimum capability is 89: vLLM refuses NVIDIA's FP8
// exports on the A100, where its own fp8 method would run Marlin.
func TestResolveQuantModelOptFP8NeedsSM89(t *testing.T) {
	d := deploy(t, "nvidia/Llama-3.1-70B-Instruct-FP8", "a100", 8)
	err := Validate(d)
	if err == nil {
		t.Fatal("ModelOpt FP8 accepted on the A100")
	}
	for _, w := range []string{"nvidia/Llama-3.1-70B-Instruct-FP8", "a100", "SM80", "8.9", "b200", "h100", "h200"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "a100,") {
		t.Errorf("error lists the a100 among the chips that can: %v", err)
	}
	if err := Validate(deploy(t, "nvidia/Llama-3.1-70B-Instruct-FP8", "h100", 8)); err != nil {
		t.Errorf("h100: %v", err)
	}
	// The checkpoint-native fp8 method runs on the A100 (Marlin W8A16).
	if err := Validate(deploy(t, "qwen3-32b-fp8", "a100", 8)); err != nil {
		t.Errorf("fp8 on a100: %v", err)
	}
}

// The roofline divides each quantized GEMM by the peak of the math vLLM's
// kernel runs: FP4 units for W4A4 on Blackwell, BF16 for Marlin W4A16 on
// Hopper and for FP8 on Ampere, INT8 (twice BF16 on the A100).
func TestRooflineQuantPeak(t *testing.T) {
	tests := []struct {
		chip, dtype, act string
		wantDtype        string
		wantPeak         func(c *catalog.Chip) float64
	}{
		{"b200", "nvfp4", "nvfp4", "fp4", func(c *catalog.Chip) float64 { return c.FP4FLOPS }},
		{"h100", "nvfp4", "nvfp4", "bfloat16", func(c *catalog.Chip) float64 { return c.BF16FLOPS }},
		{"h100", "int4", "", "bfloat16", func(c *catalog.Chip) float64 { return c.BF16FLOPS }},
		{"a100", "fp8", "fp8", "bfloat16", func(c *catalog.Chip) float64 { return c.BF16FLOPS }},
		{"h100", "fp8", "fp8", "fp8", func(c *catalog.Chip) float64 { return c.FP8FLOPS }},
		{"a100", "int8", "int8", "int8", func(c *catalog.Chip) float64 { return 2 * c.BF16FLOPS }},
		{"h200", "int8", "int8", "int8", func(c *catalog.Chip) float64 { return c.FP8FLOPS }},
		{"b200", "mxfp4", "", "bfloat16", func(c *catalog.Chip) float64 { return c.BF16FLOPS }},
	}
	for _, tt := range tests {
		d := deploy(t, "qwen3-30b-a3b", tt.chip, 1)
		d.Model = quantVariant(t, "qwen3-30b-a3b", "test", tt.dtype, tt.act, 0, tt.dtype)
		s := newShape(d)
		if s.mlpDtype != tt.wantDtype || s.attnDtype != tt.wantDtype {
			t.Errorf("%s %s/%s: GEMMs in %s/%s, want %s", tt.chip, tt.dtype, tt.act, s.attnDtype, s.mlpDtype, tt.wantDtype)
		}
		if got, want := peakFLOPS(d.Chip, s.mlpDtype), tt.wantPeak(d.Chip); got != want || want <= 0 {
			t.Errorf("%s %s: peak %g, want %g", tt.chip, tt.dtype, got, want)
		}
	}
}

// The fitted pricer takes the law of the kernel vLLM runs, and records the
// stand-in where the coefficients have none for it.
func TestFittedQuantLaws(t *testing.T) {
	tests := []struct {
		chip, method, dtype, act string
		gemm, moe                string // the laws chosen
		sub                      string // "" = no substitution
	}{
		{"h100", "modelopt", "nvfp4", "nvfp4", "bfloat16", "w4a16_mxfp4_marlin", "moe nvfp4: no w4a16_nvfp4 law on h100, priced with w4a16_mxfp4_marlin at 0.5625 weight bytes per parameter"},
		{"b200", "modelopt", "nvfp4", "nvfp4", "nvfp4", "nvfp4", ""},
		{"h100", "awq", "int4", "", "bfloat16", "int4_wo", "gemm int4: no w4a16 law on h100, priced with bfloat16 at 0.5156 weight bytes per parameter"},
		{"h200", "mxfp4", "mxfp4", "", "", "w4a16_mxfp4", ""},
		{"b200", "mxfp4", "mxfp4", "", "", "w4a16_mxfp4", ""},
		{"h200", "fp8", "fp8", "fp8", "fp8", "fp8", ""},
	}
	for _, tt := range tests {
		t.Run(tt.chip+"/"+tt.method, func(t *testing.T) {
			d := deploy(t, "qwen3-30b-a3b", tt.chip, 1)
			d.Model = quantVariant(t, "qwen3-30b-a3b", tt.method, tt.dtype, tt.act, 0, tt.dtype)
			co, err := catalog.LookupCoefficients(tt.chip)
			if err != nil {
				t.Fatal(err)
			}
			r := &resolver{d: d, co: co, f: &fitted{}}
			if tt.gemm != "" {
				if l := r.gemmLaw(tt.dtype); l == nil || l.Dtype != tt.gemm {
					t.Errorf("gemm law %+v, want %s (err %v)", l, tt.gemm, r.err)
				}
			}
			l := r.moeLaw(tt.dtype)
			if l == nil || l.Dtype != tt.moe {
				t.Fatalf("moe law %+v, want %s (err %v)", l, tt.moe, r.err)
			}
			// A stand-in reads the checkpoint's weight bytes; the same
			// stand-in is returned again, so operators keep merging.
			if exact, _ := co.MoEFor(tt.moe); strings.Contains(tt.sub, "moe ") && (l.WeightBytes != d.Model.WeightBytesPerParam || l == exact) ||
				!strings.Contains(tt.sub, "moe ") && l != exact {
				t.Errorf("moe law bytes %g (exact law %v), model %g", l.WeightBytes, l == exact, d.Model.WeightBytesPerParam)
			}
			if again := r.moeLaw(tt.dtype); again != l {
				t.Error("a second lookup returned another law")
			}
			if tt.gemm == "bfloat16" && tt.dtype != "mxfp4" {
				if g := r.gemmLaw(tt.dtype); g.WeightBytes != d.Model.WeightBytesPerParam || g.PeakKey != "bf16_flops" {
					t.Errorf("W4A16 GEMM stand-in: %g bytes at %s, want %g at bf16_flops", g.WeightBytes, g.PeakKey, d.Model.WeightBytesPerParam)
				}
			}
			subs := strings.Join(r.f.subs, "; ")
			if tt.sub == "" && subs != "" || !strings.Contains(subs, tt.sub) {
				t.Errorf("substitutions %q, want %q", subs, tt.sub)
			}
		})
	}
	// A real catalog checkpoint end to end: Kimi-K2.5's compressed-tensors
	// W4A16 experts on H200 take the Marlin int4 MoE law.
	p, err := NewFitted(deploy(t, "kimi-k2.5", "h200", 8))
	if err != nil {
		t.Fatal(err)
	}
	if subs := strings.Join(p.(*fitted).Substitutions(), "; "); strings.Contains(subs, "moe int4") {
		t.Errorf("kimi-k2.5 on h200: MoE law substituted: %s", subs)
	}
}

// DeepSeek-V4's 4-bit experts beside its fp8-block linears take the
// experts' own kernel (DeepseekV4FP8Config: ModelOptNvFp4FusedMoE for the
// NVFP4 checkpoint's decoder layers, Mxfp4MoEMethod for MXFP4 experts and
// its MTP layer), while the linears keep the block-fp8 laws.
func TestFittedDSV4ExpertLaws(t *testing.T) {
	tests := []struct {
		model, chip, label string
		moe, sub           string // the law chosen; "" = no substitution
	}{
		{"deepseek-v4-flash-nvfp4", "b200", "nvfp4", "nvfp4", ""},
		{"deepseek-v4-flash-nvfp4", "h200", "nvfp4", "w4a16_mxfp4_marlin", "moe nvfp4: no w4a16_nvfp4 law on h200, priced with w4a16_mxfp4_marlin"},
		{"deepseek-v4-flash-nvfp4", "b200", "mxfp4", "w4a16_mxfp4", ""},
		{"deepseek-v4-flash", "b200", "mxfp4", "w4a16_mxfp4", ""},
		{"deepseek-v4-flash", "h200", "mxfp4", "w4a16_mxfp4", ""},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.chip+"/"+tt.label, func(t *testing.T) {
			d := deploy(t, tt.model, tt.chip, 4)
			co, err := catalog.LookupCoefficients(tt.chip)
			if err != nil {
				t.Fatal(err)
			}
			r := &resolver{d: d, co: co, f: &fitted{}}
			if l := r.moeLaw(tt.label); l == nil || l.Dtype != tt.moe {
				t.Fatalf("moe law %+v, want %s (err %v)", l, tt.moe, r.err)
			}
			if l := r.gemmLaw("fp8"); l == nil || l.Dtype != "fp8_block" {
				t.Errorf("linear law %+v, want fp8_block (err %v)", l, r.err)
			}
			subs := strings.Join(r.f.subs, "; ")
			if tt.sub == "" && subs != "" || !strings.Contains(subs, tt.sub) {
				t.Errorf("substitutions %q, want %q", subs, tt.sub)
			}
		})
	}
	// `blis catalog show` names the experts' kernel, not the linears'.
	m, _ := catalog.LookupModel("deepseek-v4-flash-nvfp4")
	for chip, want := range map[string]string{"b200": "FlashInfer CUTLASS/TRT-LLM nvfp4 MoE", "h200": "fused_marlin_moe nvfp4 W4A16"} {
		c, _ := catalog.LookupChip(chip)
		if k, err := ResolveQuant(m, c); err != nil || k.MoE != want || !strings.Contains(k.Linear, "block fp8") {
			t.Errorf("%s: %+v (%v), want MoE %q and block-fp8 linears", chip, k, err, want)
		}
	}
}
