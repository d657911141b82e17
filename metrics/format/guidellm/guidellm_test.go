package guidellm

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"blis/metrics"
	"blis/metrics/format/internal/formattest"
	"blis/metrics/format/internal/jsonx"
)

// exportTo writes the report of formattest.Result into a fresh directory.
func exportTo(t *testing.T) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	return formattest.Dir(t, map[string][]byte{ReportFile: Encode(res, &run)}), res, run
}

// glWant flattens the written guidellm metrics as the reader names them.
func glWant(res *metrics.Result, run *metrics.RunInfo) []metrics.MeasuredMetric {
	succ, errd := glRequests(res, run)
	start, end, _ := glWindow(succ, errd)
	p := "benchmarks[0]."
	out := []metrics.MeasuredMetric{
		{Name: p + "request_totals.successful", Unit: "requests", Value: float64(len(succ))},
		{Name: p + "request_totals.errored", Unit: "requests", Value: float64(len(errd))},
		{Name: p + "request_totals.incomplete", Unit: "requests", Value: 0},
		{Name: p + "request_totals.total", Unit: "requests", Value: float64(len(succ) + len(errd))},
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
				metrics.MeasuredMetric{Name: q + "mean", Unit: u, Value: s.d.Mean}, metrics.MeasuredMetric{Name: q + "median", Unit: u, Value: s.d.Median},
				metrics.MeasuredMetric{Name: q + "mode", Unit: u, Value: s.d.Mode}, metrics.MeasuredMetric{Name: q + "variance", Unit: vu, Value: s.d.Variance},
				metrics.MeasuredMetric{Name: q + "std_dev", Unit: u, Value: s.d.StdDev}, metrics.MeasuredMetric{Name: q + "min", Unit: u, Value: s.d.Min},
				metrics.MeasuredMetric{Name: q + "max", Unit: u, Value: s.d.Max}, metrics.MeasuredMetric{Name: q + "count", Unit: "count", Value: float64(s.d.Count)},
				metrics.MeasuredMetric{Name: q + "total_sum", Unit: u, Value: s.d.TotalSum})
			for i, n := range glPctNames {
				out = append(out, metrics.MeasuredMetric{Name: q + n, Unit: u, Value: s.d.P[i]})
			}
		}
	}
	return append(out, metrics.MeasuredMetric{Name: p + "start_time", Unit: "s", Value: start}, metrics.MeasuredMetric{Name: p + "end_time", Unit: "s", Value: end},
		metrics.MeasuredMetric{Name: p + "duration", Unit: "s", Value: end - start})
}

func TestRoundTrip(t *testing.T) {
	dir, res, run := exportTo(t)
	m, err := Read(filepath.Join(dir, ReportFile))
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
	// Requests are written successful first, then errored, each in
	// completion order.
	var ordered metrics.Result = *res
	ordered.Requests = nil
	for _, ok := range []bool{true, false} {
		for _, q := range formattest.InSeq(res).Requests {
			if q.Success == ok {
				ordered.Requests = append(ordered.Requests, q)
			}
		}
	}
	formattest.CheckRequests(t, m.Requests, &ordered, run, run.Epoch(), tol, false)
	for i, q := range m.Requests {
		if w := ordered.Requests[i]; w.Success && q.Chunks != len(w.ITLs)+1 {
			t.Errorf("request %d: %d token iterations, want %d", i, q.Chunks, len(w.ITLs)+1)
		}
	}
	// Shape: the same keys, in the same order, as guidellm's own report.
	fixture, err := os.ReadFile(filepath.Join("testdata", "guidellm_report_v2_fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := jsonx.Parse(fixture)
	b, _ := jsonx.Parse(ours)
	ab, bb := a.Field("benchmarks").Arr[0], b.Field("benchmarks").Arr[0]
	for _, path := range [][]string{nil, {"metrics"}, {"metrics", "time_to_first_token_ms"},
		{"metrics", "time_to_first_token_ms", "successful"}, {"metrics", "time_to_first_token_ms", "successful", "percentiles"},
		{"requests"}, {"scheduler_metrics"}} {
		x, y := ab, bb
		for _, p := range path {
			x, y = x.Field(p), y.Field(p)
		}
		if !slices.Equal(x.Keys, y.Keys) {
			t.Errorf("benchmarks[0].%s keys %v, want guidellm's %v", strings.Join(path, "."), y.Keys, x.Keys)
		}
	}
	if !bytes.HasPrefix(ours, []byte("{\n \"metadata\": {\n  \"version\": 2,")) {
		t.Errorf("not json.dump(indent=1) of a version 2 report: %q", ours[:40])
	}
}

func TestReadFixture(t *testing.T) {
	m, err := Read(filepath.Join("testdata", "guidellm_report_v2_fixture.json"))
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

func TestStatisticsReproduceFixture(t *testing.T) {
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
	got := glMerge([]wv{{1, 1}, {1, 2}, {1.00005, 1}, {1.0002, 1}, {2, 1}}, glThreshold, nil)
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

// The reader names the file, line, JSON path, what it found and what it
// wants.
func TestReadErrorsNameFileLineAndPath(t *testing.T) {
	dir, _, _ := exportTo(t)
	formattest.ReadErrors(t, func(p string) error { _, err := Read(p); return err },
		formattest.BadFile{What: "metric", Path: formattest.Mutate(t, dir, ReportFile, `"mean": `, `"mean": "x", "y": `, 1),
			Want: []string{ReportFile + ":", "$.benchmarks[0].metrics.requests_per_second.successful.mean", "want a number"}},
		formattest.BadFile{What: "timings", Path: formattest.Mutate(t, dir, ReportFile, `"request_start": `, `"request_start": "soon", "x": `, 1),
			Want: []string{ReportFile + ":", "$.benchmarks[0].requests.successful[0].info.timings.request_start", "want a number, got a string"}})
}

// refReq is a request entry built as a document (the reference appendReq
// must match), with scheduler_start_time start.
func refReq(q *glReq, start float64) *jsonx.Obj {
	optFloat := func(v float64, ok bool) any {
		if !ok {
			return nil
		}
		return v
	}
	timings := jsonx.NewObj().
		Set("targeted_start", q.queued).Set("queued", q.queued).
		Set("dequeued", q.start).Set("scheduled_at", q.start).
		Set("resolve_start", q.start).Set("request_start", q.start)
	if q.hasTok {
		timings.Set("first_request_iteration", q.first).Set("first_token_iteration", q.first).
			Set("first_output_token_iteration", q.first).
			Set("last_token_iteration", q.last).Set("last_request_iteration", q.last)
	} else {
		timings.Set("first_request_iteration", nil).Set("first_token_iteration", nil).
			Set("first_output_token_iteration", nil).
			Set("last_token_iteration", nil).Set("last_request_iteration", nil)
	}
	timings.Set("request_iterations", q.iters).Set("token_iterations", q.iters).
		Set("request_end", q.end).Set("resolve_end", q.end).Set("finalized", q.end)
	status := "completed"
	var errMsg any
	if q.errored {
		status, errMsg = "errored", q.err
	}
	info := jsonx.NewObj().
		Set("request_id", q.id).Set("conversation_id", q.conv).Set("turn_index", q.turn).
		Set("status", status).Set("scheduler_node_id", 0).Set("scheduler_process_id", 0).
		Set("scheduler_start_time", start).Set("timings", timings).
		Set("error", errMsg).Set("traceback", nil).
		Set("started_at", q.start).Set("completed_at", q.end)
	in := jsonx.NewObj().Set("text_tokens", q.prompt).Set("cached_tokens", q.cached).Set("total_tokens", q.prompt)
	out := jsonx.NewObj().Set("text_tokens", nil).Set("total_tokens", nil)
	if q.hasOutput {
		out = jsonx.NewObj().Set("text_tokens", q.output).Set("total_tokens", q.output)
	}
	o := jsonx.NewObj().
		Set("type_", "generative_request_stats").
		Set("request_id", q.id).Set("response_id", nil).Set("request_args", nil).Set("output", nil).
		Set("info", info).Set("input_metrics", in).Set("output_metrics", out).
		Set("request_start_time", q.start).Set("request_end_time", q.end).
		Set("request_latency", q.latency()).Set("prompt_tokens", q.prompt)
	if ot, ok := q.outputTokens(); ok {
		o.Set("output_tokens", ot).Set("total_tokens", q.prompt+ot)
	} else {
		o.Set("output_tokens", nil).Set("total_tokens", q.prompt)
	}
	o.Set("time_to_first_token_ms", optFloat(q.ttftMS())).
		Set("time_per_output_token_ms", optFloat(q.tpotMS())).
		Set("inter_token_latency_ms", optFloat(q.itlMS()))
	var tps, otps any
	if lat := q.latency(); lat != 0 {
		ot, ok := q.outputTokens()
		tps = float64(q.prompt+ot) / lat
		if ok {
			otps = float64(ot) / lat
		}
	}
	o.Set("tokens_per_second", tps).Set("output_tokens_per_second", otps).
		Set("time_to_first_output_token_ms", optFloat(q.ttftMS())).
		Set("iter_tokens_per_iteration", optFloat(q.iterTokensPerIteration())).
		Set("output_tokens_per_iteration", optFloat(q.outputTokensPerIteration()))
	return o
}

// The spooled entries are the documents of the tool's fields, byte for
// byte (the sentinel filled in), and the Writer writes what Encode renders.
func TestRequestEncoderMatchesDocument(t *testing.T) {
	res, run := formattest.Result(t)
	succ, errd := glRequests(res, &run)
	for _, q := range append(succ, errd...) {
		var want bytes.Buffer
		jsonx.Encode(&want, []any{[]any{[]any{[]any{[]any{refReq(q, 1767225600.25)}}}}}, jsonx.PyIndent1)
		e := jsonx.NewEnc(jsonx.PyIndent1, requestDepth)
		appendReq(e, q)
		got := bytes.ReplaceAll(e.B, []byte{schedulerStartSentinel}, []byte("1767225600.25"))
		if !bytes.Contains(want.Bytes(), got) {
			t.Fatalf("request %s:\n%s\nnot in\n%s", q.id, got, want.Bytes())
		}
	}
	want := Encode(res, &run)
	dir := t.TempDir()
	w := NewWriter(dir, run, true)
	w.list = newLists(dir, 64) // spill to temporary files at once
	for _, q := range formattest.InSeq(res).Requests {
		if err := w.Request(&q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(res); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the Writer's report differs from Encode's (%v)", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".blis-spool-*")); len(left) != 0 {
		t.Errorf("spool files left: %v", left)
	}
}

// sortByTime orders as a stable sort by value does, ties (0 and -0
// included) in their input order.
func TestSortByTimeIsStable(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 10, 255, 256, 1000, 50_000} {
		x := make([]wv, n)
		for i := range x {
			switch r.IntN(4) {
			case 0:
				x[i].v = float64(r.IntN(5)) // ties
			case 1:
				x[i].v = math.Copysign(0, -1)
			case 2:
				x[i].v = -r.Float64() * 1e3
			default:
				x[i].v = 1.767e9 + r.Float64()
			}
			x[i].w = float64(i) // the input position
		}
		want := slices.Clone(x)
		slices.SortStableFunc(want, func(a, b wv) int { return cmpValue(a.v, b.v) })
		sortByTime(x, nil)
		for i := range x {
			if x[i].w != want[i].w {
				t.Fatalf("n=%d: position %d holds input %v, want %v", n, i, x[i].w, want[i].w)
			}
		}
	}
}

// linspace is numpy's linspace(start, stop, num) (endpoint=True), the
// reference appendIterTimings computes without an array.
func linspace(start, stop float64, num int) []float64 {
	y := make([]float64, num)
	if num == 0 {
		return y
	}
	div := float64(num - 1)
	delta := stop - start
	step := delta / div
	for i := range y {
		if step == 0 || num == 1 {
			y[i] = float64(i)/div*delta + start
		} else {
			y[i] = float64(i)*step + start
		}
	}
	if num > 1 {
		y[num-1] = stop
	}
	return y
}

func TestIterTimingsAreLinspace(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for range 2000 {
		first := 1.767e9 + r.Float64()*100
		q := glReq{hasTok: true, first: first, last: first + r.Float64()*float64(r.IntN(3)),
			iters: 1 + r.IntN(300), hasOutput: true}
		q.output = q.iters + r.IntN(3)
		got := q.appendIterTimings(nil)
		tpi, ok := q.iterTokensPerIteration()
		if q.iters <= 1 || !ok {
			if len(got) != 0 {
				t.Fatalf("%+v: %d timings, want none", q, len(got))
			}
			continue
		}
		want := linspace(q.first, q.last, q.iters)[1:]
		if len(got) != len(want) {
			t.Fatalf("%d timings, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != (wv{want[i], tpi}) {
				t.Fatalf("%+v: timing %d = %v, want %v", q, i, got[i], wv{want[i], tpi})
			}
		}
	}
}

// BenchmarkMetrics compiles the report's metrics for a Mooncake-sized run:
// 12,000 requests streaming 4 million chunks in all.
//
//	go test ./metrics/format/guidellm -run '^$' -bench Metrics -benchmem
func BenchmarkMetrics(b *testing.B) {
	r := rand.New(rand.NewPCG(19, 20))
	var succ []*glReq
	t := 1.767e9
	for range 12000 {
		t += r.ExpFloat64() * 0.3
		q := &glReq{hasTok: true, hasOutput: true, start: t, queued: t, prompt: 1000 + r.IntN(20000)}
		q.first = t + 0.05 + r.Float64()
		q.iters = 1 + r.IntN(680)
		q.output = q.iters
		q.last = q.first + float64(q.iters)*0.02*(1+r.Float64())
		q.end = q.last
		succ = append(succ, q)
	}
	start, end, _ := glWindow(succ, nil)
	b.ReportAllocs()
	for range b.N {
		glMetrics(succ, nil, start, end)
	}
}

// lastWithin is the whole-array searchsorted it replaces.
func TestLastWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for range 2000 {
		u := make([]wv, 1+r.IntN(300))
		v := 0.0
		for i := range u {
			v += float64(r.IntN(3)) * 1e-4 * r.Float64()
			u[i].v = v
		}
		s := r.IntN(len(u))
		limit := u[s].v + r.Float64()*3e-4
		want, _ := slices.BinarySearchFunc(u, limit, func(e wv, t float64) int {
			if e.v <= t {
				return -1
			}
			return 1
		})
		if got := lastWithin(u, s, limit); got != want-1 {
			t.Fatalf("lastWithin = %d, want %d", got, want-1)
		}
	}
}
