package metrics

import (
	"fmt"
	"math"
	"slices"
	"time"

	"blis/metrics/internal/reorder"
	"blis/metrics/internal/vlog"
)

// Percentile metrics vLLM bench can report (its --percentile-metrics names),
// in the order it prints them. Mirrors vllm/benchmarks/serve.py benchmark().
const (
	MetricTTFT                     = "ttft"
	MetricTPOT                     = "tpot"
	MetricITL                      = "itl"
	MetricE2EL                     = "e2el"
	MetricClientQueueTime          = "client_queue_time"           // shown only with --max-concurrency
	MetricE2ELIncludingClientQueue = "e2el_including_client_queue" // and only with a finite rate
)

var allMetrics = []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL,
	MetricClientQueueTime, MetricE2ELIncludingClientQueue}

// DefaultPercentiles is BLIS's --metric-percentiles default (vLLM bench's
// is 99 alone).
func DefaultPercentiles() []float64 { return []float64{50, 90, 95, 99} }

// DefaultMetrics is BLIS's --percentile-metrics default: vLLM bench's
// "ttft,tpot,itl" plus e2el.
func DefaultMetrics() []string { return []string{MetricTTFT, MetricTPOT, MetricITL, MetricE2EL} }

// Sink receives each request as the client finishes it: the streaming
// writers of the result files (metrics.JSONWriter, the metrics/format
// exporters) are sinks, so a run's per-request output goes to disk as it
// happens instead of being held to the end.
type Sink interface {
	// Request receives one finished request, in completion order
	// (RequestResult.Seq). q and q.ITLs are reused after the call returns.
	Request(q *RequestResult) error
}

// RecorderOptions configure a Recorder. The zero value works.
type RecorderOptions struct {
	// Percentiles reported for each metric, each in [0, 100]
	// (--metric-percentiles). Empty means DefaultPercentiles.
	Percentiles []float64
	// Metrics given percentile sections (--percentile-metrics), any of the
	// Metric* names. Empty means DefaultMetrics.
	Metrics []string
	// Detailed keeps every request's inter-token gaps while it is in flight
	// and hands them over with the request (--save-detailed, and the
	// formats that list every chunk). It costs 8 bytes per token of the
	// requests in flight.
	Detailed bool
	// ITLRelativeAccuracy is the relative accuracy asked of the ITL
	// percentiles (see Sketch). Zero means DefaultRelativeAccuracy.
	ITLRelativeAccuracy float64
	// Sinks receive every finished request, in completion order.
	Sinks []Sink
	// OmitRequests leaves Result.Requests empty, so that the recorder keeps
	// nothing per request beyond the compact values its statistics need;
	// the Sinks are then the only per-request output.
	OmitRequests bool
	// TempDir, when set, is where those values go beyond 4 MiB (a
	// temporary file, removed by Close), so that a run of any length
	// holds only what is in flight; "" keeps them in memory, about 10
	// bytes per completed request.
	TempDir string
}

// Recorder collects what the simulated benchmark client measures. The
// simulation driver calls Send, AddITL, AddTokens, AddStep and Finish as
// events happen, in simulated-time order; Summarize turns it into a Result.
// A Recorder is not safe for concurrent use.
//
// Memory is what the requests in flight hold (their send time and, when
// Detailed, their gaps so far), about 10 bytes per completed request of
// varints for the exact TTFT, TPOT, E2EL and queue-time statistics (kept in
// request order for numpy's order-dependent sums; beyond 4 MiB on disk
// when TempDir is set), the interval ends max_concurrent_requests cannot
// fold yet (those of requests that finished while an earlier-sent one is
// in flight), O(octaves) for the ITL sketch and one counter per simulated
// second; the few requests that finished ahead of a lower index still in
// flight wait in a reorder buffer. Unless OmitRequests, Result.Requests
// also keeps every request.
type Recorder struct {
	percentiles []float64
	metrics     []string
	detailed    bool
	keep        bool

	itl   Sketch
	sinks []Sink
	err   error // the first sink error

	flights map[int64]*flight // requests sent or streaming and not finished, by Index
	free    []*flight
	seq     int64
	kept    []RequestResult // unless OmitRequests, in completion order
	q       RequestResult   // the request being finished

	stats requestStats
	conc  concurrency

	origin    time.Duration // time 0 of the per-second token buckets
	originSet bool
	tokens    []int64 // streamed chunks per second since origin
	steps     int64
	stepRows  int64
}

// flight is what the recorder holds of a request between Send and Finish.
type flight struct {
	sent     time.Duration
	sentSeen bool
	gaps     []time.Duration // with Detailed
}

// Per-second token buckets beyond this (about 2.1 years) are dropped.
const maxTokenBuckets = 1 << 26

// NewRecorder checks opts and returns an empty Recorder.
func NewRecorder(opts RecorderOptions) (*Recorder, error) {
	r := &Recorder{
		percentiles: slices.Clone(opts.Percentiles),
		detailed:    opts.Detailed,
		keep:        !opts.OmitRequests,
		sinks:       slices.Clone(opts.Sinks),
		flights:     map[int64]*flight{},
	}
	if len(r.percentiles) == 0 {
		r.percentiles = DefaultPercentiles()
	}
	if opts.TempDir != "" {
		r.stats.rows.log.Spill(opts.TempDir, vlog.MemLimit)
	}
	for _, p := range r.percentiles {
		if !(p >= 0 && p <= 100) {
			return nil, fmt.Errorf("metrics: percentile %v: allowed: a number in [0, 100]", p)
		}
	}
	metrics := opts.Metrics
	if len(metrics) == 0 {
		metrics = DefaultMetrics()
	}
	for _, m := range metrics {
		if !slices.Contains(allMetrics, m) {
			return nil, fmt.Errorf("metrics: percentile metric %q: allowed: %s, %s, %s, %s, %s, %s",
				m, allMetrics[0], allMetrics[1], allMetrics[2], allMetrics[3], allMetrics[4], allMetrics[5])
		}
	}
	// Keep vLLM's print order whatever order they were given in.
	for _, m := range allMetrics {
		if slices.Contains(metrics, m) {
			r.metrics = append(r.metrics, m)
		}
	}
	a := opts.ITLRelativeAccuracy
	if a == 0 {
		a = DefaultRelativeAccuracy
	}
	if !(a > 0 && a < 1) {
		return nil, fmt.Errorf("metrics: ITL relative accuracy %v: allowed: a number in (0, 1), e.g. 0.005", a)
	}
	r.itl = *NewSketch(a)
	return r, nil
}

// AddSink adds a sink after NewRecorder (before the first Finish: a sink
// sees only the requests that finish after it was added).
func (r *Recorder) AddSink(s Sink) { r.sinks = append(r.sinks, s) }

// Send notes that request index left the client at `at`. The first call
// fixes time 0 of the per-second output-token buckets behind
// max_output_tokens_per_s, which vLLM bench counts from the earliest send;
// without any Send call (or if tokens arrive first) they count from 0, the
// start of the timed phase. The send times of the requests in flight also
// tell the recorder which requests can no longer overlap a new one, so it
// can fold them into max_concurrent_requests as the run goes.
func (r *Recorder) Send(index int64, at time.Duration) {
	if !r.originSet || (len(r.tokens) == 0 && at < r.origin) {
		r.origin, r.originSet = at, true
	}
	f := r.flight(index)
	f.sent, f.sentSeen = at, true
	r.conc.sent(index, at)
}

func (r *Recorder) flight(index int64) *flight {
	if f := r.flights[index]; f != nil {
		return f
	}
	var f *flight
	if n := len(r.free); n > 0 {
		f, r.free = r.free[n-1], r.free[:n-1]
	} else {
		f = &flight{}
	}
	r.flights[index] = f
	return f
}

// AddITL records one streamed-token gap of request index: the time between
// two consecutive chunks reaching the client (vLLM bench's itl). It is the
// hot path: O(1), and allocation-free unless the recorder is Detailed (a
// request's gap list grows, and is reused by later requests).
func (r *Recorder) AddITL(index int64, gap time.Duration) {
	r.itl.Add(Seconds(gap))
	if r.detailed {
		f := r.flight(index)
		f.gaps = append(f.gaps, gap)
	}
}

// AddGaps records n equal streamed-token gaps at once. It is the fast path
// for a driver whose decode rows share a step's gap; it keeps no per-request
// lists, so use AddITL when the recorder is Detailed.
func (r *Recorder) AddGaps(gap time.Duration, n int64) {
	r.itl.AddN(Seconds(gap), n)
}

// Detailed reports whether per-request gap lists are kept (--save-detailed).
func (r *Recorder) Detailed() bool { return r.detailed }

// AddTokens records n streamed chunks reaching the client at `at`. vLLM
// bench's max_output_tokens_per_s counts token timestamps — one per chunk,
// i.e. per request per engine step, which is one token unless a chunk
// carries several (speculative decoding) — in 1-second buckets from the
// earliest send (see Send). Buckets grow as time advances.
func (r *Recorder) AddTokens(at time.Duration, n int) {
	if n <= 0 {
		return
	}
	r.originSet = true
	d := at - r.origin
	// Python's int() truncates toward zero, so (-1 s, 0) lands in bucket 0.
	if d <= -time.Second {
		return
	}
	b := int(d / time.Second)
	if b >= maxTokenBuckets {
		return
	}
	if b >= len(r.tokens) {
		r.tokens = slices.Grow(r.tokens, b+1-len(r.tokens))[:b+1]
	}
	r.tokens[b] += int64(n)
}

// AddStep records one engine step that scheduled `rows` requests (for
// mean_batch_size).
func (r *Recorder) AddStep(rows int) {
	r.steps++
	r.stepRows += int64(rows)
}

// Finish records a request that ended: completed, or Rejected (counted as
// failed, with its RejectReason as the error). It hands the request to
// every Sink before it returns.
func (r *Recorder) Finish(rec Record) {
	f := r.flights[rec.Index]
	var gaps []time.Duration
	if f != nil {
		gaps = f.gaps
		delete(r.flights, rec.Index)
	}
	// One RequestResult reused for every request: a sink sees it only
	// during its call, so handing it out costs no allocation.
	r.q = requestResult(&rec, gaps)
	q := &r.q
	q.Seq = r.seq
	r.seq++
	r.stats.add(q)
	if q.Success {
		r.conc.finished(rec.Index, rec.Sent, rec.Finish, f == nil || !f.sentSeen, r.flights)
	} else {
		r.conc.failed(rec.Index, f == nil || !f.sentSeen, r.flights)
	}
	for _, s := range r.sinks {
		if err := s.Request(q); err != nil && r.err == nil {
			r.err = err
		}
	}
	if r.keep {
		c := *q
		c.ITLs = slices.Clip(slices.Clone(q.ITLs))
		r.kept = append(r.kept, c)
	}
	q.ITLs = nil
	if f != nil {
		f.gaps = f.gaps[:0]
		f.sent, f.sentSeen = 0, false
		r.free = append(r.free, f)
	}
}

// Err is the first error a Sink returned, or writing the spilled values.
func (r *Recorder) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.stats.rows.log.Err()
}

// Close releases the file the recorder spilled to (see TempDir); Summarize
// needs it, so Close comes after.
func (r *Recorder) Close() error { return r.stats.rows.log.Close() }

// requestResult is a finished request as the client reports it: vLLM
// bench's RequestFuncOutput fields (ttft, latency, error) with BLIS's.
func requestResult(rec *Record, gaps []time.Duration) RequestResult {
	q := RequestResult{
		Index: rec.Index, InputTokens: rec.InputTokens, Start: rec.Sent, End: rec.Finish,
		QueueTime: rec.ClientQueueTime, CachedTokens: rec.CachedTokens, Preemptions: rec.Preemptions,
		Session: rec.Session, Turn: rec.Turn,
	}
	switch {
	case rec.Rejected:
		q.Error = rec.RejectReason
		if q.Error == "" {
			q.Error = "rejected"
		}
	case rec.OutputTokens <= 0:
		q.Error = NoChunkError
	default:
		q.Success = true
		q.OutputTokens = rec.OutputTokens
		q.TTFT = rec.FirstToken - rec.Sent
		q.Latency = rec.Finish - rec.Sent
		q.ITLs = gaps
	}
	return q
}

// Seconds converts a duration to float seconds, correctly rounded.
func Seconds(d time.Duration) float64 { return float64(d) / 1e9 }

// finite maps NaN and ±Inf to 0.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// requestStats is what the summary keeps of each finished request: counts
// and totals, the span of the run, and the completed requests' TTFT, E2EL,
// queue time and output tokens, in request (Index) order as vLLM bench's
// outputs list is, since numpy's pairwise sums depend on the order.
type requestStats struct {
	completed, failed int
	multiToken        int // completed with more than one output token (TPOT's count)
	totalIn, totalOut int64
	first, last       time.Duration // earliest send and latest end over all requests
	order             reorder.Buffer[statRow]
	rows              rowLog // completed requests, in Index order
	sawAny            bool
}

// statRow is one request on its way to the rows log.
type statRow struct {
	ok               bool
	ttft, lat, queue time.Duration
	out              int
}

func (s *requestStats) add(q *RequestResult) {
	if !s.sawAny {
		s.first, s.last, s.sawAny = q.Start, q.End, true
	}
	s.first, s.last = min(s.first, q.Start), max(s.last, q.End)
	if q.Success {
		s.completed++
		if q.OutputTokens > 1 {
			s.multiToken++
		}
		s.totalIn += int64(q.InputTokens)
		s.totalOut += int64(q.OutputTokens)
	} else {
		s.failed++
	}
	s.order.Push(q.Index, statRow{q.Success, q.TTFT, q.Latency, q.QueueTime, q.OutputTokens}, s.rows.add)
}

// concurrency computes max_concurrent_requests — the peak number of
// completed requests whose [sent, finish) intervals overlap — as the run
// goes: an interval event earlier than every send still in flight (and than
// the last send: later ones come no earlier) can no longer be overtaken,
// so it is folded into the sweep line and dropped. When the recorder does not see every
// send (a caller that never calls Send) the events wait for Summarize.
type concurrency struct {
	sends     []sendAt // timed sends in time order
	head      int
	lastSend  time.Duration
	untracked bool // a send was missing or out of order: sweep at the end only
	held      eventHeap
	cur, peak int
}

type sendAt struct {
	index int64
	at    time.Duration
}

func (c *concurrency) sent(index int64, at time.Duration) {
	if len(c.sends) > c.head && at < c.lastSend {
		c.untracked = true
	}
	c.lastSend = at
	c.sends = append(c.sends, sendAt{index, at})
}

func (c *concurrency) finished(index int64, sent, finish time.Duration, unseen bool, inFlight map[int64]*flight) {
	c.held.push(event{sent, 1})
	c.held.push(event{finish, -1})
	c.failed(index, unseen, inFlight)
}

// failed advances the sweep after a request left without an interval.
func (c *concurrency) failed(index int64, unseen bool, inFlight map[int64]*flight) {
	if unseen {
		c.untracked = true
	}
	if c.untracked {
		return
	}
	// The watermark: the earliest send still in flight.
	for c.head < len(c.sends) {
		if f := inFlight[c.sends[c.head].index]; f != nil && f.sentSeen {
			break
		}
		c.head++
	}
	if c.head > 1024 && 2*c.head > len(c.sends) {
		n := copy(c.sends, c.sends[c.head:])
		c.sends, c.head = c.sends[:n], 0
	}
	// Nothing in flight: later sends come no earlier than the last one.
	w := c.lastSend
	if c.head < len(c.sends) {
		w = c.sends[c.head].at
	}
	for len(c.held) > 0 && c.held[0].at < w {
		c.step(c.held.pop())
	}
}

func (c *concurrency) step(e event) {
	c.cur += e.delta
	c.peak = max(c.peak, c.cur)
}

// result is the peak with every held event swept; c is left as it was.
func (c *concurrency) result() int {
	rest := slices.Clone(c.held)
	slices.SortFunc(rest, event.cmp)
	cur, peak := c.cur, c.peak
	for _, e := range rest {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

// event is one end of an interval; a departure sorts before an arrival at
// the same instant (half-open intervals, as vLLM sorts (time, delta)).
type event struct {
	at    time.Duration
	delta int
}

func (a event) cmp(b event) int {
	switch {
	case a.at != b.at:
		if a.at < b.at {
			return -1
		}
		return 1
	case a.delta != b.delta:
		return a.delta - b.delta
	}
	return 0
}

// eventHeap is a min-heap of events.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].cmp(s[i]) <= 0 {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *eventHeap) pop() event {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s[l].cmp(s[m]) < 0 {
			m = l
		}
		if r < n && s[r].cmp(s[m]) < 0 {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
