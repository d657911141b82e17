package cluster

import (
	"math"
	"testing"
	"time"

	"blis/kernel"
	"blis/metrics"
	"blis/workload"
)

// twoStages is a two-stage pipeline of equal 10 ms stages and a send of
// send between them.
func twoStages(send time.Duration) *kernel.Pipeline {
	st := constPricer{step: 10 * time.Millisecond}
	return kernel.NewPipelineOf([]kernel.Pricer{st, st}, send)
}

func ppCfg() Config {
	cfg := Config{Engine: engCfg(), Pricer: twoStages(0)}
	cfg.Engine.MaxConcurrentBatches = 2
	return cfg
}

// One request alone: each step must wait for its previous token, so a
// batch crosses both stages alone, 20 ms, and nothing waits.
func TestPipelineOneBatchAlone(t *testing.T) {
	rec := newRec(t, true)
	res, err := Run(ppCfg(), fixed(1, 100, 5), rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration != 100*time.Millisecond || res.TimedSteps != 5 || res.PipelineBubble != 0 {
		t.Fatalf("duration %v steps %d bubble %v, want 100ms, 5, 0", res.Duration, res.TimedSteps, res.PipelineBubble)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if math.Abs(sum.TTFT.Mean-20) > 1e-9 || math.Abs(sum.TPOT.Mean-20) > 1e-9 {
		t.Fatalf("TTFT %v ms TPOT %v ms, want 20 and 20", sum.TTFT.Mean, sum.TPOT.Mean)
	}
	// With a 1 ms send between the stages each step takes 21 ms.
	cfg := ppCfg()
	cfg.Pricer = twoStages(time.Millisecond)
	res, err = Run(cfg, fixed(1, 100, 5), newRec(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration != 105*time.Millisecond || res.PipelineBubble != 0 {
		t.Fatalf("with a send: duration %v bubble %v, want 105ms and 0", res.Duration, res.PipelineBubble)
	}
}

// Two requests 5 ms apart: the second's batch enters while the first's is
// in the pipeline, waits 5 ms for stage 1 (the bubble), and from then on
// the two alternate: one batch leaves every stage time (10 ms), each
// request getting a token every 20 ms.
//
//	A: stage 1 0–10, stage 2 10–20 → tokens at 20, 40, 60, 80, 100
//	B: arrives 5, stage 1 10–20 (waits 5), stage 2 20–30 → 30, 50, 70, 90, 110
func TestPipelineTwoStagesSteadyState(t *testing.T) {
	src := &listSource{reqs: []workload.Request{
		{Index: 0, Arrival: 0, InputLen: 100, OutputLen: 5, Prompt: []workload.Segment{{ID: 1, Len: 100}}},
		{Index: 1, Arrival: 5 * time.Millisecond, InputLen: 100, OutputLen: 5, Prompt: []workload.Segment{{ID: 2, Len: 100}}},
	}}
	rec := newRec(t, true)
	res, err := Run(ppCfg(), src, rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration != 110*time.Millisecond || res.TimedSteps != 10 || res.PipelineBubble != 5*time.Millisecond {
		t.Fatalf("duration %v steps %d bubble %v, want 110ms, 10, 5ms", res.Duration, res.TimedSteps, res.PipelineBubble)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	// TTFT: A 20 ms; B 30 − 5 = 25 ms. TPOT 20 ms each.
	if math.Abs(sum.TTFT.Mean-22.5) > 1e-9 || math.Abs(sum.TPOT.Mean-20) > 1e-9 {
		t.Fatalf("TTFT %v ms TPOT %v ms, want 22.5 and 20", sum.TTFT.Mean, sum.TPOT.Mean)
	}
	// Without the batch queue the same pipeline runs one batch at a time.
	cfg := ppCfg()
	cfg.Engine.MaxConcurrentBatches = 1
	src.i = 0
	one, err := Run(cfg, src, newRec(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if one.Duration <= res.Duration {
		t.Fatalf("one batch in flight took %v, the batch queue %v", one.Duration, res.Duration)
	}
}
