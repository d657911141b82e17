package score

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Population metrics, as the validation pages this format follows define
// them: each compared value is one metric of one load level of one series
// (an arm's deployment at one input/output shape); BLIS's value and the
// measured one give a signed error 100·(BLIS/measured − 1), and the
// statistics below summarise an arm's points per metric.

// Point is one metric at one load level: what the run measured and what
// BLIS predicted for it.
type Point struct {
	// Series names the curve the level belongs to ("" when the arm has
	// one): shape error normalises each series by its own lowest level.
	Series   string  `json:"series,omitempty"`
	Level    float64 `json:"level"`
	Measured float64 `json:"measured"`
	BLIS     float64 `json:"blis"`
}

// Error is the point's signed error in percent (NaN when measured is not
// > 0).
func (p Point) Error() float64 { return SignedError(p.BLIS, p.Measured) }

// usable reports whether both sides are finite and > 0, the condition for
// every statistic below (a ratio and its logarithm must exist).
func (p Point) usable() bool {
	return p.Measured > 0 && p.BLIS > 0 && !math.IsInf(p.Measured, 0) && !math.IsInf(p.BLIS, 0)
}

// PopStats summarise one metric over an arm's points. Percentages are in
// percent; a statistic that cannot be computed is NaN (the page prints
// "--").
type PopStats struct {
	// Points counts the usable points; Dropped those left out because a
	// side was missing, zero, negative or not finite.
	Points  int `json:"points"`
	Dropped int `json:"dropped,omitempty"`
	// SignedLowest is the signed error at the lowest level (those pages'
	// "signed c1"); NaN when the arm has more than one series.
	SignedLowest Num `json:"signed_lowest_level_pct"`
	// SignedMean is mean(e); MAPE is mean(|e|).
	SignedMean Num `json:"signed_mean_pct"`
	MAPE       Num `json:"mape_pct"`
	// GeoMeanBias is 100·(exp(mean(log(BLIS/measured))) − 1).
	GeoMeanBias Num `json:"geo_mean_bias_pct"`
	// ShapeError divides each side by its own value at its series' lowest
	// level, excludes that level, and takes the MAPE of what is left: how
	// well BLIS follows the curve whatever its offset. NaN when no series
	// has two levels.
	ShapeError Num `json:"shape_error_pct"`
	// High, Low and Equal count points where BLIS's value is above, below
	// or equal to the measured one; ShareHigh is High/Points.
	High      int    `json:"high"`
	Low       int    `json:"low"`
	Equal     int    `json:"equal,omitempty"`
	ShareHigh Num    `json:"share_blis_high"`
	Sign      string `json:"sign"`
}

// Population computes the statistics of points. Points need not be
// sorted; the result does not depend on their order.
func Population(points []Point) PopStats {
	st := PopStats{SignedLowest: NaN(), SignedMean: NaN(), MAPE: NaN(), GeoMeanBias: NaN(), ShapeError: NaN(), ShareHigh: NaN()}
	var use []Point
	for _, p := range points {
		if p.usable() {
			use = append(use, p)
		} else {
			st.Dropped++
		}
	}
	st.Points = len(use)
	if st.Points == 0 {
		st.Sign = SignSummary(0, 0, 0)
		return st
	}
	// A fixed order makes the floating-point sums independent of the
	// caller's order.
	slices.SortFunc(use, func(a, b Point) int {
		if a.Series != b.Series {
			if a.Series < b.Series {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.Level, b.Level), cmp.Compare(a.Measured, b.Measured), cmp.Compare(a.BLIS, b.BLIS))
	})
	var sum, sumAbs, sumLog float64
	for _, p := range use {
		e := p.Error()
		sum += e
		sumAbs += math.Abs(e)
		sumLog += math.Log(p.BLIS / p.Measured)
		switch {
		case p.BLIS > p.Measured:
			st.High++
		case p.BLIS < p.Measured:
			st.Low++
		default:
			st.Equal++
		}
	}
	n := float64(st.Points)
	st.SignedMean = Num(sum / n)
	st.MAPE = Num(sumAbs / n)
	st.GeoMeanBias = Num(100 * (math.Exp(sumLog/n) - 1))
	st.ShareHigh = Num(float64(st.High) / n)
	st.Sign = SignSummary(st.High, st.Low, st.Equal)

	single := use[0].Series == use[len(use)-1].Series
	if single {
		st.SignedLowest = Num(use[0].Error())
	}
	var shapeAbs float64
	shapeN := 0
	for i := 0; i < len(use); {
		j := i
		for j < len(use) && use[j].Series == use[i].Series {
			j++
		}
		base := use[i]
		for _, p := range use[i+1 : j] {
			e := SignedError(p.BLIS/base.BLIS, p.Measured/base.Measured)
			shapeAbs += math.Abs(e)
			shapeN++
		}
		i = j
	}
	if shapeN > 0 {
		st.ShapeError = Num(shapeAbs / float64(shapeN))
	}
	return st
}

// SignSummary is the sign column of the validation pages this format
// follows: "BLIS high at every level", "BLIS low at every level", or "mixed
// (3 high / 5 low)". Points where BLIS equals the measured value are
// "equal" ("BLIS equal at every level", or a third count in the mixed
// form); with no points it is "no levels".
func SignSummary(high, low, equal int) string {
	switch {
	case high+low+equal == 0:
		return "no levels"
	case low == 0 && equal == 0:
		return "BLIS high at every level"
	case high == 0 && equal == 0:
		return "BLIS low at every level"
	case high == 0 && low == 0:
		return "BLIS equal at every level"
	case equal == 0:
		return fmt.Sprintf("mixed (%d high / %d low)", high, low)
	}
	return fmt.Sprintf("mixed (%d high / %d low / %d equal)", high, low, equal)
}
