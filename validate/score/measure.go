package score

import (
	"math"
	"slices"
	"strconv"
	"time"

	"blis/metrics"
	"blis/metrics/format"
)

// The metrics a validation page compares, and how each side's value is
// computed. Where the measured run has per-request records, both sides are
// computed from records with the same code (RecordValues), so a run
// compared with itself has zero error; where it has only aggregates, the
// measured side reads the format's own aggregate (AggregateValues) and
// BLIS's side its Result (ResultValues).

// Metric identifies one compared metric.
type Metric int

// The compared metrics, in page order.
const (
	MOutputTokS  Metric = iota // output tokens / (last end − first start)
	MTokSPerUser               // mean over requests of 1000/TPOT ms (aiperf output_token_throughput_per_user)
	MIntvtyP50                 // 1000/p50(TPOT ms) (InferenceX: 1/p(x), not p(1/x))
	MIntvtyP90                 // 1000/p90(TPOT ms)
	MITLMean                   // every streamed-chunk gap, pooled (vLLM bench ITL)
	MITLP50
	MITLP90
	MTPOTMean // per request (E2E − TTFT)/(output tokens − 1) (vLLM bench TPOT, aiperf ITL)
	MTPOTP50
	MTPOTP90
	MTTFTMean
	MTTFTP50
	MTTFTP90
	ME2EMean
	NumMetrics
)

// MetricInfo describes one metric.
type MetricInfo struct {
	Name string // as the page prints it ("ITL p90")
	Key  string // JSON key ("itl_p90_ms")
	Unit string
	// TTFT marks the metrics of the page's TTFT section; the others are
	// output metrics.
	TTFT bool
}

var metricInfo = [NumMetrics]MetricInfo{
	MOutputTokS:  {"output tok/s", "output_tok_s", "tok/s", false},
	MTokSPerUser: {"output tok/s per user", "output_tok_s_per_user", "tok/s/user", false},
	MIntvtyP50:   {"interactivity p50", "interactivity_p50", "tok/s/user", false},
	MIntvtyP90:   {"interactivity p90", "interactivity_p90", "tok/s/user", false},
	MITLMean:     {"ITL mean", "itl_mean_ms", "ms", false},
	MITLP50:      {"ITL p50", "itl_p50_ms", "ms", false},
	MITLP90:      {"ITL p90", "itl_p90_ms", "ms", false},
	MTPOTMean:    {"TPOT mean", "tpot_mean_ms", "ms", false},
	MTPOTP50:     {"TPOT p50", "tpot_p50_ms", "ms", false},
	MTPOTP90:     {"TPOT p90", "tpot_p90_ms", "ms", false},
	MTTFTMean:    {"TTFT mean", "ttft_mean_ms", "ms", true},
	MTTFTP50:     {"TTFT p50", "ttft_p50_ms", "ms", true},
	MTTFTP90:     {"TTFT p90", "ttft_p90_ms", "ms", true},
	ME2EMean:     {"E2E mean", "e2e_mean_ms", "ms", false},
}

// Info describes m.
func (m Metric) Info() MetricInfo { return metricInfo[m] }

// Values holds one value per Metric; NaN means the side does not state it.
type Values [NumMetrics]float64

// NoValues is every metric missing.
func NoValues() Values {
	var v Values
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// Req is one request as either side recorded it, in the units pairing and
// the record metrics need. Start and End are nanoseconds on the side's
// own clock (only differences are used).
type Req struct {
	ID           string
	Session      string // conversation/session id; "" when none
	Turn         int
	Start, End   int64
	OK           bool
	InputTokens  int
	OutputTokens int
	TTFT         time.Duration
	ITLs         []time.Duration
}

// E2E is the request's end-to-end latency.
func (q *Req) E2E() time.Duration { return time.Duration(q.End - q.Start) }

// TPOTms is (E2E − TTFT)/(output tokens − 1) in ms, NaN with fewer than two
// output tokens.
func (q *Req) TPOTms() float64 {
	if q.OutputTokens < 2 {
		return math.NaN()
	}
	return float64(q.E2E()-q.TTFT) / 1e6 / float64(q.OutputTokens-1)
}

// ITLms is the request's mean streamed-chunk gap in ms (its TPOT when the
// format lists no gaps).
func (q *Req) ITLms() float64 {
	if len(q.ITLs) == 0 {
		return q.TPOTms()
	}
	var s time.Duration
	for _, g := range q.ITLs {
		s += g
	}
	return float64(s) / 1e6 / float64(len(q.ITLs))
}

// ReqsFromMeasured converts a measured run's records.
func ReqsFromMeasured(run *metrics.MeasuredRun) []Req {
	out := make([]Req, len(run.Requests))
	for i, q := range run.Requests {
		out[i] = Req{ID: q.ID, Session: q.Conversation, Turn: q.Turn, Start: q.Start, End: q.End, OK: q.Success,
			InputTokens: q.InputTokens, OutputTokens: q.OutputTokens, TTFT: q.TTFT, ITLs: q.ITLs}
	}
	return out
}

// ReqsFromResult converts BLIS's per-request results (ITLs only when the
// recorder was Detailed), in completion order, as BLIS's exports and the
// tools they mirror list requests. A request's session and turn are its
// result's; BLIS's exports write a request outside any session as its own
// conversation, so it is one here too: numbered by its index, turn 0.
func ReqsFromResult(r *metrics.Result) []Req {
	out := make([]Req, len(r.Requests))
	for i, q := range r.InCompletionOrder() {
		out[i] = Req{ID: strconv.FormatInt(q.Index, 10), Session: strconv.FormatInt(q.Index, 10), Start: int64(q.Start), End: int64(q.End),
			OK: q.Success, InputTokens: q.InputTokens, OutputTokens: q.OutputTokens, TTFT: q.TTFT, ITLs: q.ITLs}
		if q.Session != 0 {
			out[i].Session, out[i].Turn = strconv.FormatUint(q.Session, 10), q.Turn
		}
	}
	return out
}

// RecordValues computes every metric from per-request records: successful
// requests only, except that the throughput window spans every request.
func RecordValues(reqs []Req) Values {
	v := NoValues()
	var ttft, tpot, itl, e2e []float64
	var perUser float64
	nUser := 0
	var outTok int64
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range reqs {
		q := &reqs[i]
		first, last = min(first, q.Start), max(last, q.End)
		if !q.OK {
			continue
		}
		outTok += int64(q.OutputTokens)
		ttft = append(ttft, float64(q.TTFT)/1e6)
		e2e = append(e2e, float64(q.E2E())/1e6)
		if t := q.TPOTms(); !math.IsNaN(t) {
			tpot = append(tpot, t)
			if t > 0 {
				perUser += 1000 / t
				nUser++
			}
		}
		for _, g := range q.ITLs {
			itl = append(itl, float64(g)/1e6)
		}
	}
	if len(e2e) == 0 {
		return v
	}
	if last > first {
		v[MOutputTokS] = float64(outTok) / (float64(last-first) / 1e9)
	}
	if nUser > 0 {
		v[MTokSPerUser] = perUser / float64(nUser)
	}
	dist := func(xs []float64, mean, p50, p90 Metric) {
		if len(xs) == 0 {
			return
		}
		v[mean] = Mean(xs)
		s := slices.Clone(xs)
		slices.Sort(s)
		v[p50] = percentileSorted(s, 50)
		v[p90] = percentileSorted(s, 90)
	}
	dist(ttft, MTTFTMean, MTTFTP50, MTTFTP90)
	dist(tpot, MTPOTMean, MTPOTP50, MTPOTP90)
	dist(itl, MITLMean, MITLP50, MITLP90)
	v[ME2EMean] = Mean(e2e)
	intvty(&v)
	return v
}

// intvty fills interactivity from TPOT percentiles, as InferenceX does.
func intvty(v *Values) {
	for _, x := range [][2]Metric{{MIntvtyP50, MTPOTP50}, {MIntvtyP90, MTPOTP90}} {
		if t := v[x[1]]; t > 0 {
			v[x[0]] = 1000 / t
		}
	}
}

// ResultValues reads BLIS's Result aggregates: vLLM bench's statistics
// (ITL percentiles within the recorder's sketch accuracy). Percentiles
// the recorder did not compute are NaN; tok/s per user needs Requests.
func ResultValues(r *metrics.Result) Values {
	v := NoValues()
	if r.Completed == 0 {
		return v
	}
	v[MOutputTokS] = r.OutputThroughput
	pct := func(st metrics.Stat, p float64) float64 {
		if i := slices.Index(r.Percentiles, p); i >= 0 && i < len(st.Percentiles) {
			return st.Percentiles[i]
		}
		if p == 50 {
			return st.Median
		}
		return math.NaN()
	}
	set := func(st metrics.Stat, mean, p50, p90 Metric) {
		v[mean], v[p50], v[p90] = st.Mean, pct(st, 50), pct(st, 90)
	}
	set(r.TTFT, MTTFTMean, MTTFTP50, MTTFTP90)
	set(r.TPOT, MTPOTMean, MTPOTP50, MTPOTP90)
	set(r.ITL, MITLMean, MITLP50, MITLP90)
	v[ME2EMean] = r.E2EL.Mean
	var perUser float64
	n := 0
	for i := range r.Requests {
		q := &r.Requests[i]
		if q.Success && q.OutputTokens >= 2 && q.Latency > q.TTFT {
			perUser += 1000 / (float64(q.Latency-q.TTFT) / 1e6 / float64(q.OutputTokens-1))
			n++
		}
	}
	if n > 0 {
		v[MTokSPerUser] = perUser / float64(n)
	}
	intvty(&v)
	return v
}

// aggregateNames maps each metric to the aggregate a format states it
// under, with the unit the value must carry (converted to the metric's).
var aggregateNames = map[string][NumMetrics]string{
	format.VLLM: {
		MOutputTokS: "output_throughput",
		MTTFTMean:   "mean_ttft_ms", MTTFTP50: "median_ttft_ms", MTTFTP90: "p90_ttft_ms",
		MTPOTMean: "mean_tpot_ms", MTPOTP50: "median_tpot_ms", MTPOTP90: "p90_tpot_ms",
		MITLMean: "mean_itl_ms", MITLP50: "median_itl_ms", MITLP90: "p90_itl_ms",
		ME2EMean: "mean_e2el_ms",
	},
	format.LLMD: {
		MOutputTokS: llmdAgg + "throughput.output_token_rate.mean",
		MTTFTMean:   llmdAgg + "latency.time_to_first_token.mean", MTTFTP50: llmdAgg + "latency.time_to_first_token.p50",
		MTTFTP90:  llmdAgg + "latency.time_to_first_token.p90",
		MTPOTMean: llmdAgg + "latency.time_per_output_token.mean", MTPOTP50: llmdAgg + "latency.time_per_output_token.p50",
		MTPOTP90: llmdAgg + "latency.time_per_output_token.p90",
		MITLMean: llmdAgg + "latency.inter_token_latency.mean", MITLP50: llmdAgg + "latency.inter_token_latency.p50",
		MITLP90:  llmdAgg + "latency.inter_token_latency.p90",
		ME2EMean: llmdAgg + "latency.request_latency.mean",
	},
	// inference-perf's summary_lifecycle_metrics.json (kubernetes-sigs/
	// inference-perf reportgen/base.py): seconds, its 50th percentile
	// named "median".
	format.InferencePerf: {
		MOutputTokS: ipAgg + "throughput.output_tokens_per_sec",
		MTTFTMean:   ipAgg + "latency.time_to_first_token.mean", MTTFTP50: ipAgg + "latency.time_to_first_token.median",
		MTTFTP90:  ipAgg + "latency.time_to_first_token.p90",
		MTPOTMean: ipAgg + "latency.time_per_output_token.mean", MTPOTP50: ipAgg + "latency.time_per_output_token.median",
		MTPOTP90: ipAgg + "latency.time_per_output_token.p90",
		MITLMean: ipAgg + "latency.inter_token_latency.mean", MITLP50: ipAgg + "latency.inter_token_latency.median",
		MITLP90:  ipAgg + "latency.inter_token_latency.p90",
		ME2EMean: ipAgg + "latency.request_latency.mean",
	},
}

const (
	llmdAgg = "results.request_performance.aggregate."
	ipAgg   = "summary.successes."
)

// AggregateValues reads the metrics a measured run states as aggregates
// (vLLM bench JSON, llm-d report); other formats, and metrics a file does
// not state, are NaN. Times in seconds are converted to ms.
func AggregateValues(run *metrics.MeasuredRun) Values {
	v := NoValues()
	names, ok := aggregateNames[run.Format]
	if !ok {
		return v
	}
	for m := Metric(0); m < NumMetrics; m++ {
		if names[m] == "" {
			continue
		}
		x, ok := run.Metric(names[m])
		if !ok || math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
			continue
		}
		val := x.Value
		if m.Info().Unit == "ms" {
			switch x.Unit {
			case "s", "s/token", "sec":
				val *= 1000
			case "ms", "ms/token", "":
			default:
				continue
			}
		}
		v[m] = val
	}
	intvty(&v)
	return v
}

// Mean is the arithmetic mean of xs (NaN when empty).
func Mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// percentileSorted is numpy's percentile (linear interpolation) of sorted
// xs.
func percentileSorted(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	frac := pos - float64(lo)
	return xs[lo] + (xs[lo+1]-xs[lo])*frac
}

// median is numpy's median of xs (NaN when empty); xs is not changed.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return percentileSorted(s, 50)
}

// MetricName is the page name of a metric's JSON key (the key itself when
// no metric has it).
func MetricName(key string) string {
	for m := Metric(0); m < NumMetrics; m++ {
		if m.Info().Key == key {
			return m.Info().Name
		}
	}
	return key
}
