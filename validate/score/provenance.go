package score

import (
	"fmt"
	"strings"
)

// Provenance: how faithfully BLIS's replay matches the measured run,
// setting by setting, before any error is read. A setting is MATCH when
// the run states it and BLIS simulates the same value; MISMATCH when they
// differ, removable when BLIS has the knob and could take the measured
// value; UNSTATED when the run does not state it (BLIS's value is then an
// assumption).

// Verdicts of a provenance row.
const (
	Match    = "MATCH"
	Mismatch = "MISMATCH"
	Unstated = "UNSTATED"
)

// Arm verdicts.
const (
	Exact           = "EXACT"
	Partial         = "PARTIAL"
	NotReproducible = "NOT_REPRODUCIBLE"
)

// VerdictRule is the arm-verdict rule, written on every page.
const VerdictRule = "An arm is EXACT when every setting in its table is MATCH; PARTIAL when BLIS simulates it " +
	"but some setting is MISMATCH or UNSTATED; NOT_REPRODUCIBLE when BLIS cannot simulate it at all (a model or " +
	"chip missing from the catalog, a layout BLIS does not have, a deployment BLIS rejects), so nothing is scored."

// NotModelled is BLIS's value of a setting it has no representation for.
const NotModelled = "not modelled"

// EngineVersion is the vLLM release whose engine core BLIS's engine
// mirrors (engine/engine.go: vLLM's v1 core as of main after v0.11). A
// measured engine version of the same minor release is a MATCH.
const EngineVersion = "0.11"

// EngineVersionText is BLIS's side of the engine-version row.
const EngineVersionText = "vLLM v1 core after v0.11 (engine/engine.go)"

// EngineMismatchNote is the note of an engine-version MISMATCH.
const EngineMismatchNote = "BLIS prices one engine behaviour; the scheduler of other releases is not modelled"

// EngineMatches reports whether a measured vLLM version (no leading "v")
// is EngineVersion's minor release, so its engine-version row is a MATCH.
func EngineMatches(v string) bool {
	return v == EngineVersion || strings.HasPrefix(v, EngineVersion+".")
}

// ProvRow is one setting of an arm.
type ProvRow struct {
	Setting  string `json:"setting"`
	Measured string `json:"measured"`
	Source   string `json:"source"`
	BLIS     string `json:"blis"`
	Verdict  string `json:"verdict"`
	// Removable is meaningful for MISMATCH only: BLIS has the knob and
	// could simulate the measured value.
	Removable bool   `json:"removable"`
	Note      string `json:"note,omitempty"`
}

// VerdictText is the verdict as the table prints it: "MISMATCH (not
// removable)".
func (r ProvRow) VerdictText() string {
	if r.Verdict != Mismatch {
		return r.Verdict
	}
	if r.Removable {
		return "MISMATCH (removable)"
	}
	return "MISMATCH (not removable)"
}

// ArmVerdict applies VerdictRule: reproducible says BLIS could simulate
// and score the arm.
func ArmVerdict(rows []ProvRow, reproducible bool) string {
	if !reproducible {
		return NotReproducible
	}
	for _, r := range rows {
		if r.Verdict != Match {
			return Partial
		}
	}
	return Exact
}

// WhatWouldMakeExact lists, in table order, what removes each non-MATCH
// row: for a removable mismatch the BLIS setting to change, for an
// unremovable one the modelling BLIS lacks (or a run that used BLIS's
// value), for an unstated one the run stating it.
func WhatWouldMakeExact(rows []ProvRow) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, r := range rows {
		switch {
		case r.Verdict == Mismatch && r.Removable:
			used := r.BLIS
			if used == "" {
				used = "none"
			}
			add(fmt.Sprintf("BLIS run with %s = %s (the measured value; BLIS used %s)", r.Setting, r.Measured, used))
		case r.Verdict == Mismatch && r.Setting == "engine-version":
			add(fmt.Sprintf("a run on the vLLM release BLIS's engine mirrors (%s), or BLIS modelling vLLM %s's engine", EngineVersion, r.Measured))
		case r.Verdict == Mismatch && r.BLIS == NotModelled:
			add(fmt.Sprintf("BLIS modelling %s, or a run without it", r.Measured))
		case r.Verdict == Mismatch:
			add(fmt.Sprintf("BLIS modelling %s = %s, or a run with %s", r.Setting, r.Measured, r.BLIS))
		case r.Verdict == Unstated:
			add(fmt.Sprintf("the run stating %s", r.Setting))
		}
	}
	return out
}

// Unscored is a set of measured runs that cannot be scored, and what
// scoring them needs.
type Unscored struct {
	Set    string `json:"set"`
	Rows   int    `json:"rows,omitempty"`
	Needed string `json:"needed"`
}
