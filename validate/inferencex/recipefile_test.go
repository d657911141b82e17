package inferencex

import (
	"blis/scenario"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The embedded recipes decode to the launch settings InferenceX's scripts
// state: spot checks of each kind of entry (a read recipe, a date window,
// a DP launch, a gap-analysis copy with everything assumed, a prefix
// match, the generic recipe) and the invariants every recipe keeps.
func TestEmbeddedRecipes(t *testing.T) {
	set, err := parseRecipes(recipesFile, recipesYAML)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"llama70b-fp8-h100", "llama70b-fp8-b200", "llama70b-fp4-b200", "gptoss-h100-v0.10", "gptoss-h100-0.11.2",
		"gptoss-h100-0.18.0", "gptoss-b200-v0.10", "gptoss-b200-0.15.1", "minimax-fp8-b200-0.17.0-pc", "minimax-fp8-b200-0.17.0",
		"minimax-fp8-b200-0.19.0", "minimax-fp8-b300-0.19.0", "minimax-fp4-b200-0.19.0", "minimax-fp4-b300-0.19.0",
		"minimax-fp8-b300-nightly", "minimax-fp4-nightly", "minimax-fp8-h100-0.18.0", "qwen3-32b-h100-gap", "kimi-int4-b200-0.15.1",
		"kimi-int4-b200-gap"}
	var keys []string
	byKey := map[string]*Recipe{}
	for i := range set.list {
		keys = append(keys, set.list[i].Key)
		byKey[set.list[i].Key] = &set.list[i]
	}
	if !slices.Equal(keys, wantKeys) {
		t.Fatalf("keys %q", keys)
	}

	piecewise := "vLLM 0.10 default (FULL_AND_PIECEWISE became the default in 0.11, vllm-project/vllm#25444)"
	want := Recipe{Key: "llama70b-fp8-h100", Model: "meta-llama/Llama-3.1-70B", System: "h100_sxm", Precision: "fp8",
		From: "2025-10-29", To: "2025-10-29", Checkpoint: "nvidia/Llama-3.3-70B-Instruct-FP8", Image: "vllm/vllm-openai:v0.10.2",
		Args: []ServeArg{{Flag: "kv-cache-dtype", Value: "fp8"}, {Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "10240"}, {Flag: "gpu-memory-utilization", Value: "0.9"}, {Flag: "max-num-seqs", Value: "CONC"},
			{Flag: "enable-prefix-caching", Value: "false"}, {Flag: "async-scheduling", Value: "true"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"PIECEWISE"}`, Why: piecewise}},
		Unmodelled: []string{"TORCH_CUDA_ARCH_LIST=9.0"},
		Source:     "benchmarks/70b_fp8_h100_slurm.sh (cw runner) / benchmarks/70b_fp8_h100_docker.sh (cr runner) @ 9596d23d"}
	if got := *byKey["llama70b-fp8-h100"]; !reflect.DeepEqual(got, want) {
		t.Errorf("llama70b-fp8-h100:\n got  %+v\n want %+v", got, want)
	}

	// The MiniMax FP8 0.19.0 recipes: no attention DP before 2026-04-08,
	// then the FP4 script's dp-attn launch, assumed; one shared reason.
	b200, b300 := byKey["minimax-fp8-b200-0.19.0"], byKey["minimax-fp8-b300-0.19.0"]
	if b200.NoAttentionDP == "" || b300.NoAttentionDP != "" || b200.DPAttention == nil || b300.DPAttention == nil ||
		*b200.DPAttention != *b300.DPAttention || b200.DPAttention.From != "2026-04-08" || !b200.DPAttention.Assumed {
		t.Errorf("MiniMax FP8 0.19.0 DP launch: %+v / %+v", b200.DPAttention, b300.DPAttention)
	}
	if r := byKey["minimax-fp8-b200-0.17.0-pc"]; r.From != "" || r.To != "2026-03-26" || byKey["minimax-fp8-b200-0.17.0"].From != "2026-03-27" {
		t.Errorf("MiniMax 0.17.0 date windows: %+v", r)
	}
	if r := byKey["minimax-fp4-nightly"]; r.Version != "nightly-*" || r.System != "" || len(r.Args) != 0 || r.Checkpoint != "nvidia/MiniMax-M2.5-NVFP4" {
		t.Errorf("nightly FP4: %+v", r)
	}

	// The gap analysis of the Kimi INT4 runs assumes exactly their settings.
	run, gap := byKey["kimi-int4-b200-0.15.1"], byKey["kimi-int4-b200-gap"]
	if !gap.GapAnalysis || run.GapAnalysis || len(run.Args) != 6 || len(gap.Args) != len(run.Args) {
		t.Fatalf("Kimi INT4: %+v / %+v", run, gap)
	}
	for i, a := range gap.Args {
		r := run.Args[i]
		if !a.Assumed || a.Flag != r.Flag || a.Value != r.Value || a.Why != r.Why {
			t.Errorf("Kimi gap arg %d: %+v, run's %+v", i, a, r)
		}
	}

	if g := set.generic; g.Key != "generic" || g.Model != "" || len(g.Args) != 4 {
		t.Errorf("generic %+v", g)
	}
	for _, r := range append(set.list, set.generic) {
		if r.Source == "" {
			t.Errorf("%s: no source", r.Key)
		}
		for _, a := range r.Args {
			if !sourceRE.MatchString(r.Source) && !a.Assumed {
				t.Errorf("%s: --%s read from no script", r.Key, a.Flag)
			}
		}
	}
}

// recipeDocOK is a minimal valid file; the error cases edit it.
const recipeDocOK = `repository: SemiAnalysisAI/InferenceX
recipes:
  - key: a
    match:
      model: m/M
      system: h100_sxm
      precision: fp8
      backend_version: ""
      measured_from: 2026-01-01
      measured_to: 2026-02-01
    source: benchmarks/a.sh @ 0123abcd
    args:
      - {flag: max-num-seqs, value: CONC, provenance: read}
      - {flag: gpu-memory-utilization, value: 0.9, provenance: assumed, why: vLLM default}
generic:
  key: generic
  source: "none: no script"
  args:
    - {flag: max-model-len, value: GEN, provenance: assumed}
`

func TestParseRecipes(t *testing.T) {
	set, err := parseRecipes("r.yaml", []byte(recipeDocOK))
	if err != nil {
		t.Fatal(err)
	}
	want := Recipe{Key: "a", Model: "m/M", System: "h100_sxm", Precision: "fp8", From: "2026-01-01", To: "2026-02-01",
		Source: "benchmarks/a.sh @ 0123abcd", Args: []ServeArg{{Flag: "max-num-seqs", Value: "CONC"},
			{Flag: "gpu-memory-utilization", Value: "0.9", Assumed: true, Why: "vLLM default"}}}
	if len(set.list) != 1 || !reflect.DeepEqual(set.list[0], want) {
		t.Errorf("recipes %+v", set.list)
	}
	if set.generic.Key != "generic" || len(set.generic.Args) != 1 || !set.generic.Args[0].Assumed {
		t.Errorf("generic %+v", set.generic)
	}
}

func TestParseRecipesErrors(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(recipeDocOK, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(recipeDocOK, old, new, 1)
	}
	for _, c := range []struct {
		name, doc string
		line      int
		want      string
	}{
		{"empty", "", 0, "r.yaml: empty file"},
		{"not YAML", "recipes: [", 1, "r.yaml:1: "},
		{"unknown top key", edit("repository:", "repo: x\nrepository:"), 1, "field repo not found"},
		{"unknown recipe key", edit("    source: benchmarks", "    sauce: x\n    source: benchmarks"), 11, "field sauce not found"},
		{"unknown arg key", edit("provenance: read}", "provenance: read, flavour: x}"), 13, "field flavour not found"},
		{"second document", recipeDocOK + "---\nrepository: x\n", 20, "one YAML document per file"},
		{"no repository", edit("repository: SemiAnalysisAI/InferenceX\n", ""), 1, "repository: required"},
		{"no recipes", "repository: r\nrecipes: []\ngeneric:\n  key: generic\n  source: \"none: x\"\n", 1, "recipes: required: at least one recipe"},
		{"bad key", edit("key: a", "key: A a"), 3, `recipes[0].key "A a": expected a key`},
		{"repeated key", edit("generic:\n", "  - key: a\n    match: {model: m, precision: fp8, backend_version: \"\"}\n    source: \"none: x\"\ngeneric:\n"), 15, `recipes[1].key "a": repeats the key of recipes[0]`},
		{"no match", edit("    match:\n      model: m/M\n      system: h100_sxm\n      precision: fp8\n      backend_version: \"\"\n      measured_from: 2026-01-01\n      measured_to: 2026-02-01\n", ""), 3, "recipes[0].match: required"},
		{"no model", edit("      model: m/M\n", ""), 4, "recipes[0].match.model: required"},
		{"no precision", edit("      precision: fp8\n", ""), 4, "recipes[0].match.precision: required"},
		{"no backend version", edit("      backend_version: \"\"\n", ""), 4, "recipes[0].match.backend_version: required"},
		{"bad date", edit("2026-01-01", "2026-13-01"), 9, `recipes[0].match.measured_from "2026-13-01": expected a date`},
		{"dates reversed", edit("2026-02-01", "2025-12-31"), 10, "before measured_from"},
		{"no source", edit("    source: benchmarks/a.sh @ 0123abcd\n", ""), 3, "recipes[0].source: required"},
		{"source without commit", edit("@ 0123abcd", "(latest)"), 11, `expected "path.sh @ commit"`},
		{"no provenance", edit(", provenance: read}", "}"), 13, "recipes[0].args[0].provenance: required: read"},
		{"bad provenance", edit("provenance: read}", "provenance: guessed}"), 13, `recipes[0].args[0].provenance "guessed": allowed: read, assumed`},
		{"no value", edit("value: CONC, ", ""), 13, "recipes[0].args[0].value: required"},
		{"unknown flag", edit("flag: max-num-seqs", "flag: max-num-sequences"), 13, `recipes[0].args[0].flag "max-num-sequences": expected a vllm serve setting`},
		{"client flag", edit("flag: max-num-seqs", "flag: num-prompts"), 13, `flag "num-prompts": expected a vllm serve setting`},
		{"bad value", edit("value: 0.9", "value: lots"), 14, `recipes[0].args[1].value "lots"`},
		{"unknown form", edit("value: CONC", "value: 3*ISL"), 13, `value "3*ISL"`},
		{"read from no script", edit("  args:\n    - {flag: max-model-len, value: GEN, provenance: assumed}", "  args:\n    - {flag: max-model-len, value: GEN, provenance: read}"), 19, "generic.args[0].provenance \"read\": read from no script"},
		{"generic with match", edit("  key: generic\n", "  key: generic\n  match: {model: m, precision: fp8, backend_version: \"\"}\n"), 17, "generic.match: the generic recipe matches no rows"},
		{"generic key", edit("  key: generic", "  key: fallback"), 16, `generic.key "fallback": the generic recipe's key is generic`},
		{"no generic", recipeDocOK[:strings.Index(recipeDocOK, "generic:")], 1, "generic: required"},
		{"bad dp launch", edit("    args:\n      - {flag: max-num-seqs", "    dp_attention: {measured_from: soon, provenance: assumed, why: w}\n    args:\n      - {flag: max-num-seqs"), 12, `dp_attention.measured_from "soon"`},
		{"dp launch without provenance", edit("    args:\n      - {flag: max-num-seqs", "    dp_attention: {measured_from: 2026-01-01, why: w}\n    args:\n      - {flag: max-num-seqs"), 12, "dp_attention.provenance: required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseRecipes("r.yaml", []byte(c.doc))
			var ie *scenario.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an InputError", err)
			}
			if ie.File != "r.yaml" || ie.Line != c.line || !strings.Contains(ie.Error(), c.want) {
				t.Errorf("got %q (line %d), want line %d and %q", ie.Error(), ie.Line, c.line, c.want)
			}
		})
	}
}

// The decoder never panics and either returns recipes that all carry a
// source, settings BLIS accepts and a provenance their source supports,
// or an InputError naming the file.
func FuzzParseRecipes(f *testing.F) {
	f.Add(recipesYAML)
	f.Add([]byte(recipeDocOK))
	f.Add([]byte("recipes:\n  - key: a\n    match: {model: m}\n"))
	f.Add([]byte("repository: &a x\nshared: {a: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		set, err := parseRecipes("f.yaml", data)
		if err != nil {
			var ie *scenario.InputError
			if !errors.As(err, &ie) || ie.File != "f.yaml" {
				t.Fatalf("not an InputError naming the file: %v", err)
			}
			return
		}
		for _, r := range append(set.list, set.generic) {
			if r.Source == "" || !recipeKeyRE.MatchString(r.Key) {
				t.Fatalf("recipe without a source or key: %+v", r)
			}
			for _, a := range r.Args {
				if err := checkServeArg(a.Flag, a.Value); err != nil {
					t.Fatalf("accepted %s=%q: %v", a.Flag, a.Value, err)
				}
				if !a.Assumed && !sourceRE.MatchString(r.Source) {
					t.Fatalf("%s: --%s read from no script", r.Key, a.Flag)
				}
			}
		}
	})
}
