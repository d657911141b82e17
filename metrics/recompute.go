package metrics

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Recomputing a measured run's published aggregates from its own
// per-request records, with the publishing tool's formulas: the same code
// the exporters write those aggregates with (aiperfMetrics, ValueStats,
// glMetrics), so there is one copy of each tool's formulas. A run whose
// recomputed aggregates match the published ones has records that are the
// population the published numbers describe; only then may its requests
// be paired with BLIS's and stand for the published run.

// Recomputed is one published aggregate next to the value the tool's
// formula gives from the run's records.
type Recomputed struct {
	Name       string // as MeasuredRun.Metrics names it
	Unit       string // the published unit
	Published  float64
	Recomputed float64 // NaN when the records cannot give it
	// Quantum is half a unit of the file's last printed decimal (aiperf's
	// CSV keeps two decimals: 0.005); 0 when the file prints the value in
	// full.
	Quantum float64
}

// RecomputeFormulas names, per format, whose formulas RecomputeAggregates
// applies (for the page's text).
var RecomputeFormulas = map[string]string{
	FormatAIPerf: "aiperf's: numpy mean, std and linear percentiles over the profiling records; " +
		"ITL = (request latency - TTFT) / (output tokens - 1); output token throughput = total output tokens / " +
		"(last response - first request)",
	FormatVLLM: "vLLM bench's: np.mean, np.median and np.percentile (linear) over the successful requests; " +
		"TPOT = (latency - TTFT) / (output tokens - 1) for outputs > 1; ITL pooled over every chunk gap; " +
		"output throughput = total output tokens / the file's duration",
	FormatGuideLLM: "guidellm's DistributionSummary (from_values, rate and concurrency distributions) " +
		"over the successful requests' timings",
	FormatInferencePerf: "inference-perf's summarize (np.mean, np.percentile linear, 50th as median) over the " +
		"successful requests; TTFT = first token time - start, TPOT = (last - first token time) / (output tokens - 1)",
}

// RecomputeAggregates recomputes the run's main published aggregates (the
// latencies, token counts and throughputs a validation compares) from its
// records. It returns nil when the run has no records, no aggregates, or a
// format whose aggregates BLIS cannot recompute (llm-d, InferenceX), and
// for a guidellm file holding more than one benchmark (its records are
// pooled).
func RecomputeAggregates(run *MeasuredRun) []Recomputed {
	if run == nil || len(run.Requests) == 0 || len(run.Metrics) == 0 {
		return nil
	}
	switch run.Format {
	case FormatAIPerf:
		return recomputeAIPerf(run)
	case FormatVLLM:
		return recomputeVLLM(run)
	case FormatGuideLLM:
		return recomputeGuideLLM(run)
	case FormatInferencePerf:
		return recomputeInferencePerf(run)
	}
	return nil
}

// ipBound are the inference-perf summary values the records determine
// exactly (a chunk's tokens share its arrival time, so the per-token ITL
// statistics of a file that kept per-token times are not rebuilt).
var ipBound = regexp.MustCompile(`^summary\.successes\.(count|latency\.(request_latency|time_to_first_token|time_per_output_token)\.(mean|median|p90|p99))$`)

func recomputeInferencePerf(run *MeasuredRun) []Recomputed {
	r, ri := resultFromRecords(run.Requests)
	ri.EpochUnixNano = 0
	sum, err := parseInferencePerfFile(InferencePerfSummaryFile, encodeIPSummary(ipRequests(r, ri)))
	if err != nil {
		return nil
	}
	var out []Recomputed
	for _, p := range run.Metrics {
		if !ipBound.MatchString(p.Name) {
			continue
		}
		rec := math.NaN()
		if m, ok := sum.Metric(p.Name); ok {
			rec = m.Value
		}
		out = append(out, Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec})
	}
	return out
}

// bindStats are the aiperf statistics bound, per metric tag.
var aiperfBound = []struct {
	tag   string
	stats []string
}{
	{"time_to_first_token", []string{"avg", "p50", "p90", "p99"}},
	{"inter_token_latency", []string{"avg", "p50", "p90", "p99"}},
	{"inter_chunk_latency", []string{"avg", "p50", "p90"}},
	{"request_latency", []string{"avg", "p50", "p90", "p99"}},
	{"output_token_throughput_per_user", []string{"avg"}},
	{"output_sequence_length", []string{"avg"}},
	{"input_sequence_length", []string{"avg"}},
	{"request_count", []string{"avg"}},
	{"request_throughput", []string{"avg"}},
	{"output_token_throughput", []string{"avg"}},
	{"benchmark_duration", []string{"avg"}},
}

// resultFromRecords rebuilds a Result (and the RunInfo anchoring its
// clock) from measured records, so the exporters' formulas apply to them.
// A request's latency is its end minus its start.
func resultFromRecords(reqs []MeasuredRequest) (*Result, *RunInfo) {
	base := int64(math.MaxInt64)
	for i := range reqs {
		base = min(base, reqs[i].Start)
	}
	r := &Result{Detailed: true, Requests: make([]RequestResult, 0, len(reqs))}
	for i := range reqs {
		q := &reqs[i]
		rr := RequestResult{Index: int64(i), Success: q.Success, Error: q.Error, InputTokens: q.InputTokens,
			Start: time.Duration(q.Start - base), End: time.Duration(q.End - base)}
		if q.Success {
			rr.OutputTokens, rr.TTFT, rr.Latency, rr.ITLs = q.OutputTokens, q.TTFT, time.Duration(q.End-q.Start), q.ITLs
		}
		r.Requests = append(r.Requests, rr)
	}
	return r, &RunInfo{EpochUnixNano: base}
}

func recomputeAIPerf(run *MeasuredRun) []Recomputed {
	r, ri := resultFromRecords(run.Requests)
	ms := aiperfMetrics(r, ri)
	byTag := map[string]*aiperfMetric{}
	for i := range ms {
		byTag[ms[i].Tag] = &ms[i]
	}
	// The JSON prints every value in full; without it, the CSV's two
	// decimals are bound.
	_, hasJSON := run.Metric("request_count.avg")
	var out []Recomputed
	for _, b := range aiperfBound {
		m := byTag[b.tag]
		for _, st := range b.stats {
			rec := math.NaN()
			if m != nil {
				if v, ok := m.stat(st); ok {
					rec = v
				}
			}
			if hasJSON {
				p, ok := run.Metric(b.tag + "." + st)
				if !ok {
					continue
				}
				if m != nil && p.Unit != m.Unit {
					rec = convertTimeUnit(rec, m.Unit, p.Unit)
				}
				out = append(out, Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec})
				continue
			}
			if m == nil {
				continue
			}
			p, ok := run.Metric("csv:" + aiperfCSVName(m) + "." + st)
			if !ok {
				continue
			}
			out = append(out, Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec, Quantum: 0.005})
		}
	}
	return out
}

// convertTimeUnit converts v between aiperf time units; NaN when either
// unit is not one.
func convertTimeUnit(v float64, from, to string) float64 {
	f, ok1 := aiperfUnitNS(from)
	t, ok2 := aiperfUnitNS(to)
	if !ok1 || !ok2 {
		return math.NaN()
	}
	return v * f / t
}

// vllmStatKey matches vLLM bench's statistics keys: ms in the result JSON,
// seconds in InferenceX's trimmed copies.
var vllmStatKey = regexp.MustCompile(`^(mean|median|p([0-9.]+))_(ttft|tpot|itl|e2el)(_ms)?$`)

func recomputeVLLM(run *MeasuredRun) []Recomputed {
	var ttft, tpot, itl, e2el []float64
	var inTok, outTok int64
	completed := 0
	for i := range run.Requests {
		q := &run.Requests[i]
		if !q.Success {
			continue
		}
		completed++
		inTok += int64(q.InputTokens)
		outTok += int64(q.OutputTokens)
		t, lat := seconds(q.TTFT), float64(q.End-q.Start)/1e9
		ttft = append(ttft, t)
		e2el = append(e2el, lat)
		if q.OutputTokens > 1 {
			tpot = append(tpot, (lat-t)/float64(q.OutputTokens-1))
		}
		for _, g := range q.ITLs {
			itl = append(itl, seconds(g))
		}
	}
	lists := map[string][]float64{"ttft": ttft, "tpot": tpot, "itl": itl, "e2el": e2el}
	var out []Recomputed
	add := func(m MeasuredMetric, v float64) {
		out = append(out, Recomputed{Name: m.Name, Unit: m.Unit, Published: m.Value, Recomputed: v})
	}
	dur := math.NaN()
	if d, ok := run.Metric("duration"); ok && d.Value > 0 {
		dur = d.Value
	}
	for _, m := range run.Metrics {
		switch m.Name {
		case "completed":
			add(m, float64(completed))
			continue
		case "total_input_tokens":
			add(m, float64(inTok))
			continue
		case "total_output_tokens":
			add(m, float64(outTok))
			continue
		case "request_throughput":
			add(m, float64(completed)/dur)
			continue
		case "output_throughput":
			add(m, float64(outTok)/dur)
			continue
		}
		k := vllmStatKey.FindStringSubmatch(m.Name)
		if k == nil {
			continue
		}
		scale := 1.0
		if k[4] != "" {
			scale = 1000
		}
		var pcts []float64
		if k[2] != "" {
			p, err := strconv.ParseFloat(k[2], 64)
			if err != nil {
				continue
			}
			pcts = []float64{p}
		}
		mean, median, _, pct := ValueStats(lists[k[3]], pcts)
		v := mean
		switch {
		case k[1] == "median":
			v = median
		case len(pct) == 1:
			v = pct[0]
		}
		add(m, finite(v)*scale)
	}
	return out
}

// guidellmBound are the guidellm metrics bound (successful requests).
var guidellmBound = []struct {
	metric string
	stats  []string
}{
	{"time_to_first_token_ms", []string{"mean", "median", "p90", "p99"}},
	{"inter_token_latency_ms", []string{"mean", "median", "p90"}},
	{"time_per_output_token_ms", []string{"mean", "median"}},
	{"request_latency", []string{"mean", "median", "p90"}},
	{"prompt_token_count", []string{"mean"}},
	{"output_token_count", []string{"mean"}},
	{"requests_per_second", []string{"mean"}},
}

func recomputeGuideLLM(run *MeasuredRun) []Recomputed {
	for _, m := range run.Metrics {
		if len(m.Name) > 12 && m.Name[:12] == "benchmarks[1" {
			return nil
		}
	}
	var succ, errd []*glReq
	for i := range run.Requests {
		q := &run.Requests[i]
		g := &glReq{id: q.ID, start: float64(q.Start) / 1e9, end: float64(q.End) / 1e9, prompt: q.InputTokens}
		if !q.Success {
			g.errored, g.err = true, q.Error
			errd = append(errd, g)
			continue
		}
		g.hasTok = true
		g.first = float64(q.Start+int64(q.TTFT)) / 1e9
		g.last = g.end
		if q.OutputTokens > 1 && q.TPOTms > 0 {
			g.last = g.first + q.TPOTms*float64(q.OutputTokens-1)/1000
		}
		g.output, g.hasOutput = q.OutputTokens, true
		g.iters = q.Chunks
		if g.iters == 0 {
			g.iters = q.OutputTokens
		}
		succ = append(succ, g)
	}
	start, end, ok := glWindow(succ, errd)
	if !ok {
		return nil
	}
	ms := glMetrics(succ, errd, start, end)
	var out []Recomputed
	for _, b := range guidellmBound {
		i := slices.IndexFunc(ms, func(m glMetric) bool { return m.name == b.metric })
		for _, st := range b.stats {
			p, ok := run.Metric("benchmarks[0]." + b.metric + ".successful." + st)
			if !ok {
				continue
			}
			rec := math.NaN()
			if i >= 0 {
				rec = ms[i].st.Successful.stat(st)
			}
			out = append(out, Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec})
		}
	}
	return out
}

// stat is one statistic of a DistributionSummary by its report name.
func (d *glDist) stat(name string) float64 {
	switch name {
	case "mean":
		return d.Mean
	case "median":
		return d.Median
	case "std_dev":
		return d.StdDev
	case "min":
		return d.Min
	case "max":
		return d.Max
	}
	if i := slices.Index(glPctNames[:], name); i >= 0 {
		return d.P[i]
	}
	return math.NaN()
}
