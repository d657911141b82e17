// Package sweep runs a grid's points on a pool of workers into a results
// store: the points of one shard (or all), skipping those the store already
// holds, each stored as it finishes so that a kill loses at most the points
// in flight. What a point's run is (the simulator) is the caller's RunFunc,
// so that the CLI runs it exactly as `blis run` does.
package sweep

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"blis/internal/progress"
	"blis/sweep/grid"
	"blis/sweep/store"
)

// Outcome is one point's run: ok with its result JSON and metrics row, or
// infeasible/unserved with the reason.
type Outcome struct {
	Status  string // store.StatusOK, StatusInfeasible or StatusUnserved
	Reason  string
	JSON    []byte
	Metrics []any // store.MetricsOf's row, for an ok point
}

// RunFunc runs one point. An error (not an infeasible point: those are
// Outcomes) stops the sweep.
type RunFunc func(p grid.Point) (Outcome, error)

// Options says how to run.
type Options struct {
	// Jobs is the number of workers; 0 is runtime.GOMAXPROCS(0), the CPUs
	// this process may use: Go reads it from the container's CPU limit (a
	// pod's limits.cpu), where runtime.NumCPU would count the node's.
	Jobs int
	// Shard selects the points to run; the zero value runs all.
	Shard store.Shard
	// Log receives the progress: a bar with ETA on a terminal, else a
	// plain line per 5 % of the points or per 10 s, whichever comes later
	// (and a line per point with Verbose). Quiet writes only the summary.
	Log     io.Writer
	Quiet   bool
	Verbose bool
	// Every is the least time between two plain progress lines (10 s when
	// 0).
	Every time.Duration
}

// Stats counts a run's points.
type Stats struct {
	Total      int // the shard's points
	Skipped    int // already in the store
	Ran        int
	Infeasible int // infeasible or unserved, this run and before
	Elapsed    time.Duration
}

// Run runs the shard's points not yet in st on opt.Jobs workers. Points
// are handed out in index order; each finished point goes to the store at
// once. On the first error the workers stop taking points, the points in
// flight finish and are stored, and the error is returned naming the
// point.
func Run(st *store.Store, points []grid.Point, run RunFunc, opt Options) (Stats, error) {
	start := time.Now()
	done, err := st.Done()
	if err != nil {
		return Stats{}, err
	}
	var todo []grid.Point
	var stats Stats
	for _, p := range points {
		if !opt.Shard.Has(p.Index) {
			continue
		}
		stats.Total++
		if done[p.Index] {
			stats.Skipped++
			continue
		}
		todo = append(todo, p)
	}
	prior, err := st.NotOK()
	if err != nil {
		return stats, err
	}
	stats.Infeasible = prior
	jobs := opt.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	jobs = max(1, min(jobs, len(todo)))

	rep := newReporter(opt, stats.Total, stats.Skipped, stats.Infeasible)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	feed := make(chan grid.Point)
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	for range jobs {
		wg.Go(func() {
			for p := range feed {
				// The feeder's select picks at random between a waiting
				// worker and the cancelled context: a point handed over
				// after the first error is dropped, not run.
				if ctx.Err() != nil {
					continue
				}
				out, err := run(p)
				if err != nil {
					fail(fmt.Errorf("point %d (%s): %w", p.Index, pointText(p), err))
					continue
				}
				rec := store.Record{Point: p, Status: out.Status, Reason: out.Reason, JSON: out.JSON, Metrics: out.Metrics}
				if err := st.Put(rec); err != nil {
					fail(fmt.Errorf("storing point %d: %w", p.Index, err))
					continue
				}
				rep.point(p, out)
			}
		})
	}
feeding:
	for _, p := range todo {
		select {
		case feed <- p:
		case <-ctx.Done():
			break feeding
		}
	}
	close(feed)
	wg.Wait()
	rep.done()
	stats.Ran, stats.Infeasible = rep.ran, rep.infeasible
	stats.Elapsed = time.Since(start)
	return stats, firstErr
}

// pointText is a point's axis values, for messages.
func pointText(p grid.Point) string {
	parts := make([]string, len(p.Values))
	for i, kv := range p.Values {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, " ")
}

// reporter draws the progress: the terminal bar, or plain lines.
type reporter struct {
	mu         sync.Mutex
	opt        Options
	bar        *progress.Bar
	total      int
	skipped    int
	ran        int
	infeasible int
	start      time.Time
	lastLine   time.Time
	lastShare  int // last 5 % step logged
}

func newReporter(opt Options, total, skipped, infeasible int) *reporter {
	r := &reporter{opt: opt, total: total, skipped: skipped, infeasible: infeasible, start: time.Now()}
	r.lastLine = r.start
	if opt.Log == nil {
		opt.Log = io.Discard
		r.opt.Log = io.Discard
	}
	if !opt.Quiet {
		r.bar = progress.New(opt.Log, "blis sweep", "points", int64(total), false)
		if skipped > 0 {
			fmt.Fprintf(opt.Log, "blis sweep: %d of %d points already in the store; running %d\n", skipped, total, total-skipped)
		}
	}
	return r
}

func (r *reporter) point(p grid.Point, out Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran++
	if out.Status != store.StatusOK {
		r.infeasible++
	}
	if r.opt.Quiet {
		return
	}
	done := r.skipped + r.ran
	if r.bar != nil {
		if r.infeasible > 0 {
			r.bar.Note(fmt.Sprintf("%d infeasible", r.infeasible))
		}
		r.bar.Update(int64(done), 0)
		return
	}
	if r.opt.Verbose {
		line := fmt.Sprintf("blis sweep: point %d (%s): %s", p.Index, pointText(p), out.Status)
		if out.Reason != "" {
			line += ": " + out.Reason
		}
		fmt.Fprintln(r.opt.Log, line)
		return
	}
	every := r.opt.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	share := 0
	if r.total > 0 {
		share = done * 20 / r.total // 5 % steps
	}
	now := time.Now()
	if done == r.total || (share > r.lastShare && now.Sub(r.lastLine) >= every) {
		r.lastShare, r.lastLine = share, now
		fmt.Fprintln(r.opt.Log, r.line(done, now))
	}
}

func (r *reporter) line(done int, now time.Time) string {
	el := now.Sub(r.start)
	// The share rounds down: 100 % only when every point is done.
	s := fmt.Sprintf("blis sweep: %d/%d points (%d%%), %d infeasible, elapsed %s", done, r.total, 100*done/max(r.total, 1), r.infeasible, el.Round(time.Second))
	if r.ran > 0 && done < r.total {
		eta := time.Duration(float64(el) * float64(r.total-done) / float64(r.ran))
		s += ", ETA " + eta.Round(time.Second).String()
	}
	return s
}

func (r *reporter) done() {
	r.bar.Done()
}
