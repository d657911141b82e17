// Package client is the benchmark client: what vllm bench serve or aiperf
// does against a serving endpoint. It releases requests (the request
// process, warm-ups, multi-turn sessions), holds them to its concurrency
// rule (vllm bench's per-request cap, aiperf's lanes), sends them, cancels
// the ones that run too long, enforces the time limits and idle caps, and
// records what the client would see.
//
// It never touches an engine: the cluster loop, which owns the clock, the
// event queue, the replicas and the router, drives it through the methods
// below and serves it through Server. README.md in package cluster
// describes the semantics and which benchmark client each one mirrors.
package client

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"blis/engine"
	"blis/metrics"
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

// Config is the benchmark client's settings; cluster.Config documents each.
type Config struct {
	MaxConcurrency                         int
	NumWarmups                             int
	Seed                                   int64
	Mode                                   Mode
	WarmupRequestsPerLane                  int
	TrajectoryStartMin, TrajectoryStartMax float64
	TraceIdleGapCap, SystemIdleGapCap      time.Duration
	CacheBust                              CacheBust
	BenchmarkDuration, GracePeriod         time.Duration
	RequestTimeout                         time.Duration
	// FrontendLatency is added to every response's times as the client
	// sees them (the loop delivers responses that much after the engine
	// finished them).
	FrontendLatency time.Duration
	Reopen          func() (workload.Source, error)
	Progress        func(done int64, now time.Duration)
}

// Result is what the client counted besides the per-request metrics.
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
	// Sessions counts multi-turn follow-ups read from the source (each
	// recorded request carries its own session and turn: metrics.Record).
	Sessions struct{ FollowUps int64 }
	// Failures groups the timed requests that failed (refused by the
	// engine, as vLLM's server answers HTTP 400; rejected by the router;
	// timed out) by the kind of reason, in order of first occurrence.
	Failures []Failure
}

// Failure is one kind of request failure: Kind is the reason's first word
// (max_model_len, kv_capacity, timeout, ...), Example the first full
// reason of that kind, Count how many timed requests failed so.
type Failure struct {
	Kind, Example string
	Count         int64
}

// Server is the serving side as the client sees it, implemented by the
// cluster loop: the clock and the event queue are the loop's, and requests
// are the loop's objects, named by their engine.Request.Handle.
type Server interface {
	// Now is the simulated time.
	Now() time.Duration
	// NewRequest returns a blank request with a fresh Handle.
	NewRequest() *engine.Request
	// Send hands r to the gateway; the client sent it at `at` ≤ Now (it
	// held r back until now: deferral). session is the multi-turn session
	// it belongs to (0: none), which a router may keep affinity to. A
	// refusal may come back at once, through Client.Ended.
	Send(r *engine.Request, at time.Duration, session uint64)
	// Cancel: the client gave up on r (a timeout); it never hears of r
	// again.
	Cancel(r *engine.Request)
	// Drop returns a request the client made but never sent.
	Drop(r *engine.Request)
	// At schedules Client.Timer(ev) at ev.At (ev.Kind ≥ 0).
	At(ev sim.Event)
	// Skip moves the clock to the next scheduled event that is not stale
	// (Client.Stale) and returns how far it moved (0: no event later than
	// now). The system-idle cap calls it when nothing is in flight.
	Skip() time.Duration
	// Idle reports whether no engine computes or holds work while some
	// event is still scheduled.
	Idle() bool
	// Deferrable reports whether one engine, reached directly, serves
	// every request; Backlogged whether its waiting queue already holds
	// as many requests as one step admits (see Client.deferring).
	Deferrable() bool
	Backlogged() bool
}

// Timer kinds (sim.Event.Kind of the events the client schedules).
const (
	evRelease   = iota // the client's request process releases the next request
	evFollowUp         // a session's follow-up turn is released (Arg: slot in follows; Target: its generation)
	evLaneStart        // a lane takes its next trajectory (Target: lane)
)

// What the client knows a request as (flight.kind).
const (
	kindWarmup  = 1
	kindTimed   = 2
	kindAborted = 3 // cancelled by the client; still in an engine's step until it ends
)

const never = time.Duration(math.MaxInt64)

// Client is the benchmark client of one run.
type Client struct {
	cfg  Config
	srv  Server
	src  workload.Source
	rec  *metrics.Recorder
	salt uint64

	m mode // vllm bench's per-request cap or aiperf's lanes

	t0       time.Duration // start of the timed phase
	timed    bool
	inFlight int

	sessions   map[uint64]*session
	follows    []followSlot // follow-ups with a pending release, by event Arg
	followFree []int32      // free slots of follows

	// The client's record of every request it made, by Handle − 1 (the
	// loop's numbering; a record is renewed when the loop reuses a handle).
	flights []flight
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
	empty     bool          // the workload had no request

	res   Result
	lastT time.Duration // last timed completion, relative to the timed phase
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

// flight is the client's record of one request, the request itself
// carrying only its handle (engine.Request.Handle).
type flight struct {
	req      *engine.Request
	released time.Duration // when the request process released it, before any concurrency wait
	sent     time.Duration // when the client sent it
	session  uint64        // multi-turn session (0: none), its turn, and whether it is the last
	turn     int
	final    bool
	kind     uint8
	lane     int32 // −1: no lane
	pad      int32 // recorded output tokens a one-token warm-up did not generate
	gen      uint32
}

type deadline struct {
	at   time.Duration
	slot int32
	gen  uint32
}

// New makes the client of one run: it replays src and records timed
// requests into rec.
func New(cfg Config, src workload.Source, rec *metrics.Recorder) (*Client, error) {
	if cfg.Mode == Lanes && cfg.MaxConcurrency < 1 {
		return nil, errors.New("cluster: lanes need MaxConcurrency ≥ 1 (the number of lanes)")
	}
	d := &Client{cfg: cfg, src: src, rec: rec, salt: splitmix(uint64(cfg.Seed) ^ 0x5bd1e995),
		windowEnd: never, graceEnd: never, idleAt: never}
	if cfg.Mode == Lanes {
		d.m = newLanes(d)
	} else {
		d.m = &perRequest{d: d}
	}
	return d, nil
}

// Start begins the run at the server's time 0: the lanes' primers, or the
// warm-ups and the request process.
func (d *Client) Start(srv Server) error {
	d.srv = srv
	return d.m.start()
}

func (d *Client) now() time.Duration { return d.srv.Now() }

// Timed reports whether the timed phase has begun (steps count from then).
func (d *Client) Timed() bool { return d.timed }

// Stopped reports whether the run is over for the client (the grace period
// has ended): the loop stops.
func (d *Client) Stopped() bool { return d.stopped }

// Settle runs once per loop iteration, after everything due at an instant
// was handled: a lanes warm-up moves on when nothing of it is in flight.
func (d *Client) Settle() { d.m.settle() }

// Wake is the earliest client deadline (the benchmark window's end, the
// grace period's end, the system-idle watchdog, the oldest live request
// timeout); never when none. It arms or disarms the watchdog first.
func (d *Client) Wake() time.Duration {
	d.watchIdle()
	return d.nextControl()
}

// Fire runs every client deadline due now.
func (d *Client) Fire() { d.runControls() }

// Timer fires an event the client scheduled with Server.At.
func (d *Client) Timer(ev sim.Event) {
	if ev.Kind == evFollowUp {
		d.releaseFollowUp(ev)
		return
	}
	d.m.timer(ev)
}

// Stale reports whether a scheduled event was superseded (a follow-up
// whose release the trace idle cap moved earlier).
func (d *Client) Stale(ev sim.Event) bool {
	return ev.Kind == evFollowUp && d.followStale(ev)
}

// Resume lets the client send after responses ended (Ended): a closed loop
// sends its next requests, the timed phase starts when the warm-ups are
// back.
func (d *Client) Resume() { d.m.resume() }

// Finish ends the run: it closes the workload and returns the client's
// result and the workload's error. stalled reports a run that ended with
// no time limit reached while requests were still expected: in flight
// (inFlight of them), left to send, or, as serverBusy says, held by an
// engine.
func (d *Client) Finish(serverBusy bool) (res Result, stalled bool, inFlight int, err error) {
	if d.empty {
		return d.res, false, 0, nil
	}
	if err := d.m.finish(); err != nil {
		return d.res, false, 0, err
	}
	if err := workload.Err(d.src); err != nil {
		return d.res, false, 0, err
	}
	if d.stopped || d.closed {
		workload.Close(d.src)
		if l, ok := d.m.(*lanes); ok {
			workload.Close(l.traj.src) // the source again, when the lanes reopened it
		}
	} else if serverBusy || d.inFlight > 0 || d.m.unsent() {
		return d.res, true, d.inFlight, nil
	}
	if d.timed {
		d.res.Duration = d.lastT
	}
	return d.res, false, 0, nil
}

// Result is the client's result so far (a run that failed).
func (d *Client) Result() Result { return d.res }

// fail counts a timed request's failure under its kind.
func (d *Client) fail(reason string) {
	kind, _, _ := strings.Cut(reason, ":")
	for i := range d.res.Failures {
		if d.res.Failures[i].Kind == kind {
			d.res.Failures[i].Count++
			return
		}
	}
	d.res.Failures = append(d.res.Failures, Failure{Kind: kind, Example: reason, Count: 1})
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fl is r's record. The pointer is valid until the next request is made.
func (d *Client) fl(r *engine.Request) *flight { return &d.flights[r.Handle-1] }

func (d *Client) kindOf(r *engine.Request) uint8 { return d.flights[r.Handle-1].kind }

// rel converts a simulated time to time since the start of the timed phase,
// less the idle time the system-idle cap removed.
func (d *Client) rel(t time.Duration) time.Duration { return t - d.t0 - d.skipped }

// origin is where the timed phase's schedule (request-process arrivals,
// trace timestamps) counts from, in simulated time.
func (d *Client) origin() time.Duration { return d.t0 + d.skipped }

// open reports whether the timed phase still sends requests.
func (d *Client) open() bool {
	return !d.closed && (d.cfg.BenchmarkDuration <= 0 || d.rel(d.now()) < d.cfg.BenchmarkDuration)
}

// newRequest makes the engine request for w and its record, kind
// kindWarmup or kindTimed, released now (callers that release it at
// another time set flight.released).
func (d *Client) newRequest(w *workload.Request, kind uint8, salt uint64) *engine.Request {
	r := d.srv.NewRequest()
	r.ID = w.Index
	// Only timed requests may be private; the mode says when else
	// content repeats (a warm-up's copy, a lane's replay).
	r.Private = w.Unique && kind == kindTimed && d.m.private(w)
	r.Prompt = append(r.Prompt, w.Prompt...)
	r.PromptLen = w.InputLen
	r.MaxTokens = w.OutputLen
	r.OutputID = splitmix(d.salt ^ salt)
	h := int(r.Handle)
	if h > len(d.flights) {
		d.flights = append(d.flights, make([]flight, h-len(d.flights))...)
	}
	f := &d.flights[h-1]
	*f = flight{req: r, kind: kind, released: d.now(), lane: -1, gen: f.gen + 1}
	return r
}

// startTimed begins the timed phase now: the request process (or the lanes)
// starts and the benchmark-duration window opens.
func (d *Client) startTimed() {
	d.timed = true
	d.t0 = d.now()
	d.res.WarmupDuration = d.now()
	if d.cfg.BenchmarkDuration > 0 {
		d.windowEnd = d.t0 + d.cfg.BenchmarkDuration
	}
	d.m.timedStarted()
}

// send hands r to the engine now. lane is its lane (−1: none); pad is the
// recorded output a one-token warm-up leaves out of the context it builds.
func (d *Client) send(r *engine.Request, lane int, pad int) { d.sendAt(r, lane, pad, d.now()) }

// sendAt is send for a request the client sent at `at` ≤ now (held back
// by deferring until now).
func (d *Client) sendAt(r *engine.Request, lane int, pad int, at time.Duration) {
	d.inFlight++
	slot := int32(r.Handle - 1)
	f := &d.flights[slot]
	f.lane, f.pad = int32(lane), int32(pad)
	if f.kind == kindTimed {
		d.rec.Send(r.ID, d.rel(at))
		if d.cfg.RequestTimeout > 0 {
			d.tq = append(d.tq, deadline{at: at + d.cfg.RequestTimeout, slot: slot, gen: f.gen})
		}
	}
	f.sent = at
	d.srv.Send(r, at, f.session)
}

// clientDone: the client is done with r (its response ended, or it gave
// up). It returns r's record as it was.
func (d *Client) clientDone(r *engine.Request) flight {
	f := d.fl(r)
	c := *f
	f.gen++ // pending deadlines and deliveries of r go stale
	d.inFlight--
	return c
}

// Ended: r's response reached the client (r.Status is StatusFinished), or
// r was refused (StatusRejected, r.RejectReason says why: the engine's
// admission checks or the router; r.Arrived is when). The client records it and moves its
// session on; the loop reuses r afterwards. Once the loop has handed over
// the requests that ended together it calls Resume.
func (d *Client) Ended(r *engine.Request) {
	f := d.clientDone(r)
	if f.kind == kindTimed {
		d.recordTimed(r, &f)
	} else {
		d.m.warmupEnded()
	}
	d.sessionDone(r, &f)
	d.m.left(f.lane)
}

// clientRecord is what the client knows of r (its record f) when it ends,
// before the outcome's times.
func (d *Client) clientRecord(r *engine.Request, f *flight) metrics.Record {
	return metrics.Record{
		Index:           r.ID,
		Sent:            d.rel(f.sent),
		ClientQueueTime: f.sent - f.released,
		InputTokens:     r.PromptLen,
		OutputTokens:    r.NumOutput,
		CachedTokens:    r.CachedTokens,
		Preemptions:     r.Preemptions,
		Session:         f.session,
		Turn:            f.turn,
	}
}

func (d *Client) recordTimed(r *engine.Request, f *flight) {
	m := d.clientRecord(r, f)
	end := d.now()
	if r.Status == engine.StatusRejected {
		m.Rejected, m.RejectReason = true, r.RejectReason
		// Refused when it reached the server that refused it (r.Arrived):
		// an engine on arrival (a deferred request arrived earlier than
		// now), a router when it decided.
		m.Scheduled, m.FirstToken, m.Finish = m.Sent, m.Sent, d.rel(r.Arrived)
		d.res.Rejected++
		d.fail(r.RejectReason)
		end = r.Arrived
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
func (d *Client) progress() {
	if d.cfg.Progress != nil {
		d.cfg.Progress(d.res.Completed+d.res.Rejected+d.res.TimedOut, d.rel(d.now()))
	}
}

// nextControl is the earliest client deadline: the benchmark window's end,
// the grace period's end, the idle watchdog, the oldest live timeout.
func (d *Client) nextControl() time.Duration {
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
func (d *Client) runControls() {
	if d.windowEnd <= d.now() {
		d.windowEnd = never
		d.closeWindow()
	}
	if d.graceEnd <= d.now() {
		d.graceEnd = never
		d.stopped = true
		d.res.Unfinished = int64(d.inFlight)
		return
	}
	if d.idleAt <= d.now() {
		d.idleAt = never
		d.skipIdle()
	}
	for d.tqHead < len(d.tq) {
		e := d.tq[d.tqHead]
		if d.flights[e.slot].gen == e.gen {
			if e.at > d.now() {
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
func (d *Client) closeWindow() {
	d.closed = true
	d.idleAt = never
	d.m.closeWindow()
	switch {
	case d.cfg.GracePeriod < 0:
	case d.inFlight == 0:
		d.stopped = true
	default:
		d.graceEnd = d.now() + d.cfg.GracePeriod
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
func (d *Client) expire(slot int32, at time.Duration) {
	r := d.flights[slot].req
	f := d.clientDone(r)
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
	d.srv.Cancel(r)
	d.m.left(f.lane)
	d.m.fill()
}

// watchIdle arms the system-idle cap's watchdog when nothing is in flight,
// waiting or being computed in the timed phase, and disarms it otherwise.
func (d *Client) watchIdle() {
	if d.cfg.SystemIdleGapCap <= 0 || !d.timed || d.closed ||
		d.inFlight > 0 || d.m.holding() || !d.srv.Idle() {
		d.idleAt = never
		return
	}
	if d.idleAt == never {
		d.idleAt = d.now() + d.cfg.SystemIdleGapCap
	}
}

// skipIdle: the system has been idle for the cap. If the next release is
// further away, every pending release moves earlier by the same amount
// (aiperf's enforce_system_idle_cap). Simulated time is not rewound: the
// clock jumps to that release, and since nothing is in flight, removing the
// gap from everything reported after it is the same thing.
func (d *Client) skipIdle() {
	j := d.srv.Skip()
	if j <= 0 {
		return
	}
	d.skipped += j
	d.res.SystemIdle.Jumps++
	d.res.SystemIdle.Skipped += j
	if d.windowEnd != never {
		d.windowEnd += j
	}
}

// Tokens: a step produced samples (its output chunks, engine.Complete's);
// the client streams them FrontendLatency later. Timed requests' chunks
// and the gaps between them are recorded. A chunk of several tokens
// (speculative decoding's accepted drafts, engine.Sample.Tokens) is one
// streamed message: vLLM bench gives it one ITL gap and one timestamp in
// max_output_tokens_per_s (vllm/benchmarks/serve.py calculate_metrics),
// so it counts once here too; output-token totals come from the request.
func (d *Client) Tokens(samples []engine.Sample) {
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
		d.rec.AddTokens(d.rel(d.now()+d.cfg.FrontendLatency), timedTokens)
	}
}
