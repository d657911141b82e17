package plan

import (
	"cmp"
	"slices"
)

// Objectives of min-gpus: the fewest GPUs, or the lowest dollars per hour.
const (
	MinimizeGPUs = "gpus"
	MinimizeCost = "cost"
)

// Candidate is one layout's outcome under the target load.
type Candidate struct {
	Layout string // as given (--layout) or the grid point's settings
	// Infeasible is why the layout cannot run at all (the model does not
	// fit, TP does not divide the heads); "" when it ran.
	Infeasible string
	GPUs       int
	// GPUsByChip is GPUs split by catalog chip (pools may differ).
	GPUsByChip  map[string]int
	CostPerHour float64
	Verdict     Verdict
}

// Rank orders candidates for the table: those that pass, cheapest first
// by the objective (ties: the other measure, then input order); then those
// that ran and failed, in the same order; then the infeasible ones in
// input order. The answer is the first when it passes.
func Rank(cands []Candidate, minimize string) []int {
	idx := make([]int, len(cands))
	for i := range idx {
		idx[i] = i
	}
	class := func(c Candidate) int {
		switch {
		case c.Infeasible != "":
			return 2
		case c.Verdict.Pass:
			return 0
		}
		return 1
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		x, y := cands[a], cands[b]
		if c := cmp.Compare(class(x), class(y)); c != 0 || class(x) == 2 {
			return c
		}
		g, d := cmp.Compare(x.GPUs, y.GPUs), cmp.Compare(x.CostPerHour, y.CostPerHour)
		if minimize == MinimizeCost {
			return cmp.Or(d, g)
		}
		return cmp.Or(g, d)
	})
	return idx
}
