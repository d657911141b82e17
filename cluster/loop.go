package cluster

import (
	"fmt"
	"time"

	"blis/client"
	"blis/engine"
	"blis/kernel"
	"blis/metrics"
	"blis/sim"
)

// loop is one run: the clock, the event queue, the endpoints and the
// requests the client made, driven in simulated time order. It serves the
// client through client.Server.
type loop struct {
	cfg Config
	cl  *client.Client
	rec *metrics.Recorder

	q   sim.Queue
	now time.Duration

	eps  []endpoint
	engs []*engine.Engine // every rank of every endpoint, endpoint by endpoint
	home []int32          // each rank's endpoint, by global rank

	// reqs holds every request the client made, by Handle − 1; a slot is
	// reused once both the client and the engines are done with it.
	reqs     []reqState
	freeReqs []int32

	batch kernel.Batch
	res   Result
}

// A request's phase in the loop.
const (
	phaseFree       uint8 = iota
	phaseMade             // made by the client, not sent yet
	phaseServing          // in an engine (waiting, running or finished there)
	phaseDelivering       // finished; its response is on the way to the client
	phaseCancelled        // the client gave up; still in an engine's step until it ends
)

// reqState is the loop's record of one request (the engine sees only its
// Handle, this slot + 1).
type reqState struct {
	req   *engine.Request
	ep    int32 // the endpoint serving it
	rank  int32 // the global rank serving it
	phase uint8
	gen   uint32 // moves on when a pending delivery must not happen
}

func newLoop(cfg Config, rec *metrics.Recorder) (*loop, error) {
	l := &loop{cfg: cfg, rec: rec}
	if err := l.buildEndpoints(); err != nil {
		return nil, err
	}
	return l, nil
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
	st.phase, st.ep, st.rank = phaseMade, -1, -1
	st.req.Handle = uint64(slot) + 1
	return st.req
}

func (l *loop) Drop(r *engine.Request) { l.release(r) }

// release frees r's slot: nobody holds r any more.
func (l *loop) release(r *engine.Request) {
	slot := int32(r.Handle - 1)
	st := &l.reqs[slot]
	st.phase = phaseFree
	st.gen++
	l.freeReqs = append(l.freeReqs, slot)
}

func (l *loop) At(ev sim.Event) { l.q.Push(ev) }

// Send hands r to its endpoint: the only one (there is no router yet).
func (l *loop) Send(r *engine.Request, at time.Duration) {
	l.assign(r, 0, at)
}

// assign gives r to endpoint ep, whose DP balancer picks the rank. A
// request the engine refuses goes back to the client at once.
func (l *loop) assign(r *engine.Request, ep int, at time.Duration) {
	st := &l.reqs[r.Handle-1]
	e := &l.eps[ep]
	rank := e.first
	if len(e.engs) > 1 {
		rank += dpRoute(e.engs)
	}
	st.ep, st.rank, st.phase = int32(ep), int32(rank), phaseServing
	if !l.engs[rank].Add(r, at) {
		l.cl.Ended(r)
		l.release(r)
	}
}

// Cancel: the client gave up on r. The engine aborts it (vLLM's abort on a
// client disconnect); r is reused once the engine has let go of it.
func (l *loop) Cancel(r *engine.Request) {
	st := &l.reqs[r.Handle-1]
	switch st.phase {
	case phaseDelivering:
		l.release(r) // the engine was done with it; the delivery goes stale
		return
	case phaseServing:
		st.phase = phaseCancelled
		st.gen++
		if l.engs[st.rank].Abort(r) {
			l.release(r)
		}
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
	return l.q.Len() > 0 && !anyBusy(l.engs) && !anyWork(l.engs)
}

func (l *loop) Deferrable() bool { return len(l.engs) == 1 }

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
		t := cl.Wake()
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
		// client's deadlines, until neither has more.
		for !cl.Stopped() {
			if ev, ok := l.q.Peek(); ok && ev.At == l.now {
				l.q.Pop()
				l.dispatch(ev)
				continue
			}
			if cl.Wake() <= l.now {
				cl.Fire()
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
	return l.res
}

func (l *loop) dispatch(ev sim.Event) {
	switch ev.Kind {
	case evStepEnd:
		l.endStep(ev.Target)
	case evDeliver:
		l.deliver(ev)
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
	r := st.req
	l.cl.Ended(r)
	l.release(r)
	l.cl.Resume()
}

// startSteps starts every step that can start now: each endpoint's idle
// ranks, or its lockstep group when no rank of it is computing.
func (l *loop) startSteps() error {
	for i := range l.eps {
		e := &l.eps[i]
		if e.batches != nil {
			if err := l.startGroupStep(i); err != nil {
				return err
			}
			continue
		}
		for k, eng := range e.engs {
			if eng.Busy() || !eng.HasWork() {
				continue
			}
			rows := eng.Schedule(l.now, &l.batch)
			if rows == 0 {
				if err := l.stalled(); err != nil {
					return err
				}
				continue
			}
			l.stepStarted(i, rows, e.pricer.StepTime(&l.batch), e.first+k)
		}
	}
	return nil
}

// startGroupStep schedules every rank of endpoint ep's lockstep DP group at
// once; ranks with nothing to schedule run the dummy batch
// kernel.GroupStepTime prices.
func (l *loop) startGroupStep(ep int) error {
	e := &l.eps[ep]
	if anyBusy(e.engs) || !anyWork(e.engs) {
		return nil
	}
	rows := 0
	for i, eng := range e.engs {
		e.batches[i] = kernel.Batch{}
		if eng.HasWork() {
			rows += eng.Schedule(l.now, &e.batches[i])
		}
	}
	if rows == 0 {
		return l.stalled()
	}
	l.stepStarted(ep, rows, kernel.GroupStepTime(e.pricer, e.batches), -1-ep)
	return nil
}

// stalled reports a deadlock: work no engine can schedule, and nothing
// (a step, an event, a client deadline) that could change that.
func (l *loop) stalled() error {
	if l.q.Len() == 0 && l.cl.Wake() == never && !anyBusy(l.engs) {
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
	l.q.Push(sim.Event{At: l.now + bd.Total, Kind: evStepEnd, Target: target})
}

func addStep(sum *kernel.Breakdown, n *int64, bd kernel.Breakdown) {
	*n++
	sum.Compute += bd.Compute
	sum.Memory += bd.Memory
	sum.Comm += bd.Comm
	sum.Launch += bd.Launch
	sum.Host += bd.Host
	sum.Total += bd.Total
}

// endStep ends the step of global rank target, or of every computing rank
// of a lockstep group (target −1 − endpoint).
func (l *loop) endStep(target int) {
	if target >= 0 {
		l.complete(l.engs[target])
	} else {
		for _, e := range l.eps[-1-target].engs {
			if e.Busy() {
				l.complete(e)
			}
		}
	}
	l.cl.Resume()
}

// complete ends e's step in flight: the client gets its tokens, and each
// finished response goes back to it, FrontendLatency later.
func (l *loop) complete(e *engine.Engine) {
	samples := e.Complete(l.now)
	l.cl.Tokens(samples)
	for i := range samples {
		s := &samples[i]
		if !s.Done {
			continue
		}
		r := s.Req
		st := &l.reqs[r.Handle-1]
		switch {
		case s.Aborted || st.phase == phaseCancelled:
			l.release(r) // the client gave up on it earlier
		case l.cfg.FrontendLatency > 0:
			st.phase = phaseDelivering
			l.q.Push(sim.Event{At: l.now + l.cfg.FrontendLatency, Kind: evDeliver, Target: int(r.Handle - 1), Arg: int64(st.gen)})
		default:
			l.cl.Ended(r)
			l.release(r)
		}
	}
	if l.cfg.AfterStep != nil {
		l.cfg.AfterStep(l.now, e)
	}
}
