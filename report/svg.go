package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Static chart geometry: the page's plot area (720×420) plus a legend
// column on the right, since a static file has no HTML legend.
const (
	svgW, svgH             = 900, 420
	svgPL, svgPR           = 76, 196
	svgPT, svgPB           = 34, 50
	svgPlotR, svgPlotB     = svgW - svgPR, svgH - svgPB
	legendX, legendMaxText = svgPlotR + 14, 26
)

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// SVG writes a static render of c at its initial axis scales: hand-written
// SVG with no fonts embedded and no timestamps, so the same chart is the
// same bytes on every machine. Points not drawn (NaN/Inf, or ≤ 0 on a log
// axis) are counted in a note under the legend.
func SVG(w io.Writer, c *Chart) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	var xs, ys []float64
	skipped := 0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if !drawable(pt, c.LogX, c.LogY) {
				skipped++
				continue
			}
			xs, ys = append(xs, pt.X), append(ys, pt.Y)
		}
	}
	x0, x1 := span(xs, c.LogX)
	y0, y1 := span(ys, c.LogY)
	X := scale(x0, x1, c.LogX, svgPL, svgPlotR)
	Y := scale(y0, y1, c.LogY, svgPlotB, svgPT)
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", svgW, svgH, svgW, svgH)
	p(`<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	if c.Title != "" {
		p(`<text x="%d" y="20" font-size="13">%s</text>`+"\n", svgPL, text(c.Title))
	}
	xt, yt := linTicks(x0, x1), linTicks(y0, y1)
	if c.LogX {
		xt = logTicks(x0, x1)
	}
	if c.LogY {
		yt = logTicks(y0, y1)
	}
	for _, t := range xt {
		x := f1(X(t))
		p(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#e4e4e4"/>`+"\n", x, svgPT, x, svgPlotB)
		p(`<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", x, svgPlotB+16, tickText(t))
	}
	for _, t := range yt {
		y := Y(t)
		p(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e4e4e4"/>`+"\n", svgPL, f1(y), svgPlotR, f1(y))
		p(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", svgPL-5, f1(y+4), tickText(t))
	}
	p(`<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", svgPL, svgPT, svgPlotR-svgPL, svgPlotB-svgPT)
	p(`<text x="%d" y="%d" text-anchor="middle" font-size="12">%s</text>`+"\n", (svgPL+svgPlotR)/2, svgH-12, text(axisLabel(c.XLabel, "x", c.LogX)))
	cy := (svgPT + svgPlotB) / 2
	p(`<text x="16" y="%d" text-anchor="middle" font-size="12" transform="rotate(-90 16 %d)">%s</text>`+"\n", cy, cy, text(axisLabel(c.YLabel, "y", c.LogY)))
	p(`<clipPath id="plot"><rect x="%d" y="%d" width="%d" height="%d"/></clipPath>`+"\n", svgPL, svgPT, svgPlotR-svgPL, svgPlotB-svgPT)
	for i, s := range c.Series {
		col := c.Series[i].color(i)
		var pts []Point
		for _, pt := range s.Points {
			if drawable(pt, c.LogX, c.LogY) {
				pts = append(pts, pt)
			}
		}
		p(`<g>`)
		if s.Style != Scatter && len(pts) > 1 {
			var d strings.Builder
			for j, pt := range pts {
				if j > 0 {
					d.WriteByte(' ')
				}
				d.WriteString(f1(X(pt.X)) + "," + f1(Y(pt.Y)))
			}
			p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="%s"%s clip-path="url(#plot)"/>`, d.String(), col, strokeWidth(s.Style), dash(s.Style))
		}
		fill := col
		if s.Style == Dashed {
			fill = "white"
		}
		for _, pt := range pts {
			p(`<circle cx="%s" cy="%s" r="%s" fill="%s" stroke="%s" stroke-width="1.5"/>`, f1(X(pt.X)), f1(Y(pt.Y)), markerR(s.Style), fill, col)
		}
		p("</g>\n")
	}
	y := svgPT + 8
	for i, s := range c.Series {
		col := c.Series[i].color(i)
		name := s.Name
		if name == "" {
			name = "series " + strconv.Itoa(i+1)
		}
		if r := []rune(name); len(r) > legendMaxText {
			// Cut in the middle: series named by settings differ at the
			// end ("...max-num-batched-tokens=2048") as often as at the start.
			head := (legendMaxText - 1) / 2
			name = string(r[:head]) + "…" + string(r[len(r)-(legendMaxText-1-head):])
		}
		p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>`, legendX, y, legendX+20, y, col, strokeWidth(s.Style), dash(s.Style))
		p(`<text x="%d" y="%d">%s</text>`+"\n", legendX+26, y+4, text(name))
		y += 16
		if y > svgPlotB-20 && i < len(c.Series)-1 {
			p(`<text x="%d" y="%d">… %d more</text>`+"\n", legendX, y+4, len(c.Series)-i-1)
			break
		}
	}
	if skipped > 0 {
		p(`<text x="%d" y="%d" font-size="10" fill="#a33">%d point%s not drawn</text>`+"\n", legendX, svgPlotB, skipped, plural(skipped))
		p(`<text x="%d" y="%d" font-size="10" fill="#a33">(NaN/Inf, or ≤ 0 on a log axis)</text>`+"\n", legendX, svgPlotB+12)
	}
	p("</svg>\n")
	return bw.Flush()
}

func axisLabel(l, def string, log bool) string {
	if l == "" {
		l = def
	}
	if log {
		l += " (log)"
	}
	return l
}

func strokeWidth(s Style) string {
	if s == Frontier {
		return "3"
	}
	return "1.5"
}

func dash(s Style) string {
	if s == Dashed {
		return ` stroke-dasharray="6,4"`
	}
	return ""
}

func markerR(s Style) string {
	if s == Frontier {
		return "4.5"
	}
	return "3.5"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
