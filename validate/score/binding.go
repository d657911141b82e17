package score

import (
	"fmt"
	"math"

	"blis/metrics"
	"blis/metrics/format"
)

// Binding measured records to published numbers: when a level's measured
// input has both per-request records and the tool's published aggregates,
// the aggregates are recomputed from the records with the tool's own
// formulas (format.Recompute) before anything is paired. A
// level whose records do not reproduce its published numbers is UNBOUND:
// its records may be a different population (a filtered file, a second
// run, warm-ups mixed in), so its pairs are still reported but flagged.

// Binding verdicts.
const (
	Bound   = "BOUND"
	Unbound = "UNBOUND"
)

// BindTolerancePct is how far, in percent of the published value, a
// recomputed aggregate may be and still bind. Times kept to a nanosecond,
// the float rounding of Unix-second timestamps and BLIS's own ITL sketch
// (0.39 % on vLLM percentiles) stay well inside it; a different request
// population does not.
const BindTolerancePct = 0.5

// bindFloor is the absolute difference that always binds (a statistic of
// 0, such as a std of identical values).
const bindFloor = 1e-9

// BindRow is one published aggregate and its recomputation.
type BindRow struct {
	Metric     string `json:"metric"`
	Unit       string `json:"unit,omitempty"`
	Published  Num    `json:"published"`
	Recomputed Num    `json:"recomputed"`
	// DiffPct is 100 · (recomputed / published − 1); null when the
	// published value is 0.
	DiffPct Num `json:"difference_pct"`
	// Tolerance is the largest difference that binds, in the value's
	// unit: BindTolerancePct of the published value, or half the file's
	// last printed decimal when larger.
	Tolerance Num    `json:"tolerance"`
	Verdict   string `json:"verdict"`
}

// LevelBinding is one level's binding.
type LevelBinding struct {
	Level   Num    `json:"level"`
	Text    string `json:"level_text"`
	Source  string `json:"source"`
	Format  string `json:"format"`
	Formula string `json:"formulas"`
	Verdict string `json:"verdict"`
	// Unbound counts the rows outside tolerance.
	Unbound int       `json:"unbound_rows"`
	Rows    []BindRow `json:"rows"`
	Note    string    `json:"note,omitempty"`
}

// BindRecomputed judges each recomputed aggregate.
func BindRecomputed(rs []metrics.Recomputed) []BindRow {
	out := make([]BindRow, 0, len(rs))
	for _, r := range rs {
		p, c := r.Published, r.Recomputed
		tol := math.Max(math.Max(math.Abs(p)*BindTolerancePct/100, r.Quantum), bindFloor)
		row := BindRow{Metric: r.Name, Unit: r.Unit, Published: Num(p), Recomputed: Num(c), DiffPct: NaN(),
			Tolerance: Num(tol), Verdict: Unbound}
		if p != 0 && !math.IsNaN(c) {
			row.DiffPct = Num(100 * (c/p - 1))
		}
		if !math.IsNaN(c) && !math.IsInf(c, 0) && math.Abs(c-p) <= tol {
			row.Verdict = Bound
		}
		out = append(out, row)
	}
	return out
}

// BindLevel binds a measured run; nil when it lacks records or published
// aggregates BLIS can recompute.
func BindLevel(run *metrics.MeasuredRun) (lb *LevelBinding) {
	defer func() {
		// A bug in a recomputation fails the binding, not the page.
		if v := recover(); v != nil {
			lb = &LevelBinding{Format: run.Format, Verdict: Unbound, Note: fmt.Sprintf("internal error: %v", v)}
		}
	}()
	rs := format.Recompute(run)
	if len(rs) == 0 {
		return nil
	}
	lb = &LevelBinding{Format: run.Format, Formula: format.RecomputeFormula(run.Format), Verdict: Bound,
		Rows: BindRecomputed(rs)}
	for _, r := range lb.Rows {
		if r.Verdict != Bound {
			lb.Unbound++
		}
	}
	if lb.Unbound > 0 {
		lb.Verdict = Unbound
	}
	return lb
}
