package cluster

import (
	"fmt"
	"slices"
	"time"

	"blis/engine"
	"blis/fabric"
)

// Prefill/decode disaggregation as llm-d runs it with vLLM's NixlConnector.
//
// The router's assignment names a decode endpoint and, for a
// disaggregated request, a prefill endpoint (router.Assignment.Prefill).
// llm-d's routing sidecar on the decode pod (llm-d-routing-sidecar
// internal/proxy/connector_nixlv2.go, runNIXLProtocolV2, v0.2–v0.3; the
// same protocol in llm-d-inference-scheduler pkg/sidecar) then:
//
//  1. sends the request to the prefill pod with max_tokens 1, stream off
//     and kv_transfer_params {do_remote_decode: true}, and waits for the
//     whole response. The prefill engine computes the prompt (its own
//     prefix cache applies), samples one token and keeps the blocks
//     (engine Request.KeepKV: NixlConnector.request_finished returns
//     delay_free_blocks with remote_block_ids);
//  2. sends the original request (its max_tokens, stream) to its decode
//     vLLM with the returned kv_transfer_params (do_remote_prefill) and
//     streams that response to the client. The decode scheduler allocates
//     the prompt's blocks when the request reaches the head of its queue
//     (engine.AddRemote: WAITING_FOR_REMOTE_KVS; it waits in the queue if
//     they do not fit), its worker reads them from the prefill GPU over
//     NIXL (here: a fabric transfer of the blocks not already cached on
//     the decode engine, at the decode pool's bytes per block, between
//     the two ranks' places), and on the read's completion the prefill
//     engine frees its blocks (finished_sending) and the decode engine
//     schedules the request: its first step recomputes the last prompt
//     token and samples.
//
// So the client gets every token from the decode pod: its TTFT is the
// prefill, the transfer and the decode engine's first step (plus the
// frontend latency on the way back), and the prefill's token is never
// streamed. A request the prefill engine refuses fails with its reason, as
// the sidecar returns the prefill's error status. A client that gives up
// aborts whichever engine holds the request and frees the prefill
// engine's kept blocks at once (vLLM frees them when the decode side
// reads them, or after VLLM_NIXL_ABORT_REQUEST_TIMEOUT).
//
// The sidecar's two HTTP hops add nothing here: BLIS charges the frontend
// latency once, on the response path.

// Transfers moves KV caches between ranks (fabric.Transfers: every
// transfer in flight sharing the links it crosses). Ids are the loop's.
type Transfers interface {
	Start(now time.Duration, id int64, src, dst fabric.Place, bytes int64)
	Next() time.Duration
	Done(now time.Duration, dst []int64) []int64
}

// assignPD starts a disaggregated request: its prefill copy goes to
// endpoint pre; the request itself goes to endpoint dec once that ends.
func (l *loop) assignPD(r *engine.Request, dec, pre int) {
	if l.xf == nil {
		l.fault(fmt.Errorf("cluster: request %d was disaggregated (prefill on %s) but the cluster has no fabric to move its KV", r.ID, l.eps[pre].name))
		return
	}
	l.pd = true
	st := &l.reqs[r.Handle-1]
	if st.pre == nil {
		st.pre = &engine.Request{}
	} else {
		st.pre.Reset()
	}
	p := st.pre
	p.ID, p.Prompt, p.PromptLen, p.MaxTokens = r.ID, r.Prompt, r.PromptLen, 1
	p.OutputID, p.Private, p.Handle, p.KeepKV = r.OutputID, r.Private, r.Handle, true
	rank := l.eps[pre].pickRank()
	st.ep, st.pep, st.prank, st.phase = int32(dec), int32(pre), int32(rank), phasePrefill
	if l.cl.Timed() {
		l.res.Replicas[dec].Routed++
	}
	if !l.engs[rank].Add(p, l.now) {
		r.Status, r.RejectReason, r.Arrived = engine.StatusRejected, p.RejectReason, l.now
		l.ended(st)
		return
	}
	l.inEngines++
	l.mark(pre)
}

// prefillDone: the prefill copy of st's request left the prefill engine,
// finished (its blocks kept) or aborted. The request goes to its decode
// endpoint.
func (l *loop) prefillDone(st *reqState, aborted bool) {
	l.inEngines--
	if aborted || st.phase == phaseCancelled {
		l.engs[st.prank].ReleaseKV(st.pre)
		l.mark(int(st.pep))
		l.engineDone(st)
		return
	}
	if l.cl.Timed() {
		l.res.Replicas[st.pep].Prefilled++
	}
	r := st.req
	rank := l.eps[st.ep].pickRank()
	st.rank = int32(rank)
	r.Preemptions = st.pre.Preemptions
	if !l.engs[rank].AddRemote(r, l.now) {
		l.engs[st.prank].ReleaseKV(st.pre)
		l.mark(int(st.pep))
		l.ended(st)
		return
	}
	st.phase = phaseKV
	l.inEngines++
	l.mark(int(st.ep))
}

// clientSamples is a step's samples less the prefill copies' tokens, which
// the sidecar never streams.
func (l *loop) clientSamples(samples []engine.Sample) []engine.Sample {
	if !l.pd {
		return samples
	}
	k := 0
	for ; k < len(samples); k++ {
		if r := samples[k].Req; r == l.reqs[r.Handle-1].pre {
			break
		}
	}
	if k == len(samples) {
		return samples
	}
	l.toks = append(l.toks[:0], samples[:k]...)
	for _, s := range samples[k:] {
		if s.Req != l.reqs[s.Req.Handle-1].pre {
			l.toks = append(l.toks, s)
		}
	}
	return l.toks
}

// startTransfers starts the KV transfers of the remote prefills eng
// allocated blocks for in its last Schedule.
func (l *loop) startTransfers(eng *engine.Engine) {
	l.reserved = eng.TakeReserved(l.reserved[:0])
	for _, r := range l.reserved {
		slot := r.Handle - 1
		st := &l.reqs[slot]
		st.xferStarted = l.now
		// The request was first scheduled, and its prefix cache looked
		// up, on the prefill engine.
		r.FirstScheduled, r.CachedTokens = st.pre.FirstScheduled, st.pre.CachedTokens
		l.xf.Start(l.now, int64(slot)<<32|int64(st.gen), l.places[st.prank], l.places[st.rank], l.kvBytes(st))
	}
}

func (l *loop) kvBytes(st *reqState) int64 {
	return int64(float64(st.req.TransferBlocks) * l.eps[st.ep].blockBytes)
}

// xferAt is when the next KV transfer completes (never: none in flight).
func (l *loop) xferAt() time.Duration {
	if l.xf == nil {
		return never
	}
	t := l.xf.Next()
	if t == never {
		return never
	}
	return max(t, l.now)
}

// transfersDone: KV transfers complete now. The decode engine may schedule
// each request; the prefill engine frees its blocks. A transfer whose
// request was cancelled meanwhile changes nothing (the cancel freed both).
func (l *loop) transfersDone() {
	l.doneIDs = l.xf.Done(l.now, l.doneIDs[:0])
	if len(l.doneIDs) == 0 {
		// Next may be early (a flow finished first and re-shared its
		// links); it then moves on. One that does not would spin the loop.
		if l.xf.Next() <= l.now {
			l.fault(fmt.Errorf("cluster: the fabric's next completion stays at %v with none complete", l.now))
		}
		return
	}
	timed := l.cl.Timed()
	for _, id := range l.doneIDs {
		slot := int(id >> 32)
		if slot < 0 || slot >= len(l.reqs) {
			continue
		}
		st := &l.reqs[slot]
		if st.phase != phaseKV || st.gen != uint32(id) {
			continue
		}
		if timed {
			b := l.kvBytes(st)
			rd, rp := &l.res.Replicas[st.ep], &l.res.Replicas[st.pep]
			rd.Decoded++
			rd.KVBytesReceived += b
			rp.KVBytesSent += b
			pi := l.eps[st.ep].poolIdx
			l.xferTimes[pi] = append(l.xferTimes[pi], l.now-st.xferStarted)
		}
		l.engs[st.rank].RemoteKVDone(st.req, l.now)
		st.phase = phaseServing
		l.mark(int(st.ep))
		l.engs[st.prank].ReleaseKV(st.pre)
		l.mark(int(st.pep))
	}
	l.routerStep()
}

// cancelPD: the client gave up on a disaggregated request before its KV
// arrived.
func (l *loop) cancelPD(st *reqState) {
	st.gen++ // its transfer's completion is stale
	if st.phase == phasePrefill {
		st.phase = phaseCancelled
		if l.engs[st.prank].Abort(st.pre) {
			l.inEngines--
			l.engineDone(st)
		}
		l.mark(int(st.pep))
		return
	}
	st.phase = phaseCancelled
	l.engs[st.rank].Abort(st.req) // waiting or loading: never in a step
	l.inEngines--
	l.engs[st.prank].ReleaseKV(st.pre)
	l.mark(int(st.ep))
	l.mark(int(st.pep))
	l.engineDone(st)
}

// poolResults sums the replicas' counters pool by pool and the pools'
// transfer times.
func (l *loop) poolResults() {
	for i := range l.res.Pools {
		p := &l.res.Pools[i]
		*p = PoolResult{Name: p.Name, Role: p.Role, Replicas: p.Replicas}
		ts := l.xferTimes[i]
		p.Transfers = int64(len(ts))
		if len(ts) > 0 {
			var sum time.Duration
			for _, t := range ts {
				sum += t
			}
			p.TransferMean = sum / time.Duration(len(ts))
			s := slices.Clone(ts)
			slices.Sort(s)
			p.TransferP99 = s[(len(s)*99+99)/100-1]
		}
	}
	for i := range l.eps {
		r := &l.res.Replicas[i]
		p := &l.res.Pools[l.eps[i].poolIdx]
		p.Routed += r.Routed
		p.Completed += r.Completed
		p.Prefilled += r.Prefilled
		p.Decoded += r.Decoded
		p.KVBytesSent += r.KVBytesSent
		p.KVBytesReceived += r.KVBytesReceived
	}
}
