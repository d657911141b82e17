package render

import (
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"blis/report"
	"blis/validate/page"
	"blis/validate/score"
)

// The page as one interactive HTML file (package report): per arm, a
// chart of BLIS against measured per level for every metric the
// population section scores (the points of the SVG figures), whose hover
// gives the level, both values, the error and the arm's settings; the
// ITL error by requests in flight; and the sources, population, paired
// levels, provenance and per-level tables, built from the same page data
// as the Markdown.

// HTML writes the page as a self-contained interactive HTML file.
func HTML(w io.Writer, pg *page.Page) error { return report.HTML(w, Document(pg)) }

// Document is the page as a report document.
func Document(pg *page.Page) *report.Document {
	doc := &report.Document{
		Title:    pg.Title,
		Subtitle: "BLIS binaries: " + strings.ReplaceAll(binaryText(pg), "`", "") + "; step model " + orNone(strings.Join(pg.StepModels, ", ")) + "; inputs SHA-256 " + pg.InputsSHA256 + ".",
	}
	intro := "Every error is 100 * (BLIS / measured - 1): negative means BLIS is faster (lower latency) or, for throughput and interactivity, lower. Hover a point for its level, both values and the arm's settings; click a legend entry to hide its series."
	if pg.Description != "" {
		intro = pg.Description + "\n\n" + intro
	}
	src := &report.Table{Columns: []string{"arm", "verdict", "deployment", "measured inputs", "levels"}}
	for _, a := range pg.Arms {
		src.Rows = append(src.Rows, []string{a.Label, a.Verdict, a.Deployment, strings.Join(a.Inputs, "; "), strconv.Itoa(len(a.Levels))})
	}
	doc.Sections = append(doc.Sections, report.Section{Heading: "Sources", Text: intro, Table: src})
	for _, a := range pg.Arms {
		doc.Sections = append(doc.Sections, armSections(a)...)
	}
	return doc
}

// armSections: the arm's metric charts with its population table, the
// ITL-by-in-flight chart with its paired levels, its provenance and its
// levels.
func armSections(a *page.ArmPage) []report.Section {
	settings := armSettings(a)
	text := a.Deployment
	if len(a.MakeExact) > 0 {
		text += "\n\nWhat would make it exact: " + sentence(a.MakeExact) + "."
	}
	for _, n := range []string{a.PairingNote, a.KVNote} {
		if n != "" {
			text += "\n\n" + n
		}
	}
	for _, n := range a.Notes {
		text += "\n\n" + n
	}
	pop := &report.Table{Columns: []string{"metric", "points", "signed lowest", "signed mean", "MAPE %", "geo-mean bias", "shape error %", "share BLIS-high", "sign"}}
	var charts []report.Chart
	for _, mp := range a.Population {
		charts = append(charts, metricChart(a, mp, settings))
		pop.Rows = append(pop.Rows, []string{mp.Metric, strconv.Itoa(mp.Points), pct(mp.SignedLowest), pct(mp.SignedMean), mp.MAPE.Fixed(1),
			pct(mp.GeoMeanBias), mp.ShapeError.Fixed(1), mp.ShareHigh.Fixed(2), mp.Sign})
	}
	out := []report.Section{{Heading: a.Label + ": " + a.Verdict, Text: text, Charts: charts, Table: pop}}
	if p := a.Pairing; p != nil {
		pairs := &report.Table{Columns: []string{"level", "pairs", "solo pairs", "ITL solo", "same-in-flight pairs", "ITL same in flight", "request latency solo", "TTFT solo", "shown"}}
		for _, l := range p.Levels {
			pairs.Rows = append(pairs.Rows, []string{pairLevelText(l), strconv.Itoa(l.Pairs), strconv.Itoa(l.Solo), pct(l.ITLSolo), strconv.Itoa(l.SameInFlight),
				pct(l.ITLSame), pct(l.LatencySolo), pct(l.TTFTSolo), yesNo(l.Shown)})
		}
		sec := report.Section{Heading: a.Label + ": paired requests",
			Text: "Median per-request error over pairs (paired by " + p.PairBy + "): the same request on both sides. Solo: nothing else in flight on either side; same in flight: in-flight counts equal ±1. Levels with fewer than " +
				strconv.Itoa(score.MinSoloPairs) + " solo pairs are not shown on the Markdown page. Slope ratio BLIS / measured of ITL per request in flight: " + p.Slopes.Ratio.Fixed(2) + " over " + strconv.Itoa(p.Slopes.Pairs) + " pairs.",
			Table: pairs}
		if len(p.Bins) > 0 {
			s := report.Series{Name: "ITL median error"}
			for _, b := range p.Bins {
				s.Points = append(s.Points, report.Point{X: float64(b.Lo), Y: b.Median.F(), Label: "in flight " + b.Label,
					Info: []report.KV{{Key: "in flight", Value: b.Label}, {Key: "pairs", Value: strconv.Itoa(b.Pairs)}, {Key: "ITL median error", Value: pct(b.Median)}}})
			}
			sec.Charts = []report.Chart{{ID: a.Name + "-itl-by-in-flight", Title: a.Label + ": ITL median error by requests in flight (same-in-flight pairs)",
				XLabel: "requests in flight (bin start)", YLabel: "ITL median error (%)", Series: []report.Series{s}}}
		}
		out = append(out, sec)
	}
	prov := &report.Table{Columns: []string{"setting", "measured", "source", "BLIS", "verdict", "note"}}
	for _, r := range a.Provenance {
		prov.Rows = append(prov.Rows, []string{r.Setting, r.Measured, r.Source, r.BLIS, r.VerdictText(), r.Note})
	}
	out = append(out, report.Section{Heading: a.Label + ": provenance", Table: prov})
	lv := &report.Table{Columns: []string{"series", "level", "metric", "measured", "BLIS", "signed error", "source"}}
	for _, l := range a.Levels {
		if l.Failed != "" {
			lv.Rows = append(lv.Rows, []string{orDash(l.Series), l.Text, "--", "--", "--", "--", l.Source + "; BLIS failed: " + l.Failed})
			continue
		}
		for k := score.Metric(0); k < score.NumMetrics; k++ {
			key := k.Info().Key
			mv, ok1 := l.Measured[key]
			bv, ok2 := l.BLIS[key]
			if ok1 && ok2 {
				lv.Rows = append(lv.Rows, []string{orDash(l.Series), l.Text, k.Info().Name, value(mv), value(bv), pct(l.Errors[key]), l.Source})
			}
		}
	}
	out = append(out, report.Section{Heading: a.Label + ": every level", Table: lv})
	return out
}

// armSettings: what BLIS ran for the arm, shown with every point.
func armSettings(a *page.ArmPage) []report.KV {
	kv := []report.KV{{Key: "arm", Value: a.Label}, {Key: "deployment", Value: a.Deployment}}
	if a.StepModel != "" {
		kv = append(kv, report.KV{Key: "step model", Value: a.StepModel})
	}
	for _, r := range a.Provenance {
		v := r.BLIS
		if r.Verdict != score.Match {
			v += " (measured " + r.Measured + ": " + r.VerdictText() + ")"
		}
		kv = append(kv, report.KV{Key: r.Setting, Value: v})
	}
	return kv
}

// metricChart: one metric of one arm, measured (solid) and BLIS (dashed)
// per level and series, on the scales the SVG figure uses: x log where
// every level is finite and > 0 (by rank otherwise), y log where values
// span more than a decade.
func metricChart(a *page.ArmPage, mp page.MetricPop, settings []report.KV) report.Chart {
	info := mp.ID.Info()
	var levels []float64
	ymin, ymax := math.Inf(1), 0.0
	var names []string
	for _, p := range mp.Compared {
		if !slices.Contains(levels, p.Level) {
			levels = append(levels, p.Level)
		}
		if !slices.Contains(names, p.Series) {
			names = append(names, p.Series)
		}
		ymin, ymax = min(ymin, p.Measured, p.BLIS), max(ymax, p.Measured, p.BLIS)
	}
	sort.Float64s(levels)
	sort.Strings(names)
	byRank := len(levels) > 0 && (levels[0] <= 0 || math.IsInf(levels[len(levels)-1], 0))
	xl := a.LevelKey
	if byRank {
		xl += " (rank)"
	}
	c := report.Chart{
		ID:     a.Name + "-" + mp.Key,
		Title:  a.Label + ": " + info.Name + " (" + info.Unit + "), BLIS vs measured per level",
		XLabel: xl, YLabel: info.Name + " (" + info.Unit + ")",
		LogX: !byRank && len(levels) > 1, LogY: ymin > 0 && ymax/ymin > 10,
		Common: settings,
	}
	src := map[string]page.LevelPage{}
	for _, l := range a.Levels {
		src[l.Series+"\x00"+strconv.FormatFloat(l.Level.F(), 'g', -1, 64)] = l
	}
	for i, name := range names {
		col := report.Palette[i%len(report.Palette)] // both sides of a series in one colour, as in the SVG figures
		var pts []score.Point
		for _, p := range mp.Compared {
			if p.Series == name {
				pts = append(pts, p)
			}
		}
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Level < pts[j].Level })
		prefix := name
		if prefix != "" {
			prefix += ": "
		}
		meas := report.Series{Name: prefix + "measured", Color: col}
		blis := report.Series{Name: prefix + "BLIS", Style: report.Dashed, Color: col}
		for _, p := range pts {
			x := p.Level
			if byRank {
				x = float64(sort.SearchFloat64s(levels, p.Level))
			}
			l := src[p.Series+"\x00"+strconv.FormatFloat(p.Level, 'g', -1, 64)]
			var kv []report.KV
			if byRank {
				kv = append(kv, report.KV{Key: a.LevelKey, Value: levelText(p.Level)})
			}
			kv = append(kv,
				report.KV{Key: "measured", Value: value(score.Num(p.Measured))},
				report.KV{Key: "BLIS", Value: value(score.Num(p.BLIS))},
				report.KV{Key: "signed error", Value: pct(score.Num(p.Error()))},
				report.KV{Key: "source", Value: l.Source})
			label := a.LevelKey + " " + levelText(p.Level)
			meas.Points = append(meas.Points, report.Point{X: x, Y: p.Measured, Label: label, Info: kv})
			blis.Points = append(blis.Points, report.Point{X: x, Y: p.BLIS, Label: label, Info: kv})
		}
		c.Series = append(c.Series, meas, blis)
	}
	return c
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
