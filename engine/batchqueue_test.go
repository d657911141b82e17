package engine

import (
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
