package score

import (
	"math"
	"testing"
)

func nearPct(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b))
}

// Hand-computed: see the comments for each expected number.
func TestPopulationHandComputed(t *testing.T) {
	cases := []struct {
		name   string
		points []Point
		want   PopStats
	}{
		{
			// errors +10, −10, 0; geo: (ln 1.1 + ln 0.9 + 0)/3 = −0.0033501 →
			// −0.33445 %; shape: (180/110)/(200/100) → −18.1818 %,
			// (400/110)/(400/100) → −9.0909 %, mean 13.6364.
			name: "one series",
			points: []Point{
				{Level: 4, Measured: 400, BLIS: 400},
				{Level: 1, Measured: 100, BLIS: 110},
				{Level: 2, Measured: 200, BLIS: 180},
			},
			want: PopStats{Points: 3, SignedLowest: 10, SignedMean: 0, MAPE: 20.0 / 3,
				GeoMeanBias: Num(100 * (math.Exp((math.Log(1.1)+math.Log(0.9))/3) - 1)),
				ShapeError:  Num((100*(1-(180.0/110)/2) + 100*(1-(400.0/110)/4)) / 2),
				High:        1, Low: 1, Equal: 1, ShareHigh: 1.0 / 3, Sign: "mixed (1 high / 1 low / 1 equal)"},
		},
		{
			// Two series: A +10, +20, shape (24/11)/(20/10) → +9.0909 %;
			// B −20, −10, shape (9/4)/(10/5) → +12.5 %. No lowest level
			// across series.
			name: "two series",
			points: []Point{
				{Series: "B", Level: 4, Measured: 10, BLIS: 9},
				{Series: "A", Level: 1, Measured: 10, BLIS: 11},
				{Series: "A", Level: 2, Measured: 20, BLIS: 24},
				{Series: "B", Level: 1, Measured: 5, BLIS: 4},
			},
			want: PopStats{Points: 4, SignedLowest: NaN(), SignedMean: 0, MAPE: 15,
				GeoMeanBias: Num(100 * (math.Exp((math.Log(1.1)+math.Log(1.2)+math.Log(0.8)+math.Log(0.9))/4) - 1)),
				ShapeError:  Num((100*((24.0/11)/2-1) + 12.5) / 2),
				High:        2, Low: 2, ShareHigh: 0.5, Sign: "mixed (2 high / 2 low)"},
		},
		{
			// One level: no shape; a zero measured value is dropped.
			name:   "single level, dropped point",
			points: []Point{{Level: 8, Measured: 50, BLIS: 60}, {Level: 16, Measured: 0, BLIS: 3}},
			want: PopStats{Points: 1, Dropped: 1, SignedLowest: 20, SignedMean: 20, MAPE: 20, GeoMeanBias: 20,
				ShapeError: NaN(), High: 1, ShareHigh: 1, Sign: "BLIS high at every level"},
		},
		{
			name: "empty",
			want: PopStats{SignedLowest: NaN(), SignedMean: NaN(), MAPE: NaN(), GeoMeanBias: NaN(),
				ShapeError: NaN(), ShareHigh: NaN(), Sign: "no levels"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Population(c.points)
			w := c.want
			if got.Points != w.Points || got.Dropped != w.Dropped || got.High != w.High || got.Low != w.Low ||
				got.Equal != w.Equal || got.Sign != w.Sign {
				t.Errorf("counts: got %+v\nwant %+v", got, w)
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"signed lowest", got.SignedLowest.F(), w.SignedLowest.F()}, {"signed mean", got.SignedMean.F(), w.SignedMean.F()},
				{"MAPE", got.MAPE.F(), w.MAPE.F()}, {"geo-mean bias", got.GeoMeanBias.F(), w.GeoMeanBias.F()},
				{"shape", got.ShapeError.F(), w.ShapeError.F()}, {"share high", got.ShareHigh.F(), w.ShareHigh.F()},
			} {
				if !nearPct(f.got, f.want) {
					t.Errorf("%s: got %v, want %v", f.name, f.got, f.want)
				}
			}
		})
	}
}

func TestPopulationOrderIndependent(t *testing.T) {
	a := []Point{{Level: 1, Measured: 3, BLIS: 3.3}, {Level: 2, Measured: 7, BLIS: 6.1}, {Level: 4, Measured: 11, BLIS: 13}}
	b := []Point{a[2], a[0], a[1]}
	if x, y := Population(a), Population(b); x != y && !(math.IsNaN(x.ShapeError.F()) && math.IsNaN(y.ShapeError.F())) {
		t.Errorf("order changes the result: %+v vs %+v", x, y)
	}
}

func TestSignSummary(t *testing.T) {
	for _, c := range []struct {
		h, l, e int
		want    string
	}{
		{8, 0, 0, "BLIS high at every level"},
		{0, 6, 0, "BLIS low at every level"},
		{3, 5, 0, "mixed (3 high / 5 low)"},
		{5, 1, 0, "mixed (5 high / 1 low)"},
		{0, 0, 4, "BLIS equal at every level"},
		{2, 0, 1, "mixed (2 high / 0 low / 1 equal)"},
		{0, 0, 0, "no levels"},
	} {
		if got := SignSummary(c.h, c.l, c.e); got != c.want {
			t.Errorf("SignSummary(%d, %d, %d) = %q, want %q", c.h, c.l, c.e, got, c.want)
		}
	}
}
