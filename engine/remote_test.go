package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"blis/kernel"
	"blis/specdecode"
	"blis/workload"
)

// TestRemotePrefillPath runs one disaggregated request through a prefill
// engine and a decode engine as vLLM's NixlConnector does: the prefill
// engine keeps the blocks after its one token until released; the decode
// engine allocates the prompt's blocks without a step, schedules nothing
// until the KV arrives, then computes the last prompt token and samples.
func TestRemotePrefillPath(t *testing.T) {
	p, _ := New(cfg(64, 4, 64, 4))
	d, _ := New(cfg(64, 4, 64, 4))
	var now time.Duration
	pre := req(1, 1, seg(7, 18))
	pre.KeepKV = true
	p.Add(pre, now)
	_, s := step(t, p, &now)
	if len(s) != 1 || !s[0].Done || pre.Status != StatusFinished {
		t.Fatalf("prefill: samples %+v status %v", s, pre.Status)
	}
	if p.HeldBlocks() != 5 || p.Kept() != 1 {
		t.Fatalf("prefill engine must keep the 5 blocks: held %d kept %d", p.HeldBlocks(), p.Kept())
	}

	r := req(1, 3, seg(7, 18))
	d.AddRemote(r, now)
	var b kernel.Batch
	if n := d.Schedule(now, &b); n != 0 {
		t.Fatalf("decode engine scheduled %d rows before the KV arrived", n)
	}
	got := d.TakeReserved(nil)
	if len(got) != 1 || got[0] != r || r.TransferBlocks != 5 || d.HeldBlocks() != 5 || r.Status != StatusWaitingForRemoteKVs {
		t.Fatalf("reservation: %d reserved, transfer %d blocks, held %d, status %v", len(got), r.TransferBlocks, d.HeldBlocks(), r.Status)
	}
	if d.HasWork() || d.Waiting() != 1 {
		t.Fatalf("a request waiting for KV is waiting but not schedulable: HasWork %v Waiting %d", d.HasWork(), d.Waiting())
	}
	d.RemoteKVDone(r, now)
	p.ReleaseKV(pre)
	if p.HeldBlocks() != 0 || p.Kept() != 0 {
		t.Fatalf("prefill blocks not freed: %d", p.HeldBlocks())
	}
	b, s = step(t, d, &now)
	if b.PrefillTokens != 1 || b.PrefillContext != 17 || len(s) != 1 || !s[0].First {
		t.Fatalf("first decode-side step: %+v samples %+v", b, s)
	}
	step(t, d, &now)
	_, s = step(t, d, &now)
	if !s[0].Done || d.HeldBlocks() != 0 || d.Stats().RemoteKVLoads != 1 {
		t.Fatalf("end: done %v held %d loads %d", s[0].Done, d.HeldBlocks(), d.Stats().RemoteKVLoads)
	}
}

// TestRemotePrefillWaitsForBlocks: a remote prefill whose prompt does not
// fit stays in the queue, as any request, until blocks free up; a local
// prefix hit is not transferred.
func TestRemotePrefillWaitsForBlocks(t *testing.T) {
	d, _ := New(cfg(64, 4, 8, 4)) // 7 usable blocks
	var now time.Duration
	a := req(1, 8, seg(1, 16)) // 4 blocks now, up to 6
	d.Add(a, now)
	step(t, d, &now)
	r := req(2, 2, seg(1, 8), seg(2, 8)) // shares a's first 2 blocks, needs 2 more... and 1 for output
	r2 := req(3, 2, seg(3, 20))          // 5 blocks: does not fit
	d.AddRemote(r2, now)
	d.AddRemote(r, now)
	var b kernel.Batch
	d.Schedule(now, &b)
	if got := d.TakeReserved(nil); len(got) != 0 {
		t.Fatalf("reserved %d requests with the head not fitting", len(got))
	}
	d.Complete(now + time.Millisecond)
	if !d.Abort(r2) || d.Waiting() != 1 {
		t.Fatalf("abort of a pending remote prefill")
	}
	d.Schedule(now, &b)
	got := d.TakeReserved(nil)
	if len(got) != 1 || r.CachedTokens != 8 || r.TransferBlocks != 2 {
		t.Fatalf("reserved %d, cached %d, transfer %d blocks (want 1, 8, 2)", len(got), r.CachedTokens, r.TransferBlocks)
	}
	held := d.HeldBlocks()
	if !d.Abort(r) || d.HeldBlocks() != held-2 || d.Loading() != 0 {
		t.Fatalf("abort while loading: held %d → %d, loading %d", held, d.HeldBlocks(), d.Loading())
	}
	d.RemoteKVDone(r, now) // the transfer's late completion changes nothing
	if d.Waiting() != 0 {
		t.Fatalf("an aborted request came back")
	}
}

// TestRemotePrefillRandomisedInvariants runs random requests through a
// prefill engine and a decode engine as the cluster loop does — the
// prefill copy keeps its blocks, the decode engine allocates the prompt's
// blocks, the KV arrives after a random delay, then the prefill copy's
// blocks are freed — and checks both engines' blocks against every
// request's references after every step, that no request is scheduled on
// the decode engine before its KV arrived, and that nothing leaks; some
// trials decode speculatively.
func TestRemotePrefillRandomisedInvariants(t *testing.T) {
	for trial := 0; trial < 120; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 13))
		bs := []int{1, 4, 16}[rng.IntN(3)]
		mk := func() Config {
			c := Config{
				MaxNumSeqs: 1 + rng.IntN(16), MaxNumBatchedTokens: 16 + rng.IntN(256), EnableChunkedPrefill: true,
				EnablePrefixCaching: rng.IntN(4) != 0, BlockSize: bs, NumGPUBlocks: 2 + rng.IntN(400/bs+8),
				MaxModelLen: 512, AsyncScheduling: rng.IntN(3) == 0,
			}
			if trial%2 == 1 {
				kinds := []string{"s", "sf", "fs"}[trial/2%3]
				c.KVCache = layout(1+trial%40, kinds)
				c.NumGPUBlocks *= len(kinds)
			}
			if trial%3 == 2 { // speculative decoding: lookahead slots reserved with the prompt
				k := 1 + trial%4
				sched, _ := specdecode.FromRates([]float64{0.6, 0.4, 0.2, 0.1}[:k])
				c.Spec = Speculation{NumTokens: k, Lookahead: trial%4 != 3, Acceptance: sched, Seed: uint64(trial), DropLastHitBlock: trial%5 < 3}
			}
			return c
		}
		p, err := New(mk())
		if err != nil {
			t.Fatal(err)
		}
		d, err := New(mk())
		if err != nil {
			t.Fatal(err)
		}
		n := 20 + rng.IntN(40)
		pres, decs := make([]*Request, n), make([]*Request, n)
		for i := range pres {
			segs := []workload.Segment{}
			if rng.IntN(2) == 0 {
				segs = append(segs, seg(uint64(1+rng.IntN(3)), 1+rng.IntN(100)))
			}
			segs = append(segs, seg(uint64(1000+i), 1+rng.IntN(150)))
			decs[i] = req(int64(i), 1+rng.IntN(40), segs...)
			pres[i] = &Request{ID: int64(i), Prompt: segs, PromptLen: decs[i].PromptLen, MaxTokens: 1, OutputID: decs[i].OutputID, KeepKV: true}
		}
		type arrival struct {
			at time.Duration
			i  int
		}
		var flying []arrival
		arrived := map[int64]bool{}
		ended := map[int64]int{}
		var now time.Duration
		next := 0
		for steps := 0; ; steps++ {
			if steps > 100000 {
				for i := 0; i < d.waiting.len(); i++ {
					r := d.waiting.buf[(d.waiting.head+i)%len(d.waiting.buf)]
					t.Logf("waiting %d: id %d status %v remote %d computed %d prompt %d blocks %d max %d", i, r.ID, r.Status, r.remote, r.NumComputed, r.PromptLen, len(r.kv.blocks), r.MaxTokens)
				}
				t.Logf("cfg %+v", d.cfg)
				t.Fatalf("trial %d: no progress: prefill waiting %d running %d held %d kept %d free %d; decode waiting %d running %d loading %d held %d free %d usable %d; flying %d next %d/%d", trial, p.Waiting(), p.Running(), p.HeldBlocks(), p.Kept(), p.FreeBlocks(), d.Waiting(), d.Running(), d.Loading(), d.HeldBlocks(), d.FreeBlocks(), d.UsableBlocks(), len(flying), next, n)
			}
			for k := rng.IntN(3); k > 0 && next < n; k-- {
				if !p.Add(pres[next], now) {
					ended[int64(next)]++
				}
				next++
			}
			// KV arrivals due now: the decode engine may schedule them, the
			// prefill engine frees the kept blocks.
			kept := flying[:0]
			for _, a := range flying {
				if a.at <= now {
					d.RemoteKVDone(decs[a.i], now)
					p.ReleaseKV(pres[a.i])
					arrived[int64(a.i)] = true
				} else {
					kept = append(kept, a)
				}
			}
			flying = kept
			var b kernel.Batch
			progressed := false
			if p.HasWork() && p.Schedule(now, &b) > 0 {
				progressed = true
				for _, s := range p.Complete(now + time.Millisecond) {
					if s.Done && !d.AddRemote(decs[s.Req.ID], now+time.Millisecond) {
						p.ReleaseKV(s.Req)
						ended[s.Req.ID]++
					}
				}
			}
			if d.HasWork() {
				rows := d.Schedule(now, &b)
				for _, r := range d.TakeReserved(nil) {
					flying = append(flying, arrival{now + time.Duration(rng.IntN(4))*time.Millisecond, int(r.ID)})
				}
				if rows > 0 {
					progressed = true
					for _, r := range d.scheduled {
						if !arrived[r.ID] {
							t.Fatalf("trial %d: request %d scheduled on the decode engine before its KV arrived", trial, r.ID)
						}
					}
					for _, s := range d.Complete(now + time.Millisecond) {
						if s.Done {
							ended[s.Req.ID]++
						}
					}
				}
			}
			checkBlocks(t, p, pres)
			checkBlocks(t, d, decs)
			if !progressed && len(flying) == 0 && next == n && !p.HasWork() && !d.HasWork() {
				break
			}
			now += time.Millisecond
		}
		for i := range decs {
			if ended[int64(i)] != 1 {
				t.Fatalf("trial %d: request %d ended %d times (status %v/%v)", trial, i, ended[int64(i)], pres[i].Status, decs[i].Status)
			}
		}
		if p.HeldBlocks() != 0 || d.HeldBlocks() != 0 || p.Kept() != 0 || d.Loading() != 0 {
			t.Fatalf("trial %d: leaked: prefill %d held %d kept; decode %d held %d loading", trial, p.HeldBlocks(), p.Kept(), d.HeldBlocks(), d.Loading())
		}
	}
}

// TestRemotePrefillReservesLookahead: with lookahead slots (speculative
// decoding), a remote prefill's reservation also holds the slots its first
// step takes, so it is admitted after the transfer without a block; the
// blocks the prefill engine sends are still the prompt's.
func TestRemotePrefillReservesLookahead(t *testing.T) {
	d, _ := New(scfg(64, 4, 64, 4, []float64{0.5, 0.3, 0.1}, specdecode.Random, true))
	var now time.Duration
	r := req(1, 3, seg(7, 18))
	d.AddRemote(r, now)
	var b kernel.Batch
	d.Schedule(now, &b)
	// 18 prompt tokens + 3 lookahead slots = 21: 6 blocks of 4; 5 are sent.
	if r.TransferBlocks != 5 || d.HeldBlocks() != 6 {
		t.Fatalf("transfer %d blocks, held %d (want 5, 6)", r.TransferBlocks, d.HeldBlocks())
	}
	d.RemoteKVDone(r, now)
	b, s := step(t, d, &now)
	if b.PrefillTokens != 1 || len(s) != 1 || !s[0].First || d.HeldBlocks() != 6 || r.spec.drafts != 3 {
		t.Fatalf("first step: %+v samples %+v held %d drafts %d", b, s, d.HeldBlocks(), r.spec.drafts)
	}
	for r.Status != StatusFinished {
		step(t, d, &now)
	}
	if d.HeldBlocks() != 0 {
		t.Fatalf("%d blocks held at the end", d.HeldBlocks())
	}
}

// TestRemotePrefillRefusesWhatLookaheadCannotFit: in a hybrid model,
// where a running request's sliding group holds few blocks but a remote
// prefill's reservation takes the prompt's blocks in every group, a pool
// that holds the prompt's blocks but not the lookahead slots reserved
// with them refuses the remote prefill rather than hold it for ever.
func TestRemotePrefillRefusesWhatLookaheadCannotFit(t *testing.T) {
	for _, look := range []bool{false, true} {
		c := scfg(4, 4, 1+11, 4, []float64{0.5, 0.3, 0.1}, specdecode.Random, look)
		c.KVCache = layout(8, "sf")
		d, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		r := req(1, 1, seg(7, 18)) // 5 blocks a group, 10 in all; 12 with 3 lookahead slots
		if ok := d.AddRemote(r, 0); ok == look {
			t.Errorf("lookahead %v: AddRemote %v (%s)", look, ok, r.RejectReason)
		}
	}
}
