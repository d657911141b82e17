package cluster

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"blis/catalog"
	"blis/engine"
	"blis/fabric"
	"blis/metrics"
	"blis/router"
)

// linkTransfers is a test fabric: each transfer takes lat plus its bytes
// over bw bytes/s on a link of its own (no sharing).
type linkTransfers struct {
	lat    time.Duration
	bw     float64
	flying []flight
	bytes  int64
	starts int
	bad    string
}

type flight struct {
	at time.Duration
	id int64
}

func (f *linkTransfers) Start(now time.Duration, id int64, src, dst fabric.Place, b int64) {
	if src == dst {
		f.bad = "a transfer from a rank to itself"
	}
	f.starts++
	f.bytes += b
	d := f.lat + time.Duration(float64(b)/f.bw*1e9)
	f.flying = append(f.flying, flight{now + d, id})
}

func (f *linkTransfers) Next() time.Duration {
	t := time.Duration(math.MaxInt64)
	for _, x := range f.flying {
		t = min(t, x.at)
	}
	return t
}

func (f *linkTransfers) Done(now time.Duration, dst []int64) []int64 {
	slices.SortStableFunc(f.flying, func(a, b flight) int { return int(a.at - b.at) })
	k := 0
	for k < len(f.flying) && f.flying[k].at <= now {
		dst = append(dst, f.flying[k].id)
		k++
	}
	f.flying = slices.Delete(f.flying, 0, k)
	return dst
}

// pdRouter sends every request to the decode endpoints round-robin and,
// when its prompt has at least threshold tokens, its prefill to the
// prefill endpoints round-robin (endpoints [0, nPre) prefill, the rest
// decode).
type pdRouter struct {
	roundRobin
	nPre, threshold  int
	nextPre, nextDec int
}

func (p *pdRouter) Submit(_ time.Duration, q *router.Request) {
	a := router.Assignment{Req: q, Endpoint: p.nPre + p.nextDec, Prefill: -1}
	p.nextDec = (p.nextDec + 1) % (p.n - p.nPre)
	if q.PromptLen >= p.threshold {
		a.Prefill = p.nextPre
		p.nextPre = (p.nextPre + 1) % p.nPre
	}
	p.out = append(p.out, a)
}

// One disaggregated request with a free transfer: TTFT is the prefill
// step plus the decode engine's first step (it recomputes the last prompt
// token), the rest as aggregated; with a 7 ms transfer, TTFT grows by it.
func TestPDHandComputedSingleRequest(t *testing.T) {
	for _, lat := range []time.Duration{0, 7 * time.Millisecond} {
		xf := &linkTransfers{lat: lat, bw: 1e18}
		pr := constPricer{step: 10 * time.Millisecond}
		cfg := Config{Pools: []Pool{
			{Name: "p", Replicas: 1, Role: router.RolePrefill, Engine: engCfg(), Pricer: pr, KVBlockBytes: 1 << 20},
			{Name: "d", Replicas: 1, Role: router.RoleDecode, Engine: engCfg(), Pricer: pr, KVBlockBytes: 1 << 20},
		}, Router: check(&pdRouter{nPre: 1}), Transfers: xf}
		rec := newRec(t, true)
		res, err := Run(cfg, fixed(1, 100, 5), rec)
		if err != nil {
			t.Fatal(err)
		}
		sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
		ms := float64(lat) / 1e6
		if math.Abs(sum.TTFT.Mean-20-ms) > 1e-9 || math.Abs(sum.TPOT.Mean-10) > 1e-9 || res.Duration != 60*time.Millisecond+lat {
			t.Fatalf("lat %v: TTFT %v TPOT %v duration %v, want %v, 10, %v", lat, sum.TTFT.Mean, sum.TPOT.Mean, res.Duration, 20+ms, 60*time.Millisecond+lat)
		}
		// 100 tokens in blocks of 16: 7 blocks read from the prefill engine.
		if xf.bytes != 7<<20 || res.Replicas[0].Prefilled != 1 || res.Replicas[1].Decoded != 1 || res.Replicas[1].Routed != 1 ||
			res.Pools[1].KVBytesReceived != 7<<20 || res.Pools[0].KVBytesSent != 7<<20 || res.Pools[1].Transfers != 1 || res.Pools[1].TransferMean != lat {
			t.Fatalf("lat %v: %d bytes moved; replicas %+v; pools %+v", lat, xf.bytes, res.Replicas, res.Pools)
		}
		if res.Replicas[1].Engine.RemoteKVLoads != 1 || res.Replicas[0].Completed != 0 || res.Replicas[1].Completed != 1 {
			t.Fatalf("replicas %+v", res.Replicas)
		}
	}
}

// pdRun plays a random workload against prefill and decode pools behind
// pdRouter and checks: blocks conserved in every engine after every step
// and none held at the end (prefill engines' kept blocks included); every
// request ends once; every disaggregated request's first token comes no
// earlier than a prefill step, its transfer and a decode step; the
// router's contract.
func pdRun(t *testing.T, seed int64) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	spec, src := randomLoad(t, rng, seed, 60)
	step := time.Duration(2+rng.IntN(3)) * time.Millisecond
	mk := func(name string, role router.Role) Pool {
		ec := randomEngine(rng)
		return Pool{Name: name, Role: role, Replicas: 1 + rng.IntN(3), Engine: ec,
			Pricer:       constPricer{step: step, perToken: 20 * time.Microsecond},
			DataParallel: 1 + rng.IntN(2), Lockstep: rng.IntN(2) == 0, GPUs: 1 + rng.IntN(4), KVBlockBytes: 1 << 16}
	}
	pre, dec := mk("prefill", router.RolePrefill), mk("decode", router.RoleDecode)
	lat := time.Duration(1+rng.IntN(5)) * time.Millisecond
	xf := &linkTransfers{lat: lat, bw: 1e9 + 1e10*rng.Float64()}
	threshold := 0
	if rng.IntN(2) == 0 {
		threshold = 64 + rng.IntN(300)
	}
	c := check(&pdRouter{nPre: pre.Replicas, threshold: threshold})
	var engs []*engine.Engine
	cfg := Config{Pools: []Pool{pre, dec}, Router: c, Transfers: xf, MaxConcurrency: rng.IntN(40), Seed: seed,
		AfterStep: func(_ time.Duration, e *engine.Engine) {
			if e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() || e.HeldBlocks() < 0 {
				t.Fatalf("seed %d: KV conservation broken: held %d free %d usable %d", seed, e.HeldBlocks(), e.FreeBlocks(), e.UsableBlocks())
			}
			if !slices.Contains(engs, e) {
				engs = append(engs, e)
			}
		}}
	if rng.IntN(2) == 0 {
		cfg.FrontendLatency = time.Duration(rng.IntN(20)) * time.Millisecond
	}
	if rng.IntN(3) == 0 {
		cfg.RequestTimeout = time.Duration(200+rng.IntN(2000)) * time.Millisecond
	}
	if rng.IntN(2) == 0 {
		// The real fabric: a slow network so transfers share the NICs.
		chip, err := catalog.LookupChip("h100")
		if err != nil {
			t.Fatal(err)
		}
		f := catalog.DefaultFabric(chip)
		f.GPUsPerNode, f.Network.Bandwidth = 2, 1e8+1e9*rng.Float64()
		cfg.Transfers, cfg.Fabric, lat = nil, f, 0
	}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if err := c.drained(); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if xf.bad != "" {
		t.Fatalf("seed %d: %s", seed, xf.bad)
	}
	for _, e := range engs {
		if e.HeldBlocks() != 0 || e.Kept() != 0 || e.Loading() != 0 {
			t.Fatalf("seed %d: an engine ended holding %d blocks (%d kept, %d loading)", seed, e.HeldBlocks(), e.Kept(), e.Loading())
		}
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration, NumPrompts: spec.NumPrompts})
	if int(res.Completed+res.Rejected+res.TimedOut) != spec.NumPrompts || sum.Completed+sum.Failed != spec.NumPrompts {
		t.Fatalf("seed %d: %d completed + %d rejected + %d timed out for %d prompts", seed, res.Completed, res.Rejected, res.TimedOut, spec.NumPrompts)
	}
	seen := map[int64]bool{}
	floor := 2*step + lat + cfg.FrontendLatency
	for _, r := range sum.Requests {
		if seen[int64(r.Index)] {
			t.Fatalf("seed %d: request %d recorded twice", seed, r.Index)
		}
		seen[int64(r.Index)] = true
		if r.Success && r.InputTokens >= threshold && r.TTFT < floor {
			t.Fatalf("seed %d: request %d's first token %v after it was sent, before prefill + transfer + a decode step (%v)", seed, r.Index, r.TTFT, floor)
		}
	}
	var pf, dc, refused int64
	for _, rr := range res.Replicas {
		pf += rr.Prefilled
		dc += rr.Decoded
		if rr.Role == router.RoleDecode {
			refused += rr.Engine.Rejected // after their prefill: the decode pool is smaller
		}
	}
	if cfg.RequestTimeout == 0 && (pf != dc+refused || (threshold == 0 && dc != res.Completed)) {
		t.Fatalf("seed %d: %d prefilled, %d decoded, %d refused by the decode engines, %d completed", seed, pf, dc, refused, res.Completed)
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSON(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPDInvariantsAndDeterminism(t *testing.T) {
	for seed := int64(1); seed <= 24; seed++ {
		a, b := pdRun(t, seed), pdRun(t, seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}

// A disaggregated request with no fabric is the caller's bug, reported.
func TestPDNeedsAFabric(t *testing.T) {
	pr := constPricer{step: time.Millisecond}
	cfg := Config{Pools: []Pool{
		{Name: "p", Replicas: 1, Role: router.RolePrefill, Engine: engCfg(), Pricer: pr},
		{Name: "d", Replicas: 1, Role: router.RoleDecode, Engine: engCfg(), Pricer: pr},
	}, Router: &pdRouter{nPre: 1}}
	if _, err := Run(cfg, fixed(1, 100, 5), newRec(t, false)); err == nil {
		t.Fatal("no error")
	}
}

// Replicas are packed pool by pool; one that does not fit in what is left
// of a node starts on the next.
func TestPlacementPacksPoolByPool(t *testing.T) {
	eps := []endpoint{{poolIdx: 0, n: 1}, {poolIdx: 1, n: 1}, {poolIdx: 1, n: 1}, {poolIdx: 2, n: 2}, {poolIdx: 3, n: 1}}
	got := placement(eps, []int{1, 4, 2, 16}, 8)
	pl := func(n, g, w int) fabric.Place { return fabric.Place{Node: n, GPU: g, GPUs: w} }
	want := []fabric.Place{pl(0, 0, 1), pl(0, 1, 4), pl(1, 0, 4), pl(1, 4, 2), pl(1, 6, 2), pl(2, 0, 16)}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// pdPair runs reqs against one prefill and one decode replica (steps of
// step, transfers of lat) and returns the result, the recorder's summary
// and every engine that stepped.
func pdPair(t *testing.T, pre, dec engine.Config, step, lat, timeout time.Duration, src *listSource) (Result, *metrics.Result, []*engine.Engine) {
	t.Helper()
	pr := constPricer{step: step}
	var engs []*engine.Engine
	c := check(&pdRouter{nPre: 1})
	cfg := Config{Pools: []Pool{
		{Name: "p", Replicas: 1, Role: router.RolePrefill, Engine: pre, Pricer: pr, KVBlockBytes: 1 << 20},
		{Name: "d", Replicas: 1, Role: router.RoleDecode, Engine: dec, Pricer: pr, KVBlockBytes: 1 << 20},
	}, Router: c, Transfers: &linkTransfers{lat: lat, bw: 1e18}, RequestTimeout: timeout,
		AfterStep: func(_ time.Duration, e *engine.Engine) {
			if !slices.Contains(engs, e) {
				engs = append(engs, e)
			}
		}}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.drained(); err != nil {
		t.Fatal(err)
	}
	for _, e := range engs {
		if e.HeldBlocks() != 0 || e.Kept() != 0 || e.Loading() != 0 || e.Waiting() != 0 || e.Running() != 0 {
			t.Fatalf("an engine ended holding %d blocks (%d kept, %d loading, %d waiting, %d running)", e.HeldBlocks(), e.Kept(), e.Loading(), e.Waiting(), e.Running())
		}
	}
	return res, rec.Summarize(metrics.SummaryInput{Duration: res.Duration}), engs
}

// A client timeout cancels a disaggregated request wherever it is: in the
// prefill engine's step, queued there, or at the decode engine waiting
// for its KV; every block is freed and every request ends once.
func TestPDCancelledAtEveryHop(t *testing.T) {
	one := engCfg()
	one.MaxNumSeqs = 1
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		n       int
		want    int64 // timed out
	}{
		{"in the prefill step", 30 * time.Millisecond, 1, 1},
		{"in the prefill step and queued behind it", 40 * time.Millisecond, 2, 2},
		{"waiting for its KV", 120 * time.Millisecond, 1, 1}, // prefill ends at 50, KV at 150
		{"none", 400 * time.Millisecond, 2, 0},
	} {
		res, _, _ := pdPair(t, one, engCfg(), 50*time.Millisecond, 100*time.Millisecond, tc.timeout, fixed(tc.n, 100, 3))
		if res.TimedOut != tc.want || res.Completed != int64(tc.n)-tc.want {
			t.Errorf("%s: %d timed out, %d completed; want %d timed out", tc.name, res.TimedOut, res.Completed, tc.want)
		}
	}
}

// A request the prefill engine refuses fails with its reason (the sidecar
// returns the prefill's error); one only the decode engine refuses fails
// after its prefill, and the prefill engine frees the blocks it kept.
func TestPDRefusals(t *testing.T) {
	tiny, short := engCfg(), engCfg()
	tiny.MaxModelLen = 100  // 100 + 1 does not fit
	short.MaxModelLen = 104 // 100 + 1 fits, 100 + 5 does not
	for _, tc := range []struct {
		name     string
		pre, dec engine.Config
		steps    int64
	}{
		{"at the prefill engine", tiny, engCfg(), 0},
		{"at the decode engine", engCfg(), short, 1},
	} {
		res, sum, _ := pdPair(t, tc.pre, tc.dec, 10*time.Millisecond, 0, 0, fixed(1, 100, 5))
		if res.Rejected != 1 || len(res.Failures) != 1 || !strings.Contains(res.Failures[0].Example, "max_model_len") || sum.Failed != 1 {
			t.Errorf("%s: rejected %d, failures %+v", tc.name, res.Rejected, res.Failures)
		}
		if res.Replicas[0].TimedSteps != tc.steps {
			t.Errorf("%s: the prefill engine ran %d steps, want %d", tc.name, res.Replicas[0].TimedSteps, tc.steps)
		}
	}
}

// A disaggregated request with a free transfer takes exactly one step
// more than the same request aggregated: the decode engine's recompute of
// the last prompt token; its output tokens come at the same pace.
func TestPDIsAggregatedPlusOneStep(t *testing.T) {
	pr := constPricer{step: 10 * time.Millisecond}
	rec := newRec(t, true)
	agg, err := Run(Config{Engine: engCfg(), Pricer: pr}, fixed(1, 1000, 20), rec)
	if err != nil {
		t.Fatal(err)
	}
	as := rec.Summarize(metrics.SummaryInput{Duration: agg.Duration})
	pd, ps, _ := pdPair(t, engCfg(), engCfg(), 10*time.Millisecond, 0, 0, fixed(1, 1000, 20))
	if pd.Duration-agg.Duration != 10*time.Millisecond || math.Abs(ps.TTFT.Mean-as.TTFT.Mean-10) > 1e-9 || math.Abs(ps.TPOT.Mean-as.TPOT.Mean) > 1e-9 {
		t.Fatalf("aggregated %v TTFT %v TPOT %v; disaggregated %v TTFT %v TPOT %v", agg.Duration, as.TTFT.Mean, as.TPOT.Mean, pd.Duration, ps.TTFT.Mean, ps.TPOT.Mean)
	}
}
