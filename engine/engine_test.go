package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"blis/kernel"
	"blis/workload"
)

func cfg(budget, seqs, blocks, bs int) Config {
	return Config{
		MaxNumSeqs: seqs, MaxNumBatchedTokens: budget, EnableChunkedPrefill: true,
		EnablePrefixCaching: true, BlockSize: bs, NumGPUBlocks: blocks, MaxModelLen: 1 << 20,
	}
}

var nextOut uint64 = 1000

func req(id int64, out int, segs ...workload.Segment) *Request {
	n := 0
	for _, s := range segs {
		n += s.Len
	}
	nextOut++
	return &Request{ID: id, Prompt: segs, PromptLen: n, MaxTokens: out, OutputID: nextOut}
}

func seg(id uint64, n int) workload.Segment { return workload.Segment{ID: id, Len: n} }

// step runs one schedule/complete cycle of 1 ms and returns the batch.
func step(t *testing.T, e *Engine, now *time.Duration) (kernel.Batch, []Sample) {
	t.Helper()
	var b kernel.Batch
	if e.Schedule(*now, &b) == 0 {
		t.Fatalf("nothing scheduled at %v", *now)
	}
	*now += time.Millisecond
	return b, e.Complete(*now)
}

func TestChunkedPrefillSplitsUnderTheBudget(t *testing.T) {
	e, _ := New(cfg(8, 4, 64, 4))
	var now time.Duration
	r := req(1, 2, seg(1, 20))
	e.Add(r, now)
	want := []struct{ prefill, decode, sampled int }{{8, 0, 0}, {8, 0, 0}, {4, 0, 1}, {0, 1, 1}}
	for i, w := range want {
		b, s := step(t, e, &now)
		if b.PrefillTokens != w.prefill || b.DecodeTokens != w.decode || b.Sampled != w.sampled || len(s) != w.sampled {
			t.Fatalf("step %d: got prefill %d decode %d sampled %d/%d, want %+v", i, b.PrefillTokens, b.DecodeTokens, b.Sampled, len(s), w)
		}
	}
	if r.Status != StatusFinished || r.FirstToken != 3*time.Millisecond || r.Finished != 4*time.Millisecond {
		t.Fatalf("request: status %v first %v finish %v", r.Status, r.FirstToken, r.Finished)
	}
	if e.HeldBlocks() != 0 {
		t.Fatalf("blocks leaked: %d held", e.HeldBlocks())
	}
}

func TestRunningFirstThenWaitingShareTheBudget(t *testing.T) {
	e, _ := New(cfg(8, 4, 64, 4))
	var now time.Duration
	a := req(1, 3, seg(1, 4))
	e.Add(a, now)
	step(t, e, &now) // a prefilled, first token
	b := req(2, 1, seg(2, 10))
	e.Add(b, now)
	bt, _ := step(t, e, &now)
	if bt.NumDecode != 1 || bt.NumPrefill != 1 || bt.PrefillTokens != 7 {
		t.Fatalf("want a's decode then 7 of b's tokens, got %+v", bt)
	}
	// Chunk context: b's second chunk starts at 7 cached tokens.
	bt, _ = step(t, e, &now)
	if bt.PrefillTokens != 3 || bt.PrefillContext != 7 || bt.PrefillAttnPairs != 3*7+6 {
		t.Fatalf("second chunk: %+v", bt)
	}
}

func TestMaxNumSeqsCapsRunning(t *testing.T) {
	e, _ := New(cfg(100, 2, 64, 4))
	var now time.Duration
	for i := 0; i < 3; i++ {
		e.Add(req(int64(i), 5, seg(uint64(i+10), 4)), now)
	}
	b, _ := step(t, e, &now)
	if b.NumPrefill != 2 || e.Running() != 2 || e.Waiting() != 1 {
		t.Fatalf("batch %+v running %d waiting %d", b, e.Running(), e.Waiting())
	}
}

func TestChunkedPrefillDisabledWaitsForWholePrompt(t *testing.T) {
	c := cfg(8, 4, 64, 4)
	c.EnableChunkedPrefill = false
	c.MaxModelLen = 8
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	a := req(1, 2, seg(1, 4))
	b := req(2, 1, seg(2, 6))
	e.Add(a, now)
	e.Add(b, now)
	bt, _ := step(t, e, &now)
	if bt.NumPrefill != 1 || bt.PrefillTokens != 4 {
		t.Fatalf("b (6 tokens) must not be chunked into the 4 left: %+v", bt)
	}
}

func TestLongPrefillThresholdCapsChunk(t *testing.T) {
	c := cfg(100, 4, 64, 4)
	c.LongPrefillTokenThreshold = 6
	e, _ := New(c)
	var now time.Duration
	e.Add(req(1, 1, seg(1, 20)), now)
	b, _ := step(t, e, &now)
	if b.PrefillTokens != 6 {
		t.Fatalf("want 6 tokens, got %+v", b)
	}
}

func TestPreemptionTakesTheLastRunningAndRequeuesItFirst(t *testing.T) {
	// 7 blocks: null + 6 usable of 4 tokens. Each request: 8-token prompt (2
	// blocks) then grows a block every 4 tokens.
	c := cfg(64, 8, 7, 4)
	c.EnablePrefixCaching = false
	e, _ := New(c)
	var now time.Duration
	a := req(1, 10, seg(1, 8))
	b := req(2, 10, seg(2, 8))
	cc := req(3, 10, seg(3, 8))
	for _, r := range []*Request{a, b, cc} {
		e.Add(r, now)
	}
	step(t, e, &now) // all three prefilled: 6 blocks held, 0 free
	if e.FreeBlocks() != 0 {
		t.Fatalf("free %d", e.FreeBlocks())
	}
	// Next decode: a needs slot 9 → new block → none free → preempt c (last).
	b1, _ := step(t, e, &now)
	if cc.Status != StatusPreempted || cc.Preemptions != 1 || cc.NumComputed != 0 {
		t.Fatalf("c should be preempted: %+v", cc)
	}
	if a.Preemptions != 0 || b.Preemptions != 0 {
		t.Fatal("only the tail request may be preempted")
	}
	if b1.NumDecode != 2 {
		t.Fatalf("a and b decode after preempting c: %+v", b1)
	}
	if e.waiting.peek() != cc {
		t.Fatal("preempted request goes to the head of waiting")
	}
	// No livelock: everything eventually finishes.
	for i := 0; i < 200 && e.HasWork(); i++ {
		step(t, e, &now)
	}
	for _, r := range []*Request{a, b, cc} {
		if r.Status != StatusFinished || r.NumOutput != 10 {
			t.Fatalf("request %d: status %v outputs %d", r.ID, r.Status, r.NumOutput)
		}
	}
	if e.Stats().Preemptions < 1 {
		t.Fatal("preemptions not counted")
	}
}

func TestPrefixCacheHitsSharedPrefix(t *testing.T) {
	e, _ := New(cfg(256, 4, 64, 16))
	var now time.Duration
	a := req(1, 2, seg(7, 40), seg(100, 9))
	e.Add(a, now)
	for e.HasWork() {
		step(t, e, &now)
	}
	b := req(2, 2, seg(7, 40), seg(101, 30))
	e.Add(b, now)
	bt, _ := step(t, e, &now)
	// 40 shared tokens = 2 full blocks of 16 (the 3rd block mixes in b's own tokens).
	if b.CachedTokens != 32 || bt.PrefillTokens != 70-32 || bt.PrefillContext != 32 {
		t.Fatalf("cached %d, batch %+v", b.CachedTokens, bt)
	}
	// An identical prompt hits all but the block holding its last token.
	c := req(3, 2, seg(7, 40), seg(101, 30))
	e.Add(c, now)
	step(t, e, &now)
	if c.CachedTokens != 64 {
		t.Fatalf("identical 70-token prompt: cached %d, want 64 (4 full blocks; 70-1 caps at 4)", c.CachedTokens)
	}
	d := req(4, 2, seg(9, 32))
	e2, _ := New(cfg(256, 4, 64, 16))
	e2.Add(d, 0)
	for e2.HasWork() {
		step(t, e2, &now)
	}
	d2 := req(5, 2, seg(9, 32))
	e2.Add(d2, now)
	step(t, e2, &now)
	if d2.CachedTokens != 16 {
		t.Fatalf("32-token identical prompt: cached %d, want 16 (num_tokens-1 cap)", d2.CachedTokens)
	}
}

func TestPrefixCachingOffNeverHits(t *testing.T) {
	c := cfg(256, 4, 64, 16)
	c.EnablePrefixCaching = false
	e, _ := New(c)
	var now time.Duration
	for i := 0; i < 2; i++ {
		r := req(int64(i), 2, seg(7, 64))
		e.Add(r, now)
		for e.HasWork() {
			step(t, e, &now)
		}
		if r.CachedTokens != 0 {
			t.Fatal("hit with prefix caching off")
		}
	}
}

func TestLRUEvictsLeastRecentlyFreedFirst(t *testing.T) {
	// 5 usable blocks of 4 tokens. a (8 tokens) finishes; b (8 tokens, other
	// content) finishes; c needs 3 blocks → must evict a's blocks before b's.
	c := cfg(64, 4, 6, 4)
	e, _ := New(c)
	var now time.Duration
	run := func(r *Request) {
		e.Add(r, now)
		for e.HasWork() {
			step(t, e, &now)
		}
	}
	run(req(1, 1, seg(1, 8)))
	run(req(2, 1, seg(2, 8)))
	run(req(3, 1, seg(3, 12)))
	a2 := req(4, 1, seg(1, 8), seg(50, 1))
	b2 := req(5, 1, seg(2, 8), seg(51, 1))
	e.Add(b2, now)
	step(t, e, &now)
	e.Add(a2, now)
	step(t, e, &now)
	if b2.CachedTokens != 8 || a2.CachedTokens != 0 {
		t.Fatalf("b's blocks (freed later) should survive: b2 cached %d, a2 cached %d", b2.CachedTokens, a2.CachedTokens)
	}
}

func TestRejections(t *testing.T) {
	c := cfg(64, 4, 5, 4) // 4 usable blocks = 16 tokens
	c.MaxModelLen = 32
	e, _ := New(c)
	cases := []struct {
		r    *Request
		want string
	}{
		{req(1, 10, seg(1, 30)), "max_model_len"},
		{req(2, 8, seg(2, 12)), "kv_capacity"},
		{&Request{ID: 3, MaxTokens: 1}, "empty prompt"},
	}
	for _, tc := range cases {
		if e.Add(tc.r, 0) || tc.r.Status != StatusRejected || !strings.Contains(tc.r.RejectReason, tc.want) {
			t.Errorf("request %d: status %v reason %q, want %q", tc.r.ID, tc.r.Status, tc.r.RejectReason, tc.want)
		}
	}
	if e.Stats().Rejected != 3 {
		t.Fatalf("rejections counted: %d", e.Stats().Rejected)
	}
	// 16 tokens fit: 12 + 5 − 1 = 16.
	if !e.Add(req(4, 5, seg(4, 12)), 0) {
		t.Fatal("a request needing exactly the pool must be admitted")
	}
}

func TestConfigValidation(t *testing.T) {
	good := cfg(8, 1, 4, 16)
	bad := []func(*Config){
		func(c *Config) { c.MaxNumSeqs = 0 },
		func(c *Config) { c.MaxNumBatchedTokens = -1 },
		func(c *Config) { c.BlockSize = 0 },
		func(c *Config) { c.NumGPUBlocks = 1 },
		func(c *Config) { c.MaxModelLen = 1 },
		func(c *Config) { c.LongPrefillTokenThreshold = -3 },
		func(c *Config) { c.EnableChunkedPrefill = false; c.MaxModelLen = 100 },
	}
	if _, err := New(good); err != nil {
		t.Fatal(err)
	}
	for i, f := range bad {
		c := good
		f(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "-") {
			t.Errorf("case %d: want a flag-naming error, got %v", i, err)
		}
	}
}

// TestRandomisedInvariants drives random workloads through random engine
// configurations and checks, after every step: block conservation (held +
// free = usable, reference counts equal the blocks requests hold), every
// request ends exactly once, causality, and exact output counts.
func TestRandomisedInvariants(t *testing.T) {
	for trial := 0; trial < 120; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		bs := []int{1, 4, 16}[rng.IntN(3)]
		c := Config{
			MaxNumSeqs:           1 + rng.IntN(16),
			MaxNumBatchedTokens:  16 + rng.IntN(256),
			EnableChunkedPrefill: true,
			EnablePrefixCaching:  rng.IntN(4) != 0,
			BlockSize:            bs,
			NumGPUBlocks:         2 + rng.IntN(400/bs+8),
			MaxModelLen:          512,
			AsyncScheduling:      trial%3 == 0,
		}
		if rng.IntN(3) == 0 {
			c.LongPrefillTokenThreshold = 1 + rng.IntN(64)
		}
		// Half the trials are hybrid: a sliding window beside zero to two
		// full-attention groups, in either order.
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
		var now time.Duration
		pending := 0
		ended := map[int64]int{}
		for i := range reqs {
			segs := []workload.Segment{}
			if rng.IntN(2) == 0 {
				segs = append(segs, seg(uint64(1+rng.IntN(3)), 1+rng.IntN(100)))
			}
			segs = append(segs, seg(uint64(1000+i), 1+rng.IntN(150)))
			reqs[i] = req(int64(i), 1+rng.IntN(60), segs...)
		}
		next := 0
		for steps := 0; ; steps++ {
			if steps > 100000 {
				t.Fatalf("trial %d: no progress (livelock?)", trial)
			}
			for k := rng.IntN(4); k > 0 && next < n; k-- {
				r := reqs[next]
				next++
				if e.Add(r, now) {
					pending++
				} else {
					ended[r.ID]++
				}
			}
			if !e.HasWork() {
				if next == n {
					break
				}
				now += time.Millisecond
				continue
			}
			var b kernel.Batch
			if e.Schedule(now, &b) == 0 {
				t.Fatalf("trial %d: work queued but nothing scheduled", trial)
			}
			if b.Tokens() > c.MaxNumBatchedTokens || b.NumPrefill+b.NumDecode > c.MaxNumSeqs {
				t.Fatalf("trial %d: batch over limits: %+v", trial, b)
			}
			now += time.Duration(1+rng.IntN(5)) * time.Millisecond
			for _, s := range e.Complete(now) {
				if s.Done {
					ended[s.Req.ID]++
					pending--
				}
			}
			checkBlocks(t, e, reqs)
		}
		checkAllEnded(t, trial, e, reqs, ended)
		for _, r := range reqs {
			if r.Status == StatusRejected {
				continue
			}
			if !(r.Arrived <= r.FirstScheduled && r.FirstScheduled < r.FirstToken && r.FirstToken <= r.Finished) {
				t.Fatalf("trial %d: request %d causality: %v %v %v %v", trial, r.ID, r.Arrived, r.FirstScheduled, r.FirstToken, r.Finished)
			}
		}
	}
}

// checkAllEnded checks a finished trial: every request ended exactly once
// (ended counts the ends seen), each one not refused finished with all its
// output tokens, and the engine holds no block.
func checkAllEnded(t *testing.T, trial int, e *Engine, reqs []*Request, ended map[int64]int) {
	t.Helper()
	for _, r := range reqs {
		if ended[r.ID] != 1 {
			t.Fatalf("trial %d: request %d ended %d times", trial, r.ID, ended[r.ID])
		}
		if r.Status == StatusRejected {
			continue
		}
		if r.Status != StatusFinished || r.NumOutput != r.MaxTokens {
			t.Fatalf("trial %d: request %d status %v outputs %d/%d", trial, r.ID, r.Status, r.NumOutput, r.MaxTokens)
		}
	}
	if e.HeldBlocks() != 0 {
		t.Fatalf("trial %d: %d blocks held after all requests ended", trial, e.HeldBlocks())
	}
}

func checkBlocks(t *testing.T, e *Engine, reqs []*Request) {
	t.Helper()
	p := e.pool
	refs := make([]int32, p.numBlocks())
	owner := make([]int, p.numBlocks()) // group holding the block + 1
	groups := max(1, e.cfg.KVCache.Groups)
	for _, r := range reqs {
		if r.Status == StatusRejected {
			continue
		}
		for g := 0; g < groups; g++ {
			if g > 0 && g > len(r.kvMore) {
				if len(r.kv.blocks) != 0 {
					t.Fatalf("request %d holds blocks but has no group %d", r.ID, g)
				}
				continue
			}
			k := r.group(g)
			if len(k.blocks) != len(r.kv.blocks) {
				t.Fatalf("request %d: group %d holds %d block slots, group 0 %d", r.ID, g, len(k.blocks), len(r.kv.blocks))
			}
			for i, b := range k.blocks {
				if b == 0 {
					if i >= k.skipped {
						t.Fatalf("request %d group %d: null block at %d past the %d skipped", r.ID, g, i, k.skipped)
					}
					continue
				}
				if i < k.skipped {
					t.Fatalf("request %d group %d: block %d held at skipped slot %d", r.ID, g, b, i)
				}
				if owner[b] != 0 && owner[b] != g+1 {
					t.Fatalf("block %d held in groups %d and %d", b, owner[b]-1, g)
				}
				owner[b] = g + 1
				refs[b]++
			}
		}
	}
	// Blocks never handed out are free without a record (blockPool.fresh).
	free := int(p.n - p.fresh)
	for b := int(p.fresh); b < p.numBlocks(); b++ {
		if refs[b] != 0 {
			t.Fatalf("block %d is held but was never handed out", b)
		}
	}
	for b := 1; b < int(p.fresh); b++ {
		if refs[b] != p.blk[b].ref {
			t.Fatalf("block %d: ref %d, held by %d requests", b, p.blk[b].ref, refs[b])
		}
		if p.blk[b].inQ != (p.blk[b].ref == 0) {
			t.Fatalf("block %d: ref %d but inQ %v", b, p.blk[b].ref, p.blk[b].inQ)
		}
		if p.blk[b].inQ {
			free++
		}
	}
	if free != p.free || e.HeldBlocks()+e.FreeBlocks() != e.UsableBlocks() {
		t.Fatalf("conservation: counted free %d, pool free %d, held %d, usable %d", free, p.free, e.HeldBlocks(), e.UsableBlocks())
	}
	n := int(p.n - p.fresh)
	for b := p.head; b >= 0; b = p.blk[b].next {
		n++
	}
	if n != p.free {
		t.Fatalf("free list walk %d != free %d", n, p.free)
	}
}

// layout is a KV cache layout with one group per letter of kinds: 's' a
// sliding-window group of the given window, 'f' a full-attention group.
func layout(window int, kinds string) kernel.KVCacheLayout {
	l := kernel.KVCacheLayout{Groups: len(kinds)}
	for g, k := range kinds {
		if k == 's' {
			l.Sliding |= 1 << uint(g)
			l.Window = window
		}
	}
	return l
}

// hcfg is a gpt-oss-like hybrid engine: a sliding-window group (window 8)
// then a full-attention group, blocks of 4 tokens.
func hcfg(budget, seqs, blocks int) Config {
	c := cfg(budget, seqs, blocks, 4)
	c.KVCache = layout(8, "sf")
	return c
}

// held counts the non-null blocks r holds in group g.
func held(r *Request, g int) int {
	n := 0
	for _, b := range r.group(g).blocks {
		if b != 0 {
			n++
		}
	}
	return n
}

// TestHybridWindowFreesBlocks follows one request through a window-8,
// block-4 sliding group, beside a full group (gpt-oss-like) or alone
// (Mistral-like): after computing c tokens and allocating for c+1, the
// sliding group holds blocks ⌊(c−7)/4⌋ … ⌈(c+1)/4⌉−1, the full group all
// ⌈(c+1)/4⌉.
func TestHybridWindowFreesBlocks(t *testing.T) {
	for _, groups := range []string{"sf", "s"} {
		c := hcfg(64, 4, 64)
		c.KVCache = layout(8, groups)
		c.EnablePrefixCaching = false
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		fullHeld := func(r *Request) int {
			if len(groups) == 1 {
				return 0
			}
			return held(r, 1)
		}
		var now time.Duration
		r := req(1, 12, seg(1, 16))
		e.Add(r, now)
		step(t, e, &now) // prefill 16: 4 blocks in each group
		if held(r, 0) != 4 || e.HeldBlocks() != 4*len(groups) {
			t.Fatalf("%d groups, after prefill: sliding %d held %d", len(groups), held(r, 0), e.HeldBlocks())
		}
		// Decode steps: computed c before the step → (sliding, full) blocks after it.
		want := []struct{ c, sliding, full int }{
			{16, 3, 5}, // skip 9 tokens: blocks 0,1 freed; slot 16 needs block 4 in both
			{17, 3, 5},
			{18, 3, 5},
			{19, 2, 5}, // skip 12: block 2 freed
			{20, 3, 6}, // slot 20: block 5
			{21, 3, 6},
			{22, 3, 6},
			{23, 2, 6},
		}
		for _, w := range want {
			if r.NumComputed != w.c {
				t.Fatalf("computed %d, want %d", r.NumComputed, w.c)
			}
			step(t, e, &now)
			if len(groups) == 1 {
				w.full = 0
			}
			if held(r, 0) != w.sliding || fullHeld(r) != w.full || e.HeldBlocks() != w.sliding+w.full {
				t.Fatalf("%d groups, c=%d: sliding %d full %d held %d, want %d/%d", len(groups), w.c, held(r, 0), fullHeld(r), e.HeldBlocks(), w.sliding, w.full)
			}
			if k := r.group(0); k.skipped != (w.c-7)/4 {
				t.Fatalf("c=%d: %d sliding slots skipped, want %d", w.c, k.skipped, (w.c-7)/4)
			}
		}
		checkBlocks(t, e, []*Request{r})
		for e.HasWork() {
			step(t, e, &now)
		}
		if r.Status != StatusFinished || e.HeldBlocks() != 0 || e.FreeBlocks() != 63 {
			t.Fatalf("status %v held %d free %d", r.Status, e.HeldBlocks(), e.FreeBlocks())
		}
	}
}

// TestHybridPreemptionUsesTheCombinedNeed: 12 usable blocks, two 8-token
// prompts hold 2+2 blocks each; each block boundary then needs one new
// block per group, so at slot 12 the second request no longer fits although
// one block per request (a plain model's need) would.
func TestHybridPreemptionUsesTheCombinedNeed(t *testing.T) {
	c := hcfg(64, 4, 13)
	c.EnablePrefixCaching = false
	e, _ := New(c)
	var now time.Duration
	a, b := req(1, 16, seg(1, 8)), req(2, 16, seg(2, 8))
	e.Add(a, now)
	e.Add(b, now)
	step(t, e, &now) // prefill: 8 blocks held
	step(t, e, &now) // slot 8: +1 block per group each → 12 held
	if e.FreeBlocks() != 0 {
		t.Fatalf("free %d, want 0", e.FreeBlocks())
	}
	step(t, e, &now) // c=9
	step(t, e, &now) // c=10
	step(t, e, &now) // c=11: window frees block 0 of each sliding table
	if e.FreeBlocks() != 2 || held(a, 0) != 2 || held(b, 0) != 2 {
		t.Fatalf("after the window moved: free %d, sliding a %d b %d", e.FreeBlocks(), held(a, 0), held(b, 0))
	}
	bt, _ := step(t, e, &now) // c=12: a takes 2 blocks, b needs 2 more → b preempted
	if b.Status != StatusPreempted || b.NumComputed != 0 || a.Preemptions != 0 || bt.NumDecode != 1 {
		t.Fatalf("b %v computed %d, a preemptions %d, batch %+v", b.Status, b.NumComputed, a.Preemptions, bt)
	}
	if held(a, 0) != 3 || held(a, 1) != 4 || e.FreeBlocks() != 5 {
		t.Fatalf("a holds %d+%d, free %d; want 3+4 and b's 5 back", held(a, 0), held(a, 1), e.FreeBlocks())
	}
	checkBlocks(t, e, []*Request{a, b})
	for i := 0; i < 200 && e.HasWork(); i++ {
		step(t, e, &now)
		checkBlocks(t, e, []*Request{a, b})
	}
	if a.Status != StatusFinished || b.Status != StatusFinished || e.HeldBlocks() != 0 {
		t.Fatalf("a %v b %v held %d", a.Status, b.Status, e.HeldBlocks())
	}
}

// TestHybridPrefixHitNeedsEveryGroup: a 24-token prompt caches 6 blocks in
// both groups. Evicting the sliding group's last blocks cuts a later hit to
// the longest prefix whose window (2 blocks for window 8) is still cached;
// evicting all of them leaves no hit although the full group still hits.
func TestHybridPrefixHitNeedsEveryGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups string // "" = hcfg's "sf"
		blocks int
		evict  int // tokens of a fresh-content prompt run in between
		cached int
	}{
		{"all cached", "", 21, 0, 24},
		{"sliding tail evicted", "", 21, 20, 16},
		{"sliding evicted", "", 21, 28, 0},
		// Sliding layers only (vLLM's SlidingWindowManager alone, up to
		// num_tokens − 1): 14 usable blocks, a's 6 last in the queue.
		{"sliding only", "s", 15, 0, 24},
		{"sliding only, tail evicted", "s", 15, 40, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hcfg(256, 4, tc.blocks) // 20 usable blocks in two groups
			if tc.groups != "" {
				c.KVCache = layout(8, tc.groups)
			}
			e, _ := New(c)
			var now time.Duration
			run := func(r *Request) {
				e.Add(r, now)
				for e.HasWork() {
					step(t, e, &now)
				}
			}
			run(req(1, 1, seg(7, 24)))
			// Free queue now: 8 never-used blocks, then a's sliding
			// blocks (last first), then a's full blocks (last first).
			if tc.evict > 0 {
				run(req(2, 1, seg(8, tc.evict)))
			}
			b := req(3, 2, seg(7, 24), seg(9, 8))
			e.Add(b, now)
			step(t, e, &now)
			if b.CachedTokens != tc.cached {
				t.Fatalf("cached %d tokens, want %d", b.CachedTokens, tc.cached)
			}
			// Sliding slots before the window of token `cached` are null.
			if k := b.group(0); k.skipped != max(0, tc.cached-7)/4 {
				t.Fatalf("sliding: %d slots skipped, want %d", k.skipped, max(0, tc.cached-7)/4)
			}
			checkBlocks(t, e, []*Request{b})
		})
	}
}

func TestHybridConfigValidation(t *testing.T) {
	bad := []kernel.KVCacheLayout{
		{Groups: 1, Sliding: 1},             // no window
		{Groups: 1, Sliding: 2, Window: 8},  // sliding group past the groups
		{Groups: 2, Sliding: 3, Window: 8},  // no full-attention group
		{Groups: 2},                         // no sliding group
		{Groups: 65, Sliding: 1, Window: 8}, // too many
	}
	for i, l := range bad {
		c := hcfg(8, 1, 4)
		c.KVCache = l
		if _, err := New(c); err == nil {
			t.Errorf("case %d: %+v accepted", i, l)
		}
	}
	for _, l := range []kernel.KVCacheLayout{{}, {Groups: 1}, layout(8, "s"), layout(8, "sff")} {
		c := hcfg(8, 1, 4)
		c.KVCache = l
		e, err := New(c)
		if err != nil {
			t.Errorf("%+v: %v", l, err)
		} else if e.hybrid != (l.Sliding != 0) {
			t.Errorf("%+v: hybrid %v", l, e.hybrid)
		}
	}
	// A request's need: 12 tokens + 5 − 1 = 16 → 4 full blocks + the window's
	// min(4, ⌈min(7 + 8, 16)/4⌉ + 1 = 5) = 8 blocks in a pool of 8.
	c := hcfg(8, 4, 9)
	e, _ := New(c)
	if !e.Add(req(1, 5, seg(1, 12)), 0) || e.Add(req(2, 6, seg(2, 12)), 0) {
		t.Fatal("kv_capacity must count both groups")
	}
}

// Abort removes a request wherever it is: from waiting at once, from running
// between steps at once, and from the step in flight when it completes (no
// token, Aborted sample). Its blocks come back every time.
func TestAbort(t *testing.T) {
	e, _ := New(cfg(64, 4, 64, 4))
	var now time.Duration
	a, b, c := req(1, 10, seg(1, 8)), req(2, 10, seg(2, 8)), req(3, 10, seg(3, 200))
	for _, r := range []*Request{a, b, c} {
		e.Add(r, now)
	}
	step(t, e, &now) // a, b prefilled; c partly (budget 64)
	if !e.Abort(b) || b.Status != StatusAborted || e.Running() != 2 {
		t.Fatalf("between steps: status %v running %d", b.Status, e.Running())
	}
	var bt kernel.Batch
	e.Schedule(now, &bt)
	if e.Abort(a) {
		t.Fatal("a is in the step in flight: its abort must wait for the step's end")
	}
	now += time.Millisecond
	var aborted bool
	for _, s := range e.Complete(now) {
		if s.Req == a {
			aborted = s.Aborted && s.Done && a.NumOutput == 1
		}
	}
	if !aborted || a.Status != StatusAborted {
		t.Fatalf("a: aborted sample %v, status %v, outputs %d", aborted, a.Status, a.NumOutput)
	}
	w := req(4, 1, seg(4, 8))
	e.Add(w, now)
	if !e.Abort(w) || e.Waiting() != 0 {
		t.Fatalf("waiting request not removed: %d waiting", e.Waiting())
	}
	for e.HasWork() {
		step(t, e, &now)
	}
	if e.HeldBlocks() != 0 || e.Stats().Aborted != 3 || c.Status != StatusFinished {
		t.Fatalf("held %d, aborted %d, c %v", e.HeldBlocks(), e.Stats().Aborted, c.Status)
	}
}

// Under --async-scheduling vLLM forms step k+1 when step k starts, so a
// request that arrives while step k runs joins step k+2; a request that
// finds nothing to overlap with (no running request, nothing admissible
// waiting) is scheduled at once, as in vLLM's idle engine.
func TestAsyncSchedulingAdmitsArrivalsOneStepLater(t *testing.T) {
	for _, tc := range []struct {
		name      string
		async     bool
		busy      bool // a long request is running when b arrives
		wantFirst int  // step (1-based, counted from b's arrival) in which b is prefilled
	}{
		{"sync, busy engine", false, true, 1},
		{"async, busy engine", true, true, 2},
		{"async, idle engine", true, false, 1},
		{"sync, idle engine", false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg(64, 4, 64, 4)
			c.AsyncScheduling = tc.async
			e, _ := New(c)
			var now time.Duration
			if tc.busy {
				e.Add(req(1, 50, seg(1, 4)), now)
			} else {
				// A request that finishes in the first step: the engine is
				// idle afterwards.
				e.Add(req(1, 1, seg(1, 4)), now)
			}
			var bt kernel.Batch
			e.Schedule(now, &bt)
			// b arrives while the step runs.
			now += 500 * time.Microsecond
			b := req(2, 3, seg(2, 8))
			e.Add(b, now)
			now += 500 * time.Microsecond
			e.Complete(now)
			for i := 1; i <= 3; i++ {
				if !e.HasWork() {
					t.Fatalf("step %d: no work", i)
				}
				if e.Schedule(now, &bt) == 0 {
					t.Fatalf("step %d: nothing scheduled", i)
				}
				if bt.PrefillTokens > 0 {
					if i != tc.wantFirst {
						t.Fatalf("b prefilled in step %d, want %d", i, tc.wantFirst)
					}
					return
				}
				now += time.Millisecond
				e.Complete(now)
			}
			t.Fatalf("b never prefilled")
		})
	}
}
