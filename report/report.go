// Package report turns a document of charts and tables into files people
// read: one self-contained interactive HTML page (HTML), and static SVG and
// PNG renders of a single chart (SVG, PNG). Sweeps, plans and validation
// pages build a Document; this package only draws it, so every report looks
// and behaves the same. Every writer gives the same bytes for the same
// document: no timestamps, no map order, no network.
package report

import (
	"math"
	"slices"
	"strconv"
)

// Document is one report: a title and its sections, in order.
type Document struct {
	Title    string
	Subtitle string
	Sections []Section
}

// Section is a heading, a paragraph of plain text, its charts (each with
// a data table of its points beneath it) and an optional extra table.
type Section struct {
	Heading string
	Text    string
	Charts  []Chart
	Table   *Table
}

// Chart is an x/y chart of one or more series. LogX and LogY are the
// initial axis scales; the HTML page lets the reader toggle them.
type Chart struct {
	ID     string // unique within the document; derived from the position when empty
	Title  string
	XLabel string
	YLabel string
	LogX   bool
	LogY   bool
	Series []Series
	// Common is what every point shares (e.g. the scenario settings of a
	// validation arm): each hover shows it after the point's own Info, and
	// the page lists it once above the chart's table, not in every row.
	Common []KV
}

// Style is how a series is drawn.
type Style string

const (
	// Line: markers joined by a solid line (the default).
	Line Style = ""
	// Dashed: markers joined by a dashed line, e.g. a prediction beside
	// the measurement it predicts.
	Dashed Style = "dashed"
	// Frontier: a thick line, for a Pareto frontier drawn over the points
	// it is made of.
	Frontier Style = "frontier"
	// Scatter: markers only.
	Scatter Style = "scatter"
)

// Series is one named set of points, drawn in the order given.
type Series struct {
	Name  string
	Style Style
	// Color is a "#rrggbb" colour, e.g. to draw a prediction in the colour
	// of the measurement it predicts; empty (or malformed) takes the
	// series' place in a colour-blind-safe palette.
	Color  string
	Points []Point
}

// Palette is the colour-blind-safe (Okabe-Ito) palette series cycle
// through by position.
var Palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// color is series i's colour: its own when well-formed, else its
// palette entry.
func (s *Series) color(i int) string {
	c := s.Color
	if len(c) == 7 && c[0] == '#' {
		ok := true
		for _, r := range c[1:] {
			ok = ok && (r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F')
		}
		if ok {
			return c
		}
	}
	return Palette[i%len(Palette)]
}

// Point is one x/y value. Label names it (e.g. its scenario); Info is
// what a hover shows: the point's settings and metrics. Points whose X or
// Y is NaN or infinite are not drawn; the data table lists them and says
// why.
type Point struct {
	X, Y  float64
	Label string
	Info  []KV
}

// KV is one labelled value of a point's Info.
type KV struct {
	Key   string
	Value string
}

// Table is a plain table of text cells; a row shorter than Columns is
// padded with empty cells.
type Table struct {
	Columns []string
	Rows    [][]string
}

// finite reports whether a point can be drawn.
func (p Point) finite() bool {
	return !math.IsNaN(p.X) && !math.IsInf(p.X, 0) && !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0)
}

// skipReason says why a point is not drawn, or "" when it is.
func (p Point) skipReason() string {
	var bad []string
	for _, v := range []struct {
		axis string
		f    float64
	}{{"x", p.X}, {"y", p.Y}} {
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			bad = append(bad, v.axis+" is "+num(v.f))
		}
	}
	switch len(bad) {
	case 0:
		return ""
	case 1:
		return "not drawn: " + bad[0]
	}
	return "not drawn: " + bad[0] + ", " + bad[1]
}

// num formats a value for tables and tooltips: six significant digits,
// enough to read and to sort by (the page's data keeps every bit), written
// as JavaScript writes the same number (String(+v.toPrecision(6))) from
// 1e-6 to 1e21, so a table and a hover agree.
func num(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 6, 64), 64)
	if a := math.Abs(r); a == 0 || a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// chartIDs gives every chart of the document a unique, HTML-safe id: its
// own ID cleaned to [A-Za-z0-9_-], or "chart-S-C" by position, with a
// numeric suffix where two would collide.
func chartIDs(doc *Document) [][]string {
	seen := map[string]bool{}
	out := make([][]string, len(doc.Sections))
	for si, s := range doc.Sections {
		for ci, c := range s.Charts {
			id := cleanID(c.ID)
			if id == "" {
				id = "chart-" + strconv.Itoa(si+1) + "-" + strconv.Itoa(ci+1)
			}
			base := id
			for n := 2; seen[id]; n++ {
				id = base + "-" + strconv.Itoa(n)
			}
			seen[id] = true
			out[si] = append(out[si], id)
		}
	}
	return out
}

func cleanID(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b = append(b, c)
		case len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	for len(b) > 0 && b[len(b)-1] == '-' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && !(b[0] >= 'a' && b[0] <= 'z' || b[0] >= 'A' && b[0] <= 'Z') {
		b = append([]byte("c-"), b...) // an HTML id and CSS selector start with a letter
	}
	return string(b)
}

// dataTable is a chart's points as a table: series, label, x, y, every
// Info key in first-seen order, and a note for points not drawn.
func dataTable(c *Chart) Table {
	var keys []string
	idx := map[string]int{}
	for _, s := range c.Series {
		for _, p := range s.Points {
			for _, kv := range p.Info {
				if _, ok := idx[kv.Key]; !ok {
					idx[kv.Key] = len(keys)
					keys = append(keys, kv.Key)
				}
			}
		}
	}
	xl, yl := c.XLabel, c.YLabel
	if xl == "" {
		xl = "x"
	}
	if yl == "" {
		yl = "y"
	}
	fixed := []string{"series", "point", xl, yl}
	cols := append([]string{}, fixed...)
	for _, k := range keys {
		if slices.Contains(fixed, k) || k == "note" {
			k += " (info)" // a column per key, never two of one name
		}
		cols = append(cols, k)
	}
	t := Table{Columns: append(cols, "note")}
	for _, s := range c.Series {
		for _, p := range s.Points {
			row := make([]string, len(t.Columns))
			row[0], row[1], row[2], row[3] = s.Name, p.Label, num(p.X), num(p.Y)
			for _, kv := range p.Info {
				row[4+idx[kv.Key]] = kv.Value
			}
			row[len(row)-1] = p.skipReason()
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}
