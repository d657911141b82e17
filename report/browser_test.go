package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"blis/report/browsertest"
)

// The browser test loads a written page in Debian's Chromium, headless,
// driven over the DevTools protocol by chromedp, and checks what a reader
// sees: every chart drawn with one line and marker group per series and
// one marker per drawable point, the tooltip of a hovered marker, a legend
// click hiding its series, the log toggle changing the ticks, a header
// click sorting the table, and one table row per point.

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
	ctx := browsertest.Start(t)
	doc := sampleDoc()
	browsertest.Load(t, ctx, writeHTML(t, doc))
	ids := chartIDs(doc)

	t.Run("charts drawn", func(t *testing.T) {
		vs := browsertest.Charts(t, ctx)
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
		tip := browsertest.Hover(t, ctx, `.chart-body[data-chart="pareto"] g.series[data-series="1"] circle.marker:nth-of-type(4)`)
		p := doc.Sections[0].Charts[0].Series[1].Points[3]
		want := []string{"H200 TP2 — " + p.Label, "tokens/s per user\t" + num(p.X), "tokens/s per GPU\t" + num(p.Y)}
		for _, kv := range append(p.Info, doc.Sections[0].Charts[0].Common...) {
			want = append(want, kv.Key+"\t"+kv.Value)
		}
		for _, w := range want {
			if !strings.Contains(tip, w) {
				t.Errorf("tooltip %q lacks %q", tip, w)
			}
		}
		// The rightmost marker's tooltip opens leftwards, inside the chart.
		inside, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
			const m = document.querySelector('.chart-body[data-chart="pareto"] g.series[data-series="1"] circle.marker');
			const r = m.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`))
		if err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.MouseEvent("mouseMoved", inside[0], inside[1])); err != nil {
			t.Fatal(err)
		}
		edges, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
			const b = document.querySelector('.chart-body[data-chart="pareto"]'), t = b.querySelector(".tooltip");
			return [t.hidden ? 1 : 0, t.getBoundingClientRect().right, b.getBoundingClientRect().right]; })()`))
		if err != nil || edges[0] != 0 || edges[1] > edges[2] {
			t.Errorf("rightmost marker's tooltip: hidden %v, right edge %v beyond the chart's %v (err %v)", edges[0], edges[1], edges[2], err)
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
		v := browsertest.Charts(t, ctx)["pareto"]
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
		if v := browsertest.Charts(t, ctx)["pareto"]; v.Series[0].Hidden {
			t.Error("a second click did not show the series again")
		}
	})

	t.Run("log toggle", func(t *testing.T) {
		c := &doc.Sections[0].Charts[0]
		before := browsertest.Charts(t, ctx)["pareto"]
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.chart-body[data-chart="pareto"] input.logx`))); err != nil {
			t.Fatal(err)
		}
		after := browsertest.Charts(t, ctx)["pareto"]
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
		v := browsertest.Charts(t, ctx)["chart-2-1"]
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

	if errs := browsertest.Errors(t, ctx); len(errs) > 0 {
		t.Errorf("page script errors: %q", errs)
	}

	t.Run("sweep-sized page", func(t *testing.T) {
		page := writeHTML(t, sweepDoc(2000))
		load := time.Now()
		browsertest.Load(t, ctx, page)
		took := time.Since(load)
		script, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.measure("draw", "blis-report-start", "blis-report-drawn").duration`))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("2,000-point page loaded and drawn in %.2f s (its script: %.0f ms)", took.Seconds(), script)
		v := browsertest.Charts(t, ctx)["sweep"]
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
