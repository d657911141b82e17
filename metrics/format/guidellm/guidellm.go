// Package guidellm writes and reads GuideLLM's benchmark report
// (benchmarks.json), so that GuideLLM's own tooling works on BLIS output.
// The report is mirrored from vllm-project/guidellm report
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
//
// Requests are listed in completion order within each status, as guidellm
// appends them (src/guidellm/benchmark/schemas/generative/accumulator.py
// @ 06cef291, GenerativeRequestsAccumulator.update_estimate). The Writer
// spools the request entries as they finish (their scheduler_start_time,
// the window's start, is filled in at the end) and keeps a few varints per
// request for the metrics, which it compiles at Close.
package guidellm

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/spool"
	"blis/metrics/internal/vlog"
)

// Name is the format's name, as --export takes it.
const Name = "guidellm"

// ReportFile is the file the export writes.
const ReportFile = "benchmarks.json"

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

// appendIterTimings appends iter_tokens_timings: the iterations after the
// first, at linspace(first, last, iters)[1:], each with the tokens per
// iteration after the first.
func (q *glReq) appendIterTimings(dst []wv) []wv {
	tpi, ok := q.iterTokensPerIteration()
	if !q.hasTok || !ok || q.iters <= 1 {
		return dst
	}
	// linspace's values, computed as numpy computes them, without the array.
	num := q.iters
	div := float64(num - 1)
	delta := q.last - q.first
	step := delta / div
	for i := 1; i < num-1; i++ {
		var t float64
		if step == 0 {
			t = float64(i)/div*delta + q.first
		} else {
			t = float64(i)*step + q.first
		}
		dst = append(dst, wv{t, tpi})
	}
	return append(dst, wv{q.last, tpi})
}

// appendOutputTimings appends output_tokens_timings.
func (q *glReq) appendOutputTimings(dst []wv) []wv {
	out, _ := q.outputTokens()
	if !q.hasTok || q.iters <= 1 {
		t := q.end
		if q.hasTok {
			t = q.last
		}
		return append(dst, wv{t, float64(out)})
	}
	first := 0.0
	if out != 0 {
		first = 1
	}
	return q.appendIterTimings(append(dst, wv{q.first, first}))
}

// newGLReq is one request's stats; detailed says its chunk gaps were
// recorded (its token iterations are then its chunks, else its tokens).
func newGLReq(p *metrics.RequestResult, run *metrics.RunInfo, detailed bool) glReq {
	conv, turn := run.ConversationOf(p)
	q := glReq{
		id: strconv.FormatInt(p.Index, 10), conv: strconv.FormatInt(conv, 10), turn: turn,
		queued: run.UnixSeconds(p.Start - p.QueueTime),
		start:  run.UnixSeconds(p.Start), end: run.UnixSeconds(p.End),
		prompt: p.InputTokens, cached: p.CachedTokens,
	}
	if !p.Success {
		q.errored, q.err = true, p.Error
		return q
	}
	q.hasTok = true
	q.first = run.UnixSeconds(p.Start + p.TTFT)
	q.last = q.end
	q.iters = p.OutputTokens
	if detailed {
		q.iters = len(p.ITLs) + 1
	}
	q.output, q.hasOutput = p.OutputTokens, true
	return q
}

// glRequests builds the per-request stats from the Result, in completion
// order.
func glRequests(r *metrics.Result, run *metrics.RunInfo) (succ, errd []*glReq) {
	for _, p := range r.InCompletionOrder() {
		q := newGLReq(p, run, r.Detailed)
		if q.errored {
			errd = append(errd, &q)
		} else {
			succ = append(succ, &q)
		}
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
	// The scratch arrays sized once, for the largest distribution
	// (tokens_per_second: every iteration, a prompt entry and a first
	// token per request, and the window's two ends).
	most := 2
	for _, l := range [][]*glReq{succ, errd} {
		for _, q := range l {
			most += max(q.iters, 0) + 2
		}
	}
	sc := &scratch{}
	grow(&sc.sortTmp, most)
	grow(&sc.wt, most)
	// Each distribution's values, request by request, appended to one
	// list per status, sized up front: one value per request (perRequest
	// 1), or one per iteration and one more (perRequest 2).
	// The lists go to two buffers reused from one distribution to the next
	// (each distribution copies what it keeps).
	var succBuf, errdBuf []wv
	collect := func(l []*glReq, perRequest int, fn func(dst []wv, q *glReq) []wv, buf *[]wv) []wv {
		n := len(l)
		if perRequest > 1 {
			for _, q := range l {
				n += max(q.iters, 0)
			}
		}
		out := grow(buf, n)[:0]
		for _, q := range l {
			out = fn(out, q)
		}
		return out
	}
	// vals and rate take one value per request (perRequest 1) or one per
	// iteration (perRequest 2: the iterations and a first or prompt entry).
	vals := func(perRequest int, fn func(dst []wv, q *glReq) []wv) glStatus {
		return glStatusValues(collect(succ, perRequest, fn, &succBuf), collect(errd, perRequest, fn, &errdBuf), sc)
	}
	rate := func(perRequest int, fn func(dst []wv, q *glReq) []wv, window bool) glStatus {
		s, e := collect(succ, perRequest, fn, &succBuf), collect(errd, perRequest, fn, &errdBuf)
		if window {
			return glStatusRate(s, e, &start, &end, sc)
		}
		return glStatusRate(s, e, nil, nil, sc)
	}
	one := func(f func(q *glReq) float64) func(dst []wv, q *glReq) []wv {
		return func(dst []wv, q *glReq) []wv { return append(dst, wv{f(q), 1}) }
	}
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
	add("requests_per_second", rate(1, func(dst []wv, q *glReq) []wv { return append(dst, wv{q.end, 1}) }, true))
	add("request_concurrency", glStatusConcurrency(intervals(succ), intervals(errd), &start, &end))
	add("request_latency", vals(1, one(func(q *glReq) float64 { return q.latency() })))
	add("request_streaming_iterations_count", vals(1, one(func(q *glReq) float64 { return float64(q.iters) })))
	add("prompt_token_count", vals(1, one(func(q *glReq) float64 { return float64(q.prompt) })))
	add("output_token_count", vals(1, one(outTok)))
	add("total_token_count", vals(1, one(func(q *glReq) float64 { return float64(q.prompt) + outTok(q) })))
	add("time_to_first_token_ms", vals(1, one(func(q *glReq) float64 { return orZero(q.ttftMS()) })))
	add("time_to_first_output_token_ms", vals(1, one(func(q *glReq) float64 { return orZero(q.ttftMS()) })))
	add("time_per_output_token_ms", vals(1, func(dst []wv, q *glReq) []wv {
		return append(dst, wv{orZero(q.tpotMS()), outTok(q)})
	}))
	add("inter_token_latency_ms", vals(1, func(dst []wv, q *glReq) []wv {
		o, ok := q.outputTokens()
		w := 1.0
		if ok && o != 0 {
			w = float64(o)
		}
		return append(dst, wv{orZero(q.itlMS()), w - 1.0})
	}))
	add("time_to_last_round_trip_ms", vals(1, one(func(q *glReq) float64 { return 0 })))
	add("avg_round_trip_time_ms", vals(1, one(func(q *glReq) float64 { return 0 })))
	add("prompt_tokens_per_second", rate(1, func(dst []wv, q *glReq) []wv { return append(dst, q.promptTiming()) }, false))
	add("output_tokens_per_second", rate(2, func(dst []wv, q *glReq) []wv { return q.appendOutputTimings(dst) }, false))
	add("tokens_per_second", rate(2, func(dst []wv, q *glReq) []wv {
		return q.appendOutputTimings(append(dst, q.promptTiming()))
	}, false))
	// The tokens of each iteration, as values of weight 1.
	perIteration := func(timings func(q *glReq, dst []wv) []wv) func(dst []wv, q *glReq) []wv {
		return func(dst []wv, q *glReq) []wv {
			n := len(dst)
			dst = timings(q, dst)
			for i := n; i < len(dst); i++ {
				dst[i] = wv{dst[i].w, 1}
			}
			return dst
		}
	}
	add("output_tokens_per_iteration", vals(2, perIteration((*glReq).appendOutputTimings)))
	add("iter_tokens_per_iteration", vals(2, perIteration((*glReq).appendIterTimings)))
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

func (d *glDist) jsonObj() *jsonx.Obj {
	p := jsonx.NewObj()
	for i, n := range glPctNames {
		p.Set(n, d.P[i])
	}
	return jsonx.NewObj().
		Set("mean", d.Mean).Set("median", d.Median).Set("mode", d.Mode).
		Set("variance", d.Variance).Set("std_dev", d.StdDev).
		Set("min", d.Min).Set("max", d.Max).Set("count", d.Count).
		Set("total_sum", d.TotalSum).Set("percentiles", p).Set("pdf", nil)
}

func (s *glStatus) jsonObj() *jsonx.Obj {
	return jsonx.NewObj().
		Set("successful", s.Successful.jsonObj()).
		Set("errored", s.Errored.jsonObj()).
		Set("incomplete", s.Incomplete.jsonObj()).
		Set("total", s.Total.jsonObj())
}

// schedulerStartSentinel stands for scheduler_start_time in a spooled
// request entry until the window's start is known (a JSON text never
// holds a raw NUL byte).
const schedulerStartSentinel = 0

// appendReq writes q's GenerativeRequestStats entry (the computed fields
// included) through e, with the sentinel byte for scheduler_start_time.
func appendReq(e *jsonx.Enc, q *glReq) {
	optF := func(v float64, ok bool) {
		if ok {
			e.Float(v)
		} else {
			e.Null()
		}
	}
	key := func(k string) { e.Key(k) }
	e.Obj()
	key("type_")
	e.Str("generative_request_stats")
	key("request_id")
	e.Str(q.id)
	key("response_id")
	e.Null()
	key("request_args")
	e.Null()
	key("output")
	e.Null()
	key("info")
	e.Obj()
	key("request_id")
	e.Str(q.id)
	key("conversation_id")
	e.Str(q.conv)
	key("turn_index")
	e.Int(int64(q.turn))
	key("status")
	if q.errored {
		e.Str("errored")
	} else {
		e.Str("completed")
	}
	key("scheduler_node_id")
	e.Int(0)
	key("scheduler_process_id")
	e.Int(0)
	key("scheduler_start_time")
	e.Raw([]byte{schedulerStartSentinel})
	key("timings")
	e.Obj()
	for _, k := range []string{"targeted_start", "queued"} {
		key(k)
		e.Float(q.queued)
	}
	for _, k := range []string{"dequeued", "scheduled_at", "resolve_start", "request_start"} {
		key(k)
		e.Float(q.start)
	}
	for _, k := range []string{"first_request_iteration", "first_token_iteration", "first_output_token_iteration"} {
		key(k)
		optF(q.first, q.hasTok)
	}
	for _, k := range []string{"last_token_iteration", "last_request_iteration"} {
		key(k)
		optF(q.last, q.hasTok)
	}
	key("request_iterations")
	e.Int(int64(q.iters))
	key("token_iterations")
	e.Int(int64(q.iters))
	for _, k := range []string{"request_end", "resolve_end", "finalized"} {
		key(k)
		e.Float(q.end)
	}
	e.EndObj()
	key("error")
	if q.errored {
		e.Str(q.err)
	} else {
		e.Null()
	}
	key("traceback")
	e.Null()
	key("started_at")
	e.Float(q.start)
	key("completed_at")
	e.Float(q.end)
	e.EndObj()
	key("input_metrics")
	e.Obj()
	key("text_tokens")
	e.Int(int64(q.prompt))
	key("cached_tokens")
	e.Int(int64(q.cached))
	key("total_tokens")
	e.Int(int64(q.prompt))
	e.EndObj()
	key("output_metrics")
	e.Obj()
	for _, k := range []string{"text_tokens", "total_tokens"} {
		key(k)
		if q.hasOutput {
			e.Int(int64(q.output))
		} else {
			e.Null()
		}
	}
	e.EndObj()
	key("request_start_time")
	e.Float(q.start)
	key("request_end_time")
	e.Float(q.end)
	key("request_latency")
	e.Float(q.latency())
	key("prompt_tokens")
	e.Int(int64(q.prompt))
	if ot, ok := q.outputTokens(); ok {
		key("output_tokens")
		e.Int(int64(ot))
		key("total_tokens")
		e.Int(int64(q.prompt + ot))
	} else {
		key("output_tokens")
		e.Null()
		key("total_tokens")
		e.Int(int64(q.prompt))
	}
	key("time_to_first_token_ms")
	optF(q.ttftMS())
	key("time_per_output_token_ms")
	optF(q.tpotMS())
	key("inter_token_latency_ms")
	optF(q.itlMS())
	key("tokens_per_second")
	key2 := "output_tokens_per_second"
	if lat := q.latency(); lat != 0 {
		ot, ok := q.outputTokens()
		e.Float(float64(q.prompt+ot) / lat)
		key(key2)
		optF(float64(ot)/lat, ok)
	} else {
		e.Null()
		key(key2)
		e.Null()
	}
	key("time_to_first_output_token_ms")
	optF(q.ttftMS())
	key("iter_tokens_per_iteration")
	optF(q.iterTokensPerIteration())
	key("output_tokens_per_iteration")
	optF(q.outputTokensPerIteration())
	e.EndObj()
}

// glStrategy is the scheduling strategy guidellm would name for the load.
func glStrategy(r *metrics.Result) *jsonx.Obj {
	switch {
	case r.MaxConcurrency > 0 && math.IsInf(r.RequestRate, 1):
		return jsonx.NewObj().Set("type_", "concurrent").Set("worker_count", 1).
			Set("max_concurrency", r.MaxConcurrency).Set("streams", r.MaxConcurrency).Set("rampup_duration", 0.0)
	case math.IsInf(r.RequestRate, 1) || r.RequestRate <= 0:
		return jsonx.NewObj().Set("type_", "throughput").Set("worker_count", 1).
			Set("max_concurrency", nil).Set("rampup_duration", 0.0)
	}
	kind := "poisson"
	if r.Burstiness == 0 || math.IsInf(r.Burstiness, 1) {
		kind = "constant"
	}
	var mc any
	if r.MaxConcurrency > 0 {
		mc = r.MaxConcurrency
	}
	return jsonx.NewObj().Set("type_", kind).Set("worker_count", 1).
		Set("max_concurrency", mc).Set("rate", r.RequestRate).Set("rampup_duration", 0.0)
}

// Writer streams the report into a directory: each request's entry is
// spooled as it finishes; Close compiles the metrics and writes ReportFile
// with the entries spliced in.
type Writer struct {
	dir      string
	run      metrics.RunInfo
	detailed bool
	list     requestLists
}

// requestLists is the spooled request entries and what the metrics need.
type requestLists struct {
	succ, errd   *spool.Spool
	nSucc, nErrd int
	log          vlog.Log // per request: start, queue, end−start, ttft, iters, in, out, ok
	n            int
	enc          *jsonx.Enc
}

func newLists(tempDir string, limit int) requestLists {
	l := requestLists{succ: spool.New(tempDir, limit), errd: spool.New(tempDir, limit),
		enc: jsonx.NewEnc(jsonx.PyIndent1, requestDepth)}
	if tempDir != "" {
		l.log.Spill(tempDir, vlog.MemLimit)
	}
	return l
}

// requestDepth is the nesting depth of a request entry in the report:
// report, benchmarks, benchmark, requests, successful, entry.
const requestDepth = 5

func (l *requestLists) add(p *metrics.RequestResult, run *metrics.RunInfo, detailed bool) error {
	q := newGLReq(p, run, detailed)
	sp, n := l.succ, &l.nSucc
	if q.errored {
		sp, n = l.errd, &l.nErrd
	}
	e := l.enc
	e.Reset()
	if *n > 0 {
		e.B = append(e.B, ',')
	}
	e.B = append(e.B, '\n')
	for range requestDepth {
		e.B = append(e.B, ' ')
	}
	appendReq(e, &q)
	(*n)++
	if _, err := sp.Write(e.B); err != nil {
		return err
	}
	ok := int64(0)
	if p.Success {
		ok = 1
	}
	l.log.Int(int64(p.Start))
	l.log.Int(int64(p.QueueTime))
	l.log.Int(int64(p.End - p.Start))
	l.log.Int(int64(p.TTFT))
	l.log.Int(int64(q.iters))
	l.log.Int(int64(p.InputTokens))
	l.log.Int(int64(p.OutputTokens))
	l.log.Int(ok)
	l.n++
	return nil
}

// requests rebuilds the stats of every request, in completion order, for
// the metrics (their ids, conversations and errors are not needed).
func (l *requestLists) requests(run *metrics.RunInfo) (succ, errd []*glReq) {
	rd := l.log.Reader()
	all := make([]glReq, l.n)
	for i := range all {
		var p metrics.RequestResult
		p.Start = time.Duration(rd.Int())
		p.QueueTime = time.Duration(rd.Int())
		p.End = p.Start + time.Duration(rd.Int())
		p.TTFT = time.Duration(rd.Int())
		iters := int(rd.Int())
		p.InputTokens = int(rd.Int())
		p.OutputTokens = int(rd.Int())
		p.Success = rd.Int() == 1
		all[i] = newGLReq(&p, run, false)
		all[i].iters = iters
		if p.Success {
			succ = append(succ, &all[i])
		} else {
			errd = append(errd, &all[i])
		}
	}
	return succ, errd
}

func (l *requestLists) close() {
	l.succ.Close()
	l.errd.Close()
	l.log.Close()
}

// splice writes one spooled list as the JSON array at depth.
func splice(sp *spool.Spool, n int, start []byte) jsonx.Splice {
	return jsonx.Splice{Write: func(w io.Writer, depth int) error {
		if n == 0 {
			_, err := io.WriteString(w, "[]")
			return err
		}
		if _, err := io.WriteString(w, "["); err != nil {
			return err
		}
		if err := sp.WriteTo(w, schedulerStartSentinel, start); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n"+strings.Repeat(" ", depth)+"]")
		return err
	}}
}

// NewWriter returns a writer of ReportFile in dir. detailed says the
// requests carry their chunk gaps (a Detailed recorder).
func NewWriter(dir string, run metrics.RunInfo, detailed bool) *Writer {
	return &Writer{dir: dir, run: run, detailed: detailed, list: newLists(dir, 0)}
}

// Request spools q's entry (see metrics.Sink).
func (w *Writer) Request(q *metrics.RequestResult) error {
	if err := w.list.add(q, &w.run, w.detailed); err != nil {
		return err
	}
	return w.list.log.Err()
}

// Close writes ReportFile for r, whose requests were all given to
// Request, and returns its path.
func (w *Writer) Close(r *metrics.Result) ([]string, error) {
	defer w.list.close()
	p := filepath.Join(w.dir, ReportFile)
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = writeReport(bw, &w.list, r, &w.run)
	if err == nil {
		err = w.list.log.Err()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return []string{p}, nil
}

// Abort drops the spooled entries.
func (w *Writer) Abort() { w.list.close() }

// Encode renders the report (ReportFile) of r's requests.
func Encode(r *metrics.Result, run *metrics.RunInfo) []byte {
	l := newLists("", math.MaxInt)
	defer l.close()
	for _, p := range r.InCompletionOrder() {
		l.add(p, run, r.Detailed) // in memory: cannot fail
	}
	var b bytes.Buffer
	writeReport(&b, &l, r, run)
	return b.Bytes()
}

// writeReport writes the report: the metrics compiled from the requests,
// then the spooled entries.
func writeReport(w io.Writer, l *requestLists, r *metrics.Result, run *metrics.RunInfo) error {
	succ, errd := l.requests(run)
	start, end, ok := glWindow(succ, errd)
	if !ok {
		start, end = run.UnixSeconds(0), run.UnixSeconds(0)
	}
	startText := jsonx.PyIndent1.Float(nil, start)
	model := run.ModelName(r)
	strategy := glStrategy(r)
	backend := jsonx.NewObj().Set("kind", "openai_http").Set("target", "blis://simulated").
		Set("model", model).Set("request_format", "/v1/completions")
	profile := jsonx.NewObj().Set("kind", strategy.Vals[0])
	data := jsonx.NewObj().Set("kind", "synthetic_text").Set("prompt_tokens", run.ISL).Set("output_tokens", run.OSL)
	report := jsonx.NewObj().
		Set("metadata", jsonx.NewObj().Set("version", 2).Set("guidellm_version", run.ToolVersion()).
			Set("python_version", "").Set("platform", "blis")).
		Set("config", jsonx.NewObj().
			Set("metadata", jsonx.NewObj().Set("labels", jsonx.NewObj())).
			Set("spec", jsonx.NewObj().
				Set("backend", backend).
				Set("profile", profile).
				Set("constraints", []any{jsonx.NewObj().Set("kind", "max_requests").Set("stopping_scope", "current").
					Set("count", r.Completed+r.Failed)}).
				Set("data", []any{data}).
				Set("seed", jsonx.NewObj().Set("kind", "static").Set("value", run.Seed)).
				Set("outputs", []any{jsonx.NewObj().Set("kind", "json").Set("path", ReportFile)})))

	ms := glMetrics(succ, errd, start, end)
	metricsObj := jsonx.NewObj().Set("request_totals", jsonx.NewObj().
		Set("successful", len(succ)).Set("errored", len(errd)).Set("incomplete", 0).Set("total", len(succ)+len(errd)))
	for i := range ms {
		metricsObj.Set(ms[i].name, ms[i].st.jsonObj())
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
	runID := run.RunID(r)
	bench := jsonx.NewObj().
		Set("type_", "generative_benchmark").
		Set("config", jsonx.NewObj().
			Set("id_", runID+"-0").Set("run_id", runID).Set("run_index", 0).
			Set("strategy", strategy).Set("constraints", jsonx.NewObj()).Set("sample_size", nil).
			Set("warmup", jsonx.NewObj().Set("percent", nil).Set("value", nil).Set("mode", "prefer_duration")).
			Set("cooldown", jsonx.NewObj().Set("percent", nil).Set("value", nil).Set("mode", "prefer_duration")).
			Set("prefer_response_metrics", true).
			Set("profile", profile).
			Set("requests", jsonx.NewObj().Set("kind", "synthetic_text").Set("samples", -1)).
			Set("backend", backend).
			Set("environment", jsonx.NewObj().Set("type", "NonDistributedEnvironment"))).
		Set("scheduler_state", jsonx.NewObj().
			Set("node_id", 0).Set("num_processes", 1).
			Set("start_time", start).Set("end_time", end).
			Set("start_requests_time", start).Set("end_requests_time", end).
			Set("end_queuing_time", end).Set("end_queuing_constraints", jsonx.NewObj()).
			Set("end_processing_time", end).Set("end_processing_constraints", jsonx.NewObj()).
			Set("scheduler_constraints", jsonx.NewObj()).
			Set("progress", jsonx.NewObj().Set("remaining_requests", 0.0).Set("total_requests", float64(n)).
				Set("remaining_duration", nil).Set("total_duration", nil).Set("stop_time", end)).
			Set("created_requests", n).Set("queued_requests", 0).Set("pending_requests", 0).
			Set("processing_requests", 0).Set("processed_requests", n).
			Set("successful_requests", len(succ)).Set("errored_requests", len(errd)).Set("cancelled_requests", 0)).
		Set("scheduler_metrics", jsonx.NewObj().
			Set("start_time", start).Set("request_start_time", start).
			Set("measure_start_time", start).Set("measure_end_time", end).
			Set("request_end_time", end).Set("end_time", end).
			Set("requests_made", jsonx.NewObj().Set("successful", len(succ)).Set("errored", len(errd)).
				Set("incomplete", 0).Set("total", n)).
			Set("queued_time_avg", meanOf(func(q *glReq) float64 { return q.start - q.queued })).
			Set("resolve_start_delay_avg", 0.0).Set("resolve_targeted_start_delay_avg", 0.0).
			Set("request_start_delay_avg", 0.0).Set("request_targeted_start_delay_avg", 0.0).
			Set("request_time_avg", meanOf(func(q *glReq) float64 { return q.latency() })).
			Set("resolve_end_delay_avg", 0.0).
			Set("resolve_time_avg", meanOf(func(q *glReq) float64 { return q.latency() })).
			Set("finalized_delay_avg", 0.0).Set("processed_delay_avg", 0.0)).
		Set("metrics", metricsObj).
		Set("requests", jsonx.NewObj().
			Set("successful", splice(l.succ, l.nSucc, startText)).
			Set("errored", splice(l.errd, l.nErrd, startText)).
			Set("incomplete", []any{}).Set("total", nil)).
		Set("start_time", start).Set("end_time", end).Set("duration", end-start).
		Set("warmup_duration", 0.0).Set("cooldown_duration", 0.0)
	report.Set("benchmarks", []any{bench})
	if err := jsonx.EncodeTo(w, report, jsonx.PyIndent1); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
