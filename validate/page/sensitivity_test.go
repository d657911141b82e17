package page_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"blis/validate/page"

	"blis/validate/internal/fixture"
	"blis/validate/score"

	"blis/scenario"
)

// probeManifest validates BLIS's own aiperf exports (exportPair: async
// scheduling off) with the manifest overriding async-scheduling: the probe
// at the measured value reproduces the export exactly.
const probeManifest = `validation: probe
title: Probe
probes: auto
arms:
  - name: a
    label: A
    deployment:
      model: {value: meta-llama/Llama-3.1-8B, source: s}
      chip: {value: H100, source: s}
      tensor-parallel-size: {value: 1, source: s}
      engine-version: unstated
      serve-args:
        max-num-seqs: {value: 64, source: s}
        enable-prefix-caching: {value: "false", source: s}
        async-scheduling: {value: "false", source: s}
        block-size: unstated
    workload: {dataset-name: random, random-input-len: 128, random-output-len: 32, num-prompts: 40, seed: 1}
    blis: {async-scheduling: "true"}
    sensitivity:
      - compress-gaps-over-s: 300
      - label: roofline pricing
        blis: {step-model: roofline}
    levels:
      - {level: 1, measured: {format: aiperf, path: c1}}
      - {level: 4, measured: {format: aiperf, path: c4}}
`

// One small end-to-end probe: verdicts, the page section, brackets, the
// sensitivity section, the gate untouched, and the same bytes for any
// number of workers.
func TestProbesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	exportPair(t, dir)
	file := filepath.Join(dir, "probe.yaml")
	pg := buildPage(t, file, probeManifest, page.Options{Version: "test", Jobs: 3})
	a := pg.Arms[0]
	byName := map[string]page.Probe{}
	for _, p := range a.Probes {
		byName[p.Setting] = p
	}
	as, ok := byName["async-scheduling"]
	if !ok || as.Verdict != page.ProbeConfirmed || len(as.Candidates) != 2 || !as.Candidates[1].Measured ||
		as.Candidates[1].MAPE["ttft_mean_ms"] != 0 || as.Candidates[1].MAPE["tpot_mean_ms"] != 0 {
		t.Errorf("async-scheduling probe: %+v", as)
	}
	if bs, ok := byName["block-size"]; !ok || bs.Provenance != score.Unstated || bs.Verdict == "" || bs.Varied != 2 {
		t.Errorf("block-size probe: %+v", bs)
	}
	if len(a.Brackets) == 0 || !slices.Contains(a.Brackets[0].Over, "block-size") {
		t.Errorf("brackets %+v", a.Brackets)
	}
	if len(a.Sensitivity) != 2 || a.Sensitivity[0].Label != "gaps over 300 s compressed" || !a.Sensitivity[0].Identical ||
		a.Sensitivity[1].Identical || a.Sensitivity[1].Note != page.SensitivityNote {
		t.Errorf("sensitivity %+v", a.Sensitivity)
	}
	md := string(pageMD(pg))
	for _, want := range []string{"## Gap re-checks\n", "| A | async-scheduling | MISMATCH (removable) | true (headline); false (measured) | 2 | CONFIRMED |",
		"Bracketed over unstated settings", "## Sensitivity runs\n", "### A: roofline pricing", page.SensitivityNote,
		"Identical to the as-replayed run", "## Gap re-checks per level"} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Section order: gap re-checks after the provenance verdict, before
	// the paired requests; sensitivity runs after the population metrics.
	order := []string{"## Provenance verdict", "## Gap re-checks\n", "## Output metrics: ITL on paired requests",
		"## Output metrics: population", "## Sensitivity runs", "## TTFT", "## Gap re-checks per level", "## Per level"}
	last := -1
	for _, s := range order {
		i := strings.Index(md, s)
		if i <= last {
			t.Errorf("%q out of order", s)
		}
		last = i
	}
	if !strings.Contains(string(pageFigures(pg)), "unstated-setting candidates") {
		t.Error("no bracket bars in the figures")
	}

	// Probes and sensitivity runs stay out of the headline and the gate.
	off := page.ProbeSpec{Mode: page.ProbesOff}
	pg0 := buildPage(t, file, probeManifest, page.Options{Version: "test", Jobs: 2, Probes: &off})
	if !slices.Equal(headlineText(pg), headlineText(pg0)) || len(pg0.Arms[0].Probes) != 0 || pg0.ProbeRule != "" {
		t.Error("probes changed the headline numbers, or --probes off ran them")
	}
	if strings.Contains(string(pageMD(pg0)), "## Gap re-checks") {
		t.Error("--probes off still writes the section")
	}

	// Same bytes whatever the workers.
	pg1 := buildPage(t, file, probeManifest, page.Options{Version: "test", Jobs: 1})
	for _, w := range []func(*page.Page) []byte{pageMD, pageJSON, pageFigures} {
		if !bytes.Equal(w(pg), w(pg1)) {
			t.Error("output differs between 1 and 3 workers")
		}
	}
}

func headlineText(pg *page.Page) []string {
	var out []string
	for _, h := range pg.Headlines() {
		out = append(out, h.Arm+h.Metric+h.MAPE.Fixed(9)+h.SignedMean.Fixed(9))
	}
	return out
}

// A list spec on the CLI overrides the manifest and probes BLIS's own
// assumptions that have no provenance row.
func TestProbesListOverride(t *testing.T) {
	dir := t.TempDir()
	exportPair(t, dir)
	spec, err := page.ParseProbes("step-model")
	if err != nil {
		t.Fatal(err)
	}
	pg := buildPage(t, filepath.Join(dir, "probe.yaml"), strings.Replace(probeManifest,
		"    sensitivity:\n      - compress-gaps-over-s: 300\n      - label: roofline pricing\n        blis: {step-model: roofline}\n", "", 1),
		page.Options{Version: "test", Probes: &spec})
	ps := pg.Arms[0].Probes
	if len(ps) != 1 || ps[0].Setting != "step-model" || ps[0].Provenance != "assumed" || ps[0].Verdict != page.ProbeMaterial {
		t.Fatalf("%+v", ps)
	}
	// auto resolves to the fitted pricer on H100: the probe runs roofline only.
	var vals []string
	for _, c := range ps[0].Candidates {
		vals = append(vals, c.Value)
	}
	if !slices.Equal(vals, []string{"fitted-v1", "roofline"}) {
		t.Errorf("candidates %q", vals)
	}
}

func TestProbeManifestErrors(t *testing.T) {
	head := "validation: x\ntitle: X\n"
	arm := "arms:\n  - name: a\n    label: A\n    deployment:\n      model: {value: m, source: s}\n      chip: {value: h100, source: s}\n" +
		"      tensor-parallel-size: {value: 1, source: s}\n      engine-version: unstated\n" +
		"    levels:\n      - level: 1\n        measured: {format: aiperf, path: c1}\n"
	for _, c := range []struct {
		name, yaml string
		line       int
		want       string
	}{
		{"bad probes word", head + "probes: always\n" + arm, 3, `probes "always": "always" is not a setting BLIS can toggle; expected off, auto, or a list`},
		{"probes output key", head + "probes: [block-size, export]\n" + arm, 3, `"export" is not a setting`},
		{"probes empty list", head + "probes: []\n" + arm, 3, "an empty list: write off instead"},
		{"probes mapping", head + "probes: {auto: true}\n" + arm, 3, "expected off, auto, or a list of settings"},
		{"arm probes twice", head + arm + "    probes: [block-size, block_size]\n", 14, "listed twice"},
		{"sensitivity not a list", head + arm + "    sensitivity: {compress-gaps-over-s: 300}\n", 14, "must be a list"},
		{"sensitivity empty", head + arm + "    sensitivity: []\n", 14, "needs at least one run"},
		{"sensitivity unknown key", head + arm + "    sensitivity:\n      - {cap: 300}\n", 15, "arms[0].sensitivity[0].cap: unknown key; allowed: label, compress-gaps-over-s, blis"},
		{"sensitivity bad gap", head + arm + "    sensitivity:\n      - compress-gaps-over-s: soon\n", 15, `compress-gaps-over-s "soon": expected a number in [0, 1e+09]`},
		{"sensitivity zero gap", head + arm + "    sensitivity:\n      - compress-gaps-over-s: 0\n", 15, "seconds > 0"},
		{"sensitivity both", head + arm + "    sensitivity:\n      - {compress-gaps-over-s: 30, label: l, blis: {seed: 2}}\n", 15, "exactly one of"},
		{"sensitivity neither", head + arm + "    sensitivity:\n      - {label: l}\n", 15, "exactly one of"},
		{"sensitivity blis without label", head + arm + "    sensitivity:\n      - blis: {seed: 2}\n", 15, "label: required with blis"},
		{"sensitivity bad blis value", head + arm + "    sensitivity:\n      - {label: l, blis: {seed: two}}\n", 15, "seed"},
		{"sensitivity output key", head + arm + "    sensitivity:\n      - {label: l, blis: {export: aiperf}}\n", 15, "chosen by blis validate"},
		{"sensitivity repeated label", head + arm + "    sensitivity:\n      - compress-gaps-over-s: 30\n      - {label: gaps over 30 s compressed, blis: {seed: 2}}\n", 16, "the same label as the run on line 15"},
		{"inferencex sensitivity", head + "arms:\n  - name: a\n    label: A\n    inferencex: {csv: a.csv, model: m, hardware: h100}\n    sensitivity:\n      - compress-gaps-over-s: 30\n", 4, "only name, label, probes and inferencex"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := page.ParseManifest("m.yaml", []byte(c.yaml))
			ie, ok := err.(*scenario.InputError)
			if !ok {
				t.Fatalf("got %v, want an InputError", err)
			}
			if ie.File != "m.yaml" || ie.Line != c.line || !strings.Contains(ie.Error(), c.want) {
				t.Errorf("got %q (line %d), want line %d and %q", ie.Error(), ie.Line, c.line, c.want)
			}
		})
	}
	// The accepted forms.
	m, err := page.ParseManifest("m.yaml", []byte(head+"probes: auto\n"+arm+"    probes: off\n    sensitivity:\n      - compress-gaps-over-s: 2.5\n"+
		"      - {label: roofline, blis: {step-model: roofline}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := m.Arms[0]
	if m.Probes.Mode != page.ProbesAuto || a.Probes.Mode != page.ProbesOff || len(a.Sensitivity) != 2 || a.Sensitivity[0].Label != "gaps over 2.5 s compressed" ||
		a.Sensitivity[0].Settings[0].Name != "trace-idle-gap-cap-seconds" || a.Sensitivity[0].Settings[1].Value != "2.5" {
		t.Errorf("%+v %+v", m.Probes, a)
	}
}

// On a session replay (BLIS's own agentic export, so the as-replayed error
// is 0), compressing idle gaps changes the result and stays out of the
// headline.
func TestSensitivityCompressesGaps(t *testing.T) {
	dir := t.TempDir()
	s := scenario.Defaults()
	s.Model, s.Hardware, s.DatasetName, s.Agentic.NumSessions, s.Seed, s.MaxConcurrency = "meta-llama/Llama-3.1-8B", "h100", "agentic", 6, 1, 2
	fixture.Export(t, s, filepath.Join(dir, "c2"))
	const man = `validation: g
title: G
arms:
  - name: a
    label: A
    deployment:
      model: {value: meta-llama/Llama-3.1-8B, source: s}
      chip: {value: H100, source: s}
      tensor-parallel-size: {value: 1, source: s}
      engine-version: unstated
    workload: {dataset-name: agentic, agentic-num-sessions: 6, seed: 1}
    pair-by: session
    sensitivity:
      - compress-gaps-over-s: 1
    levels:
      - {level: 2, measured: {format: aiperf, path: c2}}
`
	pg := buildPage(t, filepath.Join(dir, "g.yaml"), man, page.Options{Version: "test"})
	a := pg.Arms[0]
	sp := a.Sensitivity[0]
	if sp.Identical || sp.Failed != "" || !(sp.MAPE["output_tok_s"] > 1) || sp.ReplayMAPE["output_tok_s"] != 0 {
		t.Errorf("sensitivity %+v", sp)
	}
	for _, h := range pg.Headlines() {
		if h.MAPE != 0 {
			t.Errorf("headline %+v moved", h)
		}
	}
}
