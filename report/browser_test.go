package report

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser test loads a written page in Debian's Chromium, headless,
// driven over the DevTools protocol by chromedp, and checks what a reader
// sees: every chart drawn with one line and marker group per series and
// one marker per drawable point, the tooltip of a hovered marker, a legend
// click hiding its series, the log toggle changing the ticks, a header
// click sorting the table, and one table row per point.

const chromiumPath = "/usr/bin/chromium"

// browser starts a fresh headless Chromium (its own profile in a temp
// dir; no network: the background-networking flags keep it from dialling
// out, which this sandbox refuses) and returns a tab's context. It skips
// the test when Chromium is not installed, unless BLIS_BROWSER_TESTS=1.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("BLIS_BROWSER_TESTS") == "1" {
			t.Fatalf("BLIS_BROWSER_TESTS=1 but %s is missing (apt-get install -y --no-install-recommends chromium)", chromiumPath)
		}
		t.Skipf("%s not installed; set BLIS_BROWSER_TESTS=1 to make this a failure", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "profile")),
		chromedp.WindowSize(1200, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	// The first Run starts the browser and must not carry a deadline
	// (chromedp ties the browser's life to it); a watchdog bounds the test.
	watchdog := time.AfterFunc(2*time.Minute, cancelC)
	t.Cleanup(func() { watchdog.Stop(); cancelC(); cancelA() })
	return ctx
}

// chartView is what the page shows for one chart.
type chartView struct {
	ID     string
	Series []struct {
		Name    string
		Markers int
		Lines   int
		Hidden  bool
	}
	XTicks, YTicks []string
	XLabel         string
	Rows           int
}

const viewJS = `Array.from(document.querySelectorAll(".chart-body")).map(b => ({
  ID: b.dataset.chart,
  Series: Array.from(b.querySelectorAll("g.series")).map(g => ({
    Name: g.dataset.name, Markers: g.querySelectorAll("circle.marker").length,
    Lines: g.querySelectorAll("path.line").length, Hidden: getComputedStyle(g).display === "none"})),
  XTicks: Array.from(b.querySelectorAll("text.xtick")).map(t => t.textContent),
  YTicks: Array.from(b.querySelectorAll("text.ytick")).map(t => t.textContent),
  XLabel: b.querySelector("text.xlabel").textContent,
  Rows: b.closest("figure").querySelectorAll("table.data tbody tr").length,
}))`

func views(t *testing.T, ctx context.Context) map[string]chartView {
	t.Helper()
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartView](viewJS))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]chartView{}
	for _, v := range vs {
		out[v.ID] = v
	}
	return out
}

// wantTicks: the ticks the Go writers draw for c's visible series at the
// given scales; the page's script must agree.
func wantTicks(c *Chart, logX, logY bool, hidden map[int]bool) (xt, yt []string) {
	var xs, ys []float64
	for i, s := range c.Series {
		for _, p := range s.Points {
			if !hidden[i] && drawable(p, logX, logY) {
				xs, ys = append(xs, p.X), append(ys, p.Y)
			}
		}
	}
	text := func(log bool, vs []float64) []string {
		lo, hi := span(vs, log)
		ts := linTicks(lo, hi)
		if log {
			ts = logTicks(lo, hi)
		}
		var out []string
		for _, t := range ts {
			out = append(out, tickText(t))
		}
		return out
	}
	return text(logX, xs), text(logY, ys)
}

func TestBrowser(t *testing.T) {
	start := time.Now()
	ctx := browser(t)
	doc := sampleDoc()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, writeHTML(t, doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate("file://"+path),
		chromedp.WaitReady(chromedp.CSS(`html[data-report="ready"]`)),
	); err != nil {
		t.Fatalf("page did not finish drawing: %v", err)
	}
	// Errors thrown later, in event handlers, are collected and checked last.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__errs = []; window.addEventListener("error", e => __errs.push(String(e.message))); true`)); err != nil {
		t.Fatal(err)
	}
	ids := chartIDs(doc)

	t.Run("charts drawn", func(t *testing.T) {
		vs := views(t, ctx)
		for si, s := range doc.Sections {
			for ci := range s.Charts {
				c := &s.Charts[ci]
				v, ok := vs[ids[si][ci]]
				if !ok {
					t.Errorf("chart %s not drawn", ids[si][ci])
					continue
				}
				if len(v.Series) != len(c.Series) {
					t.Fatalf("chart %s: %d series groups, want %d", v.ID, len(v.Series), len(c.Series))
				}
				total := 0
				for i, sr := range c.Series {
					n := 0
					for _, p := range sr.Points {
						if drawable(p, c.LogX, c.LogY) {
							n++
						}
					}
					total += len(sr.Points)
					lines := 1
					if sr.Style == Scatter || n < 2 {
						lines = 0
					}
					if got := v.Series[i]; got.Name != sr.Name || got.Markers != n || got.Lines != lines || got.Hidden {
						t.Errorf("chart %s series %d = %+v, want name %q, %d markers, %d lines, shown", v.ID, i, got, sr.Name, n, lines)
					}
				}
				if v.Rows != total {
					t.Errorf("chart %s: table has %d rows, want one per point (%d)", v.ID, v.Rows, total)
				}
				xt, yt := wantTicks(c, c.LogX, c.LogY, nil)
				if !slices.Equal(v.XTicks, xt) || !slices.Equal(v.YTicks, yt) {
					t.Errorf("chart %s ticks x %q y %q; the Go writers draw x %q y %q", v.ID, v.XTicks, v.YTicks, xt, yt)
				}
			}
		}
	})

	t.Run("hover shows the point's info", func(t *testing.T) {
		sel := `.chart-body[data-chart="pareto"] g.series[data-series="1"] circle.marker:nth-of-type(4)`
		pos, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(`(() => {
			const m = document.querySelector(%q); m.scrollIntoView({block: "center"});
			const r = m.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.MouseEvent("mouseMoved", pos[0], pos[1])); err != nil {
			t.Fatal(err)
		}
		tip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const t = document.querySelector('.chart-body[data-chart="pareto"] .tooltip'); return t.hidden ? "(hidden)" : t.innerText; })()`))
		if err != nil {
			t.Fatal(err)
		}
		p := doc.Sections[0].Charts[0].Series[1].Points[3]
		want := []string{"H200 TP2 — " + p.Label, "tokens/s per GPU"}
		for _, kv := range append(p.Info, doc.Sections[0].Charts[0].Common...) {
			want = append(want, kv.Key+"\t"+kv.Value)
		}
		for _, w := range want {
			if !strings.Contains(tip, w) {
				t.Errorf("tooltip %q lacks %q", tip, w)
			}
		}
		if err := chromedp.Do(ctx, chromedp.MouseEvent("mouseMoved", 5, 5)); err != nil {
			t.Fatal(err)
		}
		hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('.chart-body[data-chart="pareto"] .tooltip').hidden`))
		if err != nil || !hidden {
			t.Errorf("tooltip still shown after the mouse left the marker (err %v)", err)
		}
	})

	t.Run("legend toggles a series", func(t *testing.T) {
		btn := chromedp.CSS(`.chart-body[data-chart="pareto"] .legend button[data-series="0"]`)
		if err := chromedp.Do(ctx, chromedp.Click(btn)); err != nil {
			t.Fatal(err)
		}
		v := views(t, ctx)["pareto"]
		if !v.Series[0].Hidden || v.Series[1].Hidden || v.Series[2].Hidden {
			t.Errorf("after a click on the first legend entry: %+v, want only series 0 hidden", v.Series)
		}
		_, yt := wantTicks(&doc.Sections[0].Charts[0], false, false, map[int]bool{0: true})
		if !slices.Equal(v.YTicks, yt) {
			t.Errorf("y ticks with series 0 hidden = %q, want %q (refitted to the visible series)", v.YTicks, yt)
		}
		if err := chromedp.Do(ctx, chromedp.Click(btn)); err != nil {
			t.Fatal(err)
		}
		if v := views(t, ctx)["pareto"]; v.Series[0].Hidden {
			t.Error("a second click did not show the series again")
		}
	})

	t.Run("log toggle", func(t *testing.T) {
		c := &doc.Sections[0].Charts[0]
		before := views(t, ctx)["pareto"]
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.chart-body[data-chart="pareto"] input.logx`))); err != nil {
			t.Fatal(err)
		}
		after := views(t, ctx)["pareto"]
		xt, _ := wantTicks(c, true, false, nil)
		if slices.Equal(after.XTicks, before.XTicks) || !slices.Equal(after.XTicks, xt) {
			t.Errorf("x ticks after log toggle = %q (before %q), want %q", after.XTicks, before.XTicks, xt)
		}
		if !strings.HasSuffix(after.XLabel, "(log)") {
			t.Errorf("x label after log toggle = %q, want it to say log", after.XLabel)
		}
		// The log chart's toggle goes back to linear.
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.chart-body[data-chart="chart-2-1"] input.logy`))); err != nil {
			t.Fatal(err)
		}
		v := views(t, ctx)["chart-2-1"]
		_, yt := wantTicks(&doc.Sections[1].Charts[0], true, false, nil)
		if !slices.Equal(v.YTicks, yt) {
			t.Errorf("y ticks after toggling log off = %q, want %q", v.YTicks, yt)
		}
	})

	t.Run("table sorts", func(t *testing.T) {
		// The 'p90 TTFT (ms)' column (8th) of the pareto table, clicked once: ascending, numerically.
		th := chromedp.CSS(`#pareto table.data thead th:nth-child(8)`)
		if err := chromedp.Do(ctx, chromedp.Click(th)); err != nil {
			t.Fatal(err)
		}
		col, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#pareto table.data tbody tr")).map(r => r.cells[7].textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(col) != 18 || col[0] != "" || col[len(col)-1] != "232" || col[len(col)-2] != "232" || col[4] != "43" {
			t.Errorf("sorted column = %q, want the 4 empty cells first, then 43 … 232", col)
		}
	})

	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`__errs`))
	if err != nil || len(errs) > 0 {
		t.Errorf("page script errors: %q (%v)", errs, err)
	}

	t.Run("sweep-sized page", func(t *testing.T) {
		big := sweepDoc(2000)
		path := filepath.Join(t.TempDir(), "sweep.html")
		if err := os.WriteFile(path, writeHTML(t, big), 0o644); err != nil {
			t.Fatal(err)
		}
		load := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path), chromedp.WaitReady(chromedp.CSS(`html[data-report="ready"]`))); err != nil {
			t.Fatal(err)
		}
		took := time.Since(load)
		script, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.measure("draw", "blis-report-start", "blis-report-drawn").duration`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("2,000-point page loaded and drawn in %.2f s (its script: %.0f ms)", took.Seconds(), script)
		v := views(t, ctx)["sweep"]
		markers := 0
		for _, s := range v.Series {
			markers += s.Markers
		}
		if markers != 2000 || v.Rows != 2000 {
			t.Errorf("sweep page: %d markers and %d table rows, want 2000 of each", markers, v.Rows)
		}
	})
	t.Logf("browser test took %.1f s", time.Since(start).Seconds())
}
