// Package browsertest loads report pages (package report) in Debian's
// Chromium, headless and driven by chromedp, for the tests of every
// package that writes one.
package browsertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's chromium package's browser; browsers that
// download their own build cannot be fetched where these tests run.
const ChromiumPath = "/usr/bin/chromium"

// Start starts a fresh headless Chromium (its own profile in a temp dir;
// the background-networking flags keep it from dialling out, which a
// closed network refuses) and returns a tab's context, closed when the
// test ends. It skips the test when Chromium is not installed, unless
// BLIS_BROWSER_TESTS=1 (then it fails).
func Start(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		if os.Getenv("BLIS_BROWSER_TESTS") == "1" {
			t.Fatalf("BLIS_BROWSER_TESTS=1 but %s is missing (apt-get install -y --no-install-recommends chromium)", ChromiumPath)
		}
		t.Skipf("%s not installed; set BLIS_BROWSER_TESTS=1 to make this a failure", ChromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
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

// Load writes page to a temp file, opens it over file:// and waits until
// its script has drawn every chart; script errors thrown afterwards (in
// event handlers) are collected in window.__errs for Errors.
func Load(t testing.TB, ctx context.Context, page []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, page, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate("file://"+path),
		chromedp.WaitReady(chromedp.CSS(`html[data-report="ready"]`)),
	); err != nil {
		t.Fatalf("page did not finish drawing: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__errs = []; window.addEventListener("error", e => __errs.push(String(e.message))); true`)); err != nil {
		t.Fatal(err)
	}
}

// Errors are the script errors thrown since Load.
func Errors(t testing.TB, ctx context.Context) []string {
	t.Helper()
	errs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`__errs`))
	if err != nil {
		t.Fatal(err)
	}
	return errs
}

// Chart is what the page shows for one chart.
type Chart struct {
	ID     string
	Series []struct {
		Name    string
		Markers int
		Lines   int
		Hidden  bool
	}
	XTicks, YTicks []string
	XLabel         string
	Rows           int // the chart's data table
}

const chartsJS = `Array.from(document.querySelectorAll(".chart-body")).map(b => ({
  ID: b.dataset.chart,
  Series: Array.from(b.querySelectorAll("g.series")).map(g => ({
    Name: g.dataset.name, Markers: g.querySelectorAll("circle.marker").length,
    Lines: g.querySelectorAll("path.line").length, Hidden: getComputedStyle(g).display === "none"})),
  XTicks: Array.from(b.querySelectorAll("text.xtick")).map(t => t.textContent),
  YTicks: Array.from(b.querySelectorAll("text.ytick")).map(t => t.textContent),
  XLabel: b.querySelector("text.xlabel").textContent,
  Rows: b.closest("figure").querySelectorAll("table.data tbody tr").length,
}))`

// Charts reads every chart of the loaded page, by id.
func Charts(t testing.TB, ctx context.Context) map[string]Chart {
	t.Helper()
	cs, err := chromedp.Run(ctx, chromedp.Evaluate[[]Chart](chartsJS))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Chart{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

// Hover moves the mouse onto the element sel selects (scrolled into view)
// and returns the innerText of the tooltip of its chart, or "(hidden)".
func Hover(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const m = document.querySelector(`+jsString(sel)+`); m.scrollIntoView({block: "center"});
		const r = m.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2]; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.MouseEvent("mouseMoved", pos[0], pos[1])); err != nil {
		t.Fatal(err)
	}
	tip, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const t = document.querySelector(`+jsString(sel)+`).closest(".chart-body").querySelector(".tooltip");
		return t.hidden ? "(hidden)" : t.innerText; })()`))
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
