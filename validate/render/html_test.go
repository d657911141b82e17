package render

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/report"
	"blis/validate/page"
	"blis/validate/score"
)

func TestHTMLDocument(t *testing.T) {
	pg := handPage()
	doc := Document(pg)
	// Sources, then per arm: metrics, paired requests (files only),
	// provenance, every level.
	var heads []string
	for _, s := range doc.Sections {
		heads = append(heads, s.Heading)
	}
	want := []string{"Sources", "Arm with records: PARTIAL", "Arm with records: paired requests", "Arm with records: provenance", "Arm with records: every level",
		"Aggregates: EXACT", "Aggregates: provenance", "Aggregates: every level"}
	if strings.Join(heads, "|") != strings.Join(want, "|") {
		t.Fatalf("sections %q, want %q", heads, want)
	}
	tests := []struct {
		name          string
		sec           int
		charts        int
		series        []string
		points        int
		logX, logY    bool
		tableRows     int
		infoHasString string
	}{
		{"files metrics", 1, 3, []string{"measured", "BLIS"}, 2, true, false, 3, "max-num-seqs"},
		{"files ITL bins", 2, 1, []string{"ITL median error"}, 2, false, false, 2, "pairs"},
		{"agg metrics", 5, 1, []string{"TP2 1024/1024: measured", "TP2 1024/1024: BLIS", "TP4 1024/1024: measured", "TP4 1024/1024: BLIS"}, -1, true, false, 1, "chip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := doc.Sections[tc.sec]
			if len(s.Charts) != tc.charts {
				t.Fatalf("%d charts, want %d", len(s.Charts), tc.charts)
			}
			c := s.Charts[0]
			var names []string
			for _, sr := range c.Series {
				names = append(names, sr.Name)
				if tc.points >= 0 && len(sr.Points) != tc.points {
					t.Errorf("series %q has %d points, want %d", sr.Name, len(sr.Points), tc.points)
				}
			}
			if strings.Join(names, "|") != strings.Join(tc.series, "|") {
				t.Errorf("series %q, want %q", names, tc.series)
			}
			if c.LogX != tc.logX || c.LogY != tc.logY {
				t.Errorf("log x %v y %v, want %v %v", c.LogX, c.LogY, tc.logX, tc.logY)
			}
			if s.Table == nil || len(s.Table.Rows) != tc.tableRows {
				t.Errorf("table %+v, want %d rows", s.Table, tc.tableRows)
			}
			found := false
			for _, kv := range append(c.Series[0].Points[0].Info, c.Common...) {
				found = found || strings.Contains(kv.Key, tc.infoHasString)
			}
			if !found {
				t.Errorf("hover info %+v lacks %q", c.Series[0].Points[0].Info, tc.infoHasString)
			}
		})
	}
	// The levels table holds every compared value the Markdown's does.
	if n := len(doc.Sections[4].Table.Rows); n != 6 {
		t.Errorf("files levels table has %d rows, want 6 (2 levels × 3 metrics)", n)
	}
}

// TestHTMLGolden pins the hand page's HTML bytes (go test -update
// rewrites testdata/golden/hand.html) and that two writes agree.
func TestHTMLGolden(t *testing.T) {
	pg := handPage()
	var a, b bytes.Buffer
	if err := HTML(&a, pg); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&b, pg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two writes of the page differ")
	}
	path := filepath.Join("testdata", "golden", "hand.html")
	if *update {
		if err := os.WriteFile(path, a.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(a.Bytes(), want) {
		t.Errorf("HTML differs from %s (go test -update rewrites it; review the diff)", path)
	}
}

// A page whose levels include inf is drawn by rank, never dropped.
func TestHTMLInfiniteLevel(t *testing.T) {
	pg := handPage()
	a := pg.Arms[0]
	a.Levels[1].Level = score.Num(math.Inf(1))
	a.Population = page.Population(a.Levels)
	c := Document(pg).Sections[1].Charts[0]
	if c.LogX || !strings.HasSuffix(c.XLabel, "(rank)") {
		t.Errorf("x axis %q log %v, want by rank", c.XLabel, c.LogX)
	}
	for _, p := range c.Series[0].Points {
		if p.X != 0 && p.X != 1 {
			t.Errorf("point at x %v, want rank 0 or 1", p.X)
		}
	}
	var b bytes.Buffer
	if err := report.HTML(&b, Document(pg)); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b.Bytes(), []byte("not drawn")) {
		t.Error("a point of the inf level was not drawn")
	}
}
