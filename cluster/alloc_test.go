package cluster

import (
	"runtime"
	"testing"
	"time"

	"blis/metrics"
	"blis/workload"
)

// allocRun serves n random requests at a steady rate from four replicas
// behind the round-robin router and returns the heap allocations the run
// made and the events it handled (steps and requests).
func allocRun(t *testing.T, n int) (mallocs uint64, events int64) {
	t.Helper()
	spec := workload.DefaultRandomSpec()
	spec.InputLen, spec.OutputLen, spec.RangeRatio, spec.NumPrompts = 300, 40, 0.5, n
	spec.RequestRate = 150
	src, err := workload.NewRandom(spec, 1)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{OmitRequests: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Pools: []Pool{{Name: "p", Replicas: 4, Engine: engCfg(), Pricer: constPricer{step: 3 * time.Millisecond, perToken: 10 * time.Microsecond}}},
		Router: &roundRobin{}, MaxConcurrency: 64, FrontendLatency: time.Millisecond, RequestTimeout: time.Hour, Seed: 1}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(cfg, src, rec)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != int64(n) {
		t.Fatalf("completed %d of %d", res.Completed, n)
	}
	return after.Mallocs - before.Mallocs, res.Engine.Steps + int64(n)
}

// Once the run has reached its steady state (every buffer at its working
// size), handling events allocates nothing: the allocations of a run of
// 2n requests exceed those of a run of n by (almost) nothing, although it
// handles twice the events.
func TestSteadyStateAllocatesNothingPerEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("long run")
	}
	m1, e1 := allocRun(t, 3000)
	m2, e2 := allocRun(t, 6000)
	extra := float64(int64(m2)-int64(m1)) / float64(e2-e1)
	t.Logf("%d allocations for %d events, %d for %d: %.4f per extra event", m1, e1, m2, e2, extra)
	if extra > 0.01 {
		t.Fatalf("%.4f allocations per event in the steady state (%d extra over %d extra events)", extra, int64(m2)-int64(m1), e2-e1)
	}
}
