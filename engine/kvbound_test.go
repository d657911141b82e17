package engine

import (
	"testing"
	"time"
)

// The scheduler near a full KV pool, as vLLM v1 behaves there
// (vllm/v1/core/sched/scheduler.py schedule and
// vllm/v1/core/kv_cache_manager.py allocate_slots): a waiting request is
// admitted with blocks for its chunk only, never for its whole prompt; a
// step that preempted admits no waiting request, even one whose chunk
// fits the blocks the preemption freed; and a preempted request, re-admitted,
// finds its own full blocks in the prefix cache while they are not reused,
// so it recomputes only the rest.

func TestAdmissionAllocatesTheChunkOnly(t *testing.T) {
	e, _ := New(cfg(8, 4, 64, 4))
	var now time.Duration
	e.Add(req(1, 1, seg(1, 40)), now)
	step(t, e, &now)
	if got := e.HeldBlocks(); got != 2 {
		t.Fatalf("after an 8-token chunk of a 40-token prompt: %d blocks held, want 2 (the chunk's), not 10 (the prompt's)", got)
	}
}

func TestNoAdmissionInAStepThatPreempted(t *testing.T) {
	// 7 blocks: the null block and 6 of 4 tokens. a and c hold 2 full
	// blocks each after their prompts, b 2 blocks with room.
	c := cfg(64, 8, 7, 4)
	c.EnablePrefixCaching = false
	c.LongPrefillTokenThreshold = 4 // chunks of ≤ 4 tokens: 1 block
	e, _ := New(c)
	var now time.Duration
	a := req(1, 8, seg(1, 8))
	b := req(2, 8, seg(2, 6))
	cc := req(3, 8, seg(3, 8))
	for _, r := range []*Request{a, b, cc} {
		e.Add(r, now)
	}
	for a.NumOutput == 0 || b.NumOutput == 0 || cc.NumOutput == 0 {
		step(t, e, &now)
	}
	if e.FreeBlocks() != 0 {
		t.Fatalf("setup: %d blocks free, want 0", e.FreeBlocks())
	}
	// a's next slot needs a block: c (last) is preempted, freeing 2; a takes
	// 1. The block left would take c's first 4-token chunk, but vLLM admits
	// no waiting request in this step.
	bt, _ := step(t, e, &now)
	if cc.Status != StatusPreempted || e.FreeBlocks() != 1 {
		t.Fatalf("c %v, %d free; want c preempted and 1 block free", cc.Status, e.FreeBlocks())
	}
	if bt.NumPrefill != 0 || bt.NumDecode != 2 {
		t.Fatalf("preempting step: %d prefill rows, %d decode rows; want 0 and 2 (a, b)", bt.NumPrefill, bt.NumDecode)
	}
	// The next step preempts nothing (b has room, a's block is fresh) and
	// admits c's first chunk.
	bt, _ = step(t, e, &now)
	if cc.Status != StatusRunning || bt.NumPrefill != 1 || bt.PrefillTokens != 4 {
		t.Fatalf("next step: c %v, %d prefill rows of %d tokens; want c re-admitted with a 4-token chunk", cc.Status, bt.NumPrefill, bt.PrefillTokens)
	}
}

func TestPreemptedRequestRehitsItsOwnBlocks(t *testing.T) {
	// As above with prefix caching on and no threshold; a stops after two
	// tokens. c's 2 full blocks are registered when filled and freed tail
	// first on preemption, so a's new block is c's tail block.
	e, _ := New(cfg(64, 8, 7, 4))
	var now time.Duration
	a := req(1, 2, seg(1, 8))
	b := req(2, 8, seg(2, 6))
	cc := req(3, 8, seg(3, 8))
	for _, r := range []*Request{a, b, cc} {
		e.Add(r, now)
	}
	step(t, e, &now) // all three prefilled, one token each
	step(t, e, &now) // a needs a block: c preempted; a finishes, freeing 3
	if cc.Status != StatusPreempted || a.Status != StatusFinished {
		t.Fatalf("c %v, a %v; want c preempted and a finished", cc.Status, a.Status)
	}
	// c (8 prompt + 1 output token) is re-admitted with its first block
	// still cached: it computes 5 tokens after a 4-token hit, not 9.
	bt, _ := step(t, e, &now)
	if cc.Status != StatusRunning || bt.NumPrefill != 1 || bt.PrefillTokens != 5 || bt.PrefillContext != 4 {
		t.Fatalf("re-admission: c %v, batch %+v; want one prefill row of 5 tokens after a 4-token hit", cc.Status, bt)
	}
}
