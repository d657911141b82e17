package aiperf

import (
	"math"

	"blis/metrics"
)

// Formula says whose formulas Recompute applies (for a validation page).
const Formula = "aiperf's: numpy mean, std and linear percentiles over the profiling records; " +
	"ITL = (request latency - TTFT) / (output tokens - 1); output token throughput = total output tokens / " +
	"(last response - first request)"

// aiperfBound are the aiperf statistics bound, per metric tag.
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

// Recompute recomputes an aiperf run's main published aggregates (the
// latencies, token counts and throughputs a validation compares) from
// its records, with the code Encode writes them with.
func Recompute(run *metrics.MeasuredRun) []metrics.Recomputed {
	r, ri := metrics.ResultFromMeasured(run.Requests)
	ms := aiperfMetrics(r, ri)
	byTag := map[string]*aiperfMetric{}
	for i := range ms {
		byTag[ms[i].Tag] = &ms[i]
	}
	// The JSON prints every value in full; without it, the CSV's two
	// decimals are bound.
	_, hasJSON := run.Metric("request_count.avg")
	var out []metrics.Recomputed
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
				out = append(out, metrics.Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec})
				continue
			}
			if m == nil {
				continue
			}
			p, ok := run.Metric("csv:" + aiperfCSVName(m) + "." + st)
			if !ok {
				continue
			}
			out = append(out, metrics.Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec, Quantum: 0.005})
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
