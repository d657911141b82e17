package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"blis/metrics/internal/numpy"
)

func datasets() map[string][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	logn := make([]float64, 100_000)
	for i := range logn {
		logn[i] = math.Exp(-3 + 1.0*rng.NormFloat64()) // ITL-like: median ~50 ms
	}
	unif := make([]float64, 50_000)
	for i := range unif {
		unif[i] = 1e-3 + rng.Float64()
	}
	constant := make([]float64, 1000)
	for i := range constant {
		constant[i] = 0.025
	}
	small := []float64{0.3, 0.01, 7, 0.02, 0.02, 1e-6, 42}
	wide := make([]float64, 20_000) // 1 ns .. 1000 s
	for i := range wide {
		wide[i] = math.Pow(10, -9+12*rng.Float64())
	}
	return map[string][]float64{"lognormal": logn, "uniform": unif, "constant": constant, "small": small, "wide": wide}
}

var testQuantiles = []float64{0, 0.001, 0.01, 0.1, 0.25, 0.333, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 0.9999, 1}

// TestSketchErrorBound checks the documented bound: for data of one sign,
// |Quantile(q) − numpy.quantile(data, q)| ≤ α·|numpy.quantile(data, q)|.
func TestSketchErrorBound(t *testing.T) {
	for _, alpha := range []float64{0.005, 0.01, 0.001} {
		for name, data := range datasets() {
			s := NewSketch(alpha)
			for _, v := range data {
				s.Add(v)
			}
			a := s.RelativeAccuracy()
			if a > alpha {
				t.Fatalf("α=%v: guaranteed %v is looser than asked", alpha, a)
			}
			sorted := slices.Clone(data)
			slices.Sort(sorted)
			for _, q := range testQuantiles {
				exact := numpy.QuantileSorted(sorted, q)
				got := s.Quantile(q)
				if err := math.Abs(got - exact); err > a*math.Abs(exact)*(1+1e-12) {
					t.Errorf("α=%v %s q=%v: got %v, exact %v, rel err %.3g > %.3g",
						alpha, name, q, got, exact, err/exact, a)
				}
			}
			if name == "constant" && s.Quantile(0.5) != 0.025 {
				t.Errorf("constant: median %v, want exactly 0.025 (clamped to [min, max])", s.Quantile(0.5))
			}
		}
	}
}

// TestSketchRankBound checks each rank's estimate, with negative values,
// zeros and subnormals mixed in.
func TestSketchRankBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var data []float64
	for range 3000 {
		v := math.Exp(10 * rng.NormFloat64())
		if rng.IntN(3) == 0 {
			v = -v
		}
		data = append(data, v)
	}
	data = append(data, 0, 0, math.Copysign(0, -1), 5e-324, -5e-324)
	s := &Sketch{} // the zero value works
	for _, v := range data {
		s.Add(v)
	}
	a := s.RelativeAccuracy()
	if a != 1.0/256 {
		t.Fatalf("zero Sketch accuracy %v, want 1/256", a)
	}
	slices.Sort(data)
	for r := 0; r < len(data)-1; r++ {
		got, _ := s.rankValues(int64(r))
		x := data[r]
		if x != 0 && math.Abs(x) < 0x1p-1022 {
			x = 0 // subnormals count as zero
		}
		if err := math.Abs(got - x); err > a*math.Abs(x)*(1+1e-12) {
			t.Fatalf("rank %d: got %v, true %v", r, got, x)
		}
	}
}

// TestSketchDiscreteExact: a bucket holding copies of one value reports it
// exactly, so quantiles of a few repeated values (common in a simulator,
// where step times repeat) match numpy exactly.
func TestSketchDiscreteExact(t *testing.T) {
	vals := []float64{0.0123, 0.0125, 0.2, 0.02, 1.7}
	var data []float64
	s := NewSketch(0)
	for i := range 5000 {
		v := vals[(i*7+i/3)%len(vals)]
		data = append(data, v)
		s.Add(v)
	}
	slices.Sort(data)
	for _, q := range testQuantiles {
		lo := math.Floor(float64(len(data)-1) * q)
		if h := float64(len(data)-1) * q; h != lo && data[int(lo)] != data[min(int(lo)+1, len(data)-1)] {
			continue // interpolating between two values: within α, not exact
		}
		if got, want := s.Quantile(q), numpy.QuantileSorted(data, q); got != want {
			t.Errorf("q=%v: got %v, want exactly %v", q, got, want)
		}
	}
}

func TestSketchStats(t *testing.T) {
	data := datasets()["lognormal"]
	s := NewSketch(0)
	for _, v := range data {
		s.Add(v)
	}
	s.Add(math.NaN())
	s.Add(math.Inf(1))
	s.Add(math.Inf(-1))
	if s.Count() != int64(len(data)) || s.Ignored() != 3 {
		t.Fatalf("count %d ignored %d", s.Count(), s.Ignored())
	}
	if s.Min() != slices.Min(data) || s.Max() != slices.Max(data) {
		t.Errorf("min/max %v %v", s.Min(), s.Max())
	}
	if m, want := s.Mean(), numpy.Mean(data); math.Abs(m-want) > 1e-12*want {
		t.Errorf("mean %v, numpy %v", m, want)
	}
	if sd, want := s.Std(), numpy.Std(data); math.Abs(sd-want) > 1e-10*want {
		t.Errorf("std %v, numpy %v", sd, want)
	}

	// Welford stays accurate where naive sums of squares cancel.
	w := &Sketch{}
	for i := range 1000 {
		w.Add(1e9 + float64(i%2)) // std 0.5
	}
	if math.Abs(w.Std()-0.5) > 1e-6 {
		t.Errorf("large-offset std %v, want 0.5", w.Std())
	}

	e := &Sketch{}
	for _, v := range []float64{e.Min(), e.Max(), e.Mean(), e.Std(), e.Quantile(0.5)} {
		if !math.IsNaN(v) {
			t.Errorf("empty sketch gave %v, want NaN", v)
		}
	}
	if !math.IsNaN(s.Quantile(-0.1)) || !math.IsNaN(s.Quantile(1.1)) || !math.IsNaN(s.Quantile(math.NaN())) {
		t.Error("q outside [0, 1] should give NaN")
	}
}

func TestSketchAddN(t *testing.T) {
	vals := []float64{0.01, 0.02, -3, 0, 0.5}
	ns := []int64{5, 1, 3, 2, 1000}
	a, b := NewSketch(0), NewSketch(0)
	for i, v := range vals {
		a.AddN(v, ns[i])
		for range ns[i] {
			b.Add(v)
		}
	}
	a.AddN(7, 0)
	a.AddN(7, -5)
	if a.Count() != b.Count() || a.Min() != b.Min() || a.Max() != b.Max() {
		t.Fatalf("AddN count/min/max differ: %d %v %v vs %d %v %v", a.Count(), a.Min(), a.Max(), b.Count(), b.Min(), b.Max())
	}
	if math.Abs(a.Mean()-b.Mean()) > 1e-12 || math.Abs(a.Std()-b.Std()) > 1e-12 {
		t.Errorf("AddN mean/std %v %v vs %v %v", a.Mean(), a.Std(), b.Mean(), b.Std())
	}
	for _, q := range testQuantiles {
		if a.Quantile(q) != b.Quantile(q) {
			t.Errorf("q=%v: AddN %v, Add %v", q, a.Quantile(q), b.Quantile(q))
		}
	}
}

func TestSketchAddNoAlloc(t *testing.T) {
	s := NewSketch(DefaultRelativeAccuracy)
	data := datasets()["lognormal"]
	for _, v := range data { // warm-up: the store reaches its range
		s.Add(v)
	}
	i := 0
	if n := testing.AllocsPerRun(10_000, func() {
		s.Add(data[i%len(data)])
		i++
	}); n != 0 {
		t.Errorf("Sketch.Add allocates %v per call", n)
	}
}

func BenchmarkSketchAdd(b *testing.B) {
	data := datasets()["lognormal"]
	s := NewSketch(DefaultRelativeAccuracy)
	for _, v := range data {
		s.Add(v)
	}
	data = data[:1<<16] // power of two: index by mask, not division
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Add(data[i&(1<<16-1)])
	}
}
