// Package cluster drives replicas through simulated time: it plays the
// benchmark client (concurrency cap or lanes, warm-ups, the request process,
// multi-turn sessions, time limits and timeouts), hands requests to engine
// replicas, prices each step with the kernel, and feeds the metrics
// recorder. This first version serves one replica; routing across replicas
// and P/D coordination come later and plug in here. README.md describes the
// client semantics and which benchmark client each one mirrors.
package cluster

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"blis/engine"
	"blis/kernel"
	"blis/metrics"
	"blis/router"
	"blis/sim"
	"blis/workload"
)

// Mode is how the client bounds its load.
type Mode uint8

const (
	// PerRequest is vllm bench's --max-concurrency: at most that many
	// requests in flight; session follow-ups queue for a slot like any
	// request.
	PerRequest Mode = iota
	// Lanes is aiperf's agentic replay: --max-concurrency lanes, each
	// replaying one trajectory (a session with its sub-agent branches) at a
	// time and taking the next when it drains.
	Lanes
)

// CacheBust is aiperf's --cache-bust target: where a marker unique to each
// play of a trajectory goes, so replays of the same corpus do not share
// cache content.
type CacheBust uint8

const (
	CacheBustNone            CacheBust = iota
	CacheBustFirstTurnPrefix           // after the system prompt, before the first user message
	CacheBustSystemPrefix              // before everything, the system prompt included
)

// Config is one run: the benchmark client against the serving cluster.
type Config struct {
	// Engine, Pricer, DataParallel and Lockstep describe one vLLM
	// deployment; with no Pools, the cluster is one replica of it.
	Engine engine.Config
	Pricer kernel.Pricer
	// DataParallel is --data-parallel-size: that many engines of
	// Engine's configuration behind vLLM's DP load balancer (0 or 1: one).
	// Lockstep makes them step together, as a MoE model's ranks do
	// (dp.go).
	DataParallel int
	Lockstep     bool
	// Pools are the model-server deployments behind the router, each with
	// its replicas (nil: one replica of Engine). Endpoints are numbered
	// pool by pool, replica by replica, in this order.
	Pools []Pool
	// Router routes requests across the endpoints (nil: only valid with
	// one endpoint, which gets every request).
	Router router.Router

	// MaxConcurrency is vllm bench's --max-concurrency: at most this many
	// requests in flight (0 = no cap); in Lanes mode, the number of lanes.
	MaxConcurrency int
	// NumWarmups is vllm bench's --num-warmups: copies of the first request
	// sent (under the same cap) before the timed phase, excluded from metrics.
	// PerRequest mode only.
	NumWarmups int
	// Seed salts request identities (output tokens) so runs with different
	// seeds do not share cache content by accident, and draws the lanes'
	// trajectory start turns.
	Seed int64

	Mode Mode
	// WarmupRequestsPerLane (Lanes) is aiperf's --warmup-requests-per-lane:
	// each lane's warm-up budget, its trajectory primer included; after the
	// primers the lanes replay with no delays. Every warm-up request asks for
	// one output token.
	WarmupRequestsPerLane int
	// TrajectoryStartMin and TrajectoryStartMax (Lanes) are aiperf's
	// --trajectory-start-{min,max}-ratio: each initial lane starts its
	// trajectory at a turn drawn in [min·n, max·n] of its n turns, primed by
	// a warm-up request carrying the whole history. Both 0 and no warm-up
	// budget: lanes start at turn 0 with no warm-up.
	TrajectoryStartMin, TrajectoryStartMax float64
	// TraceIdleGapCap is aiperf's --trace-idle-gap-cap-seconds: in Lanes,
	// when nothing of a lane's tree is in flight, its pending releases move
	// earlier so the next comes within this; in PerRequest mode every
	// session delay is capped at it. 0 = no cap.
	TraceIdleGapCap time.Duration
	// SystemIdleGapCap (aiperf --system-idle-gap-cap-seconds): when no
	// request is in flight or waiting, pending releases move earlier so the
	// next one comes within this; 0 = off.
	SystemIdleGapCap time.Duration
	CacheBust        CacheBust
	// BenchmarkDuration is aiperf's --benchmark-duration: no request is sent
	// after this much of the timed phase; 0 = no limit.
	BenchmarkDuration time.Duration
	// GracePeriod is aiperf's --benchmark-grace-period: after
	// BenchmarkDuration, responses finishing within it are recorded and the
	// rest are dropped; < 0 waits for every response.
	GracePeriod time.Duration
	// RequestTimeout cancels a timed request whose response is not complete
	// this long after it was sent, counting it failed (aiperf
	// --request-timeout-seconds; vllm bench's aiohttp timeout); 0 = none.
	RequestTimeout time.Duration
	// FrontendLatency is what the serving frontend adds to every request on
	// top of the engine, as the client sees it: HTTP, the API server's
	// request processing and tokenisation, the hop to the engine core, and
	// the way back (detokenisation, streaming). A client measures only the
	// sum of the two directions, so BLIS puts all of it on the response
	// path: every response reaches the client this long after the engine
	// finished it, the client's TTFT and E2E grow by it (TPOT and ITL do
	// not), and a closed-loop client sends its next request that much later.
	// 0 = none.
	FrontendLatency time.Duration
	// Reopen returns the workload from its start again; with a
	// BenchmarkDuration, Lanes wrap around the corpus with it (aiperf's
	// sequential sampler). Nil: each trajectory plays once.
	Reopen func() (workload.Source, error)

	// AfterStep, when set, is called after every completed step of every
	// engine (tests use it to check invariants). It must not keep the
	// engine pointer.
	AfterStep func(now time.Duration, e *engine.Engine)
	// Progress, when set, is called each time a timed request ends
	// (completed, rejected or timed out) with the count so far and the
	// simulated time since the timed phase began: a progress bar's feed.
	Progress func(done int64, now time.Duration)
}

// Pool is one model-server deployment: Replicas copies of one vLLM
// deployment (each with its DP ranks), with one role.
type Pool struct {
	Name         string
	Replicas     int
	Role         router.Role
	Labels       map[string]string
	Engine       engine.Config
	Pricer       kernel.Pricer
	DataParallel int
	Lockstep     bool
}

// ReplicaResult is one endpoint's share of the run.
type ReplicaResult struct {
	Name, Pool string
	Role       router.Role
	// Routed counts timed requests the router sent here; Completed those
	// that completed here.
	Routed, Completed int64
	Engine            engine.Stats
	StepTime          kernel.Breakdown // summed over its timed steps
	TimedSteps        int64
}

// Result is what the run measured besides the per-request metrics.
type Result struct {
	Duration       time.Duration // timed phase: first send to last completion
	WarmupDuration time.Duration
	Sent           int64 // timed requests sent
	Completed      int64
	Rejected       int64
	// TimedOut counts timed requests cancelled by Config.RequestTimeout
	// (recorded as failed); Unfinished those still in flight when the grace
	// period ended (not recorded, as aiperf drops them).
	TimedOut   int64
	Unfinished int64
	// WarmupRequests counts warm-up requests sent; Trajectories the lanes'
	// trajectory plays started (warm-up ones included).
	WarmupRequests int64
	Trajectories   int64
	// SystemIdle and TraceIdle report the idle caps: how often pending
	// releases were moved earlier (for the whole system, for one lane's
	// tree), and by how much in all.
	SystemIdle, TraceIdle struct {
		Jumps   int64
		Skipped time.Duration
	}
	Engine engine.Stats
	// Sessions counts multi-turn follow-ups read from the source (each
	// recorded request carries its own session and turn: metrics.Record).
	Sessions struct{ FollowUps int64 }
	// StepTime sums the kernel's per-resource breakdown over the timed
	// phase's steps; TimedSteps counts them.
	StepTime   kernel.Breakdown
	TimedSteps int64
	// Replicas is each endpoint's share, in endpoint order (one entry for a
	// single replica).
	Replicas []ReplicaResult
	// Failures groups the timed requests that failed (refused by the
	// engine, as vLLM's server answers HTTP 400; timed out) by the kind of
	// reason, in order of first occurrence.
	Failures []Failure
}

// Failure is one kind of request failure: Kind is the reason's first word
// (max_model_len, kv_capacity, timeout, ...), Example the first full
// reason of that kind, Count how many timed requests failed so.
type Failure struct {
	Kind, Example string
	Count         int64
}

// fail counts a timed request's failure under its kind.
func (d *driver) fail(reason string) {
	kind, _, _ := strings.Cut(reason, ":")
	for i := range d.res.Failures {
		if d.res.Failures[i].Kind == kind {
			d.res.Failures[i].Count++
			return
		}
	}
	d.res.Failures = append(d.res.Failures, Failure{Kind: kind, Example: reason, Count: 1})
}

const (
	evRelease   = iota // the client's request process releases the next request
	evStepEnd          // the replica's step in flight ends
	evFollowUp         // a session's follow-up turn is released (Arg: slot in follows; Target: its generation)
	evLaneStart        // a lane takes its next trajectory (Target: lane)
	evDeliver          // a finished response reaches the client (Target: flight slot; Arg: its generation)
)

// What the client knows a request as (flight.kind).
const (
	kindWarmup  = 1
	kindTimed   = 2
	kindAborted = 3 // cancelled by the client; leaves the engine at the end of its step
)

const never = time.Duration(math.MaxInt64)

// ErrStalled means the engine had queued work but could form no batch and
// nothing else could change that: a modelling bug, never user input.
var ErrStalled = errors.New("cluster: engine stalled with queued work")

// Run replays src against the deployment (one engine, or one per DP rank)
// and records timed requests into rec.
func Run(cfg Config, src workload.Source, rec *metrics.Recorder) (Result, error) {
	if cfg.DataParallel < 0 {
		return Result{}, fmt.Errorf("cluster: data parallel size %d must be ≥ 1", cfg.DataParallel)
	}
	engs := make([]*engine.Engine, max(cfg.DataParallel, 1))
	for i := range engs {
		var err error
		if engs[i], err = engine.New(cfg.Engine); err != nil {
			return Result{}, err
		}
	}
	if cfg.Mode == Lanes && cfg.MaxConcurrency < 1 {
		return Result{}, errors.New("cluster: lanes need MaxConcurrency ≥ 1 (the number of lanes)")
	}
	d := driver{cfg: cfg, engs: engs, src: src, rec: rec, salt: splitmix(uint64(cfg.Seed) ^ 0x5bd1e995),
		windowEnd: never, graceEnd: never, idleAt: never}
	if len(engs) > 1 && cfg.Lockstep {
		d.batches = make([]kernel.Batch, len(engs))
	}
	return d.run()
}

type driver struct {
	cfg  Config
	engs []*engine.Engine // one per DP rank
	src  workload.Source
	rec  *metrics.Recorder
	salt uint64

	q        sim.Queue
	now      time.Duration
	t0       time.Duration // start of the timed phase
	timed    bool
	inFlight int
	blocked  []*engine.Request // requests waiting for a slot (FIFO)
	bhead    int
	pool     []*engine.Request

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

	sessions   map[uint64]*session
	follows    []followSlot // follow-ups with a pending release, by event Arg
	followFree []int32      // free slots of follows

	// The client's record of every request it has made, by slot; the
	// request's engine.Request.Handle is its slot + 1. A slot is taken
	// when the request is made and freed when the engine is done with it.
	flights    []flight
	flightFree []int32
	// Request timeouts in send order (sends are in time order and the
	// timeout is one constant, so deadlines are too).
	tq     []deadline
	tqHead int

	// Time limits. skipped is the idle time the system-idle cap removed:
	// simulated time runs on, and everything reported subtracts it.
	skipped   time.Duration
	windowEnd time.Duration // end of --benchmark-duration, simulated
	graceEnd  time.Duration
	idleAt    time.Duration // the system-idle cap's watchdog
	closed    bool          // the benchmark duration has passed: nothing new is sent
	stopped   bool          // the grace period is over

	lanes *lanes

	batch   kernel.Batch
	batches []kernel.Batch // lockstep DP: every rank's batch of the group step
	res     Result
	lastT   time.Duration // last timed completion, relative to the timed phase
}

// followSlot is a follow-up waiting for its release time. A lane's tree
// idle cap can move it earlier: the slot's generation then changes and the
// event already queued goes stale.
type followSlot struct {
	c    *workload.Request
	at   time.Duration
	lane int32 // timed Lanes phase: its lane, else −1
	gen  uint32
}

// flight is the client's record of one request, the engine's request
// carrying only its handle (engine.Request.Handle).
type flight struct {
	req      *engine.Request
	released time.Duration // when the request process released it, before any concurrency wait
	session  uint64        // multi-turn session (0: none), its turn, and whether it is the last
	turn     int
	final    bool
	kind     uint8
	rank     int32 // the DP rank serving it
	lane     int32 // −1: no lane
	pad      int32 // recorded output tokens a one-token warm-up did not generate
	gen      uint32
}

type deadline struct {
	at   time.Duration
	slot int32
	gen  uint32
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fl is r's record. The pointer is valid until the next request is made.
func (d *driver) fl(r *engine.Request) *flight { return &d.flights[r.Handle-1] }

func (d *driver) kindOf(r *engine.Request) uint8 { return d.flights[r.Handle-1].kind }

// freeSlot forgets r's record: the engine is done with it.
func (d *driver) freeSlot(r *engine.Request) {
	slot := int32(r.Handle - 1)
	f := &d.flights[slot]
	*f = flight{gen: f.gen + 1}
	d.flightFree = append(d.flightFree, slot)
	r.Handle = 0
}

// rel converts a simulated time to time since the start of the timed phase,
// less the idle time the system-idle cap removed.
func (d *driver) rel(t time.Duration) time.Duration { return t - d.t0 - d.skipped }

// origin is where the timed phase's schedule (request-process arrivals,
// trace timestamps) counts from, in simulated time.
func (d *driver) origin() time.Duration { return d.t0 + d.skipped }

// open reports whether the timed phase still sends requests.
func (d *driver) open() bool {
	return !d.closed && (d.cfg.BenchmarkDuration <= 0 || d.rel(d.now) < d.cfg.BenchmarkDuration)
}

// delayOf is a follow-up's delay; in PerRequest mode under the trace
// idle-gap cap (Lanes cap each tree's idle time instead: laneIdle).
func (d *driver) delayOf(c *workload.Request) time.Duration {
	if cp := d.cfg.TraceIdleGapCap; cp > 0 && c.Delay > cp && d.lanes == nil {
		return cp
	}
	return c.Delay
}

// newRequest makes the engine request for w and its record, kind
// kindWarmup or kindTimed, released now (callers that release it at
// another time set flight.released).
func (d *driver) newRequest(w *workload.Request, kind uint8, salt uint64) *engine.Request {
	var r *engine.Request
	if n := len(d.pool); n > 0 {
		r = d.pool[n-1]
		d.pool = d.pool[:n-1]
		r.Reset()
	} else {
		r = &engine.Request{}
	}
	r.ID = w.Index
	// Warm-ups copy the first request: none of them is private, and nor is
	// the timed request they copy. Lanes may replay the corpus (wrap-around),
	// so nothing they send is private.
	r.Private = w.Unique && kind == kindTimed && d.cfg.Mode != Lanes &&
		(d.cfg.NumWarmups == 0 || w.Index != d.first.Index)
	r.Prompt = append(r.Prompt, w.Prompt...)
	r.PromptLen = w.InputLen
	r.MaxTokens = w.OutputLen
	r.OutputID = splitmix(d.salt ^ salt)
	var slot int32
	if n := len(d.flightFree); n > 0 {
		slot = d.flightFree[n-1]
		d.flightFree = d.flightFree[:n-1]
	} else {
		slot = int32(len(d.flights))
		d.flights = append(d.flights, flight{})
	}
	f := &d.flights[slot]
	f.req, f.kind, f.released, f.lane = r, kind, d.now, -1
	r.Handle = uint64(slot) + 1
	return r
}

func (d *driver) run() (Result, error) {
	if d.cfg.Mode == Lanes {
		if err := d.startLanes(); err != nil {
			return d.res, err
		}
	} else {
		if !d.src.Next(&d.next) {
			return d.res, workload.Err(d.src)
		}
		d.first = d.next
		d.first.Prompt = append([]workload.Segment(nil), d.next.Prompt...)
		d.hasNext = true

		d.sessionsSeen = d.next.SessionID != 0
		d.deferOK = d.cfg.Mode == PerRequest && len(d.engs) == 1 && d.cfg.MaxConcurrency <= 0 && d.cfg.BenchmarkDuration <= 0
		d.warmups, d.warmAt = d.cfg.NumWarmups, d.now
		d.fill()
		d.maybeStartTimed()
	}

	for !d.stopped {
		// A result file that can no longer be written (a full disk) ends
		// the run: what follows could not be recorded.
		if err := d.rec.Err(); err != nil {
			return d.res, err
		}
		d.settle()
		if err := d.startSteps(); err != nil {
			return d.res, err
		}
		d.watchIdle()
		t := d.nextControl()
		ev, ok := d.q.Peek()
		if ok && ev.At < t {
			t = ev.At
		}
		if t == never {
			break
		}
		d.now = t
		// Handle everything due at this instant before scheduling, so a step
		// sees all requests that arrived by its start: queue events first
		// (a response at the deadline instant beats its timeout), then the
		// client's deadlines, until neither has more.
		for !d.stopped {
			if ev, ok := d.q.Peek(); ok && ev.At == d.now {
				d.q.Pop()
				d.dispatch(ev)
				continue
			}
			if d.nextControl() <= d.now {
				d.runControls()
				continue
			}
			break
		}
	}
	if d.lanes != nil && d.lanes.traj.err != nil {
		return d.res, d.lanes.traj.err
	}
	if err := workload.Err(d.src); err != nil {
		return d.res, err
	}
	if d.stopped || d.closed {
		workload.Close(d.src)
		if d.lanes != nil {
			workload.Close(d.lanes.traj.src)
		}
	} else if anyWork(d.engs) || d.inFlight > 0 || d.hasNext {
		w, r, _ := counts(d.engs)
		return d.res, fmt.Errorf("%w: %d waiting, %d running, %d in flight", ErrStalled, w, r, d.inFlight)
	}
	d.res.Engine = sumStats(d.engs)
	if d.timed {
		d.res.Duration = d.lastT
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
		d.endStep(ev.Target)
	case evFollowUp:
		d.releaseFollowUp(ev)
	case evLaneStart:
		d.laneStart(ev.Target)
	case evDeliver:
		d.deliver(ev)
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
		if d.next.SessionID != 0 {
			d.sessionsSeen = true
		}
		if !isFollowUp(&d.next) {
			d.releaseAt = d.origin() + d.next.Arrival
			return
		}
		d.park(&d.next)
	}
}

// startTimed begins the timed phase now: the request process (or the lanes)
// starts and the benchmark-duration window opens.
func (d *driver) startTimed() {
	d.timed = true
	d.t0 = d.now
	d.res.WarmupDuration = d.now
	if d.cfg.BenchmarkDuration > 0 {
		d.windowEnd = d.t0 + d.cfg.BenchmarkDuration
	}
	if d.lanes != nil {
		d.lanesTimed()
		return
	}
	if d.hasNext {
		d.releaseAt = d.origin() + d.next.Arrival
	}
	d.fill()
}

func (d *driver) slotFree() bool {
	return d.cfg.MaxConcurrency <= 0 || d.inFlight < d.cfg.MaxConcurrency
}

// fill sends requests while concurrency slots are free (vllm bench's
// semaphore, FIFO): queued requests first (warm-ups, released follow-ups),
// then timed requests whose release time has come, in source order. A timed
// request is only materialised when it is sent, so a million requests
// released at once (--request-rate inf) cost memory for the in-flight ones
// only. When the next release lies in the future and a slot is free, one
// release event is pending for it. Past the benchmark duration nothing
// timed is sent.
func (d *driver) fill() {
	if d.lanes != nil {
		return
	}
	for d.slotFree() {
		if d.bhead < len(d.blocked) {
			r := d.blocked[d.bhead]
			d.blocked[d.bhead] = nil
			d.bhead++
			if d.kindOf(r) == kindTimed {
				if !d.open() {
					d.freeSlot(r)
					d.pool = append(d.pool, r)
					continue
				}
				d.res.Sent++
			}
			d.send(r, -1, 0)
			continue
		}
		if d.warmNext < d.cfg.NumWarmups {
			// Warm-ups, all sent when the run starts, are made one at a
			// time as they go out.
			if d.deferring() {
				break
			}
			w := d.first
			w.Index = int64(d.warmNext)
			r := d.newRequest(&w, kindWarmup, uint64(d.warmNext)<<1|1)
			d.fl(r).released = d.warmAt
			d.warmNext++
			d.res.WarmupRequests++
			d.sendAt(r, -1, 0, d.warmAt)
			continue
		}
		if !d.timed || !d.hasNext {
			break
		}
		if !d.open() {
			d.hasNext = false // the source is not read any further
			break
		}
		if d.releaseAt > d.now {
			if !d.releasePending {
				d.releasePending = true
				d.q.Push(sim.Event{At: d.releaseAt, Kind: evRelease})
			}
			break
		}
		if d.deferring() {
			break
		}
		r := d.newRequest(&d.next, kindTimed, uint64(d.next.Index)<<1)
		f := d.fl(r)
		f.session, f.turn, f.final = d.next.SessionID, d.next.Turn, d.next.Final
		f.released = d.releaseAt
		if d.cfg.CacheBust != CacheBustNone {
			d.bustStart(r, &d.next)
		}
		d.res.Sent++
		at := d.now // after waiting for a slot, with a cap
		if d.deferOK {
			// No cap: every request goes out on release, a deferred one
			// too; its arrival, send time and timeout count from there.
			at = d.releaseAt
		}
		d.advance()
		d.sendAt(r, -1, 0, at)
	}
	if d.bhead == len(d.blocked) {
		d.blocked, d.bhead = d.blocked[:0], 0
	}
}

// deferring reports whether the client holds released requests back,
// unmade: with no concurrency cap, one engine and no sessions, every
// released request is in flight in vllm bench (it sits in the engine's
// waiting queue), but one step admits at most max-num-seqs of them, in
// FCFS order. While the queue holds that many, the ones behind change
// nothing the engine does, so they stay in the source (or, for warm-ups, a
// counter) and go in, with their own release time as arrival, when the
// queue drains. The run is byte-identical, and a million requests released
// at once (--request-rate inf) cost memory for max-num-seqs of them.
// Timeouts count from the release (sendAt); a request whose timeout passed
// while it was held expires at once, at that time, as it would have from
// the queue. Off with a cap (it bounds what is in flight), with data
// parallelism (the balancer reads every rank's queue), sessions, and a
// benchmark duration (the window closes on releases).
func (d *driver) deferring() bool {
	return d.deferOK && !d.sessionsSeen && d.engs[0].Waiting() >= d.cfg.Engine.MaxNumSeqs
}

// send hands r to the engine now. lane is its lane (−1: none); pad is the
// recorded output a one-token warm-up leaves out of the context it builds.
func (d *driver) send(r *engine.Request, lane int, pad int) { d.sendAt(r, lane, pad, d.now) }

// sendAt is send for a request the client sent at `at` ≤ now (held back
// by deferring until now).
func (d *driver) sendAt(r *engine.Request, lane int, pad int, at time.Duration) {
	d.inFlight++
	slot := int32(r.Handle - 1)
	f := &d.flights[slot]
	f.lane, f.pad = int32(lane), int32(pad)
	if lane >= 0 {
		d.lanes.l[lane].inFlight++
	}
	if f.kind == kindTimed {
		d.rec.Send(r.ID, d.rel(at))
		if d.cfg.RequestTimeout > 0 {
			d.tq = append(d.tq, deadline{at: at + d.cfg.RequestTimeout, slot: slot, gen: f.gen})
		}
	}
	rank := 0
	if len(d.engs) > 1 {
		rank = dpRoute(d.engs)
	}
	f.rank = int32(rank)
	if !d.engs[rank].Add(r, at) {
		d.leave(r)
	}
}

// clientDone: the client is done with r (its response ended, or it gave
// up); r's lane, if any, has one request less in flight. It returns r's
// record as it was (the slot itself stays until the engine is done too).
func (d *driver) clientDone(r *engine.Request) flight {
	f := d.fl(r)
	c := *f
	if f.lane >= 0 {
		d.lanes.l[f.lane].inFlight--
	}
	f.gen++ // pending deadlines and deliveries of r go stale
	d.inFlight--
	return c
}

// leave: a request left the system (finished or rejected).
func (d *driver) leave(r *engine.Request) {
	if d.kindOf(r) == kindAborted {
		// The client gave up on it earlier; the engine is done with it now.
		d.freeSlot(r)
		d.pool = append(d.pool, r)
		return
	}
	f := d.clientDone(r)
	d.freeSlot(r)
	if f.kind == kindTimed {
		d.recordTimed(r, &f)
	} else if d.lanes != nil {
		d.lanes.warmInFlight--
	} else {
		d.warmups--
	}
	d.sessionDone(r, &f)
	if f.lane >= 0 {
		d.laneDone(int(f.lane))
		d.laneIdle(int(f.lane))
	}
	d.pool = append(d.pool, r)
}

// deliver: a response the engine finished FrontendLatency ago reaches the
// client, which records it and frees its slot. A request that timed out in
// between was already recorded failed (its slot's generation moved on).
func (d *driver) deliver(ev sim.Event) {
	f := &d.flights[ev.Target]
	if f.req == nil || int64(f.gen) != ev.Arg {
		return
	}
	d.leave(f.req)
	if d.lanes == nil {
		d.maybeStartTimed()
	}
	d.fill()
}

// clientRecord is what the client knows of r (its record f) when it ends,
// before the outcome's times.
func (d *driver) clientRecord(r *engine.Request, f *flight) metrics.Record {
	return metrics.Record{
		Index:           r.ID,
		Sent:            d.rel(r.Arrived),
		ClientQueueTime: r.Arrived - f.released,
		InputTokens:     r.PromptLen,
		OutputTokens:    r.NumOutput,
		CachedTokens:    r.CachedTokens,
		Preemptions:     r.Preemptions,
		Session:         f.session,
		Turn:            f.turn,
	}
}

func (d *driver) recordTimed(r *engine.Request, f *flight) {
	m := d.clientRecord(r, f)
	end := d.now
	if r.Status == engine.StatusRejected {
		m.Rejected, m.RejectReason = true, r.RejectReason
		m.Scheduled, m.FirstToken, m.Finish = m.Sent, m.Sent, m.Sent
		d.res.Rejected++
		d.fail(r.RejectReason)
		end = r.Arrived // refused on arrival (a deferred request arrived earlier than now)
	} else {
		m.Scheduled = d.rel(r.FirstScheduled)
		m.FirstToken = d.rel(r.FirstToken + d.cfg.FrontendLatency)
		m.Finish = d.rel(r.Finished + d.cfg.FrontendLatency)
		d.res.Completed++
	}
	d.lastT = max(d.lastT, d.rel(end))
	d.rec.Finish(m)
	d.progress()
}

// progress feeds Config.Progress after a timed request ended.
func (d *driver) progress() {
	if d.cfg.Progress != nil {
		d.cfg.Progress(d.res.Completed+d.res.Rejected+d.res.TimedOut, d.rel(d.now))
	}
}

// nextControl is the earliest client deadline: the benchmark window's end,
// the grace period's end, the idle watchdog, the oldest live timeout.
func (d *driver) nextControl() time.Duration {
	t := min(d.windowEnd, d.graceEnd, d.idleAt)
	for d.tqHead < len(d.tq) {
		e := d.tq[d.tqHead]
		if d.flights[e.slot].gen != e.gen {
			d.tqHead++ // the request finished in time
			continue
		}
		t = min(t, e.at)
		break
	}
	if d.tqHead == len(d.tq) {
		d.tq, d.tqHead = d.tq[:0], 0
	} else if d.tqHead > 1024 && d.tqHead*2 > len(d.tq) {
		n := copy(d.tq, d.tq[d.tqHead:])
		d.tq, d.tqHead = d.tq[:n], 0
	}
	return t
}

// runControls fires every client deadline due now.
func (d *driver) runControls() {
	if d.windowEnd <= d.now {
		d.windowEnd = never
		d.closeWindow()
	}
	if d.graceEnd <= d.now {
		d.graceEnd = never
		d.stopped = true
		d.res.Unfinished = int64(d.inFlight)
		return
	}
	if d.idleAt <= d.now {
		d.idleAt = never
		d.skipIdle()
	}
	for d.tqHead < len(d.tq) {
		e := d.tq[d.tqHead]
		if d.flights[e.slot].gen == e.gen {
			if e.at > d.now {
				break
			}
			d.expire(e.slot, e.at)
		}
		d.tqHead++
	}
}

// closeWindow ends the benchmark duration: nothing new is sent; what is in
// flight has the grace period to finish, and what is still running then is
// not recorded (aiperf docs/tutorials/time-based-benchmarking.md @0f55efe).
func (d *driver) closeWindow() {
	d.closed = true
	d.idleAt = never
	for i := d.bhead; i < len(d.blocked); i++ {
		if r := d.blocked[i]; d.kindOf(r) == kindTimed {
			d.freeSlot(r)
			d.pool = append(d.pool, r)
		}
	}
	d.blocked, d.bhead = d.blocked[:0], 0
	d.hasNext = false
	switch {
	case d.cfg.GracePeriod < 0:
	case d.inFlight == 0:
		d.stopped = true
	default:
		d.graceEnd = d.now + d.cfg.GracePeriod
	}
}

// expire cancels a timed request that ran past Config.RequestTimeout: the
// client records it failed and moves on (aiperf --request-timeout-seconds,
// docs/cli-options.md @063a532: "cancelled and recorded as failures"; its
// session's next turn follows as after any failure); the engine drops it
// (vLLM aborts the request of a disconnected client).
//
// It expires at `at`, the deadline: now, or earlier for a request deferring
// held back past its deadline.
func (d *driver) expire(slot int32, at time.Duration) {
	r, eng := d.flights[slot].req, d.engs[d.flights[slot].rank]
	f := d.clientDone(r)
	lane := int(f.lane)
	d.res.TimedOut++
	m := d.clientRecord(r, &f)
	m.Rejected = true
	m.RejectReason = fmt.Sprintf("timeout: no complete response within %v (--request-timeout-seconds)", d.cfg.RequestTimeout)
	m.Scheduled, m.FirstToken, m.Finish = m.Sent, m.Sent, d.rel(at)
	d.fail(m.RejectReason)
	d.lastT = max(d.lastT, d.rel(at))
	d.rec.Finish(m)
	d.progress()
	f.pad = 0
	d.sessionDone(r, &f)
	d.fl(r).kind = kindAborted
	if eng.Abort(r) {
		d.freeSlot(r)
		d.pool = append(d.pool, r) // left the engine at once
	}
	if lane >= 0 {
		d.laneDone(lane)
		d.laneIdle(lane)
	}
	d.fill()
}

// watchIdle arms the system-idle cap's watchdog when nothing is in flight,
// waiting or being computed in the timed phase, and disarms it otherwise.
func (d *driver) watchIdle() {
	if d.cfg.SystemIdleGapCap <= 0 || !d.timed || d.closed || d.q.Len() == 0 ||
		d.inFlight > 0 || d.bhead < len(d.blocked) || anyBusy(d.engs) || anyWork(d.engs) {
		d.idleAt = never
		return
	}
	if d.idleAt == never {
		d.idleAt = d.now + d.cfg.SystemIdleGapCap
	}
}

// skipIdle: the system has been idle for the cap. If the next release is
// further away, every pending release moves earlier by the same amount
// (aiperf's enforce_system_idle_cap). Simulated time is not rewound: the
// clock jumps to that release, and since nothing is in flight, removing the
// gap from everything reported after it is the same thing.
func (d *driver) skipIdle() {
	ev, ok := d.q.Peek()
	for ok && ev.Kind == evFollowUp && d.followStale(ev) {
		d.q.Pop()
		ev, ok = d.q.Peek()
	}
	if !ok || ev.At <= d.now {
		return
	}
	j := ev.At - d.now
	d.skipped += j
	d.res.SystemIdle.Jumps++
	d.res.SystemIdle.Skipped += j
	if d.windowEnd != never {
		d.windowEnd += j
	}
	d.now = ev.At
}

// startSteps starts every step that can start now: the group step of a
// lockstep DP group when no rank is computing, else each idle rank's own.
func (d *driver) startSteps() error {
	if d.batches != nil {
		return d.startGroupStep()
	}
	for i, e := range d.engs {
		if e.Busy() || !e.HasWork() {
			continue
		}
		rows := e.Schedule(d.now, &d.batch)
		if rows == 0 {
			if err := d.stalled(); err != nil {
				return err
			}
			continue
		}
		d.stepStarted(rows, d.cfg.Pricer.StepTime(&d.batch), i)
	}
	return nil
}

// startGroupStep schedules every rank of a lockstep DP group at once; ranks
// with nothing to schedule run the dummy batch kernel.GroupStepTime prices.
func (d *driver) startGroupStep() error {
	if anyBusy(d.engs) || !anyWork(d.engs) {
		return nil
	}
	rows := 0
	for i, e := range d.engs {
		d.batches[i] = kernel.Batch{}
		if e.HasWork() {
			rows += e.Schedule(d.now, &d.batches[i])
		}
	}
	if rows == 0 {
		return d.stalled()
	}
	d.stepStarted(rows, kernel.GroupStepTime(d.cfg.Pricer, d.batches), -1)
	return nil
}

// stalled reports a deadlock: work no engine can schedule, and nothing
// (a step, an event, a client deadline) that could change that.
func (d *driver) stalled() error {
	if d.q.Len() == 0 && d.nextControl() == never && !anyBusy(d.engs) {
		w, r, free := counts(d.engs)
		return fmt.Errorf("%w: %d waiting, %d running, %d free blocks", ErrStalled, w, r, free)
	}
	return nil
}

// stepStarted accounts a step priced bd and queues its end; rank is the
// engine stepping, −1 for a lockstep group.
func (d *driver) stepStarted(rows int, bd kernel.Breakdown, rank int) {
	if bd.Total <= 0 {
		bd.Total = time.Nanosecond // time must advance
	}
	if d.timed {
		d.res.TimedSteps++
		d.res.StepTime.Compute += bd.Compute
		d.res.StepTime.Memory += bd.Memory
		d.res.StepTime.Comm += bd.Comm
		d.res.StepTime.Launch += bd.Launch
		d.res.StepTime.Host += bd.Host
		d.res.StepTime.Total += bd.Total
		d.rec.AddStep(rows)
	}
	d.q.Push(sim.Event{At: d.now + bd.Total, Kind: evStepEnd, Target: rank})
}

// endStep ends the step of engine rank, or of every computing rank of a
// lockstep group (rank −1).
func (d *driver) endStep(rank int) {
	if rank >= 0 {
		d.complete(d.engs[rank])
	} else {
		for _, e := range d.engs {
			if e.Busy() {
				d.complete(e)
			}
		}
	}
	if d.lanes == nil {
		d.maybeStartTimed()
	}
	d.fill()
}

// complete ends e's step in flight and hands its tokens to the client.
func (d *driver) complete(e *engine.Engine) {
	samples := e.Complete(d.now)
	timedTokens := 0
	detailed := d.rec.Detailed()
	var runGap time.Duration
	var runLen int64
	for i := range samples {
		s := &samples[i]
		if d.kindOf(s.Req) != kindTimed {
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
		d.rec.AddTokens(d.rel(d.now+d.cfg.FrontendLatency), timedTokens)
	}
	for i := range samples {
		if r := samples[i].Req; samples[i].Done {
			if f := d.fl(r); d.cfg.FrontendLatency > 0 && f.kind != kindAborted {
				d.q.Push(sim.Event{At: d.now + d.cfg.FrontendLatency, Kind: evDeliver, Target: int(r.Handle - 1), Arg: int64(f.gen)})
				continue
			}
			d.leave(r)
		}
	}
	if d.cfg.AfterStep != nil {
		d.cfg.AfterStep(d.now, e)
	}
}
