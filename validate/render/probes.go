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

// Rendering of gap re-checks, brackets and sensitivity runs. The gap
// re-checks follow the provenance verdict (where the validation pages this
// format follows place them), brackets follow each population table,
// sensitivity runs get their own section after the output metrics, and the
// per-level probe numbers come before the page's per-level table.

// probeMetricKeys are the headline metrics any probe or sensitivity run
// compares, in HeadlineMetrics order.
func probeMetricKeys(pg *page.Page) []score.Metric {
	used := map[string]bool{}
	for _, a := range pg.Arms {
		for _, p := range a.Probes {
			for _, k := range p.Metrics {
				used[k] = true
			}
		}
		for _, s := range a.Sensitivity {
			for _, k := range s.Metrics {
				used[k] = true
			}
		}
	}
	var out []score.Metric
	for _, m := range page.HeadlineMetrics {
		if used[m.Info().Key] {
			out = append(out, m)
		}
	}
	return out
}

func writeProbes(m *mdw, pg *page.Page) {
	if !pg.ProbesAsked() {
		return
	}
	m.p("\n## Gap re-checks\n\n")
	m.p("Each gap the provenance tables claim that BLIS can toggle (a removable MISMATCH, or an UNSTATED setting with candidate values), re-checked by paired BLIS probes of this build. %s\n\n", pg.ProbeRule)
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return len(a.Probes) > 0 })
	if any {
		m.head("arm", "gap", "provenance", "candidates", "levels varied", "empirical verdict", "detail")
		for _, a := range pg.Arms {
			for _, p := range a.Probes {
				var vals []string
				for _, c := range p.Candidates {
					vals = append(vals, candidateText(c))
				}
				m.row(a.Label, p.Setting, p.Provenance, strings.Join(vals, "; "), strconv.Itoa(p.Varied), p.Verdict, p.Detail)
			}
		}
		m.p("\n")
	}
	m.notes(pg.Arms, func(a *page.ArmPage) string {
		if a.ProbeNote != "" {
			return "not re-checked: " + a.ProbeNote + "."
		}
		return ""
	})
	if !any {
		return
	}
	ms := probeMetricKeys(pg)
	m.p("\nPer candidate: MAPE %% of each headline metric over the levels the arm scores (-- where not compared), and the largest change of BLIS's value at any level from the headline run.\n\n")
	head := []string{"arm", "setting", "value", "why"}
	for _, k := range ms {
		head = append(head, k.Info().Name+" MAPE %")
	}
	head = append(head, "largest move")
	m.head(head...)
	for _, a := range pg.Arms {
		for _, p := range a.Probes {
			for _, c := range p.Candidates {
				row := []string{a.Label, p.Setting, candidateText(c), c.Why}
				for _, k := range ms {
					v, ok := c.MAPE[k.Info().Key]
					if !ok || c.Failed != "" {
						row = append(row, "--")
						continue
					}
					row = append(row, v.Fixed(1))
				}
				row = append(row, moveText(c, p.Metrics))
				m.row(row...)
			}
		}
	}
}

// candidateText is a candidate's value with its role.
func candidateText(c page.ProbeCandidate) string {
	v := c.Value
	if v == "" {
		v = "(unresolved)"
	}
	switch {
	case c.Headline:
		v += " (headline)"
	case c.Measured:
		v += " (measured)"
	}
	if c.Failed != "" {
		v += " (BLIS failed)"
	}
	return v
}

// moveText is a candidate's largest move over the headline metrics.
func moveText(c page.ProbeCandidate, keys []string) string {
	switch {
	case c.Headline:
		return "--"
	case c.Failed != "":
		return "failed: " + c.Failed
	case c.Identical:
		return "byte-identical"
	}
	best, bestK := -1.0, ""
	for _, k := range keys {
		if v := c.MaxMove[k].F(); v > best || (math.IsInf(v, 1) && best < math.Inf(1)) {
			best, bestK = v, k
		}
	}
	if bestK == "" {
		return "--"
	}
	return fmt.Sprintf("%s%% (%s)", score.Num(best).Fixed(2), score.MetricName(bestK))
}

// writeBrackets follows a population table: the low..high over the
// candidates of unstated settings.
func writeBrackets(m *mdw, pg *page.Page, ttft bool) {
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool {
		return slices.ContainsFunc(a.Brackets, func(br page.Bracket) bool { return br.TTFT == ttft })
	})
	if !any {
		return
	}
	m.p("Bracketed over unstated settings: each setting varied over its candidates (Gap re-checks), one at a time, the others at the headline's values; the row above stays the manifest's value.\n\n")
	m.head("arm", "metric", "bracketed over", "runs", "signed mean low..high", "MAPE % low..high")
	for _, a := range pg.Arms {
		for _, br := range a.Brackets {
			if br.TTFT != ttft {
				continue
			}
			m.row(a.Label, br.Metric, strings.Join(br.Over, ", "), strconv.Itoa(br.Runs),
				pct(br.SignedMeanLow)+".."+pct(br.SignedMeanHigh), br.MAPELow.Fixed(1)+".."+br.MAPEHigh.Fixed(1))
		}
	}
	m.p("\n")
}

// writeSensitivity writes the arms' sensitivity runs in their own section.
func writeSensitivity(m *mdw, pg *page.Page) {
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return len(a.Sensitivity) > 0 })
	if !any {
		return
	}
	ms := probeMetricKeys(pg)
	m.p("\n## Sensitivity runs\n\n")
	m.p("Each re-runs an arm's replay (same levels, same seed) with a setting the measured run did not have as BLIS replays it. %s Its numbers are not in the headline tables or the regression gate.\n\n", page.SensitivityNote)
	for _, a := range pg.Arms {
		for _, s := range a.Sensitivity {
			m.p("\n### %s: %s\n\n", a.Label, s.Label)
			m.p("Signed error per level with %s (%s). %s\n\n", s.Label, strings.Join(s.Settings, ", "), page.SensitivityNote)
			switch {
			case s.Failed != "":
				m.p("BLIS could not simulate it: %s.\n\n", s.Failed)
			case s.Identical:
				m.p("Identical to the as-replayed run at every level: the replay has nothing this setting changes.\n\n")
			}
			head := []string{"level"}
			for _, k := range ms {
				head = append(head, k.Info().Name)
			}
			m.head(head...)
			for _, l := range s.Levels {
				if l.Failed != "" {
					m.row(l.Text, "--")
					continue
				}
				m.row(errorCells([]string{l.Text}, l.Errors, ms)...)
			}
			m.p("\n")
			m.head("metric", "MAPE % as replayed", "MAPE % sensitivity run", "signed mean sensitivity run")
			for _, k := range ms {
				key := k.Info().Key
				if _, ok := s.MAPE[key]; !ok {
					continue
				}
				m.row(k.Info().Name, s.ReplayMAPE[key].Fixed(1), s.MAPE[key].Fixed(1), pct(s.SignedMean[key]))
			}
			m.p("\n")
		}
	}
}

// writeProbeLevels writes every probe candidate's signed errors per level
// (the levels where the setting varied).
func writeProbeLevels(m *mdw, pg *page.Page) {
	any := slices.ContainsFunc(pg.Arms, func(a *page.ArmPage) bool { return len(a.Probes) > 0 })
	if !any {
		return
	}
	ms := probeMetricKeys(pg)
	m.p("\n## Gap re-checks per level\n\nSigned error of each candidate other than the headline's (the headline's are in the next table), at the levels where the setting varied.\n\n")
	head := []string{"arm", "setting", "value", "series", "level"}
	for _, k := range ms {
		head = append(head, k.Info().Name)
	}
	m.head(head...)
	for _, a := range pg.Arms {
		for _, p := range a.Probes {
			for _, c := range p.Candidates {
				if c.Headline || c.Failed != "" {
					continue
				}
				for _, l := range c.Levels {
					if l.Stated || l.Failed != "" {
						continue
					}
					m.row(errorCells([]string{a.Label, p.Setting, c.Value, orDash(l.Series), l.Text}, l.Errors, ms)...)
				}
			}
		}
	}
}

// errorCells appends a level's signed error of each metric of ms to row
// ("--" where the level does not compare it).
func errorCells(row []string, errs map[string]score.Num, ms []score.Metric) []string {
	for _, k := range ms {
		if v, ok := errs[k.Info().Key]; ok {
			row = append(row, pct(v))
		} else {
			row = append(row, "--")
		}
	}
	return row
}
