package catalog

import (
	"math"
	"strings"
	"testing"
)

// gemmDtypes maps each GEMM and MoE operator of a layer kind to its dtype.
func gemmDtypes(ops []Op) map[string]string {
	out := map[string]string{}
	for _, op := range ops {
		switch {
		case op.Kind == OpGEMM:
			out[op.Name] = op.Dtype
		case op.MoE != nil:
			out[op.Name] = op.MoE.Dtype
		}
	}
	return out
}

// Each part of a graph carries its own checkpoint format: a mixed-precision
// ModelOpt checkpoint (NVFP4 experts, FP8 attention, unquantized router
// and head) labels its attention GEMMs fp8, not the experts' nvfp4; a
// uniform fp8 checkpoint labels every linear fp8 and the head bf16.
func TestGraphPartDtypes(t *testing.T) {
	mixed := strings.Replace(string(moeQuant(`{"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
		"quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
			"model.layers.0.self_attn.qkv_proj": {"quant_algo": "FP8"}, "model.layers.0.self_attn.o_proj": {"quant_algo": "FP8"}}}`)),
		`"architectures": ["LlamaForCausalLM"], "model_type": "llama"`, `"architectures": ["MixtralForCausalLM"], "model_type": "mixtral"`, 1)
	m, err := ParseConfig("mixed.json", []byte(mixed))
	if err != nil {
		t.Fatal(err)
	}
	g, err := DeriveGraph(m)
	if err != nil {
		t.Fatal(err)
	}
	got := gemmDtypes(g.Layers[0].Ops)
	for name, want := range map[string]string{"qkv_proj": "fp8", "o_proj": "fp8", "experts": "nvfp4", "gate": "bf16"} {
		if got[name] != want {
			t.Errorf("mixed: %s is %q, want %q (all: %v)", name, got[name], want, got)
		}
	}
	if h := findOp(g.Head, "lm_head"); h == nil || h.Dtype != "bf16" {
		t.Errorf("mixed: head %+v, want bf16", h)
	}

	g = mustGraph(t, "Qwen/Qwen3-32B-FP8")
	for name, dt := range gemmDtypes(g.Layers[0].Ops) {
		if dt != "fp8" {
			t.Errorf("Qwen3-32B-FP8: %s is %q, want fp8", name, dt)
		}
	}
	if h := findOp(g.Head, "lm_head"); h == nil || h.Dtype != "bf16" {
		t.Errorf("Qwen3-32B-FP8: head %+v, want bf16", h)
	}
}

// NVIDIA's DeepSeek-V4-Flash-NVFP4 as vLLM serves it (config.json's
// quant_method fp8 → DeepseekV4FP8Config, moe_quant_algo NVFP4): fp8
// 128×128-block attention and shared experts with e8m0 scales, NVFP4 routed
// experts in the 43 decoder layers, MXFP4 experts in the MTP layer, bf16
// router and head; the same 284 B parameters as V4-Flash with 2 GiB more
// weight bytes (1/16 against 1/32 scale bytes per expert weight).
func TestDSV4FlashNVFP4(t *testing.T) {
	m, err := LookupModel("deepseek-v4-flash-nvfp4")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "nvidia/DeepSeek-V4-Flash-NVFP4" || m.QuantMethod != "fp8" || m.WeightDtype != "fp8" || m.ActDtype != "fp8" || m.WeightBlock != 128 ||
		m.ExpertDtype != "nvfp4" || m.WeightBytesPerParam != 0.5+1.0/16 || m.AttnWeightBytesPerParam != 1+1.0/16384 ||
		m.AttnWeightDtype != "fp8" || m.DenseWeightDtype != "fp8" || !strings.Contains(m.QuantScheme, "nvfp4") {
		t.Errorf("%+v", m)
	}
	flash, err := LookupModel("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	total, active := m.DSV4Params()
	ft, fa := flash.DSV4Params()
	if total != ft || active != fa || math.Abs(total/1e9-284)/284 > 0.01 {
		t.Errorf("params %.2f B total %.2f B active, V4-Flash %.2f B %.2f B, want the same ≈284 B", total/1e9, active/1e9, ft/1e9, fa/1e9)
	}

	g := mustGraph(t, "nvidia/DeepSeek-V4-Flash-NVFP4")
	want := map[string]string{"fused_wqa_wkv": "fp8", "wq_b": "fp8", "wo_a": "fp8", "wo_b": "fp8",
		"shared_experts.gate_up_proj": "fp8", "shared_experts.down_proj": "fp8", "gate": "bf16", "experts": "nvfp4"}
	for _, k := range g.Layers {
		got := gemmDtypes(k.Ops)
		for name, dt := range want {
			if got[name] != dt {
				t.Errorf("kind %s: %s is %q, want %q", k.Name, name, got[name], dt)
			}
		}
	}
	if h := findOp(g.Head, "lm_head"); h == nil || h.Dtype != "bf16" {
		t.Errorf("head %+v, want bf16", h)
	}
	if g.Draft == nil || len(g.Draft.Layers) != 1 {
		t.Fatalf("draft %+v", g.Draft)
	}
	got := gemmDtypes(g.Draft.Layers[0].Ops)
	for name, dt := range map[string]string{"e_proj": "fp8", "h_proj": "fp8", "wq_b": "fp8", "experts": "mxfp4", "shared_head.head": "bf16"} {
		if got[name] != dt {
			t.Errorf("MTP layer: %s is %q, want %q", name, got[name], dt)
		}
	}
}

// moe_quant_algo is read as DeepseekV4FP8Config reads it: upper-cased,
// NVFP4 selects NVFP4 experts, anything else leaves them MXFP4; a value
// that is not a string is an error naming the key.
func TestDSV4MoEQuantAlgo(t *testing.T) {
	q := func(algo any) map[string]any {
		return map[string]any{"quantization_config": map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic",
			"fmt": "e4m3", "scale_fmt": "ue8m0", "weight_block_size": []int{128, 128}, "moe_quant_algo": algo}}
	}
	for algo, want := range map[string]string{"NVFP4": "nvfp4", "nvfp4": "nvfp4", "MXFP4": "fp4", "": "fp4"} {
		m, err := ParseConfig("v4.json", dsv4Config(t, q(algo)))
		if err != nil {
			t.Errorf("moe_quant_algo %q: %v", algo, err)
		} else if m.ExpertDtype != want {
			t.Errorf("moe_quant_algo %q: experts %q, want %q", algo, m.ExpertDtype, want)
		}
	}
	_, err := ParseConfig("v4.json", dsv4Config(t, q(4)))
	if err == nil || !strings.Contains(err.Error(), "moe_quant_algo") || !strings.Contains(err.Error(), "v4.json") {
		t.Errorf("numeric moe_quant_algo: %v", err)
	}
}
