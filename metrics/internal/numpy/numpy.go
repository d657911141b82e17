// Package numpy computes the statistics the Python benchmark tools compute
// with numpy, step for step, so that the same values give the same float64
// results: np.sum (pairwise summation), np.mean, np.std (ddof=0), np.median
// and np.percentile / np.quantile (method="linear", with numpy's _lerp).
// Mirrors numpy 2.x numpy/lib/_function_base_impl.py and
// numpy/_core/src/umath/loops_utils.h.src (pairwise_sum).
package numpy

import (
	"math"
	"slices"
)

// Sum is np.sum of a contiguous float64 array: the reduction starts from
// the identity 0 and adds numpy's pairwise sum of all elements.
func Sum(a []float64) float64 {
	return 0 + pairwiseSum(a, nil)
}

// pairwiseSum is numpy's pairwise_sum of f(a[i]) (of a[i] when f is nil):
// blocks of up to 128 summed with 8 accumulators, larger arrays split in
// two at a multiple of 8.
func pairwiseSum(a []float64, f func(float64) float64) float64 {
	at := func(i int) float64 {
		if f == nil {
			return a[i]
		}
		return f(a[i])
	}
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for i := range a {
			res += at(i)
		}
		return res
	case n <= 128:
		var r [8]float64
		for j := range r {
			r[j] = at(j)
		}
		i := 8
		for ; i < n-n%8; i += 8 {
			r[0] += at(i + 0)
			r[1] += at(i + 1)
			r[2] += at(i + 2)
			r[3] += at(i + 3)
			r[4] += at(i + 4)
			r[5] += at(i + 5)
			r[6] += at(i + 6)
			r[7] += at(i + 7)
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += at(i)
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2], f) + pairwiseSum(a[n2:], f)
	}
}

// Mean is np.mean; NaN for an empty array.
func Mean(a []float64) float64 {
	return Sum(a) / float64(len(a))
}

// Std is np.std with ddof=0: sqrt(sum((a - mean)²) / n), the squared
// deviations summed as numpy sums its temporary array, without one.
func Std(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	mean := Mean(a)
	sq := func(v float64) float64 {
		x := v - mean
		return x * x
	}
	return math.Sqrt((0 + pairwiseSum(a, sq)) / float64(len(a)))
}

// MedianSorted is np.median of an ascending array: the middle element, or
// the mean of the two middle ones.
func MedianSorted(s []float64) float64 {
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return Mean(s[n/2-1 : n/2+1])
}

// PercentileSorted is np.percentile(a, p) of an ascending array, default
// method "linear": q = p/100, virtual index h = (n−1)·q, and numpy's _lerp
// between the order statistics ⌊h⌋ and ⌊h⌋+1.
func PercentileSorted(s []float64, p float64) float64 {
	if !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return QuantileSorted(s, p/100)
}

// QuantileSorted is np.quantile(a, q) of an ascending array, method
// "linear".
func QuantileSorted(s []float64, q float64) float64 {
	n := len(s)
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	h := float64(n-1) * q
	if h >= float64(n-1) {
		return s[n-1]
	}
	lo := math.Floor(h)
	i := int(lo)
	return Lerp(s[i], s[i+1], h-lo)
}

// Lerp is numpy's _lerp: a + (b−a)·t, computed from b when t ≥ 0.5.
func Lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// Seq is a sequence of N values that can be read, in order, as often as
// needed: values kept compactly elsewhere (a streaming writer's log) that
// numpy's statistics run over without an array. Open starts a new pass
// and returns the function that reads its next value.
type Seq struct {
	N    int
	Open func() (next func() float64)
}

// Sum is Sum of the sequence as an array: numpy's pairwise summation, the
// blocks visited in order.
func (s Seq) Sum() float64 {
	next := s.Open()
	return 0 + pairwiseNext(s.N, next, nil)
}

// Mean is Mean of the sequence as an array.
func (s Seq) Mean() float64 { return s.Sum() / float64(s.N) }

// MeanStd is Mean and Std of the sequence as an array, in two passes:
// Std's deviations are taken from the mean of the first.
func (s Seq) MeanStd() (mean, std float64) {
	if s.N == 0 {
		return math.NaN(), math.NaN()
	}
	mean = s.Mean()
	sq := func(v float64) float64 {
		x := v - mean
		return x * x
	}
	return mean, math.Sqrt((0 + pairwiseNext(s.N, s.Open(), sq)) / float64(s.N))
}

// pairwiseNext is pairwiseSum over the next n values of next.
func pairwiseNext(n int, next func() float64, f func(float64) float64) float64 {
	at := func() float64 {
		if f == nil {
			return next()
		}
		return f(next())
	}
	switch {
	case n < 8:
		res := 0.0
		for range n {
			res += at()
		}
		return res
	case n <= 128:
		var r [8]float64
		for j := range r {
			r[j] = at()
		}
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += at()
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += at()
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		a := pairwiseNext(n2, next, f)
		return a + pairwiseNext(n-n2, next, f)
	}
}

// Sorted is the order statistics of a sequence: the sorted array, or the
// distinct values with their counts, or only the ranks asked of Order.
type Sorted struct {
	vals  []float64         // ascending; distinct when cum is set
	cum   []int64           // cum[i]: how many values are ≤ vals[i]
	ranks map[int64]float64 // when neither: the ranks Order was asked for
	n     int64
}

// Limits of Order's strategies: a sequence this short is sorted in an
// array; one with at most maxDistinct distinct values is counted. (Vars
// so that the tests can take every path.)
var (
	maxSorted   = 1 << 22 // 32 MiB of float64
	maxDistinct = 1 << 16
)

// Buffer is a buffer Order can sort n values in (empty when it would not
// sort them in an array).
func Buffer(n int) []float64 {
	if n > maxSorted {
		return nil
	}
	return make([]float64, 0, n)
}

// Order reads the sequence and returns the order statistics behind its
// minimum, maximum, median and the given percentiles, in bounded memory:
// a sequence of up to 4 Mi values is sorted in buf (reused when large
// enough); a longer one is counted when it repeats few distinct values
// (inter-chunk gaps take one value per engine step); otherwise the ranks
// needed are found by radix selection, four more passes over the
// sequence, without holding it. Values must not be NaN.
func (s Seq) Order(buf []float64, percentiles []float64) Sorted {
	if s.N <= maxSorted {
		buf = buf[:0]
		next := s.Open()
		for range s.N {
			buf = append(buf, next())
		}
		SortFloats(buf)
		return Sorted{vals: buf, n: int64(s.N)}
	}
	counts := map[float64]int64{}
	next := s.Open()
	for range s.N {
		counts[next()]++
		if len(counts) > maxDistinct {
			break
		}
	}
	if len(counts) <= maxDistinct {
		st := Sorted{n: int64(s.N), vals: make([]float64, 0, len(counts))}
		for v := range counts {
			st.vals = append(st.vals, v)
		}
		SortFloats(st.vals)
		st.cum = make([]int64, len(st.vals))
		c := int64(0)
		for i, v := range st.vals {
			c += counts[v]
			st.cum[i] = c
		}
		return st
	}
	n := int64(s.N)
	need := []int64{0, n - 1, (n - 1) / 2, n / 2}
	for _, p := range percentiles {
		lo, hi := pctRanks(n, p/100)
		need = append(need, lo, hi)
	}
	return Sorted{n: n, ranks: s.selectRanks(need)}
}

// pctRanks are the ranks QuantileSorted reads for q.
func pctRanks(n int64, q float64) (int64, int64) {
	h := float64(n-1) * q
	if h >= float64(n-1) {
		return n - 1, n - 1
	}
	i := int64(math.Floor(h))
	return i, i + 1
}

// OrderKey maps a float to a uint64 in the same order (-0 as 0), the key
// of the radix sorts.
func OrderKey(v float64) uint64 {
	if v == 0 {
		v = 0
	}
	u := math.Float64bits(v)
	if u>>63 == 1 {
		return ^u
	}
	return u | 1<<63
}

func fromOrderKey(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// selectRanks finds the values of the given ranks (0-based, ascending
// order) 16 bits of their order keys at a time: each pass counts, for
// every distinct prefix the ranks have so far, the values under it by
// their next 16 bits, and narrows each rank to one bucket.
func (s Seq) selectRanks(need []int64) map[int64]float64 {
	type target struct {
		rank   int64  // the rank sought
		within int64  // its rank among the values with its prefix
		prefix uint64 // the key bits fixed so far
	}
	var ts []target
	for _, r := range need {
		if !slices.ContainsFunc(ts, func(t target) bool { return t.rank == r }) {
			ts = append(ts, target{rank: r, within: r})
		}
	}
	for shift := 48; shift >= 0; shift -= 16 {
		// One histogram per distinct prefix.
		var prefixes []uint64
		for _, t := range ts {
			if !slices.Contains(prefixes, t.prefix) {
				prefixes = append(prefixes, t.prefix)
			}
		}
		hist := make([][1 << 16]int64, len(prefixes))
		next := s.Open()
		for range s.N {
			k := OrderKey(next())
			hi := uint64(0)
			if shift < 48 {
				hi = k >> (shift + 16)
			}
			for j, p := range prefixes {
				if p == hi {
					hist[j][(k>>shift)&0xffff]++
					break
				}
			}
		}
		for i := range ts {
			t := &ts[i]
			h := &hist[slices.Index(prefixes, t.prefix)]
			for d := range h {
				if t.within < h[d] {
					t.prefix = t.prefix<<16 | uint64(d)
					break
				}
				t.within -= h[d]
			}
		}
	}
	out := make(map[int64]float64, len(ts))
	for _, t := range ts {
		out[t.rank] = fromOrderKey(t.prefix)
	}
	return out
}

// Len is the number of values.
func (s *Sorted) Len() int64 { return s.n }

// At is the value of 0-based rank k (for an Order that selected ranks,
// one of the ranks its percentiles, median and extremes read).
func (s *Sorted) At(k int64) float64 {
	if s.ranks != nil {
		v, ok := s.ranks[k]
		if !ok {
			panic("numpy: rank not selected") // unreachable: callers read the ranks they asked for
		}
		return v
	}
	if s.cum == nil {
		return s.vals[k]
	}
	lo, hi := 0, len(s.cum)-1
	for lo < hi { // first i with cum[i] > k
		m := (lo + hi) / 2
		if s.cum[m] > k {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return s.vals[lo]
}

// Quantile is QuantileSorted of the values.
func (s *Sorted) Quantile(q float64) float64 {
	n := s.n
	if n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	h := float64(n-1) * q
	if h >= float64(n-1) {
		return s.At(n - 1)
	}
	lo := math.Floor(h)
	i := int64(lo)
	return Lerp(s.At(i), s.At(i+1), h-lo)
}

// Percentile is PercentileSorted of the values.
func (s *Sorted) Percentile(p float64) float64 {
	if !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return s.Quantile(p / 100)
}

// Median is MedianSorted of the values.
func (s *Sorted) Median() float64 {
	n := s.n
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s.At(n / 2)
	}
	return (0 + (0 + s.At(n/2-1) + s.At(n/2))) / 2
}

// SortFloats sorts a ascending, as slices.Sort does for values that are
// not NaN, faster for long arrays: an LSD radix sort on the values'
// order keys, 11 bits a pass, skipping the bits every value shares (the
// statistics of a long run sort millions of latencies). Written for
// float64 rather than through a generic sort-by-key: the indirect call
// per element and pass costs 40 % on 4 M values.
func SortFloats(a []float64) {
	if len(a) < 1<<12 || slices.IsSorted(a) {
		slices.Sort(a)
		return
	}
	const bits = 11
	var and, or uint64 = ^uint64(0), 0
	for _, v := range a {
		k := OrderKey(v)
		and, or = and&k, or|k
	}
	src, dst := a, make([]float64, len(a))
	var count [1 << bits]int
	for shift := uint(0); shift < 64; shift += bits {
		if (and>>shift)&(1<<bits-1) == (or>>shift)&(1<<bits-1) {
			continue
		}
		clear(count[:])
		for _, v := range src {
			count[(OrderKey(v)>>shift)&(1<<bits-1)]++
		}
		pos := 0
		for d := range count {
			pos, count[d] = pos+count[d], pos
		}
		for _, v := range src {
			d := (OrderKey(v) >> shift) & (1<<bits - 1)
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}
