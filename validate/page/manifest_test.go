package page

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"blis/scenario"
	"blis/validate/internal/fixture"
	"blis/validate/score"
)

const goodManifest = `validation: demo
title: Demo
arms:
  - name: a
    label: Arm A
    deployment:
      model: {value: meta-llama/Llama-3.1-8B, source: launch script}
      chip: unstated
      tensor-parallel-size: {value: 1, source: launch script}
      engine-version: {value: v0.10.2, source: image tag}
      serve-args:
        max-num-seqs: {value: 128, source: launch script}
        trust-remote-code: {value: "true", source: launch script}
        block-size: unstated
    workload:
      dataset-name: random
      random-input-len: {value: 256, source: client command}
      metric-percentiles: [50, 90]
    blis:
      hardware: h100
    level-key: request-rate
    pair-by: id
    levels:
      - level: 4
        measured: {format: vllm, path: r4.json}
        blis: {num-prompts: 100}
      - level: inf
        measured: {format: llmd, path: rinf.yaml}
  - name: ix
    label: IX
    inferencex:
      csv: rows.csv
      model: Qwen/Qwen3-32B
      hardware: h100
      precision: "-"
      recipe: qwen3-32b-h100-gap
`

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest("d/demo.yaml", []byte(goodManifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "demo" || m.TolerancePP != 1 || len(m.Arms) != 2 || m.Dir != "d" {
		t.Fatalf("%+v", m)
	}
	a := m.Arms[0]
	if !a.Deployment.Chip.Unstated || a.Deployment.Model.Source != "launch script" || len(a.Deployment.ServeArgs) != 3 {
		t.Errorf("deployment %+v", a.Deployment)
	}
	if a.LevelKey != "request-rate" || a.PairBy != score.PairByID || len(a.Levels) != 2 || a.Levels[0].Text != "4" || a.Levels[1].Text != "inf" {
		t.Errorf("levels %+v", a)
	}
	if a.Workload[1].Source != "client command" || a.Workload[0].Source != "the manifest" || a.Workload[2].Value != "50,90" {
		t.Errorf("workload %+v", a.Workload)
	}
	if ix := m.Arms[1].InferenceX; ix == nil || ix.Precision != "-" || ix.Backend != "vllm" || m.Path(ix.CSV) != "d/rows.csv" {
		t.Errorf("inferencex %+v", ix)
	}
}

func TestParseManifestErrors(t *testing.T) {
	arm := func(body string) string {
		return "validation: x\ntitle: X\narms:\n  - name: a\n    label: A\n" + body
	}
	dep := "    deployment:\n      model: {value: m, source: s}\n      chip: {value: h100, source: s}\n" +
		"      tensor-parallel-size: {value: 1, source: s}\n      engine-version: unstated\n"
	lv := "    levels:\n      - level: 1\n        measured: {format: aiperf, path: c1}\n"
	for _, c := range []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"empty", "", 0, "empty manifest"},
		{"syntax", "validation: [x\n", 1, "not valid YAML"},
		{"not a mapping", "- a\n", 1, "must be a mapping"},
		{"unknown top key", "validation: x\ntitle: X\ncolour: red\narms: []\n", 3, "colour: unknown key; allowed: validation, title"},
		{"missing arms", "validation: x\ntitle: X\n", 1, "arms: required key missing"},
		{"bad name", "validation: X Y\ntitle: X\narms: []\n", 1, "lower-case"},
		{"no arms", "validation: x\ntitle: X\narms: []\n", 3, "at least one arm"},
		{"two docs", "validation: x\n---\na: 1\n", 2, "one document"},
		{"repeated key", "validation: x\nvalidation: y\ntitle: X\narms: []\n", 2, "given twice (first on line 1)"},
		{"unknown arm key", arm("    colour: red\n"), 6, "arms[0].colour: unknown key"},
		{"no deployment", arm(lv), 4, "arms[0].deployment: required key missing"},
		{"no levels", arm(dep), 4, "needs at least one level"},
		{"stated without source", arm(strings.Replace(dep, "{value: m, source: s}", "{value: m}", 1) + lv), 7, "source: required key missing"},
		{"bare deployment value", arm(strings.Replace(dep, "{value: m, source: s}", "m", 1) + lv), 7, "expected unstated, or {value: X, source"},
		{"bad tp", arm(strings.Replace(dep, "{value: 1, source: s}", "{value: two, source: s}", 1) + lv), 9, "integer in [1, 1024]"},
		{"bad version", arm(strings.Replace(dep, "engine-version: unstated", "engine-version: {value: latest, source: s}", 1) + lv), 10, "vLLM version"},
		{"unstated chip without blis", arm(strings.Replace(dep, "{value: h100, source: s}", "unstated", 1) + lv), 8, "give blis: {hardware: ...}"},
		{"serve arg model", arm(dep + "      serve-args:\n        model: {value: m, source: s}\n" + lv), 12, "not serve-args"},
		{"serve arg bad name", arm(dep + "      serve-args:\n        Max Seqs: {value: 1, source: s}\n" + lv), 12, "flag name"},
		{"bad format", arm(dep + strings.Replace(lv, "aiperf", "csv", 1)), 13, "allowed: aiperf, vllm, guidellm, llmd"},
		{"bad level", arm(dep + strings.Replace(lv, "level: 1", "level: -3", 1)), 12, "number > 0"},
		{"repeated level", arm(dep + lv + "      - level: 1\n        measured: {format: aiperf, path: c2}\n"), 14, "level repeats"},
		{"level not a value of the key", arm(dep + "    level-key: max-concurrency\n" + strings.Replace(lv, "level: 1", "level: 1.5", 1)), 13, "not a value of max-concurrency"},
		{"unknown workload key", arm(dep + "    workload:\n      prompts: 3\n" + lv), 12, "unknown scenario key"},
		{"bad workload value", arm(dep + "    workload:\n      num-prompts: lots\n" + lv), 12, "num-prompts"},
		{"output key", arm(dep + "    blis:\n      export: aiperf\n" + lv), 12, "chosen by blis validate"},
		{"bad pair-by", arm(dep + "    pair-by: time\n" + lv), 11, "allowed: session, id, order"},
		{"inferencex with levels", arm("    inferencex: {csv: a.csv, model: m, hardware: h100}\n" + lv), 4, "only name, label, probes and inferencex"},
		{"inferencex bad recipe", arm("    inferencex: {csv: a.csv, model: m, hardware: h100, recipe: nope}\n"), 6, "unknown recipe"},
		{"inferencex no model", arm("    inferencex: {csv: a.csv, hardware: h100}\n"), 6, "model: required key missing"},
		{"repeated arm", "validation: x\ntitle: X\narms:\n  - name: a\n    label: A\n    inferencex: {csv: a.csv, model: m, hardware: h}\n" +
			"  - name: a\n    label: B\n    inferencex: {csv: a.csv, model: m, hardware: h}\n", 7, "arm name repeats (first on line 4)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest("m.yaml", []byte(c.yaml))
			ie, ok := err.(*scenario.InputError)
			if !ok {
				t.Fatalf("got %v, want an InputError", err)
			}
			if ie.File != "m.yaml" || ie.Line != c.line || !strings.Contains(ie.Error(), c.want) {
				t.Errorf("got %q (line %d), want line %d and %q", ie.Error(), ie.Line, c.line, c.want)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add(goodManifest)
	f.Add(fmt.Sprintf(fixture.RoundTripManifest, "order"))
	f.Add("validation: x\ntitle: X\narms:\n  - name: a\n    label: A\n    inferencex: {csv: a.csv, model: m, hardware: h}\n")
	f.Add("validation: x\ntitle: [\n")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseManifest("f.yaml", []byte(s))
		if err != nil {
			if !scenario.IsInputError(err) {
				t.Fatalf("not an InputError: %v", err)
			}
			return
		}
		if m.Name == "" || m.Title == "" || len(m.Arms) == 0 {
			t.Fatalf("accepted a manifest without name, title or arms: %+v", m)
		}
		for _, a := range m.Arms {
			if a.InferenceX == nil && (a.Deployment == nil || len(a.Levels) == 0) {
				t.Fatalf("accepted an arm with nothing to score: %+v", a)
			}
		}
	})
}

// A manifest missing several keys is told every one of them at once, in
// line order (with the first other problem, when there is one).
func TestParseManifestMissingKeys(t *testing.T) {
	type miss struct {
		line int
		key  string
	}
	for _, c := range []struct {
		name, yaml string
		missing    []miss
		other      string // the other problem, "" for none
	}{
		{"top level", "description: d\n", []miss{{1, "validation"}, {1, "title"}, {1, "arms"}}, ""},
		{"one arm", "validation: x\ntitle: X\narms:\n  - name: a\n    deployment:\n      model: {value: m}\n" +
			"      chip: {value: h100, source: s}\n      tensor-parallel-size: {source: s}\n    levels:\n      - level: 1\n",
			[]miss{{4, "arms[0].label"}, {6, "arms[0].deployment.engine-version"}, {6, "arms[0].deployment.model.source"},
				{8, "arms[0].deployment.tensor-parallel-size.value"}, {10, "arms[0].levels[0].measured"}}, ""},
		{"two arms", "validation: x\ntitle: X\narms:\n  - name: a\n    label: A\n" +
			"  - name: b\n    inferencex: {csv: a.csv, hardware: h100}\n  - label: C\n    inferencex: {model: m}\n",
			[]miss{{4, "arms[0].deployment"}, {4, "arms[0].levels"}, {6, "arms[1].label"}, {7, "arms[1].inferencex.model"},
				{8, "arms[2].name"}, {9, "arms[2].inferencex.csv"}, {9, "arms[2].inferencex.hardware"}}, ""},
		{"and a bad value", "arms:\n  - name: a\n    label: A\n    inferencex: {csv: a.csv, model: m}\ntolerance-pp: lots\n",
			[]miss{{1, "validation"}, {1, "title"}, {4, "arms[0].inferencex.hardware"}}, `m.yaml:5: tolerance-pp "lots": expected a number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseManifest("m.yaml", []byte(c.yaml))
			var me *ManifestErrors
			if !errors.As(err, &me) || !scenario.IsInputError(err) {
				t.Fatalf("got %v, want ManifestErrors", err)
			}
			var got []miss
			for _, ie := range me.Missing {
				if ie.File != "m.yaml" || !strings.Contains(ie.Msg, "required") {
					t.Errorf("missing %+v", ie)
				}
				got = append(got, miss{ie.Line, ie.Key})
			}
			slices.SortStableFunc(got, func(a, b miss) int { return a.line - b.line })
			if !slices.Equal(got, c.missing) {
				t.Errorf("missing %v, want %v", got, c.missing)
			}
			msg := err.Error()
			head, rest, _ := strings.Cut(msg, "\n")
			if !strings.HasPrefix(head, fmt.Sprintf("m.yaml: %d required keys missing", len(c.missing))) {
				t.Errorf("first line %q", head)
			}
			lines := strings.Split(rest, "\n")
			if want := len(c.missing) + min(1, len(c.other)); len(lines) != want {
				t.Fatalf("%d problems listed, want %d:\n%s", len(lines), want, msg)
			}
			last := 0
			for _, l := range lines {
				var n int
				if _, err := fmt.Sscanf(strings.TrimPrefix(l, "  m.yaml:"), "%d:", &n); err != nil || n < last {
					t.Errorf("problem not in line order: %q", l)
				}
				last = n
			}
			for _, m := range c.missing {
				if want := fmt.Sprintf("  m.yaml:%d: %s: required", m.line, m.key); !strings.Contains(msg, want) {
					t.Errorf("lacks %q:\n%s", want, msg)
				}
			}
			if c.other != "" && (me.Other == nil || !strings.Contains(msg, c.other)) {
				t.Errorf("other problem %v, want %q", me.Other, c.other)
			}
		})
	}
}
