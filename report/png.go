package report

import (
	"image/color"
	"io"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// pngLegendMax is the most series the PNG legend names.
const pngLegendMax = 12

// PNG writes a raster render of c at its initial axis scales, drawn by
// gonum.org/v1/plot with its embedded Liberation fonts (no system fonts),
// on the same ranges, ticks and colours as SVG. Points not drawn (NaN/Inf,
// or ≤ 0 on a log axis) are left out, and the legend says how many.
func PNG(w io.Writer, c *Chart) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = axisLabel(c.XLabel, "x", c.LogX)
	p.Y.Label.Text = axisLabel(c.YLabel, "y", c.LogY)
	var xs, ys []float64
	skipped := 0
	// The legend sits inside the plot: past pngLegendMax entries it would
	// run off the image, so the rest are counted.
	legendShown, legendHidden := 0, 0
	for i, s := range c.Series {
		var xy plotter.XYs
		for _, pt := range s.Points {
			if !drawable(pt, c.LogX, c.LogY) {
				skipped++
				continue
			}
			xy = append(xy, plotter.XY{X: pt.X, Y: pt.Y})
			xs, ys = append(xs, pt.X), append(ys, pt.Y)
		}
		col := hexColor(c.Series[i].color(i))
		var thumbs []plot.Thumbnailer
		if s.Style != Scatter && len(xy) > 1 {
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.LineStyle.Color = col
			l.LineStyle.Width = vg.Points(1.5)
			if s.Style == Frontier {
				l.LineStyle.Width = vg.Points(3)
			}
			if s.Style == Dashed {
				l.LineStyle.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
			}
			p.Add(l)
			thumbs = append(thumbs, l)
		}
		if len(xy) > 0 {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Color = col
			sc.GlyphStyle.Radius = vg.Points(3)
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			if s.Style == Dashed {
				sc.GlyphStyle.Shape = draw.RingGlyph{}
			}
			p.Add(sc)
			thumbs = append(thumbs, sc)
		}
		name := s.Name
		if name == "" {
			name = "series " + strconv.Itoa(i+1)
		}
		switch {
		case len(thumbs) == 0:
		case legendShown < pngLegendMax:
			p.Legend.Add(name, thumbs...)
			legendShown++
		default:
			legendHidden++
		}
	}
	if legendHidden > 0 {
		p.Legend.Add("… " + strconv.Itoa(legendHidden) + " more series")
	}
	if skipped > 0 {
		p.Legend.Add(strconv.Itoa(skipped) + " point" + plural(skipped) + " not drawn (NaN/Inf, or ≤ 0 on a log axis)")
	}
	p.Legend.Top = true
	x0, x1 := span(xs, c.LogX)
	y0, y1 := span(ys, c.LogY)
	p.X.Min, p.X.Max = x0, x1
	p.Y.Min, p.Y.Max = y0, y1
	xt, yt := linTicks(x0, x1), linTicks(y0, y1)
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		xt = logTicks(x0, x1)
	}
	if c.LogY {
		p.Y.Scale = plot.LogScale{}
		yt = logTicks(y0, y1)
	}
	p.X.Tick.Marker = ticker(xt)
	p.Y.Tick.Marker = ticker(yt)
	p.Add(plotter.NewGrid())
	cv := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 4.2*vg.Inch), vgimg.UseDPI(100), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(cv))
	_, err := vgimg.PngCanvas{Canvas: cv}.WriteTo(w)
	return err
}

// ticker: the same tick values and labels as the SVG render.
func ticker(ts []float64) plot.ConstantTicks {
	out := make(plot.ConstantTicks, len(ts))
	for i, t := range ts {
		out[i] = plot.Tick{Value: t, Label: tickText(t)}
	}
	return out
}

func hexColor(h string) color.RGBA {
	v, _ := strconv.ParseUint(h[1:], 16, 32)
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}
