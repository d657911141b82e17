package render

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"blis/report"
	"blis/validate/page"
	"blis/validate/score"
)

// Figures: small hand-written SVG (no plotting dependency, no fonts, no
// timestamps), so a page's figures are the same bytes on every machine.
// One figure per arm and metric — BLIS and measured per level, one colour
// per series, measured solid, BLIS dashed — and, where requests are
// paired, ITL against requests in flight for both sides.

// FigureDir is where a page's figures go, relative to the page.
func FigureDir(name string) string { return "figures/" + name }

// Figure is one file of a page's figure directory.
type Figure struct {
	Name string // file name inside FigureDir
	Data []byte
}

// Figures draws every figure the page links.
func Figures(pg *page.Page) []Figure {
	var out []Figure
	for _, a := range pg.Arms {
		for _, mp := range a.Population {
			out = append(out, Figure{Name: metricFigureName(a, mp), Data: metricFigure(a, mp)})
		}
		if a.Pairing != nil && len(a.Pairing.Scatter) > 0 {
			out = append(out, Figure{Name: itlFigureName(a), Data: itlFigure(a)})
		}
	}
	return out
}

func metricFigureName(a *page.ArmPage, mp page.MetricPop) string {
	return a.Name + "-" + mp.Key + ".svg"
}

func itlFigureName(a *page.ArmPage) string { return a.Name + "-itl-vs-in-flight.svg" }

// palette: colour-blind-safe (Okabe-Ito), cycled over series; the same as
// the HTML reports'.
var palette = report.Palette

const (
	figW, figH             = 640, 400
	padL, padR, padT, padB = 70, 170, 40, 50
	plotW, plotH           = figW - padL - padR, figH - padT - padB
)

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

type svg struct{ b bytes.Buffer }

func (s *svg) p(format string, a ...any) { fmt.Fprintf(&s.b, format, a...) }

func (s *svg) open(title string) {
	s.p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", figW, figH, figW, figH)
	s.p(`<rect width="%d" height="%d" fill="white"/>`+"\n", figW, figH)
	s.p(`<text x="%d" y="20" font-size="13">%s</text>`+"\n", padL, esc(title))
	s.p(`<clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>`+"\n", padL, padT, plotW, plotH)
}

func (s *svg) close() { s.p("</svg>\n") }

// niceTicks returns about n round tick values spanning [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}

func tickText(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// axes draws the frame, y ticks over [ymin, ymax] (linear from 0, or
// log10 when logY) and x ticks at xs (mapped by xpos).
func (s *svg) axes(ymin, ymax float64, logY bool, xs []float64, xpos func(float64) float64, xLabel, yLabel string) func(float64) float64 {
	ypos := func(v float64) float64 { return padT + plotH - v/ymax*plotH }
	ticks := niceTicks(0, ymax, 5)
	if logY {
		lo, hi := math.Log10(ymin), math.Log10(ymax)
		ypos = func(v float64) float64 { return padT + plotH - (math.Log10(v)-lo)/(hi-lo)*plotH }
		ticks = nil
		for e := math.Floor(lo); e <= math.Ceil(hi); e++ {
			for _, m := range []float64{1, 2, 5} {
				if t := m * math.Pow(10, e); t >= ymin && t <= ymax {
					ticks = append(ticks, t)
				}
			}
		}
		yLabel += " (log scale)"
	}
	s.p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n", padL, padT, plotW, plotH)
	for _, t := range ticks {
		if t > ymax {
			continue
		}
		y := ypos(t)
		s.p(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#ddd"/>`+"\n", padL, f1(y), padL+plotW, f1(y))
		s.p(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", padL-4, f1(y+4), tickText(t))
	}
	for _, x := range xs {
		px := xpos(x)
		s.p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#888"/>`+"\n", f1(px), padT+plotH, f1(px), padT+plotH+4)
		s.p(`<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f1(px), padT+plotH+16, esc(levelText(x)))
	}
	s.p(`<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+plotW/2, figH-12, esc(xLabel))
	s.p(`<text x="14" y="%d" text-anchor="middle" transform="rotate(-90 14 %d)">%s</text>`+"\n", padT+plotH/2, padT+plotH/2, esc(yLabel))
	return ypos
}

// metricFigure: one metric of one arm, BLIS and measured per level.
func metricFigure(a *page.ArmPage, mp page.MetricPop) []byte {
	var s svg
	info := mp.ID.Info()
	s.open(fmt.Sprintf("%s: %s (%s)", a.Label, info.Name, info.Unit))
	series := map[string][]score.Point{}
	var names []string
	var levels []float64
	ymax := 0.0
	for _, p := range mp.Compared {
		if _, ok := series[p.Series]; !ok {
			names = append(names, p.Series)
		}
		series[p.Series] = append(series[p.Series], p)
		if !containsF(levels, p.Level) {
			levels = append(levels, p.Level)
		}
		ymax = max(ymax, p.Measured, p.BLIS)
	}
	sort.Strings(names)
	sort.Float64s(levels)
	// Values spanning more than a decade are drawn on a log scale, so one
	// long-tail level does not flatten every other series.
	ymin := math.Inf(1)
	for _, p := range mp.Compared {
		ymin = min(ymin, p.Measured, p.BLIS)
	}
	ymin, ymax = bracketSpan(a, mp, ymin, ymax)
	logY := ymin > 0 && ymax/ymin > 10
	if logY {
		ymin /= 1.2
	}
	ymax *= 1.1
	// x: log2 of the level where all levels are finite and > 0, evenly
	// spaced by rank otherwise.
	logX := levels[0] > 0 && !math.IsInf(levels[len(levels)-1], 0)
	xpos := func(x float64) float64 {
		if len(levels) == 1 {
			return padL + plotW/2
		}
		var f float64
		if logX {
			lo, hi := math.Log2(levels[0]), math.Log2(levels[len(levels)-1])
			if hi == lo {
				return padL + plotW/2
			}
			f = (math.Log2(x) - lo) / (hi - lo)
		} else {
			f = float64(sort.SearchFloat64s(levels, x)) / float64(len(levels)-1)
		}
		return padL + 10 + f*(plotW-20)
	}
	xl := a.LevelKey
	if logX {
		xl += " (log scale)"
	}
	ypos := s.axes(ymin, ymax, logY, levels, xpos, xl, info.Unit)
	for i, name := range names {
		col := palette[i%len(palette)]
		pts := series[name]
		sort.SliceStable(pts, func(x, y int) bool { return pts[x].Level < pts[y].Level })
		for side, dash := range []string{"", ` stroke-dasharray="5,3"`} {
			var path []string
			for _, p := range pts {
				v := p.Measured
				if side == 1 {
					v = p.BLIS
				}
				path = append(path, f1(xpos(p.Level))+","+f1(ypos(v)))
			}
			s.p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", strings.Join(path, " "), col, dash)
			for _, pt := range path {
				xy := strings.SplitN(pt, ",", 2)
				fill := col
				if side == 1 {
					fill = "white"
				}
				s.p(`<circle cx="%s" cy="%s" r="3" fill="%s" stroke="%s"/>`+"\n", xy[0], xy[1], fill, col)
			}
		}
	}
	drawBracket(&s, a, mp, names, xpos, ypos)
	// Legend.
	lx := padL + plotW + 12
	y := padT + 8
	s.p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333" stroke-width="1.5"/><text x="%d" y="%d">measured</text>`+"\n", lx, y, lx+20, y, lx+26, y+4)
	y += 16
	s.p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333" stroke-width="1.5" stroke-dasharray="5,3"/><text x="%d" y="%d">BLIS</text>`+"\n", lx, y, lx+20, y, lx+26, y+4)
	for i, name := range names {
		y += 16
		label := name
		if label == "" {
			label = a.Label
		}
		if len(label) > 24 {
			label = label[:24]
		}
		s.p(`<rect x="%d" y="%d" width="12" height="8" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx, y-4, palette[i%len(palette)], lx+18, y+4, esc(label))
	}
	s.close()
	return s.b.Bytes()
}

func containsF(xs []float64, x float64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// maxScatter caps the points drawn per side (the first ones, in pair
// order), to keep figures small.
const maxScatter = 4000

// itlFigure: per-request ITL against in-flight count, both sides, with
// each side's least-squares line.
func itlFigure(a *page.ArmPage) []byte {
	var s svg
	s.open(a.Label + ": ITL vs requests in flight (same-in-flight pairs)")
	pts := a.Pairing.Scatter
	if len(pts) > maxScatter {
		pts = pts[:maxScatter]
	}
	xmax, ymax := 1.0, 0.0
	for _, p := range pts {
		xmax = max(xmax, float64(p.MIn), float64(p.BIn))
		ymax = max(ymax, p.MITL, p.BITL)
	}
	ymax *= 1.1
	if ymax <= 0 {
		ymax = 1
	}
	xpos := func(x float64) float64 { return padL + 10 + x/xmax*(plotW-20) }
	ticks := niceTicks(0, xmax, 5)
	ypos := s.axes(0, ymax, false, ticks, xpos, "requests in flight (time-weighted mean, rounded)", "ITL (ms)")
	sides := []struct {
		col  string
		x    func(page.ScatterPoint) float64
		y    func(page.ScatterPoint) float64
		name string
	}{
		{palette[0], func(p page.ScatterPoint) float64 { return float64(p.MIn) }, func(p page.ScatterPoint) float64 { return p.MITL }, "measured"},
		{palette[1], func(p page.ScatterPoint) float64 { return float64(p.BIn) }, func(p page.ScatterPoint) float64 { return p.BITL }, "BLIS"},
	}
	for _, sd := range sides {
		var xs, ys []float64
		for _, p := range pts {
			xs, ys = append(xs, sd.x(p)), append(ys, sd.y(p))
			s.p(`<circle cx="%s" cy="%s" r="2" fill="%s" fill-opacity="0.5"/>`+"\n", f1(xpos(sd.x(p))), f1(ypos(sd.y(p))), sd.col)
		}
		if slope := score.LeastSquaresSlope(xs, ys); !math.IsNaN(slope) {
			b := score.Mean(ys) - slope*score.Mean(xs)
			s.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5" clip-path="url(#plot)"/>`+"\n",
				f1(xpos(0)), f1(ypos(b)), f1(xpos(xmax)), f1(ypos(b+slope*xmax)), sd.col)
		}
	}
	lx := padL + plotW + 12
	for i, sd := range sides {
		y := padT + 8 + 16*i
		s.p(`<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", lx+6, y, sd.col, lx+16, y+4, sd.name)
	}
	s.close()
	return s.b.Bytes()
}

// bracketSpan widens a figure's value range to hold a bracket's bars.
func bracketSpan(a *page.ArmPage, mp page.MetricPop, ymin, ymax float64) (float64, float64) {
	br := bracketFor(a, mp.Key)
	if br == nil {
		return ymin, ymax
	}
	for _, l := range br.Levels {
		if lo := l.BLISLow.F(); !math.IsNaN(lo) && lo > 0 {
			ymin = math.Min(ymin, lo)
		}
		if hi := l.BLISHigh.F(); !math.IsNaN(hi) {
			ymax = math.Max(ymax, hi)
		}
	}
	return ymin, ymax
}

// drawBracket draws BLIS's range over unstated-setting candidates as a
// bar at each level, in its series' colour, and says so under the legend.
func drawBracket(s *svg, a *page.ArmPage, mp page.MetricPop, names []string, xpos, ypos func(float64) float64) {
	br := bracketFor(a, mp.Key)
	if br == nil {
		return
	}
	for _, l := range br.Levels {
		lo, hi := l.BLISLow.F(), l.BLISHigh.F()
		if math.IsNaN(lo) || math.IsNaN(hi) || !(lo > 0) {
			continue
		}
		col := palette[0]
		for i, n := range names {
			if n == l.Series {
				col = palette[i%len(palette)]
			}
		}
		x := xpos(l.Level.F())
		s.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="3" stroke-opacity="0.45"/>`+"\n", f1(x), f1(ypos(lo)), f1(x), f1(ypos(hi)), col)
		for _, y := range []float64{lo, hi} {
			s.p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-opacity="0.7"/>`+"\n", f1(x-4), f1(ypos(y)), f1(x+4), f1(ypos(y)), col)
		}
	}
	lx := padL + plotW + 12
	s.p(`<text x="%d" y="%d" font-size="10">bars: BLIS over the</text>`+"\n", lx, padT+plotH-16)
	s.p(`<text x="%d" y="%d" font-size="10">unstated-setting candidates</text>`+"\n", lx, padT+plotH-4)
}

// bracketFor is arm a's bracket of metric key, or nil.
func bracketFor(a *page.ArmPage, key string) *page.Bracket {
	for i := range a.Brackets {
		if a.Brackets[i].Key == key {
			return &a.Brackets[i]
		}
	}
	return nil
}
