package main

import (
	"io"
	"path/filepath"
	"regexp"
	"testing"

	"blis/sweep/grid"
	"blis/sweep/store"
)

// TestSweepExamples parses and expands every grid in examples/sweeps/, and
// runs the first points of each (cut to a few requests) through runPoint.
func TestSweepExamples(t *testing.T) {
	files, err := filepath.Glob("../../examples/sweeps/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example grids: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			g, err := grid.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := g.CheckSize(grid.DefaultMaxPoints, false); err != nil {
				t.Fatal(err)
			}
			pts, err := g.Expand()
			if err != nil {
				t.Fatal(err)
			}
			if g.Name == "llama70b-h100" && len(pts) != 1000 {
				t.Errorf("the benchmark grid has %d points, not 1,000", len(pts))
			}
			for _, p := range pts[:min(3, len(pts))] {
				p.Scenario = numPrompts.ReplaceAll(p.Scenario, []byte("num-prompts: 4"))
				if _, err := runPoint(p); err != nil {
					t.Errorf("point %d: %v", p.Index, err)
				}
			}
		})
	}
}

// BenchmarkSweep1000 runs the 1,000-point example sweep (Llama-3.1-70B on
// H100, 2,000 requests a point) on one worker per CPU into a fresh store:
//
//	go test ./cmd/blis -run '^$' -bench BenchmarkSweep1000 -benchtime 1x
func BenchmarkSweep1000(b *testing.B) {
	for b.Loop() {
		dir := b.TempDir()
		code := run([]string{"sweep", "../../examples/sweeps/llama70b-h100.yaml", "--out", filepath.Join(dir, "s"), "-q"}, io.Discard, io.Discard)
		if code != 0 {
			b.Fatalf("exit %d", code)
		}
		t, err := store.Load(filepath.Join(dir, "s"))
		if err != nil || len(t.Rows) != 1000 {
			b.Fatalf("%v, %d points", err, len(t.Rows))
		}
	}
}

// numPrompts is a point scenario's num-prompts line.
var numPrompts = regexp.MustCompile(`(?m)^num-prompts: .*$`)
