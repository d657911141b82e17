package page

import (
	"math"
	"slices"

	"blis/validate/score"
)

// Brackets: where a run leaves a setting unstated and BLIS ran two or more
// candidates for it, the result is not one number but a range. The
// population tables keep the manifest's chosen value as the headline and
// add, per metric, the low..high of the signed mean and MAPE over the
// candidate runs (one setting varied at a time, the others at the
// headline's values), as the validation pages this format follows show two
// routings side by side; the figures draw BLIS's per-level range as bars.

// bracketStats brackets a metric over runs (each the points of one run,
// the same levels in the same order): the low and high of the signed mean
// and of the MAPE, and per point BLIS's low and high.
func bracketStats(runs [][]score.Point) (sLo, sHi, mLo, mHi score.Num, levels []BracketLevel) {
	sLo, sHi, mLo, mHi = score.NaN(), score.NaN(), score.NaN(), score.NaN()
	lower := func(cur score.Num, x score.Num) score.Num {
		if math.IsNaN(x.F()) {
			return cur
		}
		if math.IsNaN(cur.F()) || x < cur {
			return x
		}
		return cur
	}
	upper := func(cur score.Num, x score.Num) score.Num {
		if math.IsNaN(x.F()) {
			return cur
		}
		if math.IsNaN(cur.F()) || x > cur {
			return x
		}
		return cur
	}
	for _, pts := range runs {
		st := score.Population(pts)
		sLo, sHi = lower(sLo, st.SignedMean), upper(sHi, st.SignedMean)
		mLo, mHi = lower(mLo, st.MAPE), upper(mHi, st.MAPE)
	}
	if len(runs) == 0 {
		return
	}
	for i, p := range runs[0] {
		bl := BracketLevel{Series: p.Series, Level: score.Num(p.Level), BLISLow: score.NaN(), BLISHigh: score.NaN()}
		for _, pts := range runs {
			if i < len(pts) && !math.IsNaN(pts[i].BLIS) {
				bl.BLISLow, bl.BLISHigh = lower(bl.BLISLow, score.Num(pts[i].BLIS)), upper(bl.BLISHigh, score.Num(pts[i].BLIS))
			}
		}
		levels = append(levels, bl)
	}
	return
}

// brackets computes an arm's brackets from its probes of unstated
// settings (those with a candidate besides the headline that ran).
func brackets(pop []MetricPop, probes []Probe, levels []LevelPage, headline []score.Values) []Bracket {
	var over []string
	var runs [][]score.Values
	runs = append(runs, headline)
	for _, p := range probes {
		if p.Provenance != score.Unstated && p.Provenance != "assumed" {
			continue
		}
		n := 0
		for _, c := range p.Candidates[min(1, len(p.Candidates)):] {
			if c.Failed == "" && c.vals != nil {
				runs = append(runs, c.vals)
				n++
			}
		}
		if n > 0 && !slices.Contains(over, p.Setting) {
			over = append(over, p.Setting)
		}
	}
	if len(over) == 0 {
		return nil
	}
	var out []Bracket
	for _, mp := range pop {
		var pts [][]score.Point
		for _, vals := range runs {
			var rp []score.Point
			for li, l := range levels {
				if l.Failed != "" || math.IsNaN(l.meas[mp.ID]) || math.IsNaN(headline[li][mp.ID]) {
					continue
				}
				rp = append(rp, score.Point{Series: l.Series, Level: float64(l.Level), Measured: l.meas[mp.ID], BLIS: vals[li][mp.ID]})
			}
			pts = append(pts, rp)
		}
		br := Bracket{Metric: mp.Metric, Key: mp.Key, TTFT: mp.TTFT, Over: over, Runs: len(runs)}
		br.SignedMeanLow, br.SignedMeanHigh, br.MAPELow, br.MAPEHigh, br.Levels = bracketStats(pts)
		out = append(out, br)
	}
	return out
}
