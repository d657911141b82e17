package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"blis/kernel"
)

func qcfg(budget, seqs, blocks, bs, depth int) Config {
	c := cfg(budget, seqs, blocks, bs)
	c.MaxConcurrentBatches = depth
	return c
}

// With a batch queue of 2 the engine schedules a second batch while the
// first is in flight; a decode row whose token is in flight has nothing to
// schedule, so no request is in two batches; batches complete in order.
func TestBatchQueueKeepsDecodeRowsInOneBatch(t *testing.T) {
	e, _ := New(qcfg(64, 8, 64, 4, 2))
	a, b := req(1, 3, seg(1, 8)), req(2, 3, seg(2, 8))
	e.Add(a, 0)
	var b1, b2, b3 kernel.Batch
	if n := e.Schedule(0, &b1); n != 1 || b1.PrefillTokens != 8 {
		t.Fatalf("batch 1: %d rows, %+v", n, b1)
	}
	if e.Busy() || e.InFlight() != 1 {
		t.Fatalf("busy %v in flight %d after one batch of two", e.Busy(), e.InFlight())
	}
	// a's token is in flight: nothing else to do yet.
	if n := e.Schedule(time.Millisecond, &b2); n != 0 {
		t.Fatalf("scheduled %d rows while a's only row is in flight: %+v", n, b2)
	}
	e.Add(b, time.Millisecond)
	if n := e.Schedule(time.Millisecond, &b2); n != 1 || b2.PrefillTokens != 8 {
		t.Fatalf("batch 2: %d rows, %+v", n, b2)
	}
	if !e.Busy() {
		t.Fatal("two batches in flight and not busy")
	}
	s := e.Complete(2 * time.Millisecond) // batch 1: a's first token
	if len(s) != 1 || s[0].Req != a || !s[0].First {
		t.Fatalf("batch 1 samples %+v", s)
	}
	if n := e.Schedule(2*time.Millisecond, &b3); n != 1 || b3.NumDecode != 1 || e.scheduled[0] != a {
		t.Fatalf("batch 3: %d rows %+v", n, b3)
	}
	s = e.Complete(3 * time.Millisecond) // batch 2: b's first token
	if len(s) != 1 || s[0].Req != b {
		t.Fatalf("batch 2 samples %+v", s)
	}
	s = e.Complete(4 * time.Millisecond) // batch 3: a's second token
	if len(s) != 1 || s[0].Req != a || s[0].Gap != 2*time.Millisecond {
		t.Fatalf("batch 3 samples %+v", s)
	}
	if e.InFlight() != 0 {
		t.Fatalf("%d in flight", e.InFlight())
	}
}

// A prompt's chunks follow each other down the pipeline, as vLLM schedules
// them: only the batch with its last chunk samples.
func TestBatchQueuePipelinesPrefillChunks(t *testing.T) {
	e, _ := New(qcfg(8, 8, 64, 4, 2))
	r := req(1, 2, seg(1, 16))
	e.Add(r, 0)
	var b1, b2 kernel.Batch
	e.Schedule(0, &b1)
	e.Schedule(0, &b2)
	if b1.PrefillTokens != 8 || b2.PrefillTokens != 8 || b1.Sampled != 0 || b2.Sampled != 1 {
		t.Fatalf("chunks %+v, %+v", b1, b2)
	}
	if s := e.Complete(time.Millisecond); len(s) != 0 {
		t.Fatalf("the first chunk sampled: %+v", s)
	}
	if s := e.Complete(2 * time.Millisecond); len(s) != 1 || !s[0].First {
		t.Fatalf("the last chunk: %+v", s)
	}
}

// A request aborted while in a queued batch leaves when that batch ends.
func TestBatchQueueAbort(t *testing.T) {
	e, _ := New(qcfg(64, 8, 64, 4, 2))
	a, b := req(1, 3, seg(1, 8)), req(2, 3, seg(2, 8))
	e.Add(a, 0)
	var bt kernel.Batch
	e.Schedule(0, &bt)
	e.Add(b, 0)
	e.Schedule(0, &bt)
	if e.Abort(b) {
		t.Fatal("b left at once while in flight")
	}
	if s := e.Complete(time.Millisecond); len(s) != 1 || s[0].Req != a {
		t.Fatalf("batch 1 %+v", s)
	}
	if s := e.Complete(2 * time.Millisecond); len(s) != 1 || s[0].Req != b || !s[0].Aborted {
		t.Fatalf("batch 2 %+v", s)
	}
	if e.Running() != 1 {
		t.Fatalf("running %d, want a alone", e.Running())
	}
}

// Random loads through a batch queue of 2 to 4: the engine fills the queue
// whenever it can, batches complete oldest first, and every request still
// ends once with all its tokens, its blocks accounted for and none left
// held; no request is a sampling row of two batches in flight.
func TestBatchQueueRandomisedInvariants(t *testing.T) {
	var preemptions int64
	for trial := 0; trial < 80; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 11))
		bs := []int{1, 4, 16}[rng.IntN(3)]
		c := Config{
			MaxNumSeqs:           1 + rng.IntN(16),
			MaxNumBatchedTokens:  16 + rng.IntN(256),
			EnableChunkedPrefill: true,
			EnablePrefixCaching:  rng.IntN(4) != 0,
			BlockSize:            bs,
			NumGPUBlocks:         2 + rng.IntN(400/bs+8),
			MaxModelLen:          512,
			MaxConcurrentBatches: 2 + rng.IntN(3),
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
			reqs[i] = req(int64(i), 1+rng.IntN(60), seg(uint64(1+rng.IntN(3)), 1+rng.IntN(100)), seg(uint64(1000+i), 1+rng.IntN(150)))
		}
		ended := map[int64]int{}
		var now time.Duration
		next := 0
		for steps := 0; ; steps++ {
			if steps > 100000 {
				t.Fatalf("trial %d: no progress", trial)
			}
			for k := rng.IntN(4); k > 0 && next < n; k-- {
				if r := reqs[next]; !e.Add(r, now) {
					ended[r.ID]++
				}
				next++
			}
			for !e.Busy() && e.HasWork() {
				var b kernel.Batch
				if e.Schedule(now, &b) == 0 {
					break
				}
				if b.Tokens() > c.MaxNumBatchedTokens || b.NumPrefill+b.NumDecode > c.MaxNumSeqs {
					t.Fatalf("trial %d: batch over limits: %+v", trial, b)
				}
			}
			sampling := map[*Request]bool{}
			for _, q := range e.queue {
				for _, x := range q.rows {
					if x.samples && x.preempt == x.r.Preemptions && sampling[x.r] {
						t.Fatalf("trial %d: request %d samples in two batches in flight", trial, x.r.ID)
					}
					sampling[x.r] = sampling[x.r] || x.samples && x.preempt == x.r.Preemptions
				}
			}
			if e.InFlight() == 0 {
				if e.HasWork() {
					t.Fatalf("trial %d: work queued but nothing in flight", trial)
				}
				if next == n {
					break
				}
				now += time.Millisecond
				continue
			}
			now += time.Duration(1+rng.IntN(5)) * time.Millisecond
			for _, s := range e.Complete(now) {
				if s.Done {
					ended[s.Req.ID]++
				}
			}
			checkBlocks(t, e, reqs)
		}
		checkAllEnded(t, trial, e, reqs, ended)
		preemptions += e.Stats().Preemptions
	}
	if preemptions == 0 {
		t.Fatal("no trial preempted: the loads miss the preemption paths")
	}
}
