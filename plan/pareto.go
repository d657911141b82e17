package plan

import (
	"cmp"
	"slices"
)

// Point is one run on InferenceX's chart: X is interactivity (output
// tokens per second a user sees), Y is throughput per GPU. Both are
// better higher.
type Point struct {
	X, Y float64
}

// Interactivity is InferenceX's "intvty" for a TPOT statistic in
// milliseconds: 1000 / TPOT, tokens per second per user (its
// utils/process_result.py derives one per TPOT statistic; the chart's hot
// column is median_intvty). 0 when TPOT is 0 (no request had two tokens).
func Interactivity(tpotMS float64) float64 {
	if tpotMS <= 0 {
		return 0
	}
	return 1000 / tpotMS
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
