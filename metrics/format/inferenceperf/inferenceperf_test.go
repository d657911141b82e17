package inferenceperf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/formattest"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
)

// writeReports writes the reports of res into a fresh directory, as
// format.Export does.
func writeReports(t *testing.T, res *metrics.Result, run metrics.RunInfo) string {
	t.Helper()
	per, sum, stages := Encode(res, &run)
	files := map[string][]byte{PerRequestFile: per}
	if sum != nil {
		files[SummaryFile] = sum
	}
	for k, stage := range stages {
		if stage != nil {
			files[fmt.Sprintf(StageFilePattern, k)] = stage
		}
	}
	return formattest.Dir(t, files)
}

// exportTo writes the reports of formattest.Result into a fresh directory.
func exportTo(t *testing.T) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	return writeReports(t, res, run), res, run
}

func TestRoundTrip(t *testing.T) {
	dir, res, run := exportTo(t)
	for _, f := range []string{PerRequestFile, SummaryFile, "stage_0_lifecycle_metrics.json"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(data) {
			t.Fatalf("%s: not valid JSON", f)
		}
	}
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != Name || m.Path != dir {
		t.Errorf("format %q path %q", m.Format, m.Path)
	}
	// inference-perf lists requests in completion order and names them by
	// position: give them back BLIS's indices.
	inSeq := formattest.InSeq(res)
	for i := range m.Requests {
		if m.Requests[i].ID != strconv.Itoa(i) {
			t.Fatalf("request %d: id %q, want its position", i, m.Requests[i].ID)
		}
		m.Requests[i].ID = strconv.FormatInt(inSeq.Requests[i].Index, 10)
	}
	formattest.CheckRequests(t, m.Requests, inSeq, run, 0, 0, true)
	for i, q := range m.Requests {
		w := inSeq.Requests[i]
		if !w.Success {
			continue
		}
		if q.Chunks != len(w.ITLs)+1 {
			t.Errorf("request %d: %d chunks, want %d", i, q.Chunks, len(w.ITLs)+1)
		}
		want := 0.0
		if w.OutputTokens > 1 {
			want = float64(w.Latency-w.TTFT) / 1e6 / float64(w.OutputTokens-1)
		}
		if math.Abs(q.TPOTms-want) > 1e-9*max(1, want) {
			t.Errorf("request %d: TPOT %v ms, want %v", i, q.TPOTms, want)
		}
	}
	// Replayed through a recorder, the records give BLIS's statistics bit for bit.
	formattest.SameSummary(t, formattest.Resummarize(t, m, 0, formattest.Percentiles), res)

	// The aggregates are inference-perf's, from the times as written.
	metric := func(name string) metrics.MeasuredMetric {
		t.Helper()
		x, ok := m.Metric(name)
		if !ok {
			t.Fatalf("no metric %s", name)
		}
		return x
	}
	if x := metric("summary.successes.count"); x.Value != float64(res.Completed) || x.Unit != "count" {
		t.Errorf("successes.count %+v, want %d", x, res.Completed)
	}
	if x := metric("summary.failures.count"); x.Value != float64(res.Failed) {
		t.Errorf("failures.count %+v, want %d", x, res.Failed)
	}
	var ttft, lat, itl, tpot []float64
	for _, w := range res.Requests {
		if !w.Success {
			continue
		}
		lat = append(lat, metrics.Seconds(w.Latency))
		if len(w.ITLs) > 0 {
			ttft = append(ttft, metrics.Seconds(w.TTFT))
			tpot = append(tpot, metrics.Seconds(w.Latency-w.TTFT)/float64(w.OutputTokens-1))
			for _, g := range w.ITLs {
				itl = append(itl, metrics.Seconds(g))
			}
		}
	}
	for name, xs := range map[string][]float64{"time_to_first_token": ttft, "request_latency": lat,
		"inter_token_latency": itl, "time_per_output_token": tpot} {
		slices.Sort(xs)
		for stat, want := range map[string]float64{"mean": numpy.Mean(xs), "median": numpy.PercentileSorted(xs, 50),
			"p99.9": numpy.PercentileSorted(xs, 99.9), "min": xs[0], "max": xs[len(xs)-1]} {
			for _, rep := range []string{"summary", "stage_0"} {
				x := metric(rep + ".successes.latency." + name + "." + stat)
				if math.Abs(x.Value-want) > 1e-12 {
					t.Errorf("%s.%s.%s = %v, want %v", rep, name, stat, x.Value, want)
				}
				wantUnit := "s"
				if name == "time_per_output_token" {
					wantUnit = "s/token"
				}
				if x.Unit != wantUnit {
					t.Errorf("%s.%s unit %q", name, stat, x.Unit)
				}
			}
		}
	}
	start, end, _ := run.RequestSpan(res)
	if x := metric("summary.benchmark_time_seconds"); math.Abs(x.Value-float64(end-start)/1e9) > 1e-12 {
		t.Errorf("benchmark_time_seconds %v, want %v", x.Value, float64(end-start)/1e9)
	}
	if x := metric("summary.successes.throughput.output_tokens_per_sec"); math.Abs(x.Value-float64(res.TotalOutputTokens)/(float64(end-start)/1e9)) > 1e-9 || x.Unit != "tokens/s" {
		t.Errorf("output_tokens_per_sec %+v", x)
	}
	if x := metric("summary.failures.by_label.400 - other.count"); x.Value != 1 {
		t.Errorf("by_label: %+v", x)
	}
	if _, ok := m.Metric("stage_0.load_summary.requested_rate"); ok {
		t.Errorf("an infinite request rate is written without the stage's rate fields")
	}
}

// TestMultiTokenChunks: a chunk carrying several
// tokens repeats its time in output_token_times; ITLs stay the chunk gaps
// and TPOT is the tool's (last − first token time) / (tokens − 1).
func TestMultiTokenChunks(t *testing.T) {
	res := &metrics.Result{Detailed: true, RequestRate: 4, MaxConcurrency: 2, Requests: []metrics.RequestResult{{
		Index: 0, Success: true, InputTokens: 3, OutputTokens: 7, Start: time.Second,
		End: time.Second + 500*time.Millisecond, TTFT: 100 * time.Millisecond, Latency: 500 * time.Millisecond,
		ITLs: []time.Duration{100 * time.Millisecond, 300 * time.Millisecond},
	}}}
	dir := writeReports(t, res, metrics.RunInfo{})
	var entries []struct {
		Info struct {
			ResponseMetrics struct {
				ChunkTimes       []float64 `json:"chunk_times"`
				OutputTokenTimes []float64 `json:"output_token_times"`
			} `json:"response_metrics"`
		} `json:"info"`
	}
	data, err := os.ReadFile(filepath.Join(dir, PerRequestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		t.Fatal(err)
	}
	rm := entries[0].Info.ResponseMetrics
	if !slices.Equal(rm.ChunkTimes, []float64{1.1, 1.2, 1.5}) ||
		!slices.Equal(rm.OutputTokenTimes, []float64{1.1, 1.1, 1.1, 1.2, 1.2, 1.5, 1.5}) {
		t.Errorf("chunk_times %v output_token_times %v", rm.ChunkTimes, rm.OutputTokenTimes)
	}
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	q := m.Requests[0]
	if q.TTFT != 100*time.Millisecond || !slices.Equal(q.ITLs, res.Requests[0].ITLs) || q.Chunks != 3 ||
		math.Abs(q.TPOTms-400.0/6) > 1e-9 {
		t.Errorf("read back %+v", q)
	}
	first, last := 1.1, 1.5
	for name, want := range map[string]float64{
		"stage_0.load_summary.requested_rate": 4, "stage_0.load_summary.concurrency": 2,
		"stage_0.load_summary.send_duration": 0, "stage_0.load_summary.achieved_rate": 0,
		// inference-perf's ITL counts the zero gaps inside a chunk.
		"summary.successes.latency.inter_token_latency.median": 0,
		"summary.successes.latency.inter_token_latency.max":    0.30000000000000004,
		"summary.successes.latency.time_per_output_token.mean": (last - first) / 6,
		"summary.successes.prompt_tokens.total":                3,
	} {
		if x, ok := m.Metric(name); !ok || x.Value != want {
			t.Errorf("%s = %v (%v), want %v", name, x.Value, ok, want)
		}
	}
}

// A run without requests writes the per-request list alone, which reads
// back empty.
func TestEncodeEmptyRun(t *testing.T) {
	_, run := formattest.Result(t)
	per, sum, stages := Encode(&metrics.Result{Detailed: true}, &run)
	if sum != nil || stages != nil {
		t.Errorf("inference-perf writes no summary without requests")
	}
	dir := t.TempDir()
	formattest.WriteFile(t, dir, PerRequestFile, per)
	m, err := Read(dir)
	if err != nil || len(m.Requests) != 0 || len(m.Metrics) != 0 {
		t.Errorf("empty run: %+v, %v", m, err)
	}
}

func TestReadFixtures(t *testing.T) {
	s := func(x float64) int64 { return int64(math.Round(x * 1e9)) }
	ms := func(x float64) time.Duration { return time.Duration(math.Round(x * 1e6)) }
	tests := []struct {
		path    string
		reqs    []metrics.MeasuredRequest
		metrics map[string]metrics.MeasuredMetric
		nMetric int
	}{{
		path: "testdata/inference-perf",
		reqs: []metrics.MeasuredRequest{
			{ID: "0", Start: s(100), End: s(100.5), Success: true, InputTokens: 10, OutputTokens: 5,
				TTFT: ms(100), ITLs: []time.Duration{ms(100), ms(200), ms(100)}, TPOTms: 100, Chunks: 4},
			{ID: "1", Conversation: "s1", Start: s(100.25), End: s(100.375), Success: true, InputTokens: 7,
				OutputTokens: 1, TTFT: ms(125), Chunks: 1},
			{ID: "2", Start: s(101), End: s(101.125), InputTokens: 4096,
				Error: `{"error": {"message": "This model's maximum context length is 4096 tokens."}}`},
		},
		metrics: map[string]metrics.MeasuredMetric{
			"summary.successes.latency.time_to_first_token.p90":               {Unit: "s", Value: 0.1},
			"summary.successes.latency.time_per_output_token.median":          {Unit: "s/token", Value: 0.1},
			"summary.successes.latency.inter_token_latency.p90":               {Unit: "s", Value: 0.17},
			"summary.successes.throughput.requests_per_sec":                   {Unit: "requests/s", Value: 1.7777777777777777},
			"summary.successes.throughput.images_per_sec":                     {Unit: "images/s", Value: 0},
			"summary.successes.prompt_tokens.uncached":                        {Unit: "tokens", Value: 17},
			"summary.successes.client_fallback_requests.prompt":               {Unit: "count", Value: 1},
			"summary.failures.by_label.400 - Context Window.count":            {Unit: "count", Value: 1},
			"summary.load_summary.schedule_delay.max":                         {Unit: "s", Value: 0.003},
			"summary.benchmark_time_seconds":                                  {Unit: "s", Value: 1.125},
			"stage_0.load_summary.achieved_rate":                              {Unit: "requests/s", Value: 3},
			"stage_0.load_summary.concurrency":                                {Unit: "count", Value: 4},
			"stage_0.successes.latency.time_to_first_token.p99.9":             {Unit: "s", Value: 0.1},
			"stage_0.successes.throughput.output_tokens_per_sec":              {Unit: "tokens/s", Value: 5.333333333333333},
			"summary.successes.latency.request_latency.mean":                  {Unit: "s", Value: 0.3125},
			"summary.successes.latency.normalized_time_per_output_token.mean": {Unit: "s/token", Value: 0.1125},
		},
		nMetric: 66, // 54 in the summary, 12 in the stage
	}, {
		path: "testdata/inference-perf-flat/per_request_lifecycle_metrics.json",
		reqs: []metrics.MeasuredRequest{
			{ID: "0", Start: s(5), End: s(5.75), Success: true, InputTokens: 12, OutputTokens: 3,
				TTFT: ms(250), ITLs: []time.Duration{ms(250), ms(250)}, TPOTms: 250},
			{ID: "1", Start: s(6), End: s(6.5), InputTokens: 3, Error: "TimeoutError"},
		},
	}, {
		path: "testdata/inference-perf/stage_0_lifecycle_metrics.json",
		metrics: map[string]metrics.MeasuredMetric{
			"stage_0.load_summary.requested_rate": {Unit: "requests/s", Value: 2.5},
			"stage_0.failures.count":              {Unit: "count", Value: 1},
		},
		nMetric: 12,
	}}
	for _, tc := range tests {
		m, err := Read(tc.path)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if len(m.Requests) != len(tc.reqs) {
			t.Errorf("%s: %d requests, want %d", tc.path, len(m.Requests), len(tc.reqs))
			continue
		}
		for i, q := range m.Requests {
			w := tc.reqs[i]
			if q.ID != w.ID || q.Conversation != w.Conversation || q.Start != w.Start || q.End != w.End ||
				q.Success != w.Success || q.Error != w.Error || q.InputTokens != w.InputTokens ||
				q.OutputTokens != w.OutputTokens || q.TTFT != w.TTFT || !slices.Equal(q.ITLs, w.ITLs) ||
				math.Abs(q.TPOTms-w.TPOTms) > 1e-6 || q.Chunks != w.Chunks {
				t.Errorf("%s: request %d:\ngot  %+v\nwant %+v", tc.path, i, q, w)
			}
		}
		for name, w := range tc.metrics {
			x, ok := m.Metric(name)
			if !ok || x.Unit != w.Unit || x.Value != w.Value {
				t.Errorf("%s: %s = %+v (%v), want %+v", tc.path, name, x, ok, w)
			}
		}
		if len(m.Metrics) != tc.nMetric {
			t.Errorf("%s: %d metrics, want %d", tc.path, len(m.Metrics), tc.nMetric)
		}
	}
}

func TestReadErrors(t *testing.T) {
	ok := `{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"request_metrics": {"text": {"input_tokens": 3}}, "response_metrics": {"output_tokens": 2, "chunk_times": [1.5, 2.0], "output_token_times": [1.5, 2.0]}}}`
	tests := []struct{ name, data, want string }{
		{"not json", `[{"start_time": 1.0,`, "f.json:1:"},
		{"scalar", `3`, "f.json:1:1: $: want a list of request records or a summary object, got a number"},
		{"entry kind", `[1]`, "f.json:1:2: $[0]: want an object, got a number"},
		{"no start", `[{"end_time": 1.0, "error": null}]`, `$[0]: missing key "start_time"`},
		{"string time", "[\n" + `{"start_time": "1", "end_time": 1.0, "error": null}]`, `f.json:2:16: $[0].start_time: want a number, got a string`},
		{"end before start", `[{"start_time": 2.0, "end_time": 1.0, "error": null}]`, "$[0].end_time: 1 before start_time 2"},
		{"huge time", `[{"start_time": 1e300, "end_time": 1e301, "error": null}]`, "want seconds within ±1e9"},
		{"no error key", `[{"start_time": 1.0, "end_time": 2.0}]`, `$[0]: missing key "error"`},
		{"error kind", `[{"start_time": 1.0, "end_time": 2.0, "error": "boom"}]`, "$[0].error: want an object, got a string"},
		{"error fields", `[{"start_time": 1.0, "end_time": 2.0, "error": {"error_type": "X"}}]`, `$[0].error: missing key "error_msg"`},
		{"negative tokens", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"request_metrics": {"text": {"input_tokens": -1}}}}]`,
			"$[0].info.request_metrics.text.input_tokens: want a count in [0, 2147483647], got -1"},
		{"fractional tokens", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"response_metrics": {"output_tokens": 1.5}}}]`,
			"$[0].info.response_metrics.output_tokens: want an integer, got 1.5"},
		{"token time early", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"response_metrics": {"output_token_times": [0.5]}}}]`,
			"$[0].info.response_metrics.output_token_times[0]: 0.5 before start_time 1"},
		{"token times out of order", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"response_metrics": {"chunk_times": [1.5, 1.2]}}}]`,
			"$[0].info.response_metrics.chunk_times[1]: 1.2 before the previous time 1.5: want times in order"},
		{"token time late", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"output_token_times": [2.5]}}]`,
			"$[0].info.output_token_times[0]: 2.5 after end_time 2"},
		{"usage kind", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "info": {"response_metrics": {"server_usage": []}}}]`,
			"$[0].info.response_metrics.server_usage: want an object, got an array"},
		{"session kind", `[{"start_time": 1.0, "end_time": 2.0, "error": null, "session_id": 3}]`, "$[0].session_id: want a string, got a number"},
		{"second entry", "[" + ok + ",\n" + `{"start_time": 1.0, "end_time": "x", "error": null}]`, "f.json:2:33: $[1].end_time: want a number, got a string"},
		{"summary without successes", `{"failures": {"count": 0}}`, `$: missing key "successes"`},
		{"summary count", `{"successes": {"count": -2}, "failures": {"count": 0}}`, "$.successes.count: want a count"},
		{"summary failures", `{"successes": {"count": 2}}`, `$: missing key "failures"`},
		{"latency stat", `{"successes": {"count": 2, "latency": {"time_to_first_token": {"mean": "fast"}}}, "failures": {"count": 0}}`,
			"$.successes.latency.time_to_first_token.mean: want a number, got a string"},
		{"latency kind", `{"successes": {"count": 2, "latency": {"time_to_first_token": 3}}, "failures": {"count": 0}}`,
			"$.successes.latency.time_to_first_token: want an object, got a number"},
		{"throughput", `{"successes": {"count": 2, "throughput": {"requests_per_sec": "1"}}, "failures": {"count": 0}}`,
			"$.successes.throughput.requests_per_sec: want a number, got a string"},
		{"overflow", `{"successes": {"count": 2, "x": 1e999}, "failures": {"count": 0}}`, "$.successes.x: number 1e999 out of range"},
	}
	for _, tc := range tests {
		_, err := parseFile("f.json", []byte(tc.data))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	if _, err := parseFile("f.json", []byte("["+ok+"]")); err != nil {
		t.Errorf("valid entry: %v", err)
	}

	if _, err := Read(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no inference-perf lifecycle report") {
		t.Errorf("empty directory: %v", err)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Errorf("missing file read")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, PerRequestFile), []byte(`{"successes": {"count": 1}, "failures": {"count": 0}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "want a JSON list of request records") {
		t.Errorf("summary in the per-request file: %v", err)
	}
}

func TestFilesOrder(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"stage_10_lifecycle_metrics.json", "stage_2_lifecycle_metrics.json",
		SummaryFile, PerRequestFile, "config.yaml", "stage_x_lifecycle_metrics.json"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("[]"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, p := range Files(dir) {
		got = append(got, filepath.Base(p))
	}
	want := []string{PerRequestFile, SummaryFile, "stage_2_lifecycle_metrics.json", "stage_10_lifecycle_metrics.json"}
	if !slices.Equal(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	for file, want := range map[string]string{"stage_3_lifecycle_metrics.json": "stage_3", "summary_lifecycle_metrics.json": "summary",
		"adapter_a_lifecycle_metrics.json": "adapter_a", "report.json": "summary"} {
		if got := ipReportName(file); got != want {
			t.Errorf("ipReportName(%s) = %s, want %s", file, got, want)
		}
	}
}

func TestLabels(t *testing.T) {
	for _, tc := range [][3]string{
		{"HTTP Error 503", "x", "503 - Service Unavailable"},
		{"HTTP Error 400", "maximum context length", "400 - Context Window"},
		{"HTTP Error 400", "bad", "400 - other"},
		{"TimeoutError", "timeout: no complete response within 1s", "Timeout"},
		{"ClientConnectorError", "Cannot connect to host", "Connection Error"},
		{" EmptyStreamError ", "", "emptystreamerror"},
	} {
		if got := ipLabel(tc[0], tc[1]); got != tc[2] {
			t.Errorf("ipLabel(%q, %q) = %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// refEntry is an entry built as a document, the reference appendEntry's
// token-by-token writing must match.
func refEntry(q *ipReq) *jsonx.Obj {
	e := jsonx.NewObj().Set("start_time", q.start).Set("end_time", q.end)
	if q.hasSession {
		e.Set("session_id", q.session)
	}
	e.Set("request", q.request).Set("response", nil)
	reqMetrics := jsonx.NewObj().Set("text", jsonx.NewObj().Set("input_tokens", q.input)).
		Set("image", nil).Set("video", nil).Set("audio", nil)
	var resp any
	if q.ok {
		resp = jsonx.NewObj().
			Set("output_tokens", q.out).
			Set("server_usage", jsonx.NewObj().Set("prompt_tokens", q.input).Set("total_tokens", q.input+q.out).
				Set("completion_tokens", q.out).
				Set("prompt_tokens_details", jsonx.NewObj().Set("cached_tokens", q.cached))).
			Set("response_chunks", []any{}).
			Set("chunk_times", append([]float64{}, q.chunkTimes...)).
			Set("output_token_times", append([]float64{}, q.tokenTimes...))
	}
	e.Set("info", jsonx.NewObj().
		Set("request_metrics", reqMetrics).
		Set("response_metrics", resp).
		Set("extra_info", jsonx.NewObj()).
		Set("lora_adapter", nil).Set("graph_event_id", nil).
		Set("labels", jsonx.NewObj()).
		Set("retries_attempted", 0).Set("retries_recovered", false).
		Set("input_tokens", q.input))
	if q.ok {
		e.Set("error", nil)
	} else {
		e.Set("error", jsonx.NewObj().Set("error_type", q.errType).Set("error_msg", q.errMsg))
	}
	return e
}

// The per-request file is the list of documents the tool's fields
// describe, byte for byte, and the Writer writes what Encode renders.
func TestEntryEncoderMatchesDocument(t *testing.T) {
	res, run := formattest.Result(t)
	for _, multi := range []bool{false, true} {
		run.MultiTurn = multi
		per, sum, stages := Encode(res, &run)
		stage := stages[0]
		a := newAggregator(&run, run.ModelName(res))
		var list []any
		for _, p := range formattest.InSeq(res).Requests {
			q := *a.record(&p)
			q.chunkTimes, q.tokenTimes = slices.Clone(q.chunkTimes), slices.Clone(q.tokenTimes)
			list = append(list, refEntry(&q))
		}
		var want bytes.Buffer
		jsonx.Encode(&want, list, jsonx.PyIndent2)
		if !bytes.Equal(per, want.Bytes()) {
			t.Fatalf("multi-turn %v: per-request file differs from the documents:\n%s\nwant\n%s", multi, per, want.Bytes())
		}
		dir := t.TempDir()
		wrun := run
		wrun.Model = run.ModelName(res) // as Export gives it
		w, err := NewWriter(dir, wrun)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range formattest.InSeq(res).Requests {
			if err := w.Request(&q); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(res); err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string][]byte{PerRequestFile: per, SummaryFile: sum, fmt.Sprintf(StageFilePattern, 0): stage} {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: the Writer's file differs from Encode's (%v)", name, err)
			}
		}
	}
	// No request: an empty list and no summary.
	per, sum, _ := Encode(formattest.Empty(t), &run)
	if string(per) != "[]" || sum != nil {
		t.Errorf("empty run: %q, summary %v", per, sum != nil)
	}
}

// A staged run's reports: one stage file per load stage, each over its own
// requests at its own requested rate; the summary covers them all.
func TestStageReports(t *testing.T) {
	res, run := formattest.Result(t)
	n := int64(len(res.Requests))
	first := n / 3
	run.Stages = []metrics.Stage{{Rate: 2, Duration: 5, Requests: first}, {Rate: 7, Duration: 3, Requests: n - first}, {Rate: 1, Duration: 1, Requests: 0}}
	dir := writeReports(t, res, run)
	count := func(file string) (int, float64) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			LoadSummary struct {
				Count         int      `json:"count"`
				RequestedRate *float64 `json:"requested_rate"`
			} `json:"load_summary"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		rate := -1.0
		if doc.LoadSummary.RequestedRate != nil {
			rate = *doc.LoadSummary.RequestedRate
		}
		return doc.LoadSummary.Count, rate
	}
	if c, rate := count(SummaryFile); c != int(n) || rate != -1 {
		t.Errorf("summary: %d requests, rate %v; want %d, none", c, rate, n)
	}
	for k, want := range []struct {
		n    int64
		rate float64
	}{{first, 2}, {n - first, 7}} {
		if c, rate := count(fmt.Sprintf(StageFilePattern, k)); int64(c) != want.n || rate != want.rate {
			t.Errorf("stage %d: %d requests at %v/s, want %d at %v", k, c, rate, want.n, want.rate)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf(StageFilePattern, 2))); err == nil {
		t.Error("a stage without requests has a report")
	}
	if _, err := Read(dir); err != nil {
		t.Errorf("the staged reports do not read back: %v", err)
	}
}
