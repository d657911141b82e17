package vllmbench

import (
	"math"
	"regexp"
	"strconv"

	"blis/metrics"
)

// Formula says whose formulas Recompute applies (for a validation page).
const Formula = "vLLM bench's: np.mean, np.median and np.percentile (linear) over the successful requests; " +
	"TPOT = (latency - TTFT) / (output tokens - 1) for outputs > 1; ITL pooled over every chunk gap; " +
	"output throughput = total output tokens / the file's duration"

// vllmStatKey matches vLLM bench's statistics keys: ms in the result JSON,
// seconds in InferenceX's trimmed copies.
var vllmStatKey = regexp.MustCompile(`^(mean|median|p([0-9.]+))_(ttft|tpot|itl|e2el)(_ms)?$`)

// Recompute recomputes a vLLM bench run's main published aggregates from
// its --save-detailed records, with vLLM bench's formulas.
func Recompute(run *metrics.MeasuredRun) []metrics.Recomputed {
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
		t, lat := metrics.Seconds(q.TTFT), float64(q.End-q.Start)/1e9
		ttft = append(ttft, t)
		e2el = append(e2el, lat)
		if q.OutputTokens > 1 {
			tpot = append(tpot, (lat-t)/float64(q.OutputTokens-1))
		}
		for _, g := range q.ITLs {
			itl = append(itl, metrics.Seconds(g))
		}
	}
	lists := map[string][]float64{"ttft": ttft, "tpot": tpot, "itl": itl, "e2el": e2el}
	var out []metrics.Recomputed
	add := func(m metrics.MeasuredMetric, v float64) {
		out = append(out, metrics.Recomputed{Name: m.Name, Unit: m.Unit, Published: m.Value, Recomputed: v})
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
		mean, median, _, pct := metrics.ValueStats(lists[k[3]], pcts)
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

// finite maps NaN and ±Inf to 0, as metrics.Summarize does.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}
