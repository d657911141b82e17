package metrics

import (
	"math"

	"blis/metrics/internal/numpy"
)

// DefaultRelativeAccuracy is the relative accuracy a Sketch is asked for
// when none is given: 0.5 %. It is met with 256 buckets per octave, which
// guarantee 2⁻⁸ ≈ 0.39 %.
const DefaultRelativeAccuracy = 0.005

// Sketch is a streaming quantile sketch for a distribution of float64
// values — in BLIS, inter-token latencies, which can number hundreds of
// millions. Count, Min, Max, Mean and Std are exact (running sums; the
// variance by Welford's method, numerically stable). Quantiles come from a
// histogram with logarithmically spaced buckets (DDSketch-style) and carry a
// stated relative error.
//
// Buckets. A finite value v with |v| ≥ 2⁻¹⁰²² (the smallest normal float64)
// falls in bucket i = bits(|v|) >> (52−k): the IEEE-754 exponent and the top
// k mantissa bits. So bucket i spans [L, U) with L = 2ᵉ(1 + j/2ᵏ),
// U = 2ᵉ(1 + (j+1)/2ᵏ), U/L ≤ 1 + 2⁻ᵏ: 2ᵏ buckets per octave, the mapping
// DDSketch calls linearly interpolated, computed from the bits without a
// logarithm. Each bucket keeps its count and the sum of its values.
// Negative values use a mirrored store; zero and |v| < 2⁻¹⁰²² count as
// zero. NaN and ±Inf are ignored (see Ignored).
//
// Error bound. A bucket reports the mean of its values (clamped to [L, U]),
// which is within α = 2⁻ᵏ relative error of every value in [L, U): above a
// value x by at most (U−L)/L ≤ 2⁻ᵏ of x, below it by at most (U−L)/U.
// Estimates are also clamped to the exact [Min, Max], which can only reduce
// the error, and a bucket holding copies of one value reports it exactly.
// Quantile(q) takes numpy's default ("linear") definition: with n values and
// h = (n−1)·q, it interpolates between the values of rank ⌊h⌋ and ⌊h⌋+1
// (0-based, ascending). Hence:
//   - each rank's estimate x̂ satisfies |x̂ − x| ≤ α·|x|, x the true value of
//     that rank (ranks 0 and n−1 are exact: Min and Max);
//   - for data of one sign, |Quantile(q) − numpy.quantile(data, q)| ≤
//     α·|numpy.quantile(data, q)|, up to float64 rounding.
//
// NewSketch picks the smallest k with 2⁻ᵏ ≤ the accuracy asked for; the
// default 0.5 % gives k = 8, α = 2⁻⁸ ≈ 0.39 %. Memory is 2ᵏ·24 bytes per
// octave actually spanned (about 160 KiB for latencies between 1 µs and
// 100 s at k = 8); storage grows rarely, by doubling, so Add is O(1) and
// allocation-free in steady state.
//
// The zero Sketch is ready to use, with DefaultRelativeAccuracy.
type Sketch struct {
	shift uint // 52−k; 0 until the first value is placed
	pos   sketchStore
	neg   sketchStore // indexed by |v|
	zero  uint64

	n        int64 // values counted (NaN and ±Inf excluded)
	ignored  int64
	min, max float64
	mean, m2 float64 // Welford: running mean and sum of squared deviations
}

type sketchStore struct {
	offset  int // bucket index of buckets[0]
	buckets []sketchBucket
}

// sketchBucket holds the count of its values (|v|) and their sum as
// n·pivot + dev, pivot the first value placed: copies of one value leave
// dev exactly 0, so their mean comes back exact.
type sketchBucket struct {
	n     uint64
	pivot float64
	dev   float64
}

const (
	f64ExpMask  = 0x7FF0000000000000
	f64SignMask = 0x8000000000000000
	maxSketchK  = 20 // α ≈ 9.5e-7; 2^20 buckets per octave
)

// NewSketch returns an empty sketch whose quantile estimates are within
// relativeAccuracy (e.g. 0.005 for 0.5 %) of a true sample value of the same
// rank. Values outside (0, 1) or NaN select DefaultRelativeAccuracy; values
// below 2⁻²⁰ ≈ 9.5e-7 are capped there. RelativeAccuracy reports the bound
// actually guaranteed, which may be tighter than asked.
func NewSketch(relativeAccuracy float64) *Sketch {
	s := &Sketch{}
	s.shift = 52 - sketchK(relativeAccuracy)
	return s
}

// sketchK is the smallest k with 2^-k ≤ alpha.
func sketchK(alpha float64) uint {
	if !(alpha > 0 && alpha < 1) {
		alpha = DefaultRelativeAccuracy
	}
	for k := uint(0); k < maxSketchK; k++ {
		if math.Ldexp(1, -int(k)) <= alpha {
			return k
		}
	}
	return maxSketchK
}

// RelativeAccuracy is the guaranteed relative error α = 2⁻ᵏ of a rank's
// estimate.
func (s *Sketch) RelativeAccuracy() float64 {
	return math.Ldexp(1, -int(s.k()))
}

func (s *Sketch) k() uint {
	if s.shift == 0 {
		return sketchK(DefaultRelativeAccuracy)
	}
	return 52 - s.shift
}

// Add counts one value. NaN and ±Inf are not counted (Ignored counts them).
func (s *Sketch) Add(v float64) {
	b := math.Float64bits(v)
	if b&f64ExpMask == f64ExpMask {
		s.ignored++
		return
	}
	s.n++
	if s.n == 1 {
		s.min, s.max = v, v
	} else if v < s.min {
		s.min = v
	} else if v > s.max {
		s.max = v
	}
	// Welford; the reciprocal keeps the division off the dependency chain.
	d := v - s.mean
	s.mean += d * (1 / float64(s.n))
	s.m2 += d * (v - s.mean)

	if b&f64ExpMask == 0 { // zero or subnormal
		s.zero++
		return
	}
	st := &s.pos
	if b&f64SignMask != 0 {
		st = &s.neg
		b &^= f64SignMask
		v = -v
	}
	i := int(b>>s.shift) - st.offset
	if uint(i) < uint(len(st.buckets)) {
		bk := &st.buckets[i]
		if bk.n == 0 {
			bk.pivot = v
		}
		bk.n++
		bk.dev += v - bk.pivot
		return
	}
	s.place(st, b, 1, v)
}

// AddN counts n copies of v (n ≤ 0 is a no-op) in O(1).
func (s *Sketch) AddN(v float64, n int64) {
	if n <= 0 {
		return
	}
	b := math.Float64bits(v)
	if b&f64ExpMask == f64ExpMask {
		s.ignored += n
		return
	}
	if s.n == 0 {
		s.min, s.max = v, v
	} else {
		s.min = math.Min(s.min, v)
		s.max = math.Max(s.max, v)
	}
	// Chan et al.'s pairwise update with a group of n equal values.
	total := s.n + n
	d := v - s.mean
	s.mean += d * (float64(n) / float64(total))
	s.m2 += d * d * (float64(s.n) * float64(n) / float64(total))
	s.n = total

	if b&f64ExpMask == 0 {
		s.zero += uint64(n)
		return
	}
	st := &s.pos
	if b&f64SignMask != 0 {
		st = &s.neg
		b &^= f64SignMask
		v = -v
	}
	s.place(st, b, uint64(n), v)
}

// place adds c copies of v (positive, given also as bits) to its bucket,
// growing the store if needed. It is the slow path of Add.
func (s *Sketch) place(st *sketchStore, bits uint64, c uint64, v float64) {
	if s.shift == 0 {
		s.shift = 52 - sketchK(DefaultRelativeAccuracy)
	}
	idx := int(bits >> s.shift)
	if i := idx - st.offset; uint(i) >= uint(len(st.buckets)) {
		st.grow(idx, s.k())
	}
	bk := &st.buckets[idx-st.offset]
	if bk.n == 0 {
		bk.pivot = v
	}
	bk.n += c
	bk.dev += (v - bk.pivot) * float64(c)
}

// grow widens the store to hold bucket idx, with as much headroom again in
// the direction of growth, so growth is rare (amortised doubling).
func (st *sketchStore) grow(idx int, k uint) {
	perOctave := 1 << k
	// Indices of finite normal values: exponent 1..2046.
	minIdx, maxIdx := perOctave, 2047*perOctave-1
	if len(st.buckets) == 0 {
		n := 8 * perOctave
		lo := max(idx-n/2, minIdx)
		hi := min(lo+n, maxIdx+1)
		st.offset, st.buckets = lo, make([]sketchBucket, hi-lo)
		return
	}
	lo, hi := st.offset, st.offset+len(st.buckets)
	extra := len(st.buckets)
	if idx < lo {
		lo = max(idx-extra, minIdx)
	} else {
		hi = min(idx+1+extra, maxIdx+1)
	}
	b := make([]sketchBucket, hi-lo)
	copy(b[st.offset-lo:], st.buckets)
	st.offset, st.buckets = lo, b
}

// Count is the number of values counted (NaN and ±Inf excluded).
func (s *Sketch) Count() int64 { return s.n }

// Ignored is the number of NaN and ±Inf values passed to Add or AddN.
func (s *Sketch) Ignored() int64 { return s.ignored }

// Min is the exact smallest value; NaN when empty.
func (s *Sketch) Min() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.min
}

// Max is the exact largest value; NaN when empty.
func (s *Sketch) Max() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.max
}

// Mean is the arithmetic mean; NaN when empty.
func (s *Sketch) Mean() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return s.mean
}

// Variance is the population variance (numpy's np.var default, ddof=0);
// NaN when empty.
func (s *Sketch) Variance() float64 {
	if s.n == 0 {
		return math.NaN()
	}
	return max(s.m2, 0) / float64(s.n)
}

// Std is the population standard deviation (np.std default, ddof=0); NaN
// when empty.
func (s *Sketch) Std() float64 { return math.Sqrt(s.Variance()) }

// Quantile estimates the q-quantile, q in [0, 1], by numpy's default linear
// interpolation between order statistics, within the error bound stated on
// Sketch. It returns NaN when the sketch is empty or q is outside [0, 1].
// It costs O(buckets).
func (s *Sketch) Quantile(q float64) float64 {
	if s.n == 0 || !(q >= 0 && q <= 1) {
		return math.NaN()
	}
	last := s.n - 1
	h := float64(last) * q // numpy: (n - 1) * quantiles
	if h >= float64(last) {
		return s.max
	}
	lo := math.Floor(h)
	r := int64(lo)
	a, b := s.rankValues(r)
	return numpy.Lerp(a, b, h-lo)
}

// rankValues estimates the values of ranks r and r+1 (0-based, ascending),
// r+1 ≤ n−1, in one pass over the buckets.
func (s *Sketch) rankValues(r int64) (float64, float64) {
	want := [2]int64{r, r + 1}
	var out [2]float64
	got := 0
	take := func(cum uint64, v float64) bool {
		for got < 2 && uint64(want[got]) < cum {
			out[got] = v
			got++
		}
		return got == 2
	}
	var cum uint64
	shift := s.shift
	if shift == 0 {
		shift = 52 - s.k()
	}
	done := false
	for j := len(s.neg.buckets) - 1; j >= 0 && !done; j-- {
		if bk := s.neg.buckets[j]; bk.n != 0 {
			cum += bk.n
			done = take(cum, -bucketValue(bk, s.neg.offset+j, shift))
		}
	}
	if !done && s.zero != 0 {
		cum += s.zero
		done = take(cum, 0)
	}
	for j := 0; j < len(s.pos.buckets) && !done; j++ {
		if bk := s.pos.buckets[j]; bk.n != 0 {
			cum += bk.n
			done = take(cum, bucketValue(bk, s.pos.offset+j, shift))
		}
	}
	for i := range out {
		switch {
		case want[i] == 0:
			out[i] = s.min
		case want[i] == s.n-1:
			out[i] = s.max
		default:
			out[i] = min(max(out[i], s.min), s.max)
		}
	}
	return out[0], out[1]
}

// bucketValue is the estimate for the values in bucket idx (positive): the
// mean of its values, kept inside [L, U] against rounding.
func bucketValue(bk sketchBucket, idx int, shift uint) float64 {
	lo := math.Float64frombits(uint64(idx) << shift)
	hi := math.Float64frombits(uint64(idx+1) << shift) // +Inf for the top bucket
	return min(max(bk.pivot+bk.dev/float64(bk.n), lo), hi)
}
