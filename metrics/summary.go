package metrics

import (
	"cmp"
	"math"
	"slices"
	"time"

	"blis/metrics/internal/numpy"
	"blis/metrics/internal/vlog"
)

// What vLLM bench computes, mirrored from vllm/benchmarks/serve.py
// (vllm-project/vllm main @ 009e6d4a1cd6, the v0.28-era `vllm bench serve`):
// calculate_metrics(), benchmark() and main_async(), with the request
// functions of vllm/benchmarks/lib/endpoint_request_func.py.

// NoChunkError is vLLM bench's error for a stream that never carried a token.
const NoChunkError = "Never received a valid chunk to calculate TTFT.This response will be marked as failed!"

// KV is one --metadata KEY=VALUE pair.
type KV struct{ Key, Value string }

// SLO is one --goodput KEY:VALUE objective: Metric is ttft, tpot or e2el,
// MS the bound in milliseconds. A request is good when it meets all of
// them (its TPOT counts as 0 when it has one output token).
type SLO struct {
	Metric string
	MS     float64
}

// SummaryInput is what Summarize needs besides the recorded events: the run
// as vLLM bench's result JSON describes it, and BLIS's engine-side numbers.
type SummaryInput struct {
	// Duration is the benchmark duration (vLLM: first send to last response).
	Duration time.Duration

	// Run description, written as vLLM bench writes it. Empty strings are
	// written as null.
	Backend     string // endpoint_type and backend (vLLM's --backend, e.g. "openai")
	Label       string // --label
	ModelID     string // --model
	TokenizerID string // --tokenizer, defaulting to the model
	NumPrompts  int    // --num-prompts
	Metadata    []KV   // --metadata, in the order given
	// RequestRate is --request-rate; +Inf (all at once) is written "inf".
	RequestRate float64
	Burstiness  float64 // --burstiness
	// MaxConcurrency is --max-concurrency; 0 means no cap (written null).
	MaxConcurrency int
	// Goodput holds the --goodput objectives; none means request_goodput
	// is null. Objectives on other metrics are ignored.
	Goodput []SLO

	// BLIS's engine-side numbers.
	GPUKVCacheTokens   int
	NumPreemptions     int
	PrefixCacheHitRate float64
	// Deployment is written as-is (encoding/json) under "deployment".
	Deployment any
}

// Stat is one metric as vLLM bench reports it, in milliseconds.
type Stat struct {
	Mean, Median, Std float64
	Percentiles       []float64 // one per Result.Percentiles
}

// RequestResult is one finished request as the client reports it: what
// the per-request outputs (--save-detailed, the export formats) list.
type RequestResult struct {
	Index int64
	// Seq is the request's place in completion order (0 for the first to
	// finish): the order aiperf, GuideLLM and inference-perf record
	// requests in.
	Seq          int64
	Success      bool
	Error        string // "" on success
	InputTokens  int
	OutputTokens int           // 0 when failed
	Start        time.Duration // Record.Sent
	End          time.Duration // Record.Finish: last token, or when it failed
	TTFT         time.Duration // 0 when failed
	Latency      time.Duration // E2EL; 0 when failed
	QueueTime    time.Duration // Record.ClientQueueTime
	ITLs         []time.Duration
	CachedTokens int
	Preemptions  int
	Session      uint64 // Record.Session: 0 outside any multi-turn session
	Turn         int
}

// Result is a run's summary: vLLM bench's result plus BLIS's extras. Times
// in Stat are milliseconds, throughputs per second. No computed field is
// NaN or ±Inf (empty lists give zeros, as in vLLM; a zero Duration gives
// zero rates); RequestRate and Burstiness are passed through (+Inf allowed).
type Result struct {
	Backend, Label, ModelID, TokenizerID string
	NumPrompts                           int
	Metadata                             []KV
	RequestRate, Burstiness              float64
	MaxConcurrency                       int

	DurationS            float64
	Completed, Failed    int
	TotalInputTokens     int64
	TotalOutputTokens    int64
	RequestThroughput    float64 // completed / duration
	HasGoodput           bool
	RequestGoodput       float64 // good completed / duration, when HasGoodput
	OutputThroughput     float64 // total output tokens / duration
	TotalTokenThroughput float64 // (input + output tokens) / duration
	// MaxOutputTokensPerS is the largest count of streamed chunks in one
	// 1-second bucket counted from the earliest send.
	MaxOutputTokensPerS float64
	// MaxConcurrentRequests is the peak number of completed requests whose
	// [Sent, Finish) intervals overlap (exact sweep line).
	MaxConcurrentRequests int
	// FirstStart and LastEnd span every finished request (completed or
	// failed): the earliest Start and the latest End; zero without any.
	FirstStart, LastEnd time.Duration

	Percentiles []float64
	Metrics     []string // metrics with percentile sections, in vLLM's order
	// Per-metric statistics. TTFT, TPOT, E2EL and the client-queue ones are
	// exact (numpy's formulas over the completed requests); ITL's mean and
	// std are exact, its median and percentiles within ITLRelativeAccuracy.
	TTFT, TPOT, ITL, E2EL                     Stat
	ClientQueueTime, E2ELIncludingClientQueue Stat
	ITLRelativeAccuracy                       float64

	GPUKVCacheTokens   int
	NumPreemptions     int
	PrefixCacheHitRate float64
	MeanBatchSize      float64 // mean scheduled requests per engine step
	Deployment         any
	// Stages holds each inference-perf load stage's statistics
	// (StageStats.Results) for a staged run; nil otherwise.
	Stages []StageResult

	// Requests lists every finished request in Index order, unless the
	// recorder was made with OmitRequests. ITLs are kept only when
	// Detailed (the recorder was Detailed).
	Requests []RequestResult
	Detailed bool
}

// InCompletionOrder is r's requests in the order they finished (Seq): the
// order the streaming writers were given them in.
func (r *Result) InCompletionOrder() []*RequestResult {
	out := make([]*RequestResult, len(r.Requests))
	for i := range r.Requests {
		out[i] = &r.Requests[i]
	}
	slices.SortStableFunc(out, func(a, b *RequestResult) int { return cmp.Compare(a.Seq, b.Seq) })
	return out
}

// Summarize computes the run's result. It does not change the recorder and
// gives the same result, bit for bit, for the same recorded events.
func (r *Recorder) Summarize(in SummaryInput) *Result {
	st := &r.stats
	res := &Result{
		Backend: in.Backend, Label: in.Label, ModelID: in.ModelID, TokenizerID: in.TokenizerID,
		NumPrompts: in.NumPrompts, Metadata: slices.Clone(in.Metadata),
		RequestRate: in.RequestRate, Burstiness: in.Burstiness, MaxConcurrency: in.MaxConcurrency,
		DurationS:   Seconds(in.Duration),
		Percentiles: slices.Clone(r.percentiles),
		Metrics:     slices.Clone(r.metrics),

		Completed: st.completed, Failed: st.failed,
		TotalInputTokens: st.totalIn, TotalOutputTokens: st.totalOut,
		FirstStart: st.first, LastEnd: st.last,

		ITLRelativeAccuracy: r.itl.RelativeAccuracy(),
		GPUKVCacheTokens:    in.GPUKVCacheTokens,
		NumPreemptions:      in.NumPreemptions,
		PrefixCacheHitRate:  finite(in.PrefixCacheHitRate),
		Deployment:          in.Deployment,
		Detailed:            r.detailed,
	}
	if r.steps > 0 {
		res.MeanBatchSize = float64(r.stepRows) / float64(r.steps)
	}
	if r.keep {
		// vLLM's outputs list is in request order.
		res.Requests = slices.Clone(r.kept)
		slices.SortStableFunc(res.Requests, func(a, b RequestResult) int { return cmp.Compare(a.Index, b.Index) })
	}
	if d := res.DurationS; d > 0 {
		res.RequestThroughput = float64(res.Completed) / d
		res.OutputThroughput = float64(res.TotalOutputTokens) / d
		res.TotalTokenThroughput = float64(res.TotalInputTokens+res.TotalOutputTokens) / d
	}

	// The completed requests in Index order: the rows logged so far, then
	// those still waiting for a lower index. Each call starts a pass that
	// reads res.Completed rows.
	var held []statRow
	st.order.Each(func(row statRow) {
		if row.ok {
			held = append(held, row)
		}
	})
	rows := func() (next func() statRow) {
		rd := st.rows.log.Reader()
		logged, h := st.rows.n, 0
		return func() statRow {
			if logged > 0 {
				logged--
				return st.rows.read(&rd)
			}
			h++
			return held[h-1]
		}
	}

	if slos := lastSLOs(in.Goodput); len(slos) > 0 {
		res.HasGoodput = true
		good := 0
		next := rows()
		for range res.Completed {
			if meetsAll(next(), slos) {
				good++
			}
		}
		if res.DurationS > 0 {
			res.RequestGoodput = float64(good) / res.DurationS
		}
	}

	if res.Completed > 0 {
		for _, c := range r.tokens {
			res.MaxOutputTokensPerS = max(res.MaxOutputTokensPerS, float64(c))
		}
		res.MaxConcurrentRequests = r.conc.result()
	}

	// Each metric is a sequence read from the rows, one pass per sum: no
	// array of every value unless it is short (numpy.Seq.Order).
	p := r.percentiles
	buf := numpy.Buffer(res.Completed)
	stat := func(n int, value func(row statRow) (float64, bool)) Stat {
		seq := numpy.Seq{N: n, Open: func() func() float64 {
			next := rows()
			return func() float64 {
				for {
					if v, ok := value(next()); ok {
						return v
					}
				}
			}
		}}
		return msStat(seqStats(seq, p, buf))
	}
	res.TTFT = stat(res.Completed, func(row statRow) (float64, bool) { return Seconds(row.ttft), true })
	res.TPOT = stat(st.multiToken, func(row statRow) (float64, bool) {
		return tpotOf(Seconds(row.ttft), Seconds(row.lat), row.out), row.out > 1
	})
	res.E2EL = stat(res.Completed, func(row statRow) (float64, bool) { return Seconds(row.lat), true })
	res.ClientQueueTime = stat(res.Completed, func(row statRow) (float64, bool) { return Seconds(row.queue), true })
	res.E2ELIncludingClientQueue = stat(res.Completed, func(row statRow) (float64, bool) {
		return Seconds(row.lat) + Seconds(row.queue), true
	})
	res.ITL = r.itlStat()
	return res
}

// seqStats is ValueStats of a sequence.
func seqStats(seq numpy.Seq, percentiles []float64, buf []float64) (mean, median, std float64, pct []float64) {
	pct = make([]float64, len(percentiles))
	if seq.N == 0 {
		return 0, 0, 0, pct
	}
	mean, std = seq.MeanStd()
	sorted := seq.Order(buf, percentiles)
	median = sorted.Median()
	for i, p := range percentiles {
		pct[i] = sorted.Percentile(p)
	}
	return mean, median, std, pct
}

// meetsAll reports whether a completed request meets every objective (a
// good request, for request_goodput).
func meetsAll(row statRow, slos []SLO) bool {
	ttft, lat := Seconds(row.ttft), Seconds(row.lat)
	for _, s := range slos {
		var v float64
		switch s.Metric {
		case MetricTTFT:
			v = ttft
		case MetricTPOT:
			v = tpotOf(ttft, lat, row.out)
		case MetricE2EL:
			v = lat
		}
		if !(s.MS/1000 >= v) {
			return false
		}
	}
	return true
}

// tpotOf is vLLM's per-request TPOT: (latency − ttft) / (output − 1), and 0
// with one output token (as goodput counts it).
func tpotOf(ttft, lat float64, out int) float64 {
	if out <= 1 {
		return 0
	}
	return (lat - ttft) / float64(out-1)
}

// rowLog keeps the completed requests' TTFT, E2EL, queue time and output
// tokens as varints: about 10 bytes a request.
type rowLog struct {
	log vlog.Log
	n   int64
}

func (l *rowLog) add(row statRow) {
	if !row.ok {
		return
	}
	l.log.Int(int64(row.ttft))
	l.log.Int(int64(row.lat))
	l.log.Int(int64(row.queue))
	l.log.Int(int64(row.out))
	l.n++
}

func (l *rowLog) read(rd *vlog.Reader) statRow {
	row := statRow{ok: true}
	row.ttft = time.Duration(rd.Int())
	row.lat = time.Duration(rd.Int())
	row.queue = time.Duration(rd.Int())
	row.out = int(rd.Int())
	return row
}

// itlStat reports the ITL sketch like numpy would the full list: exact mean
// and std, median and percentiles from the sketch; zeros when empty.
func (r *Recorder) itlStat() Stat {
	st := Stat{Percentiles: make([]float64, len(r.percentiles))}
	if r.itl.Count() == 0 {
		return st
	}
	st.Mean = finite(r.itl.Mean()) * 1000
	st.Std = finite(r.itl.Std()) * 1000
	st.Median = finite(r.itl.Quantile(0.5)) * 1000
	for i, p := range r.percentiles {
		st.Percentiles[i] = finite(r.itl.Quantile(p/100)) * 1000
	}
	return st
}

// ValueStats is what vLLM bench reports for one metric, in the metric's
// base unit (seconds): mean, median, std and the selected percentiles. An
// empty list gives zeros, as vLLM's `np.mean(values or 0)` does.
func ValueStats(values []float64, percentiles []float64) (mean, median, std float64, pct []float64) {
	pct = make([]float64, len(percentiles))
	if len(values) == 0 {
		return 0, 0, 0, pct
	}
	mean = numpy.Mean(values)
	std = numpy.Std(values)
	sorted := slices.Clone(values)
	numpy.SortFloats(sorted)
	median = numpy.MedianSorted(sorted)
	for i, p := range percentiles {
		pct[i] = numpy.PercentileSorted(sorted, p)
	}
	return mean, median, std, pct
}

// msStat converts ValueStats' seconds to a Stat in milliseconds, as vLLM
// does (`np.mean(ttfts or 0) * 1000`).
func msStat(mean, median, std float64, pct []float64) Stat {
	st := Stat{Mean: finite(mean) * 1000, Median: finite(median) * 1000, Std: finite(std) * 1000,
		Percentiles: make([]float64, len(pct))}
	for i, v := range pct {
		st.Percentiles[i] = finite(v) * 1000
	}
	return st
}

// lastSLOs keeps the objectives on ttft, tpot and e2el, the last one given
// for each (vLLM parses --goodput into a dict), in that fixed order.
func lastSLOs(in []SLO) []SLO {
	var out []SLO
	for _, m := range []string{MetricTTFT, MetricTPOT, MetricE2EL} {
		for i := len(in) - 1; i >= 0; i-- {
			if in[i].Metric == m && !math.IsNaN(in[i].MS) {
				out = append(out, in[i])
				break
			}
		}
	}
	return out
}

// Interactivity is InferenceX's "intvty" for a TPOT statistic in
// milliseconds: 1000 / TPOT, the output tokens per second one user sees
// (utils/process_result.py derives one per TPOT statistic; its charts plot
// median_intvty). 0 when TPOT is 0 (no request had two tokens), where
// InferenceX's 1e-8 guard would give 1e11.
func Interactivity(tpotMS float64) float64 {
	if tpotMS <= 0 {
		return 0
	}
	return 1000 / tpotMS
}
