package client

import (
	"time"

	"blis/engine"
	"blis/sim"
	"blis/workload"
)

// mode is what the two benchmark clients do differently: how requests are
// admitted and sent, and how the run moves from warm-up to the timed
// phase. perRequest is vllm bench serve's (vllm/benchmarks/serve.py, its
// semaphore); lanes is aiperf's agentic replay (lanes.go). The Client
// around a mode keeps what both share: request records, multi-turn
// sessions, time limits, timeouts, idle caps and recording.
type mode interface {
	start() error  // the run begins, at time 0
	timedStarted() // the timed phase has begun, now
	fill()         // send what the rule admits now
	resume()       // responses ended (Client.Resume)
	settle()       // an instant was handled (Client.Settle)
	timer(ev sim.Event)
	// followUpAt: a follow-up's predecessors finished at base; followUp:
	// its release time came (its slot in follows is free again; lane is
	// the slot's lane).
	followUpAt(c *workload.Request, base time.Duration)
	followUp(c *workload.Request, slot, lane int32)
	warmupEnded()    // a warm-up request ended
	left(lane int32) // a request (on lane, or −1) ended for the client, after its session moved on
	// refused: the server refused a turn of session s; true when the
	// mode ends the session there.
	refused(s *session) bool
	holding() bool // released requests wait in the client (the system is not idle)
	closeWindow()  // the benchmark window closed: drop what waits
	unsent() bool  // requests are left to read and send
	private(w *workload.Request) bool
	finish() error // the run ended: close its own sources, report their error
}

// perRequest is vllm bench serve's client: a request process releases
// requests (rate, trace timestamps) and at most --max-concurrency are in
// flight; --num-warmups copies of the first request go first; session
// follow-ups queue for a slot like any request.
type perRequest struct {
	d *Client

	blocked []*engine.Request // requests waiting for a slot (FIFO)
	bhead   int

	next           workload.Request // the request the process releases next
	hasNext        bool
	releaseAt      time.Duration    // when next is released (timed phase)
	releasePending bool             // an evRelease is queued
	first          workload.Request // first request, template of the warm-ups
	warmups        int              // warm-ups not yet finished
	warmNext       int              // warm-ups sent so far (each is made when sent)
	warmAt         time.Duration    // when the client sent the warm-ups

	// deferOK: requests released with no concurrency cap may wait in the
	// client, unmade, while the engine's queue already holds as many as one
	// step can admit (see deferring); sessionsSeen turns it off.
	deferOK      bool
	sessionsSeen bool
}

func (p *perRequest) start() error {
	d := p.d
	if !d.src.Next(&p.next) {
		d.stopped, d.empty = true, true
		return workload.Err(d.src)
	}
	p.first = p.next
	p.first.Prompt = append([]workload.Segment(nil), p.next.Prompt...)
	p.hasNext = true

	p.sessionsSeen = p.next.SessionID != 0
	p.deferOK = d.srv.Deferrable() && d.cfg.MaxConcurrency <= 0 && d.cfg.BenchmarkDuration <= 0
	p.warmups, p.warmAt = d.cfg.NumWarmups, d.now()
	p.fill()
	p.maybeStartTimed()
	return nil
}

// maybeStartTimed starts the timed phase once every warm-up is back.
func (p *perRequest) maybeStartTimed() {
	if !p.d.timed && p.warmups == 0 {
		p.d.startTimed()
	}
}

func (p *perRequest) timedStarted() {
	if p.hasNext {
		p.releaseAt = p.d.origin() + p.next.Arrival
	}
	p.fill()
}

func (p *perRequest) resume() {
	p.maybeStartTimed()
	p.fill()
}

func (p *perRequest) settle() {}

func (p *perRequest) timer(ev sim.Event) {
	if ev.Kind == evRelease {
		p.releasePending = false
		p.fill()
	}
}

// advance reads the source up to the next request the request process
// releases by itself (standalone or a session's first turn), parking the
// follow-up turns met on the way.
func (p *perRequest) advance() {
	d := p.d
	for {
		if p.hasNext = d.src.Next(&p.next); !p.hasNext {
			return
		}
		if p.next.SessionID != 0 {
			p.sessionsSeen = true
		}
		if !isFollowUp(&p.next) {
			p.releaseAt = d.origin() + p.next.Arrival
			return
		}
		d.park(&p.next)
	}
}

func (p *perRequest) slotFree() bool {
	return p.d.cfg.MaxConcurrency <= 0 || p.d.inFlight < p.d.cfg.MaxConcurrency
}

// fill sends requests while concurrency slots are free (vllm bench's
// semaphore, FIFO): queued requests first (warm-ups, released follow-ups),
// then timed requests whose release time has come, in source order. A timed
// request is only materialised when it is sent, so a million requests
// released at once (--request-rate inf) cost memory for the in-flight ones
// only. When the next release lies in the future and a slot is free, one
// release event is pending for it. Past the benchmark duration nothing
// timed is sent.
func (p *perRequest) fill() {
	d := p.d
	for p.slotFree() {
		if p.bhead < len(p.blocked) {
			r := p.blocked[p.bhead]
			p.blocked[p.bhead] = nil
			p.bhead++
			if d.kindOf(r) == kindTimed {
				if !d.open() {
					d.srv.Drop(r)
					continue
				}
				d.res.Sent++
			}
			d.send(r, -1, 0)
			continue
		}
		if p.warmNext < d.cfg.NumWarmups {
			// Warm-ups, all sent when the run starts, are made one at a
			// time as they go out.
			if p.deferring() {
				break
			}
			w := p.first
			w.Index = int64(p.warmNext)
			r := d.newRequest(&w, kindWarmup, uint64(p.warmNext)<<1|1)
			d.fl(r).released = p.warmAt
			p.warmNext++
			d.res.WarmupRequests++
			d.sendAt(r, -1, 0, p.warmAt)
			continue
		}
		if !d.timed || !p.hasNext {
			break
		}
		if !d.open() {
			p.hasNext = false // the source is not read any further
			break
		}
		if p.releaseAt > d.now() {
			if !p.releasePending {
				p.releasePending = true
				d.srv.At(sim.Event{At: p.releaseAt, Kind: evRelease})
			}
			break
		}
		if p.deferring() {
			break
		}
		r := d.newRequest(&p.next, kindTimed, uint64(p.next.Index)<<1)
		f := d.fl(r)
		f.session, f.turn, f.final = p.next.SessionID, p.next.Turn, p.next.Final
		f.released = p.releaseAt
		if d.cfg.CacheBust != CacheBustNone {
			p.bustStart(r, &p.next)
		}
		d.res.Sent++
		at := d.now() // after waiting for a slot, with a cap
		if p.deferOK {
			// No cap: every request goes out on release, a deferred one
			// too; its arrival, send time and timeout count from there.
			at = p.releaseAt
		}
		p.advance()
		d.sendAt(r, -1, 0, at)
	}
	if p.bhead == len(p.blocked) {
		p.blocked, p.bhead = p.blocked[:0], 0
	}
}

// deferring reports whether the client holds released requests back,
// unmade: with no concurrency cap, one engine reached directly and no
// sessions, every released request is in flight in vllm bench (it sits in
// the engine's waiting queue), but one step admits at most max-num-seqs of
// them, in FCFS order. While the queue holds that many, the ones behind
// change nothing the engine does, so they stay in the source (or, for
// warm-ups, a counter) and go in, with their own release time as arrival,
// when the queue drains. The run is byte-identical, and a million requests
// released at once (--request-rate inf) cost memory for max-num-seqs of
// them. Timeouts count from the release (sendAt); a request whose timeout
// passed while it was held expires at once, at that time, as it would have
// from the queue. Off with a cap (it bounds what is in flight), with data
// parallelism (the balancer reads every rank's queue), several replicas or
// a router, sessions, and a benchmark duration (the window closes on
// releases).
func (p *perRequest) deferring() bool {
	return p.deferOK && !p.sessionsSeen && p.d.srv.Backlogged()
}

// bustStart marks a session start (or standalone request) with its own
// cache-bust marker, which the session's branches inherit.
func (p *perRequest) bustStart(r *engine.Request, w *workload.Request) {
	d := p.d
	m := splitmix(d.salt^tagMarker^uint64(w.Index)) | 1
	d.insertMarker(r, m, w.SystemSegments)
	if w.SessionID != 0 {
		d.sess(w.SessionID).marker = m
	}
}

// followUpAt releases a follow-up its (capped) delay after its
// predecessors, never before its own Arrival.
func (p *perRequest) followUpAt(c *workload.Request, base time.Duration) {
	d := p.d
	at := base + p.delay(c)
	if arr := d.origin() + c.Arrival; arr > at {
		at = arr
	}
	d.pushFollow(c, max(at, d.now()))
}

// followUp: a released follow-up queues for a slot like any request.
func (p *perRequest) followUp(c *workload.Request, _, _ int32) {
	r := p.d.buildFollowUp(c, kindTimed, uint64(c.Index)<<1)
	p.blocked = append(p.blocked, r)
	p.fill()
}

func (p *perRequest) warmupEnded()          { p.warmups-- }
func (p *perRequest) left(int32)            {}
func (p *perRequest) refused(*session) bool { return false }
func (p *perRequest) holding() bool         { return p.bhead < len(p.blocked) }
func (p *perRequest) unsent() bool          { return p.hasNext }
func (p *perRequest) finish() error         { return nil }
func (p *perRequest) closeWindow()          { p.dropBlocked() }

// delay is follow-up c's delay: every session delay is capped at
// --trace-idle-gap-cap-seconds (lanes cap each tree's idle time instead:
// laneIdle).
func (p *perRequest) delay(c *workload.Request) time.Duration {
	if cp := p.d.cfg.TraceIdleGapCap; cp > 0 && c.Delay > cp {
		return cp
	}
	return c.Delay
}

// dropBlocked forgets the timed requests waiting for a slot and stops
// reading the source: the benchmark window has closed.
func (p *perRequest) dropBlocked() {
	for i := p.bhead; i < len(p.blocked); i++ {
		if r := p.blocked[i]; p.d.kindOf(r) == kindTimed {
			p.d.srv.Drop(r)
		}
	}
	p.blocked, p.bhead = p.blocked[:0], 0
	p.hasNext = false
}

// private: warm-ups copy the first request, so neither they nor the timed
// request they copy are private.
func (p *perRequest) private(w *workload.Request) bool {
	return p.d.cfg.NumWarmups == 0 || w.Index != p.first.Index
}
