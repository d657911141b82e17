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
package inferenceperf

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
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
	errType, errMsg       string
	request               string
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

// ipRequests builds the per-request records from the Result (which must be
// Detailed for the chunk times).
func ipRequests(r *metrics.Result, run *metrics.RunInfo) []*ipReq {
	model := run.ModelName(r)
	out := make([]*ipReq, len(r.Requests))
	for i := range r.Requests {
		p := &r.Requests[i]
		q := &ipReq{
			start: metrics.Seconds(p.Start), end: metrics.Seconds(p.End), scheduled: metrics.Seconds(p.Start - p.QueueTime),
			input: p.InputTokens, cached: p.CachedTokens, ok: p.Success,
		}
		if run.Conversation != nil {
			conv, _ := run.ConversationOf(p.Index)
			q.session, q.hasSession = strconv.FormatInt(conv, 10), true
		}
		body := jsonx.NewObj().Set("model", model).Set("prompt", "").Set("max_tokens", p.OutputTokens).
			Set("ignore_eos", true).Set("stream", true).
			Set("stream_options", jsonx.NewObj().Set("include_usage", true))
		var b bytes.Buffer
		jsonx.Encode(&b, body, jsonx.PyOneLine)
		q.request = b.String()
		if !p.Success {
			q.errType, q.errMsg = ipErrorType(p.Error), p.Error
			out[i] = q
			continue
		}
		q.out = p.OutputTokens
		t := p.Start + p.TTFT
		chunks := []time.Duration{t}
		for _, g := range p.ITLs {
			t += g
			chunks = append(chunks, t)
		}
		q.chunkTimes = make([]float64, len(chunks))
		for j, c := range chunks {
			q.chunkTimes[j] = metrics.Seconds(c)
		}
		// Spread the tokens: chunk j carries ceil((j+1)k/n) − ceil(jk/n).
		n, k := len(chunks), p.OutputTokens
		prev := 0
		for j := range chunks {
			upto := ((j+1)*k + n - 1) / n
			for range upto - prev {
				q.tokenTimes = append(q.tokenTimes, q.chunkTimes[j])
			}
			prev = upto
		}
		out[i] = q
	}
	return out
}

// ipSummarize is summarize(items, percentiles): nil (null) when empty.
func ipSummarize(items []float64) *jsonx.Obj {
	if len(items) == 0 {
		return nil
	}
	s := slices.Clone(items)
	slices.Sort(s)
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

// ipPromptTokens is summarize_prompt_token_usage.
func ipPromptTokens(reqs []*ipReq) *jsonx.Obj {
	var total, cached float64
	per := make([]float64, 0, len(reqs))
	for _, q := range reqs {
		total += float64(q.input)
		per = append(per, float64(q.input))
		if q.ok {
			cached += float64(q.cached)
		}
	}
	o := jsonx.NewObj().Set("total", total).Set("cached", cached).Set("uncached", max(total-cached, 0.0))
	if d := ipSummarize(per); d != nil {
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

// ipErrorCounts is build_error_counts over the failed requests.
func ipErrorCounts(failed []*ipReq) *jsonx.Obj {
	type msgIDs struct {
		msg string
		ids []string
	}
	var labels []string
	counts := map[string]int{}
	msgs := map[string][]*msgIDs{}
	for _, q := range failed {
		l := ipLabel(q.errType, q.errMsg)
		if counts[l] == 0 {
			labels = append(labels, l)
		}
		counts[l]++
		var m *msgIDs
		for _, x := range msgs[l] {
			if x.msg == q.errMsg {
				m = x
			}
		}
		switch {
		case m != nil:
			if q.hasSession {
				m.ids = append(m.ids, q.session)
			}
		case len(msgs[l]) < maxErrorMessages:
			m = &msgIDs{msg: q.errMsg}
			if q.hasSession {
				m.ids = []string{q.session}
			}
			msgs[l] = append(msgs[l], m)
		}
	}
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

// ipSummary is summarize_requests over reqs (non-empty); stageRate and
// concurrency are the stage's (per-stage reports), nil for the summary.
func ipSummary(reqs []*ipReq, stageRate *float64, concurrency *int) *jsonx.Obj {
	var succ, failed []*ipReq
	minStart, maxStart, maxEnd := math.Inf(1), math.Inf(-1), math.Inf(-1)
	var delays []float64
	for _, q := range reqs {
		if q.ok {
			succ = append(succ, q)
		} else {
			failed = append(failed, q)
		}
		minStart, maxStart, maxEnd = min(minStart, q.start), max(maxStart, q.start), max(maxEnd, q.end)
		delays = append(delays, q.start-q.scheduled)
	}
	total := maxEnd - minStart
	load := jsonx.NewObj().Set("count", len(reqs)).Set("schedule_delay", orNil(ipSummarize(delays)))
	if stageRate != nil {
		send := maxStart - minStart
		achieved := 0.0
		if send > 0 {
			achieved = float64(len(reqs)) / send
		}
		load.Set("send_duration", send).Set("requested_rate", *stageRate).Set("achieved_rate", achieved)
		if concurrency != nil {
			load.Set("concurrency", *concurrency)
		}
	}

	var lat, ntpot, tpot, ttft, itl, sizes, outLen, outTok, zeros []float64
	var inSum, outSum float64
	for _, q := range succ {
		l := q.end - q.start
		lat = append(lat, l)
		if q.out > 0 {
			ntpot = append(ntpot, l/float64(q.out))
		} else {
			ntpot = append(ntpot, 0.0)
		}
		if tt := q.tokenTimes; len(tt) > 1 {
			ttft = append(ttft, tt[0]-q.start)
			if q.out > 1 {
				tpot = append(tpot, (tt[len(tt)-1]-tt[0])/float64(q.out-1))
			}
			for j := 1; j < len(tt); j++ {
				itl = append(itl, tt[j]-tt[j-1])
			}
		}
		sizes = append(sizes, float64(len(q.request)))
		outLen = append(outLen, float64(q.out))
		outTok = append(outTok, float64(q.out))
		zeros = append(zeros, 0.0)
		inSum += float64(q.input)
		outSum += float64(q.out)
	}
	rate := func(x float64) float64 {
		if total > 0 {
			return x / total
		}
		return 0.0
	}
	outTotal := 0.0
	for _, v := range outTok {
		outTotal += v
	}
	outputTokens := jsonx.NewObj().Set("total", outTotal)
	if d := ipSummarize(outTok); d != nil {
		for i, k := range d.Keys {
			outputTokens.Set(k, d.Vals[i])
		}
	}
	successes := jsonx.NewObj().
		Set("count", len(succ)).
		Set("latency", jsonx.NewObj().
			Set("request_latency", orNil(ipSummarize(lat))).
			Set("normalized_time_per_output_token", orNil(ipSummarize(ntpot))).
			Set("time_per_output_token", orNil(ipSummarize(tpot))).
			Set("time_to_first_token", orNil(ipSummarize(ttft))).
			Set("inter_token_latency", orNil(ipSummarize(itl)))).
		Set("throughput", jsonx.NewObj().
			Set("input_tokens_per_sec", rate(inSum)).
			Set("output_tokens_per_sec", rate(outSum)).
			Set("total_tokens_per_sec", rate(inSum+outSum)).
			Set("requests_per_sec", rate(float64(len(succ)))).
			Set("images_per_sec", rate(0)).Set("videos_per_sec", rate(0)).Set("audios_per_sec", rate(0))).
		Set("request_size_bytes", orNil(ipSummarize(sizes))).
		Set("image", jsonx.NewObj().Set("count", orNil(ipSummarize(zeros))).Set("pixels", nil).Set("bytes", nil).
			Set("aspect_ratio", nil)).
		Set("video", jsonx.NewObj().Set("count", orNil(ipSummarize(zeros))).Set("frames", nil).Set("pixels", nil).
			Set("bytes", nil).Set("aspect_ratio", nil)).
		Set("audio", jsonx.NewObj().Set("count", orNil(ipSummarize(zeros))).Set("seconds", nil).Set("bytes", nil)).
		Set("prompt_tokens", ipPromptTokens(succ)).
		Set("output_len", orNil(ipSummarize(outLen))).
		Set("output_tokens", outputTokens).
		Set("token_count_mismatches", 0).
		Set("client_fallback_requests", jsonx.NewObj().Set("prompt", 0).Set("output", 0))
	var failLat []float64
	for _, q := range failed {
		failLat = append(failLat, q.end-q.start)
	}
	failures := jsonx.NewObj().
		Set("count", len(failed)).
		Set("request_latency", orNil(ipSummarize(failLat))).
		Set("prompt_tokens", ipPromptTokens(failed)).
		Set("by_label", ipErrorCounts(failed))
	return jsonx.NewObj().
		Set("benchmark_time_seconds", total).
		Set("load_summary", load).
		Set("successes", successes).
		Set("failures", failures)
}

// ipEntry is build_per_request_lifecycle_entry with the default fields
// (request, response, info with response_chunks).
func (q *ipReq) entry() *jsonx.Obj {
	e := jsonx.NewObj().Set("start_time", q.start).Set("end_time", q.end)
	if q.hasSession {
		e.Set("session_id", q.session)
	}
	e.Set("request", q.request).Set("response", nil)
	reqMetrics := jsonx.NewObj().Set("text", jsonx.NewObj().Set("input_tokens", q.input)).
		Set("image", nil).Set("video", nil).Set("audio", nil)
	var resp any
	if q.ok {
		ct := q.chunkTimes
		if ct == nil {
			ct = []float64{}
		}
		tt := q.tokenTimes
		if tt == nil {
			tt = []float64{}
		}
		resp = jsonx.NewObj().
			Set("output_tokens", q.out).
			Set("server_usage", jsonx.NewObj().Set("prompt_tokens", q.input).Set("total_tokens", q.input+q.out).
				Set("completion_tokens", q.out).
				Set("prompt_tokens_details", jsonx.NewObj().Set("cached_tokens", q.cached))).
			Set("response_chunks", []any{}).
			Set("chunk_times", ct).
			Set("output_token_times", tt)
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

// Encode renders the report files: the per-request list (PerRequestFile)
// and, when there are requests, the summary (SummaryFile) and the one
// stage's report (StageFilePattern with stage 0); summary and stage are
// nil without requests. The Result must be Detailed.
func Encode(r *metrics.Result, run *metrics.RunInfo) (perRequest, summary, stage []byte) {
	reqs := ipRequests(r, run)
	list := make([]any, len(reqs))
	for i, q := range reqs {
		list[i] = q.entry()
	}
	enc := func(v any) []byte {
		var b bytes.Buffer
		jsonx.Encode(&b, v, jsonx.PyIndent2)
		return b.Bytes()
	}
	perRequest = enc(list)
	if len(reqs) == 0 {
		return perRequest, nil, nil
	}
	summary = encodeIPSummary(reqs)
	var rate *float64
	if !math.IsInf(r.RequestRate, 0) && !math.IsNaN(r.RequestRate) && r.RequestRate > 0 {
		rate = &r.RequestRate
	}
	var conc *int
	if rate != nil && r.MaxConcurrency > 0 {
		conc = &r.MaxConcurrency
	}
	stage = enc(ipSummary(reqs, rate, conc))
	return perRequest, summary, stage
}

// encodeIPSummary renders the summary report of reqs.
func encodeIPSummary(reqs []*ipReq) []byte {
	var b bytes.Buffer
	jsonx.Encode(&b, ipSummary(reqs, nil, nil), jsonx.PyIndent2)
	return b.Bytes()
}
