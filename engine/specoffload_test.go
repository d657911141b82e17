package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"blis/kernel"
	"blis/kvtier"
	"blis/specdecode"
	"blis/workload"
)

// specOffloadRun drives one random workload through an engine with
// speculative decoding and KV offloading both on (either connector, LRU or
// ARC, lookahead on or off, the EAGLE prefix-hit block drop on or off, a
// batch queue of 1 to 3, preemptions and aborts) and checks after every step: block accounting (blocks held for
// stores included), that a running request past its first token has
// computed exactly its known tokens but the last, and that neither the
// prefix cache nor the connector holds a block beyond the request's
// verified tokens. At the end every request has streamed exactly its
// max_tokens (or was aborted or refused), no block is held and no CPU
// chunk is pinned. It returns the stats and every sample, the run's
// observable output.
func specOffloadRun(t *testing.T, trial int) (Stats, []int64) {
	t.Helper()
	return specOffloadRunContent(t, trial, shareSome)
}

// Content of specOffloadRunContent's requests.
const (
	shareSome     = iota // two in three start with one of three shared prefixes
	unique               // no two share content, not marked Private
	uniquePrivate        // no two share content, marked Private
)

// specOffloadRunContent is specOffloadRun with the requests' content
// shared or unique.
func specOffloadRunContent(t *testing.T, trial, content int) (Stats, []int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(trial), 15))
	bs := []int{1, 4, 16}[rng.IntN(3)]
	k := 1 + rng.IntN(5)
	rates := make([]float64, k)
	u := 1.0
	for j := range rates {
		u *= 0.3 + 0.7*rng.Float64()
		rates[j] = u
	}
	sched, _ := specdecode.FromRates(rates)
	c := Config{
		MaxNumSeqs: 1 + rng.IntN(16), MaxNumBatchedTokens: 16 + rng.IntN(256),
		EnableChunkedPrefill: true, EnablePrefixCaching: true, BlockSize: bs,
		NumGPUBlocks: 2 + rng.IntN(400/bs+8), MaxModelLen: 512, AsyncScheduling: trial%3 == 0,
		MaxConcurrentBatches: 1 + rng.IntN(3),
		Spec: Speculation{NumTokens: k, Lookahead: rng.IntN(2) == 0, Acceptance: sched,
			Mode: specdecode.Mode(rng.IntN(2)), Seed: uint64(trial), Stream: 1, DropLastHitBlock: trial%4 >= 2},
	}
	o := &OffloadConfig{Connector: OffloadNative, BlocksPerChunk: 1 + rng.IntN(4), CPUChunks: 1 + rng.IntN(200),
		BlockBytes: 1 << 20, LinkBW: []float64{1e8, 1e9, 25e9}[rng.IntN(3)], LinkLatency: time.Duration(rng.IntN(100)) * time.Microsecond,
		Store: OffloadStore(rng.IntN(2)), Policy: kvtier.Policy(rng.IntN(2))}
	if trial%2 == 1 {
		o.Connector = OffloadLMCache
	}
	if trial%5 == 2 {
		o.Secondary = []OffloadTier{{Name: "fs", Chunks: 1 + rng.IntN(400), ReadBW: 2e9, WriteBW: 1e9, Latency: time.Millisecond}}
	}
	c.Offload = o
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	n := 20 + rng.IntN(60)
	reqs := make([]*Request, n)
	for i := range reqs {
		segs := []workload.Segment{}
		if rng.IntN(3) != 0 {
			id := uint64(1 + rng.IntN(3))
			if content != shareSome {
				id = 1<<40 + uint64(i)
			}
			segs = append(segs, seg(id, 1+rng.IntN(200)))
		}
		segs = append(segs, seg(uint64(1000+i), 1+rng.IntN(150)))
		reqs[i] = req(int64(i), 1+rng.IntN(60), segs...)
		reqs[i].Private = content == uniquePrivate
	}
	var out []int64
	ended := map[int64]int{}
	got := map[int64]int{}
	var now time.Duration
	var ends []time.Duration // the batches in flight end at these times, in order
	next := 0
	var b kernel.Batch
	for steps := 0; ; steps++ {
		if steps > 200000 {
			t.Fatalf("trial %d: no progress", trial)
		}
		for j := rng.IntN(3); j > 0 && next < n; j-- {
			if r := reqs[next]; !e.Add(r, now) {
				ended[r.ID]++
			}
			next++
		}
		if rng.IntN(25) == 0 && next > 0 {
			r := reqs[rng.IntN(next)]
			switch r.Status {
			case StatusWaiting, StatusRunning, StatusPreempted, StatusWaitingForRemoteKVs:
				if !r.abortPending && e.Abort(r) {
					ended[r.ID]++
				}
			}
		}
		e.Wake(now)
		for !e.Busy() && e.HasWork() {
			if e.Schedule(now, &b) == 0 {
				break
			}
			if b.Tokens() > c.MaxNumBatchedTokens || b.SpecTokens > k*b.SpecRows || b.SpecRows > b.NumDecode {
				t.Fatalf("trial %d: batch over limits: %+v", trial, b)
			}
			start := now
			if len(ends) > 0 {
				start = max(start, ends[len(ends)-1])
			}
			ends = append(ends, start+time.Duration(1+rng.IntN(5))*time.Millisecond+e.StepTransferTime())
			if rng.IntN(2) == 0 {
				break // sometimes leave the queue short
			}
		}
		t0 := never
		if len(ends) > 0 {
			t0 = ends[0]
		}
		if next < n {
			t0 = min(t0, now+time.Millisecond)
		}
		if w := e.NextWake(); w < t0 {
			t0 = max(w, now)
		}
		if t0 == never {
			if e.HasWork() || e.Waiting() > 0 {
				t.Fatalf("trial %d: work queued, nothing pending: waiting %d arrived %d loading %d running %d", trial, e.waiting.len(), e.arrived.len(), len(e.loading), len(e.running))
			}
			break
		}
		now = t0
		if len(ends) > 0 && now == ends[0] {
			ends = ends[1:]
			for _, s := range e.Complete(now) {
				// A row that sampled and goes on has its rejected drafts
				// rolled back: every known token but the last is computed.
				if r := s.Req; r.Status == StatusRunning && !e.inFlight(r) && r.NumComputed != r.NumTokens()-1 {
					t.Fatalf("trial %d: request %d computed %d of %d tokens after sampling", trial, r.ID, r.NumComputed, r.NumTokens())
				}
				got[s.Req.ID] += s.Tokens
				out = append(out, s.Req.ID, int64(s.Tokens), int64(now))
				if s.Done {
					ended[s.Req.ID]++
				}
			}
			e.Wake(now)
		}
		for _, r := range reqs {
			if r.Status == StatusRunning && !e.inFlight(r) && r.NumComputed >= r.NumTokens() {
				t.Fatalf("trial %d: request %d computed %d of %d tokens between steps", trial, r.ID, r.NumComputed, r.NumTokens())
			}
			// Only verified tokens' blocks are registered or stored.
			if r.Status != StatusRejected && r.Status != StatusFinished && r.kv.numCached*bs > r.NumTokens() {
				t.Fatalf("trial %d: request %d registered %d blocks with %d known tokens", trial, r.ID, r.kv.numCached, r.NumTokens())
			}
			if r.Status != StatusRejected && r.off.nextStore*o.BlocksPerChunk*bs > r.NumTokens() {
				t.Fatalf("trial %d: request %d stored %d chunks with %d known tokens", trial, r.ID, r.off.nextStore, r.NumTokens())
			}
		}
		checkBlocks(t, e, append(slices.Clip(reqs), heldByStores(e)...))
	}
	for _, r := range reqs {
		if ended[r.ID] != 1 {
			t.Fatalf("trial %d: request %d (%v) ended %d times", trial, r.ID, r.Status, ended[r.ID])
		}
		if r.Status == StatusFinished && (r.NumOutput != r.MaxTokens || got[r.ID] != r.MaxTokens) {
			t.Fatalf("trial %d: request %d finished with %d outputs, %d streamed, max_tokens %d", trial, r.ID, r.NumOutput, got[r.ID], r.MaxTokens)
		}
		if r.Status != StatusFinished && r.Status != StatusAborted && r.Status != StatusRejected {
			t.Fatalf("trial %d: request %d left %v", trial, r.ID, r.Status)
		}
	}
	if e.HeldBlocks() != 0 {
		t.Fatalf("trial %d: %d blocks held at the end", trial, e.HeldBlocks())
	}
	if p := e.CPUTier().(*kvtier.Cache); p.Len() > p.Capacity() || p.PinnedChunks() != 0 || p.LiveRuns() != 0 {
		t.Fatalf("trial %d: CPU tier holds %d of %d, %d pinned, %d runs held with no transfer or request left", trial, p.Len(), p.Capacity(), p.PinnedChunks(), p.LiveRuns())
	}
	return e.Stats(), out
}

// TestSpecOffloadRandomisedInvariants runs specOffloadRun over many random
// settings and checks that the trials reached every path they check.
func TestSpecOffloadRandomisedInvariants(t *testing.T) {
	var total Stats
	for trial := 0; trial < 500; trial++ {
		st, _ := specOffloadRun(t, trial)
		total.Add(st)
	}
	if total.OffloadLoads == 0 || total.OffloadStores == 0 || total.OffloadTierHits[1] == 0 || total.Preemptions == 0 ||
		total.Aborted == 0 || total.SpecAccepted == 0 || total.SpecDraftTokens == total.SpecAccepted {
		t.Errorf("trials missed a path: %+v", total)
	}
}

// TestSpecOffloadDeterminism: the same settings and seed give the same
// samples and counters.
func TestSpecOffloadDeterminism(t *testing.T) {
	for trial := 0; trial < 12; trial++ {
		s1, o1 := specOffloadRun(t, trial)
		s2, o2 := specOffloadRun(t, trial)
		if s1 != s2 || !slices.Equal(o1, o2) {
			t.Fatalf("trial %d: two runs differ", trial)
		}
	}
}

// TestSpecLoadedRequestTakesLookahead: a request whose prompt KV the
// connector loads reserves, with its prompt's blocks, the lookahead slots
// of its first step after the load, which vLLM allocates when it admits
// a waiting request with computed tokens (effective_lookahead_tokens); a
// new request is admitted without them. Admitted after the load, the
// request needs no block; its first step samples one token and carries
// drafts.
func TestSpecLoadedRequestTakesLookahead(t *testing.T) {
	for _, look := range []bool{false, true} {
		shared, _ := kvtier.New(64, kvtier.LRU)
		mk := func() *Engine {
			c := scfg(4096, 16, 300, 16, []float64{0.5, 0.3, 0.1}, specdecode.Random, look)
			c.Offload = offCfg(0)
			c.Offload.CPU = shared
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		a, b := mk(), mk()
		drive(t, a, []arrival{{0, req(1, 1, seg(1, 1024))}}) // the tier holds the document's 16 chunks
		r := req(2, 4, seg(1, 1024), seg(2, 16))
		fresh := req(3, 4, seg(3, 16))
		want := 65 // the 1040-token prompt
		if look {
			want = 66 // and 3 lookahead slots
		}
		b.Add(r, 0)
		var bt kernel.Batch
		if b.Schedule(0, &bt) != 0 || r.Status != StatusWaitingForRemoteKVs || len(r.kv.blocks) != want {
			t.Fatalf("lookahead %v: want r loading with %d blocks: %v, %d blocks", look, want, r.Status, len(r.kv.blocks))
		}
		now := b.NextWake()
		b.Wake(now)
		b.Add(fresh, now)
		held := b.HeldBlocks()
		if b.Schedule(now, &bt) != 2 || r.Status != StatusRunning || r.NumComputed != 1040 {
			t.Fatalf("after the load: %v, computed %d", r.Status, r.NumComputed)
		}
		if len(r.kv.blocks) != want || len(fresh.kv.blocks) != 1 || b.HeldBlocks() != held+1 {
			t.Errorf("lookahead %v: loaded request holds %d blocks, want %d; new one %d, want 1 (16 tokens, no lookahead)",
				look, len(r.kv.blocks), want, len(fresh.kv.blocks))
		}
		ss := b.Complete(now + time.Millisecond)
		if len(ss) != 2 || ss[0].Tokens != 1 || r.spec.drafts != 3 {
			t.Fatalf("first step: %+v, drafts %d", ss, r.spec.drafts)
		}
		driveFrom(t, b, nil, now+time.Millisecond)
	}
}
