package catalog

import (
	"strings"
	"testing"
)

// moeQuant is a small Mixtral-style MoE config with the given
// quantization_config object.
func moeQuant(q string) []byte {
	return cfgJSON(`"num_local_experts": 4, "num_experts_per_tok": 2, "quantization_config": ` + q)
}

// Each common checkpoint format resolves to its weight dtype, activation
// dtype and bytes per parameter with scales and zero points included.
func TestParseQuantFormats(t *testing.T) {
	tests := []struct {
		name, q                string
		method, dtype, act     string
		bpp, attnBpp, denseBpp float64
		group, block           int
		scheme                 string
	}{
		{"fp8 per-tensor", `{"quant_method": "fp8", "activation_scheme": "dynamic"}`,
			"fp8", "fp8", "fp8", 1, 1, 1, 0, 0, "W8A8 fp8 per-tensor"},
		{"fp8 block", `{"quant_method": "fp8", "weight_block_size": [128, 128]}`,
			"fp8", "fp8", "fp8", 1 + 4.0/16384, 1 + 4.0/16384, 1 + 4.0/16384, 0, 128, "W8A8 fp8 128×128 blocks"},
		{"mxfp4 gpt-oss", `{"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}`,
			"mxfp4", "mxfp4", "", 0.5 + 1.0/32, 2, 2, 32, 0, "W4A16 mxfp4 experts g32"},
		{"awq g128 zero point", `{"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true, "version": "gemm"}`,
			"awq", "int4", "", 0.5 + 2.0/128 + 0.5/128, 0.5 + 2.0/128 + 0.5/128, 0.5 + 2.0/128 + 0.5/128, 128, 0, "W4A16 int4 g128 (AWQ, zero points)"},
		{"awq symmetric", `{"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": false}`,
			"awq", "int4", "", 0.5 + 2.0/64, 0.5 + 2.0/64, 0.5 + 2.0/64, 64, 0, "W4A16 int4 g64 (AWQ)"},
		{"gptq 4-bit act-order", `{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true, "sym": true}`,
			"gptq", "int4", "", 0.5 + 2.0/128, 0.5 + 2.0/128, 0.5 + 2.0/128, 128, 0, "W4A16 int4 g128 (GPTQ, act-order)"},
		{"gptq 8-bit asymmetric per-channel", `{"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": false, "sym": false}`,
			"gptq", "int8", "", 1, 1, 1, 0, 0, "W8A16 int8 per-channel (GPTQ, zero points)"},
		{"gptq asymmetric groups", `{"quant_method": "gptq", "bits": 4, "group_size": 32, "sym": false}`,
			"gptq", "int4", "", 0.5 + 2.0/32 + 0.5/32, 0.5 + 2.0/32 + 0.5/32, 0.5 + 2.0/32 + 0.5/32, 32, 0, "W4A16 int4 g32 (GPTQ, zero points)"},
		{"compressed-tensors W4A16", `{"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ["lm_head", "re:.*self_attn.*"],
			"config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "symmetric": true}}}}`,
			"compressed-tensors", "int4", "", 0.5 + 2.0/128, 2, 0.5 + 2.0/128, 128, 0, "W4A16 int4 g128 (compressed-tensors)"},
		{"compressed-tensors W4A16 act-order", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128, "actorder": "group"}}}}`,
			"compressed-tensors", "int4", "", 0.5 + 2.0/128, 0.5 + 2.0/128, 0.5 + 2.0/128, 128, 0, "W4A16 int4 g128, act-order (compressed-tensors)"},
		{"compressed-tensors W8A16 int", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": true}}}}`,
			"compressed-tensors", "int8", "", 1, 1, 1, 0, 0, "W8A16 int8 per-channel (compressed-tensors)"},
		{"compressed-tensors W8A8 int8", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}, "input_activations": {"num_bits": 8, "type": "int", "dynamic": true, "strategy": "token"}}}}`,
			"compressed-tensors", "int8", "int8", 1, 1, 1, 0, 0, "W8A8 int8 (compressed-tensors)"},
		{"compressed-tensors W4A4 nvfp4", `{"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
			"config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}, "input_activations": {"num_bits": 4, "type": "float", "group_size": 16}}}}`,
			"compressed-tensors", "nvfp4", "nvfp4", 0.5 + 1.0/16, 0.5 + 1.0/16, 0.5 + 1.0/16, 16, 0, "W4A4 nvfp4 g16 (compressed-tensors)"},
		{"compressed-tensors W4A16 nvfp4", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}}}}`,
			"compressed-tensors", "nvfp4", "", 0.5 + 1.0/16, 0.5 + 1.0/16, 0.5 + 1.0/16, 16, 0, "W4A16 nvfp4 g16 (compressed-tensors)"},
		{"compressed-tensors W4A16 mxfp4", `{"quant_method": "compressed-tensors", "format": "mxfp4-pack-quantized",
			"config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "strategy": "group", "group_size": 32}}}}`,
			"compressed-tensors", "mxfp4", "", 0.5 + 1.0/32, 0.5 + 1.0/32, 0.5 + 1.0/32, 32, 0, "W4A16 mxfp4 g32 (compressed-tensors)"},
		{"compressed-tensors fp8 dynamic", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}, "input_activations": {"num_bits": 8, "type": "float", "dynamic": true}}}}`,
			"compressed-tensors", "fp8", "fp8", 1, 1, 1, 0, 0, "W8A8 fp8 per-channel (compressed-tensors)"},
		{"compressed-tensors fp8 block", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}, "input_activations": {"num_bits": 8, "type": "float", "dynamic": true}}}}`,
			"compressed-tensors", "fp8", "fp8", 1 + 4.0/16384, 1 + 4.0/16384, 1 + 4.0/16384, 0, 128, "W8A8 fp8 128×128 blocks (compressed-tensors)"},
		{"compressed-tensors W8A16 fp8", `{"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}`,
			"compressed-tensors", "fp8", "", 1, 1, 1, 0, 0, "W8A16 fp8 per-channel (compressed-tensors)"},
		{"modelopt nvfp4 in config.json", `{"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": ["lm_head", "model.layers.*.self_attn*"]}`,
			"modelopt", "nvfp4", "nvfp4", 0.5 + 1.0/16, 2, 0.5 + 1.0/16, 16, 0, "W4A4 nvfp4 g16 (ModelOpt)"},
		{"modelopt fp8 per-channel", `{"quant_method": "modelopt", "quant_algo": "FP8_PER_CHANNEL_PER_TOKEN"}`,
			"modelopt", "fp8", "fp8", 1, 1, 1, 0, 0, "W8A8 fp8 per-channel (ModelOpt)"},
		{"modelopt fp8 blocks", `{"quant_method": "modelopt", "quant_algo": "fp8_pb_wo"}`,
			"modelopt", "fp8", "fp8", 1 + 4.0/16384, 1 + 4.0/16384, 1 + 4.0/16384, 0, 128, "W8A8 fp8 128×128 blocks (ModelOpt FP8_PB_WO)"},
		{"modelopt W4A16 nvfp4", `{"quant_algo": "W4A16_NVFP4"}`,
			"modelopt", "nvfp4", "", 0.5 + 1.0/16, 0.5 + 1.0/16, 0.5 + 1.0/16, 16, 0, "W4A16 nvfp4 g16 (ModelOpt)"},
		{"modelopt mixed: nvfp4 experts, fp8 attention", `{"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
			"quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16}, "model.layers.1.mlp.experts": {"quant_algo": "NVFP4", "group_size": 16},
				"model.layers.0.self_attn.qkv_proj": {"quant_algo": "FP8"}, "lm_head": {"quant_algo": "FP8"}}}`,
			"modelopt", "nvfp4", "nvfp4", 0.5 + 1.0/16, 1, 2, 16, 0, "mixed (ModelOpt): experts nvfp4, attention fp8, dense/shared unquantized"},
		// ModelOpt's fields under quant_method fp8 (as DeepSeek-V4-Flash-NVFP4's
		// config.json has them): vLLM's ModelOpt configs claim only a
		// quant_method starting with "modelopt", so Fp8Config serves it.
		{"modelopt fields under quant_method fp8", `{"quant_method": "fp8", "producer": {"name": "modelopt"}, "quant_algo": "MIXED_PRECISION",
			"ignore": ["*.attn.*", "*.ffn.shared_experts.*", "head"], "quantized_layers": {"layers.0.ffn.experts": {"quant_algo": "NVFP4", "group_size": 16}}}`,
			"fp8", "fp8", "fp8", 1, 1, 1, 0, 0, "W8A8 fp8 per-tensor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseConfig("q.json", moeQuant(tt.q))
			if err != nil {
				t.Fatal(err)
			}
			if m.QuantMethod != tt.method || m.WeightDtype != tt.dtype || m.ActDtype != tt.act || m.WeightGroup != tt.group || m.WeightBlock != tt.block || m.QuantScheme != tt.scheme {
				t.Errorf("got method %q dtype %q act %q group %d block %d scheme %q, want %q %q %q %d %d %q",
					m.QuantMethod, m.WeightDtype, m.ActDtype, m.WeightGroup, m.WeightBlock, m.QuantScheme, tt.method, tt.dtype, tt.act, tt.group, tt.block, tt.scheme)
			}
			if m.ActOrder != strings.Contains(tt.scheme, "act-order") {
				t.Errorf("act order %v for %q", m.ActOrder, tt.scheme)
			}
			if want := map[bool]int{true: 89}[tt.method == "modelopt" && tt.dtype == "fp8"]; m.QuantMinCapability != want {
				t.Errorf("minimum capability %d, want %d", m.QuantMinCapability, want)
			}
			if m.WeightBytesPerParam != tt.bpp || m.AttnWeightBytesPerParam != tt.attnBpp || m.DenseWeightBytesPerParam != tt.denseBpp {
				t.Errorf("bytes per parameter: experts %g attention %g dense %g, want %g %g %g",
					m.WeightBytesPerParam, m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam, tt.bpp, tt.attnBpp, tt.denseBpp)
			}
			// Each part's format: the quantized format where the part has
			// the quantized bytes, the model dtype where it stays unquantized,
			// and in the mixed case the format its quantized_layers name.
			wantPart := func(bpp float64) string {
				if bpp >= m.DtypeBytes {
					return m.Dtype
				}
				if strings.HasPrefix(tt.scheme, "mixed") {
					return "fp8" // the mixed rows quantize attention in FP8
				}
				return tt.dtype
			}
			if m.AttnWeightDtype != wantPart(tt.attnBpp) || m.DenseWeightDtype != wantPart(tt.denseBpp) {
				t.Errorf("part formats: attention %q dense %q, want %q %q", m.AttnWeightDtype, m.DenseWeightDtype, wantPart(tt.attnBpp), wantPart(tt.denseBpp))
			}
		})
	}
}

// Unmodelled and malformed quantization configs are one-line errors that
// name the file, the key, the bad value and what is allowed.
func TestParseQuantErrors(t *testing.T) {
	tests := []struct {
		name, q string
		want    []string
	}{
		{"bitsandbytes", `{"quant_method": "bitsandbytes", "load_in_4bit": true}`, []string{`"quantization_config.quant_method"`, `"bitsandbytes" is not modelled`, "awq, gptq"}},
		{"gguf", `{"quant_method": "gguf"}`, []string{"not modelled"}},
		{"unknown", `{"quant_method": "squeezellm"}`, []string{`unsupported "squeezellm"`}},
		{"awq 8-bit", `{"quant_method": "awq", "bits": 8, "group_size": 128}`, []string{`"quantization_config.bits"`, "8-bit AWQ"}},
		{"gptq 3-bit", `{"quant_method": "gptq", "bits": 3, "group_size": 128}`, []string{`"quantization_config.bits"`, "3-bit GPTQ"}},
		{"gptq no bits", `{"quant_method": "gptq", "group_size": 128}`, []string{`"quantization_config.bits"`, "missing"}},
		{"group zero", `{"quant_method": "awq", "bits": 4, "group_size": 0}`, []string{`"quantization_config.group_size"`, "is 0"}},
		{"group string", `{"quant_method": "gptq", "bits": 4, "group_size": "128"}`, []string{`"quantization_config.group_size"`, "a string"}},
		{"ct W4A8 int", `{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}, "input_activations": {"num_bits": 8, "type": "int"}}}}`,
			[]string{`"quantization_config.config_groups.g.weights.num_bits"`, "4-bit \"int\" weights with 8-bit"}},
		{"ct block without structure", `{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "block"}}}}`,
			[]string{"block_structure"}},
		{"ct actorder number", `{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 128, "actorder": 1}}}}`,
			[]string{`"quantization_config.config_groups.g.weights.actorder"`, "a number"}},
		{"ct fp4 group 64", `{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 4, "type": "float", "group_size": 64}}}}`,
			[]string{`"quantization_config.config_groups.g.weights.group_size"`, "64 for 4-bit float"}},
		{"modelopt mixed empty", `{"quant_algo": "MIXED_PRECISION"}`, []string{`"quantization_config.quantized_layers"`, "missing or empty"}},
		{"modelopt mixed unknown algo", `{"quant_algo": "MIXED_PRECISION", "quantized_layers": {"model.layers.0.mlp.experts": {"quant_algo": "INT4_AWQ"}}}`,
			[]string{`quant_algo"`, `unsupported "INT4_AWQ"`}},
		{"modelopt mixed two expert formats", `{"quant_algo": "MIXED_PRECISION", "quantized_layers": {"a.experts": {"quant_algo": "NVFP4"}, "b.experts": {"quant_algo": "FP8"}}}`,
			[]string{"one format per class"}},
		{"modelopt nvfp4 group", `{"quant_algo": "MIXED_PRECISION", "quantized_layers": {"a.experts": {"quant_algo": "NVFP4", "group_size": 32}}}`,
			[]string{"group_size", "group size 16"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig("q.json", moeQuant(tt.q))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tt.want, "q.json") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// A ModelOpt checkpoint whose quantization lives in hf_quant_config.json
// beside config.json (vLLM's get_hf_file_to_dict fallback), with
// MIXED_PRECISION NVFP4 routed experts and excluded attention and shared
// experts, as NVIDIA's DeepSeek-V4-Flash-NVFP4 export has it.
func TestParseHFQuantConfigMixed(t *testing.T) {
	m, err := ParseConfig("config.json", cfgJSON(`"num_local_experts": 4, "num_experts_per_tok": 2`))
	if err != nil {
		t.Fatal(err)
	}
	q := `{"producer": {"name": "modelopt", "version": "0.37"}, "quantization": {"quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": null, "group_size": 16,
		"exclude_modules": ["*.attn.*", "*.ffn.shared_experts.*", "head", "mtp.*"],
		"quantized_layers": {"layers.0.ffn.experts": {"quant_algo": "NVFP4", "group_size": 16}, "layers.1.ffn.experts": {"quant_algo": "NVFP4", "group_size": 16}}}}`
	if err := ParseHFQuantConfig(m, "hf_quant_config.json", []byte(q)); err != nil {
		t.Fatal(err)
	}
	if m.QuantMethod != "modelopt" || m.WeightDtype != "nvfp4" || m.ActDtype != "nvfp4" || m.WeightBytesPerParam != 0.5+1.0/16 ||
		m.AttnWeightBytesPerParam != 2 || m.DenseWeightBytesPerParam != 2 {
		t.Errorf("%+v", m)
	}
	// vLLM refuses an NVFP4 hf_quant_config.json without group_size,
	// kv_cache_quant_algo or exclude_modules.
	m2, _ := ParseConfig("config.json", cfgJSON(""))
	err = ParseHFQuantConfig(m2, "hf_quant_config.json", []byte(`{"quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": []}}`))
	if err == nil || !strings.Contains(err.Error(), `"quantization.kv_cache_quant_algo"`) || !strings.Contains(err.Error(), "hf_quant_config.json") {
		t.Errorf("NVFP4 without kv_cache_quant_algo: %v", err)
	}
	// config.json's own quantization_config wins, as in vLLM.
	m, err = ParseConfig("config.json", moeQuant(`{"quant_method": "fp8"}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := ParseHFQuantConfig(m, "hf_quant_config.json", []byte(q)); err != nil || m.WeightDtype != "fp8" {
		t.Errorf("ParseHFQuantConfig over a quantization_config: %v, dtype %s", err, m.WeightDtype)
	}
}

// FuzzParseHFQuantConfig: no input panics the hf_quant_config reader, and an
// accepted one leaves positive bytes per parameter.
func FuzzParseHFQuantConfig(f *testing.F) {
	f.Add([]byte(`{"quantization": {"quant_algo": "NVFP4", "group_size": 16, "kv_cache_quant_algo": null, "exclude_modules": ["lm_head"]}}`))
	f.Add([]byte(`{"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {"a.experts": {"quant_algo": "NVFP4", "group_size": 16}, "a.attn": {"quant_algo": "FP8"}}}}`))
	f.Add([]byte(`{"quantization": {"quant_algo": "W4A16_NVFP4"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseConfig("config.json", cfgJSON(`"num_local_experts": 4, "num_experts_per_tok": 2`))
		if err != nil {
			t.Fatal(err)
		}
		if err := ParseHFQuantConfig(m, "fuzz.json", data); err != nil {
			return
		}
		if !(m.WeightBytesPerParam > 0 && m.AttnWeightBytesPerParam > 0 && m.DenseWeightBytesPerParam > 0) {
			t.Fatalf("accepted bytes per parameter: %+v", m)
		}
	})
}

// A MIXED_PRECISION checkpoint leaves every module its quantized_layers do
// not name unquantized (vLLM's ModelOptMixedPrecisionConfig): routed
// experts (or, in a dense model, the MLPs) it does not list stay in the
// model dtype even when attention is quantized, and a list that quantizes
// no priced module is a one-line error, not a crash.
func TestParseModelOptMixedUnlistedMain(t *testing.T) {
	attnOnly := `{"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
		"quantized_layers": {"model.layers.0.self_attn.qkv_proj": {"quant_algo": "FP8"}}}`
	for name, data := range map[string][]byte{
		"moe":   moeQuant(attnOnly),
		"dense": cfgJSON(`"quantization_config": ` + attnOnly),
	} {
		m, err := ParseConfig("q.json", data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.WeightBytesPerParam != m.DtypeBytes || m.AttnWeightBytesPerParam != 1 || m.DenseWeightBytesPerParam != m.DtypeBytes {
			t.Errorf("%s: bytes per parameter: main %g attention %g dense %g, want %g 1 %g",
				name, m.WeightBytesPerParam, m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam, m.DtypeBytes, m.DtypeBytes)
		}
	}
	_, err := ParseConfig("q.json", moeQuant(`{"quant_method": "modelopt", "quant_algo": "MIXED_PRECISION",
		"quantized_layers": {"lm_head": {"quant_algo": "FP8"}}}`))
	if err == nil || !strings.Contains(err.Error(), `"quantization_config.quantized_layers"`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("lm_head only: error %v, want a one-line error naming quantization_config.quantized_layers", err)
	}
}
