package catalog

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Qwen3.5-397B-A17B: the decoder graph plus the vision tower holds the
// published 397 B parameters, and a token activates about 17 B (ten
// routed experts and the shared one per layer, attention, embedding and
// LM head). The MTP layer is not in the published count.
func TestQwen35Params(t *testing.T) {
	m, err := LookupModel("qwen3.5-397b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGraph("qwen3.5-397b")
	if err != nil {
		t.Fatal(err)
	}
	total := graphParams(g) + m.VisionParams
	if math.Abs(total/397e9-1) > 0.005 {
		t.Errorf("total %.4g parameters (vision %.3g), published 397 B", total, m.VisionParams)
	}
	t.Logf("total %.4g (decoder %.4g + vision %.4g)", total, total-m.VisionParams, m.VisionParams)
	var active float64
	for _, k := range g.Layers {
		e := k.MoE()
		routed := float64(e.Experts) * 3 * float64(e.Hidden) * float64(e.Inter)
		perToken := routed * float64(e.TopK) / float64(e.Experts)
		active += float64(k.Count) * (graphParams(&Graph{Layers: []LayerKind{{Count: 1, Ops: k.Ops}}}) - routed + perToken)
	}
	active += graphParams(&Graph{Embed: g.Embed, Head: g.Head})
	t.Logf("active %.4g", active)
	if math.Abs(active/17e9-1) > 0.03 {
		t.Errorf("active %.4g parameters, published 17 B", active)
	}
	if m.NumLinearLayers != 45 || m.NumMoELayers != 60 || m.RotaryDim != 64 || !m.AttnOutputGate || m.MTPHiddenLayers != 1 ||
		m.SSMStateDtypeBytes != 4 || m.IntermediateSize != 0 || m.Wrapper != "Qwen3_5MoeForConditionalGeneration" {
		t.Errorf("parsed %+v", m)
	}
	if got := g.LayerKinds(); got[0] != "gdn_moe" || got[3] != "attn_moe" || len(got) != 60 {
		t.Errorf("stack %v", g.Stack)
	}
	if g.Draft == nil || g.Draft.Method != "mtp" || g.Draft.NumLayers() != 1 {
		t.Errorf("draft %+v", g.Draft)
	}
}

// One GDN layer's state at TP 8, by hand (vLLM's
// gated_delta_net_state_shape): conv (4−1) × (16·128·2 + 64·128)/8 = 4608
// bf16 = 9216 B; ssm 64/8 × 128 × 128 = 131072 fp32 = 524288 B.
func TestQwen35StateBytes(t *testing.T) {
	m, err := LookupModel("qwen3.5-397b")
	if err != nil {
		t.Fatal(err)
	}
	conv, ssm := m.LinearStateBytes(8)
	if conv != 9216 || ssm != 524288 {
		t.Errorf("conv %v ssm %v bytes, want 9216 and 524288", conv, ssm)
	}
	g, _ := LookupGraph("qwen3.5-397b")
	if got := g.Kind("gdn_moe").LinearStateBytes(8); got != 9216+524288 {
		t.Errorf("graph state %v bytes per layer per rank", got)
	}
}

// Bad linear-attention keys are errors that name the key.
func TestQwen35ConfigErrors(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"architectures": []any{"Qwen3_5MoeForConditionalGeneration"},
			"text_config": map[string]any{
				"model_type": "qwen3_5_moe_text", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
				"num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128, "max_position_embeddings": 256,
				"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
				"layer_types":          []any{"linear_attention", "full_attention"},
				"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
				"linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
			},
			"vision_config": map[string]any{"depth": 1, "hidden_size": 8, "intermediate_size": 8, "out_hidden_size": 64,
				"spatial_merge_size": 2, "patch_size": 2, "temporal_patch_size": 2, "in_channels": 3, "num_position_embeddings": 4},
		}
	}
	if _, err := ParseConfig("ok.json", mustJSON(t, base())); err != nil {
		t.Fatalf("good config: %v", err)
	}
	tests := []struct {
		name string
		edit func(tc map[string]any)
		want []string
	}{
		{"missing key heads", func(tc map[string]any) { delete(tc, "linear_num_key_heads") }, []string{`"text_config.linear_num_key_heads"`, "missing"}},
		{"bad ssm dtype", func(tc map[string]any) { tc["mamba_ssm_dtype"] = "int8" }, []string{`"text_config.mamba_ssm_dtype"`, "int8"}},
		{"unknown layer type", func(tc map[string]any) { tc["layer_types"] = []any{"mamba", "full_attention"} }, []string{`"text_config.layer_types"`, `"mamba"`}},
		{"all linear", func(tc map[string]any) { tc["layer_types"] = []any{"linear_attention", "linear_attention"} }, []string{"every layer is linear_attention"}},
		{"short layer types", func(tc map[string]any) { tc["layer_types"] = []any{"full_attention"} }, []string{"has 1 entries"}},
		{"heads do not divide", func(tc map[string]any) { tc["linear_num_value_heads"] = 3 }, []string{"not a multiple"}},
		{"kernel 1", func(tc map[string]any) { tc["linear_conv_kernel_dim"] = 1 }, []string{"linear_conv_kernel_dim", "≥ 2"}},
		{"rotary factor", func(tc map[string]any) { tc["partial_rotary_factor"] = 2 }, []string{"partial_rotary_factor", "(0, 1]"}},
		{"gate not bool", func(tc map[string]any) { tc["attn_output_gate"] = "yes" }, []string{"attn_output_gate", "true or false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.edit(c["text_config"].(map[string]any))
			_, err := ParseConfig("q.json", mustJSON(t, c))
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
	// linear_attention in another architecture stays an error.
	other := []byte(`{"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","num_hidden_layers":1,"hidden_size":8,"num_attention_heads":1,
		"vocab_size":8,"max_position_embeddings":8,"intermediate_size":8,"layer_types":["linear_attention"]}`)
	if _, err := ParseConfig("o.json", other); err == nil || !strings.Contains(err.Error(), "Qwen3.5") {
		t.Errorf("linear_attention in Qwen3: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
