package metrics

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"time"

	"blis/metrics/internal/numpy"
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

// RequestResult is one request as --save-detailed lists it.
type RequestResult struct {
	Index        int64
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

	// Requests lists every finished request in Index order. ITLs are kept
	// only when Detailed (the recorder was Detailed).
	Requests []RequestResult
	Detailed bool
}

// Summarize computes the run's result. It does not change the recorder and
// gives the same result, bit for bit, for the same recorded events.
func (r *Recorder) Summarize(in SummaryInput) *Result {
	res := &Result{
		Backend: in.Backend, Label: in.Label, ModelID: in.ModelID, TokenizerID: in.TokenizerID,
		NumPrompts: in.NumPrompts, Metadata: slices.Clone(in.Metadata),
		RequestRate: in.RequestRate, Burstiness: in.Burstiness, MaxConcurrency: in.MaxConcurrency,
		DurationS:   Seconds(in.Duration),
		Percentiles: slices.Clone(r.percentiles),
		Metrics:     slices.Clone(r.metrics),

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

	// vLLM's outputs list is in request order; numpy's sums depend on it.
	order := make([]int, len(r.records))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return r.records[order[a]].Index < r.records[order[b]].Index })

	var ttfts, tpots, allTPOTs, e2els, queues, e2elsQueue []float64
	type span struct{ start, end time.Duration }
	var spans []span
	res.Requests = make([]RequestResult, 0, len(order))
	for _, i := range order {
		rec := &r.records[i]
		rr := RequestResult{
			Index: rec.Index, InputTokens: rec.InputTokens, Start: rec.Sent, End: rec.Finish,
			QueueTime: rec.ClientQueueTime, CachedTokens: rec.CachedTokens, Preemptions: rec.Preemptions,
		}
		if r.detailed {
			rr.ITLs = r.itls[i]
		}
		switch {
		case rec.Rejected:
			rr.Error = rec.RejectReason
			if rr.Error == "" {
				rr.Error = "rejected"
			}
		case rec.OutputTokens <= 0:
			rr.Error = NoChunkError
		default:
			rr.Success = true
			rr.OutputTokens = rec.OutputTokens
			rr.TTFT = rec.FirstToken - rec.Sent
			rr.Latency = rec.Finish - rec.Sent
		}
		if !rr.Success {
			rr.ITLs = nil
			res.Failed++
			res.Requests = append(res.Requests, rr)
			continue
		}
		res.Completed++
		res.TotalInputTokens += int64(rr.InputTokens)
		res.TotalOutputTokens += int64(rr.OutputTokens)
		ttft, lat := Seconds(rr.TTFT), Seconds(rr.Latency)
		tpot := 0.0
		if rr.OutputTokens > 1 {
			tpot = (lat - ttft) / float64(rr.OutputTokens-1)
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		ttfts = append(ttfts, ttft)
		e2els = append(e2els, lat)
		q := Seconds(rr.QueueTime)
		queues = append(queues, q)
		e2elsQueue = append(e2elsQueue, lat+q)
		spans = append(spans, span{rec.Sent, rec.Finish})
		res.Requests = append(res.Requests, rr)
	}

	if d := res.DurationS; d > 0 {
		res.RequestThroughput = float64(res.Completed) / d
		res.OutputThroughput = float64(res.TotalOutputTokens) / d
		res.TotalTokenThroughput = float64(res.TotalInputTokens+res.TotalOutputTokens) / d
	}

	if slos := lastSLOs(in.Goodput); len(slos) > 0 {
		res.HasGoodput = true
		good := 0
		for i := range ttfts {
			ok := true
			for _, s := range slos {
				var v float64
				switch s.Metric {
				case MetricTTFT:
					v = ttfts[i]
				case MetricTPOT:
					v = allTPOTs[i]
				case MetricE2EL:
					v = e2els[i]
				}
				if !(s.MS/1000 >= v) {
					ok = false
				}
			}
			if ok {
				good++
			}
		}
		if res.DurationS > 0 {
			res.RequestGoodput = float64(good) / res.DurationS
		}
	}

	if len(spans) > 0 {
		for _, c := range r.tokens {
			res.MaxOutputTokensPerS = max(res.MaxOutputTokensPerS, float64(c))
		}
		// Sweep line over half-open [start, end): a departure precedes an
		// arrival at the same instant.
		type event struct {
			at    time.Duration
			delta int
		}
		ev := make([]event, 0, 2*len(spans))
		for _, s := range spans {
			ev = append(ev, event{s.start, 1}, event{s.end, -1})
		}
		slices.SortFunc(ev, func(a, b event) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
		})
		cur := 0
		for _, e := range ev {
			cur += e.delta
			res.MaxConcurrentRequests = max(res.MaxConcurrentRequests, cur)
		}
	}

	p := r.percentiles
	res.TTFT = msStat(ValueStats(ttfts, p))
	res.TPOT = msStat(ValueStats(tpots, p))
	res.E2EL = msStat(ValueStats(e2els, p))
	res.ClientQueueTime = msStat(ValueStats(queues, p))
	res.E2ELIncludingClientQueue = msStat(ValueStats(e2elsQueue, p))
	res.ITL = r.itlStat()
	return res
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
	s := slices.Clone(values)
	slices.Sort(s)
	median = numpy.MedianSorted(s)
	for i, p := range percentiles {
		pct[i] = numpy.PercentileSorted(s, p)
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
