package cluster

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"blis/engine"
	"blis/kernel"
	"blis/metrics"
	"blis/workload"
)

// constPricer charges a fixed time per step plus a time per token: a step
// model simple enough to compute results by hand.
type constPricer struct{ step, perToken time.Duration }

func (p constPricer) StepTime(b *kernel.Batch) kernel.Breakdown {
	t := p.step + time.Duration(b.Tokens())*p.perToken
	return kernel.Breakdown{Host: t, Total: t}
}
func (constPricer) Name() string { return "const" }

// listSource replays fixed requests.
type listSource struct {
	reqs []workload.Request
	i    int
}

func (s *listSource) Next(r *workload.Request) bool {
	if s.i >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.i]
	s.i++
	return true
}

func engCfg() engine.Config {
	return engine.Config{MaxNumSeqs: 64, MaxNumBatchedTokens: 512, EnableChunkedPrefill: true,
		EnablePrefixCaching: true, BlockSize: 16, NumGPUBlocks: 1000, MaxModelLen: 4096}
}

func newRec(t *testing.T, detailed bool) *metrics.Recorder {
	t.Helper()
	r, err := metrics.NewRecorder(metrics.RecorderOptions{Detailed: detailed})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fixed(n, in, out int) *listSource {
	s := &listSource{}
	for i := 0; i < n; i++ {
		s.reqs = append(s.reqs, workload.Request{Index: int64(i), InputLen: in, OutputLen: out,
			Prompt: []workload.Segment{{ID: uint64(100 + i), Len: in}}})
	}
	return s
}

// One request alone: TTFT = one prefill step, then one step per token.
func TestHandComputedSingleRequest(t *testing.T) {
	rec := newRec(t, true)
	res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: 10 * time.Millisecond}}, fixed(1, 100, 5), rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration != 50*time.Millisecond || res.Completed != 1 || res.TimedSteps != 5 {
		t.Fatalf("result %+v", res)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if got := sum.TTFT.Mean; math.Abs(got-10) > 1e-9 {
		t.Fatalf("TTFT %v ms, want 10", got)
	}
	if got := sum.TPOT.Mean; math.Abs(got-10) > 1e-9 {
		t.Fatalf("TPOT %v ms, want 10", got)
	}
}

// Concurrency cap 1: requests run back to back; each waits in the client.
func TestConcurrencyCapSerialises(t *testing.T) {
	rec := newRec(t, false)
	res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}, MaxConcurrency: 1}, fixed(4, 32, 3), rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration != 12*time.Millisecond {
		t.Fatalf("4 requests × 3 steps of 1 ms serialised: duration %v", res.Duration)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if sum.MaxConcurrentRequests != 1 {
		t.Fatalf("max concurrent %d", sum.MaxConcurrentRequests)
	}
}

// Warm-ups are copies of the first prompt: the first timed request then hits
// the prefix cache, and warm-ups are not counted.
func TestWarmupsPopulatePrefixCacheAndAreExcluded(t *testing.T) {
	rec := newRec(t, true)
	res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}, NumWarmups: 2, MaxConcurrency: 4}, fixed(3, 64, 2), rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 3 || res.Sent != 3 || res.WarmupDuration <= 0 {
		t.Fatalf("result %+v", res)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if sum.Requests[0].CachedTokens != 48 {
		t.Fatalf("first timed request should hit 48 cached tokens (3 blocks, last token recomputed), got %d", sum.Requests[0].CachedTokens)
	}
}

// Requests that can never run are rejected, counted and reported; the run
// goes on.
func TestRejectedRequestsAreCountedNotDropped(t *testing.T) {
	src := fixed(3, 64, 4)
	src.reqs[1].InputLen, src.reqs[1].Prompt[0].Len = 5000, 5000
	rec := newRec(t, true)
	res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}, MaxConcurrency: 1}, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != 2 || res.Rejected != 1 {
		t.Fatalf("result %+v", res)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if sum.Failed != 1 || sum.Completed != 2 {
		t.Fatalf("summary completed %d failed %d", sum.Completed, sum.Failed)
	}
}

func randomRun(t *testing.T, seed int64, check bool) ([]byte, Result) {
	rng := rand.New(rand.NewPCG(uint64(seed), 3))
	spec := workload.DefaultRandomSpec()
	spec.InputLen = 16 + rng.IntN(600)
	spec.OutputLen = 1 + rng.IntN(100)
	spec.RangeRatio = 0.5
	spec.NumPrompts = 50 + rng.IntN(150)
	spec.PrefixLen = rng.IntN(2) * rng.IntN(200)
	if rng.IntN(2) == 0 {
		spec.RequestRate = 5 + 50*rng.Float64()
	}
	src, err := workload.NewRandom(spec, seed)
	if err != nil {
		t.Fatal(err)
	}
	ec := engCfg()
	ec.MaxNumSeqs = 1 + rng.IntN(64)
	ec.MaxNumBatchedTokens = 64 + rng.IntN(1024)
	ec.NumGPUBlocks = 40 + rng.IntN(400)
	ec.MaxModelLen = 1500
	cfg := Config{Engine: ec, Pricer: constPricer{step: 3 * time.Millisecond, perToken: 20 * time.Microsecond},
		MaxConcurrency: rng.IntN(40), NumWarmups: rng.IntN(3), Seed: seed}
	if rng.IntN(2) == 0 {
		cfg.FrontendLatency = time.Duration(rng.IntN(20)) * time.Millisecond
	}
	cfg.DataParallel, cfg.Lockstep = 1+rng.IntN(3), rng.IntN(2) == 0
	if check {
		cfg.AfterStep = func(_ time.Duration, e *engine.Engine) {
			if e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() {
				t.Fatalf("KV conservation broken: held %d free %d usable %d", e.HeldBlocks(), e.FreeBlocks(), e.UsableBlocks())
			}
		}
	}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration, NumPrompts: spec.NumPrompts})
	if int(res.Completed+res.Rejected) != spec.NumPrompts || sum.Completed+sum.Failed != spec.NumPrompts {
		t.Fatalf("seed %d: %d completed + %d rejected != %d prompts", seed, res.Completed, res.Rejected, spec.NumPrompts)
	}
	for _, r := range sum.Requests {
		if !r.Success {
			continue
		}
		if r.OutputTokens <= 0 || len(r.ITLs) != r.OutputTokens-1 {
			t.Fatalf("seed %d: request %d: %d tokens but %d gaps", seed, r.Index, r.OutputTokens, len(r.ITLs))
		}
		if r.TTFT <= 0 || r.Latency < r.TTFT {
			t.Fatalf("seed %d: request %d causality: ttft %v latency %v", seed, r.Index, r.TTFT, r.Latency)
		}
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSON(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// Random scenarios: every request ends once, KV blocks are conserved after
// every step, tokens emitted equal output lengths, and the same seed gives
// byte-identical JSON.
func TestRandomisedScenariosInvariantsAndDeterminism(t *testing.T) {
	for seed := int64(1); seed <= 25; seed++ {
		a, _ := randomRun(t, seed, true)
		b, _ := randomRun(t, seed, false)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: outputs differ between identical runs", seed)
		}
	}
}

// The frontend's latency lands on the response path: with a cap of one, each
// response reaches the client D after the engine finished it, so TTFT and
// E2E grow by D, TPOT does not, and the next request is sent D later (the
// engine idles for D between requests).
func TestFrontendLatencyDelaysResponsesAndTheClosedLoop(t *testing.T) {
	const D = 7 * time.Millisecond
	for _, tc := range []struct {
		name     string
		d        time.Duration
		duration time.Duration
		ttft     float64
	}{
		{"none", 0, 3 * 5 * time.Millisecond, 1},
		{"7ms", D, 3 * (5*time.Millisecond + D), 1 + 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRec(t, true)
			res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}, MaxConcurrency: 1, FrontendLatency: tc.d}, fixed(3, 32, 5), rec)
			if err != nil {
				t.Fatal(err)
			}
			if res.Duration != tc.duration || res.Completed != 3 {
				t.Fatalf("duration %v completed %d, want %v and 3", res.Duration, res.Completed, tc.duration)
			}
			sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
			if got := sum.TTFT.Mean; math.Abs(got-tc.ttft) > 1e-9 {
				t.Fatalf("TTFT %v ms, want %v", got, tc.ttft)
			}
			if got := sum.TPOT.Mean; math.Abs(got-1) > 1e-9 {
				t.Fatalf("TPOT %v ms, want 1", got)
			}
			for i, q := range sum.Requests {
				if want := time.Duration(i) * tc.duration / 3; q.Start != want {
					t.Fatalf("request %d sent at %v, want %v", i, q.Start, want)
				}
			}
		})
	}
}

// notUnique hides a source's uniqueness promise.
type notUnique struct{ workload.Source }

func (s notUnique) Next(r *workload.Request) bool {
	ok := s.Source.Next(r)
	r.Unique = false
	return ok
}

// Keeping private requests' blocks out of the prefix-cache table until
// their first preemption (engine.Request.Private) is invisible: under heavy
// preemption every metric and engine counter equals the run that lists
// every block as it fills.
func TestPrivateRequestsChangeNothing(t *testing.T) {
	var preemptions, evictions int64
	for seed := int64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		spec := workload.DefaultRandomSpec()
		spec.InputLen, spec.OutputLen, spec.RangeRatio = 16+rng.IntN(500), 1+rng.IntN(200), 0.6
		spec.NumPrompts = 100 + rng.IntN(200)
		ec := engCfg()
		ec.MaxNumSeqs, ec.MaxNumBatchedTokens, ec.NumGPUBlocks = 1+rng.IntN(64), 64+rng.IntN(1024), 60+rng.IntN(200)
		ec.MaxModelLen = 1500
		ec.AsyncScheduling = rng.IntN(2) == 0
		cfg := Config{Engine: ec, Pricer: constPricer{step: 2 * time.Millisecond, perToken: 10 * time.Microsecond},
			MaxConcurrency: 1 + rng.IntN(60), NumWarmups: rng.IntN(3), Seed: seed, DataParallel: 1 + rng.IntN(2)}
		run := func(hide bool) ([]byte, Result) {
			src, err := workload.NewRandom(spec, seed)
			if err != nil {
				t.Fatal(err)
			}
			if hide {
				src = notUnique{src}
			}
			rec := newRec(t, true)
			res, err := Run(cfg, src, rec)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := metrics.WriteJSON(&buf, rec.Summarize(metrics.SummaryInput{Duration: res.Duration}), true); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes(), res
		}
		a, ra := run(false)
		b, rb := run(true)
		if !bytes.Equal(a, b) || ra.Engine != rb.Engine {
			t.Fatalf("seed %d: private requests changed the run: engine %+v vs %+v", seed, ra.Engine, rb.Engine)
		}
		preemptions += ra.Engine.Preemptions
		evictions += ra.Engine.Evictions
	}
	if preemptions == 0 || evictions == 0 {
		t.Fatalf("the seeds never preempted (%d) or evicted (%d): the test checks nothing", preemptions, evictions)
	}
}

// failingSink fails from its third request on.
type failingSink struct{ n int }

func (s *failingSink) Request(*metrics.RequestResult) error {
	s.n++
	if s.n >= 3 {
		return errors.New("disk full")
	}
	return nil
}

// A sink that cannot write ends the run with its error.
func TestRunStopsOnSinkError(t *testing.T) {
	sink := &failingSink{}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{Sinks: []metrics.Sink{sink}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}, MaxConcurrency: 1}, fixed(200, 32, 3), rec)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err %v, want the sink's", err)
	}
	if sink.n >= 200 {
		t.Errorf("the run went on for %d requests after the sink failed", sink.n)
	}
}
