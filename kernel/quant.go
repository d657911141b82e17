package kernel

import (
	"fmt"
	"strings"

	"blis/catalog"
)

// smArch is the CUDA compute-capability family vLLM keys its quantized
// kernels on. The catalog's chips carry no capability number; their
// tensor-core peaks say it: FP4 units only from Blackwell (SM100), FP8
// units from Hopper (SM90; Ada's SM89 is not in the catalog), neither on
// Ampere (SM80).
type smArch int

const (
	sm80  smArch = 80
	sm90  smArch = 90
	sm100 smArch = 100
)

func archOf(c *catalog.Chip) smArch {
	switch {
	case c.FP4FLOPS > 0:
		return sm100
	case c.FP8FLOPS > 0:
		return sm90
	}
	return sm80
}

func (a smArch) String() string { return fmt.Sprintf("SM%d", int(a)) }

// QuantKernel is what vLLM runs a checkpoint's quantized GEMM and MoE
// weights with on one chip: the kernels' names, the tensor-core dtype their
// math runs in (which peak the roofline divides by) and the fitted laws
// that price them, best first.
type QuantKernel struct {
	Format  string // the checkpoint's scheme, e.g. "W4A4 nvfp4 g16 (ModelOpt)"
	Arch    string // "SM80", "SM90", "SM100"
	Linear  string // vLLM's linear-layer kernel
	MoE     string // vLLM's fused-MoE kernel ("" for dense models)
	Compute string // tensor-core dtype: "bfloat16", "fp8", "fp4", "int8"
	// GEMMLaws and MoELaws are the fitted law dtypes that price the kernel,
	// the exact one first; the fitted pricer records any stand-in.
	GEMMLaws []string
	MoELaws  []string
}

// ResolveQuant picks vLLM's kernels for m's quantized weights on c, and
// errors where vLLM cannot run the format there (naming the model, chip,
// format and the catalog's chips that can). It mirrors vLLM's selection
// (vllm-project/vllm, paths under vllm/model_executor/layers/quantization/):
//   - fp8.py@1436674b Fp8LinearMethod / Fp8MoEMethod: W8A8 CUTLASS
//     scaled_mm (block scales: CUTLASS/DeepGEMM blockwise) on SM89+; below,
//     weight-only Marlin (utils/marlin_utils_fp8.py: "Your GPU does not have
//     native support for FP8 computation ... Weight-only FP8 compression
//     will be used leveraging the Marlin kernel"), MoE fused_marlin_moe.
//   - modelopt.py@00155cde: ModelOptFp8Config.get_min_capability is 89
//     (refused on Ampere; Model.QuantMinCapability carries it);
//     ModelOptNvFp4Config is 75 with the CUTLASS/FlashInfer FP4 kernels on
//     SM100 and the Marlin W4A16 fallback elsewhere
//     (utils/marlin_utils_fp4.py@de5f26d5 is_fp4_marlin_supported: SM80+);
//     W4A16_NVFP4 pins MarlinNvFp4LinearKernel on every chip.
//   - mxfp4.py@afdb4a4f get_mxfp4_backend: SM100 FlashInfer TRT-LLM
//     MXFP4×BF16; SM90 triton_kernels (matmul_ogs); SM80 Marlin.
//   - gptq_marlin.py, compressed_tensors WNA16: Machete on SM90 (group
//     -1/64/128, no act-order), Marlin elsewhere; awq_marlin.py: Marlin;
//     MoE fused_marlin_moe.
//   - compressed_tensors W8A8 int8: CUTLASS int8 scaled_mm on SM80/SM90;
//     csrc/quantization/w8a8/cutlass/scaled_mm_c3x_sm100.cu@b91ee1b4 passes
//     no int8 kernel on SM100 ("int8 not supported on SM100").
//
// An unquantized model resolves to BF16 kernels on every chip.
func ResolveQuant(m *catalog.Model, c *catalog.Chip) (QuantKernel, error) {
	a := archOf(c)
	k := QuantKernel{Format: m.QuantScheme, Arch: a.String(), Compute: "bfloat16",
		Linear: "cuBLAS bf16", GEMMLaws: []string{"bfloat16"}, MoELaws: []string{"bfloat16"}}
	if m.IsMoE() {
		k.MoE = "fused_moe (triton) bf16"
	}
	if m.QuantMethod == "" {
		k.Format = "unquantized " + m.Dtype
		return k, nil
	}
	if k.Format == "" {
		k.Format = m.QuantMethod + " " + m.WeightDtype
	}
	if min := m.QuantMinCapability; min > 0 && int(a) < min {
		// vllm/config/vllm.py _get_quantization_config: "The quantization
		// method ... is not supported for the current GPU. Minimum
		// capability: ..."
		return k, fmt.Errorf("model %s: %s (%s) cannot run on %s (%s): vLLM's %s quantization needs compute capability %d.%d or newer; chips that can: %s",
			m.ID, k.Format, m.QuantMethod, c.Name, a, m.QuantMethod, min/10, min%10, chipsFrom(smArch(min)))
	}
	// Marlin's weight-only path (bf16 math on dequantized weights): the
	// stand-in laws are the MoE Marlin laws, and the bf16 GEMM (no W4A16
	// GEMM law is fitted; it matches the math, not the 4-bit weight reads).
	marlin := func(linear, moe string, moeLaws ...string) {
		k.Linear, k.Compute, k.GEMMLaws = linear, "bfloat16", []string{"w4a16", "bfloat16"}
		if m.IsMoE() {
			k.MoE, k.MoELaws = moe, moeLaws
		}
	}
	switch {
	case m.WeightDtype == "fp8" && m.ActDtype == "fp8":
		if a < sm90 {
			marlin("Marlin fp8 W8A16 (no FP8 tensor cores)", "fused_marlin_moe fp8 W8A16", "fp8_marlin", "int4_wo", "bfloat16")
			k.GEMMLaws = []string{"fp8_marlin", "bfloat16"}
			break
		}
		k.Compute = "fp8"
		if m.WeightBlock > 0 {
			k.Linear, k.GEMMLaws = "CUTLASS/DeepGEMM block fp8 W8A8", []string{"fp8_block", "fp8"}
			k.MoE, k.MoELaws = "fused_moe (triton/DeepGEMM) block fp8", []string{"fp8_block", "fp8"}
			if a == sm100 {
				k.MoE = "FlashInfer TRT-LLM block fp8 MoE"
			}
		} else {
			k.Linear, k.GEMMLaws = "CUTLASS scaled_mm fp8 W8A8", []string{"fp8", "fp8_block"}
			k.MoE, k.MoELaws = "fused_moe (triton) fp8 W8A8", []string{"fp8", "fp8_block"}
			if a == sm100 {
				k.MoE = "FlashInfer CUTLASS fp8 MoE"
			}
		}
	case m.WeightDtype == "fp8":
		marlin("Marlin fp8 W8A16", "fused_marlin_moe fp8 W8A16", "fp8_marlin", "int4_wo", "bfloat16")
		k.GEMMLaws = []string{"fp8_marlin", "bfloat16"}
	case m.WeightDtype == "nvfp4" && m.ActDtype == "nvfp4" && a == sm100:
		k.Linear, k.Compute, k.GEMMLaws = "CUTLASS/FlashInfer nvfp4 W4A4", "fp4", []string{"nvfp4"}
		k.MoE, k.MoELaws = "FlashInfer CUTLASS/TRT-LLM nvfp4 MoE", []string{"nvfp4", "w4a16_mxfp4"}
	case m.WeightDtype == "nvfp4":
		// W4A16 checkpoints, and W4A4 below SM100: Marlin dequantizes.
		marlin("Marlin nvfp4 W4A16", "fused_marlin_moe nvfp4 W4A16", "w4a16_nvfp4", "w4a16_mxfp4_marlin", "w4a16_mxfp4", "int4_wo")
	case m.WeightDtype == "mxfp4" && m.QuantMethod != "mxfp4":
		// compressed-tensors W4A16 MXFP4 quantizes the linear layers too:
		// Marlin, as for NVFP4 weight-only.
		marlin("Marlin mxfp4 W4A16", "fused_marlin_moe mxfp4 W4A16", "w4a16_mxfp4_marlin", "w4a16_mxfp4", "int4_wo")
	case m.WeightDtype == "mxfp4":
		switch a {
		case sm100:
			marlin("", "FlashInfer TRT-LLM mxfp4×bf16 MoE", "w4a16_mxfp4", "w4a16_mxfp4_marlin", "nvfp4")
		case sm90:
			marlin("", "triton_kernels matmul_ogs mxfp4 MoE", "w4a16_mxfp4", "w4a16_mxfp4_marlin", "int4_wo")
		default:
			marlin("", "fused_marlin_moe mxfp4 W4A16", "w4a16_mxfp4_marlin", "w4a16_mxfp4", "int4_wo")
		}
		k.Linear = "cuBLAS bf16 (mxfp4 quantizes the experts only)"
		k.GEMMLaws = []string{"bfloat16"}
	case m.WeightDtype == "int8" && m.ActDtype == "int8":
		if a == sm100 {
			var can []string
			for _, ch := range catalog.Chips() {
				if archOf(ch) < sm100 {
					can = append(can, ch.Name)
				}
			}
			return k, fmt.Errorf("model %s: W8A8 int8 (%s) cannot run on %s (%s): vLLM's CUTLASS scaled_mm has no int8 kernel on SM100; chips that can: %s",
				m.ID, k.Format, c.Name, a, strings.Join(can, ", "))
		}
		k.Linear, k.Compute, k.GEMMLaws = "CUTLASS scaled_mm int8 W8A8", "int8", []string{"int8", "fp8", "bfloat16"}
		k.MoE, k.MoELaws = "fused_moe (triton) int8 W8A8", []string{"int8", "fp8", "bfloat16"}
	case m.WeightDtype == "int4" || m.WeightDtype == "int8":
		// choose_mp_linear_kernel takes Machete first on SM90 where it can
		// implement the layer (machete_utils: bf16 activations with group
		// -1, 64 or 128; act-order only when K is not split, taken here as
		// never); awq_marlin.py calls the Marlin GEMM directly.
		lin := "Marlin"
		machGroup := m.WeightGroup == 0 || m.WeightGroup == 64 || m.WeightGroup == 128
		if a == sm90 && machGroup && m.QuantMethod != "awq" && !m.ActOrder {
			lin = "Machete"
		}
		bits := 4
		if m.WeightDtype == "int8" {
			bits = 8
		}
		marlin(fmt.Sprintf("%s int%d W%dA16", lin, bits, bits), fmt.Sprintf("fused_marlin_moe int%d W%dA16", bits, bits), "int4_wo", "w4a16_mxfp4_marlin", "w4a16_mxfp4")
		if bits == 8 {
			k.MoELaws = append([]string{"int8_wo"}, k.MoELaws...)
		}
	default:
		return k, fmt.Errorf("model %s: %s weights (%s) have no kernel mapping", m.ID, m.WeightDtype, m.QuantMethod)
	}
	if !m.IsMoE() {
		k.MoE = ""
	}
	if label := expertLabel(m); label != "" {
		e, err := ExpertKernel(m, c, label)
		if err != nil {
			return k, err
		}
		k.MoE, k.MoELaws = e.MoE, e.MoELaws
	}
	return k, nil
}

// expertLabel is the graph dtype of a DeepSeek-V4 checkpoint's routed
// experts when they are stored in another format than its fp8 linears
// ("" otherwise).
func expertLabel(m *catalog.Model) string {
	switch m.ExpertDtype {
	case "fp4":
		return "mxfp4"
	case "nvfp4":
		return "nvfp4"
	}
	return ""
}

// ExpertKernel resolves the fused-MoE kernel for routed experts labelled
// label ("nvfp4" or "mxfp4") in a checkpoint whose linears are in another
// format: vLLM's DeepseekV4FP8Config
// (vllm/models/deepseek_v4/quant_config.py@e95bf0df get_quant_method)
// hands the experts to ModelOptNvFp4FusedMoE (NVIDIA's NVFP4 checkpoint,
// decoder layers) or Mxfp4MoEMethod (MXFP4 experts, and the NVFP4
// checkpoint's MTP layer), which pick their kernels per chip as the
// ModelOpt NVFP4 and mxfp4 methods do.
func ExpertKernel(m *catalog.Model, c *catalog.Chip, label string) (QuantKernel, error) {
	p := *m
	p.ExpertDtype, p.QuantMinCapability = "", 0
	switch label {
	case "nvfp4":
		p.QuantMethod, p.WeightDtype, p.ActDtype, p.WeightGroup = "modelopt", "nvfp4", "nvfp4", 16
	case "mxfp4":
		p.QuantMethod, p.WeightDtype, p.ActDtype, p.WeightGroup = "mxfp4", "mxfp4", "", 32
	default:
		return QuantKernel{}, fmt.Errorf("model %s: no expert kernel for %s experts", m.ID, label)
	}
	return ResolveQuant(&p, c)
}

// String is the one-line summary `blis catalog show` prints.
func (k QuantKernel) String() string {
	s := fmt.Sprintf("%s on %s: linear %s", k.Format, k.Arch, k.Linear)
	if k.MoE != "" {
		s += "; MoE " + k.MoE
	}
	return s + "; math in " + k.Compute
}

// chipsFrom names the catalog's chips of architecture min or newer.
func chipsFrom(min smArch) string {
	var can []string
	for _, ch := range catalog.Chips() {
		if archOf(ch) >= min {
			can = append(can, ch.Name)
		}
	}
	return strings.Join(can, ", ")
}
