package render

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/validate/page"
	"blis/validate/score"
)

// Rendering of the build stamp, the binding tables and the cold full
// prefill (kept apart from markdown.go, which calls them).

// binaryText names the build on the page: the version alone when no stamp
// was given (tests), else the stamp as the validation pages this format
// follows print it.
func binaryText(pg *page.Page) string {
	if pg.Stamp == nil {
		return "`blis " + pg.BLISVersion + "`"
	}
	return "`blis " + pg.BLISVersion + "` (" + pg.Stamp.Text() + ")"
}

// full prints a bound value with about seven significant digits, so a
// difference within tolerance is still visible.
func full(x score.Num) string {
	f := x.F()
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "--"
	case f == 0:
		return "0"
	case math.Abs(f) >= 1e7 || math.Abs(f) < 1e-3:
		return strconv.FormatFloat(f, 'g', 7, 64)
	}
	d := 6 - int(math.Floor(math.Log10(math.Abs(f))))
	return strconv.FormatFloat(f, 'f', max(0, d), 64)
}

// pairLevelText is a paired level's cell, flagged when not bound.
func pairLevelText(l score.PairLevel) string {
	if l.NotBound {
		return levelText(l.Level.F()) + " (not bound)"
	}
	return levelText(l.Level.F())
}

func writeBinding(m *mdw, pg *page.Page) {
	m.p("\n## Binding measured records to published numbers\n\n")
	m.p("Where a level's measured input has both per-request records and the tool's published aggregates, every aggregate below is recomputed from the records with the tool's own formulas before any request is paired. A row is BOUND when the recomputed value is within %s%% of the published one (or half the file's last printed decimal, when that is larger); a level is BOUND when every row is. An UNBOUND level is still scored, and its pairs are marked \"not bound\".\n\n",
		strconv.FormatFloat(score.BindTolerancePct, 'f', -1, 64))
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return len(a.Binding) > 0 })
	if !any {
		m.p("No arm's measured input has both per-request records and published aggregates BLIS can recompute, so nothing is bound.\n")
		return
	}
	var formulas []string
	seen := map[string]bool{}
	for _, a := range pg.Arms {
		if len(a.Binding) == 0 {
			continue
		}
		m.p("\n### %s\n\n", a.Label)
		var flags []string
		for _, lb := range a.Binding {
			n := len(lb.Rows)
			if lb.Note != "" {
				flags = append(flags, fmt.Sprintf("level %s is **UNBOUND** (%s): its pairs are marked not bound", lb.Text, lb.Note))
			} else if lb.Verdict == score.Unbound {
				flags = append(flags, fmt.Sprintf("level %s is **UNBOUND** (%d of %d aggregates outside tolerance; %s): its pairs are marked not bound", lb.Text, lb.Unbound, n, lb.Source))
			} else {
				flags = append(flags, fmt.Sprintf("level %s is BOUND (%d aggregates)", lb.Text, n))
			}
			if !seen[lb.Format] && lb.Formula != "" {
				seen[lb.Format] = true
				formulas = append(formulas, lb.Format+": "+lb.Formula)
			}
		}
		m.p("%s.\n\n", upperFirst(strings.Join(flags, "; ")))
		m.head("level", "metric", "unit", "published", "recomputed", "difference", "verdict")
		for _, lb := range a.Binding {
			for _, r := range lb.Rows {
				m.row(lb.Text, r.Metric, r.Unit, full(r.Published), full(r.Recomputed), signedPct(r.DiffPct, 3), r.Verdict)
			}
		}
	}
	m.p("\nFormulas: %s.\n", strings.Join(formulas, "; "))
	m.notes(pg.Arms, func(a *page.ArmPage) string {
		if len(a.Binding) == 0 {
			return a.BindingNote
		}
		return ""
	})
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func writeColdPrefill(m *mdw, pg *page.Page) {
	m.p("Cold full prefill: the first request of the run (the warm-up primer where the measured file keeps warm-ups) at the lowest level where it ran its prefill with an empty prefix cache and nothing else in flight; BLIS's side is that level's first request replayed alone.\n\n")
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return a.ColdPrefill != nil })
	if any {
		m.head("arm", "level", "request", "measured TTFT ms", "BLIS TTFT ms", "TTFT", "note")
		for _, a := range pg.Arms {
			if c := a.ColdPrefill; c != nil {
				what := c.What
				if c.MeasuredID != "" {
					what += " (measured id " + c.MeasuredID + ")"
				}
				m.row(a.Label, c.Text, what, value(c.MeasuredTTFT), value(c.BLISTTFT), pct(c.Error), c.Note)
			}
		}
		m.p("\n")
	}
	m.notes(pg.Arms, func(a *page.ArmPage) string {
		if a.ColdPrefill != nil {
			return ""
		}
		if a.ColdPrefillNote != "" {
			return a.ColdPrefillNote
		}
		return "The measured results have no per-request records, so no cold full prefill is reported."
	})
	m.p("\n")
}
