package numpy

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Expected values are numpy's (np.percentile, np.median, np.std, np.mean),
// worked by hand from its definitions.
func TestNumpyStats(t *testing.T) {
	tests := []struct {
		name   string
		data   []float64
		p      float64
		pct    float64
		median float64
		mean   float64
		std    float64
	}{
		// h = 4·0.4 = 1.6 → 20 + 0.6·(35−20) = 29, computed from b: 35 − 15·0.4.
		{"numpy doc example", []float64{15, 20, 35, 40, 50}, 40, 29, 35, 32, 12.884098726725126},
		// h = 3·0.99 = 2.97 → 4 − 1·0.03.
		{"even count", []float64{4, 1, 3, 2}, 99, 3.97, 2.5, 2.5, math.Sqrt(1.25)},
		{"p0 is min", []float64{3, 1, 2}, 0, 1, 2, 2, math.Sqrt(2.0 / 3)},
		{"p100 is max", []float64{3, 1, 2}, 100, 3, 2, 2, math.Sqrt(2.0 / 3)},
		{"one value", []float64{7}, 99, 7, 7, 7, 0},
		// h = 2·0.5 = 1 exactly: the middle value.
		{"p50 odd", []float64{10, 30, 20}, 50, 20, 20, 20, math.Sqrt(200.0 / 3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := slices.Clone(tc.data)
			slices.Sort(s)
			check := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("percentile", PercentileSorted(s, tc.p), tc.pct)
			check("median", MedianSorted(s), tc.median)
			check("mean", Mean(tc.data), tc.mean)
			check("std", Std(tc.data), tc.std)
		})
	}
}

func TestNumpyEdges(t *testing.T) {
	if !math.IsNaN(PercentileSorted(nil, 50)) || !math.IsNaN(MedianSorted(nil)) ||
		!math.IsNaN(Std(nil)) || !math.IsNaN(PercentileSorted([]float64{1}, 101)) {
		t.Error("empty input or p outside [0, 100] should give NaN")
	}
	// _lerp computes from b when t ≥ 0.5; the two forms differ in rounding
	// (variables, so Go does not fold the constants exactly).
	a, b, half, quarter := 0.1, 0.7, 0.5, 0.25
	if got, want := Lerp(a, b, half), b-(b-a)*(1-half); got != want {
		t.Errorf("Lerp upper form: %v, want %v", got, want)
	}
	if got, want := Lerp(a, b, quarter), a+(b-a)*quarter; got != want {
		t.Errorf("Lerp lower form: %v, want %v", got, want)
	}
}

// TestPairwiseSum checks numpy's blocking: exact on integers at every size
// that changes the recursion, and numpy's order on a case where order shows.
func TestPairwiseSum(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 127, 128, 129, 255, 256, 1000, 4097} {
		a := make([]float64, n)
		for i := range a {
			a[i] = float64(i + 1)
		}
		if got, want := Sum(a), float64(n*(n+1)/2); got != want {
			t.Errorf("n=%d: sum %v, want %v", n, got, want)
		}
	}
	// 8 accumulators: r0 = 1e16 + 1 rounds back to 1e16 (ties to even),
	// r1..r7 = 1 + 1, then pairs: 1e16 + 14. A naive loop absorbs every 1.
	a := make([]float64, 16)
	a[0] = 1e16
	for i := 1; i < 16; i++ {
		a[i] = 1
	}
	if got, want := Sum(a), 1e16+14; got != want {
		t.Errorf("pairwise order: got %v, want %v", got, want)
	}
}

// seqOf is a Seq over a slice.
func seqOf(a []float64) Seq {
	return Seq{N: len(a), Open: func() func() float64 {
		i := 0
		return func() float64 { i++; return a[i-1] }
	}}
}

// A Seq gives the array functions' results bit for bit: sums and std in
// order, order statistics from counted repeats or from the sorted values.
func TestSeqMatchesArray(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{0, 1, 2, 7, 8, 9, 127, 128, 129, 1000, 4097, 300_000} {
		for _, distinct := range []int{3, 1 << 30} {
			a := make([]float64, n)
			for i := range a {
				a[i] = float64(r.IntN(distinct)) * 1.2345e-3
				if distinct > 3 {
					a[i] = r.ExpFloat64()
				}
			}
			s := seqOf(a)
			if n > 0 {
				if got, want := s.Sum(), Sum(a); got != want {
					t.Errorf("n=%d: Sum %v, want %v", n, got, want)
				}
				mean, std := s.MeanStd()
				if want := Mean(a); mean != want {
					t.Errorf("n=%d: Mean %v, want %v", n, mean, want)
				}
				if want := Std(a); std != want {
					t.Errorf("n=%d: Std %v, want %v", n, std, want)
				}
			}
			srt := slices.Clone(a)
			slices.Sort(srt)
			if n == 0 {
				continue
			}
			pcts := []float64{0, 1, 25, 50, 90, 99, 99.9, 100}
			checkOrder(t, s, srt, pcts, "sorted")
			// The counted and the selected paths.
			maxSorted = 0
			checkOrder(t, s, srt, pcts, "counted")
			maxDistinct = 0
			checkOrder(t, s, srt, pcts, "selected")
			maxSorted, maxDistinct = 1<<22, 1<<16
			st := s.Order(nil, nil)
			if got, want := st.Median(), MedianSorted(srt); got != want {
				t.Errorf("n=%d distinct=%d: Median %v, want %v", n, distinct, got, want)
			}
			for _, p := range []float64{0, 1, 25, 50, 90, 99, 99.9, 100} {
				if got, want := st.Percentile(p), PercentileSorted(srt, p); got != want {
					t.Errorf("n=%d distinct=%d: P%v %v, want %v", n, distinct, p, got, want)
				}
			}
			if st.At(0) != srt[0] || st.At(int64(n-1)) != srt[n-1] {
				t.Errorf("n=%d: min/max wrong", n)
			}
		}
	}
}

func checkOrder(t *testing.T, s Seq, srt, pcts []float64, path string) {
	t.Helper()
	n := len(srt)
	st := s.Order(nil, pcts)
	if got, want := st.Median(), MedianSorted(srt); got != want {
		t.Errorf("%s n=%d: Median %v, want %v", path, n, got, want)
	}
	for _, p := range pcts {
		if got, want := st.Percentile(p), PercentileSorted(srt, p); got != want {
			t.Errorf("%s n=%d: P%v %v, want %v", path, n, p, got, want)
		}
	}
	if st.At(0) != srt[0] || st.At(int64(n-1)) != srt[n-1] {
		t.Errorf("%s n=%d: min/max %v %v, want %v %v", path, n, st.At(0), st.At(int64(n-1)), srt[0], srt[n-1])
	}
}

// Selection handles signs, zeros of both signs and ties.
func TestSelectRanks(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	maxSorted, maxDistinct = 0, 0
	defer func() { maxSorted, maxDistinct = 1<<22, 1<<16 }()
	for _, n := range []int{1, 2, 3, 10, 1000} {
		a := make([]float64, n)
		for i := range a {
			switch r.IntN(4) {
			case 0:
				a[i] = math.Copysign(0, -1)
			case 1:
				a[i] = -r.ExpFloat64()
			case 2:
				a[i] = float64(r.IntN(3))
			default:
				a[i] = r.NormFloat64() * 1e6
			}
		}
		srt := slices.Clone(a)
		slices.Sort(srt)
		checkOrder(t, seqOf(a), srt, []float64{0, 10, 33.3, 50, 75, 99, 100}, "selected")
	}
}

func TestSortFloats(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{0, 5, 4095, 4096, 100_000} {
		a := make([]float64, n)
		for i := range a {
			switch r.IntN(4) {
			case 0:
				a[i] = float64(r.IntN(7))
			case 1:
				a[i] = -r.ExpFloat64()
			default:
				a[i] = r.Float64() * 1e3
			}
		}
		want := slices.Clone(a)
		slices.Sort(want)
		SortFloats(a)
		if !slices.Equal(a, want) {
			t.Fatalf("n=%d: not sorted as slices.Sort sorts", n)
		}
	}
}
