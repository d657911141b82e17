package main

import (
	"bytes"
	"strings"
	"testing"

	"blis/report"
	"blis/report/browsertest"
)

// TestParetoHTMLInBrowser loads plan pareto's page in headless Chromium:
// one series per configuration and the frontier, a marker per point, and
// a hover on a frontier point names its configuration and load.
func TestParetoHTMLInBrowser(t *testing.T) {
	ctx := browsertest.Start(t)
	out := paretoResult{Grid: "g.yaml", Name: "g", Y: "total", Points: []paretoPoint{
		{Config: "tensor-parallel-size=1", Load: "max-concurrency=1", Status: statusOK, GPUs: 1, MedianTPOTMs: 10, Interactivity: 100, TputPerGPU: 500, ID: "a"},
		{Config: "tensor-parallel-size=1", Load: "max-concurrency=8", Status: statusOK, GPUs: 1, MedianTPOTMs: 20, Interactivity: 50, TputPerGPU: 2000, ID: "b"},
		{Config: "tensor-parallel-size=2", Load: "max-concurrency=1", Status: statusOK, GPUs: 2, MedianTPOTMs: 8, Interactivity: 125, TputPerGPU: 300, ID: "c"},
		{Config: "tensor-parallel-size=2", Load: "max-concurrency=8", Status: statusOK, GPUs: 2, MedianTPOTMs: 12, Interactivity: 83.3, TputPerGPU: 1200, ID: "d"},
		{Config: "tensor-parallel-size=3", Load: "max-concurrency=1", Status: "infeasible", Reason: "3 does not divide 28 heads", ID: "e"},
	}}
	markFrontier(out.Points, out.Y)
	c := paretoChart(out)
	var b bytes.Buffer
	if err := report.HTML(&b, paretoDocument(out, c)); err != nil {
		t.Fatal(err)
	}
	browsertest.Load(t, ctx, b.Bytes())
	v, ok := browsertest.Charts(t, ctx)["pareto"]
	if !ok || len(v.Series) != 3 {
		t.Fatalf("chart: %+v", v)
	}
	points := 0
	for i, sr := range c.Series {
		points += len(sr.Points)
		if v.Series[i].Markers != len(sr.Points) {
			t.Errorf("series %q: drawn %+v, want %d markers", sr.Name, v.Series[i], len(sr.Points))
		}
	}
	if v.Rows != points {
		t.Errorf("%d table rows, want %d", v.Rows, points)
	}
	tip := browsertest.Hover(t, ctx, `.chart-body[data-chart="pareto"] g.series[data-series="2"] circle.marker:nth-of-type(1)`)
	for _, want := range []string{"config", "load", "max-concurrency="} {
		if !strings.Contains(tip, want) {
			t.Errorf("tooltip %q lacks %q", tip, want)
		}
	}
	if errs := browsertest.Errors(t, ctx); len(errs) > 0 {
		t.Errorf("page script errors: %q", errs)
	}
}
