package plan

import (
	"cmp"
	"math"
	"slices"

	"blis/report"
)

// Point is one run on InferenceX's chart: X is interactivity (output
// tokens per second a user sees), Y is throughput per GPU. Both are
// better higher.
type Point struct {
	X, Y float64
}

// Frontier returns the indices of the points no other point dominates (at
// least as good on both axes and better on one), in increasing X. Equal
// points are all on the frontier.
func Frontier(pts []Point) []int {
	idx := make([]int, len(pts))
	for i := range idx {
		idx[i] = i
	}
	// Highest X first; among equal X, highest Y first: then a point is on
	// the frontier iff its Y beats every Y seen at a strictly higher X and
	// equals the best at its own X.
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := cmp.Compare(pts[b].X, pts[a].X); c != 0 {
			return c
		}
		return cmp.Compare(pts[b].Y, pts[a].Y)
	})
	var out []int
	bestY := 0.0
	haveBest := false
	for k := 0; k < len(idx); {
		// One group of equal X.
		j := k
		for j < len(idx) && pts[idx[j]].X == pts[idx[k]].X {
			j++
		}
		groupBest := pts[idx[k]].Y
		if !haveBest || groupBest > bestY {
			for _, i := range idx[k:j] {
				if pts[i].Y == groupBest {
					out = append(out, i)
				}
			}
			bestY, haveBest = groupBest, true
		}
		k = j
	}
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(pts[a].X, pts[b].X) })
	return out
}

// LoadKeys are the keys of a sweep's load axis (blis sweep's grid `load:`):
// a configuration is a point's settings without them, and its points
// across the load make one curve.
var LoadKeys = []string{"max-concurrency", "request-rate"}

// Run is one measured point for ParetoChart: Config names its curve,
// X is interactivity and Y throughput per GPU.
type Run struct {
	Config string
	X, Y   float64
	Label  string
	Info   []report.KV
}

// FrontierColor is the Pareto frontier's colour (dark red: none of
// report.Palette's colour-blind-safe entries).
const FrontierColor = "#8B0000"

// ParetoChart draws runs as InferenceX draws its frontiers: one series per
// Config (first-seen order, points as given), then the Pareto frontier over
// every run as its own series. Runs with X ≤ 0 (no TPOT) or a NaN are left
// off. c carries the chart's ID, title and labels.
func ParetoChart(c report.Chart, runs []Run) report.Chart {
	var configs []string
	byConfig := map[string][]report.Point{}
	var drawn []report.Point
	var xy []Point
	for _, r := range runs {
		if !(r.X > 0) || math.IsNaN(r.Y) || math.IsInf(r.X, 0) || math.IsInf(r.Y, 0) {
			continue
		}
		p := report.Point{X: r.X, Y: r.Y, Label: r.Label, Info: r.Info}
		if _, ok := byConfig[r.Config]; !ok {
			configs = append(configs, r.Config)
		}
		byConfig[r.Config] = append(byConfig[r.Config], p)
		drawn = append(drawn, p)
		xy = append(xy, Point{X: r.X, Y: r.Y})
	}
	c.Series = nil
	for _, name := range configs {
		c.Series = append(c.Series, report.Series{Name: name, Points: byConfig[name]})
	}
	var frontier []report.Point
	for _, i := range Frontier(xy) {
		frontier = append(frontier, drawn[i])
	}
	// Its own colour, outside the palette the configurations cycle through,
	// so that it never shares one with a configuration.
	c.Series = append(c.Series, report.Series{Name: "Pareto frontier", Style: report.Frontier, Color: FrontierColor, Points: frontier})
	return c
}
