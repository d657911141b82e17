package score

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

func TestSignedError(t *testing.T) {
	cases := []struct{ pred, meas, want float64 }{
		{110, 100, 10},
		{50, 100, -50},
		{100, 100, 0},
		{0, 20, -100},
		{3, 2, 50},
	}
	for _, c := range cases {
		if got := SignedError(c.pred, c.meas); !near(got, c.want) {
			t.Errorf("SignedError(%v, %v) = %v, want %v", c.pred, c.meas, got, c.want)
		}
	}
	for _, meas := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if got := SignedError(1, meas); !math.IsNaN(got) {
			t.Errorf("SignedError(1, %v) = %v, want NaN", meas, got)
		}
	}
}

func TestSummarizeHandComputed(t *testing.T) {
	cases := []struct {
		name string
		errs []float64
		want ErrorStats
	}{
		// |e| = 10, 20, 30, 40: mean 25, median (20+30)/2 = 25; signed (10−20+30−40)/4 = −5.
		{"even", []float64{10, -20, 30, -40}, ErrorStats{N: 4, MAPE: 25, MedianAPE: 25, SignedMean: -5}},
		// |e| = 10, 50, 5: mean 65/3, median 10; signed (10−50+5)/3 = −35/3.
		{"odd", []float64{10, -50, 5}, ErrorStats{N: 3, MAPE: 65.0 / 3, MedianAPE: 10, SignedMean: -35.0 / 3}},
		// NaN is left out: the same as {−80, 20}: MAPE 50, median (20+80)/2 = 50, signed −30.
		{"nan dropped", []float64{-80, math.NaN(), 20}, ErrorStats{N: 2, MAPE: 50, MedianAPE: 50, SignedMean: -30}},
		{"one", []float64{-7.5}, ErrorStats{N: 1, MAPE: 7.5, MedianAPE: 7.5, SignedMean: -7.5}},
		{"empty", nil, ErrorStats{}},
		{"all nan", []float64{math.NaN()}, ErrorStats{}},
	}
	for _, c := range cases {
		got := Summarize(c.errs)
		if got.N != c.want.N || !near(got.MAPE, c.want.MAPE) || !near(got.MedianAPE, c.want.MedianAPE) || !near(got.SignedMean, c.want.SignedMean) {
			t.Errorf("%s: Summarize(%v) = %+v, want %+v", c.name, c.errs, got, c.want)
		}
	}
}

func TestSummarizeDoesNotReorderInput(t *testing.T) {
	errs := []float64{30, -10, 20}
	Summarize(errs)
	if errs[0] != 30 || errs[1] != -10 || errs[2] != 20 {
		t.Errorf("input changed: %v", errs)
	}
}

// Signed errors from predictions, end to end: BLIS 90 vs 100 (−10 %),
// 150 vs 100 (+50 %), 40 vs 50 (−20 %): MAPE 80/3, median 20, signed 20/3.
func TestErrorsFromPredictions(t *testing.T) {
	pairs := [][2]float64{{90, 100}, {150, 100}, {40, 50}}
	var errs []float64
	for _, p := range pairs {
		errs = append(errs, SignedError(p[0], p[1]))
	}
	got := Summarize(errs)
	if !near(got.MAPE, 80.0/3) || !near(got.MedianAPE, 20) || !near(got.SignedMean, 20.0/3) {
		t.Errorf("got %+v", got)
	}
}
