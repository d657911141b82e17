// Package inferenceperf writes and reads inference-perf's lifecycle-metrics
// reports, so that the llm-d / Gateway API Inference Extension tooling
// works on BLIS output. The reports are mirrored from
// kubernetes-sigs/inference-perf (the llm-d / Gateway API Inference
// Extension benchmark client):
//
//   - inference_perf/reportgen/base.py @ 010d12fb: summarize_requests (the
//     summary_lifecycle_metrics.json and stage_N_lifecycle_metrics.json
//     documents, ResponsesSummary.model_dump()), summarize (mean, min, max,
//     then np.percentile per configured percentile, keyed "median" for 50
//     and f"p{p:g}" otherwise), compute_request_latency_metrics (TTFT, TPOT,
//     ITL, NTPOT), build_error_counts / make_concise_label (failures.by_label)
//     and build_per_request_lifecycle_entry (per_request_lifecycle_metrics.json);
//   - inference_perf/apis/base.py @ 03e89d4a: RequestLifecycleMetric,
//     InferenceInfo, StreamedResponseMetrics, ErrorResponseInfo;
//   - inference_perf/payloads/payload.py @ 4a431638: RequestMetrics {text
//     {input_tokens}, image, video, audio};
//   - inference_perf/config (RequestLifecycleMetricsReportConfig): default
//     percentiles [0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9];
//   - inference_perf/client/filestorage/local.py: json.dumps(indent=2).
//
// Every time is float seconds on the client's monotonic clock
// (time.perf_counter); BLIS writes simulated seconds since time 0. The
// tool's definitions, per successful request with streamed token times
// (output_token_times, one entry per output token, a chunk's arrival time
// repeated for each token it carried; more than one entry needed):
//
//	request_latency                  = end_time − start_time
//	time_to_first_token              = output_token_times[0] − start_time
//	time_per_output_token            = (output_token_times[-1] − output_token_times[0]) / (output_tokens − 1)
//	inter_token_latency              = every consecutive output_token_times delta (0 within a chunk)
//	normalized_time_per_output_token = request_latency / output_tokens (0 with no tokens)
//
// all in seconds. chunk_times lists the arrival of each content-bearing
// SSE chunk (streaming_parser.py), so its gaps are the streamed-chunk gaps
// other formats call ITL.
//
// BLIS writes what it knows: no prompt or response text (request is a
// request body with an empty prompt, response null, response_chunks
// empty, so inference-perf's tokenizer correction leaves the token times
// as written), server_usage as vLLM reports it (with the prefix-cache hits
// as prompt_tokens_details.cached_tokens), and a request's output tokens
// spread over its chunks as evenly as possible (earlier chunks first).
//
// Requests are listed in completion order, as inference-perf collects them
// (inference_perf/client/requestdatacollector/local.py @ 0acaa9c1:
// record_metric appends each finished request's metric). The Writer writes
// each entry of the per-request file as the request finishes and keeps a
// few varints per request (and per chunk) for the summary and stage
// reports it writes at Close; computing them holds each statistic's
// values, 8 bytes per request (per token for inter_token_latency), for a
// moment.
package inferenceperf

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
	"blis/metrics/internal/vlog"
)

// Name is the format's name, as --export takes it.
const Name = "inference-perf"

// Report file names.
const (
	PerRequestFile   = "per_request_lifecycle_metrics.json"
	SummaryFile      = "summary_lifecycle_metrics.json"
	StageFilePattern = "stage_%d_lifecycle_metrics.json"
	lifecycleSuffix  = "_lifecycle_metrics.json"
	maxErrorMessages = 100
)

// ipPercentiles is the tool's default percentile list.
var ipPercentiles = []float64{0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9}

var ipStageRE = regexp.MustCompile(`^stage_([0-9]{1,9})_lifecycle_metrics\.json$`)

// ipPctKey is summarize's key for percentile p.
func ipPctKey(p float64) string {
	if p == 50 {
		return "median"
	}
	return "p" + strconv.FormatFloat(p, 'g', 6, 64)
}

// ipReq is one RequestLifecycleMetric as written.
type ipReq struct {
	start, end, scheduled float64
	session               string
	hasSession            bool
	input, cached         int
	ok                    bool
	out                   int
	chunkTimes            []float64
	tokenTimes            []float64
	startNS, endNS        int64   // start and end, ns (start and end are these in seconds)
	chunkNS               []int64 // chunkTimes in ns
	errType, errMsg       string
	request               string
	index                 int64 // the request's place in the timed run: its load stage
}

// ipErrorType is the ErrorResponseInfo.error_type inference-perf would
// record for a BLIS failure: the client's timeout, a stream without
// content, or vLLM's HTTP 400 for a request it refuses.
func ipErrorType(msg string) string {
	switch {
	case strings.HasPrefix(msg, "timeout"):
		return "TimeoutError"
	case msg == metrics.NoChunkError:
		return "EmptyStreamError"
	}
	return "HTTP Error 400"
}

// ipBody is the request body BLIS writes for a request asking for out
// tokens (json.dumps of the OpenAI completions request).
func ipBody(model string, out int) string {
	e := jsonx.NewEnc(jsonx.PyOneLine, 0)
	e.Obj()
	e.Key("model")
	e.Str(model)
	e.Key("prompt")
	e.Str("")
	e.Key("max_tokens")
	e.Int(int64(out))
	e.Key("ignore_eos")
	e.Bool(true)
	e.Key("stream")
	e.Bool(true)
	e.Key("stream_options")
	e.Obj()
	e.Key("include_usage")
	e.Bool(true)
	e.EndObj()
	e.EndObj()
	return string(e.B)
}

// fill sets q to the record of p, reusing q's slices.
func (q *ipReq) fill(p *metrics.RequestResult, run *metrics.RunInfo, body string) {
	*q = ipReq{chunkTimes: q.chunkTimes[:0], tokenTimes: q.tokenTimes[:0], chunkNS: q.chunkNS[:0],
		startNS: int64(p.Start), endNS: int64(p.End),
		start: metrics.Seconds(p.Start), end: metrics.Seconds(p.End), scheduled: metrics.Seconds(p.Start - p.QueueTime),
		input: p.InputTokens, cached: p.CachedTokens, ok: p.Success, request: body, index: p.Index}
	if run.MultiTurn {
		conv, _ := run.ConversationOf(p)
		q.session, q.hasSession = strconv.FormatInt(conv, 10), true
	}
	if !p.Success {
		q.errType, q.errMsg = ipErrorType(p.Error), p.Error
		return
	}
	q.out = p.OutputTokens
	t := p.Start + p.TTFT
	q.chunkTimes = append(q.chunkTimes, metrics.Seconds(t))
	q.chunkNS = append(q.chunkNS, int64(t))
	for _, g := range p.ITLs {
		t += g
		q.chunkTimes = append(q.chunkTimes, metrics.Seconds(t))
		q.chunkNS = append(q.chunkNS, int64(t))
	}
	// Spread the tokens: chunk j carries ceil((j+1)k/n) − ceil(jk/n).
	n, k := len(q.chunkTimes), p.OutputTokens
	prev := 0
	for j := range n {
		upto := ((j+1)*k + n - 1) / n
		for range upto - prev {
			q.tokenTimes = append(q.tokenTimes, q.chunkTimes[j])
		}
		prev = upto
	}
}

// aggregator keeps, per request in completion order, what the summary
// reports need: its times, lengths and chunk gaps as varints (failed
// requests' messages as indices into a table of distinct ones).
type aggregator struct {
	run    *metrics.RunInfo
	model  string
	bodies map[int]string // request body by max_tokens
	log    vlog.Log
	n      int
	msgs   []string
	msgID  map[string]int64
	q      ipReq
	sizes  ipSizes   // the whole run's
	stage  []ipSizes // each load stage's (RunInfo.Stages)
}

// ipSizes counts what an ipSummary's value lists will hold, to size them.
type ipSizes struct{ ok, failed, tokens int }

func (z *ipSizes) add(p *metrics.RequestResult) {
	if p.Success {
		z.ok++
		z.tokens += p.OutputTokens
	} else {
		z.failed++
	}
}

func newAggregator(run *metrics.RunInfo, model string) *aggregator {
	return &aggregator{run: run, model: model, bodies: map[int]string{}, msgID: map[string]int64{},
		stage: make([]ipSizes, len(run.Stages))}
}

// body is ipBody for out tokens, kept for the first 4096 lengths seen.
func (a *aggregator) body(out int) string {
	body, ok := a.bodies[out]
	if !ok {
		body = ipBody(a.model, out)
		if len(a.bodies) < 1<<12 {
			a.bodies[out] = body
		}
	}
	return body
}

// record fills a.q with p's record and logs what the summaries need.
func (a *aggregator) record(p *metrics.RequestResult) *ipReq {
	a.q.fill(p, a.run, a.body(p.OutputTokens))
	l := &a.log
	l.Int(int64(p.Start))
	l.Int(int64(p.End - p.Start))
	l.Int(int64(p.QueueTime))
	l.Int(int64(p.InputTokens))
	l.Int(int64(p.CachedTokens))
	l.Int(int64(p.OutputTokens))
	l.Int(p.Index)
	l.Uint(uint64(p.Session))
	l.Int(int64(p.Turn))
	a.sizes.add(p)
	if len(a.stage) > 0 {
		a.stage[metrics.StageOf(a.run.Stages, p.Index)].add(p)
	}
	if p.Success {
		l.Int(-1)
		l.Int(int64(p.TTFT))
		l.Int(int64(len(p.ITLs)))
		for _, g := range p.ITLs {
			l.Int(int64(g))
		}
	} else {
		id, ok := a.msgID[p.Error]
		if !ok {
			id = int64(len(a.msgs))
			a.msgs = append(a.msgs, p.Error)
			a.msgID[p.Error] = id
		}
		l.Int(id)
	}
	a.n++
	return &a.q
}

// each calls fn with every logged request's record, in order; the record
// and its slices are reused between calls.
func (a *aggregator) each(fn func(q *ipReq)) {
	rd := a.log.Reader()
	var q ipReq
	var gaps []time.Duration
	for range a.n {
		var p metrics.RequestResult
		p.Start = time.Duration(rd.Int())
		p.End = p.Start + time.Duration(rd.Int())
		p.QueueTime = time.Duration(rd.Int())
		p.InputTokens = int(rd.Int())
		p.CachedTokens = int(rd.Int())
		p.OutputTokens = int(rd.Int())
		p.Index = rd.Int()
		p.Session = rd.Uint()
		p.Turn = int(rd.Int())
		if id := rd.Int(); id >= 0 {
			p.Error = a.msgs[id]
		} else {
			p.Success = true
			p.TTFT = time.Duration(rd.Int())
			gaps = gaps[:0]
			for range rd.Int() {
				gaps = append(gaps, time.Duration(rd.Int()))
			}
			p.ITLs = gaps
		}
		q.fill(&p, a.run, a.body(p.OutputTokens))
		fn(&q)
	}
}

// ipSummarize is summarize(items, percentiles): nil (null) when empty.
func ipSummarize(items []float64) *jsonx.Obj {
	if len(items) == 0 {
		return nil
	}
	s := slices.Clone(items)
	numpy.SortFloats(s)
	o := jsonx.NewObj().Set("mean", numpy.Mean(items)).Set("min", s[0]).Set("max", s[len(s)-1])
	for _, p := range ipPercentiles {
		o.Set(ipPctKey(p), numpy.PercentileSorted(s, p))
	}
	return o
}

// orNil keeps a nil *jsonx.Obj a JSON null.
func orNil(o *jsonx.Obj) any {
	if o == nil {
		return nil
	}
	return o
}

// promptTokens accumulates summarize_prompt_token_usage.
type promptTokens struct {
	total, cached float64
	per           []float64
}

func (pt *promptTokens) add(q *ipReq) {
	pt.total += float64(q.input)
	pt.per = append(pt.per, float64(q.input))
	if q.ok {
		pt.cached += float64(q.cached)
	}
}

// obj is summarize_prompt_token_usage's result.
func (pt *promptTokens) obj() *jsonx.Obj {
	o := jsonx.NewObj().Set("total", pt.total).Set("cached", pt.cached).Set("uncached", max(pt.total-pt.cached, 0.0))
	if d := ipSummarize(pt.per); d != nil {
		for i, k := range d.Keys {
			o.Set(k, d.Vals[i])
		}
	}
	return o
}

// ipLabel is make_concise_label for the error types BLIS writes.
var (
	ipTimeoutRE = regexp.MustCompile(`(?i)timeout|timed.?out`)
	ipConnectRE = regexp.MustCompile(`(?i)connection.?refused|connect`)
	ipContextRE = regexp.MustCompile(`(?i)context.window|context length|maximum context|max.?tokens|token.?limit`)
	ipJSONRE    = regexp.MustCompile(`(?i)invalid.?json|json.?parse|malformed.?json|unexpected.?token|expecting value|unterminated string|expecting ',' delimiter`)
	ipModelRE   = regexp.MustCompile(`(?i)model.?not.?found|no such model`)
	ipHTTPCodes = map[string]string{"429": "Rate Limit", "500": "Internal Server Error", "502": "Bad Gateway",
		"503": "Service Unavailable", "504": "Gateway Timeout"}
)

func ipLabel(errType, msg string) string {
	if strings.HasPrefix(errType, "HTTP Error ") {
		// The status code is the last field ("HTTP Error 400").
		f := strings.Fields(errType)
		code := f[len(f)-1]
		if l, ok := ipHTTPCodes[code]; ok {
			return code + " - " + l
		}
		for _, x := range []struct {
			re    *regexp.Regexp
			label string
		}{{ipContextRE, "Context Window"}, {ipJSONRE, "Invalid JSON"}, {ipTimeoutRE, "Timeout"}, {ipModelRE, "Model Not Found"}} {
			if x.re.MatchString(msg) {
				return code + " - " + x.label
			}
		}
		return code + " - other"
	}
	if ipTimeoutRE.MatchString(msg) {
		return "Timeout"
	}
	if ipConnectRE.MatchString(msg) {
		return "Connection Error"
	}
	return strings.TrimSpace(strings.ToLower(errType))
}

// errorCounts accumulates build_error_counts over the failed requests.
type errorCounts struct {
	labels []string
	counts map[string]int
	msgs   map[string][]*msgIDs
}

type msgIDs struct {
	msg string
	ids []string
}

func (ec *errorCounts) add(q *ipReq) {
	if ec.counts == nil {
		ec.counts, ec.msgs = map[string]int{}, map[string][]*msgIDs{}
	}
	l := ipLabel(q.errType, q.errMsg)
	if ec.counts[l] == 0 {
		ec.labels = append(ec.labels, l)
	}
	ec.counts[l]++
	var m *msgIDs
	for _, x := range ec.msgs[l] {
		if x.msg == q.errMsg {
			m = x
		}
	}
	switch {
	case m != nil:
		if q.hasSession {
			m.ids = append(m.ids, q.session)
		}
	case len(ec.msgs[l]) < maxErrorMessages:
		m = &msgIDs{msg: q.errMsg}
		if q.hasSession {
			m.ids = []string{q.session}
		}
		ec.msgs[l] = append(ec.msgs[l], m)
	}
}

// obj is build_error_counts' result.
func (ec *errorCounts) obj() *jsonx.Obj {
	labels, counts, msgs := slices.Clone(ec.labels), ec.counts, ec.msgs
	sort.SliceStable(labels, func(a, b int) bool { return counts[labels[a]] > counts[labels[b]] })
	o := jsonx.NewObj()
	for _, l := range labels {
		var list []any
		for _, m := range msgs[l] {
			e := jsonx.NewObj().Set("message", m.msg)
			if len(m.ids) > 0 {
				ids := make([]any, len(m.ids))
				for i, id := range m.ids {
					ids[i] = id
				}
				e.Set("session_ids", ids)
			}
			list = append(list, e)
		}
		if list == nil {
			list = []any{}
		}
		o.Set(l, jsonx.NewObj().Set("count", counts[l]).Set("messages", list))
	}
	return o
}

// ipSummary accumulates summarize_requests over the requests added to it:
// the whole run's, or one load stage's.
type ipSummary struct {
	n, nSucc, nFailed          int
	minStart, maxStart, maxEnd float64
	delays, failLat            []float64
	lat, ntpot, tpot, ttft     []float64
	itl, sizes, outTok, zeros  []float64
	inSum, outSum              float64
	succPrompt, failPrompt     promptTokens
	errs                       errorCounts
}

// newIPSummary sizes the value lists for the requests size counts.
func newIPSummary(size ipSizes) *ipSummary {
	list := func(n int) []float64 { return make([]float64, 0, n) }
	return &ipSummary{
		minStart: math.Inf(1), maxStart: math.Inf(-1), maxEnd: math.Inf(-1),
		delays: list(size.ok + size.failed), failLat: list(size.failed),
		lat: list(size.ok), ntpot: list(size.ok), tpot: list(size.ok), ttft: list(size.ok),
		itl: list(size.tokens), sizes: list(size.ok), outTok: list(size.ok), zeros: list(size.ok),
		succPrompt: promptTokens{per: list(size.ok)}, failPrompt: promptTokens{per: list(size.failed)},
	}
}

func (s *ipSummary) add(q *ipReq) {
	s.n++
	s.minStart, s.maxStart, s.maxEnd = min(s.minStart, q.start), max(s.maxStart, q.start), max(s.maxEnd, q.end)
	s.delays = append(s.delays, q.start-q.scheduled)
	if !q.ok {
		s.nFailed++
		s.failLat = append(s.failLat, q.end-q.start)
		s.failPrompt.add(q)
		s.errs.add(q)
		return
	}
	s.nSucc++
	l := q.end - q.start
	s.lat = append(s.lat, l)
	if q.out > 0 {
		s.ntpot = append(s.ntpot, l/float64(q.out))
	} else {
		s.ntpot = append(s.ntpot, 0.0)
	}
	if tt := q.tokenTimes; len(tt) > 1 {
		s.ttft = append(s.ttft, tt[0]-q.start)
		if q.out > 1 {
			s.tpot = append(s.tpot, (tt[len(tt)-1]-tt[0])/float64(q.out-1))
		}
		for j := 1; j < len(tt); j++ {
			s.itl = append(s.itl, tt[j]-tt[j-1])
		}
	}
	s.sizes = append(s.sizes, float64(len(q.request)))
	s.outTok = append(s.outTok, float64(q.out))
	s.zeros = append(s.zeros, 0.0)
	s.inSum += float64(q.input)
	s.outSum += float64(q.out)
	s.succPrompt.add(q)
}

// compile is summarize_requests over the requests added (at least one),
// for the summary (stageRate and concurrency nil) or a stage's report (its
// rate and concurrency): the two differ only in the load summary, so the
// requests are summarised once for both. The function it returns holds
// the summaries, not the value lists.
func (s *ipSummary) compile() func(stageRate *float64, concurrency *int) *jsonx.Obj {
	total := s.maxEnd - s.minStart
	n, minStart, maxStart := s.n, s.minStart, s.maxStart // for the function returned, which must not hold s
	scheduleDelay := orNil(ipSummarize(s.delays))

	rate := func(x float64) float64 {
		if total > 0 {
			return x / total
		}
		return 0.0
	}
	// output_len and output_tokens summarise the same values (BLIS's
	// token counts are the server's), and the image, video and audio
	// counts are zeros: each summarised once.
	outStats, zeroCount := ipSummarize(s.outTok), orNil(ipSummarize(s.zeros))
	outputTokens := jsonx.NewObj().Set("total", s.outSum)
	if outStats != nil {
		for i, k := range outStats.Keys {
			outputTokens.Set(k, outStats.Vals[i])
		}
	}
	successes := jsonx.NewObj().
		Set("count", s.nSucc).
		Set("latency", jsonx.NewObj().
			Set("request_latency", orNil(ipSummarize(s.lat))).
			Set("normalized_time_per_output_token", orNil(ipSummarize(s.ntpot))).
			Set("time_per_output_token", orNil(ipSummarize(s.tpot))).
			Set("time_to_first_token", orNil(ipSummarize(s.ttft))).
			Set("inter_token_latency", orNil(ipSummarize(s.itl)))).
		Set("throughput", jsonx.NewObj().
			Set("input_tokens_per_sec", rate(s.inSum)).
			Set("output_tokens_per_sec", rate(s.outSum)).
			Set("total_tokens_per_sec", rate(s.inSum+s.outSum)).
			Set("requests_per_sec", rate(float64(s.nSucc))).
			Set("images_per_sec", rate(0)).Set("videos_per_sec", rate(0)).Set("audios_per_sec", rate(0))).
		Set("request_size_bytes", orNil(ipSummarize(s.sizes))).
		Set("image", jsonx.NewObj().Set("count", zeroCount).Set("pixels", nil).Set("bytes", nil).
			Set("aspect_ratio", nil)).
		Set("video", jsonx.NewObj().Set("count", zeroCount).Set("frames", nil).Set("pixels", nil).
			Set("bytes", nil).Set("aspect_ratio", nil)).
		Set("audio", jsonx.NewObj().Set("count", zeroCount).Set("seconds", nil).Set("bytes", nil)).
		Set("prompt_tokens", s.succPrompt.obj()).
		Set("output_len", orNil(outStats)).
		Set("output_tokens", outputTokens).
		Set("token_count_mismatches", 0).
		Set("client_fallback_requests", jsonx.NewObj().Set("prompt", 0).Set("output", 0))
	failures := jsonx.NewObj().
		Set("count", s.nFailed).
		Set("request_latency", orNil(ipSummarize(s.failLat))).
		Set("prompt_tokens", s.failPrompt.obj()).
		Set("by_label", s.errs.obj())
	return func(stageRate *float64, concurrency *int) *jsonx.Obj {
		load := jsonx.NewObj().Set("count", n).Set("schedule_delay", scheduleDelay)
		if stageRate != nil {
			send := maxStart - minStart
			achieved := 0.0
			if send > 0 {
				achieved = float64(n) / send
			}
			load.Set("send_duration", send).Set("requested_rate", *stageRate).Set("achieved_rate", achieved)
			if concurrency != nil {
				load.Set("concurrency", *concurrency)
			}
		}
		return jsonx.NewObj().
			Set("benchmark_time_seconds", total).
			Set("load_summary", load).
			Set("successes", successes).
			Set("failures", failures)
	}
}

// appendEntry writes build_per_request_lifecycle_entry with the default
// fields (request, response, info with response_chunks) through e.
func appendEntry(e *jsonx.Enc, q *ipReq) {
	e.Obj()
	e.Key("start_time")
	e.FloatRatio(q.start, q.startNS, 9)
	e.Key("end_time")
	e.FloatRatio(q.end, q.endNS, 9)
	if q.hasSession {
		e.Key("session_id")
		e.Str(q.session)
	}
	e.Key("request")
	e.Str(q.request)
	e.Key("response")
	e.Null()
	e.Key("info")
	e.Obj()
	e.Key("request_metrics")
	e.Obj()
	e.Key("text")
	e.Obj()
	e.Key("input_tokens")
	e.Int(int64(q.input))
	e.EndObj()
	for _, k := range []string{"image", "video", "audio"} {
		e.Key(k)
		e.Null()
	}
	e.EndObj()
	e.Key("response_metrics")
	if q.ok {
		e.Obj()
		e.Key("output_tokens")
		e.Int(int64(q.out))
		e.Key("server_usage")
		e.Obj()
		e.Key("prompt_tokens")
		e.Int(int64(q.input))
		e.Key("total_tokens")
		e.Int(int64(q.input + q.out))
		e.Key("completion_tokens")
		e.Int(int64(q.out))
		e.Key("prompt_tokens_details")
		e.Obj()
		e.Key("cached_tokens")
		e.Int(int64(q.cached))
		e.EndObj()
		e.EndObj()
		e.Key("response_chunks")
		e.Arr()
		e.EndArr()
		e.Key("chunk_times")
		from := len(e.B)
		e.Arr()
		for j, t := range q.chunkTimes {
			e.FloatRatio(t, q.chunkNS[j], 9)
		}
		e.EndArr()
		to := len(e.B)
		e.Key("output_token_times")
		if len(q.tokenTimes) == len(q.chunkTimes) {
			// One token per chunk: the same times, the same text.
			e.Raw(e.B[from:to:to])
		} else {
			e.Arr()
			for _, t := range q.tokenTimes {
				e.Float(t)
			}
			e.EndArr()
		}
		e.EndObj()
	} else {
		e.Null()
	}
	e.Key("extra_info")
	e.Obj()
	e.EndObj()
	e.Key("lora_adapter")
	e.Null()
	e.Key("graph_event_id")
	e.Null()
	e.Key("labels")
	e.Obj()
	e.EndObj()
	e.Key("retries_attempted")
	e.Int(0)
	e.Key("retries_recovered")
	e.Bool(false)
	e.Key("input_tokens")
	e.Int(int64(q.input))
	e.EndObj()
	e.Key("error")
	if q.ok {
		e.Null()
	} else {
		e.Obj()
		e.Key("error_type")
		e.Str(q.errType)
		e.Key("error_msg")
		e.Str(q.errMsg)
		e.EndObj()
	}
	e.EndObj()
}

// Writer streams the reports into a directory: each request's entry goes
// to PerRequestFile as it finishes; Close writes the summary and the
// stage report. Requests must come from a Detailed recorder (the entries
// list every chunk time).
type Writer struct {
	dir string
	run metrics.RunInfo
	out *jsonx.File
	agg *aggregator
}

// NewWriter creates PerRequestFile in dir, for requests to RunInfo's
// model.
func NewWriter(dir string, run metrics.RunInfo) (*Writer, error) {
	out, err := jsonx.CreateFile(filepath.Join(dir, PerRequestFile), jsonx.PyIndent2, 1)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, run: run, out: out}
	w.agg = newAggregator(&w.run, run.Model)
	w.agg.log.Spill(dir, vlog.MemLimit)
	return w, nil
}

// appendListEntry writes q as the next element of the per-request list.
func appendListEntry(e *jsonx.Enc, q *ipReq, first bool) {
	e.Reset()
	if first {
		e.B = append(e.B, '[')
	} else {
		e.B = append(e.B, ',')
	}
	e.B = append(e.B, "\n  "...)
	appendEntry(e, q)
}

// endList closes the per-request list of n entries.
func endList(n int) string {
	if n == 0 {
		return "[]"
	}
	return "\n]"
}

// Request writes q's entry (see metrics.Sink).
func (w *Writer) Request(p *metrics.RequestResult) error {
	q := w.agg.record(p)
	appendListEntry(w.out.Enc, q, w.agg.n == 1)
	if err := w.out.Write(); err != nil {
		return err
	}
	return w.agg.log.Err()
}

// Close finishes PerRequestFile and, when there were requests, writes
// SummaryFile and the stage report for r, whose requests were all given
// to Request. It returns the files written.
func (w *Writer) Close(r *metrics.Result) ([]string, error) {
	defer w.agg.log.Close()
	err := w.out.Close(endList(w.agg.n))
	paths := []string{filepath.Join(w.dir, PerRequestFile)}
	if err != nil || w.agg.n == 0 {
		return paths, err
	}
	sum, stages := w.agg.reports(r)
	if err := w.agg.log.Err(); err != nil {
		return paths, err
	}
	paths = append(paths, filepath.Join(w.dir, SummaryFile))
	if err := os.WriteFile(paths[1], sum, 0o644); err != nil {
		return paths[:1], err
	}
	for k, stage := range stages {
		if stage == nil {
			continue
		}
		p := filepath.Join(w.dir, fmt.Sprintf(StageFilePattern, k))
		if err := os.WriteFile(p, stage, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Abort closes PerRequestFile unfinished.
func (w *Writer) Abort() {
	w.out.Abort()
	w.agg.log.Close()
}

// reports renders the summary and each stage's report (nil for a stage
// without requests): one stage, the
// whole run, unless the run had inference-perf load stages (RunInfo.Stages),
// whose reports cover their own requests at their own rates, as
// inference-perf writes stage_N_lifecycle_metrics.json per stage
// (reportgen/base.py, 2026). A stage that finished no request has no file,
// as in inference-perf.
func (a *aggregator) reports(r *metrics.Result) (summary []byte, stages [][]byte) {
	enc := func(v any) []byte {
		var b bytes.Buffer
		jsonx.Encode(&b, v, jsonx.PyIndent2)
		return b.Bytes()
	}
	whole := newIPSummary(a.sizes)
	a.each(whole.add)
	report := whole.compile()
	summary = enc(report(nil, nil))
	var conc *int
	if a.run.Stages == nil {
		var rate *float64
		if !math.IsInf(r.RequestRate, 0) && !math.IsNaN(r.RequestRate) && r.RequestRate > 0 {
			rate = &r.RequestRate
		}
		if rate != nil && r.MaxConcurrency > 0 {
			conc = &r.MaxConcurrency
		}
		return summary, [][]byte{enc(report(rate, conc))}
	}
	if r.MaxConcurrency > 0 {
		conc = &r.MaxConcurrency
	}
	// One more pass hands each request to its stage's summary; together
	// they hold what the whole run's did.
	per := make([]*ipSummary, len(a.stage))
	for k, size := range a.stage {
		if size.ok+size.failed > 0 {
			per[k] = newIPSummary(size)
		}
	}
	a.each(func(q *ipReq) { per[metrics.StageOf(a.run.Stages, q.index)].add(q) })
	stages = make([][]byte, len(per))
	for k, s := range per {
		if s == nil {
			continue
		}
		rate := a.run.Stages[k].Rate
		stages[k] = enc(s.compile()(&rate, conc))
	}
	return summary, stages
}

// Encode renders the report files of r's requests (in completion order):
// the per-request list (PerRequestFile) and, when there are requests, the
// summary (SummaryFile) and each stage's report (StageFilePattern with the
// stage's index; nil for a stage without requests); summary and stages are
// nil without requests. The Result must be Detailed.
func Encode(r *metrics.Result, run *metrics.RunInfo) (perRequest, summary []byte, stages [][]byte) {
	a := newAggregator(run, run.ModelName(r))
	e := jsonx.NewEnc(jsonx.PyIndent2, 1)
	var b bytes.Buffer
	for _, p := range r.InCompletionOrder() {
		q := a.record(p)
		appendListEntry(e, q, a.n == 1)
		b.Write(e.B)
	}
	b.WriteString(endList(a.n))
	if a.n == 0 {
		return b.Bytes(), nil, nil
	}
	summary, stages = a.reports(r)
	return b.Bytes(), summary, stages
}

// encodeIPSummary renders the summary report of r's requests.
func encodeIPSummary(r *metrics.Result, run *metrics.RunInfo) []byte {
	a := newAggregator(run, run.ModelName(r))
	for _, p := range r.InCompletionOrder() {
		a.record(p)
	}
	var b bytes.Buffer
	s := newIPSummary(a.sizes)
	a.each(s.add)
	jsonx.Encode(&b, s.compile()(nil, nil), jsonx.PyIndent2)
	return b.Bytes()
}
