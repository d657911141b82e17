package render

import (
	"bytes"
	"strings"
	"testing"

	"blis/report/browsertest"
)

// TestHTMLInBrowser loads the hand page's HTML in headless Chromium: every
// chart is drawn with one marker per point, each chart's table has a row
// per point, and a hover shows the level's values and the arm's settings.
func TestHTMLInBrowser(t *testing.T) {
	ctx := browsertest.Start(t)
	pg := handPage()
	var b bytes.Buffer
	if err := HTML(&b, pg); err != nil {
		t.Fatal(err)
	}
	browsertest.Load(t, ctx, b.Bytes())
	shown := browsertest.Charts(t, ctx)
	doc := Document(pg)
	n := 0
	for _, s := range doc.Sections {
		for _, c := range s.Charts {
			n++
			v, ok := shown[c.ID]
			if !ok {
				t.Errorf("chart %s not drawn", c.ID)
				continue
			}
			points := 0
			for i, sr := range c.Series {
				points += len(sr.Points)
				if i >= len(v.Series) || v.Series[i].Markers != len(sr.Points) {
					t.Errorf("chart %s series %q: drawn %+v, want %d markers", c.ID, sr.Name, v.Series, len(sr.Points))
				}
			}
			if v.Rows != points {
				t.Errorf("chart %s: %d table rows, want %d", c.ID, v.Rows, points)
			}
		}
	}
	if len(shown) != n {
		t.Errorf("%d charts drawn, want %d", len(shown), n)
	}
	tip := browsertest.Hover(t, ctx, `.chart-body[data-chart="files-ttft_mean_ms"] g.series[data-series="1"] circle.marker:nth-of-type(2)`)
	for _, want := range []string{"BLIS — max-concurrency 8", "measured\t40.00", "BLIS\t30.00", "signed error\t-25.0%", "max-num-seqs\t32 (measured 64: MISMATCH (removable))", "source\truns/c8"} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}
	if errs := browsertest.Errors(t, ctx); len(errs) > 0 {
		t.Errorf("page script errors: %q", errs)
	}
}
