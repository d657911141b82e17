package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"blis/metrics/internal/pytext"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// exportRecords is a small simulated-like run: 14 requests sent 37 ms
// apart under a concurrency cap, mixed lengths (one with a single output
// token), one rejected and one that never streamed, gaps at odd
// nanosecond values, conversations of three turns.
func exportRecords() (recs []Record, gaps [][]time.Duration) {
	seed := uint64(12345)
	next := func(n uint64) uint64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return (seed >> 33) % n
	}
	for i := range 14 {
		sent := time.Duration(i)*37*ms + time.Duration(next(999_999))
		rec := Record{
			Index: int64(i), Sent: sent, Scheduled: sent + 3*ms,
			InputTokens:     100 + int(next(900)),
			CachedTokens:    int(next(64)),
			ClientQueueTime: time.Duration(next(5)) * ms,
		}
		var g []time.Duration
		switch i {
		case 5:
			rec.Rejected, rec.RejectReason = true, "prompt (5000 tokens) longer than max_model_len 4096"
			rec.FirstToken, rec.Finish = sent+ms, sent+ms
		case 9:
			rec.FirstToken, rec.Finish = sent+2*ms, sent+2*ms // never streamed a token
		default:
			rec.FirstToken = sent + 20*ms + time.Duration(next(300_000_000))
			out := 1
			if i != 3 {
				out = 2 + int(next(40))
			}
			rec.OutputTokens = out
			t := rec.FirstToken
			for range out - 1 {
				d := 8*ms + time.Duration(next(30_000_000)) + 1
				g = append(g, d)
				t += d
			}
			rec.Finish = t
		}
		recs = append(recs, rec)
		gaps = append(gaps, g)
	}
	return recs, gaps
}

// recordRun feeds records to a recorder as a driver would: sends, then
// every token in simulated-time order (ties by index), then the finishes.
func recordRun(t testing.TB, opts RecorderOptions, recs []Record, gaps [][]time.Duration) *Recorder {
	t.Helper()
	r, err := NewRecorder(opts)
	if err != nil {
		t.Fatal(err)
	}
	first := recs[0].Sent
	for _, rec := range recs {
		first = min(first, rec.Sent)
	}
	r.Send(first)
	type tok struct {
		at  time.Duration
		idx int64
		gap time.Duration
		itl bool
	}
	var toks []tok
	for i, rec := range recs {
		if rec.Rejected || rec.OutputTokens == 0 {
			continue
		}
		at := rec.FirstToken
		toks = append(toks, tok{at, rec.Index, 0, false})
		for _, g := range gaps[i] {
			at += g
			toks = append(toks, tok{at, rec.Index, g, true})
		}
	}
	slices.SortStableFunc(toks, func(a, b tok) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.idx - b.idx)
	})
	for _, tk := range toks {
		if tk.itl {
			r.AddITL(tk.idx, tk.gap)
		}
		r.AddTokens(tk.at, 1)
	}
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(recs[a].Finish - recs[b].Finish) })
	for _, i := range order {
		r.Finish(recs[i])
	}
	return r
}

func runDuration(recs []Record) time.Duration {
	s, e := recs[0].Sent, recs[0].Finish
	for _, r := range recs {
		s, e = min(s, r.Sent), max(e, r.Finish)
	}
	return e - s
}

var exportPercentiles = []float64{0.1, 25, 50, 75, 90, 99, 99.9}

func exportResult(t testing.TB) (*Result, RunInfo) {
	t.Helper()
	recs, gaps := exportRecords()
	rec := recordRun(t, RecorderOptions{Detailed: true, Percentiles: exportPercentiles}, recs, gaps)
	res := rec.Summarize(SummaryInput{
		Duration: runDuration(recs), Backend: "openai", ModelID: "meta-llama/Llama-3.1-8B-Instruct",
		TokenizerID: "meta-llama/Llama-3.1-8B-Instruct", NumPrompts: len(recs),
		RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: 8,
		GPUKVCacheTokens: 417552, Deployment: map[string]any{"hardware": "h100"},
	})
	run := RunInfo{
		Chip: "H100", Precision: "bf16", TP: 2, ISL: 512, OSL: 24, RangeRatio: 0.5, Seed: 7,
		Version:      "test",
		Conversation: func(i int64) (int64, int) { return i / 3, int(i % 3) },
	}
	return res, run
}

func exportTo(t *testing.T, formats ...string) (string, *Result, RunInfo) {
	t.Helper()
	res, run := exportResult(t)
	dir := t.TempDir()
	if _, err := Export(dir, formats, res, run); err != nil {
		t.Fatal(err)
	}
	return dir, res, run
}

func TestExportWritesEveryFormatDeterministically(t *testing.T) {
	res, run := exportResult(t)
	d1, d2 := t.TempDir(), t.TempDir()
	p1, err := Export(d1, ExportFormats(), res, run)
	if err != nil {
		t.Fatal(err)
	}
	res2, run2 := exportResult(t)
	p2, err := Export(d2, []string{"inference-perf", "inferencex", "LLMD", "guidellm", "aiperf", "vllm", "vllm"}, res2, run2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{VLLMResultFile, AIPerfRecordsFile, AIPerfJSONFile, AIPerfCSVFile, GuideLLMReportFile, LLMDReportFile, InferenceXResultFile,
		InferencePerfPerRequestFile, InferencePerfSummaryFile, "stage_0_lifecycle_metrics.json"}
	if len(p1) != len(want) || len(p2) != len(want) {
		t.Fatalf("wrote %v and %v, want %v", p1, p2, want)
	}
	for i, name := range want {
		if filepath.Base(p1[i]) != name {
			t.Errorf("file %d is %s, want %s", i, p1[i], name)
		}
		a, _ := os.ReadFile(p1[i])
		b, _ := os.ReadFile(p2[i])
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: not byte-identical across runs (%d vs %d bytes)", name, len(a), len(b))
		}
		golden := filepath.Join("testdata", "export", name+".golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, a, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		g, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(a, g) {
			t.Errorf("%s differs from %s (run go test ./metrics -run Export -update, then review the diff)", name, golden)
		}
	}
}

func TestExportRejectsBadInput(t *testing.T) {
	res, run := exportResult(t)
	if _, err := Export(t.TempDir(), []string{"aiperf", "json"}, res, run); err == nil || !strings.Contains(err.Error(), `"json"`) {
		t.Errorf("unknown format: err %v", err)
	}
	recs, gaps := exportRecords()
	plain := recordRun(t, RecorderOptions{}, recs, gaps).Summarize(SummaryInput{Duration: time.Second})
	if _, err := Export(t.TempDir(), []string{"aiperf"}, plain, run); err == nil || !strings.Contains(err.Error(), "Detailed") {
		t.Errorf("aiperf without a detailed recorder: err %v", err)
	}
	if _, err := Export(t.TempDir(), []string{"vllm", "guidellm", "llmd", "inferencex"}, plain, run); err != nil {
		t.Errorf("summary-only formats from a plain recorder: %v", err)
	}
}

// resummarize replays measured requests through a recorder, as if BLIS
// had measured them, and summarises them as vLLM bench would.
func resummarize(t *testing.T, m *MeasuredRun, origin int64, percentiles []float64) *Result {
	t.Helper()
	var recs []Record
	var gaps [][]time.Duration
	for _, q := range m.Requests {
		idx, err := strconv.ParseInt(q.ID, 10, 64)
		if err != nil {
			t.Fatalf("request id %q", q.ID)
		}
		rec := Record{Index: idx, Sent: time.Duration(q.Start - origin), Finish: time.Duration(q.End - origin),
			InputTokens: q.InputTokens, OutputTokens: q.OutputTokens}
		rec.FirstToken = rec.Sent + q.TTFT
		if !q.Success {
			rec.Rejected, rec.RejectReason, rec.OutputTokens = true, q.Error, 0
			rec.FirstToken = rec.Finish
		}
		recs = append(recs, rec)
		gaps = append(gaps, q.ITLs)
	}
	rec := recordRun(t, RecorderOptions{Detailed: true, Percentiles: percentiles}, recs, gaps)
	return rec.Summarize(SummaryInput{Duration: runDuration(recs)})
}

func sameStat(t *testing.T, what string, got, want Stat) {
	t.Helper()
	if got.Mean != want.Mean || got.Median != want.Median || got.Std != want.Std || !slices.Equal(got.Percentiles, want.Percentiles) {
		t.Errorf("%s: got %+v, want %+v (bit for bit)", what, got, want)
	}
}

func sameSummary(t *testing.T, got, want *Result) {
	t.Helper()
	sameStat(t, "ttft", got.TTFT, want.TTFT)
	sameStat(t, "tpot", got.TPOT, want.TPOT)
	sameStat(t, "itl", got.ITL, want.ITL)
	sameStat(t, "e2el", got.E2EL, want.E2EL)
	if got.Completed != want.Completed || got.Failed != want.Failed ||
		got.TotalInputTokens != want.TotalInputTokens || got.TotalOutputTokens != want.TotalOutputTokens ||
		got.DurationS != want.DurationS || got.RequestThroughput != want.RequestThroughput ||
		got.OutputThroughput != want.OutputThroughput || got.TotalTokenThroughput != want.TotalTokenThroughput ||
		got.MaxOutputTokensPerS != want.MaxOutputTokensPerS || got.MaxConcurrentRequests != want.MaxConcurrentRequests {
		t.Errorf("summary differs:\ngot  %+v\nwant %+v", got, want)
	}
	for i := range want.Requests {
		g, w := got.Requests[i], want.Requests[i]
		if g.Error != w.Error || g.Success != w.Success || !durationsEqual(g.ITLs, w.ITLs) {
			t.Errorf("request %d: got %+v, want %+v", i, g, w)
		}
	}
}

// checkRequests compares read-back requests with the Result's, exactly
// or within tol nanoseconds for times.
func checkRequests(t *testing.T, got []MeasuredRequest, res *Result, run RunInfo, origin int64, tol int64, itls bool) {
	t.Helper()
	if len(got) != len(res.Requests) {
		t.Fatalf("%d requests read back, want %d", len(got), len(res.Requests))
	}
	near := func(a, b int64) bool { return a-b <= tol && b-a <= tol }
	for i, q := range got {
		w := res.Requests[i]
		if q.ID != itoa(w.Index) || q.Success != w.Success || q.Error != w.Error ||
			q.InputTokens != w.InputTokens || q.OutputTokens != w.OutputTokens {
			t.Errorf("request %d: got %+v, want %+v", i, q, w)
			continue
		}
		if !near(q.Start, origin+int64(w.Start)) || !near(q.End-q.Start, int64(w.End-w.Start)) && w.Success {
			t.Errorf("request %d: start %d end %d, want %d and %d (±%d ns)", i, q.Start, q.End, origin+int64(w.Start), origin+int64(w.End), tol)
		}
		if !near(int64(q.TTFT), int64(w.TTFT)) {
			t.Errorf("request %d: TTFT %v, want %v", i, q.TTFT, w.TTFT)
		}
		if itls && !durationsEqual(q.ITLs, w.ITLs) {
			t.Errorf("request %d: ITLs %v, want %v", i, q.ITLs, w.ITLs)
		}
		if run.Conversation != nil && q.Conversation != "" {
			c, turn := run.Conversation(w.Index)
			if q.Conversation != itoa(c) || q.Turn != turn {
				t.Errorf("request %d: conversation %s turn %d, want %d and %d", i, q.Conversation, q.Turn, c, turn)
			}
		}
	}
}

func TestExportRoundTripVLLM(t *testing.T) {
	dir, res, run := exportTo(t, FormatVLLM)
	m, err := Read(FormatVLLM, filepath.Join(dir, VLLMResultFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"duration": res.DurationS, "completed": float64(res.Completed), "failed": float64(res.Failed),
		"request_throughput": res.RequestThroughput, "output_throughput": res.OutputThroughput,
		"total_token_throughput": res.TotalTokenThroughput, "max_output_tokens_per_s": res.MaxOutputTokensPerS,
	}
	for _, mm := range []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL} {
		st := res.stat(mm)
		want["mean_"+mm+"_ms"], want["median_"+mm+"_ms"], want["std_"+mm+"_ms"] = st.Mean, st.Median, st.Std
		for i, p := range res.Percentiles {
			want["p"+percentileWord(p)+"_"+mm+"_ms"] = st.Percentiles[i]
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
	checkRequests(t, m.Requests, res, run, 0, 0, true)
	sameSummary(t, resummarize(t, m, 0, res.Percentiles), res)
}

// aiperfWant flattens aiperfMetrics as the JSON reader names them.
func aiperfWant(res *Result, run *RunInfo) []MeasuredMetric {
	var out []MeasuredMetric
	ms := aiperfMetrics(res, run)
	order := append(slices.Clone(aiperfJSONOrder), "")
	for _, tag := range order {
		for i := range ms {
			m := &ms[i]
			if tag == "" && slices.Contains(aiperfJSONOrder, m.Tag) || tag != "" && m.Tag != tag {
				continue
			}
			if !m.Record {
				out = append(out, MeasuredMetric{m.Tag + ".avg", m.Unit, m.Avg})
				continue
			}
			out = append(out, MeasuredMetric{m.Tag + ".avg", m.Unit, m.Avg})
			for j, n := range aiperfPctNames {
				out = append(out, MeasuredMetric{m.Tag + "." + n, m.Unit, m.P[j]})
			}
			out = append(out, MeasuredMetric{m.Tag + ".min", m.Unit, m.Min}, MeasuredMetric{m.Tag + ".max", m.Unit, m.Max},
				MeasuredMetric{m.Tag + ".std", m.Unit, m.Std}, MeasuredMetric{m.Tag + ".count", "count", float64(m.Count)},
				MeasuredMetric{m.Tag + ".sum", m.Unit, m.Sum})
		}
	}
	return out
}

func TestExportRoundTripAIPerf(t *testing.T) {
	dir, res, run := exportTo(t, FormatAIPerf)
	m, err := Read(FormatAIPerf, dir)
	if err != nil {
		t.Fatal(err)
	}
	epoch := run.epoch()
	checkRequests(t, m.Requests, res, run, epoch, 0, true)
	for i, q := range m.Requests {
		w := res.Requests[i]
		if w.Success && w.OutputTokens > 1 {
			tpot := float64(int64(w.Latency)-int64(w.TTFT)) / float64(w.OutputTokens-1) * (1000.0 / 1e9)
			if q.TPOTms != tpot {
				t.Errorf("request %d: inter_token_latency %v ms, want %v", i, q.TPOTms, tpot)
			}
		}
	}
	sameSummary(t, resummarize(t, m, epoch, res.Percentiles), res)

	var jsonMs, csvMs []MeasuredMetric
	for _, x := range m.Metrics {
		if strings.HasPrefix(x.Name, "csv:") {
			csvMs = append(csvMs, x)
		} else {
			jsonMs = append(jsonMs, x)
		}
	}
	want := aiperfWant(res, &run)
	if !slices.Equal(jsonMs, want) {
		t.Errorf("JSON metrics read back differ:\ngot  %v\nwant %v", jsonMs, want)
	}
	// The CSV keeps two decimals: compare at that precision.
	byName := map[string]MeasuredMetric{}
	for _, x := range csvMs {
		byName[x.Name] = x
	}
	ms := aiperfMetrics(res, &run)
	n := 0
	for i := range ms {
		am := &ms[i]
		for _, s := range aiperfCSVStats {
			v, ok := am.stat(s)
			if !ok || !am.Record && s != "avg" {
				continue
			}
			got, found := byName["csv:"+aiperfCSVName(am)+"."+s]
			if !found || pytext.Fixed2(got.Value) != pytext.Fixed2(v) {
				t.Errorf("csv %s %s = %v (%v), want %s", am.Tag, s, got.Value, found, pytext.Fixed2(v))
			}
			n++
		}
	}
	if n != len(csvMs) {
		t.Errorf("csv has %d values, want %d", len(csvMs), n)
	}
	// E2E-normalised interactivity agrees with the InferenceX function.
	pt := InferenceX(res, 1)
	for _, e := range pt.E2EInteractivity {
		if e.Key != "p75_e2e_intvty" && e.Key != "p90_e2e_intvty" {
			continue
		}
		tag := "e2e_normalized_interactivity_" + strings.TrimSuffix(e.Key, "_e2e_intvty") + ".avg"
		if got, ok := m.Metric(tag); !ok || got.Value != e.Value {
			t.Errorf("%s = %v, want %v", tag, got.Value, e.Value)
		}
	}
}

func TestExportAIPerfRecordShape(t *testing.T) {
	dir, _, _ := exportTo(t, FormatAIPerf)
	data, err := os.ReadFile(filepath.Join(dir, AIPerfRecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	keys := func(s string, path ...string) []string {
		n, err := parseJSONTree([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			n = n.field(p)
		}
		return n.keys
	}
	ex, err := os.ReadFile(filepath.Join("testdata", "formats", "aiperf_profile_export_record_success.json"))
	if err != nil {
		t.Fatal(err)
	}
	exErr, err := os.ReadFile(filepath.Join("testdata", "formats", "aiperf_profile_export_record_error.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Same metadata keys in the same order as aiperf's own examples.
	if got, want := keys(lines[0], "metadata"), keys(string(ex), "metadata"); !slices.Equal(got, want) {
		t.Errorf("metadata keys %v, want %v", got, want)
	}
	if got, want := keys(lines[0]), keys(string(ex)); !slices.Equal(got, want) {
		t.Errorf("record keys %v, want %v", got, want)
	}
	if got, want := keys(lines[5], "metrics"), keys(string(exErr), "metrics"); !slices.Equal(got, want) {
		t.Errorf("error record metrics %v, want %v", got, want)
	}
	if got, want := keys(lines[5], "error"), keys(string(exErr), "error"); !slices.Equal(got, want) {
		t.Errorf("error keys %v, want %v", got, want)
	}
	// Every metric tag of a BLIS record is one aiperf's example uses.
	exTags := keys(string(ex), "metrics")
	for _, tag := range keys(lines[0], "metrics") {
		if !slices.Contains(exTags, tag) && tag != "time_to_second_token" {
			t.Errorf("metric %q is not in aiperf's example record %v", tag, exTags)
		}
	}
	if strings.Contains(lines[0], " ") {
		t.Errorf("records are not compact orjson: %s", lines[0])
	}
}

// glWant flattens the written guidellm metrics as the reader names them.
func glWant(res *Result, run *RunInfo) []MeasuredMetric {
	succ, errd := glRequests(res, run)
	start, end, _ := glWindow(succ, errd)
	p := "benchmarks[0]."
	out := []MeasuredMetric{
		{p + "request_totals.successful", "requests", float64(len(succ))},
		{p + "request_totals.errored", "requests", float64(len(errd))},
		{p + "request_totals.incomplete", "requests", 0},
		{p + "request_totals.total", "requests", float64(len(succ) + len(errd))},
	}
	for _, m := range glMetrics(succ, errd, start, end) {
		u := glUnit(m.name)
		for _, s := range []struct {
			n string
			d *glDist
		}{{"successful", &m.st.Successful}, {"errored", &m.st.Errored}, {"incomplete", &m.st.Incomplete}, {"total", &m.st.Total}} {
			q := p + m.name + "." + s.n + "."
			vu := u
			if u != "" {
				vu = u + "^2"
			}
			out = append(out,
				MeasuredMetric{q + "mean", u, s.d.Mean}, MeasuredMetric{q + "median", u, s.d.Median},
				MeasuredMetric{q + "mode", u, s.d.Mode}, MeasuredMetric{q + "variance", vu, s.d.Variance},
				MeasuredMetric{q + "std_dev", u, s.d.StdDev}, MeasuredMetric{q + "min", u, s.d.Min},
				MeasuredMetric{q + "max", u, s.d.Max}, MeasuredMetric{q + "count", "count", float64(s.d.Count)},
				MeasuredMetric{q + "total_sum", u, s.d.TotalSum})
			for i, n := range glPctNames {
				out = append(out, MeasuredMetric{q + n, u, s.d.P[i]})
			}
		}
	}
	return append(out, MeasuredMetric{p + "start_time", "s", start}, MeasuredMetric{p + "end_time", "s", end},
		MeasuredMetric{p + "duration", "s", end - start})
}

func TestExportRoundTripGuideLLM(t *testing.T) {
	dir, res, run := exportTo(t, FormatGuideLLM)
	m, err := Read(FormatGuideLLM, filepath.Join(dir, GuideLLMReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := glWant(res, &run); !slices.Equal(m.Metrics, want) {
		for i := range min(len(m.Metrics), len(want)) {
			if m.Metrics[i] != want[i] {
				t.Errorf("metric %d: got %+v, want %+v", i, m.Metrics[i], want[i])
				break
			}
		}
		t.Fatalf("%d metrics read back, want %d, bit for bit", len(m.Metrics), len(want))
	}
	// guidellm stores Unix float seconds: near 2026 a float64 resolves
	// 2^-22 s ≈ 0.24 µs, so times come back within that, not exactly.
	const tol = 500
	// Requests are written successful first, then errored.
	var ordered Result = *res
	ordered.Requests = nil
	for _, ok := range []bool{true, false} {
		for _, q := range res.Requests {
			if q.Success == ok {
				ordered.Requests = append(ordered.Requests, q)
			}
		}
	}
	checkRequests(t, m.Requests, &ordered, run, run.epoch(), tol, false)
	for i, q := range m.Requests {
		if w := ordered.Requests[i]; w.Success && q.Chunks != len(w.ITLs)+1 {
			t.Errorf("request %d: %d token iterations, want %d", i, q.Chunks, len(w.ITLs)+1)
		}
	}
	// Shape: the same keys, in the same order, as guidellm's own report.
	fixture, err := os.ReadFile(filepath.Join("testdata", "formats", "guidellm_report_v2_fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join(dir, GuideLLMReportFile))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := parseJSONTree(fixture)
	b, _ := parseJSONTree(ours)
	ab, bb := a.field("benchmarks").arr[0], b.field("benchmarks").arr[0]
	for _, path := range [][]string{nil, {"metrics"}, {"metrics", "time_to_first_token_ms"},
		{"metrics", "time_to_first_token_ms", "successful"}, {"metrics", "time_to_first_token_ms", "successful", "percentiles"},
		{"requests"}, {"scheduler_metrics"}} {
		x, y := ab, bb
		for _, p := range path {
			x, y = x.field(p), y.field(p)
		}
		if !slices.Equal(x.keys, y.keys) {
			t.Errorf("benchmarks[0].%s keys %v, want guidellm's %v", strings.Join(path, "."), y.keys, x.keys)
		}
	}
	if !bytes.HasPrefix(ours, []byte("{\n \"metadata\": {\n  \"version\": 2,")) {
		t.Errorf("not json.dump(indent=1) of a version 2 report: %q", ours[:40])
	}
}

func TestExportRoundTripLLMD(t *testing.T) {
	dir, res, _ := exportTo(t, FormatLLMD)
	path := filepath.Join(dir, LLMDReportFile)
	m, err := Read(FormatLLMD, path)
	if err != nil {
		t.Fatal(err)
	}
	const agg = "results.request_performance.aggregate."
	check := func(name, unit string, want float64) {
		t.Helper()
		got, ok := m.Metric(agg + name)
		if !ok || got.Value != want || got.Unit != unit {
			t.Errorf("%s = %v %q (%v), want %v %q bit for bit", name, got.Value, got.Unit, ok, want, unit)
		}
	}
	check("requests.total", "count", float64(res.Completed+res.Failed))
	check("requests.failures", "count", float64(res.Failed))
	check("throughput.output_token_rate.mean", "tokens/s", res.OutputThroughput)
	check("throughput.total_token_rate.mean", "tokens/s", res.TotalTokenThroughput)
	check("throughput.request_rate.mean", "queries/s", res.RequestThroughput)
	for _, l := range []struct {
		name, unit string
		st         Stat
	}{{"time_to_first_token", "ms", res.TTFT}, {"time_per_output_token", "ms/token", res.TPOT},
		{"inter_token_latency", "ms/token", res.ITL}, {"request_latency", "ms", res.E2EL}} {
		p := "latency." + l.name + "."
		check(p+"mean", l.unit, l.st.Mean)
		check(p+"stddev", l.unit, l.st.Std)
		check(p+"p50", l.unit, l.st.Median)
		for i, q := range res.Percentiles {
			if k := llmdPctKey(q); k != "" {
				check(p+k, l.unit, l.st.Percentiles[i])
			}
		}
	}
	validateLLMD(t, path)
}

// llmdSchemaErr validates a YAML report against llm-d's v0.2 JSON schema.
func llmdSchemaErr(t *testing.T, data []byte) error {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("report is not JSON-compatible: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	sf, err := os.Open(filepath.Join("testdata", "formats", "llmd_br_v0_2_json_schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	sdoc, err := jsonschema.UnmarshalJSON(sf)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("br_v0_2.json", sdoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("br_v0_2.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

func validateLLMD(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := llmdSchemaErr(t, data); err != nil {
		t.Errorf("%s does not validate against llm-d's v0.2 schema: %v", path, err)
	}
}

func TestLLMDSchemaRejectsABrokenReport(t *testing.T) {
	// The validator can fail: an unknown unit, a missing run uid and a
	// malformed start time are each refused.
	dir, _, _ := exportTo(t, FormatLLMD)
	data, _ := os.ReadFile(filepath.Join(dir, LLMDReportFile))
	for _, c := range [][2]string{
		{"units: queries/s", "units: requests/minute"},
		{"  uid:", "  uuid:"},
		{"start: \"20", "start: \"yesterday 20"},
	} {
		bad := bytes.Replace(data, []byte(c[0]), []byte(c[1]), 1)
		if bytes.Equal(bad, data) {
			t.Fatalf("report has no %q", c[0])
		}
		if llmdSchemaErr(t, bad) == nil {
			t.Errorf("%q → %q validated", c[0], c[1])
		}
	}
}

func TestExportRoundTripInferenceX(t *testing.T) {
	dir, res, run := exportTo(t, FormatInferenceX)
	m, err := Read(FormatInferenceX, filepath.Join(dir, InferenceXResultFile))
	if err != nil {
		t.Fatal(err)
	}
	pt := InferenceX(res, run.gpus())
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

func TestInferenceXHandComputed(t *testing.T) {
	r := &Result{
		TotalTokenThroughput: 9000, OutputThroughput: 1000, Percentiles: []float64{50, 90},
		TPOT: Stat{Mean: 25, Median: 20, Std: 5, Percentiles: []float64{20, 40}},
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
		r.Requests = append(r.Requests, RequestResult{Index: int64(i), Success: q.ok, Latency: q.lat,
			OutputTokens: q.out, TTFT: q.ttft, InputTokens: 10})
	}
	p := InferenceX(r, 4)
	if p.TputPerGPU != 2250 || p.OutputTputPerGPU != 250 || p.InputTputPerGPU != 2000 {
		t.Errorf("per-GPU throughputs %+v", p)
	}
	// 1000 divided by each TPOT statistic (not a statistic of 1000/TPOT).
	want := []InferenceXStat{{"mean_intvty", 1000 / (25 + 1e-8)}, {"median_intvty", 1000 / (20 + 1e-8)},
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

func TestOrjsonFloat(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1.759522419154569e18, "1.759522419154569e18"}, {255.88656799999998, "255.88656799999998"},
		{550, "550.0"}, {0.0001, "0.0001"}, {1e-5, "0.00001"}, {1e-7, "1e-7"}, {1.5e-7, "1.5e-7"},
		{1e16, "1e16"}, {1e15, "1000000000000000.0"}, {-2.5, "-2.5"}, {0, "0.0"}, {123456.789, "123456.789"},
	} {
		if got := orjsonFloat(c.x); got != c.want {
			t.Errorf("orjsonFloat(%v) = %s, want %s", c.x, got, c.want)
		}
	}
	if got := pyYAMLFloat(1e16); got != "1.0e+16" {
		t.Errorf("pyYAMLFloat(1e16) = %s", got)
	}
}

// --- the real tools' files ---

func TestReadAIPerfExamples(t *testing.T) {
	var jsonl bytes.Buffer
	for _, f := range []string{"aiperf_profile_export_record_success.json", "aiperf_profile_export_record_error.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "formats", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&jsonl, data); err != nil {
			t.Fatal(err)
		}
		jsonl.WriteByte('\n')
	}
	m, err := parseAIPerfRecords("profile_export.jsonl", jsonl.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Requests) != 2 {
		t.Fatalf("%d requests", len(m.Requests))
	}
	ok, bad := m.Requests[0], m.Requests[1]
	if !ok.Success || ok.ID != "7609a2e7-aa53-4ab1-98f4-f35ecafefd25" || ok.Conversation != "77aa5b0e-b305-423f-88d5-c00da1892599" ||
		ok.Start != 1759813207532900363 || ok.End != 1759813207838764604 || ok.InputTokens != 550 || ok.OutputTokens != 9 ||
		len(ok.ITLs) != 8 || ok.ITLs[0] != 4898437 || ok.TPOTms != 5.2048325 {
		t.Errorf("success record %+v", ok)
	}
	// The example repeats time_to_first_token; the last value wins, as in Python.
	if ok.TTFT != 4898437 {
		t.Errorf("TTFT %v, want the last of the repeated key (4.898437 ms)", ok.TTFT)
	}
	if bad.Success || bad.Error != "Request was cancelled after 0.000 seconds" || bad.InputTokens != 550 {
		t.Errorf("error record %+v", bad)
	}
}

func TestReadGuideLLMFixture(t *testing.T) {
	m, err := ReadGuideLLM(filepath.Join("testdata", "formats", "guidellm_report_v2_fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"benchmarks[0].time_to_first_token_ms.successful.mean":  11.481165885925293,
		"benchmarks[0].time_to_first_token_ms.successful.p50":   11.276006698608398,
		"benchmarks[1].inter_token_latency_ms.successful.count": 14,
		"benchmarks[1].request_totals.total":                    2,
		"benchmarks[1].duration":                                2.5186119079589844,
	} {
		if got, ok := m.Metric(name); !ok || got.Value != want {
			t.Errorf("%s = %v (%v), want %v", name, got.Value, ok, want)
		}
	}
	if got, _ := m.Metric("benchmarks[0].time_to_first_token_ms.successful.p999"); got.Unit != "ms" {
		t.Errorf("unit %q", got.Unit)
	}
}

func TestGuideLLMStatisticsReproduceFixture(t *testing.T) {
	// Benchmark 1 of guidellm's fixture: two requests whose TTFTs are the
	// summary's min and max, and eight output tokens each.
	a, b := 9.419918060302734, 10.147809982299805
	d := glFromValues([]wv{{a, 1}, {b, 1}}, -1)
	if d.Mean != 9.78386402130127 || d.Median != a || d.P[10] != b || d.P[6] != b || d.Count != 2 {
		t.Errorf("from_values %+v", d)
	}
	// time_per_output_token_ms is weighted by output tokens: count 16.
	tp := glFromValues([]wv{{1.9708573818206787, 8}, {2.3833811283111572, 8}}, -1)
	if tp.Count != 16 || tp.Mean != 2.177119255065918 {
		t.Errorf("weighted from_values %+v", tp)
	}
	// An empty distribution is all zeros with its count.
	if z := glFromValues(nil, 0); z != (glDist{}) {
		t.Errorf("empty %+v", z)
	}
	// Merging: times within 0.1 ms of a group's first join it.
	got := glMerge([]wv{{1, 1}, {1, 2}, {1.00005, 1}, {1.0002, 1}, {2, 1}}, glThreshold)
	if want := []wv{{1, 4}, {1.0002, 1}, {2, 1}}; !slices.Equal(got, want) {
		t.Errorf("merge %v, want %v", got, want)
	}
	// Concurrency of [0,2) and [1,3) over [0,3]: 1 for 1 s, 2 for 1 s, 1 for 1 s.
	s, e := 0.0, 3.0
	c := glConcurrency([]glInterval{{0, 2, 1}, {1, 3, 1}}, &s, &e)
	if c.Count != 2 || c.Mean != 4.0/3 || c.Max != 2 || c.Min != 1 {
		t.Errorf("concurrency %+v", c)
	}
}

func TestReadLLMDExample(t *testing.T) {
	m, err := ReadLLMD(filepath.Join("testdata", "formats", "llmd_br_v0_2_example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m.Metric("results.request_performance.aggregate.latency.time_to_first_token.p50")
	if !ok || got.Value != 0.03622930939309299 || got.Unit != "s" {
		t.Errorf("ttft p50 %+v %v", got, ok)
	}
	if got, ok := m.Metric("results.request_performance.aggregate.requests.total"); !ok || got.Value != 500 {
		t.Errorf("requests.total %+v", got)
	}
}

func TestReadVLLMInferenceXResults(t *testing.T) {
	m, err := ReadVLLM(filepath.Join("testdata", "formats", "inferencex_bench_results", "glm5_fp8_vllm_tp8_isl12288_osl128_conc4.json"))
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

// --- strictness ---

func TestReadersNameFileLineAndPath(t *testing.T) {
	dir, _, _ := exportTo(t, FormatAIPerf, FormatGuideLLM, FormatLLMD, FormatVLLM, FormatInferenceX)
	mutate := func(name, old, new string, n int) string {
		t.Helper()
		p := filepath.Join(dir, name)
		data, _ := os.ReadFile(p)
		bad := strings.Replace(string(data), old, new, n)
		if bad == string(data) {
			t.Fatalf("%s: %q not found", name, old)
		}
		out := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(out, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		return out
	}
	cases := []struct {
		what, format, path string
		want               []string
	}{
		{"aiperf start not an integer", "aiperf-records",
			mutate(AIPerfRecordsFile, `"request_start_ns":`, `"request_start_ns":"x","y":`, 2),
			[]string{AIPerfRecordsFile + ":1:", "$.metadata.request_start_ns", "want an integer, got a string"}},
		{"aiperf bad unit", "aiperf-records",
			mutate(AIPerfRecordsFile, `"unit":"ms"`, `"unit":"fortnights"`, 1),
			[]string{AIPerfRecordsFile + ":1:", "$.metrics.time_to_first_token.unit", "fortnights"}},
		{"aiperf syntax", "aiperf-records",
			mutate(AIPerfRecordsFile, "}\n{", "}\n{{", 1),
			[]string{AIPerfRecordsFile + ":2:", "invalid JSON"}},
		{"aiperf json stat", "aiperf-json",
			mutate(AIPerfJSONFile, `"p50": `, `"p50": "median", "x": `, 1),
			[]string{AIPerfJSONFile + ":", ".p50", "want a number, got a string"}},
		{"aiperf csv number", "aiperf-csv",
			mutate(AIPerfCSVFile, ",", ",abc,", 3),
			[]string{AIPerfCSVFile + ":2:", "want"}},
		{"guidellm metric", FormatGuideLLM,
			mutate(GuideLLMReportFile, `"mean": `, `"mean": "x", "y": `, 1),
			[]string{GuideLLMReportFile + ":", "$.benchmarks[0].metrics.requests_per_second.successful.mean", "want a number"}},
		{"guidellm timings", FormatGuideLLM,
			mutate(GuideLLMReportFile, `"request_start": `, `"request_start": "soon", "x": `, 1),
			[]string{GuideLLMReportFile + ":", "$.benchmarks[0].requests.successful[0].info.timings.request_start", "want a number, got a string"}},
		{"llmd version", FormatLLMD, mutate(LLMDReportFile, `version: "0.2"`, `version: "0.3"`, 1),
			[]string{LLMDReportFile + ":", "$.version", "0.2"}},
		{"llmd number", FormatLLMD, mutate(LLMDReportFile, "results:", "results: 7\nx:", 1),
			[]string{LLMDReportFile + ":", "want a mapping"}},
		{"vllm arrays", FormatVLLM, mutate(VLLMResultFile, `"output_lens": [`, `"output_lens": [1, `, 1),
			[]string{VLLMResultFile + ":1:", "$.output_lens", "want 14 entries"}},
		{"inferencex", FormatInferenceX, mutate(InferenceXResultFile, `"tput_per_gpu"`, `"tput_per_gpu_x"`, 1),
			[]string{InferenceXResultFile + ":1:1: $", `missing key "tput_per_gpu"`}},
	}
	for _, c := range cases {
		data, _ := os.ReadFile(c.path)
		var err error
		switch c.format {
		case "aiperf-records":
			_, err = parseAIPerfRecords(c.path, data)
		case "aiperf-json":
			_, err = parseAIPerfJSON(c.path, data)
		case "aiperf-csv":
			_, err = parseAIPerfCSV(c.path, data)
		default:
			_, err = Read(c.format, c.path)
		}
		if err == nil {
			t.Errorf("%s: no error", c.what)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.what, err, w)
			}
		}
	}
	if _, err := Read("csv", dir); err == nil {
		t.Error("unknown read format accepted")
	}
}

func durationsEqual(a, b []time.Duration) bool { return slices.Equal(a, b) }

func TestExportEdgeCases(t *testing.T) {
	// No requests at all, and a run summarised without per-request gaps:
	// every format still writes and reads back.
	empty, err := NewRecorder(RecorderOptions{Detailed: true})
	if err != nil {
		t.Fatal(err)
	}
	recs, gaps := exportRecords()
	plain := recordRun(t, RecorderOptions{}, recs, gaps).Summarize(SummaryInput{Duration: runDuration(recs), RequestRate: 4, Burstiness: 1})
	for name, res := range map[string]*Result{
		"empty": empty.Summarize(SummaryInput{RequestRate: math.Inf(1)}),
		"plain": plain,
	} {
		formats := ExportFormats()
		if !res.Detailed {
			formats = slices.DeleteFunc(formats, func(f string) bool { return f == FormatAIPerf || f == FormatInferencePerf })
		}
		dir := t.TempDir()
		if _, err := Export(dir, formats, res, RunInfo{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range formats {
			p := dir
			switch f {
			case FormatVLLM:
				p = filepath.Join(dir, VLLMResultFile)
			case FormatGuideLLM:
				p = filepath.Join(dir, GuideLLMReportFile)
			case FormatLLMD:
				p = filepath.Join(dir, LLMDReportFile)
				validateLLMD(t, p)
			case FormatInferenceX:
				p = filepath.Join(dir, InferenceXResultFile)
			}
			m, err := Read(f, p)
			if err != nil {
				t.Errorf("%s %s: %v", name, f, err)
				continue
			}
			if f == FormatGuideLLM && len(m.Requests) != len(res.Requests) {
				t.Errorf("%s %s: %d requests, want %d", name, f, len(m.Requests), len(res.Requests))
			}
		}
	}
}
