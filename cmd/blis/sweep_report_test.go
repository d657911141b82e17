package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"blis/report"
	"blis/report/browsertest"
	"blis/sweep/store"
	"blis/sweep/sweepreport"
)

// A tiny sweep: three TP sizes (3 does not divide the 8B model's 32 heads:
// infeasible) at two concurrencies, 20 prompts a point.
const reportGrid = `name: tiny
base: {model: llama-3.1-8b, hardware: h100, num-prompts: 20, random-input-len: 128, random-output-len: 32}
axes:
  tensor-parallel-size: [1, 2, 3]
load:
  max-concurrency: [1, 16]
`

// tinySweep runs reportGrid into dir/name and returns the store's path.
func tinySweep(t *testing.T, dir, name string, extra ...string) string {
	t.Helper()
	g := filepath.Join(dir, "grid.yaml")
	if _, err := os.Stat(g); err != nil {
		writeGrid(t, dir, reportGrid)
	}
	out := filepath.Join(dir, name)
	_, errs, code := sweepCLI(t, append([]string{"sweep", g, "--out", out}, extra...)...)
	if code != 0 {
		t.Fatalf("blis sweep: exit %d\n%s", code, errs)
	}
	if len(extra) == 0 && !strings.Contains(errs, "report: "+filepath.Join(out, reportName)) {
		t.Errorf("blis sweep's last line does not name the report:\n%s", errs)
	}
	return out
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The report blis sweep writes: a series per configuration, every point
// in the table (the infeasible ones with their reason), the same bytes
// from blis sweep report, from a second sweep and from merged shards.
func TestSweepReport(t *testing.T) {
	dir := t.TempDir()
	st := tinySweep(t, dir, "st")
	page := readFile(t, filepath.Join(st, reportName))

	doc, err := sweepreport.Load(st)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.HTML(&b, doc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), page) {
		t.Error("report.html is not the store's report")
	}
	configs := []string{"tensor-parallel-size=1", "tensor-parallel-size=2"}
	var ids []string
	for _, s := range doc.Sections {
		for _, c := range s.Charts {
			ids = append(ids, c.ID)
			var names []string
			for _, sr := range c.Series {
				names = append(names, sr.Name)
			}
			var want []string
			switch c.ID {
			case "pareto":
				want = append(slices.Clone(configs), "Pareto frontier")
			case "ttft":
				want = []string{configs[0] + " — p90", configs[0] + " — mean", configs[1] + " — p90", configs[1] + " — mean"}
			case "tpot":
				want = []string{configs[0] + " — p99", configs[0] + " — mean", configs[1] + " — p99", configs[1] + " — mean"}
			default:
				want = configs
			}
			if !slices.Equal(names, want) {
				t.Errorf("chart %s: series %q, want %q", c.ID, names, want)
			}
			if c.ID != "pareto" && (!c.LogX || c.XLabel != "max-concurrency") {
				t.Errorf("chart %s: x %q log %v, want max-concurrency on a log axis (1 to 16)", c.ID, c.XLabel, c.LogX)
			}
		}
	}
	if want := []string{"pareto", "ttft", "tpot", "throughput", "e2el"}; !slices.Equal(ids, want) {
		t.Errorf("charts %q, want %q", ids, want)
	}
	tbl := doc.Sections[2].Table
	if tbl == nil || len(tbl.Rows) != 6 {
		t.Fatalf("points table: %+v", tbl)
	}
	for _, r := range tbl.Rows {
		infeasible := r[4] == "3"
		if infeasible != (r[2] == store.StatusInfeasible) || infeasible != strings.Contains(r[3], "does not divide") {
			t.Errorf("row %q", r)
		}
	}
	if !bytes.Contains(page, []byte("6 of the grid&#39;s 6 points stored: 4 ok, 2 infeasible, 0 unserved.")) {
		t.Error("no summary line")
	}

	// blis sweep report writes the same page, and a chart file per chart.
	other := filepath.Join(dir, "other.html")
	sweepMust(t, "sweep", "report", st, "--html", other, "--svg", filepath.Join(dir, "svg"), "--png", filepath.Join(dir, "png"), "-q")
	if !bytes.Equal(readFile(t, other), page) {
		t.Error("blis sweep report --html differs from the sweep's report.html")
	}
	for _, id := range ids {
		for _, f := range []string{filepath.Join(dir, "svg", id+".svg"), filepath.Join(dir, "png", id+".png")} {
			if len(readFile(t, f)) == 0 {
				t.Errorf("%s is empty", f)
			}
		}
	}

	// Deterministic: another sweep of the grid elsewhere, and two shards
	// merged, give the same bytes.
	if !bytes.Equal(readFile(t, filepath.Join(tinySweep(t, dir, "again"), reportName)), page) {
		t.Error("a second sweep's report differs")
	}
	s0 := tinySweep(t, dir, "s0", "--shard-count", "2", "--shard-index", "0", "-q")
	s1 := tinySweep(t, dir, "s1", "--shard-count", "2", "--shard-index", "1", "-q")
	if bytes.Equal(readFile(t, filepath.Join(s0, reportName)), page) {
		t.Error("a shard's report is the whole sweep's")
	}
	merged := filepath.Join(dir, "merged")
	_, errs, code := sweepCLI(t, "sweep", "merge", merged, s0, s1)
	if code != 0 || !strings.Contains(errs, "report: "+filepath.Join(merged, reportName)) {
		t.Fatalf("merge: exit %d\n%s", code, errs)
	}
	if !bytes.Equal(readFile(t, filepath.Join(merged, reportName)), page) {
		t.Error("the merged shards' report differs from the unsharded sweep's")
	}
}

// The page in headless Chromium: each chart draws one marker per point of
// each series, the points table has one row per point, and a hover names
// the point's scenario.
func TestSweepReportInBrowser(t *testing.T) {
	ctx := browsertest.Start(t)
	st := tinySweep(t, t.TempDir(), "st")
	doc, err := sweepreport.Load(st)
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Load(t, ctx, readFile(t, filepath.Join(st, reportName)))
	drawn := browsertest.Charts(t, ctx)
	for _, s := range doc.Sections {
		for _, c := range s.Charts {
			v, ok := drawn[c.ID]
			if !ok || len(v.Series) != len(c.Series) {
				t.Fatalf("chart %s: drawn %+v, want %d series", c.ID, v, len(c.Series))
			}
			points := 0
			for i, sr := range c.Series {
				points += len(sr.Points)
				if v.Series[i].Name != sr.Name || v.Series[i].Markers != len(sr.Points) || len(sr.Points) == 0 {
					t.Errorf("chart %s series %q: drawn %+v, want %d markers", c.ID, sr.Name, v.Series[i], len(sr.Points))
				}
			}
			if v.Rows != points {
				t.Errorf("chart %s: %d data rows, want %d", c.ID, v.Rows, points)
			}
		}
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("table.extra")[0].querySelectorAll("tbody tr").length`))
	if err != nil || rows != 6 {
		t.Errorf("points table: %d rows (err %v), want 6", rows, err)
	}
	// The second configuration's point at max-concurrency 16 on the TTFT
	// chart: its p90 series is the third.
	want := doc.Sections[1].Charts[0].Series[2].Points[1]
	tip := browsertest.Hover(t, ctx, `.chart-body[data-chart="ttft"] g.series[data-series="2"] circle.marker:nth-of-type(2)`)
	for _, w := range []string{want.Label, "tensor-parallel-size", "max-concurrency", "p90 TTFT ms", "llama-3.1-8b"} {
		if !strings.Contains(tip, w) {
			t.Errorf("tooltip %q lacks %q", tip, w)
		}
	}
	if errs := browsertest.Errors(t, ctx); len(errs) > 0 {
		t.Errorf("page script errors: %q", errs)
	}
}

// Bad input exits 2 with a line that names the directory.
func TestSweepReportBadInput(t *testing.T) {
	dir := t.TempDir()
	st := tinySweep(t, dir, "st", "-q")
	notStore := filepath.Join(dir, "plain")
	if err := os.MkdirAll(notStore, 0o755); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk")
	if err := os.MkdirAll(junk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(junk, store.DBName), []byte("not a database"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "report", filepath.Join(dir, "nope")}, "not a sweep store: no sweep.db"},
		{[]string{"sweep", "report", notStore}, "not a sweep store: no sweep.db"},
		{[]string{"sweep", "report", junk}, "not a sweep store"},
		{[]string{"sweep", "report"}, "report takes one store directory"},
		{[]string{"sweep", "report", st, "--html", dir}, dir + ": cannot write: rename"},
	} {
		_, errs, code := sweepCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// A report that cannot be written after every point is stored (here a
// directory holds report.html's name) fails the sweep and the merge with
// a line that says the points are stored and how to write the report; the
// store keeps every point.
func TestSweepReportWriteFails(t *testing.T) {
	dir := t.TempDir()
	writeGrid(t, dir, reportGrid)
	s0 := tinySweep(t, dir, "s0", "--shard-count", "2", "--shard-index", "0", "-q")
	s1 := tinySweep(t, dir, "s1", "--shard-count", "2", "--shard-index", "1", "-q")
	st, merged := filepath.Join(dir, "st"), filepath.Join(dir, "merged")
	for _, tc := range []struct {
		out  string
		args []string
	}{
		{st, []string{"sweep", filepath.Join(dir, "grid.yaml"), "--out", st, "-q"}},
		{merged, []string{"sweep", "merge", merged, s0, s1}},
	} {
		if err := os.MkdirAll(filepath.Join(tc.out, reportName, "in-the-way"), 0o755); err != nil {
			t.Fatal(err)
		}
		_, errs, code := sweepCLI(t, tc.args...)
		want := "the points are stored in " + tc.out + ", but its report was not written (blis sweep report " + tc.out + " writes it)"
		if code == 0 || !strings.Contains(errs, want) {
			t.Errorf("%q: exit %d, %q; want a failure saying %q", tc.args, code, errs, want)
		}
		if tbl, err := store.Load(tc.out); err != nil {
			t.Errorf("%s after the failed report: %v", tc.out, err)
		} else if len(tbl.Rows) != 6 {
			t.Errorf("%s after the failed report: %d points, want 6", tc.out, len(tbl.Rows))
		}
	}
}
