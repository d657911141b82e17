// Package plan holds the logic of `blis plan`: service-level objectives on
// a run's summary statistics, the bisection that finds the highest load
// meeting them, the price table that turns a layout into dollars per hour,
// and the Pareto frontier of throughput per GPU against interactivity. The
// command line (cmd/blis/plan.go) runs the simulations; this package only
// decides.
package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/metrics"
	"blis/scenario"
)

// SLO is one objective on a summary statistic: Metric's Stat must be at
// most LimitMS milliseconds. vLLM's --goodput judges each request against
// a bound; a capacity plan judges the distribution, so an SLO names the
// statistic (p90 TTFT, p99 TPOT) as serving teams write them.
type SLO struct {
	Metric string // ttft, tpot, itl, e2el
	// Stat is mean, median or pNN; Percentile is NN for pNN, else 0.
	Stat       string
	Percentile float64
	LimitMS    float64
}

// SLOMetrics are the metrics an SLO may name: vllm bench serve's
// --percentile-metrics.
var SLOMetrics = []string{"ttft", "tpot", "itl", "e2el"}

// SLOSyntax is what --slo accepts, for error messages and help.
const SLOSyntax = `METRIC:STAT<=VALUE[ms|s], METRIC one of ttft, tpot, itl, e2el; STAT mean, median or pNN (0 < NN < 100, e.g. p90, p99.9); VALUE a number ≥ 0 in ms (the default) or s, e.g. ttft:p90<=2000ms`

// ParseSLO parses one --slo item, e.g. "ttft:p90<=2000ms" or
// "tpot:mean<=0.05s". Errors name the item and what is allowed.
func ParseSLO(item string) (SLO, error) {
	bad := func(why string) (SLO, error) {
		return SLO{}, &scenario.InputError{Key: "--slo", Value: item, Msg: why + "; allowed: " + SLOSyntax}
	}
	metric, rest, ok := strings.Cut(strings.TrimSpace(item), ":")
	if !ok {
		return bad("no ':' between the metric and the statistic")
	}
	metric = strings.ToLower(strings.TrimSpace(metric))
	if !slices.Contains(SLOMetrics, metric) {
		return bad(fmt.Sprintf("unknown metric %q", metric))
	}
	stat, val, ok := strings.Cut(rest, "<=")
	if !ok {
		return bad("no '<=' before the bound")
	}
	o := SLO{Metric: metric, Stat: strings.ToLower(strings.TrimSpace(stat))}
	switch {
	case o.Stat == "mean", o.Stat == "median":
	case strings.HasPrefix(o.Stat, "p"):
		p, err := strconv.ParseFloat(o.Stat[1:], 64)
		if err != nil || !(p > 0 && p < 100) || strings.ContainsAny(o.Stat[1:], "eE+-_xXpPnN") {
			return bad(fmt.Sprintf("bad percentile %q", o.Stat))
		}
		o.Percentile = p
		o.Stat = "p" + strconv.FormatFloat(p, 'f', -1, 64)
	default:
		return bad(fmt.Sprintf("unknown statistic %q", o.Stat))
	}
	val = strings.ToLower(strings.TrimSpace(val))
	scale := 1.0
	switch {
	case strings.HasSuffix(val, "ms"):
		val = strings.TrimSuffix(val, "ms")
	case strings.HasSuffix(val, "s"):
		val, scale = strings.TrimSuffix(val, "s"), 1000
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || strings.ContainsAny(val, "xXpP_") {
		return bad(fmt.Sprintf("bad bound %q", strings.TrimSpace(val)))
	}
	o.LimitMS = f * scale
	return o, nil
}

// String is the SLO in --slo syntax, in milliseconds.
func (o SLO) String() string {
	return fmt.Sprintf("%s:%s<=%sms", o.Metric, o.Stat, strconv.FormatFloat(o.LimitMS, 'f', -1, 64))
}

// Name is the statistic's column name, e.g. "p90_ttft_ms" (vLLM's result
// JSON key for it).
func (o SLO) Name() string { return o.Stat + "_" + o.Metric + "_ms" }

// Value is the statistic in milliseconds from a run's summary. The run must
// have computed the percentile (ApplyNeeds).
func (o SLO) Value(r *metrics.Result) (float64, error) {
	var st metrics.Stat
	switch o.Metric {
	case "ttft":
		st = r.TTFT
	case "tpot":
		st = r.TPOT
	case "itl":
		st = r.ITL
	case "e2el":
		st = r.E2EL
	}
	switch o.Stat {
	case "mean":
		return st.Mean, nil
	case "median":
		return st.Median, nil
	}
	for i, p := range r.Percentiles {
		if p == o.Percentile && i < len(st.Percentiles) {
			return st.Percentiles[i], nil
		}
	}
	return 0, fmt.Errorf("the run did not compute %s (its percentiles: %v)", o.Name(), r.Percentiles)
}

// Met is o's verdict on a value: at most the bound.
func (o SLO) Met(v float64) bool { return v <= o.LimitMS }

// ApplyNeeds makes s compute every statistic the SLOs name: their
// percentiles join --metric-percentiles and their metrics
// --percentile-metrics (kept in the order s has them, new ones after).
func ApplyNeeds(s *scenario.Scenario, slos []SLO) {
	ps := slices.Clone(s.MetricPercentiles)
	ms := strings.Split(s.PercentileMetrics, ",")
	for _, o := range slos {
		if o.Percentile > 0 && !slices.Contains(ps, o.Percentile) {
			ps = append(ps, o.Percentile)
		}
		if !slices.Contains(ms, o.Metric) {
			ms = append(ms, o.Metric)
		}
	}
	s.MetricPercentiles = ps
	s.PercentileMetrics = strings.Trim(strings.Join(ms, ","), ",")
}

// Verdict is every SLO's value on one run and whether all are met. A run
// where some request failed does not pass: the statistics cover completed
// requests only, so failures would otherwise hide a load the deployment
// cannot serve.
type Verdict struct {
	Values []float64 // ms, one per SLO
	Pass   bool
	// Why says what failed: the first SLO missed, or the failed requests.
	Why string
}

// Judge evaluates slos on r.
func Judge(slos []SLO, r *metrics.Result) (Verdict, error) {
	v := Verdict{Values: make([]float64, len(slos)), Pass: true}
	for i, o := range slos {
		x, err := o.Value(r)
		if err != nil {
			return Verdict{}, err
		}
		v.Values[i] = x
		if !o.Met(x) && v.Pass {
			v.Pass, v.Why = false, fmt.Sprintf("%s %.4g ms > %g ms", o.Name(), x, o.LimitMS)
		}
	}
	if r.Failed > 0 && v.Pass {
		v.Pass, v.Why = false, fmt.Sprintf("%d of %d requests failed", r.Failed, r.Failed+r.Completed)
	}
	if r.Completed == 0 && v.Pass {
		v.Pass, v.Why = false, "no request completed"
	}
	return v, nil
}
