package cluster

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"blis/client"
	"blis/engine"
	"blis/metrics"
	"blis/workload"
)

const ms = time.Millisecond

// sessionTurns builds the requests of one linear session: turn k has new
// input in[k] (its own segment), output out[k] and delay before it.
func sessionTurns(sid uint64, segBase uint64, delay time.Duration, in, out []int) []workload.Request {
	var rs []workload.Request
	for k := range in {
		r := workload.Request{InputLen: in[k], OutputLen: out[k], Prompt: seg(segBase+uint64(k), in[k]),
			SessionID: sid, Turn: k, Final: k == len(in)-1}
		if k > 0 {
			r.PrevContext, r.Delay = true, delay
		}
		rs = append(rs, r)
	}
	return rs
}

func source(parts ...[]workload.Request) *listSource {
	s := &listSource{}
	for _, p := range parts {
		s.reqs = append(s.reqs, p...)
	}
	for i := range s.reqs {
		s.reqs[i].Index = int64(i)
	}
	return s
}

func starts(sum *metrics.Result) []time.Duration {
	var out []time.Duration
	for _, r := range sum.Requests {
		out = append(out, r.Start)
	}
	return out
}

func sameDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func runCase(t *testing.T, cfg Config, src workload.Source) (Result, *metrics.Result) {
	t.Helper()
	if cfg.Engine == (engine.Config{}) {
		cfg.Engine = engCfg()
	}
	if cfg.Pricer == nil {
		cfg.Pricer = constPricer{step: 10 * ms}
	}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	return res, rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
}

// Two lanes, three trajectories, 10 ms steps. Lane 0 plays T1 (two turns,
// 100 ms apart), lane 1 plays T2 (three output tokens), then T3 (two turns,
// 50 ms apart) once T2 has drained:
//
//	T1.0  0 → 20      T2.0  0 → 30
//	T3.0  30 → 40     T3.1  40+50 = 90 → 100
//	T1.1  20+100 = 120 → 140
//
// vllm bench's per-request cap of 2 sends T3.0 at 20 instead, when the
// first slot frees.
func TestLanesReplayOneTrajectoryAtATime(t *testing.T) {
	mk := func() *listSource {
		return source(
			sessionTurns(1, 100, 100*ms, []int{10, 5}, []int{2, 2}),
			sessionTurns(2, 200, 0, []int{10}, []int{3}),
			sessionTurns(3, 300, 50*ms, []int{10, 5}, []int{1, 1}),
		)
	}
	res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 2}, mk())
	if want := []time.Duration{0, 0, 30 * ms, 90 * ms, 120 * ms}; !sameDurations(starts(sum), want) {
		t.Fatalf("lanes: starts %v, want %v", starts(sum), want)
	}
	if res.Duration != 140*ms || res.Sent != 5 || res.Completed != 5 || res.Trajectories != 3 {
		t.Fatalf("lanes: %+v", res)
	}
	// T1.1 carries T1.0's prompt and output: 10 + 2 + 5.
	if got := sum.Requests[4].InputTokens; got != 17 {
		t.Errorf("T1.1 input %d, want 17", got)
	}

	_, sum = runCase(t, Config{MaxConcurrency: 2}, mk())
	// By source index: T1.0, T1.1, T2.0, T3.0, T3.1.
	if want := []time.Duration{0, 120 * ms, 0, 20 * ms, 30*ms + 50*ms}; !sameDurations(starts(sum), want) {
		t.Fatalf("per-request cap: starts %v, want %v", starts(sum), want)
	}
}

// A sub-agent fan-out runs on its parent's lane: one lane, two branches in
// flight at once; the next trajectory starts only when the whole tree has
// drained.
func TestLanesBranchesShareTheirLane(t *testing.T) {
	root := sessionTurns(1, 100, 0, []int{10, 5}, []int{2, 2})
	root[1].WaitBranches = 2
	b1 := workload.Request{InputLen: 8, OutputLen: 2, Prompt: seg(150, 8), SessionID: 2, ParentSession: 1, ParentTurn: 0, Final: true}
	b2 := workload.Request{InputLen: 8, OutputLen: 4, Prompt: seg(160, 8), SessionID: 3, ParentSession: 1, ParentTurn: 0, Final: true, PrevContext: true}
	src := source(root[:1], []workload.Request{b1, b2}, root[1:], sessionTurns(4, 400, 0, []int{10}, []int{1}))
	res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 1}, src)
	// root.0 0→20; both branches 20→40 and 20→60; root.1 60→80; T2 80→90.
	if want := []time.Duration{0, 20 * ms, 20 * ms, 60 * ms, 80 * ms}; !sameDurations(starts(sum), want) {
		t.Fatalf("starts %v, want %v", starts(sum), want)
	}
	if sum.MaxConcurrentRequests != 2 || res.Duration != 90*ms {
		t.Fatalf("max concurrent %d, duration %v", sum.MaxConcurrentRequests, res.Duration)
	}
	// The forked branch starts from root.0's context (10 + 2) plus its 8.
	if got := sum.Requests[2].InputTokens; got != 20 {
		t.Errorf("forked branch input %d, want 20", got)
	}
}

// --warmup-requests-per-lane 2 with turn-0 starts: each lane's primer is its
// turn 0; when both are back (10 ms: warm-up requests ask for one token)
// the lanes send turn 1 with no delay (10 → 20), spending their budget. The
// timed phase starts at 20 ms; turn 2 keeps its 100 ms delay across the
// hand-off (120 ms, 100 ms into the timed phase), and lane 0 then takes T3.
func TestWarmupRequestsPerLane(t *testing.T) {
	src := source(
		sessionTurns(1, 100, 100*ms, []int{10, 5, 5}, []int{2, 2, 2}),
		sessionTurns(2, 200, 100*ms, []int{10, 5, 5}, []int{2, 2, 2}),
		sessionTurns(3, 300, 0, []int{10}, []int{1}),
	)
	res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 2, WarmupRequestsPerLane: 2}, src)
	if res.WarmupRequests != 4 || res.WarmupDuration != 20*ms || res.Sent != 3 || sum.Completed != 3 {
		t.Fatalf("result %+v", res)
	}
	if want := []time.Duration{100 * ms, 100 * ms, 120 * ms}; !sameDurations(starts(sum), want) {
		t.Fatalf("starts %v, want %v", starts(sum), want)
	}
	// Turn 2's context: turn 1's prompt (10+2+5: turn 0's one generated token
	// and the other token of its recorded response), turn 1's response
	// likewise, then 5 new: 24 tokens, the first block of which turn 1 left
	// in the prefix cache.
	if r := sum.Requests[0]; r.InputTokens != 24 || r.CachedTokens != 16 {
		t.Errorf("turn 2: input %d cached %d, want 24 and 16", r.InputTokens, r.CachedTokens)
	}
}

// --trajectory-start-min/max-ratio 0.5 on a four-turn trajectory starts it
// at turn 2: the primer carries turns 0–1 and their recorded responses and
// asks for one token; the profiled continuation (turn 3) follows at once
// when the primer is back.
func TestTrajectoryStartPrimer(t *testing.T) {
	src := source(sessionTurns(1, 100, time.Second, []int{10, 5, 5, 5}, []int{2, 2, 2, 2}))
	res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 1, TrajectoryStartMin: 0.5, TrajectoryStartMax: 0.5}, src)
	if res.WarmupRequests != 1 || res.WarmupDuration != 10*ms || res.Sent != 1 {
		t.Fatalf("result %+v", res)
	}
	// Primer: 10+2+5+2+5 = 24 tokens, its 2-token response; turn 3: 24+2+5.
	if r := sum.Requests[0]; r.Start != 0 || r.InputTokens != 31 || r.CachedTokens != 16 {
		t.Fatalf("turn 3: start %v input %d cached %d", r.Start, r.InputTokens, r.CachedTokens)
	}
}

// The trace idle-gap cap shortens every delay; the system idle cap moves
// the next release earlier only when nothing is in flight.
func TestIdleGapCaps(t *testing.T) {
	one := func() *listSource {
		return source(sessionTurns(1, 100, 10*time.Second, []int{10, 5}, []int{2, 2}))
	}
	_, sum := runCase(t, Config{TraceIdleGapCap: time.Second}, one())
	if got := sum.Requests[1].Start; got != 20*ms+time.Second {
		t.Errorf("trace cap: turn 1 at %v, want 1.02s", got)
	}
	res, sum := runCase(t, Config{SystemIdleGapCap: 2 * time.Second}, one())
	if got := sum.Requests[1].Start; got != 20*ms+2*time.Second || res.Duration != 2040*ms ||
		res.SystemIdle.Jumps != 1 || res.SystemIdle.Skipped != 8*time.Second {
		t.Errorf("system cap: turn 1 at %v, duration %v, idle %+v", got, res.Duration, res.SystemIdle)
	}
	// With a 500-token answer in flight until 5 s, the system is idle only
	// from 5 s: turn 1 goes at 7 s instead of 10.02 s.
	busy := source(sessionTurns(1, 100, 10*time.Second, []int{10, 5}, []int{2, 2}),
		sessionTurns(2, 200, 0, []int{10}, []int{500}))
	res, sum = runCase(t, Config{SystemIdleGapCap: 2 * time.Second}, busy)
	if got := sum.Requests[1].Start; got != 7*time.Second || res.SystemIdle.Skipped != 3020*ms {
		t.Errorf("system cap with a request in flight: turn 1 at %v, skipped %v", got, res.SystemIdle.Skipped)
	}
	// In lanes the same caps apply to each lane's trajectory.
	res, sum = runCase(t, Config{Mode: Lanes, MaxConcurrency: 1, TraceIdleGapCap: time.Second}, one())
	if got := sum.Requests[1].Start; got != 20*ms+time.Second {
		t.Errorf("lanes trace cap: turn 1 at %v", got)
	}
}

// In lanes the trace idle-gap cap bounds the time a whole tree is idle, not
// each delay: after root turn 0 (done at 20 ms) branch A waits 100 ms and
// branch B 5 s. A runs 120 → 140 ms while B is pending, so the tree is idle
// only from 140 ms: B goes at 1.14 s (a cap on B's own delay would send it
// at 1.02 s), and root turn 1 joins both at 1.16 s.
func TestTraceIdleGapCapPerTree(t *testing.T) {
	root := sessionTurns(1, 100, 0, []int{10, 5}, []int{2, 2})
	root[1].WaitBranches = 2
	a := workload.Request{InputLen: 8, OutputLen: 2, Prompt: seg(150, 8), SessionID: 2, ParentSession: 1, Delay: 100 * ms, Final: true}
	b := workload.Request{InputLen: 8, OutputLen: 2, Prompt: seg(160, 8), SessionID: 3, ParentSession: 1, Delay: 5 * time.Second, Final: true}
	res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 1, TraceIdleGapCap: time.Second},
		source(root[:1], []workload.Request{a, b}, root[1:]))
	if want := []time.Duration{0, 120 * ms, 1140 * ms, 1160 * ms}; !sameDurations(starts(sum), want) {
		t.Fatalf("starts %v, want %v", starts(sum), want)
	}
	if res.TraceIdle.Jumps != 1 || res.TraceIdle.Skipped != 5020*ms-1140*ms {
		t.Fatalf("trace idle %+v", res.TraceIdle)
	}
}

// --benchmark-duration 250 ms: requests released at 0, 100, 200 ms go out,
// those at 300 and 400 do not. The one sent at 200 ends at 300: within a
// 1 s grace period it is recorded, with none it is dropped.
func TestBenchmarkDurationCutOff(t *testing.T) {
	mk := func() *listSource {
		s := fixed(5, 10, 10)
		for i := range s.reqs {
			s.reqs[i].Arrival = time.Duration(i) * 100 * ms
		}
		return s
	}
	res, sum := runCase(t, Config{BenchmarkDuration: 250 * ms, GracePeriod: time.Second}, mk())
	if res.Sent != 3 || sum.Completed != 3 || res.Unfinished != 0 || res.Duration != 300*ms {
		t.Fatalf("grace 1s: %+v", res)
	}
	res, sum = runCase(t, Config{BenchmarkDuration: 250 * ms}, mk())
	if res.Sent != 3 || sum.Completed != 2 || res.Unfinished != 1 || res.Duration != 200*ms {
		t.Fatalf("no grace: %+v", res)
	}

	// Lanes stop taking trajectories too: one lane, 20 ms trajectories,
	// the corpus replayed from its start while the 100 ms window is open.
	one := func() (workload.Source, error) {
		return source(sessionTurns(1, 100, 0, []int{64}, []int{2})), nil
	}
	first, _ := one()
	res, _ = runCase(t, Config{Mode: Lanes, MaxConcurrency: 1, BenchmarkDuration: 100 * ms, Reopen: one}, first)
	if res.Sent != 5 || res.Trajectories != 5 {
		t.Fatalf("lanes window: %+v", res)
	}
}

// A request not complete 300 ms after it was sent is cancelled and counted
// failed; its slot goes to the next request at once, and the engine stops
// the cancelled one at its next token.
func TestRequestTimeout(t *testing.T) {
	src := fixed(2, 10, 100)
	src.reqs[1].OutputLen = 2
	check := func(_ time.Duration, e *engine.Engine) {
		if e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() {
			t.Fatal("KV conservation broken")
		}
	}
	res, sum := runCase(t, Config{MaxConcurrency: 1, RequestTimeout: 300 * ms, AfterStep: check}, src)
	if res.TimedOut != 1 || sum.Failed != 1 || sum.Completed != 1 {
		t.Fatalf("result %+v, summary failed %d completed %d", res, sum.Failed, sum.Completed)
	}
	if r := sum.Requests[0]; r.Success || !strings.Contains(r.Error, "timeout") || r.End != 300*ms {
		t.Errorf("timed-out request: %+v", r)
	}
	if r := sum.Requests[1]; r.Start != 300*ms || r.Latency != 20*ms {
		t.Errorf("next request: start %v latency %v, want 300ms and 20ms", r.Start, r.Latency)
	}
	if res.Engine.Steps != 32 {
		t.Errorf("engine steps %d: the cancelled request should stop one step after its timeout", res.Engine.Steps)
	}
}

// A turn the engine refuses (the context outgrew max-model-len) ends its
// trajectory in lanes: its later turns are not sent, and the lane moves on.
func TestLanesStopARefusedTrajectory(t *testing.T) {
	src := source(sessionTurns(1, 100, 0, []int{10, 5000, 5}, []int{2, 2, 2}),
		sessionTurns(2, 200, 0, []int{10}, []int{2}))
	res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 1}, src)
	if res.Rejected != 1 || res.Sent != 3 || sum.Completed != 2 {
		t.Fatalf("result %+v", res)
	}
	if got := sum.Requests[2].Start; got != 20*ms {
		t.Errorf("next trajectory at %v, want 20ms (right after the refusal)", got)
	}
}

// Cache busting: one lane replays a one-turn trajectory (a 32-token system
// prompt, 32 new tokens) five times. Without a marker every replay hits the
// cache (3 full blocks); first_turn_prefix keeps the system prompt shared
// (2 blocks); system_prefix shares nothing.
func TestCacheBustMarksEachPlay(t *testing.T) {
	for _, c := range []struct {
		bust          CacheBust
		input, cached int
	}{{CacheBustNone, 64, 48}, {CacheBustFirstTurnPrefix, 64 + client.MarkerTokens, 32}, {CacheBustSystemPrefix, 64 + client.MarkerTokens, 0}} {
		one := func() (workload.Source, error) {
			r := workload.Request{InputLen: 64, OutputLen: 2, SessionID: 1, Final: true, SystemSegments: 1,
				Prompt: []workload.Segment{{ID: 7, Len: 32}, {ID: 8, Len: 32}}}
			return source([]workload.Request{r}), nil
		}
		first, _ := one()
		res, sum := runCase(t, Config{Mode: Lanes, MaxConcurrency: 1, BenchmarkDuration: 100 * ms, Reopen: one, CacheBust: c.bust}, first)
		if res.Sent != 5 {
			t.Fatalf("%v: sent %d", c.bust, res.Sent)
		}
		for _, r := range sum.Requests[1:] {
			if r.InputTokens != c.input || r.CachedTokens != c.cached {
				t.Errorf("bust %v: replay input %d cached %d, want %d and %d", c.bust, r.InputTokens, r.CachedTokens, c.input, c.cached)
			}
		}
	}
}

func agenticRun(t *testing.T, seed int64) ([]byte, Result) {
	spec := workload.TraceSpec{DatasetName: "agentic", Seed: seed, Agentic: workload.AgenticSpec{
		NumSessions: 8, SessionRate: 1, SystemPromptTokens: 600, MeanTurns: 8, MaxContextTokens: 30000,
		SubagentProb: 0.3, ForkProb: 0.5, SubagentSystemPromptTokens: 300}}
	open := func() (workload.Source, error) { return workload.Open(spec) }
	src, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ec := engCfg()
	ec.MaxModelLen, ec.NumGPUBlocks, ec.MaxNumBatchedTokens = 32768, 3000, 2048
	cfg := Config{Engine: ec, Pricer: constPricer{step: 5 * ms, perToken: 20 * time.Microsecond}, Seed: seed,
		Mode: Lanes, MaxConcurrency: 3, WarmupRequestsPerLane: 4, TrajectoryStartMin: 0.25, TrajectoryStartMax: 0.75,
		TraceIdleGapCap: 3 * time.Second, SystemIdleGapCap: 500 * ms, CacheBust: CacheBustFirstTurnPrefix,
		BenchmarkDuration: 40 * time.Second, GracePeriod: 2 * time.Second, RequestTimeout: 5 * time.Second, Reopen: open,
		AfterStep: func(_ time.Duration, e *engine.Engine) {
			if e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() {
				t.Fatalf("KV conservation broken")
			}
		}}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if int64(sum.Completed+sum.Failed) != res.Sent-res.Unfinished {
		t.Fatalf("seed %d: %d completed + %d failed != %d sent − %d unfinished", seed, sum.Completed, sum.Failed, res.Sent, res.Unfinished)
	}
	for _, r := range sum.Requests {
		if r.Start >= 40*time.Second {
			t.Fatalf("seed %d: request %d sent at %v, after the window", seed, r.Index, r.Start)
		}
		if r.Success && (r.TTFT <= 0 || r.Latency < r.TTFT) {
			t.Fatalf("seed %d: request %d causality: ttft %v latency %v", seed, r.Index, r.TTFT, r.Latency)
		}
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSON(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// Agentic sessions with sub-agents through every lanes feature: requests
// are conserved, none is sent after the window, KV blocks are conserved,
// and the same seed gives byte-identical results.
func TestLanesAgenticInvariantsAndDeterminism(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		a, res := agenticRun(t, seed)
		b, _ := agenticRun(t, seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: outputs differ between identical runs", seed)
		}
		if res.Sent == 0 || res.WarmupRequests == 0 || res.Trajectories <= 3 {
			t.Fatalf("seed %d: a degenerate run: %+v", seed, res)
		}
	}
}

// In requests mode each session start gets its own marker, which its later
// turns carry in their context.
func TestCacheBustPerRequestSessions(t *testing.T) {
	mk := func() *listSource {
		var parts [][]workload.Request
		for s := uint64(1); s <= 2; s++ {
			turns := sessionTurns(s, 100*s, 0, []int{32, 16}, []int{2, 2})
			turns[0].InputLen, turns[0].SystemSegments = 64, 1
			turns[0].Prompt = []workload.Segment{{ID: 7, Len: 32}, {ID: 100 * s, Len: 32}}
			parts = append(parts, turns)
		}
		return source(parts...)
	}
	for _, c := range []struct {
		bust   CacheBust
		cached int // the second session's first turn
	}{{CacheBustFirstTurnPrefix, 32}, {CacheBustSystemPrefix, 0}} {
		_, sum := runCase(t, Config{MaxConcurrency: 1, CacheBust: c.bust}, mk())
		// By source index: s1.0, s1.1, s2.0, s2.1.
		if r := sum.Requests[2]; r.InputTokens != 64+client.MarkerTokens || r.CachedTokens != c.cached {
			t.Errorf("bust %v: second session start input %d cached %d", c.bust, r.InputTokens, r.CachedTokens)
		}
		if r := sum.Requests[3]; r.InputTokens != 64+client.MarkerTokens+2+16 || r.CachedTokens != 80 {
			t.Errorf("bust %v: follow-up input %d cached %d, want its context (80) cached", c.bust, r.InputTokens, r.CachedTokens)
		}
	}
}

// clientRun draws a client configuration (either mode, every setting on or
// off) and a workload (agentic sessions, or a Mooncake conversation trace
// with sessions that never say they are over) and checks what must always
// hold.
func clientRun(t *testing.T, seed int64) []byte {
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	spec := workload.TraceSpec{DatasetName: "agentic", Seed: seed, Agentic: workload.AgenticSpec{
		NumSessions: 1 + rng.IntN(10), SessionRate: rng.Float64(), SystemPromptTokens: rng.IntN(2000), MeanTurns: 1 + 10*rng.Float64(),
		MaxContextTokens: 1000 + rng.IntN(40000), SubagentProb: rng.Float64() * 0.5, ForkProb: rng.Float64(), SubagentSystemPromptTokens: rng.IntN(800)}}
	if rng.IntN(4) == 0 {
		spec = workload.TraceSpec{InputFile: "../workload/testdata/mooncake_conversation_head200.jsonl", CustomDatasetType: "mooncake_trace", Seed: seed, NumPrompts: 1 + rng.IntN(200)}
	}
	open := func() (workload.Source, error) { return workload.Open(spec) }
	src, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ec := engCfg()
	ec.MaxModelLen, ec.NumGPUBlocks, ec.MaxNumBatchedTokens = 1000+rng.IntN(40000), 100+rng.IntN(4000), 256+rng.IntN(4096)
	ec.MaxNumSeqs = 1 + rng.IntN(32)
	cfg := Config{Engine: ec, Pricer: constPricer{step: time.Duration(1+rng.IntN(10)) * ms, perToken: time.Duration(rng.IntN(50)) * time.Microsecond}, Seed: seed,
		MaxConcurrency: 1 + rng.IntN(6), Reopen: open, CacheBust: CacheBust(rng.IntN(3))}
	if rng.IntN(3) > 0 {
		cfg.Mode = Lanes
		cfg.WarmupRequestsPerLane = rng.IntN(5)
		a, b := rng.Float64(), rng.Float64()
		if rng.IntN(2) == 0 {
			a, b = 0, 0
		}
		cfg.TrajectoryStartMin, cfg.TrajectoryStartMax = min(a, b), max(a, b)
	} else {
		cfg.NumWarmups = rng.IntN(3)
		if rng.IntN(2) == 0 {
			cfg.MaxConcurrency = 0
		}
	}
	if rng.IntN(2) == 0 {
		cfg.TraceIdleGapCap = time.Duration(rng.IntN(5000)) * ms
	}
	if rng.IntN(2) == 0 {
		cfg.SystemIdleGapCap = time.Duration(rng.IntN(3000)) * ms
	}
	if rng.IntN(2) == 0 {
		cfg.BenchmarkDuration = time.Duration(1+rng.IntN(60000)) * ms
		cfg.GracePeriod = time.Duration(rng.IntN(3000)-500) * ms
	}
	if rng.IntN(2) == 0 {
		cfg.RequestTimeout = time.Duration(1+rng.IntN(5000)) * ms
	}
	if rng.IntN(2) == 0 {
		cfg.FrontendLatency = time.Duration(rng.IntN(50)) * ms
	}
	cfg.AfterStep = func(_ time.Duration, e *engine.Engine) {
		if e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() {
			t.Fatalf("seed %d: KV conservation", seed)
		}
	}
	rec := newRec(t, true)
	res, err := Run(cfg, src, rec)
	if err != nil {
		t.Fatalf("seed %d: %v (cfg %+v)", seed, err, cfg)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	if int64(sum.Completed+sum.Failed) != res.Sent-res.Unfinished {
		t.Fatalf("seed %d: %d+%d != %d-%d (%+v)", seed, sum.Completed, sum.Failed, res.Sent, res.Unfinished, res)
	}
	for _, r := range sum.Requests {
		if cfg.BenchmarkDuration > 0 && r.Start >= cfg.BenchmarkDuration {
			t.Fatalf("seed %d: sent at %v after window %v", seed, r.Start, cfg.BenchmarkDuration)
		}
		if r.Start < 0 || (r.Success && (r.TTFT <= 0 || r.Latency < r.TTFT)) {
			t.Fatalf("seed %d: causality %+v", seed, r)
		}
		if cfg.RequestTimeout > 0 && r.Success && r.Latency > cfg.RequestTimeout {
			t.Fatalf("seed %d: latency %v over timeout %v", seed, r.Latency, cfg.RequestTimeout)
		}
	}
	var buf bytes.Buffer
	if err := metrics.WriteJSON(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Random clients and workloads: no error, requests conserved (recorded or
// unfinished at the grace period's end), none sent after the window, none
// recorded successful past its timeout, causality, KV blocks conserved, and
// the same seed gives byte-identical results.
func TestClientRandomisedInvariants(t *testing.T) {
	for seed := int64(1); seed <= 60; seed++ {
		if a, b := clientRun(t, seed), clientRun(t, seed); !bytes.Equal(a, b) {
			t.Fatalf("seed %d: outputs differ between identical runs", seed)
		}
	}
}
