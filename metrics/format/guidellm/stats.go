package guidellm

import (
	"math"
	"slices"

	"blis/metrics/internal/numpy"
)

// GuideLLM's statistics, step for step, so the same request timings give
// the same float64 distributions: DistributionSummary.from_values,
// from_pdf, rate_distribution_from_timings,
// concurrency_distribution_from_timings and
// _merge_sorted_times_with_weights of vllm-project/guidellm
// src/guidellm/schemas/base/statistics.py (the 0.8-era layout of report
// version 2). numpy's sums are pairwise (numpy.Sum), cumsum and np.add.at are
// sequential, round() is half-to-even. Two departures: ties are sorted
// stably (numpy's argsort is not), which can change a sum of weights in
// its last bit; and the threshold merge stops when a pass merges nothing
// (numpy would loop forever when times[i] + threshold rounds below a
// neighbour that is within the threshold).

// glPctProbs are guidellm's Percentiles, p001 … p999.
var glPctProbs = [11]float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999}

var glPctNames = [11]string{"p001", "p01", "p05", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "p999"}

// glDist is a DistributionSummary (pdf not kept: guidellm writes null).
type glDist struct {
	Mean, Median, Mode, Variance, StdDev, Min, Max float64
	Count                                          int
	TotalSum                                       float64
	P                                              [11]float64
}

// wv is a value with a weight (or a time with an occurrence count).
type wv struct{ v, w float64 }

// glFromPDF is DistributionSummary.from_pdf (validate=False).
func glFromPDF(values, probs []float64, count int) glDist {
	d := glDist{Count: count}
	n := len(values)
	if n == 0 {
		return d
	}
	cdf := make([]float64, n)
	c := 0.0
	for i, p := range probs {
		c += p
		cdf[i] = c
	}
	for k, p := range glPctProbs {
		i, _ := slices.BinarySearch(cdf, p) // searchsorted side="left"
		if i >= n {
			i = n - 1 // numpy would raise IndexError
		}
		d.P[k] = values[i]
	}
	d.Median = d.P[5]
	prod := make([]float64, n)
	for i := range values {
		prod[i] = values[i] * probs[i]
	}
	d.Mean = numpy.Sum(prod)
	best := 0
	for i := range probs {
		if probs[i] > probs[best] {
			best = i
		}
	}
	d.Mode = values[best]
	for i := range values {
		x := values[i] - d.Mean
		prod[i] = x * x * probs[i]
	}
	d.Variance = numpy.Sum(prod)
	d.StdDev = math.Sqrt(d.Variance)
	d.Min, d.Max = values[0], values[n-1]
	d.TotalSum = d.Mean * float64(count)
	return d
}

// pyRound is Python's round() of a float to an int: half to even.
func pyRound(x float64) int { return int(math.RoundToEven(x)) }

// glFromValues is DistributionSummary.from_values; count < 0 means
// round(sum of weights).
func glFromValues(items []wv, count int) glDist {
	if len(items) == 0 {
		if count < 0 {
			count = 0
		}
		return glFromPDF(nil, nil, count)
	}
	if count < 0 {
		w := make([]float64, len(items))
		for i, it := range items {
			w[i] = it.w
		}
		count = pyRound(numpy.Sum(w))
	}
	s := slices.Clone(items)
	sortByTime(s)
	var vals, wts []float64
	for _, it := range s {
		if k := len(vals) - 1; k >= 0 && vals[k] == it.v {
			wts[k] += it.w
			continue
		}
		vals = append(vals, it.v)
		wts = append(wts, 0+it.w)
	}
	fv, fw := vals[:0], wts[:0]
	for i := range vals {
		if wts[i] > 0 {
			fv, fw = append(fv, vals[i]), append(fw, wts[i])
		}
	}
	total := numpy.Sum(fw)
	if total <= 1e-6 {
		for i := range fw {
			fw[i] = 1
		}
		total = numpy.Sum(fw)
	}
	probs := make([]float64, len(fw))
	for i := range fw {
		probs[i] = fw[i] / total
	}
	return glFromPDF(fv, probs, count)
}

// sortByTime sorts items by value, stably (ties keep their order, as
// guidellm's sorted() does).
func sortByTime(x []wv) {
	slices.SortStableFunc(x, func(a, b wv) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
}

// glMerge is _merge_sorted_times_with_weights: equal times summed, then
// times within threshold of a group's first merged into it.
func glMerge(sorted []wv, threshold float64) []wv {
	var u []wv
	for _, x := range sorted {
		if k := len(u) - 1; k >= 0 && u[k].v == x.v {
			u[k].w += x.w
			continue
		}
		u = append(u, wv{x.v, 0 + x.w})
	}
	if threshold <= 0 {
		return u
	}
	for len(u) > 1 {
		n := len(u)
		within := make([]bool, n-1)
		anyWithin := false
		for i := 0; i < n-1; i++ {
			within[i] = u[i+1].v-u[i].v <= threshold
			anyWithin = anyWithin || within[i]
		}
		if !anyWithin {
			break
		}
		var starts []int
		for i := range within {
			if within[i] && (i == 0 || !within[i-1]) {
				starts = append(starts, i)
			}
		}
		ends := make([]int, len(starts))
		for k, s := range starts {
			limit := u[s].v + threshold
			// searchsorted(times, limit, side="right") - 1
			j, _ := slices.BinarySearchFunc(u, limit, func(e wv, t float64) int {
				if e.v <= t {
					return -1
				}
				return 1
			})
			ends[k] = j - 1
		}
		if len(starts) > 1 {
			fs, fe := []int{starts[0]}, []int{ends[0]}
			for k := 1; k < len(starts); k++ {
				if starts[k] > ends[k-1] {
					fs, fe = append(fs, starts[k]), append(fe, ends[k])
				}
			}
			starts, ends = fs, fe
		}
		cum := make([]float64, n+1)
		for i := range u {
			cum[i+1] = cum[i] + u[i].w
		}
		merged := false
		remove := make([]bool, n)
		for k, s := range starts {
			u[s].w = cum[ends[k]+1] - cum[s]
			for j := s + 1; j <= ends[k]; j++ {
				remove[j] = true
				merged = true
			}
		}
		if !merged {
			break
		}
		kept := u[:0]
		for i := range u {
			if !remove[i] {
				kept = append(kept, u[i])
			}
		}
		u = kept
	}
	return u
}

const glThreshold = 1e-4 // guidellm's merge threshold: 0.1 ms

// glRate is DistributionSummary.rate_distribution_from_timings: events
// (time, occurrences), each weighted by the local duration around it.
// start and end are used when non-nil.
func glRate(events []wv, start, end *float64) glDist {
	var wt []wv
	if start != nil && (end == nil || *start <= *end) {
		wt = append(wt, wv{*start, 0})
	}
	for _, e := range events {
		if start != nil && !(e.v >= *start) {
			continue
		}
		if end != nil && !(e.v <= *end) {
			continue
		}
		wt = append(wt, e)
	}
	if end != nil {
		wt = append(wt, wv{*end, 0})
	}
	sortByTime(wt)
	wt = glMerge(wt, glThreshold)
	n := len(wt)
	if n <= 1 {
		return glFromValues(nil, n)
	}
	mid := make([]float64, n-1)
	for i := range mid {
		mid[i] = (wt[i+1].v + wt[i].v) / 2
	}
	dur := make([]float64, n)
	dur[0] = mid[0] - wt[0].v
	for i := 1; i < n-1; i++ {
		dur[i] = mid[i] - mid[i-1]
	}
	dur[n-1] = max(wt[n-1].v-mid[n-2], 1e-6)
	occ := make([]float64, n)
	items := make([]wv, n)
	for i := range wt {
		occ[i] = wt[i].w
		items[i] = wv{wt[i].w / dur[i], dur[i]}
	}
	return glFromValues(items, pyRound(numpy.Sum(occ)))
}

// glInterval is a (start, end, weight) interval.
type glInterval struct{ s, e, w float64 }

// glConcurrency is DistributionSummary.concurrency_distribution_from_timings.
func glConcurrency(intervals []glInterval, start, end *float64) glDist {
	var wi []glInterval
	for _, x := range intervals {
		if start != nil && !(x.e >= *start) {
			continue
		}
		if end != nil && !(x.s <= *end) {
			continue
		}
		wi = append(wi, x)
	}
	count := len(wi)
	ev := make([]wv, 0, 2*len(wi))
	for _, x := range wi {
		ev = append(ev, wv{x.s, x.w})
	}
	for _, x := range wi {
		ev = append(ev, wv{x.e, -1 * x.w})
	}
	sortByTime(ev)
	ev = glMerge(ev, glThreshold)
	if start != nil && len(ev) > 0 {
		si, _ := slices.BinarySearchFunc(ev, *start, func(e wv, t float64) int {
			if e.v < t {
				return -1
			}
			return 1
		})
		prior := 0.0
		if si > 0 {
			w := make([]float64, si)
			for i := range w {
				w[i] = ev[i].w
			}
			prior = numpy.Sum(w)
		}
		ev = append([]wv{{*start, prior}}, ev[si:]...)
	}
	if end != nil && len(ev) > 0 {
		ei, _ := slices.BinarySearchFunc(ev, *end, func(e wv, t float64) int {
			if e.v <= t {
				return -1
			}
			return 1
		})
		ev = append(slices.Clone(ev[:ei]), wv{*end, 0})
	}
	conc := make([]float64, len(ev))
	c := 0.0
	for i := range ev {
		c += ev[i].w
		conc[i] = max(c, 0)
	}
	if len(conc) <= 1 {
		if count == 0 {
			return glFromValues(nil, -1)
		}
		return glFromValues([]wv{{conc[0], 1}}, -1)
	}
	items := make([]wv, len(ev)-1)
	anyPos := false
	for i := range items {
		d := max(ev[i+1].v-ev[i].v, 0)
		anyPos = anyPos || d > 0
		items[i] = wv{conc[i], d}
	}
	if !anyPos {
		return glFromValues(nil, count)
	}
	return glFromValues(items, count)
}

// glStatus is a StatusDistributionSummary.
type glStatus struct {
	Successful, Errored, Incomplete, Total glDist
}

// glStatusValues is StatusDistributionSummary.from_values over the
// successful and errored lists (no incomplete requests in BLIS); total is
// successful, incomplete, errored concatenated.
func glStatusValues(succ, errd []wv) glStatus {
	total := append(slices.Clone(succ), errd...)
	return glStatus{
		Successful: glFromValues(succ, -1),
		Errored:    glFromValues(errd, -1),
		Incomplete: glFromValues(nil, -1),
		Total:      glFromValues(total, -1),
	}
}

func glStatusRate(succ, errd []wv, start, end *float64) glStatus {
	total := append(slices.Clone(succ), errd...)
	return glStatus{
		Successful: glRate(succ, start, end),
		Errored:    glRate(errd, start, end),
		Incomplete: glRate(nil, start, end),
		Total:      glRate(total, start, end),
	}
}

func glStatusConcurrency(succ, errd []glInterval, start, end *float64) glStatus {
	total := append(slices.Clone(succ), errd...)
	return glStatus{
		Successful: glConcurrency(succ, start, end),
		Errored:    glConcurrency(errd, start, end),
		Incomplete: glConcurrency(nil, start, end),
		Total:      glConcurrency(total, start, end),
	}
}
