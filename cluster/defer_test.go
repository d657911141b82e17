package cluster

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"blis/engine"
	"blis/metrics"
	"blis/workload"
)

// With no concurrency cap, requests released at once wait in the client
// until the engine's queue could admit them (client: perRequest.deferring):
// the run is byte-identical to one where every request reaches the engine
// on release (a cap above the request count), and the engine's queue stays
// near max-num-seqs instead of holding every request. The cases cover
// rejections on arrival, timeouts of held requests, warm-ups and Poisson
// arrivals.
func TestDeferredRequestsChangeNothing(t *testing.T) {
	mixed := func(n int) *listSource {
		s := &listSource{}
		for i := 0; i < n; i++ {
			in := 50 + (i*37)%400
			if i%13 == 0 {
				in = 5000 // longer than max-model-len: refused on arrival
			}
			s.reqs = append(s.reqs, workload.Request{Index: int64(i), InputLen: in, OutputLen: 1 + i%9,
				Arrival: time.Duration(i/50) * 3 * time.Millisecond, Prompt: []workload.Segment{{ID: uint64(100 + i), Len: in}}})
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		warmups int
	}{
		{"plain", 0, 0},
		{"timeouts", 150 * time.Millisecond, 0},
		{"warm-ups", 0, 100},
	} {
		run := func(maxConc int) ([]byte, Result, int) {
			rec := newRec(t, true)
			cfg := Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond, perToken: 10 * time.Microsecond},
				MaxConcurrency: maxConc, RequestTimeout: tc.timeout, NumWarmups: tc.warmups, FrontendLatency: time.Millisecond}
			cfg.Engine.MaxNumSeqs = 8
			maxWaiting := 0
			cfg.AfterStep = func(_ time.Duration, e *engine.Engine) { maxWaiting = max(maxWaiting, e.Waiting()) }
			res, err := Run(cfg, mixed(2000), rec)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := metrics.WriteJSON(&b, rec.Summarize(metrics.SummaryInput{Duration: res.Duration}), true); err != nil {
				t.Fatal(err)
			}
			return b.Bytes(), res, maxWaiting
		}
		held, resHeld, waitHeld := run(0)
		sent, resSent, waitSent := run(1 << 30)
		if !bytes.Equal(held, sent) {
			t.Errorf("%s: deferring changed the result", tc.name)
		}
		resHeld.Engine.MaxRunning, resSent.Engine.MaxRunning = 0, 0
		if resHeld.Duration != resSent.Duration || resHeld.Sent != resSent.Sent || resHeld.Rejected != resSent.Rejected ||
			resHeld.TimedOut != resSent.TimedOut || resHeld.Engine != resSent.Engine || resHeld.WarmupRequests != resSent.WarmupRequests {
			t.Errorf("%s: results differ:\n%+v\n%+v", tc.name, resHeld, resSent)
		}
		if !reflect.DeepEqual(resHeld.Failures, resSent.Failures) || len(resHeld.Failures) == 0 || resHeld.Failures[0].Kind != "max_model_len" {
			t.Errorf("%s: failures %+v and %+v", tc.name, resHeld.Failures, resSent.Failures)
		}
		if waitHeld > 16 || waitSent < 1000 {
			t.Errorf("%s: engine queue peaked at %d held, %d sent on release", tc.name, waitHeld, waitSent)
		}
		if tc.timeout > 0 && resHeld.TimedOut == 0 || resHeld.Rejected == 0 {
			t.Errorf("%s: the case exercises nothing: %+v", tc.name, resHeld)
		}
	}
}

// stopRun ends a run from its AfterStep hook.
type stopRun struct{}

// A billion prompts released at once, and a billion warm-ups, start at once
// and hold the engine's queue at max-num-seqs: nothing is made per prompt up
// front, in the workload, the client or the engine.
func TestBillionRequestsStartBounded(t *testing.T) {
	for _, tc := range []struct {
		name             string
		prompts, warmups int
	}{{"prompts", 1_000_000_000, 0}, {"warm-ups", 10, 1_000_000_000}} {
		src, err := workload.NewRandom(workload.RandomSpec{InputLen: 256, OutputLen: 8, NumPrompts: tc.prompts, RequestRate: math.Inf(1), Burstiness: 1}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}, NumWarmups: tc.warmups}
		steps, maxWaiting := 0, 0
		cfg.AfterStep = func(_ time.Duration, e *engine.Engine) {
			maxWaiting = max(maxWaiting, e.Waiting())
			if steps++; steps == 2000 {
				panic(stopRun{})
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil && r != (stopRun{}) {
					panic(r)
				}
			}()
			Run(cfg, src, newRec(t, false))
			t.Fatalf("%s: the run ended", tc.name)
		}()
		if maxWaiting > 2*cfg.Engine.MaxNumSeqs {
			t.Errorf("%s: engine queue reached %d", tc.name, maxWaiting)
		}
	}
}
