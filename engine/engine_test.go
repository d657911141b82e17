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
	for trial := 0; trial < 60; trial++ {
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
		}
		if rng.IntN(3) == 0 {
			c.LongPrefillTokenThreshold = 1 + rng.IntN(64)
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
			if !(r.Arrived <= r.FirstScheduled && r.FirstScheduled < r.FirstToken && r.FirstToken <= r.Finished) {
				t.Fatalf("trial %d: request %d causality: %v %v %v %v", trial, r.ID, r.Arrived, r.FirstScheduled, r.FirstToken, r.Finished)
			}
		}
		if e.HeldBlocks() != 0 {
			t.Fatalf("trial %d: %d blocks held after all requests ended", trial, e.HeldBlocks())
		}
	}
}

func checkBlocks(t *testing.T, e *Engine, reqs []*Request) {
	t.Helper()
	p := e.pool
	refs := make([]int32, p.numBlocks())
	for _, r := range reqs {
		for _, b := range r.blocks {
			refs[b]++
		}
	}
	free := 0
	for b := 1; b < p.numBlocks(); b++ {
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
	n := 0
	for b := p.head; b >= 0; b = p.blk[b].next {
		n++
	}
	if n != p.free {
		t.Fatalf("free list walk %d != free %d", n, p.free)
	}
}
