package inferenceperf

import (
	"math"
	"regexp"

	"blis/metrics"
)

// Formula says whose formulas Recompute applies (for a validation page).
const Formula = "inference-perf's summarize (np.mean, np.percentile linear, 50th as median) over the " +
	"successful requests; TTFT = first token time - start, TPOT = (last - first token time) / (output tokens - 1)"

// ipBound are the inference-perf summary values the records determine
// exactly (a chunk's tokens share its arrival time, so the per-token ITL
// statistics of a file that kept per-token times are not rebuilt).
var ipBound = regexp.MustCompile(`^summary\.successes\.(count|latency\.(request_latency|time_to_first_token|time_per_output_token)\.(mean|median|p90|p99))$`)

// Recompute recomputes an inference-perf run's summary values that its
// per-request records determine, with the code Encode writes them with.
func Recompute(run *metrics.MeasuredRun) []metrics.Recomputed {
	r, ri := metrics.ResultFromMeasured(run.Requests)
	ri.EpochUnixNano = 0
	sum, err := parseFile(SummaryFile, encodeIPSummary(r, ri))
	if err != nil {
		return nil
	}
	var out []metrics.Recomputed
	for _, p := range run.Metrics {
		if !ipBound.MatchString(p.Name) {
			continue
		}
		rec := math.NaN()
		if m, ok := sum.Metric(p.Name); ok {
			rec = m.Value
		}
		out = append(out, metrics.Recomputed{Name: p.Name, Unit: p.Unit, Published: p.Value, Recomputed: rec})
	}
	return out
}
