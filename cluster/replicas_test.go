package cluster

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"blis/engine"
	"blis/metrics"
	"blis/router"
	"blis/workload"
)

// randomLoad draws a random workload from rng (outputs of 1 to maxOut
// tokens, shared prefixes half the time, a request rate half the time)
// and its source for seed.
func randomLoad(t *testing.T, rng *rand.Rand, seed int64, maxOut int) (workload.RandomSpec, workload.Source) {
	t.Helper()
	spec := workload.DefaultRandomSpec()
	spec.InputLen = 64 + rng.IntN(500)
	spec.OutputLen = 1 + rng.IntN(maxOut)
	spec.RangeRatio = 0.5
	spec.NumPrompts = 100 + rng.IntN(200)
	spec.PrefixLen = rng.IntN(2) * (16 + rng.IntN(200))
	if rng.IntN(2) == 0 {
		spec.RequestRate = 20 + 200*rng.Float64()
	}
	src, err := workload.NewRandom(spec, seed)
	if err != nil {
		t.Fatal(err)
	}
	return spec, src
}

// randomEngine draws a small engine from rng: few sequences, a small
// token budget and KV pool, so preemption and queueing happen.
func randomEngine(rng *rand.Rand) engine.Config {
	ec := engCfg()
	ec.MaxNumSeqs = 1 + rng.IntN(32)
	ec.MaxNumBatchedTokens = 64 + rng.IntN(1024)
	ec.NumGPUBlocks = 60 + rng.IntN(300)
	ec.MaxModelLen = 1200
	ec.AsyncScheduling = rng.IntN(2) == 0
	return ec
}

// replicaRun plays a random workload with shared prefixes against several
// pools of replicas behind router kind ("rr", "prefix", "gated"), checking
// the invariants as it goes when invariants is set: KV blocks conserved in
// every engine after every step, the router's contract, every request
// ending exactly once, per-endpoint counts adding up. It returns the
// recorder's JSON and the result.
func replicaRun(t *testing.T, seed int64, kind string, invariants bool) ([]byte, Result, *checked) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 5))
	spec, src := randomLoad(t, rng, seed, 80)
	var pools []Pool
	for p := 0; p < 1+rng.IntN(2); p++ {
		ec := randomEngine(rng)
		pools = append(pools, Pool{Name: fmt.Sprintf("pool%d", p), Replicas: 1 + rng.IntN(4), Engine: ec,
			Pricer:       constPricer{step: time.Duration(2+rng.IntN(3)) * time.Millisecond, perToken: 20 * time.Microsecond},
			DataParallel: 1 + rng.IntN(2), Lockstep: rng.IntN(2) == 0})
	}
	var rt router.Router
	switch kind {
	case "rr":
		rt = &roundRobin{}
	case "prefix":
		rt = &prefixSticky{}
	case "gated":
		rt = &gated{cap: 1 + rng.IntN(8), wait: time.Duration(50+rng.IntN(400)) * time.Millisecond, shedEvery: int64(5 + rng.IntN(20))}
	}
	c := check(rt)
	cfg := Config{Pools: pools, Router: c, MaxConcurrency: rng.IntN(40), NumWarmups: rng.IntN(3), Seed: seed}
	if rng.IntN(2) == 0 {
		cfg.FrontendLatency = time.Duration(rng.IntN(20)) * time.Millisecond
	}
	if rng.IntN(3) == 0 {
		cfg.RequestTimeout = time.Duration(200+rng.IntN(2000)) * time.Millisecond
	}
	if invariants {
		cfg.AfterStep = func(_ time.Duration, e *engine.Engine) {
			if e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() {
				t.Fatalf("seed %d: KV conservation broken: held %d free %d usable %d", seed, e.HeldBlocks(), e.FreeBlocks(), e.UsableBlocks())
			}
		}
	}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatalf("seed %d %s: %v", seed, kind, err)
	}
	if err := c.drained(); err != nil {
		t.Fatalf("seed %d %s: %v", seed, kind, err)
	}
	if p, ok := rt.(*prefixSticky); ok && p.bad != nil {
		t.Fatalf("seed %d: %v", seed, p.bad)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration, NumPrompts: spec.NumPrompts})
	if int(res.Completed+res.Rejected+res.TimedOut) != spec.NumPrompts || sum.Completed+sum.Failed != spec.NumPrompts {
		t.Fatalf("seed %d %s: %d completed + %d rejected + %d timed out, %d recorded, for %d prompts",
			seed, kind, res.Completed, res.Rejected, res.TimedOut, sum.Completed+sum.Failed, spec.NumPrompts)
	}
	seen := map[int64]bool{}
	for _, r := range sum.Requests {
		if seen[int64(r.Index)] {
			t.Fatalf("seed %d: request %d recorded twice", seed, r.Index)
		}
		seen[int64(r.Index)] = true
	}
	var routed, completed int64
	for _, rr := range res.Replicas {
		routed += rr.Routed
		completed += rr.Completed
	}
	if completed != res.Completed || routed > res.Sent {
		t.Fatalf("seed %d %s: replicas completed %d routed %d; run completed %d sent %d", seed, kind, completed, routed, res.Completed, res.Sent)
	}
	if cfg.RequestTimeout == 0 && routed+int64(countKind(res.Failures, "shed", "flow_control_timeout")) != res.Sent {
		t.Fatalf("seed %d %s: routed %d + router rejections != sent %d (%+v)", seed, kind, routed, res.Sent, res.Failures)
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSON(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res, c
}

func countKind(fs []Failure, kinds ...string) int64 {
	var n int64
	for _, f := range fs {
		for _, k := range kinds {
			if f.Kind == k {
				n += f.Count
			}
		}
	}
	return n
}

// Several replicas behind each test router: the invariants hold, and a
// seed replays byte for byte, routing included.
func TestReplicasInvariantsAndDeterminism(t *testing.T) {
	for _, kind := range []string{"rr", "prefix", "gated"} {
		for seed := int64(1); seed <= 12; seed++ {
			a, ra, _ := replicaRun(t, seed, kind, true)
			b, rb, _ := replicaRun(t, seed, kind, false)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s seed %d: outputs differ between identical runs", kind, seed)
			}
			if !reflect.DeepEqual(ra.Replicas, rb.Replicas) {
				t.Fatalf("%s seed %d: per-replica results differ between identical runs", kind, seed)
			}
		}
	}
}

// The gated router's paths all happen: requests held and rejected after
// their wait (the loop honours Wake with nothing else going on), shed at
// once, and the rejections recorded as failures with the router's reason.
func TestRouterRejectionsAreRecordedFailures(t *testing.T) {
	ec := engCfg()
	src := fixed(40, 200, 50)
	g := &gated{cap: 1, wait: 30 * time.Millisecond, shedEvery: 10}
	c := check(g)
	rec := newRec(t, false)
	res, err := Run(Config{Pools: []Pool{{Name: "p", Replicas: 2, Engine: ec, Pricer: constPricer{step: 5 * time.Millisecond}}},
		Router: c, Seed: 1}, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.drained(); err != nil {
		t.Fatal(err)
	}
	shed, timedOut := countKind(res.Failures, "shed"), countKind(res.Failures, "flow_control_timeout")
	if shed != 4 || timedOut == 0 || res.Completed+shed+timedOut != 40 {
		t.Fatalf("completed %d, shed %d, flow-control timeouts %d of 40: %+v", res.Completed, shed, timedOut, res.Failures)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	for _, r := range sum.Requests {
		if !r.Success && !strings.HasPrefix(r.Error, "shed:") && !strings.HasPrefix(r.Error, "flow_control_timeout:") {
			t.Fatalf("request %d failed with %q", r.Index, r.Error)
		}
	}
}

// A prefix-aware router fed by the engines' KV events keeps requests that
// share a prefix together, so the cluster's prefix-cache hit rate beats
// round-robin's on a workload of a few long shared prefixes.
func TestPrefixStickyRouterUsesKVEvents(t *testing.T) {
	mk := func() workload.Source {
		s := &listSource{}
		for i := 0; i < 120; i++ {
			s.reqs = append(s.reqs, workload.Request{Index: int64(i), InputLen: 532, OutputLen: 8, Arrival: time.Duration(i) * 20 * time.Millisecond,
				Prompt: []workload.Segment{{ID: uint64(1 + i%3), Len: 512}, {ID: uint64(1000 + i), Len: 20}}})
		}
		return s
	}
	hit := func(rt router.Router) float64 {
		res, err := Run(Config{Pools: []Pool{{Name: "p", Replicas: 4, Engine: engCfg(), Pricer: constPricer{step: 2 * time.Millisecond}}},
			Router: rt, Seed: 1}, mk(), newRec(t, false))
		if err != nil {
			t.Fatal(err)
		}
		return float64(res.Engine.PrefixHits) / float64(res.Engine.PrefixQueries)
	}
	p := &prefixSticky{}
	rr, sticky := hit(&roundRobin{}), hit(p)
	t.Logf("prefix hit rate: sticky %.3f, round-robin %.3f", sticky, rr)
	if sticky <= rr+0.05 {
		t.Fatalf("prefix hit rate: sticky %.3f, round-robin %.3f", sticky, rr)
	}
	if len(p.index) == 0 || p.scrapes == 0 {
		t.Fatalf("router saw %d cached blocks and %d scrapes", len(p.index), p.scrapes)
	}
}

// Scrapes run every ScrapeInterval while the run has work and stop with
// it: a run whose last request ends at T scrapes no later than T, and the
// run ends.
func TestScrapesStopWhenTheRunIsIdle(t *testing.T) {
	p := &prefixSticky{}
	src := &listSource{reqs: []workload.Request{
		{Index: 0, InputLen: 100, OutputLen: 10, Prompt: []workload.Segment{{ID: 1, Len: 100}}},
		{Index: 1, InputLen: 100, OutputLen: 10, Arrival: 2 * time.Second, Prompt: []workload.Segment{{ID: 2, Len: 100}}},
	}}
	res, err := Run(Config{Pools: []Pool{{Name: "p", Replicas: 3, Engine: engCfg(), Pricer: constPricer{step: 10 * time.Millisecond}}},
		Router: p, Seed: 1}, src, newRec(t, false))
	if err != nil {
		t.Fatal(err)
	}
	end := res.Duration
	// 3 endpoints scraped at 0, 25 ms, ... while the first request runs,
	// through the 2 s gap (a release is still due), and through the second.
	if want := 3 * int(end/(25*time.Millisecond)); p.scrapes < want || p.scrapes > want+6 {
		t.Fatalf("%d scrapes over %v, want about %d", p.scrapes, end, want)
	}
	t.Logf("%d scrapes over %v, last at %v", p.scrapes, end, p.lastSeen)
	if p.lastSeen > end {
		t.Fatalf("scraped at %v, after the run's last response at %v", p.lastSeen, end)
	}
}

func TestEndpointsNeedARouter(t *testing.T) {
	_, err := Run(Config{Pools: []Pool{{Name: "p", Replicas: 2, Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}}}},
		fixed(1, 10, 1), newRec(t, false))
	if err == nil || !strings.Contains(err.Error(), "router") {
		t.Fatalf("two endpoints and no router: %v", err)
	}
}

// badRouter sends to an endpoint that does not exist.
type badRouter struct{ roundRobin }

func (b *badRouter) Submit(now time.Duration, q *router.Request) {
	b.out = append(b.out, router.Assignment{Req: q, Endpoint: 7, Prefill: -1})
}

func TestRouterOutOfRangeIsAnError(t *testing.T) {
	_, err := Run(Config{Pools: []Pool{{Name: "p", Replicas: 2, Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}}},
		Router: &badRouter{}}, fixed(3, 10, 1), newRec(t, false))
	if err == nil || !strings.Contains(err.Error(), "endpoint 7 of 2") {
		t.Fatalf("got %v", err)
	}
}

// stuckWake asks to be woken at time 0 forever.
type stuckWake struct{ roundRobin }

func (*stuckWake) Wake() time.Duration { return 0 }

// A router whose Wake never moves on is served once per instant: the run
// ends, and time never runs backwards for it.
func TestRouterWakeInThePastDoesNotSpin(t *testing.T) {
	c := check(&stuckWake{})
	res, err := Run(Config{Pools: []Pool{{Name: "p", Replicas: 2, Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}}},
		Router: c}, fixed(20, 50, 5), newRec(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.drained(); err != nil {
		t.Fatal(err)
	}
	if res.Completed != 20 {
		t.Fatalf("completed %d of 20", res.Completed)
	}
}

func TestPoolsAreChecked(t *testing.T) {
	ok := Pool{Name: "p", Replicas: 1, Engine: engCfg(), Pricer: constPricer{step: time.Millisecond}}
	for _, tc := range []struct {
		name string
		edit func(ps []Pool)
		want string
	}{
		{"no name", func(ps []Pool) { ps[0].Name = "" }, "needs a name"},
		{"same name", func(ps []Pool) { ps[1].Name = "p" }, "needs a name"},
		{"role", func(ps []Pool) { ps[0].Role = 7 }, "role 7"},
		{"pricer", func(ps []Pool) { ps[1].Pricer = nil }, "no step pricer"},
		{"replicas", func(ps []Pool) { ps[0].Replicas = 0 }, "0 replicas"},
		{"dp", func(ps []Pool) { ps[0].DataParallel = -1 }, "data parallel size -1"},
	} {
		ps := []Pool{ok, ok}
		ps[1].Name = "q"
		tc.edit(ps)
		_, err := Run(Config{Pools: ps, Router: &roundRobin{}}, fixed(1, 10, 1), newRec(t, false))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// One replica with no router: its share is the whole run.
func TestOneReplicaIsTheWholeRun(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		_, res := randomRun(t, seed, false)
		if len(res.Replicas) != 1 {
			t.Fatalf("%d replicas", len(res.Replicas))
		}
		r := res.Replicas[0]
		if r.Name != "vllm-0" || r.Engine != res.Engine || r.StepTime != res.StepTime || r.TimedSteps != res.TimedSteps ||
			r.Completed != res.Completed || r.Routed != res.Sent {
			t.Fatalf("seed %d: replica %+v, run %+v", seed, r, res)
		}
	}
}
