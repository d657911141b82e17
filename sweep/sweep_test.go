package sweep

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"blis/sweep/grid"
	"blis/sweep/store"
)

func points(t *testing.T, n int) (*grid.Grid, []grid.Point) {
	t.Helper()
	vals := make([]string, n)
	for i := range vals {
		vals[i] = strconv.Itoa(i + 1)
	}
	g, err := grid.Parse("g.yaml", []byte("axes:\n  max-num-seqs: ["+strings.Join(vals, ", ")+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return g, pts
}

func fake(p grid.Point) (Outcome, error) {
	if p.Index%4 == 0 {
		return Outcome{Status: store.StatusInfeasible, Reason: "no"}, nil
	}
	return Outcome{Status: store.StatusOK, JSON: []byte("{}"), Metrics: make([]any, len(store.MetricColumns))}, nil
}

func TestRunShardResumeAndLog(t *testing.T) {
	g, pts := points(t, 40)
	dir := filepath.Join(t.TempDir(), "s")
	st, err := store.Open(dir, g, len(pts), store.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var log bytes.Buffer
	stats, err := Run(st, pts, fake, Options{Jobs: 3, Shard: store.Shard{Index: 1, Count: 2}, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 20 || stats.Ran != 20 || stats.Infeasible != 0 {
		t.Errorf("shard 1/2: %+v", stats) // odd indexes: none is a multiple of 4
	}
	// Plain lines, not one per point: at most one per 5 % and the last.
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) > 21 || !strings.Contains(lines[len(lines)-1], "20/20 points (100%)") {
		t.Errorf("log:\n%s", log.String())
	}
	var ran atomic.Int64
	count := func(p grid.Point) (Outcome, error) { ran.Add(1); return fake(p) }
	stats, err = Run(st, pts, count, Options{Jobs: 2, Quiet: true})
	if err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 20 || stats.Skipped != 20 || stats.Infeasible != 10 {
		t.Errorf("resume ran %d: %+v", ran.Load(), stats)
	}
}

func TestRunStopsOnError(t *testing.T) {
	g, pts := points(t, 30)
	st, err := store.Open(filepath.Join(t.TempDir(), "s"), g, len(pts), store.Shard{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	boom := errors.New("boom")
	var ran atomic.Int64
	_, err = Run(st, pts, func(p grid.Point) (Outcome, error) {
		ran.Add(1)
		if p.Index == 5 {
			return Outcome{}, boom
		}
		return fake(p)
	}, Options{Jobs: 2, Quiet: true})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "point 5 (max-num-seqs=6)") {
		t.Fatalf("got %v", err)
	}
	if ran.Load() >= 30 {
		t.Errorf("ran all %d points after the error", ran.Load())
	}
	done, _ := st.Done()
	if int64(len(done)) != ran.Load()-1 {
		t.Errorf("%d ran, %d stored: every finished point but the failed one is stored", ran.Load(), len(done))
	}
}

// After the first error no worker starts another point: with one worker,
// the failing point is the only one run. (The feeder's select may still
// hand a point over once the context is done, so this repeats.)
func TestRunTakesNoPointAfterError(t *testing.T) {
	g, pts := points(t, 40)
	for try := range 20 {
		st, err := store.Open(filepath.Join(t.TempDir(), "s"), g, len(pts), store.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		_, err = Run(st, pts, func(p grid.Point) (Outcome, error) {
			ran.Add(1)
			return Outcome{}, errors.New("boom")
		}, Options{Jobs: 1, Quiet: true})
		st.Close()
		if err == nil || ran.Load() != 1 {
			t.Fatalf("try %d: ran %d points after the first failed (%v)", try, ran.Load(), err)
		}
	}
}
