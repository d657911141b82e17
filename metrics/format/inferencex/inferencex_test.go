package inferencex

import (
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/formattest"
)

const ms = time.Millisecond

// exportTo writes the result point of formattest.Result into a fresh
// directory.
func exportTo(t *testing.T) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	return formattest.Dir(t, map[string][]byte{ResultFile: Encode(res, &run)}), res, run
}

func TestRoundTrip(t *testing.T) {
	dir, res, run := exportTo(t)
	m, err := Read(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	pt := Compute(res, run.GPUCount())
	want := map[string]float64{"tput_per_gpu": pt.TputPerGPU, "output_tput_per_gpu": pt.OutputTputPerGPU,
		"input_tput_per_gpu": pt.InputTputPerGPU, "median_ttft": res.TTFT.Median / 1000, "p99_e2el": res.E2EL.Percentiles[5] / 1000}
	for _, s := range append(pt.Interactivity, pt.E2EInteractivity...) {
		want[s.Key] = s.Value
	}
	for k, v := range want {
		if got, ok := m.Metric(k); !ok || got.Value != v {
			t.Errorf("%s = %v (%v), want %v bit for bit", k, got.Value, ok, v)
		}
	}
	if len(pt.Interactivity) != 3+len(res.Percentiles) {
		t.Errorf("%d interactivity stats", len(pt.Interactivity))
	}
}

func TestHandComputed(t *testing.T) {
	r := &metrics.Result{
		TotalTokenThroughput: 9000, OutputThroughput: 1000, Percentiles: []float64{50, 90},
		TPOT: metrics.Stat{Mean: 25, Median: 20, Std: 5, Percentiles: []float64{20, 40}},
	}
	// E2E/OSL: 1 s/10 = 0.1, 2 s/10 = 0.2, 3 s/20 = 0.15, 4 s/10 = 0.4;
	// one failed and one zero-TTFT request are left out.
	for i, q := range []struct {
		lat  time.Duration
		out  int
		ttft time.Duration
		ok   bool
	}{{time.Second, 10, ms, true}, {2 * time.Second, 10, ms, true}, {3 * time.Second, 20, ms, true},
		{4 * time.Second, 10, ms, true}, {time.Second, 0, 0, false}, {time.Second, 100, 0, true}} {
		r.Requests = append(r.Requests, metrics.RequestResult{Index: int64(i), Success: q.ok, Latency: q.lat,
			OutputTokens: q.out, TTFT: q.ttft, InputTokens: 10})
	}
	p := Compute(r, 4)
	if p.TputPerGPU != 2250 || p.OutputTputPerGPU != 250 || p.InputTputPerGPU != 2000 {
		t.Errorf("per-GPU throughputs %+v", p)
	}
	// 1000 divided by each TPOT statistic (not a statistic of 1000/TPOT).
	want := []Stat{{"mean_intvty", 1000 / (25 + 1e-8)}, {"median_intvty", 1000 / (20 + 1e-8)},
		{"std_intvty", 1000 / (5 + 1e-8)}, {"p50_intvty", 1000 / (20 + 1e-8)}, {"p90_intvty", 1000 / (40 + 1e-8)}}
	if !slices.Equal(p.Interactivity, want) {
		t.Errorf("interactivity %v, want %v", p.Interactivity, want)
	}
	// Sorted ratios [0.1 0.15 0.2 0.4]: p50 → 0.175, p75 → 0.25, p90 → 0.34.
	wantE := map[string]float64{"p50_e2e_intvty": 1 / 0.175, "p75_e2e_intvty": 1 / 0.25, "p90_e2e_intvty": 1 / 0.34}
	if len(p.E2EInteractivity) != 3 {
		t.Fatalf("e2e interactivity %v", p.E2EInteractivity)
	}
	for _, e := range p.E2EInteractivity {
		if math.Abs(e.Value-wantE[e.Key]) > 1e-12*wantE[e.Key] {
			t.Errorf("%s = %v, want %v", e.Key, e.Value, wantE[e.Key])
		}
	}
}

// The reader names the file, line, JSON path and what is missing.
func TestReadErrorsNameFileLineAndPath(t *testing.T) {
	dir, _, _ := exportTo(t)
	formattest.ReadErrors(t, func(p string) error { _, err := Read(p); return err },
		formattest.BadFile{What: "missing key", Path: formattest.Mutate(t, dir, ResultFile, `"tput_per_gpu"`, `"tput_per_gpu_x"`, 1),
			Want: []string{ResultFile + ":1:1: $", `missing key "tput_per_gpu"`}})
}
