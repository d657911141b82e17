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

// scratch holds the large working arrays the distributions of one report
// reuse: a long run has millions of iteration timings, and allocating
// (and first touching) fresh arrays of that size for each distribution
// costs more than computing it. A nil *scratch allocates as it goes.
type scratch struct {
	sortTmp, wt           []wv
	vals, probs, cdf, cum []float64
}

// grow returns buf resized to n, reallocated only when too small.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	return (*buf)[:n]
}

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
func glFromPDF(values, probs []float64, count int, sc *scratch) glDist {
	d := glDist{Count: count}
	n := len(values)
	if n == 0 {
		return d
	}
	if sc == nil {
		sc = &scratch{}
	}
	cdf := grow(&sc.cdf, n)
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
	prod := cdf // the percentiles are read: the cdf's memory is free
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
// round(sum of weights). items is not changed.
func glFromValues(items []wv, count int) glDist {
	return glFromOwnValues(slices.Clone(items), count, nil)
}

// weightSum is numpy.Sum of the items' weights, without the array.
func weightSum(items []wv) float64 {
	return numpy.Seq{N: len(items), Open: func() func() float64 {
		i := -1
		return func() float64 {
			i++
			return items[i].w
		}
	}}.Sum()
}

// glFromOwnValues is glFromValues sorting items itself.
func glFromOwnValues(items []wv, count int, sc *scratch) glDist {
	if len(items) == 0 {
		if count < 0 {
			count = 0
		}
		return glFromPDF(nil, nil, count, sc)
	}
	if sc == nil {
		sc = &scratch{}
	}
	if count < 0 {
		count = pyRound(weightSum(items))
	}
	sortByTime(items, sc)
	// Equal values merged; then the positive weights kept.
	u := sumEqual(items)
	fv, fw := grow(&sc.vals, len(u))[:0], grow(&sc.probs, len(u))[:0]
	for _, it := range u {
		if it.w > 0 {
			fv, fw = append(fv, it.v), append(fw, it.w)
		}
	}
	total := numpy.Sum(fw)
	if total <= 1e-6 {
		for i := range fw {
			fw[i] = 1
		}
		total = numpy.Sum(fw)
	}
	probs := fw // divided in place: the weights are not needed again
	for i := range fw {
		probs[i] = fw[i] / total
	}
	return glFromPDF(fv, probs, count, sc)
}

// sortByTime sorts items by value, stably (ties keep their order, as
// guidellm's sorted() does). A long run has millions of iteration
// timings, so it is an LSD radix sort on numpy.OrderKey (stable by
// construction; -0 ties with 0, as it compares equal), 11 bits a pass,
// skipping the bits every value shares — numpy.SortFloats' loop for this
// element type (through a generic sort-by-key it is 40 % slower).
func sortByTime(x []wv, sc *scratch) {
	if slices.IsSortedFunc(x, func(a, b wv) int { return cmpValue(a.v, b.v) }) {
		return
	}
	if len(x) < 256 {
		slices.SortStableFunc(x, func(a, b wv) int { return cmpValue(a.v, b.v) })
		return
	}
	if sc == nil {
		sc = &scratch{}
	}
	const bits = 11
	var and, or uint64 = ^uint64(0), 0
	for _, e := range x {
		k := numpy.OrderKey(e.v)
		and, or = and&k, or|k
	}
	src, dst := x, grow(&sc.sortTmp, len(x))
	var count [1 << bits]int
	for shift := uint(0); shift < 64; shift += bits {
		if (and>>shift)&(1<<bits-1) == (or>>shift)&(1<<bits-1) {
			continue
		}
		clear(count[:])
		for _, e := range src {
			count[(numpy.OrderKey(e.v)>>shift)&(1<<bits-1)]++
		}
		pos := 0
		for d := range count {
			pos, count[d] = pos+count[d], pos
		}
		for _, e := range src {
			d := (numpy.OrderKey(e.v) >> shift) & (1<<bits - 1)
			dst[count[d]] = e
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &x[0] {
		copy(x, src)
	}
}

// cmpValue orders by value; values neither below nor above each other
// (equal, or NaN) tie.
func cmpValue(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sumEqual merges each run of equal values of sorted into one item whose
// weight is the run's weights summed in order from 0, in place, and
// returns the shortened slice.
func sumEqual(sorted []wv) []wv {
	u := sorted[:0]
	for _, x := range sorted {
		if k := len(u) - 1; k >= 0 && u[k].v == x.v {
			u[k].w += x.w
			continue
		}
		u = append(u, wv{x.v, 0 + x.w})
	}
	return u
}

// glMerge is _merge_sorted_times_with_weights: equal times summed, then
// times within threshold of a group's first merged into it, pass after
// pass. It works in place on sorted (which it returns, shortened) and
// reuses its scratch arrays between passes.
func glMerge(sorted []wv, threshold float64, sc *scratch) []wv {
	u := sumEqual(sorted)
	if threshold <= 0 {
		return u
	}
	if sc == nil {
		sc = &scratch{}
	}
	var starts, ends []int
	for len(u) > 1 {
		n := len(u)
		// Starts of runs of gaps within the threshold.
		starts = starts[:0]
		prev := false
		for i := 0; i < n-1; i++ {
			within := u[i+1].v-u[i].v <= threshold
			if within && !prev {
				starts = append(starts, i)
			}
			prev = within
		}
		if len(starts) == 0 {
			break
		}
		ends = ends[:0]
		for _, s := range starts {
			ends = append(ends, lastWithin(u, s, u[s].v+threshold))
		}
		// A group starting inside the previous one is dropped (compared
		// with the previous group's end, dropped or not, as numpy does).
		kept := 1
		for k := 1; k < len(starts); k++ {
			if starts[k] > ends[k-1] {
				starts[kept], ends[kept] = starts[k], ends[k]
				kept++
			}
		}
		starts, ends = starts[:kept], ends[:kept]
		cum := grow(&sc.cum, n+1)
		cum[0] = 0
		for i := range u {
			cum[i+1] = cum[i] + u[i].w
		}
		merged := false
		for k, s := range starts {
			u[s].w = cum[ends[k]+1] - cum[s]
			merged = merged || ends[k] > s
		}
		if !merged {
			break
		}
		// Drop each group's members after its first (the groups are
		// disjoint and in order).
		w, k := 0, 0
		for i := 0; i < n; i++ {
			if k < len(starts) && i > starts[k] && i <= ends[k] {
				if i == ends[k] {
					k++
				}
				continue
			}
			if k < len(starts) && i > ends[k] {
				k++
			}
			u[w] = u[i]
			w++
		}
		u = u[:w]
	}
	return u
}

// lastWithin is searchsorted(times, limit, side="right") − 1 for a limit
// no lower than times[s]: the last index whose time is ≤ limit. Groups
// span a few times, so it gallops forward from s rather than searching
// the whole array.
func lastWithin(u []wv, s int, limit float64) int {
	lo, step := s, 1 // u[lo].v ≤ limit
	for {
		hi := lo + step
		if hi >= len(u) || u[hi].v > limit {
			// The answer is in [lo, min(hi, len)−1]: binary search.
			hi = min(hi, len(u))
			j, _ := slices.BinarySearchFunc(u[lo:hi], limit, func(e wv, t float64) int {
				if e.v <= t {
					return -1
				}
				return 1
			})
			return lo + j - 1
		}
		lo, step = hi, 2*step
	}
}

const glThreshold = 1e-4 // guidellm's merge threshold: 0.1 ms

// glRate is DistributionSummary.rate_distribution_from_timings: events
// (time, occurrences), each weighted by the local duration around it.
// start and end are used when non-nil. events is not changed.
func glRate(events []wv, start, end *float64, sc *scratch) glDist {
	if sc == nil {
		sc = &scratch{}
	}
	wt := grow(&sc.wt, len(events)+2)[:0]
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
	sortByTime(wt, sc)
	wt = glMerge(wt, glThreshold, sc)
	n := len(wt)
	if n <= 1 {
		return glFromValues(nil, n)
	}
	count := pyRound(weightSum(wt))
	// Each time's local duration: between the midpoints around it. The
	// items (rate, duration) overwrite the times in place: item i is
	// written after time i+1 was read.
	items := wt
	midPrev := (wt[1].v + wt[0].v) / 2
	dur0 := midPrev - wt[0].v
	items[0] = wv{wt[0].w / dur0, dur0}
	for i := 1; i < n-1; i++ {
		mid := (wt[i+1].v + wt[i].v) / 2
		d := mid - midPrev
		items[i] = wv{wt[i].w / d, d}
		midPrev = mid
	}
	last := max(wt[n-1].v-midPrev, 1e-6)
	items[n-1] = wv{wt[n-1].w / last, last}
	return glFromOwnValues(items, count, sc)
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
	sortByTime(ev, nil)
	ev = glMerge(ev, glThreshold, nil)
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
func glStatusValues(succ, errd []wv, sc *scratch) glStatus {
	return glStatusOf(succ, errd, func(l []wv) glDist {
		if sc == nil {
			return glFromValues(l, -1)
		}
		own := runs(grow(&sc.wt, len(l))[:0], l)
		if own == nil {
			own = grow(&sc.wt, len(l))
			copy(own, l)
		}
		return glFromOwnValues(own, -1, sc)
	})
}

// runs appends l to dst with each run of equal consecutive values merged
// into one item carrying the run's weight, or returns nil when a weight
// is not a whole number below 2⁵²: with whole weights every partial sum
// is exact, so merging runs before the stable sort gives the summed
// weights (and weightSum's count) from_values gives, while the iteration
// values of a long run — a request's constant tokens per iteration,
// repeated for each of its chunks — shrink to a few per request.
func runs(dst, l []wv) []wv {
	for _, it := range l {
		if it.w != math.Trunc(it.w) || math.Abs(it.w) >= 1<<52 {
			return nil
		}
		if k := len(dst) - 1; k >= 0 && dst[k].v == it.v {
			dst[k].w += it.w
			continue
		}
		dst = append(dst, it)
	}
	return dst
}

func glStatusRate(succ, errd []wv, start, end *float64, sc *scratch) glStatus {
	return glStatusOf(succ, errd, func(l []wv) glDist { return glRate(l, start, end, sc) })
}

func glStatusConcurrency(succ, errd []glInterval, start, end *float64) glStatus {
	return glStatusOf(succ, errd, func(l []glInterval) glDist { return glConcurrency(l, start, end) })
}

// glStatusOf is a StatusDistributionSummary of one distribution; with no
// errored request the total is the successful one, computed once.
func glStatusOf[T any](succ, errd []T, dist func([]T) glDist) glStatus {
	st := glStatus{Successful: dist(succ), Errored: dist(nil), Incomplete: dist(nil)}
	if len(errd) == 0 {
		st.Total = st.Successful
		return st
	}
	st.Errored = dist(errd)
	st.Total = dist(append(slices.Clone(succ), errd...))
	return st
}
