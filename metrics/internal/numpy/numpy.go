// Package numpy computes the statistics the Python benchmark tools compute
// with numpy, step for step, so that the same values give the same float64
// results: np.sum (pairwise summation), np.mean, np.std (ddof=0), np.median
// and np.percentile / np.quantile (method="linear", with numpy's _lerp).
// Mirrors numpy 2.x numpy/lib/_function_base_impl.py and
// numpy/_core/src/umath/loops_utils.h.src (pairwise_sum).
package numpy

import "math"

// Sum is np.sum of a contiguous float64 array: the reduction starts from
// the identity 0 and adds numpy's pairwise sum of all elements.
func Sum(a []float64) float64 {
	return 0 + pairwiseSum(a)
}

// pairwiseSum is numpy's pairwise_sum: blocks of up to 128 summed with 8
// accumulators, larger arrays split in two at a multiple of 8.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, v := range a {
			res += v
		}
		return res
	case n <= 128:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			r[0] += a[i+0]
			r[1] += a[i+1]
			r[2] += a[i+2]
			r[3] += a[i+3]
			r[4] += a[i+4]
			r[5] += a[i+5]
			r[6] += a[i+6]
			r[7] += a[i+7]
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// Mean is np.mean; NaN for an empty array.
func Mean(a []float64) float64 {
	return Sum(a) / float64(len(a))
}

// Std is np.std with ddof=0: sqrt(sum((a - mean)²) / n).
func Std(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	mean := Mean(a)
	d := make([]float64, len(a))
	for i, v := range a {
		x := v - mean
		d[i] = x * x
	}
	return math.Sqrt(Sum(d) / float64(len(a)))
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
