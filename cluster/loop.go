package cluster

import (
	"fmt"
	"time"

	"blis/client"
	"blis/engine"
	"blis/fabric"
	"blis/kernel"
	"blis/metrics"
	"blis/router"
	"blis/sim"
)

// loop is one run: the clock, the event queue, the endpoints, the router
// and the requests the client made, driven in simulated time order. It
// serves the client through client.Server.
//
// Its cost per event does not grow with the number of endpoints: only the
// endpoints that got work or ended a step since the last pass are
// scheduled (ready), and idleness is kept in counters. Only the router's
// scrapes visit every endpoint, once per ScrapeInterval.
type loop struct {
	cfg Config
	cl  *client.Client
	rec *metrics.Recorder
	rt  router.Router // nil: one endpoint gets everything

	q   sim.Queue
	now time.Duration

	eps  []endpoint
	engs []*engine.Engine // every rank of every endpoint, endpoint by endpoint
	home []int32          // each rank's endpoint, by global rank

	// reqs holds every request the client made, by Handle − 1; a slot is
	// reused once both the client and the engines are done with it.
	reqs     []reqState
	freeReqs []int32

	ready     []int32 // endpoints that may start a step (endpoint.ready marks them)
	stepping  int     // steps in flight
	inEngines int     // requests an engine holds (waiting, running, or aborted in a step)
	live      int     // requests sent and not yet ended for both the client and the servers

	// Router state: the next scrape, KV events or other calls since the
	// last Ready (routerDirty), a Ready call in progress, and the last
	// instant the router's own wake-up was served.
	nextScrape  time.Duration
	scrapeEvery time.Duration
	kvSinks     []kvSink
	routerDirty bool
	pumping     bool
	lastWake    time.Duration
	woke        bool

	batch kernel.Batch
	res   Result

	// Pipeline parallelism: when each stage of each rank is next free
	// (by global rank; nil for ranks without stages), and a scratch list.
	stageFree [][]time.Duration
	stageBuf  []kernel.Breakdown
	err       error // a router broke its contract

	// Disaggregation (pd.go): each rank's place on the fabric, the KV
	// transfers in flight, scratch lists, and each pool's timed transfer
	// durations.
	places    []fabric.Place
	xf        Transfers
	reserved  []*engine.Request
	doneIDs   []int64
	toks      []engine.Sample
	xferTimes [][]time.Duration
	pd        bool // a request was disaggregated

	// KV offloading (offload.go): each rank's pending wake-up event (by
	// global rank; nil when no engine offloads, so the loop pays nothing).
	offWake []time.Duration
}

// A request's phase in the loop.
const (
	phaseFree       uint8 = iota
	phaseMade             // made by the client, not sent yet
	phaseRouting          // submitted to the router, no decision yet
	phaseServing          // in an engine (waiting, running or finished there)
	phaseDelivering       // finished; its response is on the way to the client
	phaseCancelled        // the client gave up; still in an engine's step, or at the router, until it lets go
	phasePrefill          // disaggregated: its prefill runs on the prefill endpoint (reqState.pre)
	phaseKV               // disaggregated: at the decode engine, waiting for blocks or for its KV to arrive
)

// reqState is the loop's record of one request (the engine sees only its
// Handle, this slot + 1).
type reqState struct {
	req   *engine.Request
	rr    *router.Request // what the router sees of it (made once per slot: the router keeps the pointer)
	ep    int32           // the endpoint serving it
	rank  int32           // the global rank serving it
	phase uint8
	gen   uint32 // moves on when a pending delivery or transfer must not happen

	// A disaggregated request: the prefill engine's copy (made once per
	// slot), its endpoint and rank (−1: not disaggregated), and when its
	// KV transfer started.
	pre         *engine.Request
	pep, prank  int32
	xferStarted time.Duration
}

func newLoop(cfg Config, rec *metrics.Recorder) (*loop, error) {
	l := &loop{cfg: cfg, rec: rec, rt: cfg.Router, nextScrape: never, xf: cfg.Transfers}
	if err := l.buildEndpoints(); err != nil {
		return nil, err
	}
	if l.xf == nil && cfg.Fabric != nil {
		l.xf = fabric.New(cfg.Fabric)
	}
	l.initOffload()
	if l.rt == nil {
		return l, nil
	}
	eps := make([]router.Endpoint, len(l.eps))
	for i := range l.eps {
		e := &l.eps[i]
		labels := make(map[string]string, len(e.labels)+1)
		for k, v := range e.labels {
			labels[k] = v
		}
		labels["llm-d.ai/role"] = [...]string{"both", "prefill", "decode"}[e.role]
		eps[i] = router.Endpoint{Name: e.name, Pool: e.pool, Role: e.role, Labels: labels,
			BlockSize: e.cfg.BlockSize, KVBlocks: e.n * (e.cfg.NumGPUBlocks - 1), MaxNumSeqs: e.n * e.cfg.MaxNumSeqs}
	}
	if err := l.rt.Start(eps, cfg.Seed); err != nil {
		return nil, fmt.Errorf("cluster: router: %w", err)
	}
	if l.rt.KVEvents() {
		l.kvSinks = make([]kvSink, len(l.eps))
		for i := range l.eps {
			l.kvSinks[i] = kvSink{l: l, ep: i}
			for _, eng := range l.eps[i].engs {
				eng.SetKVEvents(&l.kvSinks[i])
			}
		}
	}
	if l.scrapeEvery = l.rt.ScrapeInterval(); l.scrapeEvery > 0 {
		l.nextScrape = 0
	}
	return l, nil
}

// kvSink forwards one endpoint's KV events to the router.
type kvSink struct {
	l  *loop
	ep int
}

func (k *kvSink) BlockStored(h uint64) {
	k.l.rt.BlockStored(k.l.now, k.ep, h)
	k.l.routerDirty = true
}

func (k *kvSink) BlockRemoved(h uint64) {
	k.l.rt.BlockRemoved(k.l.now, k.ep, h)
	k.l.routerDirty = true
}

// client.Server

func (l *loop) Now() time.Duration { return l.now }

func (l *loop) NewRequest() *engine.Request {
	var slot int32
	if n := len(l.freeReqs); n > 0 {
		slot = l.freeReqs[n-1]
		l.freeReqs = l.freeReqs[:n-1]
		l.reqs[slot].req.Reset()
	} else {
		slot = int32(len(l.reqs))
		l.reqs = append(l.reqs, reqState{req: &engine.Request{}})
	}
	st := &l.reqs[slot]
	st.phase, st.ep, st.rank, st.pep, st.prank = phaseMade, -1, -1, -1, -1
	if l.rt != nil && st.rr == nil {
		st.rr = &router.Request{}
	}
	st.req.Handle = uint64(slot) + 1
	return st.req
}

func (l *loop) Drop(r *engine.Request) { l.release(r) }

// release frees r's slot: nobody holds r any more.
func (l *loop) release(r *engine.Request) {
	slot := int32(r.Handle - 1)
	st := &l.reqs[slot]
	if st.phase != phaseMade {
		l.live--
	}
	st.phase = phaseFree
	st.gen++
	l.freeReqs = append(l.freeReqs, slot)
}

func (l *loop) At(ev sim.Event) { l.q.Push(ev) }

// Send hands r to the router, or with none to the only endpoint.
func (l *loop) Send(r *engine.Request, at time.Duration, session uint64) {
	l.live++
	if l.rt == nil {
		l.assign(r, 0, at)
		return
	}
	st := &l.reqs[r.Handle-1]
	*st.rr = router.Request{ID: r.ID, Prompt: r.Prompt, PromptLen: r.PromptLen, MaxTokens: r.MaxTokens,
		Session: session, Handle: r.Handle}
	st.phase = phaseRouting
	l.rt.Submit(l.now, st.rr)
	l.pump()
}

// pump collects the router's decisions and acts on them, until it has no
// more (acting on one can make others: a refusal ends a request). A call
// made while one runs (a refusal's Finished) is covered by the running one.
func (l *loop) pump() {
	if l.rt == nil || l.pumping {
		return
	}
	l.pumping = true
	l.routerDirty = false
	for {
		as := l.rt.Ready(l.now)
		if len(as) == 0 {
			break
		}
		for i := range as {
			l.route(&as[i])
		}
	}
	l.pumping = false
}

// route acts on one decision of the router.
func (l *loop) route(a *router.Assignment) {
	h := a.Req.Handle
	if h == 0 || h > uint64(len(l.reqs)) || l.reqs[h-1].rr != a.Req {
		l.fault(fmt.Errorf("cluster: the router returned a request it was not given (handle %d)", h))
		return
	}
	st := &l.reqs[h-1]
	r := st.req
	switch {
	case st.phase == phaseCancelled:
		// The client gave up while the request waited at the router.
		if !a.Rejected && a.Endpoint >= 0 && a.Endpoint < len(l.eps) {
			l.rt.Finished(l.now, a.Req, a.Endpoint)
		}
		l.release(r)
	case st.phase != phaseRouting:
		l.fault(fmt.Errorf("cluster: the router decided twice on request %d", r.ID))
	case a.Rejected:
		r.Status, r.RejectReason, r.Arrived = engine.StatusRejected, a.Reason, l.now
		if r.RejectReason == "" {
			r.RejectReason = "router: rejected, no reason given"
		}
		l.cl.Ended(r)
		l.release(r)
	case a.Endpoint < 0 || a.Endpoint >= len(l.eps):
		l.fault(fmt.Errorf("cluster: the router sent request %d to endpoint %d of %d", r.ID, a.Endpoint, len(l.eps)))
	case a.Prefill >= len(l.eps):
		l.fault(fmt.Errorf("cluster: the router chose prefill endpoint %d of %d for request %d", a.Prefill, len(l.eps), r.ID))
	case a.Prefill >= 0 && a.Prefill != a.Endpoint:
		l.assignPD(r, a.Endpoint, a.Prefill)
	default:
		l.assign(r, a.Endpoint, l.now)
	}
}

// fault records a router that broke its contract; the run stops with it.
func (l *loop) fault(err error) {
	if l.err == nil {
		l.err = err
	}
}

// assign gives r to endpoint ep, whose DP balancer picks the rank. A
// request the engine refuses goes back to the client at once.
func (l *loop) assign(r *engine.Request, ep int, at time.Duration) {
	st := &l.reqs[r.Handle-1]
	rank := l.eps[ep].pickRank()
	st.ep, st.rank, st.phase = int32(ep), int32(rank), phaseServing
	if l.cl.Timed() {
		l.res.Replicas[ep].Routed++
	}
	if !l.engs[rank].Add(r, at) {
		l.ended(st) // refused
		return
	}
	l.inEngines++
	l.mark(ep)
}

// mark queues endpoint ep for the next scheduling pass.
func (l *loop) mark(ep int) {
	if e := &l.eps[ep]; !e.ready {
		e.ready = true
		l.ready = append(l.ready, int32(ep))
	}
}

// Cancel: the client gave up on r. The engine aborts it (vLLM's abort on a
// client disconnect); r is reused once the engine has let go of it.
func (l *loop) Cancel(r *engine.Request) {
	st := &l.reqs[r.Handle-1]
	switch st.phase {
	case phaseDelivering:
		// The engine was done with it; the delivery goes stale, and the
		// response ends for the router now.
		l.engineDone(st)
	case phaseRouting:
		st.phase = phaseCancelled // released when the router decides
	case phaseServing:
		st.phase = phaseCancelled
		st.gen++
		if l.engs[st.rank].Abort(r) {
			l.inEngines--
			l.engineDone(st)
		}
		l.mark(int(st.ep)) // the abort freed blocks
	case phasePrefill, phaseKV:
		l.cancelPD(st)
	}
}

// engineDone: the engine let go of a cancelled request.
func (l *loop) engineDone(st *reqState) {
	l.routerFinished(st)
	l.release(st.req)
}

// ended: st's request ended for the client (its response completed, or an
// engine refused it); the router hears first, then the client.
func (l *loop) ended(st *reqState) {
	l.routerFinished(st)
	l.cl.Ended(st.req)
	l.release(st.req)
}

// routerFinished tells the router st's request left its endpoint.
func (l *loop) routerFinished(st *reqState) {
	if l.rt != nil {
		l.rt.Finished(l.now, st.rr, int(st.ep))
		l.routerDirty = true
	}
}

// Skip moves the clock to the next scheduled event, passing over stale
// ones (client.Server.Skip).
func (l *loop) Skip() time.Duration {
	ev, ok := l.q.Peek()
	for ok && ev.Kind >= 0 && l.cl.Stale(ev) {
		l.q.Pop()
		ev, ok = l.q.Peek()
	}
	if !ok || ev.At <= l.now {
		return 0
	}
	j := ev.At - l.now
	l.now = ev.At
	return j
}

func (l *loop) Idle() bool {
	return l.q.Len() > 0 && l.stepping == 0 && l.inEngines == 0
}

func (l *loop) Deferrable() bool { return len(l.engs) == 1 && l.rt == nil }

func (l *loop) Backlogged() bool {
	return l.engs[0].Waiting() >= l.eps[0].cfg.MaxNumSeqs
}

// The run.

func (l *loop) run() (Result, error) {
	cl := l.cl
	if err := cl.Start(l); err != nil {
		return l.result(), err
	}
	for !cl.Stopped() {
		// A result file that can no longer be written (a full disk) ends
		// the run: what follows could not be recorded.
		if err := l.rec.Err(); err != nil {
			return l.result(), err
		}
		cl.Settle()
		if err := l.startSteps(); err != nil {
			return l.result(), err
		}
		if l.err != nil {
			return l.result(), l.err
		}
		t := min(cl.Wake(), l.routerWake(), l.scrapeAt(), l.xferAt())
		ev, ok := l.q.Peek()
		if ok && ev.At < t {
			t = ev.At
		}
		if t == never {
			break
		}
		l.now = t
		// Handle everything due at this instant before scheduling, so a step
		// sees all requests that arrived by its start: queue events first
		// (a response at the deadline instant beats its timeout), then the
		// client's deadlines, then the router's scrapes and wake-up, until
		// none has more.
		for !cl.Stopped() {
			if ev, ok := l.q.Peek(); ok && ev.At == l.now {
				l.q.Pop()
				l.dispatch(ev)
				continue
			}
			if l.xferAt() <= l.now {
				l.transfersDone()
				continue
			}
			if cl.Wake() <= l.now {
				cl.Fire()
				continue
			}
			if l.scrapeAt() <= l.now {
				l.scrape()
				continue
			}
			if l.routerWake() <= l.now {
				l.woke, l.lastWake = true, l.now
				l.routerDirty = true
				l.routerStep()
				continue
			}
			break
		}
	}
	res, stalled, inFlight, err := cl.Finish(anyWork(l.engs))
	l.res.Result = res
	if err == nil && stalled {
		w, r, _ := counts(l.engs)
		err = fmt.Errorf("%w: %d waiting, %d running, %d in flight", ErrStalled, w, r, inFlight)
	}
	return l.servers(), err
}

// result is the result so far, for a run that ends in an error.
func (l *loop) result() Result {
	l.res.Result = l.cl.Result()
	return l.servers()
}

// servers fills in the servers' part of the result.
func (l *loop) servers() Result {
	l.res.Engine = sumStats(l.engs)
	for i := range l.eps {
		l.res.Replicas[i].Engine = sumStats(l.eps[i].engs)
	}
	l.poolResults()
	return l.res
}

func (l *loop) dispatch(ev sim.Event) {
	switch ev.Kind {
	case evStepEnd:
		l.stepping--
		l.endStep(ev.Target)
	case evDeliver:
		l.deliver(ev)
	case evOffload:
		l.offloadWake(ev)
	default:
		l.cl.Timer(ev)
	}
}

// deliver: a response the engine finished FrontendLatency ago reaches the
// client. One whose request timed out in between was already recorded
// failed (its generation moved on).
func (l *loop) deliver(ev sim.Event) {
	st := &l.reqs[ev.Target]
	if st.phase != phaseDelivering || int64(st.gen) != ev.Arg {
		return
	}
	l.respond(st)
	l.routerStep()
}

// respond: r's response has ended for the client.
func (l *loop) respond(st *reqState) {
	if l.cl.Timed() {
		l.res.Replicas[st.ep].Completed++
	}
	l.ended(st)
}

// routerStep collects the router's decisions when it saw something happen
// (routerDirty), then lets the client send what it can.
func (l *loop) routerStep() {
	if l.routerDirty {
		l.pump()
	}
	l.cl.Resume()
}

// routerWake is when the router next needs Ready called by itself, never
// earlier than now; a wake-up already served at this instant is not
// served again (a router whose Wake does not move on cannot spin the loop).
func (l *loop) routerWake() time.Duration {
	if l.rt == nil {
		return never
	}
	w := l.rt.Wake()
	if w > l.now {
		return w
	}
	if l.woke && l.lastWake == l.now {
		return never
	}
	return l.now
}

// scrapeAt is the next scrape, while the run has work: a request in flight
// or an event still to come (an idle run must end, not scrape on).
func (l *loop) scrapeAt() time.Duration {
	if l.nextScrape == never || (l.live == 0 && l.q.Len() == 0) {
		return never
	}
	return max(l.nextScrape, l.now)
}

// scrape reads every endpoint's /metrics for the router: waiting and
// running requests summed over its ranks, and vllm:kv_cache_usage_perc,
// the share of its usable KV blocks in use.
func (l *loop) scrape() {
	for i := range l.eps {
		var m router.Metrics
		held, usable := 0, 0
		for _, e := range l.eps[i].engs {
			m.Waiting += e.Waiting()
			m.Running += e.Running()
			held += e.HeldBlocks()
			usable += e.UsableBlocks()
		}
		if usable > 0 {
			m.KVUsage = float64(held) / float64(usable)
		}
		l.rt.Scrape(l.now, i, m)
	}
	l.nextScrape = l.now + l.scrapeEvery
	l.routerDirty = true
	l.routerStep()
}

// startSteps starts every step that can start now, on the endpoints that
// got work or ended a step since the last pass: each idle rank's own step,
// or a lockstep group's when no rank of it is computing. The router's
// decisions on the KV events those steps make can give endpoints more
// work, which is scheduled in the same instant.
func (l *loop) startSteps() error {
	// An engine with work that can form no batch may be waiting on
	// another's step (a decode engine freeing the blocks a prefill engine
	// keeps for it): judge a stall once every ready endpoint had its turn.
	stuck := false
	for len(l.ready) > 0 {
		for i := 0; i < len(l.ready); i++ {
			ep := int(l.ready[i])
			e := &l.eps[ep]
			e.ready = false
			if e.batches != nil {
				stuck = l.startGroupStep(ep) || stuck
				if l.offWake != nil {
					l.armOffload(ep)
				}
				continue
			}
			for k, eng := range e.engs {
				if eng.Busy() || !eng.HasWork() {
					continue
				}
				rows := eng.Schedule(l.now, &l.batch)
				l.startTransfers(eng)
				if rows == 0 {
					stuck = stuck || eng.InFlight() == 0
					continue
				}
				if pl, ok := e.pricer.(*kernel.Pipeline); ok {
					l.pipelineStep(ep, rows, pl, e.first+k)
					if !eng.Busy() && eng.HasWork() {
						l.mark(ep) // the engine core schedules again at once (step_with_batch_queue)
					}
					continue
				}
				bd := e.pricer.StepTime(&l.batch)
				if l.offWake != nil {
					bd.Total += eng.StepTransferTime() // LMCache's in-step load and save
				}
				l.stepStarted(ep, rows, bd, e.first+k)
			}
			if l.offWake != nil {
				l.armOffload(ep)
			}
		}
		l.ready = l.ready[:0]
		if l.routerDirty {
			l.routerStep()
		}
	}
	if stuck {
		return l.stalled()
	}
	return nil
}

// startGroupStep schedules every rank of endpoint ep's lockstep DP group at
// once; ranks with nothing to schedule run the dummy batch
// kernel.GroupStepTime prices. It reports a group with work that formed
// no batch.
func (l *loop) startGroupStep(ep int) (stuck bool) {
	e := &l.eps[ep]
	if anyBusy(e.engs) || !anyWork(e.engs) {
		return false
	}
	rows := 0
	for i, eng := range e.engs {
		e.batches[i] = kernel.Batch{}
		if eng.HasWork() {
			rows += eng.Schedule(l.now, &e.batches[i])
			l.startTransfers(eng)
		}
	}
	if rows == 0 {
		return true
	}
	bd := kernel.GroupStepTime(e.pricer, e.batches)
	if l.offWake != nil {
		// The group waits for its slowest rank's in-step KV transfers.
		var x time.Duration
		for _, eng := range e.engs {
			x = max(x, eng.StepTransferTime())
		}
		bd.Total += x
	}
	l.stepStarted(ep, rows, bd, -1-ep)
	return false
}

// pipelineStep runs the batch just scheduled on global rank target through
// its pipeline's stages: it enters stage s when it has left stage s − 1 and
// the batch ahead of it has left stage s; the time it waits for a busy stage
// is the pipeline bubble. Its tokens come out when it leaves the last stage.
// Batches leave in the order they entered, as vLLM's batch queue completes
// them.
func (l *loop) pipelineStep(ep, rows int, pl *kernel.Pipeline, target int) {
	if l.stageFree == nil {
		l.stageFree = make([][]time.Duration, len(l.engs))
	}
	free := l.stageFree[target]
	if free == nil {
		free = make([]time.Duration, len(pl.Stages))
		l.stageFree[target] = free
	}
	l.stageBuf = pl.StageTimes(&l.batch, l.stageBuf)
	if l.offWake != nil {
		// LMCache's in-step KV load and save: each stage moves its own
		// layers' share.
		if x := l.engs[target].StepTransferTime(); x > 0 {
			for s := range l.stageBuf {
				l.stageBuf[s].Total += x / time.Duration(len(l.stageBuf))
			}
		}
	}
	t, wait := l.now, time.Duration(0)
	var sum kernel.Breakdown
	for s, bd := range l.stageBuf {
		if free[s] > t {
			wait += free[s] - t
			t = free[s]
		}
		t += max(bd.Total, time.Nanosecond)
		free[s] = t
		sum.Add(bd)
	}
	// The step's time on the clock is its time in the pipeline, waits
	// included (at least a nanosecond per stage: it advances).
	sum.Total = t - l.now
	if l.cl.Timed() {
		l.res.PipelineBubble += wait
		l.res.Replicas[ep].PipelineBubble += wait
	}
	l.stepStarted(ep, rows, sum, target)
}

// stalled reports a deadlock: work no engine can schedule, and nothing
// (a step, an event — a KV offload transfer's completion among them —, a
// client deadline) that could change that.
func (l *loop) stalled() error {
	if l.q.Len() == 0 && l.cl.Wake() == never && l.stepping == 0 && l.routerWake() == never && l.xferAt() == never {
		w, r, free := counts(l.engs)
		return fmt.Errorf("%w: %d waiting, %d running, %d free blocks", ErrStalled, w, r, free)
	}
	return nil
}

// stepStarted accounts a step of endpoint ep priced bd and queues its end;
// target is the global rank stepping, or −1 − ep for a lockstep group.
func (l *loop) stepStarted(ep, rows int, bd kernel.Breakdown, target int) {
	if bd.Total <= 0 {
		bd.Total = time.Nanosecond // time must advance
	}
	if l.cl.Timed() {
		addStep(&l.res.StepTime, &l.res.TimedSteps, bd)
		rr := &l.res.Replicas[ep]
		addStep(&rr.StepTime, &rr.TimedSteps, bd)
		l.rec.AddStep(rows)
	}
	l.stepping++
	l.q.Push(sim.Event{At: l.now + bd.Total, Kind: evStepEnd, Target: target})
}

func addStep(sum *kernel.Breakdown, n *int64, bd kernel.Breakdown) {
	*n++
	sum.Add(bd)
}

// endStep ends the step of global rank target, or of every computing rank
// of a lockstep group (target −1 − endpoint).
func (l *loop) endStep(target int) {
	ep := 0
	if target >= 0 {
		ep = int(l.home[target])
		l.complete(l.engs[target])
	} else {
		ep = -1 - target
		for _, e := range l.eps[ep].engs {
			if e.Busy() {
				l.complete(e)
			}
		}
	}
	l.mark(ep)
	l.routerStep()
}

// complete ends e's step in flight: the client gets its tokens, and each
// finished response goes back to it, FrontendLatency later.
func (l *loop) complete(e *engine.Engine) {
	samples := e.Complete(l.now)
	if l.offWake != nil {
		e.Wake(l.now) // the step's KV stores start now
	}
	l.cl.Tokens(l.clientSamples(samples))
	for i := range samples {
		s := &samples[i]
		if !s.Done {
			continue
		}
		r := s.Req
		st := &l.reqs[r.Handle-1]
		if r == st.pre {
			l.prefillDone(st, s.Aborted)
			continue
		}
		l.inEngines--
		switch {
		case s.Aborted || st.phase == phaseCancelled:
			l.engineDone(st) // the client gave up on it earlier
		case l.cfg.FrontendLatency > 0:
			st.phase = phaseDelivering
			l.q.Push(sim.Event{At: l.now + l.cfg.FrontendLatency, Kind: evDeliver, Target: int(r.Handle - 1), Arg: int64(st.gen)})
		default:
			l.respond(st)
		}
	}
	if l.cfg.AfterStep != nil {
		l.cfg.AfterStep(l.now, e)
	}
}

// initOffload sets up the KV offload wake-ups when an engine offloads.
func (l *loop) initOffload() {
	for _, e := range l.engs {
		if e.Config().Offload != nil {
			l.offWake = make([]time.Duration, len(l.engs))
			for i := range l.offWake {
				l.offWake[i] = never
			}
			return
		}
	}
}

// armOffload queues a wake-up for each rank of endpoint ep whose next KV
// offload transfer completes before the one already queued.
func (l *loop) armOffload(ep int) {
	e := &l.eps[ep]
	for k, eng := range e.engs {
		w := eng.NextWake()
		if w == never {
			continue
		}
		w = max(w, l.now)
		if g := e.first + k; w < l.offWake[g] {
			l.offWake[g] = w
			l.q.Push(sim.Event{At: w, Kind: evOffload, Target: g})
		}
	}
}

// offloadWake: a rank's KV transfer completed (a loaded request can be
// scheduled, held blocks were freed); a superseded wake-up does nothing.
func (l *loop) offloadWake(ev sim.Event) {
	if l.offWake[ev.Target] != ev.At {
		return
	}
	l.offWake[ev.Target] = never
	l.engs[ev.Target].Wake(l.now)
	l.mark(int(l.home[ev.Target]))
}
