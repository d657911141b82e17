package engine

import (
	"fmt"
	"slices"
	"time"
)

// Disaggregated prefill/decode, as vLLM's scheduler runs it with the
// NixlConnector (vLLM v0.11: vllm/v1/core/sched/scheduler.py
// Scheduler.schedule's load_kv_async path and _update_waiting_for_remote_kv;
// vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py
// NixlConnectorScheduler.get_num_new_matched_tokens and request_finished).
//
// The prefill engine runs the request with max_tokens 1 and
// do_remote_decode: it computes the prompt, samples one token and, on
// finishing, keeps the blocks (Request.KeepKV; request_finished returns
// delay_free_blocks) until the decode engine has read them (ReleaseKV).
//
// The decode engine gets the request with do_remote_prefill (AddRemote).
// It waits in the waiting queue like any request; when the scheduler
// reaches it, it looks its prompt up in the local prefix cache, and the
// connector claims every other prompt token as external and loaded
// asynchronously: the scheduler allocates blocks for the whole prompt
// without registering them in the prefix cache (delay_cache_blocks),
// marks the request WAITING_FOR_REMOTE_KVS and moves on, taking no token
// budget and no running slot. If the blocks do not fit it stops, as for
// any request. The caller collects the requests allocated so
// (TakeReserved) and starts their transfers; when one completes
// (RemoteKVDone) the blocks are registered, the request's computed tokens
// become the prompt less its last token (vLLM recomputes the last token to
// get the logits to sample from), and it rejoins the head of the waiting
// queue. Its first step computes that one token and samples its first
// output token; it then decodes as any request. A later preemption
// recomputes the prompt locally: the connector loads only once.

// AddRemote admits a request whose prompt's KV will be read from a prefill
// engine (kv_transfer_params do_remote_prefill), as Add does otherwise.
func (e *Engine) AddRemote(r *Request, now time.Duration) bool {
	// The prompt's blocks, with the lookahead slots, are allocated all at
	// once in every KV cache group (a sliding window frees the ones it
	// leaves only once the request runs), so a pool they cannot fit would
	// hold the request for ever.
	groups := 1
	if e.hybrid {
		groups = len(e.hy.windows)
	}
	slots := min(r.PromptLen+e.spec.look, e.cfg.MaxModelLen)
	if need := cdiv(slots, e.cfg.BlockSize) * groups; r.PromptLen >= 1 && need > e.pool.usable() {
		r.Arrived = now
		return e.reject(r, fmt.Sprintf("kv_capacity: the prompt's KV from the prefill engine needs %d KV blocks at once, the pool has %d", need, e.pool.usable()))
	}
	if !e.Add(r, now) {
		return false
	}
	r.remote = remotePending
	return true
}

// reserveRemote allocates r's prompt blocks beyond its local prefix-cache
// hit, with the lookahead slots of its first step after the transfer
// (speculative decoding; vLLM allocates those when it schedules that step,
// which can leave requests holding received KV waiting for each other's
// blocks for ever), or reports that the pool is short.
func (e *Engine) reserveRemote(r *Request, now time.Duration) bool {
	hits, hitBlocks := e.prefixHit(r) // nothing computed: r is new (AddRemote)
	n := r.NumTokens() - hitBlocks*e.cfg.BlockSize
	e.delayCache, e.look = true, e.spec.look
	ok := e.allocateSlots(r, n, hits, hitBlocks)
	e.delayCache, e.look = false, 0
	if !ok {
		return false
	}
	e.firstScheduled(r, now, hitBlocks*e.cfg.BlockSize)
	// The prompt's blocks are sent; the lookahead slots are not.
	r.TransferBlocks = cdiv(r.NumTokens(), e.cfg.BlockSize) - hitBlocks
	r.remote = remoteLoading
	r.Status = StatusWaitingForRemoteKVs
	e.loading = append(e.loading, r)
	e.reserved = append(e.reserved, r)
	e.stats.PeakUsedBlocks = max(e.stats.PeakUsedBlocks, e.HeldBlocks())
	return true
}

// TakeReserved appends to dst the remote-prefill requests whose blocks
// were allocated since the last call (their KV can now be sent), in
// allocation order.
func (e *Engine) TakeReserved(dst []*Request) []*Request {
	dst = append(dst, e.reserved...)
	clear(e.reserved)
	e.reserved = e.reserved[:0]
	return dst
}

// RemoteKVDone: r's prompt KV has arrived (the worker reported it in
// finished_recving). r becomes schedulable, ahead of the waiting queue,
// with its prompt, less the last token, computed.
func (e *Engine) RemoteKVDone(r *Request, now time.Duration) {
	if r.Status != StatusWaitingForRemoteKVs {
		return // aborted meanwhile
	}
	e.dropLoading(r)
	r.remote = remoteNone
	c := min(len(r.kv.blocks)*e.cfg.BlockSize, r.NumTokens())
	if c == r.NumTokens() {
		c--
	}
	if e.cfg.EnablePrefixCaching {
		e.cacheFullAny(r, c)
	}
	r.NumComputed = c
	r.Status = StatusWaiting
	r.readyAt = now
	e.stats.RemoteKVLoads++
	e.arrived.pushBack(r)
}

func (e *Engine) dropLoading(r *Request) {
	if i := slices.Index(e.loading, r); i >= 0 {
		e.loading = slices.Delete(e.loading, i, i+1)
	}
	if i := slices.Index(e.reserved, r); i >= 0 {
		e.reserved = slices.Delete(e.reserved, i, i+1)
	}
}

// ReleaseKV frees the blocks a finished KeepKV request held for its
// decode engine (the decode side reported the read done, NIXL's
// finished_sending, or the request was abandoned). Other requests: no-op.
func (e *Engine) ReleaseKV(r *Request) {
	if !r.kvKept {
		return
	}
	r.kvKept = false
	e.kept--
	e.freeBlocks(r)
}

// Kept is the number of finished requests holding blocks for a decode
// engine; Loading the requests waiting for remote KV.
func (e *Engine) Kept() int    { return e.kept }
func (e *Engine) Loading() int { return len(e.loading) }
