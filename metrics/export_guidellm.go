package metrics

import (
	"bytes"
	"math"
	"strconv"
)

// GuideLLM's benchmark report, mirrored from vllm-project/guidellm report
// version 2 as guidellm 0.8.0.dev18 writes it (the layout of
// llm-d-benchmark's tests/fixtures/guidellm_report_v2.json): json.dump with
// indent 1; {metadata, config, benchmarks: [GenerativeBenchmark]}, each
// benchmark {type_, config, scheduler_state, scheduler_metrics, metrics,
// requests, start_time, end_time, duration, warmup_duration,
// cooldown_duration}; metrics are StatusDistributionSummary blocks
// {successful, errored, incomplete, total} of DistributionSummary {mean,
// median, mode, variance, std_dev, min, max, count, total_sum, percentiles
// {p001 … p999}, pdf}; requests are GenerativeRequestStats (schemas/
// request_stats.py, info.py RequestInfo and RequestTimings) with their
// computed fields. Timestamps are Unix float seconds, so per-request times
// keep about 0.24 µs near 2026 (float64 spacing at 1.8e9 s).
//
// The metrics are compiled as GenerativeMetrics.compile does, from the
// request timings as written (so the same file gives the same numbers in
// guidellm): the measured window is first request start to last request
// end; a request's token iterations are its streamed chunks.

// glReq is one request's GenerativeRequestStats.
type glReq struct {
	id, conv    string
	turn        int
	errored     bool
	err         string
	queued      float64 // targeted_start and queued: when the client wanted to send it
	start, end  float64 // request_start, request_end
	first, last float64 // first_token_iteration, last_token_iteration
	hasTok      bool
	iters       int // token_iterations (and request_iterations)
	prompt      int
	cached      int
	output      int
	hasOutput   bool
	schedulerT0 float64
}

// Computed fields of GenerativeRequestStats; ok false means None.
func (q *glReq) latency() float64 { return q.end - q.start }

func (q *glReq) outputTokens() (int, bool) {
	if q.hasOutput {
		return q.output, true
	}
	if q.iters != 0 {
		return q.iters, true
	}
	return 0, false
}

func (q *glReq) ttftMS() (float64, bool) {
	if !q.hasTok {
		return 0, false
	}
	return 1000 * (q.first - q.start), true
}

func (q *glReq) tpotMS() (float64, bool) {
	out, ok := q.outputTokens()
	if !ok || out == 0 {
		return 0, false
	}
	last := q.end
	if q.hasTok && q.last != 0 {
		last = q.last
	}
	return 1000 * (last - q.start) / float64(out), true
}

func (q *glReq) itlMS() (float64, bool) {
	out, ok := q.outputTokens()
	if !q.hasTok || !ok || out <= 1 {
		return 0, false
	}
	return 1000 * (q.last - q.first) / float64(out-1), true
}

func (q *glReq) iterTokensPerIteration() (float64, bool) {
	out, ok := q.outputTokens()
	if !ok || out <= 1 || q.iters <= 1 {
		return 0, false
	}
	return (float64(out) - 1.0) / (float64(q.iters) - 1.0), true
}

func (q *glReq) outputTokensPerIteration() (float64, bool) {
	out, ok := q.outputTokens()
	if !ok || q.iters < 1 {
		return 0, false
	}
	return float64(out) / float64(q.iters), true
}

// promptTiming is prompt_tokens_timing.
func (q *glReq) promptTiming() wv {
	t := q.end
	if q.hasTok {
		t = q.first
	}
	return wv{t, float64(q.prompt)}
}

// linspace is numpy's linspace(start, stop, num) (endpoint=True).
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

func (q *glReq) iterTimings() []wv {
	tpi, ok := q.iterTokensPerIteration()
	if !q.hasTok || !ok || q.iters <= 1 {
		return nil
	}
	ts := linspace(q.first, q.last, q.iters)[1:]
	out := make([]wv, len(ts))
	for i, t := range ts {
		out[i] = wv{t, tpi}
	}
	return out
}

func (q *glReq) outputTimings() []wv {
	out, _ := q.outputTokens()
	if !q.hasTok || q.iters <= 1 {
		t := q.end
		if q.hasTok {
			t = q.last
		}
		return []wv{{t, float64(out)}}
	}
	first := 0.0
	if out != 0 {
		first = 1
	}
	return append([]wv{{q.first, first}}, q.iterTimings()...)
}

// glRequests builds the per-request stats from the Result.
func glRequests(r *Result, run *RunInfo) (succ, errd []*glReq) {
	for i := range r.Requests {
		p := &r.Requests[i]
		conv, turn := run.conversation(p.Index)
		q := &glReq{
			id: itoa(p.Index), conv: itoa(conv), turn: turn,
			queued: run.unixSeconds(p.Start - p.QueueTime),
			start:  run.unixSeconds(p.Start), end: run.unixSeconds(p.End),
			prompt: p.InputTokens, cached: p.CachedTokens,
		}
		if !p.Success {
			q.errored, q.err = true, p.Error
			errd = append(errd, q)
			continue
		}
		q.hasTok = true
		q.first = run.unixSeconds(p.Start + p.TTFT)
		q.last = q.end
		q.iters = p.OutputTokens
		if r.Detailed {
			q.iters = len(p.ITLs) + 1
		}
		q.output, q.hasOutput = p.OutputTokens, true
		succ = append(succ, q)
	}
	return succ, errd
}

// glMetric is one named StatusDistributionSummary of GenerativeMetrics.
type glMetric struct {
	name string
	st   glStatus
}

// glWindow is the measured window: first request start, last request end.
func glWindow(succ, errd []*glReq) (float64, float64, bool) {
	start, end := math.Inf(1), math.Inf(-1)
	for _, l := range [][]*glReq{succ, errd} {
		for _, q := range l {
			start, end = min(start, q.start), max(end, q.end)
		}
	}
	return start, end, len(succ)+len(errd) > 0
}

// glMetrics compiles GenerativeMetrics in the report's key order.
func glMetrics(succ, errd []*glReq, start, end float64) []glMetric {
	vals := func(fn func(q *glReq) []wv) glStatus {
		collect := func(l []*glReq) []wv {
			var out []wv
			for _, q := range l {
				out = append(out, fn(q)...)
			}
			return out
		}
		return glStatusValues(collect(succ), collect(errd))
	}
	rate := func(fn func(q *glReq) []wv, window bool) glStatus {
		collect := func(l []*glReq) []wv {
			var out []wv
			for _, q := range l {
				out = append(out, fn(q)...)
			}
			return out
		}
		if window {
			return glStatusRate(collect(succ), collect(errd), &start, &end)
		}
		return glStatusRate(collect(succ), collect(errd), nil, nil)
	}
	one := func(v float64, _ bool) []wv { return []wv{{v, 1}} }
	orZero := func(v float64, ok bool) float64 {
		if !ok {
			return 0
		}
		return v
	}
	intervals := func(l []*glReq) []glInterval {
		out := make([]glInterval, len(l))
		for i, q := range l {
			out[i] = glInterval{q.start, q.end, 1}
		}
		return out
	}
	outTok := func(q *glReq) float64 {
		o, _ := q.outputTokens()
		return float64(o)
	}
	var ms []glMetric
	add := func(name string, st glStatus) { ms = append(ms, glMetric{name, st}) }
	add("requests_per_second", rate(func(q *glReq) []wv { return []wv{{q.end, 1}} }, true))
	add("request_concurrency", glStatusConcurrency(intervals(succ), intervals(errd), &start, &end))
	add("request_latency", vals(func(q *glReq) []wv { return one(q.latency(), true) }))
	add("request_streaming_iterations_count", vals(func(q *glReq) []wv { return one(float64(q.iters), true) }))
	add("prompt_token_count", vals(func(q *glReq) []wv { return one(float64(q.prompt), true) }))
	add("output_token_count", vals(func(q *glReq) []wv { return one(outTok(q), true) }))
	add("total_token_count", vals(func(q *glReq) []wv { return one(float64(q.prompt)+outTok(q), true) }))
	add("time_to_first_token_ms", vals(func(q *glReq) []wv { return one(orZero(q.ttftMS()), true) }))
	add("time_to_first_output_token_ms", vals(func(q *glReq) []wv { return one(orZero(q.ttftMS()), true) }))
	add("time_per_output_token_ms", vals(func(q *glReq) []wv { return []wv{{orZero(q.tpotMS()), outTok(q)}} }))
	add("inter_token_latency_ms", vals(func(q *glReq) []wv {
		o, ok := q.outputTokens()
		w := 1.0
		if ok && o != 0 {
			w = float64(o)
		}
		return []wv{{orZero(q.itlMS()), w - 1.0}}
	}))
	add("time_to_last_round_trip_ms", vals(func(q *glReq) []wv { return one(0, true) }))
	add("avg_round_trip_time_ms", vals(func(q *glReq) []wv { return one(0, true) }))
	add("prompt_tokens_per_second", rate(func(q *glReq) []wv { return []wv{q.promptTiming()} }, false))
	add("output_tokens_per_second", rate(func(q *glReq) []wv { return q.outputTimings() }, false))
	add("tokens_per_second", rate(func(q *glReq) []wv { return append([]wv{q.promptTiming()}, q.outputTimings()...) }, false))
	add("output_tokens_per_iteration", vals(func(q *glReq) []wv {
		var out []wv
		for _, t := range q.outputTimings() {
			out = append(out, wv{t.w, 1})
		}
		return out
	}))
	add("iter_tokens_per_iteration", vals(func(q *glReq) []wv {
		var out []wv
		for _, t := range q.iterTimings() {
			out = append(out, wv{t.w, 1})
		}
		return out
	}))
	return ms
}

// glUnit is the unit of a GenerativeMetrics entry.
func glUnit(name string) string {
	switch name {
	case "request_totals", "request_concurrency":
		return "requests"
	case "requests_per_second":
		return "requests/s"
	case "request_latency":
		return "s"
	case "request_streaming_iterations_count":
		return "iterations"
	case "prompt_token_count", "output_token_count", "total_token_count":
		return "tokens"
	case "prompt_tokens_per_second", "output_tokens_per_second", "tokens_per_second":
		return "tokens/s"
	case "output_tokens_per_iteration", "iter_tokens_per_iteration":
		return "tokens/iteration"
	}
	if len(name) > 3 && name[len(name)-3:] == "_ms" {
		return "ms"
	}
	return ""
}

func (d *glDist) jsonObj() *jObj {
	p := newObj()
	for i, n := range glPctNames {
		p.set(n, d.P[i])
	}
	return newObj().
		set("mean", d.Mean).set("median", d.Median).set("mode", d.Mode).
		set("variance", d.Variance).set("std_dev", d.StdDev).
		set("min", d.Min).set("max", d.Max).set("count", d.Count).
		set("total_sum", d.TotalSum).set("percentiles", p).set("pdf", nil)
}

func (s *glStatus) jsonObj() *jObj {
	return newObj().
		set("successful", s.Successful.jsonObj()).
		set("errored", s.Errored.jsonObj()).
		set("incomplete", s.Incomplete.jsonObj()).
		set("total", s.Total.jsonObj())
}

func optFloat(v float64, ok bool) any {
	if !ok {
		return nil
	}
	return v
}

func (q *glReq) jsonObj() *jObj {
	timings := newObj().
		set("targeted_start", q.queued).set("queued", q.queued).
		set("dequeued", q.start).set("scheduled_at", q.start).
		set("resolve_start", q.start).set("request_start", q.start)
	if q.hasTok {
		timings.set("first_request_iteration", q.first).set("first_token_iteration", q.first).
			set("first_output_token_iteration", q.first).
			set("last_token_iteration", q.last).set("last_request_iteration", q.last)
	} else {
		timings.set("first_request_iteration", nil).set("first_token_iteration", nil).
			set("first_output_token_iteration", nil).
			set("last_token_iteration", nil).set("last_request_iteration", nil)
	}
	timings.set("request_iterations", q.iters).set("token_iterations", q.iters).
		set("request_end", q.end).set("resolve_end", q.end).set("finalized", q.end)
	status := "completed"
	var errMsg any
	if q.errored {
		status, errMsg = "errored", q.err
	}
	info := newObj().
		set("request_id", q.id).set("conversation_id", q.conv).set("turn_index", q.turn).
		set("status", status).set("scheduler_node_id", 0).set("scheduler_process_id", 0).
		set("scheduler_start_time", q.schedulerT0).set("timings", timings).
		set("error", errMsg).set("traceback", nil).
		set("started_at", q.start).set("completed_at", q.end)
	in := newObj().set("text_tokens", q.prompt).set("cached_tokens", q.cached).set("total_tokens", q.prompt)
	out := newObj().set("text_tokens", nil).set("total_tokens", nil)
	if q.hasOutput {
		out = newObj().set("text_tokens", q.output).set("total_tokens", q.output)
	}
	o := newObj().
		set("type_", "generative_request_stats").
		set("request_id", q.id).set("response_id", nil).set("request_args", nil).set("output", nil).
		set("info", info).set("input_metrics", in).set("output_metrics", out).
		set("request_start_time", q.start).set("request_end_time", q.end).
		set("request_latency", q.latency()).set("prompt_tokens", q.prompt)
	if ot, ok := q.outputTokens(); ok {
		o.set("output_tokens", ot).set("total_tokens", q.prompt+ot)
	} else {
		o.set("output_tokens", nil).set("total_tokens", q.prompt)
	}
	o.set("time_to_first_token_ms", optFloat(q.ttftMS())).
		set("time_per_output_token_ms", optFloat(q.tpotMS())).
		set("inter_token_latency_ms", optFloat(q.itlMS()))
	var tps, otps any
	if lat := q.latency(); lat != 0 {
		ot, ok := q.outputTokens()
		tps = float64(q.prompt+ot) / lat
		if ok {
			otps = float64(ot) / lat
		}
	}
	o.set("tokens_per_second", tps).set("output_tokens_per_second", otps).
		set("time_to_first_output_token_ms", optFloat(q.ttftMS())).
		set("iter_tokens_per_iteration", optFloat(q.iterTokensPerIteration())).
		set("output_tokens_per_iteration", optFloat(q.outputTokensPerIteration()))
	return o
}

// glStrategy is the scheduling strategy guidellm would name for the load.
func glStrategy(r *Result) *jObj {
	switch {
	case r.MaxConcurrency > 0 && math.IsInf(r.RequestRate, 1):
		return newObj().set("type_", "concurrent").set("worker_count", 1).
			set("max_concurrency", r.MaxConcurrency).set("streams", r.MaxConcurrency).set("rampup_duration", 0.0)
	case math.IsInf(r.RequestRate, 1) || r.RequestRate <= 0:
		return newObj().set("type_", "throughput").set("worker_count", 1).
			set("max_concurrency", nil).set("rampup_duration", 0.0)
	}
	kind := "poisson"
	if r.Burstiness == 0 || math.IsInf(r.Burstiness, 1) {
		kind = "constant"
	}
	var mc any
	if r.MaxConcurrency > 0 {
		mc = r.MaxConcurrency
	}
	return newObj().set("type_", kind).set("worker_count", 1).
		set("max_concurrency", mc).set("rate", r.RequestRate).set("rampup_duration", 0.0)
}

// encodeGuideLLM renders benchmarks.json.
func encodeGuideLLM(r *Result, run *RunInfo) []byte {
	succ, errd := glRequests(r, run)
	start, end, ok := glWindow(succ, errd)
	if !ok {
		start, end = run.unixSeconds(0), run.unixSeconds(0)
	}
	for _, l := range [][]*glReq{succ, errd} {
		for _, q := range l {
			q.schedulerT0 = start
		}
	}
	model := run.model(r)
	strategy := glStrategy(r)
	backend := newObj().set("kind", "openai_http").set("target", "blis://simulated").
		set("model", model).set("request_format", "/v1/completions")
	profile := newObj().set("kind", strategy.vals[0])
	data := newObj().set("kind", "synthetic_text").set("prompt_tokens", run.ISL).set("output_tokens", run.OSL)
	report := newObj().
		set("metadata", newObj().set("version", 2).set("guidellm_version", run.version()).
			set("python_version", "").set("platform", "blis")).
		set("config", newObj().
			set("metadata", newObj().set("labels", newObj())).
			set("spec", newObj().
				set("backend", backend).
				set("profile", profile).
				set("constraints", []any{newObj().set("kind", "max_requests").set("stopping_scope", "current").
					set("count", r.Completed+r.Failed)}).
				set("data", []any{data}).
				set("seed", newObj().set("kind", "static").set("value", run.Seed)).
				set("outputs", []any{newObj().set("kind", "json").set("path", GuideLLMReportFile)})))

	ms := glMetrics(succ, errd, start, end)
	metrics := newObj().set("request_totals", newObj().
		set("successful", len(succ)).set("errored", len(errd)).set("incomplete", 0).set("total", len(succ)+len(errd)))
	for i := range ms {
		metrics.set(ms[i].name, ms[i].st.jsonObj())
	}
	reqs := func(l []*glReq) []any {
		out := make([]any, len(l))
		for i, q := range l {
			out[i] = q.jsonObj()
		}
		return out
	}
	meanOf := func(f func(q *glReq) float64) float64 {
		var s, n float64
		for _, l := range [][]*glReq{succ, errd} {
			for _, q := range l {
				s += f(q)
				n++
			}
		}
		if n == 0 {
			return -1.0
		}
		return s / n
	}
	n := len(succ) + len(errd)
	runID := run.benchmarkID(r)
	bench := newObj().
		set("type_", "generative_benchmark").
		set("config", newObj().
			set("id_", runID+"-0").set("run_id", runID).set("run_index", 0).
			set("strategy", strategy).set("constraints", newObj()).set("sample_size", nil).
			set("warmup", newObj().set("percent", nil).set("value", nil).set("mode", "prefer_duration")).
			set("cooldown", newObj().set("percent", nil).set("value", nil).set("mode", "prefer_duration")).
			set("prefer_response_metrics", true).
			set("profile", profile).
			set("requests", newObj().set("kind", "synthetic_text").set("samples", -1)).
			set("backend", backend).
			set("environment", newObj().set("type", "NonDistributedEnvironment"))).
		set("scheduler_state", newObj().
			set("node_id", 0).set("num_processes", 1).
			set("start_time", start).set("end_time", end).
			set("start_requests_time", start).set("end_requests_time", end).
			set("end_queuing_time", end).set("end_queuing_constraints", newObj()).
			set("end_processing_time", end).set("end_processing_constraints", newObj()).
			set("scheduler_constraints", newObj()).
			set("progress", newObj().set("remaining_requests", 0.0).set("total_requests", float64(n)).
				set("remaining_duration", nil).set("total_duration", nil).set("stop_time", end)).
			set("created_requests", n).set("queued_requests", 0).set("pending_requests", 0).
			set("processing_requests", 0).set("processed_requests", n).
			set("successful_requests", len(succ)).set("errored_requests", len(errd)).set("cancelled_requests", 0)).
		set("scheduler_metrics", newObj().
			set("start_time", start).set("request_start_time", start).
			set("measure_start_time", start).set("measure_end_time", end).
			set("request_end_time", end).set("end_time", end).
			set("requests_made", newObj().set("successful", len(succ)).set("errored", len(errd)).
				set("incomplete", 0).set("total", n)).
			set("queued_time_avg", meanOf(func(q *glReq) float64 { return q.start - q.queued })).
			set("resolve_start_delay_avg", 0.0).set("resolve_targeted_start_delay_avg", 0.0).
			set("request_start_delay_avg", 0.0).set("request_targeted_start_delay_avg", 0.0).
			set("request_time_avg", meanOf(func(q *glReq) float64 { return q.latency() })).
			set("resolve_end_delay_avg", 0.0).
			set("resolve_time_avg", meanOf(func(q *glReq) float64 { return q.latency() })).
			set("finalized_delay_avg", 0.0).set("processed_delay_avg", 0.0)).
		set("metrics", metrics).
		set("requests", newObj().set("successful", reqs(succ)).set("errored", reqs(errd)).
			set("incomplete", []any{}).set("total", nil)).
		set("start_time", start).set("end_time", end).set("duration", end-start).
		set("warmup_duration", 0.0).set("cooldown_duration", 0.0)
	report.set("benchmarks", []any{bench})
	var b bytes.Buffer
	encodeJSON(&b, report, pyJSONIndent1)
	b.WriteByte('\n')
	return b.Bytes()
}

// --- reading ---

// ReadGuideLLM reads a guidellm report (benchmarks.json): the requests of
// every benchmark (requests.successful, errored, incomplete) and every
// number under each benchmark's metrics, named
// "benchmarks[i].<metric>.<status>.<stat>" (percentiles as their pNNN),
// plus the benchmark's start_time, end_time and duration.
func ReadGuideLLM(path string) (*MeasuredRun, error) {
	data, err := readFileBounded(path)
	if err != nil {
		return nil, err
	}
	return parseGuideLLM(path, data)
}

func parseGuideLLM(file string, data []byte) (*MeasuredRun, error) {
	r := &jReader{file: file, data: data}
	root, err := parseJSONTree(data)
	if err != nil {
		return nil, r.syntax(err)
	}
	run := &MeasuredRun{Format: FormatGuideLLM, Path: file}
	r.obj(root, "$")
	benches := r.arr(r.req(root, "$", "benchmarks"), "$.benchmarks")
	for bi, b := range benches {
		bp := pathIdx("$.benchmarks", bi)
		r.obj(b, bp)
		prefix := "benchmarks[" + strconv.Itoa(bi) + "]."
		mt := r.obj(r.req(b, bp, "metrics"), pathKey(bp, "metrics"))
		if r.err != nil {
			return nil, r.err
		}
		for i, k := range mt.keys {
			glFlatten(r, &run.Metrics, mt.vals[i], pathKey(pathKey(bp, "metrics"), k), prefix+k, glUnit(k), 0)
		}
		for _, k := range []string{"start_time", "end_time", "duration"} {
			if v := r.opt(b, k); v != nil {
				run.Metrics = append(run.Metrics, MeasuredMetric{Name: prefix + k, Unit: "s", Value: r.num(v, pathKey(bp, k))})
			}
		}
		rq := r.obj(r.req(b, bp, "requests"), pathKey(bp, "requests"))
		for _, status := range []string{"successful", "errored", "incomplete"} {
			sp := pathKey(pathKey(bp, "requests"), status)
			l := r.opt(rq, status)
			if l == nil {
				continue
			}
			for i, q := range r.arr(l, sp) {
				if m, ok := glReadRequest(r, q, pathIdx(sp, i), status); ok {
					run.Requests = append(run.Requests, m)
				}
			}
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return run, r.err
}

// glFlatten appends every number under n as a metric.
func glFlatten(r *jReader, out *[]MeasuredMetric, n *jNode, path, name, unit string, depth int) {
	if r.err != nil {
		return
	}
	switch n.kind {
	case 'z':
	case 'n':
		u := unit
		switch name[lastDot(name)+1:] {
		case "count":
			u = "count"
		case "variance":
			if unit != "" {
				u = unit + "^2"
			}
		}
		*out = append(*out, MeasuredMetric{Name: name, Unit: u, Value: r.num(n, path)})
	case 'o':
		if depth > 8 {
			r.fail(n, path, "nested too deeply")
			return
		}
		for i, k := range n.keys {
			nn := name + "." + k
			if k == "percentiles" {
				nn = name
			}
			glFlatten(r, out, n.vals[i], pathKey(path, k), nn, unit, depth+1)
		}
	case 'a':
		if name[lastDot(name)+1:] != "pdf" {
			r.fail(n, path, "want a number, object or null, got an array")
		}
	default:
		r.fail(n, path, "want a number, object or null, got %s", n.kindName())
	}
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}

// glReadRequest reads one GenerativeRequestStats from its timings.
func glReadRequest(r *jReader, n *jNode, path, status string) (MeasuredRequest, bool) {
	var q MeasuredRequest
	r.obj(n, path)
	q.ID = r.str(r.req(n, path, "request_id"), pathKey(path, "request_id"))
	ip := pathKey(path, "info")
	info := r.obj(r.req(n, path, "info"), ip)
	tp := pathKey(ip, "timings")
	tm := r.obj(r.req(info, ip, "timings"), tp)
	if r.err != nil {
		return q, false
	}
	q.Conversation = r.optStr(info.field("conversation_id"), pathKey(ip, "conversation_id"))
	if t := r.opt(info, "turn_index"); t != nil {
		q.Turn = r.count(t, pathKey(ip, "turn_index"))
	}
	tsec := func(k string) (float64, bool) {
		v := r.opt(tm, k)
		if v == nil {
			return 0, false
		}
		return r.num(v, pathKey(tp, k)), true
	}
	start, ok1 := tsec("request_start")
	if !ok1 {
		start, ok1 = tsec("resolve_start")
	}
	end, ok2 := tsec("request_end")
	if !ok2 {
		end, ok2 = tsec("resolve_end")
	}
	if r.err == nil && (!ok1 || !ok2) {
		r.fail(tm, tp, "want request_start and request_end (or resolve_start and resolve_end)")
	}
	first, hasFirst := tsec("first_token_iteration")
	last, hasLast := tsec("last_token_iteration")
	if v := r.opt(tm, "token_iterations"); v != nil {
		q.Chunks = r.count(v, pathKey(tp, "token_iterations"))
	}
	tokens := func(k string) (int, bool) {
		m := r.opt(n, k)
		if m == nil {
			return 0, false
		}
		mp := pathKey(path, k)
		r.obj(m, mp)
		for _, f := range []string{"text_tokens", "total_tokens"} {
			if v := r.opt(m, f); v != nil {
				return r.count(v, pathKey(mp, f)), true
			}
		}
		return 0, false
	}
	q.InputTokens, _ = tokens("input_metrics")
	out, hasOut := tokens("output_metrics")
	if !hasOut {
		out = q.Chunks
	}
	q.OutputTokens = out
	if r.err != nil {
		return q, false
	}
	if end < start {
		r.fail(tm, tp, "request_end %v before request_start %v", end, start)
		return q, false
	}
	q.Start, q.End = int64(sToDuration(start)), int64(sToDuration(end))
	switch status {
	case "successful":
		q.Success = true
		if hasFirst {
			q.TTFT = sToDuration(first - start)
		}
		if hasFirst && hasLast && out > 1 {
			q.TPOTms = 1000 * (last - first) / float64(out-1)
		}
	case "errored":
		q.Error = r.optStr(info.field("error"), pathKey(ip, "error"))
		if q.Error == "" {
			q.Error = "errored"
		}
	default:
		q.Error = "incomplete"
	}
	return q, r.err == nil
}
