package workload

import (
	"math"
	"math/rand/v2"
)

// gammaVariate draws from Gamma(shape, scale 1); shape must be finite and > 0.
// Marsaglia & Tsang, "A simple method for generating gamma variables" (ACM
// TOMS 26(3), 2000): squeeze-and-reject on a transformed normal for
// shape ≥ 1, and for shape < 1 their boost Gamma(a) = Gamma(a+1)·U^(1/a).
// It draws from r only, allocates nothing, and is what numpy.random.gamma
// computes in distribution (not draw for draw).
func gammaVariate(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := 1 - r.Float64() // (0, 1]: never 0, so a = tiny cannot give 0^∞ from a zero draw
		return gammaVariate(r, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 { // squeeze: accepts ~98% without a log
			return d * v
		}
		if math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// splitmix64 is Steele, Lea & Flood's SplitMix64 finaliser: a bijection on
// uint64 that spreads nearby inputs far apart. Segment IDs use it, so two
// different inputs can never map to the same ID.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
