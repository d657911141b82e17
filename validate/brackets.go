package validate

import (
	"math"
	"slices"
)

// Brackets: where a run leaves a setting unstated and BLIS ran two or
// more candidates for it, the result is not one number but a range. The
// population tables keep the manifest's chosen value as the headline and
// add, per metric, the low..high of the signed mean and MAPE over the
// candidate runs (one setting varied at a time, the others at the
// headline's values), as the seed pages show two routings side by side;
// the figures draw BLIS's per-level range as bars.

// Bracket is one metric of one arm over the candidate runs.
type Bracket struct {
	Metric string `json:"metric"`
	Key    string `json:"key"`
	TTFT   bool   `json:"ttft_section"`
	// Over names the unstated settings varied; Runs counts the runs (the
	// headline included).
	Over           []string       `json:"bracketed_over"`
	Runs           int            `json:"runs"`
	SignedMeanLow  Num            `json:"signed_mean_low_pct"`
	SignedMeanHigh Num            `json:"signed_mean_high_pct"`
	MAPELow        Num            `json:"mape_low_pct"`
	MAPEHigh       Num            `json:"mape_high_pct"`
	Levels         []BracketLevel `json:"levels"`
}

// BracketLevel is BLIS's range at one level over the runs.
type BracketLevel struct {
	Series   string `json:"series,omitempty"`
	Level    Num    `json:"level"`
	BLISLow  Num    `json:"blis_low"`
	BLISHigh Num    `json:"blis_high"`
}

// bracketStats brackets a metric over runs (each the points of one run,
// the same levels in the same order): the low and high of the signed mean
// and of the MAPE, and per point BLIS's low and high.
func bracketStats(runs [][]Point) (sLo, sHi, mLo, mHi Num, levels []BracketLevel) {
	sLo, sHi, mLo, mHi = nan(), nan(), nan(), nan()
	lower := func(cur Num, x Num) Num {
		if math.IsNaN(x.F()) {
			return cur
		}
		if math.IsNaN(cur.F()) || x < cur {
			return x
		}
		return cur
	}
	upper := func(cur Num, x Num) Num {
		if math.IsNaN(x.F()) {
			return cur
		}
		if math.IsNaN(cur.F()) || x > cur {
			return x
		}
		return cur
	}
	for _, pts := range runs {
		st := Population(pts)
		sLo, sHi = lower(sLo, st.SignedMean), upper(sHi, st.SignedMean)
		mLo, mHi = lower(mLo, st.MAPE), upper(mHi, st.MAPE)
	}
	if len(runs) == 0 {
		return
	}
	for i, p := range runs[0] {
		bl := BracketLevel{Series: p.Series, Level: Num(p.Level), BLISLow: nan(), BLISHigh: nan()}
		for _, pts := range runs {
			if i < len(pts) && !math.IsNaN(pts[i].BLIS) {
				bl.BLISLow, bl.BLISHigh = lower(bl.BLISLow, Num(pts[i].BLIS)), upper(bl.BLISHigh, Num(pts[i].BLIS))
			}
		}
		levels = append(levels, bl)
	}
	return
}

// brackets computes an arm's brackets from its probes of unstated
// settings (those with a candidate besides the headline that ran).
func brackets(pop []MetricPop, probes []Probe, levels []LevelPage, headline []Values) []Bracket {
	var over []string
	var runs [][]Values
	runs = append(runs, headline)
	for _, p := range probes {
		if p.Provenance != Unstated && p.Provenance != "assumed" {
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
		var pts [][]Point
		for _, vals := range runs {
			var rp []Point
			for li, l := range levels {
				if l.Failed != "" || math.IsNaN(l.meas[mp.id]) || math.IsNaN(headline[li][mp.id]) {
					continue
				}
				rp = append(rp, Point{Series: l.Series, Level: float64(l.Level), Measured: l.meas[mp.id], BLIS: vals[li][mp.id]})
			}
			pts = append(pts, rp)
		}
		br := Bracket{Metric: mp.Metric, Key: mp.Key, TTFT: mp.TTFT, Over: over, Runs: len(runs)}
		br.SignedMeanLow, br.SignedMeanHigh, br.MAPELow, br.MAPEHigh, br.Levels = bracketStats(pts)
		out = append(out, br)
	}
	return out
}

// bracketFor is arm a's bracket of metric key, or nil.
func bracketFor(a *ArmPage, key string) *Bracket {
	for i := range a.Brackets {
		if a.Brackets[i].Key == key {
			return &a.Brackets[i]
		}
	}
	return nil
}
