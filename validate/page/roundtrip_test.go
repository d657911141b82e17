package page_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"blis/validate/internal/fixture"
	"blis/validate/page"
	"blis/validate/render"
	"blis/validate/score"

	"blis/metrics/format"
	"blis/metrics/format/aiperf"
)

// The round trip: BLIS's own aiperf export validated against itself gives
// every error 0, every setting MATCH, verdict EXACT, KV ratio 1.
func TestRoundTripOwnExport(t *testing.T) {
	dir := t.TempDir()
	exportRoundTrip(t, dir)
	for _, by := range []string{score.PairByOrder, score.PairByID, score.PairBySession} {
		t.Run(by, func(t *testing.T) {
			file, man := filepath.Join(dir, "round-trip.yaml"), fmt.Sprintf(fixture.RoundTripManifest, by)
			pg := buildPage(t, file, man, page.Options{Version: "test", Jobs: 2})
			a := pg.Arms[0]
			if a.Verdict != score.Exact || len(a.MakeExact) != 0 {
				t.Errorf("verdict %s, make exact %q", a.Verdict, a.MakeExact)
			}
			for _, r := range a.Provenance {
				if r.Verdict != score.Match {
					t.Errorf("provenance %+v", r)
				}
			}
			if len(a.Population) != int(score.NumMetrics) {
				t.Errorf("%d metrics compared, want %d", len(a.Population), score.NumMetrics)
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
			pg1 := buildPage(t, file, man, page.Options{Version: "test", Jobs: 1})
			for _, w := range []func(*page.Page) []byte{pageMD, pageJSON, pageFigures} {
				if !bytes.Equal(w(pg), w(pg1)) {
					t.Error("output differs between 1 and 2 workers")
				}
			}
		})
	}
}

func pageMD(pg *page.Page) []byte {
	var b bytes.Buffer
	if err := render.Markdown(&b, pg); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func pageJSON(pg *page.Page) []byte {
	var b bytes.Buffer
	if err := pg.WriteJSON(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func pageFigures(pg *page.Page) []byte {
	var b bytes.Buffer
	for _, f := range render.Figures(pg) {
		b.WriteString(f.Name + "\n")
		b.Write(f.Data)
	}
	return b.Bytes()
}

// exportPair writes c1 and c4 aiperf exports into dir (as the round trip).
func exportPair(t *testing.T, dir string) {
	for _, c := range []int{1, 4} {
		s := fixture.SmallRun(c)
		s.AsyncScheduling = false // the probe manifests state the measured run's async scheduling as off
		fixture.Export(t, s, filepath.Join(dir, fmt.Sprintf("c%d", c)))
	}
}

func TestProvenanceVerdicts(t *testing.T) {
	dir := t.TempDir()
	exportPair(t, dir)
	const head = "validation: p\ntitle: P\narms:\n  - name: a\n    label: A\n    deployment:\n"
	const levels = "    workload: {dataset-name: random, random-input-len: 128, random-output-len: 32, num-prompts: 40, seed: 1}\n" +
		"    levels:\n      - {level: 1, measured: {format: aiperf, path: c1}}\n"
	build := func(dep string) *page.ArmPage {
		t.Helper()
		pg := buildPage(t, filepath.Join(dir, "p.yaml"), head+dep+levels, page.Options{})
		return pg.Arms[0]
	}
	row := func(a *page.ArmPage, setting string) score.ProvRow {
		for _, r := range a.Provenance {
			if r.Setting == setting {
				return r
			}
		}
		t.Fatalf("no row %s in %+v", setting, a.Provenance)
		return score.ProvRow{}
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
		{"model", score.Match, false}, {"chip", score.Match, false}, {"engine-version", score.Mismatch, false},
		{"max-num-seqs", score.Mismatch, true}, {"trust-remote-code", score.Mismatch, false}, {"block-size", score.Unstated, false},
		{"enable-prefix-caching", score.Unstated, false},
	} {
		r := row(a, c.setting)
		if r.Verdict != c.verdict || r.Removable != c.removable {
			t.Errorf("%s: %+v", c.setting, r)
		}
	}
	if exact := strings.Join(a.MakeExact, "; "); a.Verdict != score.Partial ||
		!strings.Contains(exact, "BLIS run with max-num-seqs = 64 (the measured value; BLIS used 32)") || !strings.Contains(exact, "the run stating block-size") {
		t.Errorf("verdict %s, make exact %q", a.Verdict, a.MakeExact)
	}
	// The override changes what BLIS simulates; the level is still scored.
	if len(a.Population) == 0 {
		t.Error("nothing scored")
	}

	// A model BLIS does not have: nothing can be simulated.
	a = build(strings.Replace(dep, "llama-3.1-8b", "acme/NotAModel-7B", 1))
	if a.Verdict != score.NotReproducible || len(a.Unscored) != 1 || !strings.Contains(a.Unscored[0].Needed, "acme/NotAModel-7B") ||
		row(a, "model").Note != "not in BLIS's catalog" {
		t.Errorf("verdict %s, unscored %+v", a.Verdict, a.Unscored)
	}
}

// inference-perf report directories are measured inputs too: BLIS's own
// inference-perf export, validated against itself, scores 0 everywhere.
func TestRoundTripInferencePerf(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []int{1, 4} {
		s := fixture.SmallRun(c)
		fixture.Export(t, s, filepath.Join(dir, fmt.Sprintf("c%d", c)), format.InferencePerf)
	}
	man := strings.NewReplacer("format: aiperf", "format: inference-perf", "    server-log: server.log\n", "").
		Replace(fmt.Sprintf(fixture.RoundTripManifest, score.PairByOrder))
	pg := buildPage(t, filepath.Join(dir, "ip.yaml"), man, page.Options{Version: "test", Jobs: 2})
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
		if lb.Verdict != score.Bound || len(lb.Rows) < 10 {
			t.Errorf("level binding %s, %d rows: %+v", lb.Verdict, len(lb.Rows), lb.Rows)
		}
	}
}

// The round trip, bound: BLIS's own aiperf export binds at every level,
// and its cold full prefill (c1's first request) has error 0. Tampering
// with one published number unbinds that level and flags its pairs; a
// warm-up record in the file becomes the cold full prefill.
func TestRoundTripBindingAndColdPrefill(t *testing.T) {
	dir := t.TempDir()
	exportRoundTrip(t, dir)
	file := filepath.Join(dir, "round-trip.yaml")
	build := func() *page.Page {
		t.Helper()
		pg := buildPage(t, file, fmt.Sprintf(fixture.RoundTripManifest, score.PairByOrder), page.Options{Version: "test", Jobs: 2})
		return pg
	}
	a := build().Arms[0]
	if len(a.Binding) != 2 {
		t.Fatalf("%d levels bound, want 2 (%s)", len(a.Binding), a.BindingNote)
	}
	for _, lb := range a.Binding {
		if lb.Verdict != score.Bound || lb.Unbound != 0 || len(lb.Rows) < 22 {
			t.Errorf("level %s: %s, %d unbound of %d", lb.Text, lb.Verdict, lb.Unbound, len(lb.Rows))
		}
		for _, r := range lb.Rows {
			if r.Verdict != score.Bound {
				t.Errorf("level %s %s: %+v", lb.Text, r.Metric, r)
			}
		}
	}
	cp := a.ColdPrefill
	if cp == nil || cp.Level != 1 || cp.What != "first request" || cp.Error != 0 || cp.MeasuredTTFT != cp.BLISTTFT ||
		cp.MeasuredInput != cp.BLISInput || cp.Note != "" || !(cp.MeasuredTTFT > 0) {
		t.Errorf("cold prefill %+v (%s)", cp, a.ColdPrefillNote)
	}
	for _, l := range a.Pairing.Levels {
		if l.NotBound {
			t.Errorf("level %v flagged not bound", l.Level)
		}
	}

	// Tamper with c4's published mean TTFT.
	jp := filepath.Join(dir, "c4", aiperf.JSONFile)
	data, err := os.ReadFile(jp)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`("time_to_first_token": \{\s*"unit": "ms",\s*"avg": )([0-9.e+-]+)`)
	loc := re.FindSubmatchIndex(data)
	if loc == nil {
		t.Fatalf("no TTFT avg in %s", data)
	}
	v, err := strconv.ParseFloat(string(data[loc[4]:loc[5]]), 64)
	if err != nil {
		t.Fatal(err)
	}
	tampered := append(append(append([]byte{}, data[:loc[4]]...), strconv.FormatFloat(v*1.02, 'g', -1, 64)...), data[loc[5]:]...)
	if err := os.WriteFile(jp, tampered, 0o644); err != nil {
		t.Fatal(err)
	}

	// Put a warm-up primer before c1's first record: the run's first
	// request, 20 % slower than BLIS's replay of it.
	rp := filepath.Join(dir, "c1", aiperf.RecordsFile)
	recs, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	first := recs[:bytes.IndexByte(recs, '\n')]
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		t.Fatal(err)
	}
	md := rec["metadata"].(map[string]any)
	mt := rec["metrics"].(map[string]any)
	start, _ := md["request_start_ns"].(json.Number).Int64()
	ttft, _ := mt["time_to_first_token"].(map[string]any)["value"].(json.Number).Float64()
	md["benchmark_phase"] = "warmup"
	md["x_request_id"] = "primer"
	md["request_start_ns"] = json.Number(strconv.FormatInt(start-int64(10*time.Second), 10))
	md["request_end_ns"] = json.Number(strconv.FormatInt(start-int64(9*time.Second), 10))
	mt["time_to_first_token"].(map[string]any)["value"] = ttft * 1.2
	primer, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rp, append(append(primer, '\n'), recs...), 0o644); err != nil {
		t.Fatal(err)
	}

	pg := build()
	a = pg.Arms[0]
	if len(a.Binding) != 2 || a.Binding[0].Verdict != score.Bound || a.Binding[1].Verdict != score.Unbound || a.Binding[1].Unbound != 1 {
		t.Errorf("bindings after tampering: %+v", a.Binding)
	}
	for _, l := range a.Pairing.Levels {
		if l.NotBound != (l.Level == 4) {
			t.Errorf("level %v: not bound %v", l.Level, l.NotBound)
		}
	}
	cp = a.ColdPrefill
	if cp == nil || cp.What != "warm-up primer" || cp.MeasuredID != "primer" || math.Abs(cp.Error.F()-100*(1/1.2-1)) > 1e-3 {
		t.Errorf("cold prefill with a primer: %+v", cp)
	}
	md2 := string(pageMD(pg))
	for _, want := range []string{"level 4 is **UNBOUND** (1 of", "4 (not bound)", "warm-up primer (measured id primer)", "-16.7%"} {
		if !strings.Contains(md2, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var js struct {
		Arms []struct {
			Binding     []score.LevelBinding `json:"binding"`
			ColdPrefill *page.ColdPrefill    `json:"cold_prefill"`
		} `json:"arms"`
	}
	if err := json.Unmarshal(pageJSON(pg), &js); err != nil || len(js.Arms[0].Binding) != 2 || js.Arms[0].ColdPrefill == nil {
		t.Errorf("page JSON: %v %+v", err, js)
	}
}

// exportRoundTrip writes fixture.RoundTripManifest's inputs into dir:
// SmallRun's aiperf exports at concurrency 1 and 4, and a server log
// stating the engine version BLIS mirrors and BLIS's own KV pool.
func exportRoundTrip(t *testing.T, dir string) {
	t.Helper()
	kv := 0
	for _, c := range []int{1, 4} {
		kv = fixture.Export(t, fixture.SmallRun(c), filepath.Join(dir, fmt.Sprintf("c%d", c)))
	}
	log := fmt.Sprintf("INFO vLLM API server version %s.0\nINFO [kv_cache_utils.py:833] GPU KV cache size: %d tokens\n", score.EngineVersion, kv)
	if err := os.WriteFile(filepath.Join(dir, "server.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
}

// buildPage reads manifest as file and builds its page.
func buildPage(t *testing.T, file, manifest string, opts page.Options) *page.Page {
	t.Helper()
	m, err := page.ParseManifest(file, []byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := page.Build(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return pg
}
