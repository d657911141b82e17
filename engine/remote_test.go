package engine

import (
	"testing"
	"time"

	"blis/kernel"
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
	d.RemoteKVDone(r)
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
	d.RemoteKVDone(r) // the transfer's late completion changes nothing
	if d.Waiting() != 0 {
		t.Fatalf("an aborted request came back")
	}
}
