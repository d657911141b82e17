package engine

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"blis/catalog"
	"blis/kernel"
	"blis/specdecode"
	"blis/workload"
)

// scfg is cfg with speculative decoding of len(rates) drafts.
func scfg(budget, seqs, blocks, bs int, rates []float64, mode specdecode.Mode, lookahead bool) Config {
	c := cfg(budget, seqs, blocks, bs)
	sched, err := specdecode.FromRates(rates)
	if err != nil {
		panic(err)
	}
	c.Spec = Speculation{NumTokens: len(rates), Lookahead: lookahead, Acceptance: sched, Mode: mode, Seed: 1}
	return c
}

// runOne serves r alone to the end and returns its decode steps (steps
// after the one that produced its first token) and the samples' tokens.
func runOne(t *testing.T, e *Engine, r *Request) (decodeSteps int, tokens []int) {
	t.Helper()
	var now time.Duration
	if !e.Add(r, now) {
		t.Fatalf("refused: %s", r.RejectReason)
	}
	for r.Status != StatusFinished {
		b, ss := step(t, e, &now)
		if b.NumDecode == 1 {
			decodeSteps++
		}
		for _, s := range ss {
			tokens = append(tokens, s.Tokens)
		}
		if r.Status == StatusRunning && r.NumOutput > 0 && r.NumComputed != r.NumTokens()-1 {
			t.Fatalf("after a step: computed %d, tokens %d: the rejected drafts did not roll back", r.NumComputed, r.NumTokens())
		}
	}
	return decodeSteps, tokens
}

// TestSpecStepsFollowTheMeanAcceptanceLength: at concurrency 1 every
// decode step emits 1 + accepted tokens, so a request of M output tokens
// takes (M − 1) / (1 + Σu) decode steps; replay sampling makes it exact
// within a step or two.
func TestSpecStepsFollowTheMeanAcceptanceLength(t *testing.T) {
	for _, tc := range []struct {
		rates []float64
		out   int
	}{
		{[]float64{0.8, 0.6, 0.4}, 2801},
		{[]float64{0.7296, 0.5208, 0.3545}, 2000},
		{[]float64{0.5}, 1501},
		{[]float64{1, 1, 1, 1}, 1001},
	} {
		e, err := New(scfg(8192, 4, 4096, 16, tc.rates, specdecode.Replay, true))
		if err != nil {
			t.Fatal(err)
		}
		steps, tokens := runOne(t, e, req(1, tc.out, seg(1, 64)))
		mean := 1.0
		for _, u := range tc.rates {
			mean += u
		}
		want := float64(tc.out-1) / mean
		if math.Abs(float64(steps)-want) > 2 {
			t.Errorf("rates %v, %d tokens: %d decode steps, want %.1f ± 2", tc.rates, tc.out, steps, want)
		}
		total := 0
		for _, n := range tokens {
			if n < 1 || n > 1+len(tc.rates) {
				t.Fatalf("a chunk of %d tokens with %d drafts", n, len(tc.rates))
			}
			total += n
		}
		if total != tc.out || tokens[0] != 1 {
			t.Errorf("rates %v: chunks %v… sum to %d, want %d with a first chunk of 1", tc.rates, tokens[:min(5, len(tokens))], total, tc.out)
		}
		st := e.Stats()
		if st.SpecDrafts != int64(steps) || st.SpecDraftTokens != int64(steps*len(tc.rates)) {
			t.Errorf("stats %d drafts %d draft tokens, want %d and %d", st.SpecDrafts, st.SpecDraftTokens, steps, steps*len(tc.rates))
		}
		for j := range tc.rates {
			if got := float64(st.SpecAcceptedPerPos[j]) / float64(st.SpecDrafts); math.Abs(got-tc.rates[j]) > 3/float64(st.SpecDrafts)+1e-9 {
				t.Errorf("rates %v: position %d accepted %.4f of drafts", tc.rates, j+1, got)
			}
		}
	}
}

// TestSpecZeroAcceptance: drafts that are never accepted emit one token
// per step, never taking more steps than without speculation.
func TestSpecZeroAcceptance(t *testing.T) {
	plain, _ := New(cfg(8192, 4, 4096, 16))
	base, _ := runOne(t, plain, req(1, 300, seg(1, 40)))
	for _, mode := range []specdecode.Mode{specdecode.Random, specdecode.Replay} {
		e, _ := New(scfg(8192, 4, 4096, 16, []float64{0, 0, 0}, mode, true))
		steps, tokens := runOne(t, e, req(1, 300, seg(1, 40)))
		if steps != base {
			t.Errorf("%v: %d decode steps, %d without speculation", mode, steps, base)
		}
		for _, n := range tokens {
			if n != 1 {
				t.Fatalf("%v: a chunk of %d tokens with nothing accepted", mode, n)
			}
		}
		if st := e.Stats(); st.SpecAccepted != 0 || st.SpecDraftTokens != 3*int64(steps) {
			t.Errorf("%v: stats %+v", mode, st)
		}
	}
}

func TestSpecBatchShape(t *testing.T) {
	e, _ := New(scfg(8192, 4, 4096, 16, []float64{0, 0, 0}, specdecode.Random, true))
	var now time.Duration
	a, b := req(1, 10, seg(1, 20)), req(2, 10, seg(2, 30))
	e.Add(a, now)
	e.Add(b, now)
	bt, _ := step(t, e, &now) // both prefill
	if bt.SpecTokens != 0 || bt.SpecRows != 0 || bt.Sampled != 2 {
		t.Fatalf("prefill step: %+v", bt)
	}
	bt, ss := step(t, e, &now)
	want := kernel.Batch{NumDecode: 2, DecodeTokens: 8, DecodeContext: 21 + 31, Sampled: 2, SpecTokens: 6, SpecRows: 2}
	if bt != want {
		t.Fatalf("decode step: %+v, want %+v", bt, want)
	}
	if len(ss) != 2 || ss[0].Tokens != 1 || ss[0].First {
		t.Fatalf("samples %+v", ss)
	}
}

// TestSpecBudgetTruncates: drafts count against --max-num-batched-tokens;
// a row that does not fit verifies fewer.
func TestSpecBudgetTruncates(t *testing.T) {
	e, _ := New(scfg(6, 4, 4096, 16, []float64{1, 1, 1, 1}, specdecode.Random, false))
	var now time.Duration
	a, b := req(1, 50, seg(1, 3)), req(2, 50, seg(2, 3))
	e.Add(a, now)
	e.Add(b, now)
	step(t, e, &now) // prefill 3 + 3
	bt, ss := step(t, e, &now)
	// a: 1 + 4 drafts = 5 tokens; b: the one left, no draft.
	if bt.DecodeTokens != 6 || bt.SpecTokens != 4 || bt.SpecRows != 1 || bt.NumDecode != 2 {
		t.Fatalf("truncated step: %+v", bt)
	}
	if ss[0].Tokens != 5 || ss[1].Tokens != 1 {
		t.Fatalf("chunks %d and %d, want 5 and 1", ss[0].Tokens, ss[1].Tokens)
	}
	if st := e.Stats(); st.SpecDrafts != 1 || st.SpecDraftTokens != 4 {
		t.Fatalf("stats %+v", st)
	}
	// Next step a gets 1 + 4 again and b the last token: the budget of 6.
	bt, _ = step(t, e, &now)
	if bt.DecodeTokens != 6 || bt.SpecTokens != 4 {
		t.Fatalf("second step: %+v", bt)
	}
	// A budget smaller than 1 + k on its own.
	e, _ = New(scfg(3, 4, 4096, 16, []float64{1, 1, 1, 1}, specdecode.Random, false))
	now = 0
	r := req(1, 50, seg(1, 3))
	e.Add(r, now)
	step(t, e, &now)
	bt, ss = step(t, e, &now)
	if bt.DecodeTokens != 3 || bt.SpecTokens != 2 || ss[0].Tokens != 3 || r.NumComputed != r.NumTokens()-1 {
		t.Fatalf("budget 3: %+v, chunk %d, computed %d of %d", bt, ss[0].Tokens, r.NumComputed, r.NumTokens())
	}
}

// TestSpecMaxModelLenCapsDrafts: no draft may pass max_model_len − 1.
func TestSpecMaxModelLenCapsDrafts(t *testing.T) {
	c := scfg(8192, 4, 4096, 16, []float64{1, 1, 1, 1}, specdecode.Random, true)
	c.MaxModelLen = 20
	e, _ := New(c)
	var now time.Duration
	r := req(1, 7, seg(1, 12))
	e.Add(r, now)
	step(t, e, &now) // 12 prompt tokens, first token: 13 known, 12 computed
	bt, _ := step(t, e, &now)
	if bt.DecodeTokens != 5 {
		t.Fatalf("first decode: %+v", bt)
	}
	// 18 known, 17 computed: max_model_len − 1 − 17 = 2 tokens, one draft;
	// max_tokens leaves room for one.
	bt, ss := step(t, e, &now)
	if bt.DecodeTokens != 2 || bt.SpecTokens != 1 || ss[0].Tokens != 1 || !ss[0].Done {
		t.Fatalf("capped decode: %+v, chunk %+v", bt, ss[0])
	}
}

// TestSpecMaxTokensCapsTheChunk: a request finishing mid-chunk emits only
// what it needs; vLLM's metrics still count every accepted draft.
func TestSpecMaxTokensCapsTheChunk(t *testing.T) {
	e, _ := New(scfg(8192, 4, 4096, 16, []float64{1, 1, 1}, specdecode.Random, true))
	var now time.Duration
	r := req(1, 3, seg(1, 10))
	e.Add(r, now)
	step(t, e, &now)
	_, ss := step(t, e, &now)
	if len(ss) != 1 || ss[0].Tokens != 2 || !ss[0].Done || r.NumOutput != 3 || r.Status != StatusFinished {
		t.Fatalf("chunk %+v, outputs %d, status %v", ss, r.NumOutput, r.Status)
	}
	if st := e.Stats(); st.SpecAccepted != 3 {
		t.Fatalf("accepted %d, want 3", st.SpecAccepted)
	}
	if e.HeldBlocks() != 0 {
		t.Fatalf("%d blocks held", e.HeldBlocks())
	}
}

// TestSpecRegistersOnlyVerifiedBlocks: draft tokens' slots are allocated
// but their blocks enter the prefix cache only once the tokens are
// verified and known (vLLM caches min(computed + new, num_tokens)).
func TestSpecRegistersOnlyVerifiedBlocks(t *testing.T) {
	for _, rates := range [][]float64{{1, 1, 1}, {0.6, 0.3, 0.1}, {0, 0, 0}} {
		e, _ := New(scfg(8192, 4, 4096, 4, rates, specdecode.Random, true))
		var now time.Duration
		r := req(1, 60, seg(1, 6))
		e.Add(r, now)
		for r.Status != StatusFinished {
			var b kernel.Batch
			e.Schedule(now, &b)
			if got, want := r.kv.numCached, r.NumTokens()/4; got != want {
				t.Fatalf("rates %v: %d blocks registered with %d known tokens, want %d", rates, got, r.NumTokens(), want)
			}
			// Slots: the step's tokens and k lookahead.
			if need := cdiv(min(r.NumComputed+3, e.cfg.MaxModelLen), 4); r.NumOutput > 0 && len(r.kv.blocks) < need {
				t.Fatalf("rates %v: %d blocks for %d computed + 3 lookahead", rates, len(r.kv.blocks), r.NumComputed)
			}
			now += time.Millisecond
			e.Complete(now)
		}
	}
}

func TestSpecLookaheadSlots(t *testing.T) {
	for _, look := range []bool{false, true} {
		e, _ := New(scfg(8192, 4, 4096, 4, []float64{0, 0, 0}, specdecode.Random, look))
		var now time.Duration
		r := req(1, 10, seg(1, 8))
		e.Add(r, now)
		step(t, e, &now) // prefill: 8 tokens, 2 blocks (waiting requests get no lookahead)
		if len(r.kv.blocks) != 2 {
			t.Fatalf("lookahead %v: %d blocks after the prefill", look, len(r.kv.blocks))
		}
		var b kernel.Batch
		e.Schedule(now, &b) // decode: tokens 8..11, + 3 lookahead → 15 slots
		want := 3
		if look {
			want = 4
		}
		if len(r.kv.blocks) != want {
			t.Fatalf("lookahead %v: %d blocks, want %d", look, len(r.kv.blocks), want)
		}
	}
}

func TestSpecConfigValidation(t *testing.T) {
	c := scfg(64, 4, 64, 16, []float64{0.5, 0.2}, specdecode.Random, true)
	c.Spec.NumTokens = 3
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "ForK") {
		t.Errorf("mismatched schedule: %v", err)
	}
	c.Spec.NumTokens = specdecode.MaxPositions + 1
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "num_speculative_tokens") {
		t.Errorf("k too large: %v", err)
	}
}

// TestSpecRefusesWhatLookaheadCannotFit: a request whose last step's
// drafts and lookahead could never fit the pool is refused, not livelocked.
func TestSpecRefusesWhatLookaheadCannotFit(t *testing.T) {
	e, _ := New(scfg(8192, 4, 1+4, 4, []float64{1, 1, 1}, specdecode.Random, true))
	if why := e.Refusal(8, 9); why == "" { // 16 tokens fit 4 blocks, + 6 do not
		t.Fatal("accepted a request whose drafts cannot fit")
	}
	if why := e.Refusal(4, 7); why != "" {
		t.Fatalf("refused one that fits: %s", why)
	}
}

// specRun serves a random workload and returns its stats and every
// sample's (request, tokens, time) — the run's observable output.
func specRun(t *testing.T, trial int, seed, stream uint64, queue bool) (Stats, []int64) {
	rng := rand.New(rand.NewPCG(uint64(trial), 11))
	bs := []int{1, 4, 16}[rng.IntN(3)]
	k := 1 + rng.IntN(5)
	rates := make([]float64, k)
	u := 1.0
	for j := range rates {
		u *= rng.Float64()
		rates[j] = u
	}
	sched, _ := specdecode.FromRates(rates)
	c := Config{
		MaxNumSeqs:           1 + rng.IntN(16),
		MaxNumBatchedTokens:  16 + rng.IntN(256),
		EnableChunkedPrefill: true,
		EnablePrefixCaching:  rng.IntN(4) != 0,
		BlockSize:            bs,
		NumGPUBlocks:         2 + rng.IntN(400/bs+8),
		MaxModelLen:          512,
		AsyncScheduling:      trial%3 == 0,
		Spec: Speculation{NumTokens: k, Lookahead: rng.IntN(2) == 0, Acceptance: sched,
			Mode: specdecode.Mode(rng.IntN(2)), Seed: seed, Stream: stream, DropLastHitBlock: trial%5 < 2},
	}
	if queue {
		c.MaxConcurrentBatches = 2 + rng.IntN(3)
	}
	if trial%2 == 1 {
		kinds := []string{"s", "sf", "fs", "fss"}[rng.IntN(4)]
		c.KVCache = layout(1+rng.IntN(64), kinds)
		c.NumGPUBlocks *= len(kinds)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	n := 20 + rng.IntN(60)
	reqs := make([]*Request, n)
	for i := range reqs {
		segs := []workload.Segment{}
		if rng.IntN(2) == 0 {
			segs = append(segs, seg(uint64(1+rng.IntN(3)), 1+rng.IntN(100)))
		}
		segs = append(segs, seg(uint64(1000+i), 1+rng.IntN(150)))
		reqs[i] = req(int64(i), 1+rng.IntN(60), segs...)
	}
	var out []int64
	ended := map[int64]int{}
	got := map[int64]int{}
	var now time.Duration
	next := 0
	for steps := 0; ; steps++ {
		if steps > 100000 {
			t.Fatalf("trial %d: no progress (livelock?)", trial)
		}
		for j := rng.IntN(4); j > 0 && next < n; j-- {
			r := reqs[next]
			next++
			if !e.Add(r, now) {
				ended[r.ID]++
			}
		}
		if !e.HasWork() && e.InFlight() == 0 {
			if next == n {
				break
			}
			now += time.Millisecond
			continue
		}
		if !e.Busy() && e.HasWork() {
			var b kernel.Batch
			rows := e.Schedule(now, &b)
			if rows == 0 && e.InFlight() == 0 {
				t.Fatalf("trial %d: work queued but nothing scheduled", trial)
			}
			if b.Tokens() > c.MaxNumBatchedTokens || b.NumPrefill+b.NumDecode > c.MaxNumSeqs ||
				b.SpecTokens > k*b.SpecRows || b.SpecRows > b.NumDecode || b.DecodeTokens < b.NumDecode+b.SpecTokens {
				t.Fatalf("trial %d: batch over limits: %+v", trial, b)
			}
			if rows > 0 && queue && !e.Busy() && e.HasWork() {
				continue // fill the queue before completing
			}
		}
		if e.InFlight() == 0 {
			now += time.Millisecond
			continue
		}
		now += time.Duration(1+rng.IntN(5)) * time.Millisecond
		for _, s := range e.Complete(now) {
			got[s.Req.ID] += s.Tokens
			out = append(out, s.Req.ID, int64(s.Tokens), int64(now))
			if s.Done {
				ended[s.Req.ID]++
			}
		}
		for _, r := range reqs {
			if r.Status == StatusRunning && r.NumOutput > 0 && !e.inFlight(r) && r.NumComputed != r.NumTokens()-1 {
				t.Fatalf("trial %d: request %d computed %d of %d tokens after its step", trial, r.ID, r.NumComputed, r.NumTokens())
			}
		}
		checkBlocks(t, e, reqs)
	}
	checkAllEnded(t, trial, e, reqs, ended)
	for _, r := range reqs {
		if r.Status != StatusRejected && got[r.ID] != r.MaxTokens {
			t.Fatalf("trial %d: request %d streamed %d tokens, max_tokens %d", trial, r.ID, got[r.ID], r.MaxTokens)
		}
	}
	return e.Stats(), out
}

// TestSpecRandomisedInvariants: with speculation, in every KV layout,
// with and without the batch queue, blocks are conserved, every request
// streams exactly its max_tokens, rejected drafts roll back, and batches
// stay within their limits.
func TestSpecRandomisedInvariants(t *testing.T) {
	for trial := 0; trial < 80; trial++ {
		specRun(t, trial, 5, 0, trial%4 == 2)
	}
}

// TestSpecDeterminism: the same seed and stream give the same run; another
// stream draws other acceptances.
func TestSpecDeterminism(t *testing.T) {
	differs := false
	for trial := 0; trial < 10; trial++ {
		s1, o1 := specRun(t, trial, 9, 3, false)
		s2, o2 := specRun(t, trial, 9, 3, false)
		if s1 != s2 || !equal(o1, o2) {
			t.Fatalf("trial %d: two runs of one seed differ", trial)
		}
		s3, _ := specRun(t, trial, 9, 4, false)
		differs = differs || s3 != s1
	}
	if !differs {
		t.Error("stream 4 drew the same acceptances as stream 3 in every trial")
	}
}

func equal(a, b []int64) bool {
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

func TestStatsAdd(t *testing.T) {
	a := Stats{Steps: 1, MaxRunning: 3, PeakUsedBlocks: 9, SpecDrafts: 2, SpecAccepted: 3}
	a.SpecAcceptedPerPos[0], a.SpecAcceptedPerPos[1] = 2, 1
	b := Stats{Steps: 2, MaxRunning: 5, PeakUsedBlocks: 4, SpecDrafts: 1, SpecAccepted: 1, RemoteKVLoads: 1}
	b.SpecAcceptedPerPos[0] = 1
	a.Add(b)
	want := Stats{Steps: 3, MaxRunning: 5, PeakUsedBlocks: 9, SpecDrafts: 3, SpecAccepted: 4, RemoteKVLoads: 1}
	want.SpecAcceptedPerPos[0], want.SpecAcceptedPerPos[1] = 3, 1
	if a != want {
		t.Fatalf("Add: %+v, want %+v", a, want)
	}
	if got := a.SpecMeanAcceptanceLength(); math.Abs(got-(1+4.0/3)) > 1e-12 {
		t.Errorf("mean acceptance length %v, want %v", got, 1+4.0/3)
	}
	if got := (Stats{}).SpecMeanAcceptanceLength(); got != 0 {
		t.Errorf("no drafts: mean acceptance length %v, want 0", got)
	}
}

// TestSpecEagleDropsLastHitBlock: with an EAGLE-style drafter
// (DropLastHitBlock) a prefix-cache hit loses its last block, in a plain
// model and in every hybrid layout (the sliding groups need one more
// contiguous block and drop it), as vLLM's find_longest_cache_hit does
// with use_eagle. A 24-token prompt caches 6 blocks of 4; a later prompt
// extending it looks them up.
func TestSpecEagleDropsLastHitBlock(t *testing.T) {
	for _, tc := range []struct {
		name        string
		groups      string // "" = a plain model
		blocks      int
		evict       int // tokens of a fresh-content prompt run in between
		keep, eagle int // tokens cached without and with the drop
	}{
		{"plain", "", 21, 0, 24, 20},
		{"hybrid", "sf", 21, 0, 24, 16},                // full hit 5 blocks; sliding run of 3 within, less 1
		{"hybrid, tail evicted", "sf", 21, 20, 16, 12}, // blocks 0-3 cached in the sliding group
		{"sliding only", "s", 15, 0, 24, 20},
	} {
		for _, drop := range []bool{false, true} {
			c := scfg(256, 4, tc.blocks, 4, []float64{0.5, 0.3}, specdecode.Random, true)
			c.Spec.DropLastHitBlock = drop
			if tc.groups != "" {
				c.KVCache = layout(8, tc.groups)
			}
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			var now time.Duration
			run := func(r *Request) {
				e.Add(r, now)
				for e.HasWork() {
					step(t, e, &now)
				}
			}
			run(req(1, 1, seg(7, 24)))
			if tc.evict > 0 {
				run(req(2, 1, seg(8, tc.evict)))
			}
			b := req(3, 2, seg(7, 24), seg(9, 8))
			e.Add(b, now)
			step(t, e, &now)
			want := tc.keep
			if drop {
				want = tc.eagle
			}
			if b.CachedTokens != want {
				t.Errorf("%s, drop %v: cached %d tokens, want %d", tc.name, drop, b.CachedTokens, want)
			}
			checkBlocks(t, e, []*Request{b})
		}
	}
}

// TestSpecEagleDropNeedsSpeculation: the drop without a drafter is refused.
func TestSpecEagleDropNeedsSpeculation(t *testing.T) {
	c := cfg(256, 4, 64, 16)
	c.Spec.DropLastHitBlock = true
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "disable_eagle_block_drop") {
		t.Errorf("got %v", err)
	}
}

// TestSpecDSparkRun serves a DSpark run end to end: the DeepSeek-V4.1-Flash
// seed deployments' --speculative-config (k 5, synthetic acceptance length
// 3.51) parsed as the command line parses it, its lookahead slots and
// EAGLE-style block drop (vLLM's use_eagle includes dspark), and each step
// priced by the fitted kernel for DeepSeek-R1 on 8 × H200 with its DSpark
// proposer. Every request finishes, every block is freed, the run realises
// the configured mean acceptance length and every step pays a draft.
func TestSpecDSparkRun(t *testing.T) {
	cfgJSON := `{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic",` +
		`"rejection_sample_method":"synthetic","synthetic_acceptance_length":3.51,"enable_adaptive_verification":false}`
	sc, err := specdecode.ParseConfig(cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	sched, ok := sc.SyntheticSchedule()
	if !ok {
		t.Fatal("no synthetic schedule")
	}
	k := *sc.NumSpeculativeTokens
	m, err := catalog.LookupModel("deepseek-r1")
	if err != nil {
		t.Fatal(err)
	}
	chip, err := catalog.LookupChip("h200")
	if err != nil {
		t.Fatal(err)
	}
	d := kernel.Deployment{Model: m, Chip: chip, TP: 8, KVCacheDtype: "auto", MaxNumBatchedTokens: 8192, MaxNumSeqs: 64,
		MaxModelLen: 16384, BlockSize: 16, GPUMemoryUtilization: 0.9, Spec: kernel.Speculation{Method: *sc.Method, NumTokens: k}}
	pricer, err := kernel.NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg(8192, 64, 8192, 16)
	c.Spec = Speculation{NumTokens: k, Lookahead: specdecode.LookaheadSlots(*sc.Method), Acceptance: sched, Seed: 7,
		DropLastHitBlock: true}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var reqs []*Request
	for i := range 40 {
		r := req(int64(i), 200+7*i, seg(1, 512), seg(uint64(100+i), 64+i))
		reqs = append(reqs, r)
		if !e.Add(r, 0) {
			t.Fatalf("refused: %s", r.RejectReason)
		}
	}
	var now time.Duration
	for steps := 0; ; steps++ {
		var b kernel.Batch
		if e.Schedule(now, &b) == 0 {
			break
		}
		bd := pricer.StepTime(&b)
		if bd.Draft <= 0 || bd.Draft >= bd.Total {
			t.Fatalf("step %d: draft %v of %v for %+v", steps, bd.Draft, bd.Total, b)
		}
		now += bd.Total
		e.Complete(now)
		if steps > 100000 {
			t.Fatal("run does not end")
		}
	}
	for _, r := range reqs {
		if r.Status != StatusFinished || r.NumOutput != r.MaxTokens {
			t.Fatalf("request %d: status %v, %d of %d tokens", r.ID, r.Status, r.NumOutput, r.MaxTokens)
		}
	}
	if e.HeldBlocks() != 0 {
		t.Errorf("%d blocks held after the run", e.HeldBlocks())
	}
	st := e.Stats()
	if got := st.SpecMeanAcceptanceLength(); math.Abs(got-3.51) > 0.05 {
		t.Errorf("mean acceptance length %.3f, want 3.51 ± 0.05 (%d drafts)", got, st.SpecDrafts)
	}
	t.Logf("%d verifications, mean acceptance length %.3f, %v simulated", st.SpecDrafts, st.SpecMeanAcceptanceLength(), now)
}

// TestSpecDraftSlotsChargeTheInputBudget: vLLM's scheduler charges every
// scheduled request its tokens plus the drafter's input slots
// (max_num_new_slots_for_drafting, k − 1 = 4 for DSpark at k = 5) to an
// input budget of --max-num-batched-tokens. With a budget of 64 and
// decode rows of 1 + 5 tokens, request i may take at most
// 64 − 6i − 4(i + 1) tokens: six rows fit (the seventh's cap is 0),
// where without draft slots ten full rows and a trimmed eleventh do.
// (The input budget also admits only eight of the twelve 4-token prompts
// in the first step; the rest wait behind the running rows.)
func TestSpecDraftSlotsChargeTheInputBudget(t *testing.T) {
	for _, tc := range []struct{ slots, rows, tokens int }{{0, 11, 64}, {4, 6, 36}} {
		c := scfg(64, 16, 4096, 16, []float64{0, 0, 0, 0, 0}, specdecode.Random, true)
		c.Spec.DraftSlots = tc.slots
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			e.Add(req(int64(i), 1000, seg(uint64(i+1), 4)), 0)
		}
		// Running requests go first: once the first rows decode with five
		// drafts each, the steady step is what the input budget admits.
		var now time.Duration
		for range 5 {
			step(t, e, &now)
		}
		var b kernel.Batch
		e.Schedule(now, &b)
		if b.NumPrefill != 0 || b.NumDecode != tc.rows || b.DecodeTokens != tc.tokens {
			t.Errorf("slots %d: %d decode rows, %d tokens (%d prefill rows), want %d rows, %d tokens",
				tc.slots, b.NumDecode, b.DecodeTokens, b.NumPrefill, tc.rows, tc.tokens)
		}
	}
	c := scfg(64, 16, 4096, 16, []float64{0.5, 0.2}, specdecode.Random, true)
	c.Spec.DraftSlots = 3
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "max_num_new_slots_for_drafting") {
		t.Errorf("3 draft slots at k 2: %v", err)
	}
}

// TestSpecDraftSlotsNeedABudget: vLLM refuses to start when
// --max-num-batched-tokens is no more than the drafter's input slots per
// request (VllmConfig._set_max_num_scheduled_tokens: "does not have enough
// slots to schedule a token"), since the input budget could then admit no
// request: BLIS refuses the configuration too instead of running an engine
// that never schedules.
func TestSpecDraftSlotsNeedABudget(t *testing.T) {
	for _, tc := range []struct {
		budget, slots int
		ok            bool
	}{{4, 4, false}, {3, 4, false}, {5, 4, true}, {1, 0, true}} {
		c := scfg(tc.budget, 16, 4096, 16, []float64{0, 0, 0, 0, 0}, specdecode.Random, true)
		c.MaxModelLen = 2048
		c.Spec.DraftSlots = tc.slots
		_, err := New(c)
		if tc.ok != (err == nil) || !tc.ok && !strings.Contains(err.Error(), "--max-num-batched-tokens") {
			t.Errorf("budget %d, %d draft slots: %v", tc.budget, tc.slots, err)
		}
	}
}
