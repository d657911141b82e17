package vllmbench

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"blis/metrics"
	"blis/metrics/format/internal/formattest"
)

// exportTo writes formattest.Result as vLLM bench's detailed result file
// (metrics.WriteJSON) into a fresh directory.
func exportTo(t *testing.T) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	var b bytes.Buffer
	if err := metrics.WriteJSON(&b, res, true); err != nil {
		t.Fatal(err)
	}
	return formattest.Dir(t, map[string][]byte{ResultFile: b.Bytes()}), res, run
}

func TestRoundTrip(t *testing.T) {
	dir, res, run := exportTo(t)
	m, err := Read(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"duration": res.DurationS, "completed": float64(res.Completed), "failed": float64(res.Failed),
		"request_throughput": res.RequestThroughput, "output_throughput": res.OutputThroughput,
		"total_token_throughput": res.TotalTokenThroughput, "max_output_tokens_per_s": res.MaxOutputTokensPerS,
	}
	for _, mm := range []string{metrics.MetricTTFT, metrics.MetricTPOT, metrics.MetricITL, metrics.MetricE2EL} {
		st := res.Stat(mm)
		want["mean_"+mm+"_ms"], want["median_"+mm+"_ms"], want["std_"+mm+"_ms"] = st.Mean, st.Median, st.Std
		for i, p := range res.Percentiles {
			want["p"+metrics.PercentileWord(p)+"_"+mm+"_ms"] = st.Percentiles[i]
		}
	}
	for k, v := range want {
		got, ok := m.Metric(k)
		if !ok || got.Value != v {
			t.Errorf("%s = %v (%v), want %v bit for bit", k, got.Value, ok, v)
		}
	}
	if u, _ := m.Metric("p99.9_ttft_ms"); u.Unit != "ms" {
		t.Errorf("unit of p99.9_ttft_ms %q", u.Unit)
	}
	formattest.CheckRequests(t, m.Requests, res, run, 0, 0, true)
	formattest.SameSummary(t, formattest.Resummarize(t, m, 0, res.Percentiles), res)
}

func TestReadInferenceXResults(t *testing.T) {
	m, err := Read(filepath.Join("testdata", "inferencex_bench_results", "glm5_fp8_vllm_tp8_isl12288_osl128_conc4.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.Metric("median_ttft"); !ok || got.Value != 1.6081448467448354 || got.Unit != "s" {
		t.Errorf("median_ttft %+v", got)
	}
	if got, ok := m.Metric("request_rate"); !ok || !math.IsInf(got.Value, 1) {
		t.Errorf("request_rate %+v", got)
	}
	if len(m.Requests) != 0 {
		t.Errorf("%d requests from a summary", len(m.Requests))
	}
}

// The reader names the file, line, JSON path, what it found and what it
// wants.
func TestReadErrorsNameFileLineAndPath(t *testing.T) {
	dir, _, _ := exportTo(t)
	formattest.ReadErrors(t, func(p string) error { _, err := Read(p); return err },
		formattest.BadFile{What: "arrays", Path: formattest.Mutate(t, dir, ResultFile, `"output_lens": [`, `"output_lens": [1, `, 1),
			Want: []string{ResultFile + ":1:", "$.output_lens", "want 14 entries"}})
}
