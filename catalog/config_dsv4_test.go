package catalog

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
)

// dsv4Config is DeepSeek-V4-Flash's embedded config with edits applied
// (a nil value deletes the key).
func dsv4Config(t *testing.T, edits map[string]any) []byte {
	t.Helper()
	data, err := fs.ReadFile(modelFS, "models/deepseek-ai--DeepSeek-V4-Flash/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	for k, v := range edits {
		if v == nil {
			delete(obj, k)
		} else {
			obj[k] = v
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseConfigDSV4Errors(t *testing.T) {
	ratios := func(n int, v int) []int {
		r := make([]int, n)
		for i := range r {
			r[i] = v
		}
		return r
	}
	for _, tc := range []struct {
		name  string
		edits map[string]any
		want  []string
	}{
		{"ratios length", map[string]any{"compress_ratios": ratios(43, 4)}, []string{`"compress_ratios"`, "43 entries", "44"}},
		{"ratio value", map[string]any{"compress_ratios": ratios(44, 8)}, []string{`"compress_ratios"`, "entry 0 is 8", "0 (sliding window only), 4 (CSA) and 128 (HCA)"}},
		{"ratios missing", map[string]any{"compress_ratios": nil}, []string{`"compress_ratios"`}},
		{"hc_mult missing", map[string]any{"hc_mult": nil}, []string{`"hc_mult"`, "missing"}},
		{"hc_eps zero", map[string]any{"hc_eps": 0}, []string{`"hc_eps"`, "above zero"}},
		{"o_groups", map[string]any{"o_groups": 7}, []string{`"o_groups"`, "does not divide", "64"}},
		{"kv heads", map[string]any{"num_key_value_heads": 2}, []string{`"num_key_value_heads"`}},
		{"hash layers", map[string]any{"num_hash_layers": 44}, []string{`"num_hash_layers"`, "exceeds"}},
		{"expert dtype", map[string]any{"expert_dtype": "int4"}, []string{`"expert_dtype"`, "fp4, fp8"}},
		{"expert fp4 unquantized", map[string]any{"quantization_config": nil}, []string{`"expert_dtype"`, "fp4 needs"}},
		{"scoring", map[string]any{"scoring_func": "tanh"}, []string{`"scoring_func"`, "sqrtsoftplus"}},
		{"window", map[string]any{"sliding_window": nil}, []string{`"sliding_window"`, "missing"}},
		{"indexer", map[string]any{"index_head_dim": 32}, []string{`"index_head_dim"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseConfig("v4.json", dsv4Config(t, tc.edits))
			if err == nil {
				t.Fatalf("no error; got %+v", m)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The three DeepSeek-V4 configs parse to what vLLM builds: the MTP layer's
// ratio split off, the experts' format from expert_dtype (absent: fp4 for
// model_type deepseek_v4, fp8 for SGLang's deepseek_ref conversion).
func TestParseConfigDSV4(t *testing.T) {
	for _, c := range []struct {
		id           string
		layers, hash int
		experts      string
		bpp          float64
	}{
		{"deepseek-ai/DeepSeek-V4-Flash", 43, 3, "fp4", 0.5 + 1.0/32},
		{"deepseek-ai/DeepSeek-V4-Pro", 61, 3, "fp4", 0.5 + 1.0/32},
		{"sgl-project/DeepSeek-V4-Flash-FP8", 43, 3, "fp8", 1 + 4.0/16384},
	} {
		m, err := LookupModel(c.id)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.CompressRatios) != c.layers || m.MTPCompressRatio != 0 || m.NumHashLayers != c.hash || m.ExpertDtype != c.experts ||
			m.WeightBytesPerParam != c.bpp || m.HCMult != 4 || m.SlidingWindowLayers != 0 || m.IsDSA() || !m.IsDSV4() {
			t.Errorf("%s: %+v", c.id, m)
		}
	}
	m, _ := ParseConfig("v4.json", dsv4Config(t, map[string]any{"expert_dtype": nil}))
	if m.ExpertDtype != "fp4" {
		t.Errorf("model_type deepseek_v4 without expert_dtype: experts %q, want fp4 (DeepseekV4FP8Config's default)", m.ExpertDtype)
	}
}
