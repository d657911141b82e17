package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"blis/metrics"
	"blis/report"
	"blis/scenario"
)

func TestParseSLO(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SLO
		err  string
	}{
		{in: "ttft:p90<=2000ms", want: SLO{Metric: "ttft", Stat: "p90", Percentile: 90, LimitMS: 2000}},
		{in: "tpot:p99<=50", want: SLO{Metric: "tpot", Stat: "p99", Percentile: 99, LimitMS: 50}},
		{in: " TPOT : Mean <= 0.05s ", want: SLO{Metric: "tpot", Stat: "mean", LimitMS: 50}},
		{in: "e2el:median<=12s", want: SLO{Metric: "e2el", Stat: "median", LimitMS: 12000}},
		{in: "itl:p99.9<=80ms", want: SLO{Metric: "itl", Stat: "p99.9", Percentile: 99.9, LimitMS: 80}},
		{in: "ttft:p090<=1", want: SLO{Metric: "ttft", Stat: "p90", Percentile: 90, LimitMS: 1}},
		{in: "ttft<=2000", err: "no ':'"},
		{in: "queue:p90<=1", err: `unknown metric "queue"`},
		{in: "ttft:p90=1", err: "no '<='"},
		{in: "ttft:p100<=1", err: `bad percentile "p100"`},
		{in: "ttft:p0<=1", err: `bad percentile "p0"`},
		{in: "ttft:pnan<=1", err: "bad percentile"},
		{in: "ttft:max<=1", err: `unknown statistic "max"`},
		{in: "ttft:p90<=-1", err: `bad bound "-1"`},
		{in: "ttft:p90<=inf", err: "bad bound"},
		{in: "ttft:p90<=2h", err: "bad bound"},
		{in: "ttft:p90<=", err: "bad bound"},
	} {
		got, err := ParseSLO(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "--slo ") || !scenario.IsInputError(err) {
				t.Errorf("ParseSLO(%q) = %v, %v; want an input error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSLO(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseSLO(got.String()); err != nil || back != got {
			t.Errorf("ParseSLO(%q.String() = %q) = %+v, %v", tc.in, got.String(), back, err)
		}
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"ttft:p90<=2000ms", "tpot:mean<=0.05s", "itl:p99.9<=1", "e2el:median<=", ":<=", "ttft:p1e1<=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseSLO(s)
		if err != nil {
			if !scenario.IsInputError(err) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("ParseSLO(%q): %v", s, err)
			}
			return
		}
		if !slices.Contains(SLOMetrics, o.Metric) || o.LimitMS < 0 || math.IsInf(o.LimitMS, 0) || (o.Percentile != 0 && !(o.Percentile > 0 && o.Percentile < 100)) {
			t.Fatalf("ParseSLO(%q) = %+v", s, o)
		}
		if back, err := ParseSLO(o.String()); err != nil || back != o {
			t.Fatalf("round trip of %q: %+v, %v", s, back, err)
		}
	})
}

func TestApplyNeedsAndJudge(t *testing.T) {
	s := scenario.Defaults() // percentiles 99 of ttft,tpot,itl
	slos := []SLO{
		{Metric: "ttft", Stat: "p90", Percentile: 90, LimitMS: 100},
		{Metric: "e2el", Stat: "p99", Percentile: 99, LimitMS: 1000},
		{Metric: "tpot", Stat: "mean", LimitMS: 10},
	}
	ApplyNeeds(&s, slos)
	if !slices.Equal(s.MetricPercentiles, []float64{99, 90}) || s.PercentileMetrics != "ttft,tpot,itl,e2el" {
		t.Fatalf("ApplyNeeds: %v %q", s.MetricPercentiles, s.PercentileMetrics)
	}
	r := &metrics.Result{Completed: 10, Percentiles: []float64{99, 90},
		TTFT: metrics.Stat{Percentiles: []float64{150, 90}},
		E2EL: metrics.Stat{Percentiles: []float64{900, 800}},
		TPOT: metrics.Stat{Mean: 10}}
	v, err := Judge(slos, r)
	if err != nil || !v.Pass || !slices.Equal(v.Values, []float64{90, 900, 10}) {
		t.Fatalf("Judge = %+v, %v", v, err)
	}
	r.TPOT.Mean = 10.5
	if v, _ := Judge(slos, r); v.Pass || !strings.Contains(v.Why, "mean_tpot_ms") {
		t.Fatalf("TPOT over its bound passed: %+v", v)
	}
	r.TPOT.Mean, r.Failed = 1, 1
	if v, _ := Judge(slos, r); v.Pass || !strings.Contains(v.Why, "1 of 11 requests failed") {
		t.Fatalf("a failed request passed: %+v", v)
	}
	if _, err := Judge([]SLO{{Metric: "ttft", Stat: "p50", Percentile: 50}}, r); err == nil {
		t.Fatal("a percentile the run did not compute gave no error")
	}
}

// TestSearch bisects threshold functions: the answer passes, and
// answer × (1 + tolerance) is at or above the threshold (fails).
func TestSearch(t *testing.T) {
	for _, tc := range []struct {
		name      string
		s         Search
		threshold float64 // loads ≤ threshold pass
		found     bool
		none, cap bool
		best      float64
	}{
		{name: "bracket by doubling", s: Search{Lo: 1, Max: 1e4, Tolerance: 0.02}, threshold: 37.3, found: true},
		{name: "given bracket", s: Search{Lo: 5, Hi: 100, Max: 1e4, Tolerance: 0.001}, threshold: 61.25, found: true},
		{name: "threshold on a probe", s: Search{Lo: 1, Max: 1e4, Tolerance: 0.05}, threshold: 8, found: true},
		{name: "integers", s: Search{Lo: 1, Max: 1024, Tolerance: 0.01, Integer: true}, threshold: 37, found: true, best: 37},
		{name: "integers, wide tolerance", s: Search{Lo: 1, Max: 1024, Tolerance: 0.2, Integer: true}, threshold: 100, found: true},
		{name: "lowest fails", s: Search{Lo: 2, Max: 100, Tolerance: 0.02}, threshold: 1, none: true},
		{name: "cap passes", s: Search{Lo: 1, Max: 100, Tolerance: 0.02}, threshold: 1000, cap: true, best: 100},
		{name: "given hi passes", s: Search{Lo: 1, Hi: 50, Max: 100, Tolerance: 0.02}, threshold: 60, cap: true, best: 50},
		{name: "cap is lo", s: Search{Lo: 4, Max: 4, Tolerance: 0.02, Integer: true}, threshold: 10, cap: true, best: 4},
		{name: "cap is lo, given hi", s: Search{Lo: 4, Hi: 8, Max: 4, Tolerance: 0.02}, threshold: 10, cap: true, best: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.s.Run(func(x float64) (bool, error) { return x <= tc.threshold, nil })
			if err != nil {
				t.Fatal(err)
			}
			if o.Found != tc.found || o.NoneMeets != tc.none || o.AtCap != tc.cap {
				t.Fatalf("outcome %+v", o)
			}
			for i, x := range o.Probes {
				if slices.Contains(o.Probes[:i], x) {
					t.Fatalf("load %g probed twice: %v", x, o.Probes)
				}
			}
			if tc.best != 0 && o.Best != tc.best {
				t.Fatalf("best %g, want %g (%+v)", o.Best, tc.best, o)
			}
			if !o.Found {
				return
			}
			if o.Best > tc.threshold || o.FirstFail <= tc.threshold {
				t.Fatalf("best %g / first fail %g do not bracket %g", o.Best, o.FirstFail, tc.threshold)
			}
			if !(o.Best*(1+tc.s.Tolerance) > tc.threshold || (tc.s.Integer && o.FirstFail == o.Best+1)) {
				t.Fatalf("best %g × (1 + %g) still passes (threshold %g)", o.Best, tc.s.Tolerance, tc.threshold)
			}
			if tc.s.Integer && (o.Best != math.Floor(o.Best) || slices.ContainsFunc(o.Probes, func(x float64) bool { return x != math.Floor(x) })) {
				t.Fatalf("integer search probed %v", o.Probes)
			}
		})
	}
}

func TestSearchBadBounds(t *testing.T) {
	for _, s := range []Search{
		{Lo: 0, Max: 10, Tolerance: 0.1},
		{Lo: 5, Hi: 4, Max: 10, Tolerance: 0.1},
		{Lo: 1, Max: 10, Tolerance: 0},
		{Lo: 1, Max: 10, Tolerance: 1},
		{Lo: 1.5, Max: 10, Tolerance: 0.1, Integer: true},
		{Lo: 1, Max: math.Inf(1), Tolerance: 0.1},
	} {
		if _, err := s.Run(func(float64) (bool, error) { return true, nil }); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

func TestFrontier(t *testing.T) {
	pts := []Point{
		{X: 10, Y: 100}, // 0: frontier (highest Y)
		{X: 20, Y: 80},  // 1: frontier
		{X: 15, Y: 70},  // 2: dominated by 1
		{X: 40, Y: 20},  // 3: frontier (highest X)
		{X: 30, Y: 20},  // 4: dominated by 3
		{X: 20, Y: 60},  // 5: dominated by 1 (same X, lower Y)
		{X: 5, Y: 100},  // 6: dominated by 0 (same Y, lower X)
		{X: 20, Y: 80},  // 7: equal to 1: frontier too
	}
	if got, want := Frontier(pts), []int{0, 1, 7, 3}; !slices.Equal(got, want) {
		t.Fatalf("Frontier = %v, want %v", got, want)
	}
	if got := Frontier(nil); len(got) != 0 {
		t.Fatalf("Frontier(nil) = %v", got)
	}
}

func TestRank(t *testing.T) {
	cands := []Candidate{
		{Layout: "a", GPUs: 8, CostPerHour: 24, Verdict: Verdict{Pass: true}},
		{Layout: "b", GPUs: 4, CostPerHour: 24.2, Verdict: Verdict{Pass: true}},
		{Layout: "c", Infeasible: "does not fit"},
		{Layout: "d", GPUs: 2, CostPerHour: 6, Verdict: Verdict{Pass: false}},
		{Layout: "e", GPUs: 4, CostPerHour: 12, Verdict: Verdict{Pass: true}},
		{Layout: "f", Infeasible: "TP does not divide"},
	}
	names := func(idx []int) string {
		var b strings.Builder
		for _, i := range idx {
			b.WriteString(cands[i].Layout)
		}
		return b.String()
	}
	if got := names(Rank(cands, MinimizeGPUs)); got != "ebadcf" {
		t.Errorf("by GPUs: %s", got)
	}
	if got := names(Rank(cands, MinimizeCost)); got != "eabdcf" {
		t.Errorf("by cost: %s", got)
	}
}

func TestPrices(t *testing.T) {
	p := DefaultPrices()
	if p["h100"] <= 0 || p["b200"] <= 0 {
		t.Fatalf("default prices: %v", p)
	}
	c, err := p.Cost(map[string]int{"h100": 8, "a100": 2})
	if err != nil || math.Abs(c-(8*p["h100"]+2*p["a100"])) > 1e-9 {
		t.Fatalf("Cost = %g, %v", c, err)
	}
	own, err := ParsePrices("p.yaml", []byte("usd_per_gpu_hour:\n  H100_SXM: 2\n"))
	if err != nil || own["h100"] != 2 {
		t.Fatalf("own table: %v, %v", own, err)
	}
	if _, err := own.Cost(map[string]int{"a100": 1}); err == nil || !strings.Contains(err.Error(), "no price for chip a100") {
		t.Fatalf("missing chip: %v", err)
	}
	for _, tc := range []struct{ in, err string }{
		{"usd_per_gpu_hour:\n  tpu9: 1\n", `p.yaml:2: usd_per_gpu_hour.tpu9: unknown chip "tpu9"`},
		{"usd_per_gpu_hour:\n  h100: -1\n", `p.yaml:2: usd_per_gpu_hour.h100 "-1": allowed`},
		{"usd_per_gpu_hour:\n  h100: cheap\n", "allowed: a number"},
		{"usd_per_gpu_hour:\n  h100: 1\n  H100: 2\n", "a second price"},
		{"prices:\n  h100: 1\n", "not a price table"},
		{"", "not a price table"},
		{"usd_per_gpu_hour: {}\n", "no prices"},
	} {
		if _, err := ParsePrices("p.yaml", []byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.err) || !scenario.IsInputError(err) {
			t.Errorf("ParsePrices(%q) = %v, want %q", tc.in, err, tc.err)
		}
	}
}

func FuzzParsePrices(f *testing.F) {
	f.Add([]byte("usd_per_gpu_hour:\n  h100: 3\n"))
	f.Add([]byte("usd_per_gpu_hour: [1]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePrices("f.yaml", b)
		if err != nil {
			if !scenario.IsInputError(err) {
				t.Fatalf("%q: %v", b, err)
			}
			return
		}
		for chip, v := range p {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%q: %s = %g", b, chip, v)
			}
		}
	})
}

func TestMinPassing(t *testing.T) {
	for _, tc := range []struct {
		lo, hi, need int // n ≥ need passes
		best         int
		found        bool
	}{
		{1, 16, 5, 5, true},
		{1, 16, 1, 1, true},
		{1, 16, 16, 16, true},
		{1, 16, 17, 0, false},
		{3, 3, 2, 3, true},
		{2, 9, 7, 7, true},
	} {
		best, found, probes, err := MinPassing(tc.lo, tc.hi, func(n int) (bool, error) { return n >= tc.need, nil })
		if err != nil || best != tc.best || found != tc.found {
			t.Errorf("%+v: best %d found %v (%v) %v", tc, best, found, probes, err)
		}
		if len(probes) > 6 {
			t.Errorf("%+v: %d probes %v", tc, len(probes), probes)
		}
	}
	if _, _, _, err := MinPassing(0, 4, nil); err == nil {
		t.Error("lo 0 accepted")
	}
}

// ParetoChart: a series per configuration in first-seen order, runs with
// no interactivity or a NaN left off, and the frontier over them all.
func TestParetoChart(t *testing.T) {
	c := ParetoChart(report.Chart{ID: "p"}, []Run{
		{Config: "b", X: 100, Y: 10}, {Config: "a", X: 50, Y: 30}, {Config: "b", X: 40, Y: 20},
		{Config: "a", X: 0, Y: 99}, {Config: "c", X: 10, Y: math.NaN()},
	})
	var got []string
	for _, s := range c.Series {
		got = append(got, fmt.Sprintf("%s:%d", s.Name, len(s.Points)))
	}
	want := []string{"b:2", "a:1", "Pareto frontier:2"}
	if !slices.Equal(got, want) || c.ID != "p" {
		t.Fatalf("series %v, want %v", got, want)
	}
	if f := c.Series[2]; f.Style != report.Frontier || f.Color != FrontierColor || slices.Contains(report.Palette, f.Color) || f.Points[0].X != 50 || f.Points[1].X != 100 {
		t.Errorf("frontier %+v", f)
	}
}
