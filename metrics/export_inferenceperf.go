package metrics

import (
	"bytes"
	"errors"
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

	"blis/metrics/internal/numpy"
	"blis/metrics/internal/pytext"
)

// inference-perf's lifecycle-metrics reports, mirrored from
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

// Export format name and report file names.
const (
	FormatInferencePerf           = "inference-perf"
	InferencePerfPerRequestFile   = "per_request_lifecycle_metrics.json"
	InferencePerfSummaryFile      = "summary_lifecycle_metrics.json"
	InferencePerfStageFilePattern = "stage_%d_lifecycle_metrics.json"
	inferencePerfLifecycleSuffix  = "_lifecycle_metrics.json"
	inferencePerfMaxErrorMessages = 100
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
	case msg == errNoChunk:
		return "EmptyStreamError"
	}
	return "HTTP Error 400"
}

// ipRequests builds the per-request records from the Result (which must be
// Detailed for the chunk times).
func ipRequests(r *Result, run *RunInfo) []*ipReq {
	model := run.model(r)
	out := make([]*ipReq, len(r.Requests))
	for i := range r.Requests {
		p := &r.Requests[i]
		q := &ipReq{
			start: seconds(p.Start), end: seconds(p.End), scheduled: seconds(p.Start - p.QueueTime),
			input: p.InputTokens, cached: p.CachedTokens, ok: p.Success,
		}
		if run.Conversation != nil {
			conv, _ := run.conversation(p.Index)
			q.session, q.hasSession = itoa(conv), true
		}
		body := newObj().set("model", model).set("prompt", "").set("max_tokens", p.OutputTokens).
			set("ignore_eos", true).set("stream", true).
			set("stream_options", newObj().set("include_usage", true))
		var b bytes.Buffer
		encodeJSON(&b, body, jStyle{float: pytext.Float, ascii: true})
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
			q.chunkTimes[j] = seconds(c)
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
func ipSummarize(items []float64) *jObj {
	if len(items) == 0 {
		return nil
	}
	s := slices.Clone(items)
	slices.Sort(s)
	o := newObj().set("mean", numpy.Mean(items)).set("min", s[0]).set("max", s[len(s)-1])
	for _, p := range ipPercentiles {
		o.set(ipPctKey(p), numpy.PercentileSorted(s, p))
	}
	return o
}

// orNil keeps a nil *jObj a JSON null.
func orNil(o *jObj) any {
	if o == nil {
		return nil
	}
	return o
}

// ipPromptTokens is summarize_prompt_token_usage.
func ipPromptTokens(reqs []*ipReq) *jObj {
	var total, cached float64
	per := make([]float64, 0, len(reqs))
	for _, q := range reqs {
		total += float64(q.input)
		per = append(per, float64(q.input))
		if q.ok {
			cached += float64(q.cached)
		}
	}
	o := newObj().set("total", total).set("cached", cached).set("uncached", max(total-cached, 0.0))
	if d := ipSummarize(per); d != nil {
		for i, k := range d.keys {
			o.set(k, d.vals[i])
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
func ipErrorCounts(failed []*ipReq) *jObj {
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
		case len(msgs[l]) < inferencePerfMaxErrorMessages:
			m = &msgIDs{msg: q.errMsg}
			if q.hasSession {
				m.ids = []string{q.session}
			}
			msgs[l] = append(msgs[l], m)
		}
	}
	sort.SliceStable(labels, func(a, b int) bool { return counts[labels[a]] > counts[labels[b]] })
	o := newObj()
	for _, l := range labels {
		var list []any
		for _, m := range msgs[l] {
			e := newObj().set("message", m.msg)
			if len(m.ids) > 0 {
				ids := make([]any, len(m.ids))
				for i, id := range m.ids {
					ids[i] = id
				}
				e.set("session_ids", ids)
			}
			list = append(list, e)
		}
		if list == nil {
			list = []any{}
		}
		o.set(l, newObj().set("count", counts[l]).set("messages", list))
	}
	return o
}

// ipSummary is summarize_requests over reqs (non-empty); stageRate and
// concurrency are the stage's (per-stage reports), nil for the summary.
func ipSummary(reqs []*ipReq, stageRate *float64, concurrency *int) *jObj {
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
	load := newObj().set("count", len(reqs)).set("schedule_delay", orNil(ipSummarize(delays)))
	if stageRate != nil {
		send := maxStart - minStart
		achieved := 0.0
		if send > 0 {
			achieved = float64(len(reqs)) / send
		}
		load.set("send_duration", send).set("requested_rate", *stageRate).set("achieved_rate", achieved)
		if concurrency != nil {
			load.set("concurrency", *concurrency)
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
	outputTokens := newObj().set("total", outTotal)
	if d := ipSummarize(outTok); d != nil {
		for i, k := range d.keys {
			outputTokens.set(k, d.vals[i])
		}
	}
	successes := newObj().
		set("count", len(succ)).
		set("latency", newObj().
			set("request_latency", orNil(ipSummarize(lat))).
			set("normalized_time_per_output_token", orNil(ipSummarize(ntpot))).
			set("time_per_output_token", orNil(ipSummarize(tpot))).
			set("time_to_first_token", orNil(ipSummarize(ttft))).
			set("inter_token_latency", orNil(ipSummarize(itl)))).
		set("throughput", newObj().
			set("input_tokens_per_sec", rate(inSum)).
			set("output_tokens_per_sec", rate(outSum)).
			set("total_tokens_per_sec", rate(inSum+outSum)).
			set("requests_per_sec", rate(float64(len(succ)))).
			set("images_per_sec", rate(0)).set("videos_per_sec", rate(0)).set("audios_per_sec", rate(0))).
		set("request_size_bytes", orNil(ipSummarize(sizes))).
		set("image", newObj().set("count", orNil(ipSummarize(zeros))).set("pixels", nil).set("bytes", nil).
			set("aspect_ratio", nil)).
		set("video", newObj().set("count", orNil(ipSummarize(zeros))).set("frames", nil).set("pixels", nil).
			set("bytes", nil).set("aspect_ratio", nil)).
		set("audio", newObj().set("count", orNil(ipSummarize(zeros))).set("seconds", nil).set("bytes", nil)).
		set("prompt_tokens", ipPromptTokens(succ)).
		set("output_len", orNil(ipSummarize(outLen))).
		set("output_tokens", outputTokens).
		set("token_count_mismatches", 0).
		set("client_fallback_requests", newObj().set("prompt", 0).set("output", 0))
	var failLat []float64
	for _, q := range failed {
		failLat = append(failLat, q.end-q.start)
	}
	failures := newObj().
		set("count", len(failed)).
		set("request_latency", orNil(ipSummarize(failLat))).
		set("prompt_tokens", ipPromptTokens(failed)).
		set("by_label", ipErrorCounts(failed))
	return newObj().
		set("benchmark_time_seconds", total).
		set("load_summary", load).
		set("successes", successes).
		set("failures", failures)
}

// ipEntry is build_per_request_lifecycle_entry with the default fields
// (request, response, info with response_chunks).
func (q *ipReq) entry() *jObj {
	e := newObj().set("start_time", q.start).set("end_time", q.end)
	if q.hasSession {
		e.set("session_id", q.session)
	}
	e.set("request", q.request).set("response", nil)
	reqMetrics := newObj().set("text", newObj().set("input_tokens", q.input)).
		set("image", nil).set("video", nil).set("audio", nil)
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
		resp = newObj().
			set("output_tokens", q.out).
			set("server_usage", newObj().set("prompt_tokens", q.input).set("total_tokens", q.input+q.out).
				set("completion_tokens", q.out).
				set("prompt_tokens_details", newObj().set("cached_tokens", q.cached))).
			set("response_chunks", []any{}).
			set("chunk_times", ct).
			set("output_token_times", tt)
	}
	e.set("info", newObj().
		set("request_metrics", reqMetrics).
		set("response_metrics", resp).
		set("extra_info", newObj()).
		set("lora_adapter", nil).set("graph_event_id", nil).
		set("labels", newObj()).
		set("retries_attempted", 0).set("retries_recovered", false).
		set("input_tokens", q.input))
	if q.ok {
		e.set("error", nil)
	} else {
		e.set("error", newObj().set("error_type", q.errType).set("error_msg", q.errMsg))
	}
	return e
}

// encodeInferencePerf renders the report files: the per-request list and,
// when there are requests, the summary and the one stage's report. The
// Result must be Detailed.
func encodeInferencePerf(r *Result, run *RunInfo) (perRequest, summary, stage []byte) {
	reqs := ipRequests(r, run)
	list := make([]any, len(reqs))
	for i, q := range reqs {
		list[i] = q.entry()
	}
	enc := func(v any) []byte {
		var b bytes.Buffer
		encodeJSON(&b, v, pyJSONIndent2)
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
	encodeJSON(&b, ipSummary(reqs, nil, nil), pyJSONIndent2)
	return b.Bytes()
}

// writeInferencePerf writes the report files into dir with write.
func writeInferencePerf(r *Result, run *RunInfo, write func(name string, data []byte) error) error {
	per, sum, stage := encodeInferencePerf(r, run)
	if err := write(InferencePerfPerRequestFile, per); err != nil {
		return err
	}
	if sum == nil {
		return nil
	}
	if err := write(InferencePerfSummaryFile, sum); err != nil {
		return err
	}
	return write(fmt.Sprintf(InferencePerfStageFilePattern, 0), stage)
}

// --- reading ---

// ReadInferencePerf reads inference-perf lifecycle reports. path is a
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
func ReadInferencePerf(path string) (*MeasuredRun, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		data, err := readFileBounded(path)
		if err != nil {
			return nil, err
		}
		return parseInferencePerfFile(path, data)
	}
	files := InferencePerfFiles(path)
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no inference-perf lifecycle report: want %s, %s or stage_N%s",
			path, InferencePerfPerRequestFile, InferencePerfSummaryFile, inferencePerfLifecycleSuffix)
	}
	run := &MeasuredRun{Format: FormatInferencePerf, Path: path}
	for _, f := range files {
		data, err := readFileBounded(f)
		if err != nil {
			return nil, err
		}
		one, err := parseInferencePerfFile(f, data)
		if err != nil {
			return nil, err
		}
		if filepath.Base(f) == InferencePerfPerRequestFile && len(one.Metrics) > 0 {
			return nil, fmt.Errorf("%s: want a JSON list of request records, got an object", f)
		}
		run.Requests = append(run.Requests, one.Requests...)
		run.Metrics = append(run.Metrics, one.Metrics...)
	}
	return run, nil
}

// InferencePerfFiles lists the lifecycle reports ReadInferencePerf reads
// in dir, in reading order: the per-request file, the summary, then the
// stages by number.
func InferencePerfFiles(dir string) []string {
	var out []string
	for _, name := range []string{InferencePerfPerRequestFile, InferencePerfSummaryFile} {
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
	if stem, ok := strings.CutSuffix(base, inferencePerfLifecycleSuffix); ok && stem != "" {
		return stem
	}
	return "summary"
}

// parseInferencePerfFile reads one report: a list is the per-request file,
// an object a summary named after the file.
func parseInferencePerfFile(file string, data []byte) (*MeasuredRun, error) {
	r := &jReader{file: file, data: data}
	root, err := parseJSONTree(data)
	if err != nil {
		return nil, r.syntax(err)
	}
	run := &MeasuredRun{Format: FormatInferencePerf, Path: file}
	switch root.kind {
	case 'a':
		run.Requests = ipReadRequests(r, root)
	case 'o':
		run.Metrics = ipReadSummary(r, root, ipReportName(file))
	default:
		r.fail(root, "$", "want a list of request records or a summary object, got %s", root.kindName())
	}
	if r.err != nil {
		return nil, r.err
	}
	return run, nil
}

// ipTimes reads a list of float seconds, each in [start, end] and not
// decreasing.
func ipTimes(r *jReader, n *jNode, path string, start, end float64) []float64 {
	l := r.arr(n, path)
	out := make([]float64, 0, len(l))
	prev := start
	for i, x := range l {
		p := pathIdx(path, i)
		v := r.num(x, p)
		if r.err != nil {
			return nil
		}
		switch {
		case v < prev:
			if i == 0 {
				r.fail(x, p, "%v before start_time %v", v, start)
			} else {
				r.fail(x, p, "%v before the previous time %v: want times in order", v, prev)
			}
		case v > end:
			r.fail(x, p, "%v after end_time %v", v, end)
		}
		if r.err != nil {
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
		out[i-1] = sToDuration(ts[i]) - sToDuration(ts[i-1])
	}
	return out
}

func ipReadRequests(r *jReader, root *jNode) []MeasuredRequest {
	reqs := make([]MeasuredRequest, 0, len(root.arr))
	for i, e := range root.arr {
		q, ok := ipReadRequest(r, e, pathIdx("$", i), i)
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
func ipReadRequest(r *jReader, e *jNode, p string, i int) (MeasuredRequest, bool) {
	var q MeasuredRequest
	r.obj(e, p)
	start := r.num(r.req(e, p, "start_time"), pathKey(p, "start_time"))
	end := r.num(r.req(e, p, "end_time"), pathKey(p, "end_time"))
	if r.err != nil {
		return q, false
	}
	if end < start {
		r.fail(e.field("end_time"), pathKey(p, "end_time"), "%v before start_time %v", end, start)
		return q, false
	}
	if math.Abs(start) > 1e9 || math.Abs(end) > 1e9 {
		// Nanosecond times of more than ~31 years would overflow.
		r.fail(e.field("start_time"), pathKey(p, "start_time"), "want seconds within ±1e9, got %v to %v", start, end)
		return q, false
	}
	q.ID = strconv.Itoa(i)
	q.Start, q.End = int64(sToDuration(start)), int64(sToDuration(end))
	q.Conversation = r.optStr(e.field("session_id"), pathKey(p, "session_id"))
	if c := e.field("computed_metrics"); c != nil && c.kind != 'z' {
		r.obj(c, pathKey(p, "computed_metrics"))
	}

	ep := pathKey(p, "error")
	errN := r.req(e, p, "error")
	if r.err != nil {
		return q, false
	}
	if errN.kind != 'z' {
		r.obj(errN, ep)
		typ := r.str(r.req(errN, ep, "error_type"), pathKey(ep, "error_type"))
		msg := r.str(r.req(errN, ep, "error_msg"), pathKey(ep, "error_msg"))
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
	if info := r.opt(e, "info"); info != nil {
		ip := pathKey(p, "info")
		r.obj(info, ip)
		if r.err != nil {
			return q, false
		}
		if id := info.field("server_request_id"); id != nil && id.kind == 's' && id.str != "" {
			q.ID = id.str
		}
		if rm := r.opt(info, "request_metrics"); rm != nil {
			rp := pathKey(ip, "request_metrics")
			r.obj(rm, rp)
			tp := pathKey(rp, "text")
			text := r.obj(r.req(rm, rp, "text"), tp)
			if v := r.opt(text, "input_tokens"); v != nil {
				q.InputTokens = r.count(v, pathKey(tp, "input_tokens"))
			}
		} else if v := r.opt(info, "input_tokens"); v != nil {
			q.InputTokens = r.count(v, pathKey(ip, "input_tokens"))
		}
		src, sp := info, ip // the older flat layout keeps the response fields in info
		if rs := r.opt(info, "response_metrics"); rs != nil {
			src, sp = rs, pathKey(ip, "response_metrics")
			r.obj(rs, sp)
			if u := r.opt(rs, "server_usage"); u != nil {
				r.obj(u, pathKey(sp, "server_usage"))
			}
		}
		if v := r.opt(src, "output_tokens"); v != nil {
			outTok, hasOut = r.count(v, pathKey(sp, "output_tokens")), true
		}
		if v := r.opt(src, "output_token_times"); v != nil {
			tokenTimes = ipTimes(r, v, pathKey(sp, "output_token_times"), start, end)
		}
		if v := r.opt(src, "chunk_times"); v != nil {
			chunkTimes, hasChunks = ipTimes(r, v, pathKey(sp, "chunk_times"), start, end), true
		}
	}
	if r.err != nil {
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
		q.TTFT = sToDuration(tokenTimes[0]) - sToDuration(start)
	case len(chunkTimes) > 0:
		q.TTFT = sToDuration(chunkTimes[0]) - sToDuration(start)
	}
	if hasChunks {
		q.ITLs = ipGaps(chunkTimes)
		q.Chunks = len(chunkTimes)
	} else {
		q.ITLs = ipGaps(tokenTimes)
	}
	if len(tokenTimes) > 1 && outTok > 1 {
		d := sToDuration(tokenTimes[len(tokenTimes)-1]) - sToDuration(tokenTimes[0])
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
func ipReadSummary(r *jReader, root *jNode, report string) []MeasuredMetric {
	sp := pathKey("$", "successes")
	succ := r.obj(r.req(root, "$", "successes"), sp)
	r.count(r.req(succ, sp, "count"), pathKey(sp, "count"))
	fp := pathKey("$", "failures")
	fail := r.obj(r.req(root, "$", "failures"), fp)
	r.count(r.req(fail, fp, "count"), pathKey(fp, "count"))
	if lat := r.opt(succ, "latency"); lat != nil {
		lp := pathKey(sp, "latency")
		r.obj(lat, lp)
		if r.err == nil {
			for i, k := range lat.keys {
				st := lat.vals[i]
				if st.kind == 'z' {
					continue
				}
				kp := pathKey(lp, k)
				r.obj(st, kp)
				if r.err != nil {
					break
				}
				for j, sk := range st.keys {
					r.num(st.vals[j], pathKey(kp, sk))
				}
			}
		}
	}
	if tp := r.opt(succ, "throughput"); tp != nil {
		p := pathKey(sp, "throughput")
		r.obj(tp, p)
		if r.err == nil {
			for i, k := range tp.keys {
				if tp.vals[i].kind != 'z' {
					r.num(tp.vals[i], pathKey(p, k))
				}
			}
		}
	}
	if r.err != nil {
		return nil
	}
	var out []MeasuredMetric
	ipFlatten(r, &out, root, "$", []string{report}, 0)
	if r.err != nil {
		return nil
	}
	return out
}

// ipFlatten appends every number under n; strings, booleans and nulls
// describe and are skipped.
func ipFlatten(r *jReader, out *[]MeasuredMetric, n *jNode, path string, segs []string, depth int) {
	if r.err != nil {
		return
	}
	if depth > 32 {
		r.fail(n, path, "nested too deeply")
		return
	}
	switch n.kind {
	case 'n':
		v := r.num(n, path)
		*out = append(*out, MeasuredMetric{Name: strings.Join(segs, "."), Unit: ipUnit(segs), Value: v})
	case 'o':
		for i, k := range n.keys {
			ipFlatten(r, out, n.vals[i], pathKey(path, k), append(slices.Clip(segs), k), depth+1)
		}
	case 'a':
		for i, e := range n.arr {
			s := slices.Clone(segs)
			s[len(s)-1] = pathIdx(s[len(s)-1], i)
			ipFlatten(r, out, e, pathIdx(path, i), s, depth+1)
		}
	}
}

var errIPNotDetailed = errors.New("metrics: export format inference-perf needs per-request chunk times: make the recorder with RecorderOptions.Detailed")
