package validate

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

	"blis/cluster"
	"blis/internal/buildinfo"
	"blis/metrics"
	"blis/metrics/format"
	"blis/metrics/format/aiperf"
	"blis/metrics/format/guidellm"
	"blis/metrics/format/vllmbench"
	"blis/scenario"
)

func TestBindRecomputed(t *testing.T) {
	for _, c := range []struct {
		name       string
		r          metrics.Recomputed
		want       string
		diffIsNaN  bool
		wantDiffPc float64
	}{
		{"equal", metrics.Recomputed{Published: 100, Recomputed: 100}, Bound, false, 0},
		{"at the 0.5% edge", metrics.Recomputed{Published: 100, Recomputed: 100.5}, Bound, false, 0.5},
		{"just past the edge", metrics.Recomputed{Published: 100, Recomputed: 100.51}, Unbound, false, 0.51},
		{"low side past the edge", metrics.Recomputed{Published: 100, Recomputed: 99.4}, Unbound, false, -0.6},
		{"printing precision", metrics.Recomputed{Published: 0.10, Recomputed: 0.104, Quantum: 0.005}, Bound, false, 4},
		{"past printing precision", metrics.Recomputed{Published: 0.10, Recomputed: 0.106, Quantum: 0.005}, Unbound, false, 6},
		{"zero published", metrics.Recomputed{Published: 0, Recomputed: 0}, Bound, true, 0},
		{"zero within the floor", metrics.Recomputed{Published: 0, Recomputed: 1e-12}, Bound, true, 0},
		{"not recomputable", metrics.Recomputed{Published: 5, Recomputed: math.NaN()}, Unbound, true, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := BindRecomputed([]metrics.Recomputed{c.r})
			if len(rows) != 1 || rows[0].Verdict != c.want {
				t.Fatalf("%+v: %+v, want %s", c.r, rows, c.want)
			}
			d := rows[0].DiffPct.F()
			if c.diffIsNaN != math.IsNaN(d) || (!c.diffIsNaN && math.Abs(d-c.wantDiffPc) > 1e-9) {
				t.Errorf("difference %v, want %v", d, c.wantDiffPc)
			}
		})
	}
}

// vllmFixture is a --save-detailed vLLM result of four requests whose
// aggregates are computed by hand: TTFTs 100..400 ms, so the mean and the
// median are 250 ms and np.percentile(…, 99) = 300 + 0.97·100 = 397 ms;
// latencies 1.1..1.4 s with 11 output tokens, so each TPOT is
// (latency − TTFT)/10 = 100 ms; 44 output tokens over 2 s: 22 tok/s.
func vllmFixture(meanTTFT, p99TTFT float64) string {
	return fmt.Sprintf(`{"duration": 2.0, "completed": 4, "total_input_tokens": 40, "total_output_tokens": 44,
 "request_throughput": 2.0, "output_throughput": 22.0,
 "mean_ttft_ms": %v, "median_ttft_ms": 250.0, "p99_ttft_ms": %v, "mean_tpot_ms": 100.0, "median_tpot_ms": 100.0,
 "mean_e2el_ms": 1250.0,
 "input_lens": [10, 10, 10, 10], "output_lens": [11, 11, 11, 11],
 "ttfts": [0.1, 0.2, 0.3, 0.4], "itls": [[], [], [], []], "latencies": [1.1, 1.2, 1.3, 1.4],
 "errors": ["", "", "", ""]}`, meanTTFT, p99TTFT)
}

func TestBindVLLMHandComputed(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name           string
		mean, p99      float64
		verdict        string
		unboundMetrics []string
	}{
		{"published as computed", 250, 397, Bound, nil},
		{"mean off by 1%", 252.5, 397, Unbound, []string{"mean_ttft_ms"}},
		{"p99 off by 0.4%", 250, 397 * 1.004, Bound, nil},
		{"nearest-rank p99 instead of linear", 250, 400, Unbound, []string{"p99_ttft_ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "r.json")
			if err := os.WriteFile(p, []byte(vllmFixture(c.mean, c.p99)), 0o644); err != nil {
				t.Fatal(err)
			}
			run, err := vllmbench.Read(p)
			if err != nil {
				t.Fatal(err)
			}
			lb := BindLevel(run)
			if lb == nil {
				t.Fatal("nothing bound")
			}
			if lb.Verdict != c.verdict || len(lb.Rows) != 11 {
				t.Errorf("verdict %s with %d rows, want %s with 11: %+v", lb.Verdict, len(lb.Rows), c.verdict, lb.Rows)
			}
			var unbound []string
			for _, r := range lb.Rows {
				if r.Verdict == Unbound {
					unbound = append(unbound, r.Metric)
				}
			}
			if strings.Join(unbound, ",") != strings.Join(c.unboundMetrics, ",") {
				t.Errorf("unbound %v, want %v", unbound, c.unboundMetrics)
			}
		})
	}
	// Aggregates only: nothing to bind.
	p := filepath.Join(dir, "agg.json")
	if err := os.WriteFile(p, []byte(`{"duration": 2.0, "mean_ttft_ms": 250.0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := vllmbench.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if lb := BindLevel(run); lb != nil {
		t.Errorf("bound an aggregates-only file: %+v", lb)
	}
}

// exportFormats simulates a small run and exports it in formats.
func exportFormats(t *testing.T, c int, dir string, formats []string) {
	t.Helper()
	s := scenario.Defaults()
	s.Model, s.Hardware, s.MaxNumSeqs, s.EnablePrefixCaching = "meta-llama/Llama-3.1-8B", "h100", 64, false
	s.DatasetName, s.RandomInputLen, s.RandomOutputLen, s.NumPrompts, s.Seed = "random", 128, 32, 40, 1
	s.MaxConcurrency = c
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
		NumPrompts: s.NumPrompts, RequestRate: s.RequestRate, MaxConcurrency: s.MaxConcurrency})
	if _, err := format.Export(dir, formats, sum, metrics.RunInfo{Model: res.Model.ID, Chip: "H100", TP: 1,
		ISL: s.RandomInputLen, OSL: s.RandomOutputLen, Seed: s.Seed}); err != nil {
		t.Fatal(err)
	}
}

// BLIS's own exports carry both records and aggregates: every format's
// aggregates, recomputed from its records, bind.
func TestBindOwnExports(t *testing.T) {
	dir := t.TempDir()
	exportFormats(t, 8, dir, []string{format.AIPerf, format.VLLM, format.GuideLLM})
	for _, c := range []struct {
		format, path string
		minRows      int
	}{
		{format.AIPerf, dir, 22},
		{format.VLLM, filepath.Join(dir, vllmbench.ResultFile), 20},
		{format.GuideLLM, filepath.Join(dir, guidellm.ReportFile), 15},
	} {
		t.Run(c.format, func(t *testing.T) {
			run, err := format.Read(c.format, c.path)
			if err != nil {
				t.Fatal(err)
			}
			lb := BindLevel(run)
			if lb == nil || len(lb.Rows) < c.minRows {
				t.Fatalf("binding %+v, want at least %d rows", lb, c.minRows)
			}
			for _, r := range lb.Rows {
				if r.Verdict != Bound {
					t.Errorf("%s: published %v, recomputed %v (%v%%)", r.Metric, r.Published, r.Recomputed, r.DiffPct)
				}
			}
			if lb.Formula == "" {
				t.Error("no formula text")
			}
		})
	}
	// Without the JSON, aiperf's CSV (two decimals) is bound.
	if err := os.Remove(filepath.Join(dir, aiperf.JSONFile)); err != nil {
		t.Fatal(err)
	}
	run, err := aiperf.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	lb := BindLevel(run)
	if lb == nil || lb.Verdict != Bound || len(lb.Rows) < 20 || !strings.HasPrefix(lb.Rows[0].Metric, "csv:") {
		t.Errorf("CSV binding %+v", lb)
	}
	// A published number the records do not give unbinds the level.
	for i, m := range run.Metrics {
		if m.Name == "csv:Time to First Token (ms).avg" {
			run.Metrics[i].Value = m.Value*1.01 + 0.01
		}
	}
	if lb := BindLevel(run); lb == nil || lb.Verdict != Unbound || lb.Unbound != 1 {
		t.Errorf("tampered CSV binding %+v", lb)
	}
}

func TestFirstCold(t *testing.T) {
	ms := func(x int64) int64 { return x * 1e6 }
	req := func(start, end, ttft int64, ok bool) Req {
		return Req{Start: ms(start), End: ms(end), TTFT: time.Duration(ms(ttft)), OK: ok}
	}
	for _, c := range []struct {
		name string
		reqs []Req
		want int
	}{
		{"none", nil, -1},
		{"one request", []Req{req(0, 100, 30, true)}, 0},
		{"earliest is found wherever it is listed", []Req{req(200, 300, 30, true), req(100, 150, 30, true)}, 1},
		{"the next sent after the first token", []Req{req(0, 100, 30, true), req(30, 130, 30, true)}, 0},
		{"the next sent during the prefill", []Req{req(0, 100, 30, true), req(29, 130, 30, true)}, -1},
		{"two sent at once", []Req{req(0, 100, 30, true), req(0, 100, 30, true)}, -1},
		{"the first failed", []Req{req(0, 10, 0, false), req(50, 100, 30, true)}, -1},
		{"a zero TTFT still excludes a simultaneous send", []Req{req(5, 10, 0, true), req(5, 10, 0, true)}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FirstCold(c.reqs); got != c.want {
				t.Errorf("FirstCold = %d, want %d", got, c.want)
			}
		})
	}
}

// The page prints the build's stamp; without one, the version alone.
func TestPageNamesTheBuild(t *testing.T) {
	rev := "9e3c509c8788fe0743605a8f06e0bf5c1c39ac1f"
	pg := &Page{BLISVersion: "v1"}
	if got := pg.binaryText(); got != "`blis v1`" {
		t.Errorf("unstamped page: %q", got)
	}
	pg.Build = &buildinfo.Stamp{Version: "(devel)", Stamped: true, Revision: rev, BinarySHA256: "ab"}
	if got := pg.binaryText(); got != "`blis v1` ((devel)+"+rev+", binary sha256 ab)" {
		t.Errorf("stamped page: %q", got)
	}
}

// The round trip, bound: BLIS's own aiperf export binds at every level,
// and its cold full prefill (c1's first request) has error 0. Tampering
// with one published number unbinds that level and flags its pairs; a
// warm-up record in the file becomes the cold full prefill.
func TestRoundTripBindingAndColdPrefill(t *testing.T) {
	dir := t.TempDir()
	kv := 0
	for _, c := range []int{1, 4} {
		s := scenario.Defaults()
		s.Model, s.Hardware, s.MaxNumSeqs, s.EnablePrefixCaching = "meta-llama/Llama-3.1-8B", "h100", 64, false
		s.DatasetName, s.RandomInputLen, s.RandomOutputLen, s.NumPrompts, s.Seed = "random", 128, 32, 40, 1
		s.MaxConcurrency = c
		kv = exportRun(t, s, filepath.Join(dir, fmt.Sprintf("c%d", c)))
	}
	log := fmt.Sprintf("INFO vLLM API server version %s.0\nINFO [kv_cache_utils.py:833] GPU KV cache size: %d tokens\n", EngineVersion, kv)
	if err := os.WriteFile(filepath.Join(dir, "server.log"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "round-trip.yaml")
	build := func() *Page {
		t.Helper()
		m, err := ParseManifest(file, []byte(fmt.Sprintf(roundTripManifest, PairByOrder)))
		if err != nil {
			t.Fatal(err)
		}
		pg, err := BuildPage(m, PageOptions{Version: "test", Jobs: 2})
		if err != nil {
			t.Fatal(err)
		}
		return pg
	}
	a := build().Arms[0]
	if len(a.Binding) != 2 {
		t.Fatalf("%d levels bound, want 2 (%s)", len(a.Binding), a.BindingNote)
	}
	for _, lb := range a.Binding {
		if lb.Verdict != Bound || lb.Unbound != 0 || len(lb.Rows) < 22 {
			t.Errorf("level %s: %s, %d unbound of %d", lb.Text, lb.Verdict, lb.Unbound, len(lb.Rows))
		}
		for _, r := range lb.Rows {
			if r.Verdict != Bound {
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
	if len(a.Binding) != 2 || a.Binding[0].Verdict != Bound || a.Binding[1].Verdict != Unbound || a.Binding[1].Unbound != 1 {
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
			Binding     []LevelBinding `json:"binding"`
			ColdPrefill *ColdPrefill   `json:"cold_prefill"`
		} `json:"arms"`
	}
	if err := json.Unmarshal(pageJSON(pg), &js); err != nil || len(js.Arms[0].Binding) != 2 || js.Arms[0].ColdPrefill == nil {
		t.Errorf("page JSON: %v %+v", err, js)
	}
}
