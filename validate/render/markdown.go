// Package render writes a validation page (package page) as Markdown
// and draws its SVG figures: the same bytes for the same page.
package render

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"blis/validate/page"
	"blis/validate/score"
)

// Rendering: the page in the section order of the validation pages this
// format follows — sources, provenance verdict, output metrics on paired
// requests, ITL by load, population output metrics, TTFT, KV pool — then
// every level's numbers and the regression gate. Markdown as mkdocs renders
// it (pipe tables, relative image links); the same bytes for the same page.

// Markdown writes the page.
func Markdown(w io.Writer, pg *page.Page) error {
	m := &mdw{w: bufio.NewWriter(w)}
	m.p("# %s\n\n", pg.Title)
	m.p("BLIS binaries these results describe: %s, step model %s.\n", binaryText(pg), orNone(strings.Join(pg.StepModels, ", ")))
	files := "files"
	if len(pg.Inputs)-1 == 1 {
		files = "file"
	}
	m.p("Inputs: the manifest `%s` and %d measured %s, SHA-256 of the list `%s` (every file and its digest in `%s.json`).\n\n",
		pg.Manifest, len(pg.Inputs)-1, files, pg.InputsSHA256, pg.Name)
	if pg.Description != "" {
		m.p("%s\n\n", pg.Description)
	}
	m.p("Every error is 100 * (BLIS / measured - 1): negative means BLIS is faster (lower latency) or, for throughput and interactivity, lower.\n\n")

	m.p("## Sources\n\n")
	m.head("arm", "deployment", "measured inputs", "levels")
	for _, a := range pg.Arms {
		m.row(a.Label, a.Deployment, strings.Join(a.Inputs, "; "), strconv.Itoa(len(a.Levels)))
	}

	writeBinding(m, pg)
	writeProvenance(m, pg)
	writeProbes(m, pg) // probes.go
	writePairs(m, pg)
	writePopulation(m, pg, false)
	writeSensitivity(m, pg)
	writeTTFT(m, pg)
	writeKV(m, pg)
	writeProbeLevels(m, pg)
	writeLevels(m, pg)

	m.p("\n## Regression gate\n\n")
	m.p("`blis validate page %s --check` recomputes this page and fails when any arm's MAPE of any metric above grows by more than %s pp (percentage points) over `%s.baseline.json`, or an arm scores fewer points; `--record` pins a new baseline.\n",
		pg.Manifest, strconv.FormatFloat(pg.TolerancePP, 'f', -1, 64), pg.Name)
	if m.err != nil {
		return m.err
	}
	return m.w.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func writeProvenance(m *mdw, pg *page.Page) {
	m.p("\n## Provenance verdict\n\n%s\n\n", pg.VerdictRule)
	counts := map[string]int{}
	for _, a := range pg.Arms {
		counts[a.Verdict]++
	}
	if n := len(pg.Arms); counts[score.Exact] == n || counts[score.Partial] == n || counts[score.NotReproducible] == n {
		m.p("Every arm is %s.\n", pg.Arms[0].Verdict)
	} else {
		m.p("%d EXACT, %d PARTIAL, %d NOT_REPRODUCIBLE.\n", counts[score.Exact], counts[score.Partial], counts[score.NotReproducible])
	}
	for _, a := range pg.Arms {
		m.p("\n### %s: %s\n\n", a.Label, a.Verdict)
		if len(a.Provenance) > 0 {
			m.head("setting", "measured run", "source", "BLIS", "verdict", "note")
			for _, r := range a.Provenance {
				m.row(r.Setting, r.Measured, r.Source, r.BLIS, r.VerdictText(), r.Note)
			}
		}
		for _, n := range a.Notes {
			m.p("\n- %s", n)
		}
		if len(a.Notes) > 0 {
			m.p("\n")
		}
		if len(a.MakeExact) > 0 {
			m.p("\nWhat would make it EXACT: %s.\n", sentence(a.MakeExact))
		}
		if len(a.Unscored) > 0 {
			m.p("\nSets that cannot be scored (NOT_REPRODUCIBLE):\n\n")
			m.head("set", "rows", "needed")
			for _, u := range a.Unscored {
				m.row(u.Set, rowsText(u.Rows), u.Needed)
			}
		}
	}
	if len(pg.Unscored) > 0 {
		m.p("\n### Other sets that cannot be scored\n\nRows of the same sources that no arm above selects, and what scoring them needs (NOT_REPRODUCIBLE):\n\n")
		m.head("set", "rows", "needed")
		for _, u := range pg.Unscored {
			m.row(u.Set, rowsText(u.Rows), u.Needed)
		}
	}
}

func rowsText(n int) string {
	if n == 0 {
		return "--"
	}
	return strconv.Itoa(n)
}

func writePairs(m *mdw, pg *page.Page) {
	m.p("\n## Output metrics: ITL on paired requests\n\n")
	m.p("Median per-request error over pairs: the same request on both sides. Solo: nothing else in flight on either side. Same in-flight: in-flight counts (time-weighted over the request, rounded) equal ±1. Levels with fewer than %d solo pairs are omitted.\n\n", score.MinSoloPairs)
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return a.Pairing != nil })
	if any {
		m.head("arm", "level", "solo pairs", "ITL solo", "same-in-flight pairs", "ITL same in flight", "request latency solo")
		for _, a := range pg.Arms {
			if a.Pairing == nil {
				continue
			}
			for _, l := range a.Pairing.Levels {
				if l.Shown {
					m.row(a.Label, pairLevelText(l), strconv.Itoa(l.Solo), pct(l.ITLSolo), strconv.Itoa(l.SameInFlight), pct(l.ITLSame), pct(l.LatencySolo))
				}
			}
		}
		m.p("\n")
		for _, a := range pg.Arms {
			if a.Pairing == nil {
				continue
			}
			var omitted []string
			for _, l := range a.Pairing.Levels {
				if !l.Shown {
					omitted = append(omitted, fmt.Sprintf("%s (%d solo)", pairLevelText(l), l.Solo))
				}
				if l.Unmatched > 0 || l.Mismatched > 0 {
					m.p("- %s, level %s: requests without a counterpart: %d; matches left out because their token counts differ: %d.\n",
						a.Label, levelText(l.Level.F()), l.Unmatched, l.Mismatched)
				}
			}
			if len(omitted) > 0 {
				m.p("- %s: levels omitted: %s.\n", a.Label, strings.Join(omitted, ", "))
			}
		}
	}
	m.notes(pg.Arms, func(a *page.ArmPage) string {
		if a.Pairing == nil {
			return a.PairingNote
		}
		return ""
	})

	m.p("\n## ITL error by requests in flight (load-matched pairs)\n\n")
	if !any {
		m.p("No arm has paired requests.\n")
		return
	}
	m.p("Same-in-flight pairs pooled over levels, binned by the measured request's in-flight count.\n\n")
	m.head("arm", "in flight", "pairs", "ITL median error")
	for _, a := range pg.Arms {
		if a.Pairing == nil {
			continue
		}
		for _, b := range a.Pairing.Bins {
			m.row(a.Label, b.Label, strconv.Itoa(b.Pairs), pct(b.Median))
		}
	}
	m.p("\nBLIS's marginal ITL cost of one more in-flight request, divided by the measured one (least-squares slopes over the same pairs; 1.00 is exact, -- when in-flight counts do not vary):\n\n")
	m.head("arm", "slope ratio BLIS / measured", "measured ms per request", "BLIS ms per request", "pairs")
	for _, a := range pg.Arms {
		if a.Pairing == nil {
			continue
		}
		s := a.Pairing.Slopes
		m.row(a.Label, s.Ratio.Fixed(2), s.Measured.Fixed(4), s.BLIS.Fixed(4), strconv.Itoa(s.Pairs))
	}
	m.p("\n")
	for _, a := range pg.Arms {
		if a.Pairing != nil && len(a.Pairing.Scatter) > 0 {
			m.p("![%s: ITL vs requests in flight](%s/%s)\n", a.Label, FigureDir(pg.Name), itlFigureName(a))
		}
	}
}

func writePopulation(m *mdw, pg *page.Page, ttft bool) {
	if !ttft {
		m.p("\n## Output metrics: population\n\n")
		m.p("Per-level population metrics over every level of every series. MAPE, signed mean, geo-mean bias (100 * (exp(mean log ratio) - 1)) and share BLIS-high are over all points; shape error divides each side by its own lowest-level value in its series and excludes that level; signed lowest is the error at the lowest level (-- when the arm has several series).\n\n")
	} else {
		m.p("Population TTFT:\n\n")
	}
	m.head("arm", "metric", "points", "signed lowest", "signed mean", "MAPE %", "geo-mean bias", "shape error %", "share BLIS-high", "sign")
	n := 0
	for _, a := range pg.Arms {
		for _, mp := range a.Population {
			if mp.TTFT != ttft {
				continue
			}
			n++
			m.row(a.Label, mp.Metric, strconv.Itoa(mp.Points), pct(mp.SignedLowest), pct(mp.SignedMean), mp.MAPE.Fixed(1),
				pct(mp.GeoMeanBias), mp.ShapeError.Fixed(1), mp.ShareHigh.Fixed(2), mp.Sign)
		}
	}
	if n == 0 {
		m.row("--", "no metric stated on both sides", "0", "--", "--", "--", "--", "--", "--", "--")
	}
	m.p("\n")
	writeBrackets(m, pg, ttft)
	for _, a := range pg.Arms {
		for _, mp := range a.Population {
			if mp.TTFT == ttft {
				m.p("![%s: %s, BLIS vs measured per level](%s/%s)\n", a.Label, mp.Metric, FigureDir(pg.Name), metricFigureName(a, mp))
			}
		}
	}
}

func writeTTFT(m *mdw, pg *page.Page) {
	m.p("\n## TTFT\n\n")
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return a.Pairing != nil })
	if any {
		m.p("Paired solo TTFT (median per-request error):\n\n")
		m.head("arm", "level", "solo pairs", "TTFT solo")
		for _, a := range pg.Arms {
			if a.Pairing == nil {
				continue
			}
			for _, l := range a.Pairing.Levels {
				if l.Shown {
					m.row(a.Label, pairLevelText(l), strconv.Itoa(l.Solo), pct(l.TTFTSolo))
				}
			}
		}
		m.p("\n")
	}
	writeColdPrefill(m, pg)
	writePopulation(m, pg, true)
}

func writeKV(m *mdw, pg *page.Page) {
	m.p("\n## KV pool\n\nBLIS's KV-cache pool in tokens divided by the pool vLLM logged at start-up for the same deployment (1.00 is exact).\n\n")
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return a.KV != nil })
	if any {
		m.head("arm", "BLIS tokens", "vLLM logged tokens", "BLIS / vLLM-logged", "log line")
		for _, a := range pg.Arms {
			if a.KV != nil {
				m.row(a.Label, strconv.Itoa(a.KV.BLISTokens), strconv.Itoa(a.KV.LoggedTokens), a.KV.Ratio.Fixed(2), a.KV.Log)
			}
		}
		m.p("\n")
	}
	m.notes(pg.Arms, func(a *page.ArmPage) string {
		if a.KV == nil {
			return a.KVNote
		}
		return ""
	})
}

func writeLevels(m *mdw, pg *page.Page) {
	m.p("\n## Per level\n\nEvery compared value: measured, BLIS, and the signed error.\n\n")
	m.head("arm", "series", "level", "metric", "measured", "BLIS", "signed error", "source")
	for _, a := range pg.Arms {
		for _, l := range a.Levels {
			if l.Failed != "" {
				m.row(a.Label, orDash(l.Series), l.Text, "--", "--", "--", "--", l.Source+"; BLIS failed: "+l.Failed)
				continue
			}
			for k := score.Metric(0); k < score.NumMetrics; k++ {
				key := k.Info().Key
				mv, ok1 := l.Measured[key]
				bv, ok2 := l.BLIS[key]
				if !ok1 || !ok2 {
					continue
				}
				m.row(a.Label, orDash(l.Series), l.Text, k.Info().Name, value(mv), value(bv), pct(l.Errors[key]), l.Source)
			}
		}
	}
}

// sentence joins items as "a; b; and c".
func sentence(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], "; ") + "; and " + items[len(items)-1]
}
