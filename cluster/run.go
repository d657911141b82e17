// Package cluster drives replicas through simulated time: it plays the
// benchmark client (concurrency cap, warm-ups, the request process), hands
// requests to engine replicas, prices each step with the kernel, and feeds
// the metrics recorder. This first version serves one replica; routing
// across replicas and P/D coordination come later and plug in here.
package cluster

import (
	"errors"
	"fmt"
	"time"

	"blis/engine"
	"blis/kernel"
	"blis/metrics"
	"blis/sim"
	"blis/workload"
)

// Config is one single-replica run.
type Config struct {
	Engine engine.Config
	Pricer kernel.Pricer
	// MaxConcurrency is vllm bench's --max-concurrency: at most this many
	// requests in flight (0 = no cap).
	MaxConcurrency int
	// NumWarmups is vllm bench's --num-warmups: copies of the first request
	// sent (under the same cap) before the timed phase, excluded from metrics.
	NumWarmups int
	// Seed salts request identities (output tokens) so runs with different
	// seeds do not share cache content by accident.
	Seed int64
	// AfterStep, when set, is called after every completed step (tests use
	// it to check invariants). It must not keep the engine pointer.
	AfterStep func(now time.Duration, e *engine.Engine)
}

// Result is what the run measured besides the per-request metrics.
type Result struct {
	Duration       time.Duration // timed phase: first send to last completion
	WarmupDuration time.Duration
	Sent           int64 // timed requests sent
	Completed      int64
	Rejected       int64
	Engine         engine.Stats
	// Sessions counts multi-turn follow-ups read from the source; Turns maps
	// each timed session request's index to its session and turn (only
	// requests that belong to a session are listed).
	Sessions struct{ FollowUps int64 }
	Turns    map[int64]SessionTurn
	// StepTime sums the kernel's per-resource breakdown over the timed
	// phase's steps; TimedSteps counts them.
	StepTime   kernel.Breakdown
	TimedSteps int64
}

const (
	evRelease  = iota // the client's request process releases the next request
	evStepEnd         // the replica's step in flight ends
	evFollowUp        // a session's follow-up turn is released (Arg: index into followQ)
)

const (
	tagWarmup = 1
	tagTimed  = 2
)

// SessionTurn is a request's place in a multi-turn session.
type SessionTurn struct {
	Session uint64
	Turn    int
}

// ErrStalled means the engine had queued work but could form no batch and
// nothing else could change that: a modelling bug, never user input.
var ErrStalled = errors.New("cluster: engine stalled with queued work")

// Run replays src against one replica and records timed requests into rec.
func Run(cfg Config, src workload.Source, rec *metrics.Recorder) (Result, error) {
	eng, err := engine.New(cfg.Engine)
	if err != nil {
		return Result{}, err
	}
	d := driver{cfg: cfg, eng: eng, src: src, rec: rec, salt: splitmix(uint64(cfg.Seed) ^ 0x5bd1e995)}
	return d.run()
}

type driver struct {
	cfg  Config
	eng  *engine.Engine
	src  workload.Source
	rec  *metrics.Recorder
	salt uint64

	q        sim.Queue
	now      time.Duration
	t0       time.Duration // start of the timed phase
	timed    bool
	inFlight int
	blocked  []*engine.Request // warm-ups waiting for a slot (FIFO)
	bhead    int
	pool     []*engine.Request

	next           workload.Request // the request the process releases next
	hasNext        bool
	releaseAt      time.Duration    // when next is released (timed phase)
	releasePending bool             // an evRelease is queued
	first          workload.Request // first request, template of the warm-ups
	warmups        int              // warm-ups not yet finished

	sessions   map[uint64]*session
	followQ    []*workload.Request // follow-ups with a pending release, by event Arg
	followFree []int64             // free slots of followQ

	batch kernel.Batch
	res   Result
	lastT time.Duration // last timed completion
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (d *driver) newRequest(w *workload.Request, tag int, salt uint64) *engine.Request {
	var r *engine.Request
	if n := len(d.pool); n > 0 {
		r = d.pool[n-1]
		d.pool = d.pool[:n-1]
		r.Reset()
	} else {
		r = &engine.Request{}
	}
	r.ID = w.Index
	r.Prompt = append(r.Prompt, w.Prompt...)
	r.PromptLen = w.InputLen
	r.MaxTokens = w.OutputLen
	r.OutputID = splitmix(d.salt ^ salt)
	r.Tag = tag
	return r
}

func (d *driver) run() (Result, error) {
	if !d.src.Next(&d.next) {
		return d.res, nil
	}
	d.first = d.next
	d.first.Prompt = append([]workload.Segment(nil), d.next.Prompt...)
	d.hasNext = true

	d.warmups = d.cfg.NumWarmups
	for i := 0; i < d.cfg.NumWarmups; i++ {
		w := d.first
		w.Index = int64(i)
		d.offer(d.newRequest(&w, tagWarmup, uint64(i)<<1|1))
	}
	d.fill()
	d.maybeStartTimed()

	for {
		if !d.eng.Busy() && d.eng.HasWork() {
			if err := d.startStep(); err != nil {
				return d.res, err
			}
		}
		ev, ok := d.q.Pop()
		if !ok {
			break
		}
		d.now = ev.At
		d.dispatch(ev)
		// Handle everything else due at the same instant before scheduling,
		// so a step sees all requests that arrived by its start.
		for {
			e2, ok := d.q.Peek()
			if !ok || e2.At != d.now {
				break
			}
			d.q.Pop()
			d.dispatch(e2)
		}
	}
	if err := workload.Err(d.src); err != nil {
		return d.res, err
	}
	if d.eng.HasWork() || d.inFlight > 0 || d.hasNext {
		return d.res, fmt.Errorf("%w: %d waiting, %d running, %d in flight",
			ErrStalled, d.eng.Waiting(), d.eng.Running(), d.inFlight)
	}
	d.res.Engine = d.eng.Stats()
	if d.timed {
		d.res.Duration = d.lastT - d.t0
	}
	return d.res, nil
}

func (d *driver) maybeStartTimed() {
	if !d.timed && d.warmups == 0 {
		d.startTimed()
	}
}

func (d *driver) dispatch(ev sim.Event) {
	switch ev.Kind {
	case evRelease:
		d.releasePending = false
		d.fill()
	case evStepEnd:
		d.endStep()
	case evFollowUp:
		d.releaseFollowUp(ev.Arg)
	}
}

// advance reads the source up to the next request the request process
// releases by itself (standalone or a session's first turn), parking the
// follow-up turns met on the way.
func (d *driver) advance() {
	for {
		if d.hasNext = d.src.Next(&d.next); !d.hasNext {
			return
		}
		if !isFollowUp(&d.next) {
			d.releaseAt = d.t0 + d.next.Arrival
			return
		}
		d.park(&d.next)
	}
}

// startTimed begins the timed phase now: the request process starts.
func (d *driver) startTimed() {
	d.timed = true
	d.t0 = d.now
	d.res.WarmupDuration = d.now
	if d.hasNext {
		d.releaseAt = d.t0 + d.next.Arrival
	}
	d.fill()
}

func (d *driver) slotFree() bool {
	return d.cfg.MaxConcurrency <= 0 || d.inFlight < d.cfg.MaxConcurrency
}

// offer queues a warm-up request for a concurrency slot.
func (d *driver) offer(r *engine.Request) {
	r.Released = d.now
	d.blocked = append(d.blocked, r)
}

// fill sends requests while concurrency slots are free (vllm bench's
// semaphore, FIFO): queued warm-ups first, then timed requests whose release
// time has come, in source order. A timed request is only materialised when
// it is sent, so a million requests released at once (--request-rate inf)
// cost memory for the in-flight ones only. When the next release lies in the
// future and a slot is free, one release event is pending for it.
func (d *driver) fill() {
	for d.slotFree() {
		if d.bhead < len(d.blocked) {
			r := d.blocked[d.bhead]
			d.blocked[d.bhead] = nil
			d.bhead++
			d.send(r)
			continue
		}
		if !d.timed || !d.hasNext {
			break
		}
		if d.releaseAt > d.now {
			if !d.releasePending {
				d.releasePending = true
				d.q.Push(sim.Event{At: d.releaseAt, Kind: evRelease})
			}
			break
		}
		r := d.newRequest(&d.next, tagTimed, uint64(d.next.Index)<<1)
		r.SessionID, r.Turn, r.Final = d.next.SessionID, d.next.Turn, d.next.Final
		r.Released = d.releaseAt
		d.res.Sent++
		d.advance()
		d.send(r)
	}
	if d.bhead == len(d.blocked) {
		d.blocked, d.bhead = d.blocked[:0], 0
	}
}

func (d *driver) send(r *engine.Request) {
	d.inFlight++
	if r.Tag == tagTimed {
		d.rec.Send(d.now - d.t0)
	}
	if !d.eng.Add(r, d.now) {
		d.leave(r)
	}
}

// leave: a request left the system (finished or rejected).
func (d *driver) leave(r *engine.Request) {
	d.inFlight--
	if r.Tag == tagTimed {
		d.recordTimed(r)
		if r.SessionID != 0 {
			if d.res.Turns == nil {
				d.res.Turns = map[int64]SessionTurn{}
			}
			d.res.Turns[r.ID] = SessionTurn{r.SessionID, r.Turn}
		}
		d.sessionDone(r)
	} else {
		d.warmups--
	}
	d.pool = append(d.pool, r)
}

func (d *driver) recordTimed(r *engine.Request) {
	rel := func(t time.Duration) time.Duration { return t - d.t0 }
	m := metrics.Record{
		Index:           r.ID,
		Sent:            rel(r.Arrived),
		ClientQueueTime: r.Arrived - r.Released,
		InputTokens:     r.PromptLen,
		OutputTokens:    r.NumOutput,
		CachedTokens:    r.CachedTokens,
		Preemptions:     r.Preemptions,
	}
	if r.Status == engine.StatusRejected {
		m.Rejected, m.RejectReason = true, r.RejectReason
		m.Scheduled, m.FirstToken, m.Finish = m.Sent, m.Sent, m.Sent
		d.res.Rejected++
	} else {
		m.Scheduled, m.FirstToken, m.Finish = rel(r.FirstScheduled), rel(r.FirstToken), rel(r.Finished)
		d.res.Completed++
	}
	d.lastT = max(d.lastT, d.now)
	d.rec.Finish(m)
}

func (d *driver) startStep() error {
	rows := d.eng.Schedule(d.now, &d.batch)
	if rows == 0 {
		if d.q.Len() == 0 {
			return fmt.Errorf("%w: %d waiting, %d running, %d free blocks",
				ErrStalled, d.eng.Waiting(), d.eng.Running(), d.eng.FreeBlocks())
		}
		return nil
	}
	bd := d.cfg.Pricer.StepTime(&d.batch)
	if bd.Total <= 0 {
		bd.Total = time.Nanosecond // time must advance
	}
	if d.timed {
		d.res.TimedSteps++
		d.res.StepTime.Compute += bd.Compute
		d.res.StepTime.Memory += bd.Memory
		d.res.StepTime.Comm += bd.Comm
		d.res.StepTime.Host += bd.Host
		d.res.StepTime.Total += bd.Total
		d.rec.AddStep(rows)
	}
	d.q.Push(sim.Event{At: d.now + bd.Total, Kind: evStepEnd})
	return nil
}

func (d *driver) endStep() {
	samples := d.eng.Complete(d.now)
	timedTokens := 0
	detailed := d.rec.Detailed()
	var runGap time.Duration
	var runLen int64
	for i := range samples {
		s := &samples[i]
		if s.Req.Tag != tagTimed {
			continue
		}
		timedTokens++
		switch {
		case s.First:
		case detailed:
			d.rec.AddITL(s.Req.ID, s.Gap)
		default:
			// Rows that decoded in back-to-back steps share one gap: record
			// runs of equal gaps in one call.
			if runLen > 0 && s.Gap != runGap {
				d.rec.AddGaps(runGap, runLen)
				runLen = 0
			}
			runGap = s.Gap
			runLen++
		}
	}
	if runLen > 0 {
		d.rec.AddGaps(runGap, runLen)
	}
	if timedTokens > 0 {
		d.rec.AddTokens(d.now-d.t0, timedTokens)
	}
	for i := range samples {
		if samples[i].Done {
			d.leave(samples[i].Req)
		}
	}
	d.maybeStartTimed()
	d.fill()
	if d.cfg.AfterStep != nil {
		d.cfg.AfterStep(d.now, d.eng)
	}
}
