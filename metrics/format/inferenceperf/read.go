package inferenceperf

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
)

// Read reads inference-perf lifecycle reports. path is a
// report directory (per_request_lifecycle_metrics.json,
// summary_lifecycle_metrics.json and stage_N_lifecycle_metrics.json, each
// read when present, at least one required) or one of those files (a JSON
// list is a per-request file, an object a summary).
//
// Requests come from the per-request file: Start and End are start_time
// and end_time (the client's monotonic clock); TTFT is the first output
// token time (else the first chunk time) minus start_time; ITLs are the
// gaps between chunk_times (the content-bearing chunks), or between
// output_token_times where a file has no chunk_times (older versions);
// TPOTms is the tool's time_per_output_token, (last − first token time) /
// (output_tokens − 1), with more than one token time and output token; ID
// is the position in the list (or info.server_request_id where written);
// Conversation is session_id and Turn the request's rank by start_time
// within its session. Both the current layout (info.request_metrics.text
// .input_tokens, info.response_metrics.{output_tokens, chunk_times,
// output_token_times}) and the older flat one (info.{input_tokens,
// output_tokens, output_token_times}) are read.
//
// Every number of a summary is a metric named "<report>.<path>", report
// being "summary", "stage_N" or the file's name before
// "_lifecycle_metrics.json" ("summary.successes.latency.time_to_first_token.p90",
// "stage_0.load_summary.achieved_rate", "summary.failures.by_label.400 - other.count").
func Read(path string) (*metrics.MeasuredRun, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		data, err := metrics.ReadResultFile(path)
		if err != nil {
			return nil, err
		}
		return parseFile(path, data)
	}
	files := Files(path)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no inference-perf lifecycle report: want %s, %s or stage_N%s",
			path, PerRequestFile, SummaryFile, lifecycleSuffix)
	}
	run := &metrics.MeasuredRun{Format: Name, Path: path}
	for _, f := range files {
		data, err := metrics.ReadResultFile(f)
		if err != nil {
			return nil, err
		}
		one, err := parseFile(f, data)
		if err != nil {
			return nil, err
		}
		if filepath.Base(f) == PerRequestFile && len(one.Metrics) > 0 {
			return nil, fmt.Errorf("%s: want a JSON list of request records, got an object", f)
		}
		run.Requests = append(run.Requests, one.Requests...)
		run.Metrics = append(run.Metrics, one.Metrics...)
	}
	return run, nil
}

// Files lists the lifecycle reports Read reads
// in dir, in reading order: the per-request file, the summary, then the
// stages by number.
func Files(dir string) []string {
	var out []string
	for _, name := range []string{PerRequestFile, SummaryFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && !st.IsDir() {
			out = append(out, filepath.Join(dir, name))
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	type stage struct {
		n    int
		name string
	}
	var stages []stage
	for _, e := range ents {
		if m := ipStageRE.FindStringSubmatch(e.Name()); m != nil && !e.IsDir() {
			n, _ := strconv.Atoi(m[1])
			stages = append(stages, stage{n, e.Name()})
		}
	}
	sort.Slice(stages, func(a, b int) bool { return stages[a].n < stages[b].n })
	for _, s := range stages {
		out = append(out, filepath.Join(dir, s.name))
	}
	return out
}

// ipReportName is the metric prefix of a summary file.
func ipReportName(file string) string {
	base := filepath.Base(file)
	if m := ipStageRE.FindStringSubmatch(base); m != nil {
		return "stage_" + m[1]
	}
	if stem, ok := strings.CutSuffix(base, lifecycleSuffix); ok && stem != "" {
		return stem
	}
	return "summary"
}

// parseFile reads one report: a list is the per-request file,
// an object a summary named after the file.
func parseFile(file string, data []byte) (*metrics.MeasuredRun, error) {
	r := &jsonx.Reader{File: file, Data: data}
	root, err := jsonx.Parse(data)
	if err != nil {
		return nil, r.Syntax(err)
	}
	run := &metrics.MeasuredRun{Format: Name, Path: file}
	switch root.Kind {
	case jsonx.Array:
		run.Requests = ipReadRequests(r, root)
	case jsonx.Object:
		run.Metrics = ipReadSummary(r, root, ipReportName(file))
	default:
		r.Fail(root, "$", "want a list of request records or a summary object, got %s", root.KindName())
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return run, nil
}

// ipTimes reads a list of float seconds, each in [start, end] and not
// decreasing.
func ipTimes(r *jsonx.Reader, n *jsonx.Node, path string, start, end float64) []float64 {
	l := r.Arr(n, path)
	out := make([]float64, 0, len(l))
	prev := start
	for i, x := range l {
		p := jsonx.PathIdx(path, i)
		v := r.Num(x, p)
		if r.Err != nil {
			return nil
		}
		switch {
		case v < prev:
			if i == 0 {
				r.Fail(x, p, "%v before start_time %v", v, start)
			} else {
				r.Fail(x, p, "%v before the previous time %v: want times in order", v, prev)
			}
		case v > end:
			r.Fail(x, p, "%v after end_time %v", v, end)
		}
		if r.Err != nil {
			return nil
		}
		out = append(out, v)
		prev = v
	}
	return out
}

// ipGaps converts float-second times to nanoseconds and returns the gaps.
func ipGaps(ts []float64) []time.Duration {
	if len(ts) < 2 {
		return nil
	}
	out := make([]time.Duration, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		out[i-1] = metrics.FromSeconds(ts[i]) - metrics.FromSeconds(ts[i-1])
	}
	return out
}

func ipReadRequests(r *jsonx.Reader, root *jsonx.Node) []metrics.MeasuredRequest {
	reqs := make([]metrics.MeasuredRequest, 0, len(root.Arr))
	for i, e := range root.Arr {
		q, ok := ipReadRequest(r, e, jsonx.PathIdx("$", i), i)
		if !ok {
			return nil
		}
		reqs = append(reqs, q)
	}
	// Turn: the request's rank by start_time within its session.
	bySession := map[string][]int{}
	for i := range reqs {
		if c := reqs[i].Conversation; c != "" {
			bySession[c] = append(bySession[c], i)
		}
	}
	for _, idx := range bySession {
		sort.SliceStable(idx, func(a, b int) bool { return reqs[idx[a]].Start < reqs[idx[b]].Start })
		for t, i := range idx {
			reqs[i].Turn = t
		}
	}
	return reqs
}

// ipReadRequest reads one per-request entry.
func ipReadRequest(r *jsonx.Reader, e *jsonx.Node, p string, i int) (metrics.MeasuredRequest, bool) {
	var q metrics.MeasuredRequest
	r.Obj(e, p)
	start := r.Num(r.Req(e, p, "start_time"), jsonx.PathKey(p, "start_time"))
	end := r.Num(r.Req(e, p, "end_time"), jsonx.PathKey(p, "end_time"))
	if r.Err != nil {
		return q, false
	}
	if end < start {
		r.Fail(e.Field("end_time"), jsonx.PathKey(p, "end_time"), "%v before start_time %v", end, start)
		return q, false
	}
	if math.Abs(start) > 1e9 || math.Abs(end) > 1e9 {
		// Nanosecond times of more than ~31 years would overflow.
		r.Fail(e.Field("start_time"), jsonx.PathKey(p, "start_time"), "want seconds within ±1e9, got %v to %v", start, end)
		return q, false
	}
	q.ID = strconv.Itoa(i)
	q.Start, q.End = int64(metrics.FromSeconds(start)), int64(metrics.FromSeconds(end))
	q.Conversation = r.OptStr(e.Field("session_id"), jsonx.PathKey(p, "session_id"))
	if c := e.Field("computed_metrics"); c != nil && c.Kind != jsonx.Null {
		r.Obj(c, jsonx.PathKey(p, "computed_metrics"))
	}

	ep := jsonx.PathKey(p, "error")
	errN := r.Req(e, p, "error")
	if r.Err != nil {
		return q, false
	}
	if errN.Kind != jsonx.Null {
		r.Obj(errN, ep)
		typ := r.Str(r.Req(errN, ep, "error_type"), jsonx.PathKey(ep, "error_type"))
		msg := r.Str(r.Req(errN, ep, "error_msg"), jsonx.PathKey(ep, "error_msg"))
		q.Error = msg
		if q.Error == "" {
			q.Error = typ
		}
		if q.Error == "" {
			q.Error = "error"
		}
	} else {
		q.Success = true
	}

	var outTok int
	var hasOut, hasChunks bool
	var tokenTimes, chunkTimes []float64
	if info := r.Opt(e, "info"); info != nil {
		ip := jsonx.PathKey(p, "info")
		r.Obj(info, ip)
		if r.Err != nil {
			return q, false
		}
		if id := info.Field("server_request_id"); id != nil && id.Kind == jsonx.String && id.Str != "" {
			q.ID = id.Str
		}
		if rm := r.Opt(info, "request_metrics"); rm != nil {
			rp := jsonx.PathKey(ip, "request_metrics")
			r.Obj(rm, rp)
			tp := jsonx.PathKey(rp, "text")
			text := r.Obj(r.Req(rm, rp, "text"), tp)
			if v := r.Opt(text, "input_tokens"); v != nil {
				q.InputTokens = r.Count(v, jsonx.PathKey(tp, "input_tokens"))
			}
		} else if v := r.Opt(info, "input_tokens"); v != nil {
			q.InputTokens = r.Count(v, jsonx.PathKey(ip, "input_tokens"))
		}
		src, sp := info, ip // the older flat layout keeps the response fields in info
		if rs := r.Opt(info, "response_metrics"); rs != nil {
			src, sp = rs, jsonx.PathKey(ip, "response_metrics")
			r.Obj(rs, sp)
			if u := r.Opt(rs, "server_usage"); u != nil {
				r.Obj(u, jsonx.PathKey(sp, "server_usage"))
			}
		}
		if v := r.Opt(src, "output_tokens"); v != nil {
			outTok, hasOut = r.Count(v, jsonx.PathKey(sp, "output_tokens")), true
		}
		if v := r.Opt(src, "output_token_times"); v != nil {
			tokenTimes = ipTimes(r, v, jsonx.PathKey(sp, "output_token_times"), start, end)
		}
		if v := r.Opt(src, "chunk_times"); v != nil {
			chunkTimes, hasChunks = ipTimes(r, v, jsonx.PathKey(sp, "chunk_times"), start, end), true
		}
	}
	if r.Err != nil {
		return q, false
	}
	if !hasOut {
		outTok = len(tokenTimes)
	}
	q.OutputTokens = outTok
	if !q.Success {
		return q, true
	}
	switch {
	case len(tokenTimes) > 0:
		q.TTFT = metrics.FromSeconds(tokenTimes[0]) - metrics.FromSeconds(start)
	case len(chunkTimes) > 0:
		q.TTFT = metrics.FromSeconds(chunkTimes[0]) - metrics.FromSeconds(start)
	}
	if hasChunks {
		q.ITLs = ipGaps(chunkTimes)
		q.Chunks = len(chunkTimes)
	} else {
		q.ITLs = ipGaps(tokenTimes)
	}
	if len(tokenTimes) > 1 && outTok > 1 {
		d := metrics.FromSeconds(tokenTimes[len(tokenTimes)-1]) - metrics.FromSeconds(tokenTimes[0])
		q.TPOTms = float64(d) / 1e6 / float64(outTok-1)
	}
	return q, true
}

// ipIsStat reports whether k is a statistic key of summarize or of the
// token-usage summaries.
func ipIsStat(k string) bool {
	switch k {
	case "mean", "min", "max", "median", "total", "cached", "uncached":
		return true
	}
	if len(k) > 1 && k[0] == 'p' {
		_, err := strconv.ParseFloat(k[1:], 64)
		return err == nil
	}
	return false
}

// ipUnit is the unit of a summary number, from its path segments.
func ipUnit(segs []string) string {
	field := segs[len(segs)-1]
	if ipIsStat(field) && len(segs) > 1 {
		field = segs[len(segs)-2]
	}
	has := func(s string) bool { return slices.Contains(segs, s) }
	switch {
	case field == "time_per_output_token" || field == "normalized_time_per_output_token":
		return "s/token"
	case has("latency") || field == "request_latency" || field == "schedule_delay" || field == "send_duration" ||
		field == "benchmark_time_seconds" || strings.HasPrefix(field, "wasted_sec") ||
		field == "time_to_first_token" || field == "inter_token_latency":
		return "s"
	case field == "requested_rate" || field == "achieved_rate" || field == "requests_per_sec" || field == "request_goodput":
		return "requests/s"
	case strings.HasSuffix(field, "tokens_per_sec") || field == "token_goodput":
		return "tokens/s"
	case strings.HasSuffix(field, "_per_sec"):
		return strings.TrimSuffix(field, "_per_sec") + "/s"
	case strings.HasSuffix(field, "percentage"):
		return "%"
	case field == "prompt_tokens" || field == "output_tokens" || field == "output_len" || field == "prompt_len":
		return "tokens"
	case field == "request_size_bytes" || field == "bytes":
		return "bytes"
	case field == "count" || field == "concurrency" || field == "token_count_mismatches" || has("client_fallback_requests") ||
		field == "requests_retried" || field == "attempts" || field == "recovered" || field == "failed_after_retry" ||
		field == "good_requests" || field == "total_requests":
		return "count"
	}
	return ""
}

// ipReadSummary checks a ResponsesSummary's required shape and returns
// every number in it as a metric.
func ipReadSummary(r *jsonx.Reader, root *jsonx.Node, report string) []metrics.MeasuredMetric {
	sp := jsonx.PathKey("$", "successes")
	succ := r.Obj(r.Req(root, "$", "successes"), sp)
	r.Count(r.Req(succ, sp, "count"), jsonx.PathKey(sp, "count"))
	fp := jsonx.PathKey("$", "failures")
	fail := r.Obj(r.Req(root, "$", "failures"), fp)
	r.Count(r.Req(fail, fp, "count"), jsonx.PathKey(fp, "count"))
	if lat := r.Opt(succ, "latency"); lat != nil {
		lp := jsonx.PathKey(sp, "latency")
		r.Obj(lat, lp)
		if r.Err == nil {
			for i, k := range lat.Keys {
				st := lat.Vals[i]
				if st.Kind == jsonx.Null {
					continue
				}
				kp := jsonx.PathKey(lp, k)
				r.Obj(st, kp)
				if r.Err != nil {
					break
				}
				for j, sk := range st.Keys {
					r.Num(st.Vals[j], jsonx.PathKey(kp, sk))
				}
			}
		}
	}
	if tp := r.Opt(succ, "throughput"); tp != nil {
		p := jsonx.PathKey(sp, "throughput")
		r.Obj(tp, p)
		if r.Err == nil {
			for i, k := range tp.Keys {
				if tp.Vals[i].Kind != jsonx.Null {
					r.Num(tp.Vals[i], jsonx.PathKey(p, k))
				}
			}
		}
	}
	if r.Err != nil {
		return nil
	}
	var out []metrics.MeasuredMetric
	ipFlatten(r, &out, root, "$", []string{report}, 0)
	if r.Err != nil {
		return nil
	}
	return out
}

// ipFlatten appends every number under n; strings, booleans and nulls
// describe and are skipped.
func ipFlatten(r *jsonx.Reader, out *[]metrics.MeasuredMetric, n *jsonx.Node, path string, segs []string, depth int) {
	if r.Err != nil {
		return
	}
	if depth > 32 {
		r.Fail(n, path, "nested too deeply")
		return
	}
	switch n.Kind {
	case jsonx.Number:
		v := r.Num(n, path)
		*out = append(*out, metrics.MeasuredMetric{Name: strings.Join(segs, "."), Unit: ipUnit(segs), Value: v})
	case jsonx.Object:
		for i, k := range n.Keys {
			ipFlatten(r, out, n.Vals[i], jsonx.PathKey(path, k), append(slices.Clip(segs), k), depth+1)
		}
	case jsonx.Array:
		for i, e := range n.Arr {
			s := slices.Clone(segs)
			s[len(s)-1] = jsonx.PathIdx(s[len(s)-1], i)
			ipFlatten(r, out, e, jsonx.PathIdx(path, i), s, depth+1)
		}
	}
}
