package metrics

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const ms = time.Millisecond

// threeRequests is the hand-computed case: three completed requests and one
// rejected, every token reported as the driver would.
//
//	#0 sent 0,      first token 100 ms, 11 tokens 100 ms apart, done 1100 ms
//	#1 sent 500 ms, first token 700 ms, 21 tokens 200 ms apart, done 4700 ms
//	#2 sent 1000 ms, one token at 1400 ms
//	#3 sent 1200 ms, rejected
func threeRequests(t testing.TB, opts RecorderOptions, finishOrder []int) *Recorder {
	t.Helper()
	r, err := NewRecorder(opts)
	if err != nil {
		t.Fatal(err)
	}
	recs := []Record{
		{Index: 0, Sent: 0, Scheduled: 10 * ms, FirstToken: 100 * ms, Finish: 1100 * ms, InputTokens: 100, OutputTokens: 11, CachedTokens: 32},
		{Index: 1, Sent: 500 * ms, Scheduled: 510 * ms, FirstToken: 700 * ms, Finish: 4700 * ms, InputTokens: 200, OutputTokens: 21, Preemptions: 1, ClientQueueTime: 500 * ms},
		{Index: 2, Sent: 1000 * ms, Scheduled: 1100 * ms, FirstToken: 1400 * ms, Finish: 1400 * ms, InputTokens: 50, OutputTokens: 1, ClientQueueTime: 250 * ms},
		{Index: 3, Sent: 1200 * ms, Scheduled: 1200 * ms, FirstToken: 1200 * ms, Finish: 1200 * ms, InputTokens: 5000, Rejected: true, RejectReason: "prompt (5000 tokens) longer than max_model_len 4096"},
	}
	r.Send(0, 0)
	// Token times in simulated order.
	type tok struct {
		at  time.Duration
		idx int64
		gap time.Duration
	}
	var toks []tok
	for k := 0; k < 11; k++ {
		toks = append(toks, tok{100*ms + time.Duration(k)*100*ms, 0, 100 * ms})
	}
	for k := 0; k < 21; k++ {
		toks = append(toks, tok{700*ms + time.Duration(k)*200*ms, 1, 200 * ms})
	}
	toks = append(toks, tok{1400 * ms, 2, 0})
	// stable insertion sort by time
	for i := 1; i < len(toks); i++ {
		for j := i; j > 0 && toks[j].at < toks[j-1].at; j-- {
			toks[j], toks[j-1] = toks[j-1], toks[j]
		}
	}
	first := map[int64]bool{}
	for _, tk := range toks {
		if first[tk.idx] {
			r.AddITL(tk.idx, tk.gap)
		}
		first[tk.idx] = true
		r.AddTokens(tk.at, 1)
	}
	r.AddStep(2)
	r.AddStep(3)
	r.AddStep(1)
	r.AddStep(2)
	for _, i := range finishOrder {
		r.Finish(recs[i])
	}
	return r
}

func threeInput() SummaryInput {
	return SummaryInput{
		Duration: 5 * time.Second, Backend: "openai", ModelID: "Qwen/Qwen3-32B", TokenizerID: "Qwen/Qwen3-32B",
		NumPrompts: 4, RequestRate: math.Inf(1), Burstiness: 1,
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func TestSummarizeHandComputed(t *testing.T) {
	r := threeRequests(t, RecorderOptions{Percentiles: []float64{50, 90, 95, 99}}, []int{2, 0, 3, 1})
	res := r.Summarize(threeInput())

	if res.Completed != 3 || res.Failed != 1 {
		t.Fatalf("completed %d failed %d, want 3 and 1", res.Completed, res.Failed)
	}
	if res.TotalInputTokens != 350 || res.TotalOutputTokens != 33 {
		t.Errorf("tokens in %d out %d, want 350 and 33 (completed only)", res.TotalInputTokens, res.TotalOutputTokens)
	}
	near(t, "request_throughput", res.RequestThroughput, 3.0/5)
	near(t, "output_throughput", res.OutputThroughput, 33.0/5)
	near(t, "total_token_throughput", res.TotalTokenThroughput, 383.0/5)
	// Buckets from the first send: [0,1) s holds #0's 9 tokens and #1's 2.
	near(t, "max_output_tokens_per_s", res.MaxOutputTokensPerS, 11)
	// At 1.0 s all three are in flight.
	if res.MaxConcurrentRequests != 3 {
		t.Errorf("max_concurrent_requests %d, want 3", res.MaxConcurrentRequests)
	}
	near(t, "mean_batch_size", res.MeanBatchSize, 2)

	// Percentiles 50, 90, 95, 99 by numpy's linear rule:
	// TTFT [0.1 0.2 0.4] s: h = 2q, e.g. p99 → 0.4 − 0.2·0.02 = 0.396.
	stats := []struct {
		name string
		got  Stat
		want Stat
	}{
		{"ttft", res.TTFT, Stat{Mean: 700.0 / 3, Median: 200, Std: 1000 * math.Sqrt(0.14/9),
			Percentiles: []float64{200, 360, 380, 396}}},
		// TPOT: #0 (1.1−0.1)/10 = 0.1 s, #1 (4.2−0.2)/20 = 0.2 s; #2 has one
		// token and no TPOT.
		{"tpot", res.TPOT, Stat{Mean: 150, Median: 150, Std: 50, Percentiles: []float64{150, 190, 195, 199}}},
		// E2EL [0.4 1.1 4.2] s: p90 → 4.2 − 3.1·0.2 = 3.58.
		{"e2el", res.E2EL, Stat{Mean: 1900, Median: 1100, Std: 1000 * math.Sqrt(8.18/3),
			Percentiles: []float64{1100, 3580, 3890, 4138}}},
		// Client queue [0 0.5 0.25] s.
		{"client_queue_time", res.ClientQueueTime, Stat{Mean: 250, Median: 250, Std: 1000 * math.Sqrt(0.125/3),
			Percentiles: []float64{250, 450, 475, 495}}},
	}
	for _, s := range stats {
		near(t, s.name+" mean", s.got.Mean, s.want.Mean)
		near(t, s.name+" median", s.got.Median, s.want.Median)
		near(t, s.name+" std", s.got.Std, s.want.Std)
		for i := range s.want.Percentiles {
			near(t, s.name+" p", s.got.Percentiles[i], s.want.Percentiles[i])
		}
	}
	// ITL: 10 gaps of 100 ms and 20 of 200 ms. Mean and std exact; the
	// median and percentiles (all at ranks holding 200 ms) within α.
	near(t, "itl mean", res.ITL.Mean, 5000.0/30)
	near(t, "itl std", res.ITL.Std, 1000*math.Sqrt(2.0/900))
	a := res.ITLRelativeAccuracy
	for i, v := range append([]float64{res.ITL.Median}, res.ITL.Percentiles...) {
		if math.Abs(v-200) > 200*a {
			t.Errorf("itl percentile %d = %v, want 200 within %.3g%%", i, v, 100*a)
		}
	}
	if res.HasGoodput {
		t.Error("goodput without SLOs")
	}
}

func TestTPOTExcludesSingleToken(t *testing.T) {
	r, _ := NewRecorder(RecorderOptions{})
	r.Finish(Record{Index: 0, Sent: 0, FirstToken: 30 * ms, Finish: 30 * ms, OutputTokens: 1})
	r.Finish(Record{Index: 1, Sent: 0, FirstToken: 40 * ms, Finish: 40 * ms, OutputTokens: 0}) // no chunk: failed
	res := r.Summarize(SummaryInput{Duration: time.Second})
	if res.Completed != 1 || res.Failed != 1 {
		t.Fatalf("completed %d failed %d", res.Completed, res.Failed)
	}
	if res.TPOT.Mean != 0 || res.TPOT.Median != 0 || res.TPOT.Percentiles[3] != 0 {
		t.Errorf("TPOT of one-token requests should be empty (zeros), got %+v", res.TPOT)
	}
	near(t, "ttft", res.TTFT.Mean, 30)
	if res.Requests[1].Error != NoChunkError {
		t.Errorf("zero-token request error %q", res.Requests[1].Error)
	}
}

func TestGoodput(t *testing.T) {
	tests := []struct {
		slos []SLO
		want float64
	}{
		{[]SLO{{"ttft", 250}}, 2.0 / 5},                 // #0, #1
		{[]SLO{{"ttft", 250}, {"tpot", 150}}, 1.0 / 5},  // #0 only
		{[]SLO{{"tpot", 150}}, 2.0 / 5},                 // #0, and #2 whose TPOT counts as 0
		{[]SLO{{"e2el", 100}, {"e2el", 5000}}, 3.0 / 5}, // the last one given wins
		{[]SLO{{"ttft", 100}}, 1.0 / 5},                 // bound inclusive: 0.1 ≥ 0.1
		{[]SLO{{"itl", 1}, {"ttft", 1e9}}, 3.0 / 5},     // unknown metric ignored
		{[]SLO{{"e2el", 0}}, 0},
	}
	for _, tc := range tests {
		r := threeRequests(t, RecorderOptions{}, []int{0, 1, 2, 3})
		in := threeInput()
		in.Goodput = tc.slos
		res := r.Summarize(in)
		if !res.HasGoodput {
			t.Fatalf("%v: no goodput", tc.slos)
		}
		near(t, "goodput", res.RequestGoodput, tc.want)
	}
}

func TestNewRecorderRejects(t *testing.T) {
	bad := []RecorderOptions{
		{Percentiles: []float64{50, 101}},
		{Percentiles: []float64{-1}},
		{Percentiles: []float64{math.NaN()}},
		{Metrics: []string{"ttft", "latency"}},
		{ITLRelativeAccuracy: 2},
		{ITLRelativeAccuracy: -0.01},
	}
	for _, o := range bad {
		if _, err := NewRecorder(o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	r, err := NewRecorder(RecorderOptions{Metrics: []string{"e2el", "ttft"}})
	if err != nil || strings.Join(r.metrics, ",") != "ttft,e2el" {
		t.Errorf("metrics %v %v, want vLLM order ttft,e2el", r.metrics, err)
	}
}

// TestEmpty: nothing recorded, zero duration — no panic, finite JSON.
func TestEmpty(t *testing.T) {
	r, _ := NewRecorder(RecorderOptions{Detailed: true, Metrics: allMetrics})
	res := r.Summarize(SummaryInput{MaxConcurrency: 2, RequestRate: 1})
	for _, detailed := range []bool{false, true} {
		var b bytes.Buffer
		if err := WriteJSON(&b, res, detailed); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			t.Fatalf("invalid JSON: %v\n%s", err, b.Bytes())
		}
		// Every statistic is a finite number (zeros), never null or NaN.
		for k, v := range m {
			if strings.HasSuffix(k, "_ms") || strings.Contains(k, "throughput") || k == "duration" ||
				k == "mean_batch_size" || k == "max_output_tokens_per_s" {
				if _, ok := v.(float64); !ok {
					t.Errorf("%s = %v, want a number", k, v)
				}
			}
		}
		if _, ok := m["p99_e2el_including_client_queue_ms"]; !ok {
			t.Error("queue-inclusive E2EL missing with a cap and a finite rate")
		}
	}
	var tb bytes.Buffer
	if err := WriteTable(&tb, res); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tb.String(), "nan") {
		t.Errorf("table has nan:\n%s", tb.String())
	}
	// A zero Recorder-less Result also writes.
	if err := WriteTable(&tb, &Result{}); err != nil {
		t.Fatal(err)
	}
}

func TestDeploymentMarshalError(t *testing.T) {
	r, _ := NewRecorder(RecorderOptions{})
	res := r.Summarize(SummaryInput{Deployment: map[string]any{"bad": make(chan int)}})
	if err := WriteJSON(&bytes.Buffer{}, res, false); err == nil {
		t.Error("unmarshalable deployment: no error")
	}
}

func TestDetailedNeedsDetailedRecorder(t *testing.T) {
	r := threeRequests(t, RecorderOptions{}, []int{0, 1, 2, 3})
	if err := WriteJSON(&bytes.Buffer{}, r.Summarize(threeInput()), true); err == nil {
		t.Error("detailed JSON from a plain recorder: no error")
	}
}

func goldenInput() SummaryInput {
	in := threeInput()
	in.Label = "blis"
	in.RequestRate = 2
	in.MaxConcurrency = 2
	in.Metadata = []KV{{"tp", "2"}, {"note", "caf\u00e9 <&> \"q\""}, {"burstiness", "overridden later, keeps its place"}}
	in.Goodput = []SLO{{"ttft", 250}}
	in.GPUKVCacheTokens = 123456
	in.NumPreemptions = 1
	in.PrefixCacheHitRate = 0.25
	in.Deployment = struct {
		Replicas int               `json:"replicas"`
		Engine   map[string]any    `json:"engine"`
		Router   string            `json:"router,omitempty"`
		Labels   map[string]string `json:"labels"`
	}{2, map[string]any{"tensor-parallel-size": 2, "gpu-memory-utilization": 0.9, "max-num-seqs": 256},
		"", map[string]string{"z": "last", "a": "first \U0001F600"}}
	return in
}

func writeBoth(t *testing.T, res *Result, detailed bool) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteTable(&b, res); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&b, res, detailed); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	tests := []struct {
		file     string
		opts     RecorderOptions
		detailed bool
	}{
		{"summary.golden", RecorderOptions{Percentiles: []float64{50, 90, 99, 99.9}, Metrics: allMetrics}, false},
		{"summary_detailed.golden", RecorderOptions{Detailed: true}, true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			r := threeRequests(t, tc.opts, []int{0, 1, 2, 3})
			got := writeBoth(t, r.Summarize(goldenInput()), tc.detailed)
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./metrics -run TestGolden -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (review, then -update):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
			js := got[bytes.LastIndex(got, []byte("=\n"))+2:]
			var m map[string]any
			if err := json.Unmarshal(js, &m); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
		})
	}
}

// TestDeterminism: the same events give the same bytes, whatever order the
// requests finish in and however often Summarize runs.
func TestDeterminism(t *testing.T) {
	opts := RecorderOptions{Detailed: true, Metrics: allMetrics}
	a := threeRequests(t, opts, []int{0, 1, 2, 3})
	b := threeRequests(t, opts, []int{3, 2, 1, 0})
	ra := writeBoth(t, a.Summarize(goldenInput()), true)
	if rb := writeBoth(t, b.Summarize(goldenInput()), true); !bytes.Equal(ra, rb) {
		t.Errorf("finish order changed the output:\n%s\n%s", ra, rb)
	}
	if ra2 := writeBoth(t, a.Summarize(goldenInput()), true); !bytes.Equal(ra, ra2) {
		t.Error("a second Summarize changed the output")
	}
}

func TestTokenBucketOrigin(t *testing.T) {
	tests := []struct {
		name string
		send []time.Duration
		toks []time.Duration
		want float64
	}{
		// From the first send at 0.6 s: [0.6,1.6) holds 0.7, 1.5; then 1.7.
		{"origin at first send", []time.Duration{600 * ms, 700 * ms}, []time.Duration{700 * ms, 1500 * ms, 1700 * ms}, 2},
		// Without Send, buckets start at 0: [1,2) holds 1.5, 1.7.
		{"origin zero", nil, []time.Duration{700 * ms, 1500 * ms, 1700 * ms}, 2},
		{"origin zero splits", nil, []time.Duration{700 * ms, 900 * ms, 1500 * ms}, 2},
		{"first send joins", []time.Duration{800 * ms}, []time.Duration{900 * ms, 1500 * ms, 1700 * ms}, 3},
		// A later, earlier-timed Send moves the origin while no token has come.
		{"earliest send", []time.Duration{900 * ms, 100 * ms}, []time.Duration{900 * ms, 1500 * ms, 1900 * ms}, 2},
	}
	for _, tc := range tests {
		r, _ := NewRecorder(RecorderOptions{})
		for i, s := range tc.send {
			r.Send(int64(i), s)
		}
		for _, at := range tc.toks {
			r.AddTokens(at, 1)
		}
		r.Finish(Record{Index: 0, Sent: 0, FirstToken: ms, Finish: 2 * time.Second, OutputTokens: 3})
		if got := r.Summarize(SummaryInput{Duration: 2 * time.Second}).MaxOutputTokensPerS; got != tc.want {
			t.Errorf("%s: peak %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMaxConcurrentHalfOpen(t *testing.T) {
	r, _ := NewRecorder(RecorderOptions{})
	// [0,1) and [1,2) touch but do not overlap; [0.5, 1) overlaps the first.
	r.Finish(Record{Index: 0, Sent: 0, FirstToken: ms, Finish: time.Second, OutputTokens: 2})
	r.Finish(Record{Index: 1, Sent: time.Second, FirstToken: 1001 * ms, Finish: 2 * time.Second, OutputTokens: 2})
	r.Finish(Record{Index: 2, Sent: 500 * ms, FirstToken: 501 * ms, Finish: time.Second, OutputTokens: 2})
	if got := r.Summarize(SummaryInput{Duration: 2 * time.Second}).MaxConcurrentRequests; got != 2 {
		t.Errorf("peak concurrency %d, want 2", got)
	}
}

func TestPercentileWord(t *testing.T) {
	for p, want := range map[float64]string{99: "99", 50: "50", 99.9: "99.9", 99.99: "99.99", 0.5: "0.5", 100: "100", 0: "0"} {
		if got := PercentileWord(p); got != want {
			t.Errorf("PercentileWord(%v) = %q, want %q", p, got, want)
		}
	}
}

func TestRecorderHotPathNoAlloc(t *testing.T) {
	r, _ := NewRecorder(RecorderOptions{})
	r.Send(0, 0)
	for i := range 10_000 {
		r.AddITL(int64(i%64), time.Duration(5+i%50)*ms)
		r.AddTokens(time.Duration(i)*ms, 1)
	}
	i := 0
	if n := testing.AllocsPerRun(10_000, func() {
		r.AddITL(int64(i%64), time.Duration(5+i%50)*ms)
		r.AddTokens(time.Duration(i%10_000)*ms, 3)
		r.AddStep(8)
		i++
	}); n != 0 {
		t.Errorf("AddITL/AddTokens/AddStep allocate %v per call", n)
	}
}

func BenchmarkRecorderAddITL(b *testing.B) {
	r, _ := NewRecorder(RecorderOptions{})
	gaps := make([]time.Duration, 1<<12)
	for i := range gaps {
		gaps[i] = time.Duration(20_000_000 + (i*7919)%30_000_000) // 20–50 ms
	}
	for _, g := range gaps {
		r.AddITL(0, g)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.AddITL(int64(i&1023), gaps[i&(1<<12-1)])
	}
}

func TestValueStatsOfNothing(t *testing.T) {
	mean, median, std, pct := ValueStats(nil, []float64{50, 99})
	if mean != 0 || median != 0 || std != 0 || len(pct) != 2 || pct[0] != 0 || pct[1] != 0 {
		t.Error("ValueStats of nothing should be zeros, as vLLM's `values or 0`")
	}
}

func TestInteractivity(t *testing.T) {
	for _, c := range []struct{ tpot, want float64 }{{20, 50}, {0.5, 2000}, {0, 0}, {-1, 0}} {
		if got := Interactivity(c.tpot); got != c.want {
			t.Errorf("Interactivity(%g) = %g, want %g", c.tpot, got, c.want)
		}
	}
}
