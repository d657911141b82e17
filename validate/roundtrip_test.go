package validate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/cluster"
	"blis/metrics"
	"blis/metrics/format"
	"blis/scenario"
)

// exportRun simulates s as `blis run --export aiperf` does and writes the
// aiperf export into dir; it returns BLIS's KV pool.
func exportRun(t *testing.T, s scenario.Scenario, dir string) int {
	return exportRunAs(t, s, dir, format.AIPerf)
}

// exportRunAs is exportRun in another export format.
func exportRunAs(t *testing.T, s scenario.Scenario, dir, name string) int {
	t.Helper()
	res, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{Detailed: true})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cluster.Run(res.ClientConfig(), res.Source, rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: out.Duration, Backend: "vllm", ModelID: res.Model.ID,
		NumPrompts: s.NumPrompts, RequestRate: s.RequestRate, Burstiness: s.Burstiness, MaxConcurrency: s.MaxConcurrency,
		GPUKVCacheTokens: res.Memory.KVTokens})
	if _, err := format.Export(dir, []string{name}, sum, metrics.RunInfo{Model: res.Model.ID,
		Chip: "H100", TP: res.Deployment.TP, ISL: s.RandomInputLen, OSL: s.RandomOutputLen, Seed: s.Seed}); err != nil {
		t.Fatal(err)
	}
	return res.Memory.KVTokens
}

const roundTripManifest = `validation: round-trip
title: BLIS against its own aiperf export
description: A run BLIS simulated and exported as aiperf, validated against itself.
arms:
  - name: self
    label: Llama-3.1-8B H100 TP1 (self)
    deployment:
      model: {value: meta-llama/Llama-3.1-8B, source: "the export's run"}
      chip: {value: H100, source: "the export's run"}
      tensor-parallel-size: {value: 1, source: "the export's run"}
      engine-version: unstated
      serve-args:
        max-num-seqs: {value: 64, source: "the export's run"}
        enable-prefix-caching: {value: "false", source: "the export's run"}
    workload:
      dataset-name: random
      random-input-len: 128
      random-output-len: 32
      num-prompts: 40
      seed: 1
    pair-by: %s
    server-log: server.log
    levels:
      - level: 4
        measured: {format: aiperf, path: c4}
      - level: 1
        measured: {format: aiperf, path: c1}
`

// The round trip: BLIS's own aiperf export validated against itself gives
// every error 0, every setting MATCH, verdict EXACT, KV ratio 1.
func TestRoundTripOwnExport(t *testing.T) {
	dir := t.TempDir()
	kv := 0
	for _, c := range []int{1, 4} {
		s := scenario.Defaults()
		s.Model, s.Hardware, s.MaxNumSeqs, s.EnablePrefixCaching = "meta-llama/Llama-3.1-8B", "h100", 64, false
		s.DatasetName, s.RandomInputLen, s.RandomOutputLen, s.NumPrompts, s.Seed = "random", 128, 32, 40, 1
		s.MaxConcurrency = c
		kv = exportRun(t, s, filepath.Join(dir, fmt.Sprintf("c%d", c)))
	}
	// The server log states the engine version BLIS mirrors.
	log := fmt.Sprintf("INFO vLLM API server version %s.0\nINFO [kv_cache_utils.py:833] GPU KV cache size: %d tokens\n", EngineVersion, kv)
	if err := os.WriteFile(filepath.Join(dir, "server.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{PairByOrder, PairByID, PairBySession} {
		t.Run(by, func(t *testing.T) {
			file := filepath.Join(dir, "round-trip.yaml")
			data := []byte(fmt.Sprintf(roundTripManifest, by))
			m, err := ParseManifest(file, data)
			if err != nil {
				t.Fatal(err)
			}
			pg, err := BuildPage(m, PageOptions{Version: "test", Jobs: 2})
			if err != nil {
				t.Fatal(err)
			}
			a := pg.Arms[0]
			if a.Verdict != Exact || len(a.MakeExact) != 0 {
				t.Errorf("verdict %s, make exact %q", a.Verdict, a.MakeExact)
			}
			for _, r := range a.Provenance {
				if r.Verdict != Match {
					t.Errorf("provenance %+v", r)
				}
			}
			if len(a.Population) != int(NumMetrics) {
				t.Errorf("%d metrics compared, want %d", len(a.Population), NumMetrics)
			}
			for _, mp := range a.Population {
				if mp.Points != 2 || mp.MAPE != 0 || mp.SignedMean != 0 || mp.GeoMeanBias != 0 || mp.ShapeError != 0 ||
					mp.Sign != "BLIS equal at every level" {
					t.Errorf("%s: %+v", mp.Metric, mp.PopStats)
				}
			}
			if a.Pairing == nil || len(a.Pairing.Levels) != 2 {
				t.Fatalf("pairing %+v", a.Pairing)
			}
			for _, l := range a.Pairing.Levels {
				if l.Pairs != 40 || l.Unmatched != 0 || l.Mismatched != 0 || l.ITLSame != 0 {
					t.Errorf("level %v: %+v", l.Level, l)
				}
				if l.Level == 1 && (!l.Shown || l.Solo != 40 || l.ITLSolo != 0 || l.TTFTSolo != 0 || l.LatencySolo != 0) {
					t.Errorf("c1 pairs: %+v", l)
				}
			}
			if s := a.Pairing.Slopes; s.Ratio != 1 {
				t.Errorf("slopes %+v", s)
			}
			if a.KV == nil || a.KV.Ratio != 1 {
				t.Errorf("KV %+v", a.KV)
			}
			// Deterministic bytes whatever the workers.
			pg1, err := BuildPage(m, PageOptions{Version: "test", Jobs: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []func(*Page) []byte{pageMD, pageJSON, pageFigures} {
				if !bytes.Equal(w(pg), w(pg1)) {
					t.Error("output differs between 1 and 2 workers")
				}
			}
		})
	}
}

func pageMD(pg *Page) []byte {
	var b bytes.Buffer
	if err := pg.WriteMarkdown(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func pageJSON(pg *Page) []byte {
	var b bytes.Buffer
	if err := pg.WriteJSON(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func pageFigures(pg *Page) []byte {
	var b bytes.Buffer
	for _, f := range pg.Figures() {
		b.WriteString(f.Name + "\n")
		b.Write(f.Data)
	}
	return b.Bytes()
}

// exportPair writes c1 and c4 aiperf exports into dir (as the round trip).
func exportPair(t *testing.T, dir string) {
	for _, c := range []int{1, 4} {
		s := scenario.Defaults()
		s.Model, s.Hardware, s.MaxNumSeqs, s.EnablePrefixCaching = "meta-llama/Llama-3.1-8B", "h100", 64, false
		s.DatasetName, s.RandomInputLen, s.RandomOutputLen, s.NumPrompts, s.Seed = "random", 128, 32, 40, 1
		s.MaxConcurrency = c
		s.AsyncScheduling = false // the probe manifests state the measured run's async scheduling as off
		exportRun(t, s, filepath.Join(dir, fmt.Sprintf("c%d", c)))
	}
}

func TestProvenanceVerdicts(t *testing.T) {
	dir := t.TempDir()
	exportPair(t, dir)
	const head = "validation: p\ntitle: P\narms:\n  - name: a\n    label: A\n    deployment:\n"
	const levels = "    workload: {dataset-name: random, random-input-len: 128, random-output-len: 32, num-prompts: 40, seed: 1}\n" +
		"    levels:\n      - {level: 1, measured: {format: aiperf, path: c1}}\n"
	build := func(dep string) *ArmPage {
		t.Helper()
		m, err := ParseManifest(filepath.Join(dir, "p.yaml"), []byte(head+dep+levels))
		if err != nil {
			t.Fatal(err)
		}
		pg, err := BuildPage(m, PageOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pg.Arms[0]
	}
	row := func(a *ArmPage, setting string) ProvRow {
		for _, r := range a.Provenance {
			if r.Setting == setting {
				return r
			}
		}
		t.Fatalf("no row %s in %+v", setting, a.Provenance)
		return ProvRow{}
	}
	const dep = "      model: {value: llama-3.1-8b, source: s}\n      chip: {value: h100_sxm, source: s}\n" +
		"      tensor-parallel-size: {value: 1, source: s}\n      engine-version: {value: 0.10.2, source: s}\n"

	// A deliberate override is removable; a flag BLIS lacks and an engine
	// release it does not price are not; an unstated arg is UNSTATED.
	a := build(dep + "      serve-args:\n        max-num-seqs: {value: 64, source: s}\n        trust-remote-code: {value: \"true\", source: s}\n" +
		"        block-size: unstated\n    blis: {max-num-seqs: 32, enable-prefix-caching: \"false\"}\n")
	for _, c := range []struct {
		setting, verdict string
		removable        bool
	}{
		{"model", Match, false}, {"chip", Match, false}, {"engine-version", Mismatch, false},
		{"max-num-seqs", Mismatch, true}, {"trust-remote-code", Mismatch, false}, {"block-size", Unstated, false},
		{"enable-prefix-caching", Unstated, false},
	} {
		r := row(a, c.setting)
		if r.Verdict != c.verdict || r.Removable != c.removable {
			t.Errorf("%s: %+v", c.setting, r)
		}
	}
	if a.Verdict != Partial || !strings.Contains(Sentence(a.MakeExact), "BLIS run with max-num-seqs = 64 (the measured value; BLIS used 32)") ||
		!strings.Contains(Sentence(a.MakeExact), "the run stating block-size") {
		t.Errorf("verdict %s, make exact %q", a.Verdict, a.MakeExact)
	}
	// The override changes what BLIS simulates; the level is still scored.
	if len(a.Population) == 0 {
		t.Error("nothing scored")
	}

	// A model BLIS does not have: nothing can be simulated.
	a = build(strings.Replace(dep, "llama-3.1-8b", "acme/NotAModel-7B", 1))
	if a.Verdict != NotReproducible || len(a.Unscored) != 1 || !strings.Contains(a.Unscored[0].Needed, "acme/NotAModel-7B") ||
		row(a, "model").Note != "not in BLIS's catalog" {
		t.Errorf("verdict %s, unscored %+v", a.Verdict, a.Unscored)
	}
}

func TestArmVerdictRule(t *testing.T) {
	m := ProvRow{Verdict: Match}
	for _, c := range []struct {
		rows         []ProvRow
		reproducible bool
		want         string
	}{
		{[]ProvRow{m, m}, true, Exact},
		{[]ProvRow{m, {Verdict: Unstated}}, true, Partial},
		{[]ProvRow{m, {Verdict: Mismatch, Removable: true}}, true, Partial},
		{[]ProvRow{m}, false, NotReproducible},
		{nil, true, Exact},
	} {
		if got := ArmVerdict(c.rows, c.reproducible); got != c.want {
			t.Errorf("%+v: %s, want %s", c.rows, got, c.want)
		}
	}
	if got := Sentence([]string{"a", "b", "c"}); got != "a; b; and c" {
		t.Errorf("Sentence: %q", got)
	}
}

// inference-perf report directories are measured inputs too: BLIS's own
// inference-perf export, validated against itself, scores 0 everywhere.
func TestRoundTripInferencePerf(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []int{1, 4} {
		s := scenario.Defaults()
		s.Model, s.Hardware, s.MaxNumSeqs, s.EnablePrefixCaching = "meta-llama/Llama-3.1-8B", "h100", 64, false
		s.DatasetName, s.RandomInputLen, s.RandomOutputLen, s.NumPrompts, s.Seed = "random", 128, 32, 40, 1
		s.MaxConcurrency = c
		exportRunAs(t, s, filepath.Join(dir, fmt.Sprintf("c%d", c)), format.InferencePerf)
	}
	man := strings.NewReplacer("format: aiperf", "format: inference-perf", "    server-log: server.log\n", "").
		Replace(fmt.Sprintf(roundTripManifest, PairByOrder))
	m, err := ParseManifest(filepath.Join(dir, "ip.yaml"), []byte(man))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := BuildPage(m, PageOptions{Version: "test", Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	a := pg.Arms[0]
	if len(a.Population) == 0 {
		t.Fatal("no metric compared")
	}
	for _, mp := range a.Population {
		if mp.MAPE > 1e-9 {
			t.Errorf("%s: %+v", mp.Metric, mp.PopStats)
		}
	}
	if a.Pairing == nil || len(a.Pairing.Levels) != 2 || a.Pairing.Levels[0].Pairs != 40 {
		t.Fatalf("pairing %+v", a.Pairing)
	}
	if len(a.Inputs) != 2 || !strings.Contains(a.Inputs[0], "inference-perf") {
		t.Errorf("inputs %q", a.Inputs)
	}
	// The summary binds to the per-request records.
	if len(a.Binding) != 2 {
		t.Fatalf("binding %+v", a.Binding)
	}
	for _, lb := range a.Binding {
		if lb.Verdict != Bound || len(lb.Rows) < 10 {
			t.Errorf("level binding %s, %d rows: %+v", lb.Verdict, len(lb.Rows), lb.Rows)
		}
	}
}
