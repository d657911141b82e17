package guidellm

import (
	"strconv"
	"strings"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
)

// Read reads a guidellm report (benchmarks.json): the requests of
// every benchmark (requests.successful, errored, incomplete) and every
// number under each benchmark's metrics, named
// "benchmarks[i].<metric>.<status>.<stat>" (percentiles as their pNNN),
// plus the benchmark's start_time, end_time and duration.
func Read(path string) (*metrics.MeasuredRun, error) {
	data, err := metrics.ReadResultFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

func parse(file string, data []byte) (*metrics.MeasuredRun, error) {
	r := &jsonx.Reader{File: file, Data: data}
	root, err := jsonx.Parse(data)
	if err != nil {
		return nil, r.Syntax(err)
	}
	run := &metrics.MeasuredRun{Format: Name, Path: file}
	r.Obj(root, "$")
	benches := r.Arr(r.Req(root, "$", "benchmarks"), "$.benchmarks")
	for bi, b := range benches {
		bp := jsonx.PathIdx("$.benchmarks", bi)
		r.Obj(b, bp)
		prefix := "benchmarks[" + strconv.Itoa(bi) + "]."
		mt := r.Obj(r.Req(b, bp, "metrics"), jsonx.PathKey(bp, "metrics"))
		if r.Err != nil {
			return nil, r.Err
		}
		for i, k := range mt.Keys {
			glFlatten(r, &run.Metrics, mt.Vals[i], jsonx.PathKey(jsonx.PathKey(bp, "metrics"), k), prefix+k, glUnit(k), 0)
		}
		for _, k := range []string{"start_time", "end_time", "duration"} {
			if v := r.Opt(b, k); v != nil {
				run.Metrics = append(run.Metrics, metrics.MeasuredMetric{Name: prefix + k, Unit: "s", Value: r.Num(v, jsonx.PathKey(bp, k))})
			}
		}
		rq := r.Obj(r.Req(b, bp, "requests"), jsonx.PathKey(bp, "requests"))
		for _, status := range []string{"successful", "errored", "incomplete"} {
			sp := jsonx.PathKey(jsonx.PathKey(bp, "requests"), status)
			l := r.Opt(rq, status)
			if l == nil {
				continue
			}
			for i, q := range r.Arr(l, sp) {
				if m, ok := glReadRequest(r, q, jsonx.PathIdx(sp, i), status); ok {
					run.Requests = append(run.Requests, m)
				}
			}
		}
		if r.Err != nil {
			return nil, r.Err
		}
	}
	return run, r.Err
}

// glFlatten appends every number under n as a metric.
func glFlatten(r *jsonx.Reader, out *[]metrics.MeasuredMetric, n *jsonx.Node, path, name, unit string, depth int) {
	if r.Err != nil {
		return
	}
	switch n.Kind {
	case jsonx.Null:
	case jsonx.Number:
		u := unit
		switch name[strings.LastIndexByte(name, '.')+1:] {
		case "count":
			u = "count"
		case "variance":
			if unit != "" {
				u = unit + "^2"
			}
		}
		*out = append(*out, metrics.MeasuredMetric{Name: name, Unit: u, Value: r.Num(n, path)})
	case jsonx.Object:
		if depth > 8 {
			r.Fail(n, path, "nested too deeply")
			return
		}
		for i, k := range n.Keys {
			nn := name + "." + k
			if k == "percentiles" {
				nn = name
			}
			glFlatten(r, out, n.Vals[i], jsonx.PathKey(path, k), nn, unit, depth+1)
		}
	case jsonx.Array:
		if name[strings.LastIndexByte(name, '.')+1:] != "pdf" {
			r.Fail(n, path, "want a number, object or null, got an array")
		}
	default:
		r.Fail(n, path, "want a number, object or null, got %s", n.KindName())
	}
}

// glReadRequest reads one GenerativeRequestStats from its timings.
func glReadRequest(r *jsonx.Reader, n *jsonx.Node, path, status string) (metrics.MeasuredRequest, bool) {
	var q metrics.MeasuredRequest
	r.Obj(n, path)
	q.ID = r.Str(r.Req(n, path, "request_id"), jsonx.PathKey(path, "request_id"))
	ip := jsonx.PathKey(path, "info")
	info := r.Obj(r.Req(n, path, "info"), ip)
	tp := jsonx.PathKey(ip, "timings")
	tm := r.Obj(r.Req(info, ip, "timings"), tp)
	if r.Err != nil {
		return q, false
	}
	q.Conversation = r.OptStr(info.Field("conversation_id"), jsonx.PathKey(ip, "conversation_id"))
	if t := r.Opt(info, "turn_index"); t != nil {
		q.Turn = r.Count(t, jsonx.PathKey(ip, "turn_index"))
	}
	tsec := func(k string) (float64, bool) {
		v := r.Opt(tm, k)
		if v == nil {
			return 0, false
		}
		return r.Num(v, jsonx.PathKey(tp, k)), true
	}
	start, ok1 := tsec("request_start")
	if !ok1 {
		start, ok1 = tsec("resolve_start")
	}
	end, ok2 := tsec("request_end")
	if !ok2 {
		end, ok2 = tsec("resolve_end")
	}
	if r.Err == nil && (!ok1 || !ok2) {
		r.Fail(tm, tp, "want request_start and request_end (or resolve_start and resolve_end)")
	}
	first, hasFirst := tsec("first_token_iteration")
	last, hasLast := tsec("last_token_iteration")
	if v := r.Opt(tm, "token_iterations"); v != nil {
		q.Chunks = r.Count(v, jsonx.PathKey(tp, "token_iterations"))
	}
	tokens := func(k string) (int, bool) {
		m := r.Opt(n, k)
		if m == nil {
			return 0, false
		}
		mp := jsonx.PathKey(path, k)
		r.Obj(m, mp)
		for _, f := range []string{"text_tokens", "total_tokens"} {
			if v := r.Opt(m, f); v != nil {
				return r.Count(v, jsonx.PathKey(mp, f)), true
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
	if r.Err != nil {
		return q, false
	}
	if end < start {
		r.Fail(tm, tp, "request_end %v before request_start %v", end, start)
		return q, false
	}
	q.Start, q.End = int64(metrics.FromSeconds(start)), int64(metrics.FromSeconds(end))
	switch status {
	case "successful":
		q.Success = true
		if hasFirst {
			q.TTFT = metrics.FromSeconds(first - start)
		}
		if hasFirst && hasLast && out > 1 {
			q.TPOTms = 1000 * (last - first) / float64(out-1)
		}
	case "errored":
		q.Error = r.OptStr(info.Field("error"), jsonx.PathKey(ip, "error"))
		if q.Error == "" {
			q.Error = "errored"
		}
	default:
		q.Error = "incomplete"
	}
	return q, r.Err == nil
}
