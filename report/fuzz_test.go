package report

import (
	"bytes"
	"math"
	"regexp"
	"testing"
)

// FuzzWriters feeds arbitrary labels and values (NaN, ±Inf, huge, tiny,
// negative on a log axis) to every writer: none may fail or panic, the
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
		var b bytes.Buffer
		if err := PNG(&b, &c); err != nil {
			t.Fatal(err)
		}
	})
}
