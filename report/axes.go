package report

import (
	"math"
	"strconv"
	"strings"
)

// Axis arithmetic shared by the static SVG writer; assets/report.js does
// the same in the browser, so a chart's static and interactive renders
// have the same ranges and ticks.

// span is the drawn range of vs: padded by 5% (linear) or a factor 1.1
// (log, positive values only), never empty, never infinite (values near
// ±MaxFloat64 or denormal keep their unpadded bound).
func span(vs []float64, log bool) (float64, float64) {
	if len(vs) == 0 {
		if log {
			return 1, 10
		}
		return 0, 1
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	if log {
		if !(lo > 0) { // callers pass only positive values on a log axis
			return 1, 10
		}
		f := 1.1
		if lo == hi {
			f = 2
		}
		return keep(lo/f, lo, true), keep(hi*f, hi, true)
	}
	pad := (hi/2 - lo/2) * 0.1 // halves: hi-lo may overflow
	if lo == hi {
		pad = math.Abs(lo) * 0.1
		if pad == 0 {
			pad = 1
		}
	}
	return keep(lo-pad, lo, false), keep(hi+pad, hi, false)
}

// keep is padded unless it overflowed (or, on a log axis, underflowed to
// zero), then the bound v itself.
func keep(padded, v float64, log bool) float64 {
	if math.IsInf(padded, 0) || log && !(padded > 0) {
		return v
	}
	return padded
}

// linTicks: five to ten round values (1, 2 or 5 times a power of ten
// apart) within [lo, hi]; just the bounds where no such step exists.
func linTicks(lo, hi float64) []float64 {
	raw := (hi/2 - lo/2) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	if !(raw > 0) || !(mag > 0) || math.IsInf(mag, 0) {
		return []float64{lo, hi}
	}
	step := 10 * mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9 && len(out) < 12; i++ {
		out = append(out, i*step)
	}
	if len(out) == 0 {
		return []float64{lo, hi}
	}
	return out
}

// logTicks: powers of ten within [lo, hi] (every k-th decade, at most
// about ten), with 2 and 5 times them when the range spans at most two
// decades.
func logTicks(lo, hi float64) []float64 {
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	ms := []float64{1}
	if e1-e0 <= 2 {
		ms = []float64{1, 2, 5}
	}
	k := max(1, math.Ceil((e1-e0)/10))
	var out []float64
	for e := e0; e <= e1; e += k {
		for _, m := range ms {
			if t := m * math.Pow(10, e); t >= lo*(1-1e-9) && t <= hi*(1+1e-9) {
				out = append(out, t)
			}
		}
	}
	if len(out) < 2 {
		out = []float64{lo, hi}
	}
	return out
}

// tickText: short tick labels, as the page's script writes them.
func tickText(v float64) string {
	if v == 0 {
		return "0"
	}
	if a := math.Abs(v); a >= 1e6 || a < 1e-3 {
		s := strconv.FormatFloat(v, 'e', 1, 64) // 1.5e+06
		mant, exp, _ := strings.Cut(s, "e")
		n, _ := strconv.Atoi(exp)
		return mant + "e" + strconv.Itoa(n) // 1.5e6, as JavaScript's toExponential less its "+"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// scale maps [lo, hi] (in log10 when log) onto [p0, p1], in halves so
// that no difference overflows.
func scale(lo, hi float64, log bool, p0, p1 float64) func(float64) float64 {
	if log {
		lo, hi = math.Log10(lo), math.Log10(hi)
	}
	return func(v float64) float64 {
		if log {
			v = math.Log10(v)
		}
		return p0 + (v/2-lo/2)/(hi/2-lo/2)*(p1-p0)
	}
}

// drawable reports whether p is drawn on axes of the given scales.
func drawable(p Point, logX, logY bool) bool {
	return p.finite() && !(logX && p.X <= 0) && !(logY && p.Y <= 0)
}
