package report

import (
	"bytes"
	"math"
	"regexp"
	"testing"
)

// FuzzWriters feeds arbitrary labels and values (NaN, ±Inf, huge, tiny,
// negative on a log axis) to the HTML and SVG writers (TestPNGExtremes
// gives PNG the same kinds of values; it is too slow to fuzz): none may fail or panic, the
// page must keep exactly its two script elements and one table row per
// point, the page data must hold exactly the drawable points, and the SVG
// must stay well-formed XML.
// badCoord: a NaN or infinite number written as an attribute value.
var badCoord = regexp.MustCompile(`[="\s,][+-]?(NaN|Inf)[",\s]`)

func FuzzWriters(f *testing.F) {
	f.Add("</script><b>x</b>", 1.0, 2.0, 3.0, false)
	f.Add("\xff\"'&", math.NaN(), math.Inf(1), -1.0, true)
	f.Add("漢字 \u2028", 1e308, -1e308, 5e-324, true)
	f.Add("", 0.0, 0.0, 0.0, false)
	f.Fuzz(func(t *testing.T, label string, x, y, z float64, log bool) {
		pts := []Point{{X: x, Y: y, Label: label, Info: []KV{{label, label}}}, {X: y, Y: z, Label: label}, {X: z, Y: x}}
		c := Chart{ID: label, Title: label, XLabel: label, YLabel: label, LogX: log, LogY: !log, Series: []Series{
			{Name: label, Points: pts}, {Name: label, Style: Style(label), Points: pts[:1]}, {Name: "f", Style: Frontier, Points: pts[1:]},
		}}
		d := &Document{Title: label, Sections: []Section{{Heading: label, Text: label, Charts: []Chart{c, c}, Table: &Table{Columns: []string{label}, Rows: [][]string{{label, label}}}}}}
		page := writeHTML(t, d)
		checkPage(t, page)
		data := pageData(t, page)
		for i, s := range c.Series {
			n := 0
			for _, p := range s.Points {
				if p.finite() {
					n++
				}
			}
			if got := len(data.Charts[0].Series[i].Points); got != n {
				t.Errorf("series %d: %d points in the page data, want %d finite ones", i, got, n)
			}
		}
		if n := countRows(page, "data"); n != 2*6 {
			t.Errorf("data table rows = %d, want 12", n)
		}
		svg := writeSVG(t, &c)
		checkSVG(t, svg)
		if m := badCoord.Find(bytes.ReplaceAll(svg, []byte(text(label)), nil)); m != nil {
			t.Errorf("SVG has a coordinate %q", m)
		}
	})
}

// TestPNGExtremes: PNG draws charts of extreme and undrawable values
// without failing or panicking.
func TestPNGExtremes(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e308, -1e308, 5e-324, 0, -1, 1}
	for _, log := range []bool{false, true} {
		for i, x := range vals {
			y := vals[(i+3)%len(vals)]
			z := vals[(i+5)%len(vals)]
			c := Chart{Title: "extreme", LogX: log, LogY: !log, Series: []Series{
				{Name: "a", Points: []Point{{X: x, Y: y}, {X: y, Y: z}, {X: z, Y: x}}},
				{Name: "b", Style: Frontier, Points: []Point{{X: x, Y: x}}},
			}}
			var b bytes.Buffer
			if err := PNG(&b, &c); err != nil {
				t.Errorf("x %v y %v z %v log %v: %v", x, y, z, log, err)
			}
		}
	}
}
