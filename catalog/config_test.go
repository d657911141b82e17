package catalog

import (
	"io/fs"
	"strings"
	"testing"
)

// base is a small valid dense config; tests splice keys into it.
const base = `"architectures": ["LlamaForCausalLM"], "model_type": "llama",
	"num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2,
	"intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048, "torch_dtype": "bfloat16"`

func cfgJSON(extra string) []byte {
	if extra == "" {
		return []byte("{" + base + "}")
	}
	return []byte("{" + base + ", " + extra + "}")
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string // substrings of the error
	}{
		{"not json", `{"num_hidden_layers": 4`, []string{"x.json", "not valid JSON"}},
		{"array", `[1, 2]`, []string{"x.json", "want a JSON object"}},
		{"trailing", string(cfgJSON("")) + `{}`, []string{"trailing data"}},
		{"missing layers", `{"architectures": ["X"], "model_type": "x", "hidden_size": 8}`, []string{`"num_hidden_layers"`, "missing"}},
		{"string int", `{"architectures": ["X"], "model_type": "x", "num_hidden_layers": "4"}`, []string{`"num_hidden_layers"`, "a string, want an integer"}},
		{"float int", string(cfgJSON(`"head_dim": 32.5`)), []string{`"head_dim"`, "not an integer"}},
		{"negative", `{"architectures": ["X"], "model_type": "x", "num_hidden_layers": -1}`, []string{`"num_hidden_layers"`, "out of range"}},
		{"huge", `{"architectures": ["X"], "model_type": "x", "num_hidden_layers": 99999999999}`, []string{"out of range"}},
		{"zero hidden", `{"architectures": ["X"], "model_type": "x", "num_hidden_layers": 2, "hidden_size": 0}`, []string{`"hidden_size"`, "want ≥ 1"}},
		{"no architectures", `{"model_type": "x"}`, []string{`"architectures"`}},
		{"kv heads", string(cfgJSON(`"num_key_value_heads": 3`)), []string{`"num_key_value_heads"`, "does not divide"}},
		{"dtype", string(cfgJSON(`"torch_dtype": "int8"`)), []string{`"torch_dtype"`, "unsupported dtype"}},
		{"linear attention", string(cfgJSON(`"layer_types": ["full_attention", "linear_attention", "full_attention", "full_attention"]`)),
			[]string{`"layer_types"`, "linear_attention"}},
		{"layer types length", string(cfgJSON(`"layer_types": ["full_attention"]`)), []string{`"layer_types"`, "1 entries"}},
		{"sliding without window", string(cfgJSON(`"layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]`)),
			[]string{`"sliding_window"`}},
		{"nested text_config", `{"architectures": ["X"], "model_type": "vl", "text_config": {"num_hidden_layers": 4}}`,
			[]string{`"text_config"`, "not supported", "KimiK25ForConditionalGeneration"}},
		{"wrapped decoder error", `{"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25", "text_config": {"architectures": ["X"], "model_type": "x", "num_hidden_layers": 0}}`,
			[]string{`"text_config.num_hidden_layers"`, "want ≥ 1"}},
		{"top-k", string(cfgJSON(`"num_local_experts": 4, "num_experts_per_tok": 5`)), []string{`"num_experts_per_tok"`, "want 1..4"}},
		{"top-k missing", string(cfgJSON(`"num_local_experts": 4`)), []string{`"num_experts_per_tok"`, "missing"}},
		{"top-k disagree", string(cfgJSON(`"num_local_experts": 4, "num_experts_per_tok": 2, "experts_per_token": 1`)), []string{`"experts_per_token"`}},
		{"quant method", string(cfgJSON(`"quantization_config": {"quant_method": "bitsandbytes"}`)), []string{`"quantization_config.quant_method"`, "not modelled", "bitsandbytes"}},
		{"mxfp4 dense", string(cfgJSON(`"quantization_config": {"quant_method": "mxfp4"}`)), []string{"MoE experts only"}},
		{"block size", string(cfgJSON(`"quantization_config": {"quant_method": "fp8", "weight_block_size": [128]}`)), []string{`"quantization_config.weight_block_size"`}},
		{"mla missing", string(cfgJSON(`"kv_lora_rank": 512`)), []string{`"qk_rope_head_dim"`, "missing"}},
		{"llama4 rope list", `{"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
			"num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048, "no_rope_layers": [1, 0]}`,
			[]string{`"no_rope_layers"`, "2 entries"}},
		{"llama4 interleave", `{"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
			"num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000, "max_position_embeddings": 2048, "num_local_experts": 4, "num_experts_per_tok": 1,
			"interleave_moe_layer_step": 0}`,
			[]string{`"interleave_moe_layer_step"`, "want ≥ 1"}},
		{"dsa heads missing", string(cfgJSON(`"kv_lora_rank": 512, "q_lora_rank": 64, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": 2048`)),
			[]string{`"index_n_heads"`, "missing"}},
		{"dsa topk zero", string(cfgJSON(`"kv_lora_rank": 512, "q_lora_rank": 64, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": 0`)),
			[]string{`"index_topk"`, "want ≥ 1"}},
		{"dsa without q lora", string(cfgJSON(`"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "index_topk": 2048, "index_n_heads": 8, "index_head_dim": 128`)),
			[]string{`"q_lora_rank"`, "indexer"}},
		{"max window layers", string(cfgJSON(`"sliding_window": 64, "use_sliding_window": true, "max_window_layers": 9`)), []string{`"max_window_layers"`}},
		{"mlp only layer", string(cfgJSON(`"num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 1, "mlp_only_layers": [7]`)), []string{`"mlp_only_layers"`}},
		{"list type", string(cfgJSON(`"architectures": "LlamaForCausalLM"`)), []string{`"architectures"`, "want a list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseConfig("x.json", []byte(tt.data))
			if err == nil {
				t.Fatalf("no error; got %+v", m)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseConfigFamilies(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		check func(*Model) bool
	}{
		{"defaults", `"num_key_value_heads": null`, func(m *Model) bool {
			return m.NumKVHeads == 8 && m.HeadDim == 32 && m.NumExperts == 0 && m.WeightBytesPerParam == 2
		}},
		{"no dtype is served as bfloat16", `"torch_dtype": null`, func(m *Model) bool { return m.Dtype == "bfloat16" }},
		{"mistral window on every layer", `"sliding_window": 64`, func(m *Model) bool {
			return m.SlidingWindow == 64 && m.SlidingWindowLayers == 4
		}},
		{"qwen window switched off", `"sliding_window": 64, "use_sliding_window": false, "max_window_layers": 2`, func(m *Model) bool {
			return m.SlidingWindow == 0 && m.SlidingWindowLayers == 0
		}},
		{"qwen window from max_window_layers", `"sliding_window": 64, "use_sliding_window": true, "max_window_layers": 1`, func(m *Model) bool {
			return m.SlidingWindow == 64 && m.SlidingWindowLayers == 3
		}},
		{"qwen sparse step and mlp_only_layers", `"num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
			"decoder_sparse_step": 2, "mlp_only_layers": [3], "shared_expert_intermediate_size": 128`, func(m *Model) bool {
			// layers 1 and 3 match (i+1)%2==0; 3 is dense.
			return m.NumMoELayers == 1 && m.MoELayerFreq == 2 && m.MoEIntermediateSize == 64 &&
				m.NumSharedExperts == 1 && m.SharedExpertIntermediateSize == 128
		}},
		{"deepseek first dense and frequency", `"n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
			"first_k_dense_replace": 1, "moe_layer_freq": 2, "n_shared_experts": 2`, func(m *Model) bool {
			// layers 1..3 with i%2==0: layer 2 only.
			return m.NumMoELayers == 1 && m.FirstDenseLayers == 1 && m.NumSharedExperts == 2 && m.SharedExpertIntermediateSize == 64
		}},
		{"mixtral experts use intermediate_size", `"num_local_experts": 8, "num_experts_per_tok": 2`, func(m *Model) bool {
			return m.MoEIntermediateSize == 512 && m.NumMoELayers == 4
		}},
		{"mla", `"kv_lora_rank": 64, "q_lora_rank": null, "qk_rope_head_dim": 16, "qk_nope_head_dim": 32, "v_head_dim": 32`, func(m *Model) bool {
			return m.IsMLA() && m.NumKVHeads == 1 && m.HeadDim == 48 && m.QLoraRank == 0
		}},
		{"fp8 block", `"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}`, func(m *Model) bool {
			return m.WeightDtype == "fp8" && m.WeightBytesPerParam == 1+4.0/16384 && m.AttnWeightBytesPerParam == m.WeightBytesPerParam
		}},
		{"fp8 attention excluded", `"quantization_config": {"quant_method": "fp8", "modules_to_not_convert": ["model.layers.*.self_attn"]}`, func(m *Model) bool {
			return m.WeightBytesPerParam == 1 && m.AttnWeightBytesPerParam == 2
		}},
		{"compressed-tensors int4", `"quantization_config": {"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 4, "type": "int", "group_size": 32}}}, "ignore": ["lm_head", "re:.*self_attn.*"]}`,
			func(m *Model) bool {
				return m.WeightDtype == "int4" && m.WeightBytesPerParam == 0.5+2.0/32 && m.AttnWeightBytesPerParam == 2
			}},
		{"compressed-tensors fp8", `"quantization_config": {"quant_method": "compressed-tensors",
			"config_groups": {"g": {"weights": {"num_bits": 8, "type": "float"}}}}`,
			func(m *Model) bool { return m.WeightDtype == "fp8" && m.WeightBytesPerParam == 1 }},
		{"modelopt in config", `"quantization_config": {"quant_algo": "NVFP4"}`, func(m *Model) bool {
			return m.WeightDtype == "nvfp4" && m.QuantMethod == "modelopt"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseConfig("x.json", cfgJSON(tt.extra))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(m) {
				t.Errorf("unexpected model: %+v", m)
			}
		})
	}
}

func TestParseHFQuantConfig(t *testing.T) {
	m, err := ParseConfig("x.json", cfgJSON(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := ParseHFQuantConfig(m, "q.json", []byte(`{"quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}`)); err != nil {
		t.Fatal(err)
	}
	if m.WeightDtype != "fp8" || m.QuantMethod != "modelopt" || m.WeightBytesPerParam != 1 {
		t.Errorf("%+v", m)
	}
	for _, bad := range []string{`{}`, `{"quantization": {"quant_algo": "W4A8"}}`, `[]`} {
		m, _ := ParseConfig("x.json", cfgJSON(""))
		if err := ParseHFQuantConfig(m, "q.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "q.json") {
			t.Errorf("ParseHFQuantConfig(%s) = %v, want an error naming q.json", bad, err)
		}
	}
}

// FuzzParseConfig checks that no input panics the parser and that whatever
// it accepts satisfies the invariants the kernel relies on.
func FuzzParseConfig(f *testing.F) {
	_ = fs.WalkDir(modelFS, "models", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".json") {
			if data, err := fs.ReadFile(modelFS, p); err == nil {
				f.Add(data)
			}
		}
		return nil
	})
	f.Add(cfgJSON(`"layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"], "sliding_window": 8`))
	f.Add([]byte(`{"text_config": {}}`))
	for _, q := range []string{
		`{"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true}`,
		`{"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": true, "sym": false}`,
		`{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8, "type": "int"}}}}`,
		`{"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [128, 128]}}}}`,
		`{"quant_algo": "MIXED_PRECISION", "quantized_layers": {"a.experts": {"quant_algo": "NVFP4", "group_size": 16}}}`,
		`{"quant_method": "bitsandbytes"}`,
	} {
		f.Add(moeQuant(q))
	}
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseConfig("fuzz.json", data)
		if err != nil {
			return
		}
		if m.NumLayers < 1 || m.HiddenSize < 1 || m.NumHeads < 1 || m.NumKVHeads < 1 || m.HeadDim < 1 || m.VocabSize < 1 {
			t.Fatalf("accepted non-positive sizes: %+v", m)
		}
		if !m.IsMLA() && m.NumHeads%m.NumKVHeads != 0 {
			t.Fatalf("accepted heads %d with KV heads %d", m.NumHeads, m.NumKVHeads)
		}
		if m.IsMoE() && (m.ExpertsPerToken < 1 || m.ExpertsPerToken > m.NumExperts || m.NumMoELayers < 1 || m.NumMoELayers > m.NumLayers) {
			t.Fatalf("accepted MoE numbers: %+v", m)
		}
		if m.SlidingWindowLayers > m.NumLayers || (m.SlidingWindowLayers > 0 && m.SlidingWindow < 1) {
			t.Fatalf("accepted sliding window %d on %d layers", m.SlidingWindow, m.SlidingWindowLayers)
		}
		if m.UngatedMLP && (m.IntermediateSize < 1 || m.LearnedPositions != m.MaxPositions+optPositionOffset || !m.TieEmbeddings) {
			t.Fatalf("accepted OPT numbers: %+v", m)
		}
		if !(m.WeightBytesPerParam > 0 && m.AttnWeightBytesPerParam > 0 && m.DenseWeightBytesPerParam > 0 && m.DtypeBytes > 0) {
			t.Fatalf("accepted bytes per parameter: %+v", m)
		}
		if m.IsDSV4() {
			if _, err := DeriveGraph(m); err != nil {
				t.Fatalf("accepted a DeepSeek-V4 config its graph refuses: %v", err)
			}
		}
	})
}

// A known vision-language wrapper yields its text decoder, marked as such.
func TestParseConfigTextWrapper(t *testing.T) {
	m, err := LookupModel("kimi-k2.5")
	if err != nil {
		t.Fatal(err)
	}
	if m.Wrapper != "KimiK25ForConditionalGeneration" || m.Architecture != "DeepseekV3ForCausalLM" || m.NumLayers != 61 ||
		m.NumExperts != 384 || m.KVLoraRank != 512 || m.WeightDtype != "int4" || m.WeightBytesPerParam != 0.5+2.0/32 ||
		m.AttnWeightBytesPerParam != 2 || m.DenseWeightBytesPerParam != 2 {
		t.Errorf("Kimi-K2.5 decoder: %+v", m)
	}
	g, err := LookupGraph("kimi-k2.5")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(g.Notes, " "), "vision tower is not represented") {
		t.Errorf("graph notes %q do not say the vision tower is left out", g.Notes)
	}
}

// Qwen3-VL's text_config names no architecture: the wrapper's decoder is
// Qwen3's; the wrapper's tie_word_embeddings applies; the vision tower's
// parameters are counted from vision_config as vLLM builds it.
func TestParseConfigQwen3VL(t *testing.T) {
	m, err := LookupModel("qwen3-vl-32b")
	if err != nil {
		t.Fatal(err)
	}
	// 27 blocks of 15,239,504; a merger of 44,838,656; three deepstack
	// mergers of 44,845,568; the patch and position embeddings.
	const want = 3*2*16*16*1152 + 1152 + 2304*1152 + 27*15239504 + 44838656 + 3*44845568
	if m.Wrapper != "Qwen3VLForConditionalGeneration" || m.Architecture != "Qwen3ForCausalLM" || m.NumLayers != 64 ||
		m.NumKVHeads != 8 || m.TieEmbeddings || m.VisionParams != want {
		t.Errorf("Qwen3-VL decoder: %+v (vision %v, want %v)", m, m.VisionParams, float64(want))
	}
	if _, err := ParseConfig("x.json", []byte(`{"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
		"text_config": {"model_type": "qwen3_vl_text", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
		"num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64, "dtype": "bfloat16"}}`)); err == nil ||
		!strings.Contains(err.Error(), `"vision_config"`) {
		t.Errorf("Qwen3-VL without vision_config: %v", err)
	}
}

// Llama 4's own keys: MoE every interleave_moe_layer_step-th layer, dense
// layers of intermediate_size_mlp, experts of intermediate_size with one
// shared expert, every 4th layer NoPE when no_rope_layers is empty, and the
// RoPE layers chunked.
func TestParseConfigLlama4(t *testing.T) {
	m, err := ParseConfig("x.json", []byte(`{"architectures": ["Llama4ForCausalLM"], "model_type": "llama4_text",
		"num_hidden_layers": 8, "hidden_size": 256, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 32,
		"intermediate_size": 128, "intermediate_size_mlp": 512, "vocab_size": 1000, "max_position_embeddings": 2048,
		"num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "no_rope_layers": [],
		"attention_chunk_size": 64, "use_qk_norm": true}`))
	if err != nil {
		t.Fatal(err)
	}
	moe := []bool{false, true, false, true, false, true, false, true}
	nope := []bool{false, false, false, true, false, false, false, true}
	for i := range moe {
		if m.MoELayers[i] != moe[i] || m.NoPELayers[i] != nope[i] || m.SlidingLayers[i] == nope[i] {
			t.Errorf("layer %d: moe %v nope %v chunked %v", i, m.MoELayers[i], m.NoPELayers[i], m.SlidingLayers[i])
		}
	}
	if m.IntermediateSize != 512 || m.MoEIntermediateSize != 128 || m.NumSharedExperts != 1 || m.SharedExpertIntermediateSize != 128 ||
		m.ScoringFunc != "sigmoid" || m.AttentionChunk != 64 || m.SlidingWindow != 64 || m.SlidingWindowLayers != 6 || m.NumMoELayers != 4 {
		t.Errorf("Llama 4 decoder: %+v", m)
	}
}
