package report

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"html"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The page's script and style live in files beside this one so they can be
// read and linted as JavaScript and CSS; they are embedded verbatim.

//go:embed assets/report.js
var reportJS string

//go:embed assets/report.css
var reportCSS string

// jsonChart is what the page's script reads for one chart: drawable points
// only (JSON has no NaN or Inf), with Info as [key, value] pairs.
type jsonChart struct {
	ID     string       `json:"id"`
	Title  string       `json:"title"`
	XLabel string       `json:"xlabel"`
	YLabel string       `json:"ylabel"`
	LogX   bool         `json:"logx"`
	LogY   bool         `json:"logy"`
	Series []jsonSeries `json:"series"`
	Common [][2]string  `json:"common,omitempty"`
}

type jsonSeries struct {
	Name   string      `json:"name"`
	Style  Style       `json:"style"`
	Color  string      `json:"color"`
	Points []jsonPoint `json:"points"`
}

type jsonPoint struct {
	X     float64     `json:"x"`
	Y     float64     `json:"y"`
	Label string      `json:"label,omitempty"`
	Info  [][2]string `json:"info,omitempty"`
}

// HTML writes doc as one self-contained page: inline style and script, the
// chart data as JSON in the page, no request to any other file or host
// (a Content-Security-Policy says so to the browser). Each chart is drawn
// by the page's script as SVG, with a hover tooltip of the point's Info, a
// legend whose entries toggle their series, and log/linear toggles per
// axis; each chart's data table, sortable by column, is written beneath it
// as plain HTML, so it reads without the script too.
func HTML(w io.Writer, doc *Document) error {
	bw := bufio.NewWriter(w)
	ids := chartIDs(doc)
	var charts []jsonChart
	for si, s := range doc.Sections {
		for ci := range s.Charts {
			charts = append(charts, toJSON(&s.Charts[ci], ids[si][ci]))
		}
	}
	if charts == nil {
		charts = []jsonChart{}
	}
	// encoding/json escapes <, > and & (and U+2028/U+2029), so no label can
	// close the script element that carries the data.
	data, err := json.Marshal(struct {
		Charts []jsonChart `json:"charts"`
	}{charts})
	if err != nil {
		return err
	}
	p := func(ss ...string) {
		for _, s := range ss {
			bw.WriteString(s)
		}
	}
	p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
		"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n",
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
		"<title>", text(doc.Title), "</title>\n<style>\n", reportCSS, "</style>\n</head>\n<body>\n")
	p("<h1>", text(doc.Title), "</h1>\n")
	if doc.Subtitle != "" {
		p("<p class=\"subtitle\">", text(doc.Subtitle), "</p>\n")
	}
	p("<noscript><p class=\"note\">The charts need JavaScript; the tables below hold every point.</p></noscript>\n")
	for si, s := range doc.Sections {
		p("<section>\n")
		if s.Heading != "" {
			p("<h2>", text(s.Heading), "</h2>\n")
		}
		if s.Text != "" {
			for _, para := range strings.Split(s.Text, "\n\n") {
				p("<p>", text(para), "</p>\n")
			}
		}
		for ci := range s.Charts {
			c := &s.Charts[ci]
			id := ids[si][ci]
			t := dataTable(c)
			n := strconv.Itoa(len(t.Rows))
			p("<figure class=\"chart\" id=\"", id, "\">\n")
			if c.Title != "" {
				p("<figcaption>", text(c.Title), "</figcaption>\n")
			}
			p("<div class=\"chart-body\" data-chart=\"", id, "\"></div>\n")
			// Long tables start folded: the browser lays out a table's
			// columns again as its rows arrive, so an unfolded thousand-row
			// table costs seconds of loading.
			open := " open"
			if len(t.Rows) > openRows {
				open = ""
			}
			p("<details class=\"points\"", open, "><summary>", n, " points</summary>\n")
			if len(c.Common) > 0 {
				p("<p class=\"common\">Every point: ")
				for i, kv := range c.Common {
					if i > 0 {
						p("; ")
					}
					p("<b>", text(kv.Key), "</b> ", text(kv.Value))
				}
				p("</p>\n")
			}
			writeTable(p, &t, "data")
			p("</details>\n</figure>\n")
		}
		if s.Table != nil {
			if len(s.Table.Rows) > openRows {
				p("<details class=\"rows\"><summary>", strconv.Itoa(len(s.Table.Rows)), " rows</summary>\n")
				writeTable(p, s.Table, "extra")
				p("</details>\n")
			} else {
				writeTable(p, s.Table, "extra")
			}
		}
		p("</section>\n")
	}
	p("<script type=\"application/json\" id=\"blis-report-data\">", string(data), "</script>\n")
	p("<script>\n", reportJS, "</script>\n</body>\n</html>\n")
	return bw.Flush()
}

// openRows: a chart's table with more rows than this starts folded.
const openRows = 200

func toJSON(c *Chart, id string) jsonChart {
	jc := jsonChart{ID: id, Title: clean(c.Title), XLabel: clean(c.XLabel), YLabel: clean(c.YLabel), LogX: c.LogX, LogY: c.LogY, Series: []jsonSeries{}}
	for _, kv := range c.Common {
		jc.Common = append(jc.Common, [2]string{clean(kv.Key), clean(kv.Value)})
	}
	for i, s := range c.Series {
		js := jsonSeries{Name: clean(s.Name), Style: s.Style, Color: s.color(i), Points: []jsonPoint{}}
		switch s.Style {
		case Line, Dashed, Frontier, Scatter:
		default:
			js.Style = Line
		}
		for _, pt := range s.Points {
			if !pt.finite() {
				continue
			}
			jp := jsonPoint{X: pt.X, Y: pt.Y, Label: clean(pt.Label)}
			for _, kv := range pt.Info {
				jp.Info = append(jp.Info, [2]string{clean(kv.Key), clean(kv.Value)})
			}
			js.Points = append(js.Points, jp)
		}
		jc.Series = append(jc.Series, js)
	}
	return jc
}

// text escapes s for HTML (and SVG) text and attribute values.
func text(s string) string { return html.EscapeString(clean(s)) }

// clean replaces each invalid byte of s, and each control character that
// XML forbids (all below U+0020 but tab, newline and return; U+007F;
// U+FFFE and U+FFFF), with U+FFFD, so a label reads the same in the
// tables, the SVG and the page data, and every file stays well-formed.
func clean(s string) string {
	ok := utf8.ValidString(s)
	for i := 0; ok && i < len(s); i++ {
		ok = !(s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' || s[i] == 0x7f || strings.HasPrefix(s[i:], "\uFFFE") || strings.HasPrefix(s[i:], "\uFFFF"))
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1, r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f, r == 0xfffe, r == 0xffff:
			b.WriteString("\uFFFD")
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func writeTable(p func(...string), t *Table, class string) {
	p("<table class=\"", class, " sortable\">\n<thead><tr>")
	for _, c := range t.Columns {
		p("<th>", text(c), "</th>")
	}
	p("</tr></thead>\n<tbody>\n")
	for _, r := range t.Rows {
		p("<tr>")
		for i := range max(len(t.Columns), len(r)) {
			cell := ""
			if i < len(r) {
				cell = r[i]
			}
			p("<td>", text(cell), "</td>")
		}
		p("</tr>\n")
	}
	p("</tbody>\n</table>\n")
}
