package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (review the diff)")

// sampleDoc: two sections, every series style, a log axis, an extra table
// and points that cannot be drawn. The browser test loads the same doc.
func sampleDoc() *Document {
	conc := []float64{1, 2, 4, 8, 16, 32, 64}
	var h100, h200, front Series
	h100 = Series{Name: "H100 TP4"}
	h200 = Series{Name: "H200 TP2", Style: Dashed, Color: "#cc79a7"}
	front = Series{Name: "frontier", Style: Frontier}
	for i, c := range conc {
		tput := 1000 * c / (1 + c/16)
		inter := 120 / (1 + c/8)
		info := func(gpu string, tp int) []KV {
			return []KV{{"gpu", gpu}, {"tp", string(rune('0' + tp))}, {"concurrency", num(c)}, {"p90 TTFT (ms)", num(40 + 3*c)}}
		}
		h100.Points = append(h100.Points, Point{X: inter, Y: tput / 4, Label: "c=" + num(c), Info: info("H100", 4)})
		h200.Points = append(h200.Points, Point{X: inter * 1.1, Y: tput / 2 * 0.9, Label: "c=" + num(c), Info: info("H200", 2)})
		if i%2 == 0 {
			front.Points = append(front.Points, Point{X: inter * 1.1, Y: tput / 2 * 0.9, Label: "c=" + num(c)})
		}
	}
	scatter := Series{Name: "probes", Style: Scatter, Color: "red\"/><script>", Points: []Point{
		{X: 0.5, Y: 3, Label: "a"}, {X: 2, Y: 0, Label: "zero"}, {X: 5, Y: math.NaN(), Label: "failed"}, {X: math.Inf(1), Y: 1, Label: "inf"}, {X: 9, Y: 30, Label: "b"},
	}}
	return &Document{
		Title:    "Sweep: Llama-3.1-70B <test> & \"quotes\"",
		Subtitle: "throughput per GPU against interactivity",
		Sections: []Section{
			{Heading: "Pareto", Text: "One curve per configuration.\n\nThe frontier is thick.", Charts: []Chart{{
				ID: "pareto", Title: "tokens/s/GPU vs tokens/s/user", XLabel: "tokens/s per user", YLabel: "tokens/s per GPU",
				Series: []Series{h100, h200, front},
				Common: []KV{{"model", "Llama-3.1-70B"}, {"workload", "1024 in / 128 out"}},
			}}},
			{Heading: "Probes", Charts: []Chart{{Title: "log axes", XLabel: "x", YLabel: "y", LogX: true, LogY: true, Series: []Series{scatter}}},
				Table: &Table{Columns: []string{"arm", "MAPE"}, Rows: [][]string{{"a", "3.1"}, {"b"}}}},
		},
	}
}

func writeHTML(t testing.TB, d *Document) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeSVG(t testing.TB, c *Chart) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := SVG(&b, c); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from its golden file (go test -update rewrites it; review the diff)", path)
	}
}

func TestGolden(t *testing.T) {
	d := sampleDoc()
	tests := []struct {
		name  string
		write func() []byte
	}{
		{"sample.html", func() []byte { return writeHTML(t, d) }},
		{"pareto.svg", func() []byte { return writeSVG(t, &d.Sections[0].Charts[0]) }},
		{"probes-log.svg", func() []byte { return writeSVG(t, &d.Sections[1].Charts[0]) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := tc.write(), tc.write()
			if !bytes.Equal(a, b) {
				t.Fatal("two writes of the same document differ")
			}
			golden(t, tc.name, a)
		})
	}
}

// pageData is the JSON the page's script reads, parsed back.
func pageData(t testing.TB, page []byte) (out struct{ Charts []jsonChart }) {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="blis-report-data">(.*?)</script>`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no data element in the page")
	}
	if err := json.Unmarshal(m[1], &out); err != nil {
		t.Fatalf("page data is not JSON: %v", err)
	}
	return out
}

func TestHTMLHostileText(t *testing.T) {
	tests := []struct{ name, s string }{
		{"script close", "</script><script>alert(1)</script>"},
		{"comment", "<!-- </SCRIPT "},
		{"quotes", `a"b'c` + "`d"},
		{"ampersand entity", "&lt;not a tag&gt;"},
		{"unicode", "Ü ø 漢字 🙂 \u2028 line sep"},
		{"invalid utf8", "bad\xff\xfebytes"},
		{"control characters", "a\x00b\x1cc\x7fd\uFFFEe\tf"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Document{Title: tc.s, Subtitle: tc.s, Sections: []Section{{
				Heading: tc.s, Text: tc.s,
				Charts: []Chart{{ID: tc.s, Title: tc.s, XLabel: tc.s, YLabel: tc.s, Series: []Series{{
					Name: tc.s, Points: []Point{{X: 1, Y: 2, Label: tc.s, Info: []KV{{tc.s, tc.s}}}},
				}}, Common: []KV{{tc.s, tc.s}}}},
				Table: &Table{Columns: []string{tc.s}, Rows: [][]string{{tc.s}}},
			}}}
			page := writeHTML(t, d)
			checkPage(t, page)
			got := pageData(t, page)
			want := clean(tc.s)
			pt := got.Charts[0].Series[0].Points[0]
			if got.Charts[0].Title != want || pt.Label != want || pt.Info[0] != [2]string{want, want} || got.Charts[0].Common[0] != [2]string{want, want} {
				t.Errorf("text did not survive the page's JSON: %+v", got.Charts[0])
			}
			checkSVG(t, writeSVG(t, &d.Sections[0].Charts[0]))
		})
	}
}

// checkPage: the page's only script elements are the data and the
// script, it asks for nothing outside itself, and it is valid UTF-8.
func checkPage(t testing.TB, page []byte) {
	t.Helper()
	lower := bytes.ToLower(page)
	if n := bytes.Count(lower, []byte("<script")); n != 2 {
		t.Errorf("page has %d <script openings, want 2", n)
	}
	if n := bytes.Count(lower, []byte("</script")); n != 2 {
		t.Errorf("page has %d </script closings, want 2", n)
	}
	for _, ext := range []string{"http://", "https://", "src=", "<link", "@import", "url(http"} {
		for _, m := range regexp.MustCompile(regexp.QuoteMeta(ext)).FindAllIndex(lower, -1) {
			ctx := string(lower[max(0, m[0]-20):min(len(lower), m[1]+30)])
			if !strings.Contains(ctx, "www.w3.org/2000/svg") {
				t.Errorf("page refers outside itself: …%s…", ctx)
			}
		}
	}
	if !bytes.Equal([]byte(strings.ToValidUTF8(string(page), "")), page) {
		t.Error("page is not valid UTF-8")
	}
}

// checkSVG: the SVG is well-formed XML.
func checkSVG(t testing.TB, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
	}
}

func TestHTMLSkipsUndrawable(t *testing.T) {
	d := sampleDoc()
	page := writeHTML(t, d)
	got := pageData(t, page)
	if n := len(got.Charts[1].Series[0].Points); n != 3 {
		t.Errorf("drawable probe points in the page data = %d, want 3 (NaN and Inf left out)", n)
	}
	for _, want := range []string{"<td>NaN</td>", "not drawn: y is NaN", "not drawn: x is +Inf"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("table lacks %q", want)
		}
	}
	// Every point, drawn or not, has a table row.
	if n := countRows(page, "data"); n != 7+7+4+5 {
		t.Errorf("data table rows = %d, want 23", n)
	}
}

// countRows counts the body rows of the tables of the given class.
func countRows(page []byte, class string) int {
	n := 0
	for _, m := range regexp.MustCompile(`(?s)<table class="`+class+` sortable">(.*?)</table>`).FindAllSubmatch(page, -1) {
		n += bytes.Count(m[1], []byte("<tr>")) - 1
	}
	return n
}

func TestChartIDs(t *testing.T) {
	d := &Document{Sections: []Section{
		{Charts: []Chart{{ID: "a b"}, {ID: "a-b"}, {}, {ID: "9lives"}}},
		{Charts: []Chart{{ID: "</x>"}, {ID: "chart-2-3"}, {}}},
	}}
	want := [][]string{{"a-b", "a-b-2", "chart-1-3", "c-9lives"}, {"x", "chart-2-3", "chart-2-3-2"}}
	got := chartIDs(d)
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Errorf("chart %d.%d id = %q, want %q", i, j, got[i][j], want[i][j])
			}
		}
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		log    bool
		want   string
	}{
		{"linear", 0, 100, false, "0 20 40 60 80 100"},
		{"linear small", 0.12, 0.31, false, "0.15 0.2 0.25 0.3"},
		{"log decades", 1, 1e5, true, "1 10 100 1000 10000 100000"},
		{"log narrow", 3, 60, true, "5 10 20 50"},
		{"log within a step", 3.1, 3.9, true, "3.1 3.9"},
		{"huge", 0, 5e6, false, "0 1.0e6 2.0e6 3.0e6 4.0e6 5.0e6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := linTicks(tc.lo, tc.hi)
			if tc.log {
				ts = logTicks(tc.lo, tc.hi)
			}
			var s []string
			for _, v := range ts {
				s = append(s, tickText(v))
			}
			if got := strings.Join(s, " "); got != tc.want {
				t.Errorf("ticks = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPNG(t *testing.T) {
	d := sampleDoc()
	for _, c := range []*Chart{&d.Sections[0].Charts[0], &d.Sections[1].Charts[0], {Title: "empty"}} {
		var a, b bytes.Buffer
		if err := PNG(&a, c); err != nil {
			t.Fatal(err)
		}
		if err := PNG(&b, c); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two PNG renders differ", c.Title)
		}
		img, err := png.Decode(&a)
		if err != nil {
			t.Fatalf("%s: %v", c.Title, err)
		}
		if s := img.Bounds().Size(); s.X != 900 || s.Y != 420 {
			t.Errorf("%s: PNG is %v, want 900×420", c.Title, s)
		}
		// The first series' colour is drawn wherever it has points.
		want := hexColor(Palette[0])
		found := false
		for y := 0; y < 420 && !found; y++ {
			for x := 0; x < 900; x++ {
				r, g, bb, _ := img.At(x, y).RGBA()
				if uint8(r>>8) == want.R && uint8(g>>8) == want.G && uint8(bb>>8) == want.B {
					found = true
					break
				}
			}
		}
		if found != (len(c.Series) > 0) {
			t.Errorf("%s: first series colour drawn = %v", c.Title, found)
		}
	}
}

func TestSeriesColor(t *testing.T) {
	tests := []struct {
		color string
		i     int
		want  string
	}{
		{"", 0, Palette[0]},
		{"", 9, Palette[1]},
		{"#a1B2c3", 3, "#a1B2c3"},
		{"#a1b2c", 2, Palette[2]},
		{"#a1b2cg", 2, Palette[2]},
		{`red"/><script>`, 4, Palette[4]},
	}
	for _, tc := range tests {
		s := Series{Color: tc.color}
		if got := s.color(tc.i); got != tc.want {
			t.Errorf("color %q at %d = %q, want %q", tc.color, tc.i, got, tc.want)
		}
	}
}

func TestNum(t *testing.T) {
	tests := []struct {
		f    float64
		want string
	}{
		{0, "0"}, {1, "1"}, {-2.5, "-2.5"}, {106.66666666666667, "106.667"}, {1234567, "1234570"},
		{0.000123456789, "0.000123457"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"}, {1e-7, "1e-07"},
		{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"},
	}
	for _, tc := range tests {
		if got := num(tc.f); got != tc.want {
			t.Errorf("num(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// Long series names are cut in the middle in the SVG legend: series named
// by their settings differ at either end.
func TestLegendOfManySeries(t *testing.T) {
	c := &Chart{ID: "many", Title: "many"}
	for i := range 30 {
		c.Series = append(c.Series, Series{
			Name:   fmt.Sprintf("tensor-parallel-size=4 max-num-seqs=64 max-num-batched-tokens=%d", 1000+i),
			Points: []Point{{X: float64(i + 1), Y: float64(i + 1)}},
		})
	}
	var svg bytes.Buffer
	if err := SVG(&svg, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">tensor-paral…d-tokens=1000<", ">tensor-paral…d-tokens=1001<", "more</text>"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("SVG legend lacks %q", want)
		}
	}
	if err := PNG(io.Discard, c); err != nil {
		t.Fatal(err)
	}
}
