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

// Std is Std of the sequence as an array (two passes).
func (s Seq) Std() float64 {
	if s.N == 0 {
		return math.NaN()
	}
	mean := s.Mean()
	sq := func(v float64) float64 {
		x := v - mean
		return x * x
	}
	return math.Sqrt((0 + pairwiseNext(s.N, s.Open(), sq)) / float64(s.N))
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

// Sorted is the order statistics of a sequence: the sorted array, or,
// when the sequence repeats few distinct values (inter-chunk gaps, which
// take one value per engine step), those values with their counts.
type Sorted struct {
	vals []float64 // ascending; distinct when cum is set
	cum  []int64   // cum[i]: how many values are ≤ vals[i]
	n    int64
}

// maxDistinct bounds the distinct values Sort counts before it sorts the
// values themselves instead.
const maxDistinct = 1 << 18

// Sort reads the sequence once (twice if it has many distinct values) and
// returns its order statistics. buf is reused for the values when the
// sequence has to be sorted whole.
func (s Seq) Sort(buf []float64) Sorted {
	counts := map[float64]int64{}
	next := s.Open()
	for range s.N {
		v := next()
		if math.IsNaN(v) || len(counts) > maxDistinct {
			break
		}
		counts[v]++
	}
	if len(counts) <= maxDistinct && !mapHasNaN(counts) && sumCounts(counts) == int64(s.N) {
		st := Sorted{n: int64(s.N), vals: make([]float64, 0, len(counts))}
		for v := range counts {
			st.vals = append(st.vals, v)
		}
		sortFloats(st.vals)
		st.cum = make([]int64, len(st.vals))
		c := int64(0)
		for i, v := range st.vals {
			c += counts[v]
			st.cum[i] = c
		}
		return st
	}
	buf = buf[:0]
	next = s.Open()
	for range s.N {
		buf = append(buf, next())
	}
	sortFloats(buf)
	return Sorted{vals: buf, n: int64(s.N)}
}

func mapHasNaN(m map[float64]int64) bool {
	for v := range m {
		if math.IsNaN(v) {
			return true
		}
	}
	return false
}

func sumCounts(m map[float64]int64) int64 {
	t := int64(0)
	for _, c := range m {
		t += c
	}
	return t
}

// Len is the number of values.
func (s *Sorted) Len() int64 { return s.n }

// At is the value of 0-based rank k.
func (s *Sorted) At(k int64) float64 {
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

// sortFloats sorts ascending (NaN first, as slices.Sort orders them).
func sortFloats(a []float64) { slices.Sort(a) }
