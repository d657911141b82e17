package workload

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"blis/sim"
)

func TestGammaMoments(t *testing.T) {
	const n = 200000
	for _, shape := range []float64{0.01, 0.1, 0.5, 1, 2.5, 4, 30, 1000} {
		t.Run(fmt.Sprint("shape=", shape), func(t *testing.T) {
			r := sim.RNG(1, "test.gamma")
			xs := make([]float64, n)
			for i := range xs {
				x := gammaVariate(r, shape)
				if !(x >= 0) || math.IsInf(x, 0) {
					t.Fatalf("draw %d = %v", i, x)
				}
				xs[i] = x
			}
			mean, v := meanVar(xs)
			// Gamma(k, 1): mean k, variance k, excess kurtosis 6/k, so the
			// sample variance has standard error k·√((2+6/k)/n).
			if se := math.Sqrt(shape / n); math.Abs(mean-shape) > 5*se {
				t.Errorf("mean %.5g, want %.5g ± %.2g", mean, shape, 5*se)
			}
			if se := shape * math.Sqrt((2+6/shape)/n); math.Abs(v-shape) > 5*se {
				t.Errorf("variance %.5g, want %.5g ± %.2g", v, shape, 5*se)
			}
		})
	}
}

// TestGammaDistribution checks the whole shape, not just two moments, where
// the CDF has a closed form: Kolmogorov–Smirnov at α ≈ 0.001.
func TestGammaDistribution(t *testing.T) {
	const n = 50000
	for _, c := range []struct {
		shape float64
		cdf   func(x float64) float64
	}{
		{0.5, func(x float64) float64 { return math.Erf(math.Sqrt(x)) }}, // χ²(1)/2
		{1, func(x float64) float64 { return 1 - math.Exp(-x) }},
		{2, func(x float64) float64 { return 1 - math.Exp(-x)*(1+x) }},
		{3, func(x float64) float64 { return 1 - math.Exp(-x)*(1+x+x*x/2) }},
	} {
		r := sim.RNG(2, "test.gamma")
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = gammaVariate(r, c.shape)
		}
		slices.Sort(xs)
		d := 0.0
		for i, x := range xs {
			f := c.cdf(x)
			d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
		}
		if crit := 1.95 / math.Sqrt(n); d > crit {
			t.Errorf("shape %v: KS distance %.4f > %.4f", c.shape, d, crit)
		}
	}
}

func TestSplitmix64Spreads(t *testing.T) {
	seen := map[uint64]bool{}
	for i := range uint64(10000) {
		h := splitmix64(i)
		if seen[h] {
			t.Fatalf("collision at %d", i)
		}
		seen[h] = true
	}
	if splitmix64(0) == 0 {
		t.Error("splitmix64(0) = 0")
	}
}
