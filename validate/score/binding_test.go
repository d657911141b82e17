package score

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/metrics"
	"blis/metrics/format"
	"blis/metrics/format/aiperf"
	"blis/metrics/format/guidellm"
	"blis/metrics/format/vllmbench"
	"blis/validate/internal/fixture"
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

// BLIS's own exports carry both records and aggregates: every format's
// aggregates, recomputed from its records, bind.
func TestBindOwnExports(t *testing.T) {
	dir := t.TempDir()
	fixture.Export(t, fixture.SmallRun(8), dir, format.AIPerf, format.VLLM, format.GuideLLM)
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
