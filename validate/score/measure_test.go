package score

import (
	"math"
	"testing"
	"time"

	"blis/metrics"
	"blis/metrics/format"
)

func TestRecordValuesHandComputed(t *testing.T) {
	ms := time.Millisecond
	// Two requests over [0, 1 s): 4 and 2 output tokens.
	// A: TTFT 100 ms, E2E 400 ms, gaps 100,100,100 → TPOT (400−100)/3 = 100.
	// B: TTFT 200 ms, E2E 1000 ms (starts at 0), gap 800 → TPOT 800.
	// A failed request is left out of every metric but the window.
	reqs := []Req{
		{Start: 0, End: int64(400 * ms), OK: true, InputTokens: 5, OutputTokens: 4, TTFT: 100 * ms, ITLs: []time.Duration{100 * ms, 100 * ms, 100 * ms}},
		{Start: 0, End: int64(1000 * ms), OK: true, InputTokens: 5, OutputTokens: 2, TTFT: 200 * ms, ITLs: []time.Duration{800 * ms}},
		{Start: int64(100 * ms), End: int64(1000 * ms), OK: false},
	}
	v := RecordValues(reqs)
	want := map[Metric]float64{
		MOutputTokS:  6,                                 // 6 tokens / 1 s
		MTokSPerUser: (1000.0/100 + 1000.0/800) / 2,     // mean of 1000/TPOT
		MTTFTMean:    150, MTTFTP50: 150, MTTFTP90: 190, // numpy: 100 + 0.9·100
		MTPOTMean: 450, MTPOTP50: 450, MTPOTP90: 730,
		MITLMean: 275, MITLP50: 100, MITLP90: 590, // gaps 100,100,100,800: p90 at 2.7 → 100+0.7·700
		ME2EMean:   700,
		MIntvtyP50: 1000.0 / 450, MIntvtyP90: 1000.0 / 730,
	}
	for k := Metric(0); k < NumMetrics; k++ {
		if !nearPct(v[k], want[k]) {
			t.Errorf("%s: got %v, want %v", k.Info().Name, v[k], want[k])
		}
	}
	if v := RecordValues(nil); !math.IsNaN(v[MTTFTMean]) {
		t.Error("no requests: not NaN")
	}
}

func TestAggregateValues(t *testing.T) {
	vllm := &metrics.MeasuredRun{Format: format.VLLM, Metrics: []metrics.MeasuredMetric{
		{Name: "output_throughput", Unit: "tok/s", Value: 500}, {Name: "mean_ttft_ms", Unit: "ms", Value: 12},
		{Name: "median_tpot_ms", Unit: "ms", Value: 8}, {Name: "p90_tpot_ms", Unit: "ms", Value: 10},
	}}
	v := AggregateValues(vllm)
	if v[MOutputTokS] != 500 || v[MTTFTMean] != 12 || v[MIntvtyP50] != 125 || v[MIntvtyP90] != 100 || !math.IsNaN(v[MITLMean]) {
		t.Errorf("vllm: %v", v)
	}
	llmd := &metrics.MeasuredRun{Format: format.LLMD, Metrics: []metrics.MeasuredMetric{
		{Name: llmdAgg + "latency.time_to_first_token.p50", Unit: "s", Value: 0.25},
		{Name: llmdAgg + "latency.inter_token_latency.mean", Unit: "ms/token", Value: 7},
		{Name: llmdAgg + "latency.request_latency.mean", Unit: "furlongs", Value: 1},
	}}
	v = AggregateValues(llmd)
	if v[MTTFTP50] != 250 || v[MITLMean] != 7 || !math.IsNaN(v[ME2EMean]) {
		t.Errorf("llmd: %v", v)
	}
	if v := AggregateValues(&metrics.MeasuredRun{Format: format.AIPerf}); !math.IsNaN(v[MTTFTMean]) {
		t.Error("aiperf has no aggregate mapping: want NaN")
	}
}

// inference-perf's summary states every headline aggregate, in seconds.
func TestAggregateValuesInferencePerf(t *testing.T) {
	run, err := format.Read(format.InferencePerf, "../../metrics/format/inferenceperf/testdata/inference-perf")
	if err != nil {
		t.Fatal(err)
	}
	v := AggregateValues(run)
	for _, m := range []Metric{MOutputTokS, MTTFTMean, MTTFTP50, MTTFTP90, MTPOTMean, MITLMean, ME2EMean} {
		if math.IsNaN(v[m]) || !(v[m] > 0) {
			t.Errorf("%s: %v", m.Info().Name, v[m])
		}
	}
	ttft, _ := run.Metric("summary.successes.latency.time_to_first_token.mean")
	if math.Abs(v[MTTFTMean]-1000*ttft.Value) > 1e-9 {
		t.Errorf("TTFT mean %v ms, file %v s", v[MTTFTMean], ttft.Value)
	}
}

// BLIS's requests come in completion order; a request in a session keeps
// its session and turn, one outside any is a conversation of its own.
func TestReqsFromResultSessions(t *testing.T) {
	r := &metrics.Result{Requests: []metrics.RequestResult{
		{Index: 0, Seq: 1, Session: 7, Turn: 2},
		{Index: 1, Seq: 0},
	}}
	got := ReqsFromResult(r)
	if len(got) != 2 || got[0].ID != "1" || got[0].Session != "1" || got[0].Turn != 0 ||
		got[1].ID != "0" || got[1].Session != "7" || got[1].Turn != 2 {
		t.Errorf("%+v", got)
	}
}
