package metrics

import (
	"fmt"
	"math"
	"slices"
	"time"
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

// RecorderOptions configure a Recorder. The zero value works.
type RecorderOptions struct {
	// Percentiles reported for each metric, each in [0, 100]
	// (--metric-percentiles). Empty means DefaultPercentiles.
	Percentiles []float64
	// Metrics given percentile sections (--percentile-metrics), any of the
	// Metric* names. Empty means DefaultMetrics.
	Metrics []string
	// Detailed keeps every request's inter-token gaps, for --save-detailed.
	// It costs 8 bytes per token and an allocation now and then per request.
	Detailed bool
	// ITLRelativeAccuracy is the relative accuracy asked of the ITL
	// percentiles (see Sketch). Zero means DefaultRelativeAccuracy.
	ITLRelativeAccuracy float64
}

// Recorder collects what the simulated benchmark client measures. The
// simulation driver calls Send, AddITL, AddTokens, AddStep and Finish as
// events happen, in simulated-time order; Summarize turns it into a Result.
// A Recorder is not safe for concurrent use.
//
// Memory is O(requests) for the per-request records (exact TTFT, TPOT and
// E2EL percentiles need them) plus O(octaves) for the ITL sketch and one
// counter per simulated second; with Detailed, also every token gap.
type Recorder struct {
	percentiles []float64
	metrics     []string
	detailed    bool

	itl     Sketch
	records []Record
	itls    [][]time.Duration // with detailed: gaps of records[i]

	pending       [][]time.Duration // with detailed: gaps of unfinished requests, by Index
	pendingSparse map[int64][]time.Duration

	origin    time.Duration // time 0 of the per-second token buckets
	originSet bool
	tokens    []int64 // streamed chunks per second since origin
	steps     int64
	stepRows  int64
}

// Indices below this keep their pending gaps in a slice, others in a map.
const densePendingLimit = 1 << 24

// Per-second token buckets beyond this (about 2.1 years) are dropped.
const maxTokenBuckets = 1 << 26

// NewRecorder checks opts and returns an empty Recorder.
func NewRecorder(opts RecorderOptions) (*Recorder, error) {
	r := &Recorder{
		percentiles: slices.Clone(opts.Percentiles),
		detailed:    opts.Detailed,
	}
	if len(r.percentiles) == 0 {
		r.percentiles = DefaultPercentiles()
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

// Send notes that a request left the client at `at`. The first call fixes
// time 0 of the per-second output-token buckets behind
// max_output_tokens_per_s, which vLLM bench counts from the earliest send;
// without any Send call (or if tokens arrive first) they count from 0, the
// start of the timed phase.
func (r *Recorder) Send(at time.Duration) {
	if !r.originSet || (len(r.tokens) == 0 && at < r.origin) {
		r.origin, r.originSet = at, true
	}
}

// AddITL records one streamed-token gap of request index: the time between
// two consecutive chunks reaching the client (vLLM bench's itl). It is the
// hot path: O(1) and allocation-free unless the recorder is Detailed.
func (r *Recorder) AddITL(index int64, gap time.Duration) {
	r.itl.Add(Seconds(gap))
	if r.detailed {
		r.keepITL(index, gap)
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

func (r *Recorder) keepITL(index int64, gap time.Duration) {
	if index >= 0 && index < densePendingLimit {
		if index >= int64(len(r.pending)) {
			r.pending = append(r.pending, make([][]time.Duration, int(index)+1-len(r.pending))...)
		}
		r.pending[index] = append(r.pending[index], gap)
		return
	}
	if r.pendingSparse == nil {
		r.pendingSparse = make(map[int64][]time.Duration)
	}
	r.pendingSparse[index] = append(r.pendingSparse[index], gap)
}

func (r *Recorder) takeITL(index int64) []time.Duration {
	if index >= 0 && index < int64(len(r.pending)) {
		g := r.pending[index]
		r.pending[index] = nil
		return g
	}
	g := r.pendingSparse[index]
	delete(r.pendingSparse, index)
	return g
}

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
// failed, with its RejectReason as the error).
func (r *Recorder) Finish(rec Record) {
	r.records = append(r.records, rec)
	if r.detailed {
		r.itls = append(r.itls, r.takeITL(rec.Index))
	}
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
