package guidellm

import (
	"math"
	"slices"

	"blis/metrics"
)

// Formula says whose formulas Recompute applies (for a validation page).
const Formula = "guidellm's DistributionSummary (from_values, rate and concurrency distributions) " +
	"over the successful requests' timings"

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

// Recompute recomputes a guidellm run's main published aggregates from
// its records, with the code Encode writes them with; nil for a report
// holding more than one benchmark (its records are pooled).
func Recompute(run *metrics.MeasuredRun) []metrics.Recomputed {
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
	var out []metrics.Recomputed
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
			out = append(out, metrics.Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec})
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
