package catalog

import (
	"io/fs"
	"strings"
	"testing"
)

func TestLookupModel(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		// Hugging Face ids, any case, old and new Llama spellings.
		{"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"},
		{"meta-llama/Meta-Llama-3.1-8B", "meta-llama/Llama-3.1-8B"},
		{"meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B"},
		{"meta-llama/Meta-Llama-3.1-70B", "meta-llama/Llama-3.1-70B"},
		{"meta-llama/llama-3.1-70b-instruct", "meta-llama/Llama-3.1-70B-Instruct"},
		{"META-LLAMA/LLAMA-3.1-8B-INSTRUCT", "meta-llama/Llama-3.1-8B-Instruct"},
		{"  Qwen/Qwen3-32B  ", "Qwen/Qwen3-32B"},
		{"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3"},
		{"openai/gpt-oss-120b", "openai/gpt-oss-120b"},
		{"meta-llama/Llama-3.3-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"},
		// The catalog folder spelling.
		{"mistralai--Mixtral-8x7B-v0.1", "mistralai/Mixtral-8x7B-v0.1"},
		// Short aliases.
		{"llama-3.1-8b", "meta-llama/Llama-3.1-8B"},
		{"llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"},
		{"llama3-70b", "meta-llama/Llama-3.1-70B"},
		{"Llama-3.1-70B", "meta-llama/Llama-3.1-70B"},
		{"qwen3-32b", "Qwen/Qwen3-32B"},
		{"qwen3-235b-fp8", "Qwen/Qwen3-235B-A22B-FP8"},
		{"gpt-oss-120b", "openai/gpt-oss-120b"},
		{"gpt-oss-20b", "openai/gpt-oss-20b"},
		{"mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1"},
		{"deepseek-v3", "deepseek-ai/DeepSeek-V3"},
		{"deepseek-r1", "deepseek-ai/DeepSeek-R1"},
		{"llama-3.3-70b-fp8", "nvidia/Llama-3.3-70B-Instruct-FP8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := LookupModel(tt.name)
			if err != nil {
				t.Fatalf("LookupModel(%q): %v", tt.name, err)
			}
			if m.ID != tt.want {
				t.Errorf("LookupModel(%q).ID = %q, want %q", tt.name, m.ID, tt.want)
			}
		})
	}
}

func TestLookupModelUnknown(t *testing.T) {
	tests := []struct {
		name      string
		wantParts []string
	}{
		{"llama-3.1-7b", []string{`unknown model "llama-3.1-7b"; did you mean:`, "meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B"}},
		{"Qwen/Qwen3-33B", []string{"did you mean:", "Qwen/Qwen3-32B"}},
		{"gpt-oss", []string{"did you mean:", "openai/gpt-oss-120b", "openai/gpt-oss-20b"}},
		{"zzzzzzzz", []string{`unknown model "zzzzzzzz"; known models:`, "meta-llama/Llama-3.1-8B", "openai/gpt-oss-120b"}},
		{"", []string{"unknown model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LookupModel(tt.name)
			if err == nil {
				t.Fatalf("LookupModel(%q) = nil error", tt.name)
			}
			for _, p := range tt.wantParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q lacks %q", err, p)
				}
			}
		})
	}
}

func TestAliasesUnambiguous(t *testing.T) {
	owner := map[string]string{}
	for _, m := range Models() {
		names := append([]string{strings.ToLower(m.ID)}, m.Aliases...)
		for _, a := range names {
			if a != strings.ToLower(a) {
				t.Errorf("%s: alias %q is not lower case", m.ID, a)
			}
			if o, ok := owner[a]; ok && o != m.ID {
				t.Errorf("alias %q names both %s and %s", a, o, m.ID)
			}
			owner[a] = m.ID
			got, err := LookupModel(a)
			if err != nil || got.ID != m.ID {
				t.Errorf("LookupModel(%q) = %v, %v; want %s", a, got, err, m.ID)
			}
		}
	}
}

func TestModelsSortedAndComplete(t *testing.T) {
	ms := Models()
	for i := 1; i < len(ms); i++ {
		if ms[i-1].ID >= ms[i].ID {
			t.Errorf("Models() not sorted: %q before %q", ms[i-1].ID, ms[i].ID)
		}
	}
	have := map[string]bool{}
	for _, m := range ms {
		have[m.ID] = true
	}
	for _, id := range []string{
		"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
		"meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
		"Qwen/Qwen3-32B", "openai/gpt-oss-120b", "mistralai/Mixtral-8x7B-v0.1", "deepseek-ai/DeepSeek-V3",
	} {
		if !have[id] {
			t.Errorf("Models() lacks %s", id)
		}
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	a, _ := LookupModel("llama-3.1-8b")
	a.NumLayers = 1
	a.Aliases[0] = "mutated"
	b, _ := LookupModel("llama-3.1-8b")
	if b.NumLayers != 32 || b.Aliases[0] == "mutated" {
		t.Errorf("a caller's change leaked into the catalog: %d layers, alias %q", b.NumLayers, b.Aliases[0])
	}
}

// Every embedded config parses into numbers the kernel can use.
func TestEmbeddedConfigsSane(t *testing.T) {
	for _, m := range Models() {
		t.Run(m.ID, func(t *testing.T) {
			if m.NumLayers < 1 || m.HiddenSize < 1 || m.NumHeads < 1 || m.NumKVHeads < 1 || m.HeadDim < 1 ||
				m.VocabSize < 1 || m.IntermediateSize < 1 && m.NumMoELayers < m.NumLayers || m.MaxPositions < 1 {
				t.Fatalf("non-positive architecture number: %+v", m)
			}
			if m.NumHeads%m.NumKVHeads != 0 {
				t.Errorf("num_attention_heads %d not a multiple of KV heads %d", m.NumHeads, m.NumKVHeads)
			}
			if m.DtypeBytes != 2 || (m.Dtype != "bfloat16" && m.Dtype != "float16") {
				t.Errorf("dtype %q (%g B)", m.Dtype, m.DtypeBytes)
			}
			for _, b := range []float64{m.WeightBytesPerParam, m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam} {
				if !(b > 0.4 && b <= 2) {
					t.Errorf("bytes per parameter %g outside (0.4, 2]", b)
				}
			}
			if m.IsMoE() {
				if m.ExpertsPerToken < 1 || m.ExpertsPerToken > m.NumExperts || m.MoEIntermediateSize < 1 {
					t.Errorf("MoE: %d experts, top-%d, intermediate %d", m.NumExperts, m.ExpertsPerToken, m.MoEIntermediateSize)
				}
				if m.NumMoELayers < 1 || m.NumMoELayers > m.NumLayers {
					t.Errorf("MoE layers %d of %d", m.NumMoELayers, m.NumLayers)
				}
				if (m.NumSharedExperts > 0) != (m.SharedExpertIntermediateSize > 0) {
					t.Errorf("shared experts %d with size %d", m.NumSharedExperts, m.SharedExpertIntermediateSize)
				}
			} else if m.NumMoELayers != 0 || m.ExpertsPerToken != 0 {
				t.Errorf("dense model with MoE numbers: %+v", m)
			}
			if m.IsMLA() {
				if m.NumKVHeads != 1 || m.QKRopeHeadDim < 1 || m.QKNopeHeadDim < 1 || m.VHeadDim < 1 || m.HeadDim != m.QKNopeHeadDim+m.QKRopeHeadDim {
					t.Errorf("MLA numbers: %+v", m)
				}
			}
			if m.SlidingWindowLayers < 0 || m.SlidingWindowLayers > m.NumLayers || ((m.SlidingWindowLayers > 0) != (m.SlidingWindow > 0) && !m.IsDSV4()) {
				t.Errorf("sliding window %d on %d layers", m.SlidingWindow, m.SlidingWindowLayers)
			}
			copied := strings.Contains(m.Source, "copied from") && strings.Contains(m.Source, "@")
			written := strings.Contains(m.Source, "written from") && strings.Contains(m.Source, "models/PROVENANCE.md")
			if !(copied || written) || !strings.HasPrefix(m.Source, "catalog/models/") {
				t.Errorf("source %q does not name the embedded file and its origin repo@commit (or the sources it was written from)", m.Source)
			}
		})
	}
}

func TestKnownArchitectures(t *testing.T) {
	get := func(name string) *Model {
		t.Helper()
		m, err := LookupModel(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("Llama-3.1-8B", func(t *testing.T) {
		for _, name := range []string{"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct"} {
			m := get(name)
			if m.NumLayers != 32 || m.HiddenSize != 4096 || m.NumHeads != 32 || m.NumKVHeads != 8 || m.HeadDim != 128 ||
				m.IntermediateSize != 14336 || m.VocabSize != 128256 || m.MaxPositions != 131072 || m.TieEmbeddings ||
				m.WeightDtype != "bfloat16" || m.WeightBytesPerParam != 2 || m.IsMoE() || m.IsMLA() || m.SlidingWindow != 0 {
				t.Errorf("%s: %+v", name, m)
			}
		}
	})
	t.Run("Llama-3.1-70B", func(t *testing.T) {
		m := get("meta-llama/Llama-3.1-70B")
		if m.NumLayers != 80 || m.HiddenSize != 8192 || m.NumHeads != 64 || m.NumKVHeads != 8 || m.IntermediateSize != 28672 {
			t.Errorf("%+v", m)
		}
	})
	t.Run("DeepSeek-V3", func(t *testing.T) {
		m := get("deepseek-v3")
		if !m.IsMLA() || m.KVLoraRank != 512 || m.QLoraRank != 1536 || m.QKRopeHeadDim != 64 || m.QKNopeHeadDim != 128 || m.VHeadDim != 128 {
			t.Errorf("MLA: %+v", m)
		}
		if m.NumExperts != 256 || m.ExpertsPerToken != 8 || m.NumSharedExperts != 1 || m.SharedExpertIntermediateSize != 2048 ||
			m.MoEIntermediateSize != 2048 || m.FirstDenseLayers != 3 || m.NumMoELayers != 58 || m.IntermediateSize != 18432 {
			t.Errorf("MoE: %+v", m)
		}
		if m.NumLayers != 61 || m.WeightDtype != "fp8" || m.QuantMethod != "fp8" || m.WeightBytesPerParam != 1+4.0/(128*128) {
			t.Errorf("layers %d, weights %s %g", m.NumLayers, m.WeightDtype, m.WeightBytesPerParam)
		}
	})
	t.Run("DeepSeek-V2-Lite", func(t *testing.T) {
		m := get("deepseek-v2-lite")
		if m.QLoraRank != 0 || m.KVLoraRank != 512 || m.NumSharedExperts != 2 || m.NumMoELayers != 26 || m.WeightDtype != "bfloat16" {
			t.Errorf("%+v", m)
		}
	})
	t.Run("gpt-oss-120b", func(t *testing.T) {
		m := get("gpt-oss-120b")
		if m.NumExperts != 128 || m.ExpertsPerToken != 4 || m.MoEIntermediateSize != 2880 || m.NumMoELayers != 36 {
			t.Errorf("MoE: %+v", m)
		}
		if m.SlidingWindow != 128 || m.SlidingWindowLayers != 18 || m.NumLayers != 36 {
			t.Errorf("sliding window %d on %d of %d layers", m.SlidingWindow, m.SlidingWindowLayers, m.NumLayers)
		}
		if m.HeadDim != 64 || m.NumKVHeads != 8 || m.NumHeads != 64 {
			t.Errorf("attention: %+v", m)
		}
		if m.WeightDtype != "mxfp4" || m.WeightBytesPerParam != 0.53125 || m.AttnWeightBytesPerParam != 2 || m.Dtype != "bfloat16" {
			t.Errorf("quantization: %s %g, attention %g, dtype %s", m.WeightDtype, m.WeightBytesPerParam, m.AttnWeightBytesPerParam, m.Dtype)
		}
	})
	t.Run("Mixtral-8x7B", func(t *testing.T) {
		m := get("mixtral-8x7b")
		if m.NumExperts != 8 || m.ExpertsPerToken != 2 || m.MoEIntermediateSize != 14336 || m.NumMoELayers != 32 || m.SlidingWindow != 0 {
			t.Errorf("%+v", m)
		}
	})
	t.Run("Qwen3", func(t *testing.T) {
		m := get("qwen3-32b")
		if m.NumLayers != 64 || m.NumHeads != 64 || m.NumKVHeads != 8 || m.HeadDim != 128 || m.HiddenSize != 5120 || m.SlidingWindow != 0 {
			t.Errorf("%+v", m)
		}
		if m := get("qwen3-0.6b"); !m.TieEmbeddings {
			t.Errorf("Qwen3-0.6B ties its embeddings")
		}
		m = get("qwen3-235b-fp8")
		if m.NumExperts != 128 || m.ExpertsPerToken != 8 || m.MoEIntermediateSize != 1536 || m.NumMoELayers != 94 || m.WeightDtype != "fp8" {
			t.Errorf("%+v", m)
		}
	})
	t.Run("ModelOpt FP8", func(t *testing.T) {
		for _, name := range []string{"nvidia/Llama-3.1-70B-Instruct-FP8", "Qwen/Qwen3-32B-FP8-Static-PerTensor"} {
			m := get(name)
			if m.WeightDtype != "fp8" || m.QuantMethod != "modelopt" || m.WeightBytesPerParam != 1 {
				t.Errorf("%s: %s %s %g", name, m.QuantMethod, m.WeightDtype, m.WeightBytesPerParam)
			}
		}
	})
	t.Run("Llama-2 float16 MHA", func(t *testing.T) {
		m := get("llama-2-7b")
		if m.Dtype != "float16" || m.NumKVHeads != 32 {
			t.Errorf("%+v", m)
		}
	})
}

// Every embedded folder is in the model table and in PROVENANCE.md, and
// every table entry's folder is embedded.
func TestEmbeddedFilesHaveProvenance(t *testing.T) {
	prov, err := fs.ReadFile(modelFS, "models/PROVENANCE.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(modelFS, "models")
	if err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	for _, e := range modelTable {
		inTable[e.dir] = true
		if _, err := fs.Stat(modelFS, "models/"+e.dir+"/config.json"); err != nil {
			t.Errorf("table entry %s: %v", e.dir, err)
		}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if !inTable[e.Name()] {
			t.Errorf("embedded folder %s is not in the model table", e.Name())
		}
		files, _ := fs.ReadDir(modelFS, "models/"+e.Name())
		for _, f := range files {
			if f.Name() == "graph.json" { // derived, not copied: see graph_test.go
				continue
			}
			if !strings.Contains(string(prov), "`"+e.Name()+"/"+f.Name()+"`") {
				t.Errorf("PROVENANCE.md does not list %s/%s", e.Name(), f.Name())
			}
		}
	}
}
