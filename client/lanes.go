package client

import (
	"math/rand/v2"
	"time"

	"blis/engine"
	"blis/sim"
	"blis/workload"
)

// Lanes mode mirrors aiperf's agentic replay (ai-dynamo/aiperf
// src/aiperf/timing/strategies/agentic_replay.py and
// timing/trajectory_source.py @88bd364, the timing InferenceX's AgentX
// benchmark runs through --scenario inferencex-agentx-mvp); README.md has
// the details and what is not mirrored:
//
//   - --max-concurrency lanes; a lane holds one trajectory tree — a session
//     and the sub-agent branches it spawns — until the whole tree has
//     drained, then takes the next trajectory from the workload at its turn
//     0. Branches run alongside their parent on the same lane.
//   - Warm-up: each initial lane starts at a turn k drawn from the
//     trajectory-start ratios; its primer is turn k carrying the whole
//     history. With --warmup-requests-per-lane K the lanes then go on with no
//     delays until each has sent K warm-up requests, primer included. Every
//     warm-up request asks for one token.
//   - The timed phase starts when every warm-up request is back; what the
//     warm-up left waiting is released then, after its delay with K.
//   - A refused turn ends its session (aiperf's context-overflow
//     short-circuit).
//
// Request arrivals (the rate process, trace timestamps) do not apply: lanes
// are closed loops, and follow-ups keep only their delays.

type lanes struct {
	d    *Client
	l    []lane
	traj trajReader
	rng  *rand.Rand

	warm          bool // warm-up in progress
	accel         bool // the no-delay stage after the primers has started
	budget        bool // every lane has spent its warm-up budget
	warmInFlight  int
	warmPending   int // warm-up follow-ups scheduled, not yet sent
	startsPending int // evLaneStart events queued

	plays   uint64
	nextSID uint64
	seq     uint64
	sidMap  map[uint64]uint64 // source session → this play's session
	buf     []workload.Segment
}

type lane struct {
	remaining int // requests of the current play not yet done or dropped
	inFlight  int
	pend      []int32 // timed follow-ups waiting for their release (slots in follows)
	active    bool    // a play is in progress
	needTraj  bool    // drained during the warm-up: takes a trajectory when it may
	warmSent  int
	hold      []*workload.Request // released in the warm-up, sent in the timed phase
}

func (L *lanes) warmBudget() int { return L.d.cfg.WarmupRequestsPerLane }

// newLanes makes the lanes of client d.
func newLanes(d *Client) *lanes {
	return &lanes{
		d:      d,
		l:      make([]lane, d.cfg.MaxConcurrency),
		rng:    sim.RNG(d.cfg.Seed, "cluster.lanes"),
		sidMap: map[uint64]uint64{},
		traj: trajReader{src: d.src, open: map[uint64]*trajectory{},
			reopen: d.cfg.Reopen, wrap: d.cfg.BenchmarkDuration > 0 && d.cfg.Reopen != nil},
	}
}

// start begins a Lanes run: the primers, or the timed phase at once.
func (L *lanes) start() error {
	d := L.d
	if L.warmBudget() <= 0 && d.cfg.TrajectoryStartMax <= 0 {
		d.startTimed()
		return L.traj.err
	}
	L.warm = true
	for li := range L.l {
		t := L.traj.next()
		if t == nil {
			break
		}
		L.feed(li, t, L.sampleStart(t))
		L.traj.recycle(t)
	}
	return L.traj.err
}

// sampleStart draws a trajectory's start turn as aiperf's TrajectorySource
// does for a trace without timestamps: uniform over
// [min(⌊min·n⌋, n−2), min(⌊max·n⌋, n−2)], so at least one turn follows the
// primer (0 when n ≤ 2). aiperf skips traces of one turn; BLIS primes their
// only turn and lets the lane move on.
func (L *lanes) sampleStart(t *trajectory) int {
	d := L.d
	n := t.rootTurns()
	if n <= 2 {
		return 0
	}
	kmin := min(int(d.cfg.TrajectoryStartMin*float64(n)), n-2)
	kmax := min(int(d.cfg.TrajectoryStartMax*float64(n)), n-2)
	if kmin > kmax {
		kmin = kmax
	}
	return kmin + L.rng.IntN(kmax-kmin+1)
}

// settle moves a lanes warm-up on when nothing of it is left in flight:
// from the primers to the no-delay stage, then to the timed phase.
func (L *lanes) settle() {
	d := L.d
	if L == nil || !L.warm || L.warmInFlight > 0 || L.warmPending > 0 || L.startsPending > 0 {
		return
	}
	if L.warmBudget() > 0 && !L.accel {
		L.accel = true
		for li := range L.l {
			l := &L.l[li]
			for _, c := range l.hold {
				L.warmPending++
				L.push(c, d.now())
			}
			l.hold = l.hold[:0]
			if l.needTraj {
				l.needTraj = false
				L.queueLaneStart(li)
			}
		}
		if L.warmPending > 0 || L.startsPending > 0 {
			return
		}
	}
	L.warm = false
	d.startTimed()
}

// timedStarted starts the timed phase of a Lanes run.
func (L *lanes) timedStarted() {
	d := L.d
	carry := L.warmBudget() > 0
	for li := range L.l {
		l := &L.l[li]
		for _, c := range l.hold {
			at := d.now()
			if carry {
				at += c.Delay // lanes cap a tree's idle time, not its delays (laneIdle)
			}
			L.push(c, at)
		}
		l.hold = l.hold[:0]
		L.laneIdle(li)
		l.needTraj = false
		if !l.active {
			L.startLane(li)
		}
	}
}

func (L *lanes) queueLaneStart(li int) {
	d := L.d
	L.startsPending++
	d.srv.At(sim.Event{At: d.now(), Kind: evLaneStart, Target: li})
}

// laneDone: one request of lane li's play is done; when none is left the
// lane takes its next trajectory (through an event, so a run of refused
// requests does not recurse).
func (L *lanes) laneDone(li int) {
	l := &L.l[li]
	l.remaining--
	if l.remaining > 0 {
		return
	}
	l.active = false
	L.queueLaneStart(li)
}

// laneIdle applies the trace idle-gap cap to lane li's tree: when none of
// its requests is in flight, its pending releases all move earlier by the
// same amount so the next comes within the cap (aiperf advances the tree's
// pending timers uniformly; InferenceX benchmark_lib.sh build_replay_cmd).
func (L *lanes) laneIdle(li int) {
	d := L.d
	l := &L.l[li]
	cp := d.cfg.TraceIdleGapCap
	if cp <= 0 || !d.timed || l.inFlight > 0 || len(l.pend) == 0 {
		return
	}
	next := never
	for _, s := range l.pend {
		next = min(next, d.follows[s].at)
	}
	j := next - d.now() - cp
	if j <= 0 {
		return
	}
	for _, s := range l.pend {
		f := &d.follows[s]
		f.gen++
		f.at -= j
		d.srv.At(sim.Event{At: f.at, Kind: evFollowUp, Target: int(f.gen), Arg: int64(s)})
	}
	d.res.TraceIdle.Jumps++
	d.res.TraceIdle.Skipped += j
}

func (L *lanes) laneStart(li int) {
	L.startsPending--
	if !L.l[li].active {
		L.startLane(li)
	}
}

// startLane gives lane li its next trajectory, from turn 0.
func (L *lanes) startLane(li int) {
	d := L.d
	l := &L.l[li]
	if d.timed {
		if !d.open() {
			return // aiperf: no new session once the duration is over
		}
	} else if !L.accel || L.budget || l.warmSent >= L.warmBudget() {
		l.needTraj = true
		return
	}
	t := L.traj.next()
	if t == nil {
		return
	}
	L.feed(li, t, 0)
	L.traj.recycle(t)
}

// feed starts a play of trajectory t on lane li at its k-th root turn: the
// start request is sent now, every later request of the tree is parked
// behind its predecessor. Sessions get IDs unique to the play, so replays
// of one trajectory never meet.
func (L *lanes) feed(li int, t *trajectory, k int) {
	d := L.d
	l := &L.l[li]
	L.plays++
	d.res.Trajectories++
	clear(L.sidMap)
	var marker uint64
	if d.cfg.CacheBust != CacheBustNone {
		marker = splitmix(d.salt^tagMarker^L.plays) | 1
	}

	// The start request's prompt: the root's history up to turn k, each
	// earlier turn followed by its recorded response, then turn k.
	reqs := t.reqs
	root := reqs[0].SessionID
	buf, plen := L.buf[:0], 0
	si, pos := 0, 0
	for i := range reqs {
		q := &reqs[i]
		if i > 0 && (root == 0 || q.SessionID != root) {
			continue
		}
		if !q.PrevContext || pos == 0 {
			buf, plen = buf[:0], 0
		}
		at := len(buf)
		buf = append(buf, t.prompt(i)...)
		plen += q.InputLen
		if pos == 0 && marker != 0 {
			buf = insertSeg(buf, at+d.markerPos(q.SystemSegments, len(buf)-at), workload.Segment{ID: marker, Len: MarkerTokens})
			plen += MarkerTokens
		}
		if pos == k {
			si = i
			break
		}
		buf = append(buf, workload.Segment{ID: splitmix(d.salt ^ tagSynth ^ L.plays<<16 ^ uint64(pos)), Len: q.OutputLen})
		plen += q.OutputLen
		pos++
	}
	L.buf = buf

	startTurn := reqs[si].Turn
	if root != 0 {
		L.nextSID++
		L.sidMap[root] = L.nextSID
		s := d.sess(L.nextSID)
		s.lane, s.marker = int32(li), marker
	}
	count := 1
	for i := range reqs {
		if i == si {
			continue
		}
		q := reqs[i]
		switch {
		case root != 0 && q.SessionID == root:
			if i < si {
				continue // history the primer carries
			}
			q.SessionID = L.sidMap[root]
		case q.Turn == 0 && q.ParentSession != 0:
			np, ok := L.sidMap[q.ParentSession]
			if !ok || (q.ParentSession == root && q.ParentTurn < startTurn) {
				continue // a branch of the history, or under one
			}
			L.nextSID++
			L.sidMap[q.SessionID] = L.nextSID
			q.SessionID, q.ParentSession = L.nextSID, np
		default:
			ns, ok := L.sidMap[q.SessionID]
			if !ok {
				continue
			}
			q.SessionID = ns
		}
		q.Prompt = t.prompt(i)
		d.park(&q)
		d.sess(q.SessionID).lane = int32(li)
		count++
	}
	l.remaining, l.active = count, true

	w := reqs[si]
	w.Prompt, w.InputLen = buf, plen
	if root != 0 {
		w.SessionID = L.sidMap[root]
	}
	L.sendLane(li, &w, true)
}

// sendLane sends a lane's request: a trajectory's start (w's prompt is
// final) or a released follow-up (built from its predecessor's context). In
// the warm-up it spends the lane's budget.
func (L *lanes) sendLane(li int, w *workload.Request, start bool) {
	d := L.d
	l := &L.l[li]
	L.seq++
	kind := uint8(kindTimed)
	if !d.timed {
		kind = kindWarmup
	}
	var r *engine.Request
	if start {
		r = d.newRequest(w, kind, L.seq<<2|3)
		f := d.fl(r)
		f.session, f.turn, f.final = w.SessionID, w.Turn, w.Final
	} else {
		r = d.buildFollowUp(w, kind, L.seq<<2|3)
	}
	pad := 0
	if kind == kindWarmup {
		// Every warm-up request asks for one token; the context keeps the
		// recorded response (agentic_replay.py _WARMUP_MAX_TOKENS).
		pad, r.MaxTokens = max(w.OutputLen-1, 0), 1
		l.warmSent++
		d.res.WarmupRequests++
		L.warmInFlight++
		if k := L.warmBudget(); k > 0 && !L.budget {
			L.budget = true
			for i := range L.l {
				if L.l[i].warmSent < k {
					L.budget = false
					break
				}
			}
		}
	} else {
		r.ID = d.res.Sent
		d.res.Sent++
	}
	l.inFlight++
	d.send(r, li, pad)
}

// warmRelease: a follow-up released during a lanes warm-up goes out at once
// in the no-delay stage while its lane has budget, else waits for the timed
// phase.
func (L *lanes) warmRelease(c *workload.Request) {
	d := L.d
	l := &L.l[d.sess(c.SessionID).lane]
	if !L.accel || L.budget || l.warmSent >= L.warmBudget() {
		l.hold = append(l.hold, c)
		return
	}
	L.warmPending++
	L.push(c, d.now())
}

// laneFollowUp sends a released follow-up on its lane.
func (L *lanes) laneFollowUp(c *workload.Request) {
	d := L.d
	li := int(d.sess(c.SessionID).lane)
	if !d.timed {
		L.warmPending--
		if l := &L.l[li]; L.budget || l.warmSent >= L.warmBudget() {
			l.hold = append(l.hold, c)
			return
		}
	} else if !d.open() {
		return
	}
	L.sendLane(li, c, false)
}

// push schedules follow-up c's release at `at`; in the timed phase it is
// one of its lane's pending releases, which the trace idle cap moves.
func (L *lanes) push(c *workload.Request, at time.Duration) {
	d := L.d
	i := d.pushFollow(c, at)
	if d.timed {
		f := &d.follows[i]
		f.lane = d.sess(c.SessionID).lane
		l := &L.l[f.lane]
		l.pend = append(l.pend, i)
	}
}

// followUpAt: in the warm-up a released follow-up joins its lane's warm-up;
// in the timed phase it goes its delay after its predecessors.
func (L *lanes) followUpAt(c *workload.Request, base time.Duration) {
	d := L.d
	if !d.timed {
		L.warmRelease(c)
		return
	}
	L.push(c, max(base+c.Delay, d.now()))
}

// followUp sends a released follow-up on its lane.
func (L *lanes) followUp(c *workload.Request, slot, lane int32) {
	if lane >= 0 {
		l := &L.l[lane]
		for k, s := range l.pend {
			if s == slot {
				l.pend[k] = l.pend[len(l.pend)-1]
				l.pend = l.pend[:len(l.pend)-1]
				break
			}
		}
	}
	L.laneFollowUp(c)
}

func (L *lanes) timer(ev sim.Event) {
	if ev.Kind == evLaneStart {
		L.laneStart(ev.Target)
	}
}

// left: one request of a lane ended; the lane moves on when its tree has
// drained, and its tree's idle cap applies.
func (L *lanes) left(lane int32) {
	if lane < 0 {
		return
	}
	li := int(lane)
	L.l[li].inFlight--
	L.laneDone(li)
	L.laneIdle(li)
}

// refused: a refused turn stops its session (stopSession).
func (L *lanes) refused(s *session) bool {
	L.stopSession(s)
	return true
}

// stopSession ends a session whose turn the server refused: every later
// turn grows the context, so aiperf stops the trajectory there instead of
// sending turns bound to fail (agentic_replay.py, context-overflow
// short-circuit). Its parked turns and the branches that would have
// started after them are dropped; a stopped branch lets its parent's join
// go on without it (BranchOrchestrator.on_child_stopped).
func (L *lanes) stopSession(s *session) {
	d := L.d
	s.stopped = true
	dropped := len(s.parked)
	s.parked = nil
	for _, list := range s.branchWait {
		for _, b := range list {
			dropped += 1 + d.dropTree(b.SessionID)
		}
	}
	s.branchWait = nil
	if s.lane >= 0 {
		L.l[s.lane].remaining -= dropped
	}
	if s.isBranch {
		d.branchFinished(s)
	}
}

func (L *lanes) fill()         {}
func (L *lanes) resume()       {}
func (L *lanes) warmupEnded()  { L.warmInFlight-- }
func (L *lanes) holding() bool { return false }
func (L *lanes) closeWindow()  {}
func (L *lanes) unsent() bool  { return false }
func (L *lanes) finish() error { return L.traj.err }

// private: lanes may replay the corpus (wrap-around), so nothing they send
// is private.
func (L *lanes) private(*workload.Request) bool { return false }

// trajectory is one tree read from the workload: a session's requests and
// its branches', in source order (or one standalone request).
type trajectory struct {
	reqs  []workload.Request
	spans [][2]int32 // each request's prompt in segs
	segs  []workload.Segment
	sids  []uint64
	open  int // sessions whose Final turn has not been read
	done  bool
}

func (t *trajectory) prompt(i int) []workload.Segment {
	s := t.spans[i]
	return t.segs[s[0]:s[1]:s[1]]
}

func (t *trajectory) rootTurns() int {
	root := t.reqs[0].SessionID
	if root == 0 {
		return 1
	}
	n := 0
	for i := range t.reqs {
		if t.reqs[i].SessionID == root {
			n++
		}
	}
	return n
}

// trajReader cuts a workload into trajectories, in the order of their first
// requests. A trajectory is complete when every session in it has read its
// Final turn; a source that never marks one (mooncake_trace with
// session_id) is read to its end first. With wrap it starts the workload
// over when it ends.
type trajReader struct {
	src    workload.Source
	reopen func() (workload.Source, error)
	wrap   bool
	pass   int64 // requests read since the source was (re)opened
	err    error
	ended  bool

	q    []*trajectory
	head int
	open map[uint64]*trajectory // session → its incomplete trajectory
	free []*trajectory
	w    workload.Request
}

// next returns the next complete trajectory, or nil when the workload is
// exhausted (or failed: see err).
func (tr *trajReader) next() *trajectory {
	for {
		if tr.head < len(tr.q) && tr.q[tr.head].done {
			t := tr.q[tr.head]
			tr.q[tr.head] = nil
			tr.head++
			if tr.head == len(tr.q) {
				tr.q, tr.head = tr.q[:0], 0
			}
			return t
		}
		if tr.ended {
			if tr.head < len(tr.q) {
				tr.flush()
				continue
			}
			return nil
		}
		if !tr.src.Next(&tr.w) {
			tr.flush()
			if tr.err = workload.Err(tr.src); tr.err != nil {
				tr.ended = true
				continue
			}
			if !tr.wrap || tr.pass == 0 {
				tr.ended = true
				continue
			}
			src, err := tr.reopen()
			if err != nil {
				tr.err, tr.ended = err, true
				continue
			}
			tr.src, tr.pass = src, 0
			continue
		}
		tr.pass++
		tr.add(&tr.w)
	}
}

// flush completes every trajectory still open: their sessions get no more
// turns.
func (tr *trajReader) flush() {
	for _, t := range tr.q[tr.head:] {
		t.done = true
	}
	clear(tr.open)
}

func (tr *trajReader) newTraj() *trajectory {
	var t *trajectory
	if n := len(tr.free); n > 0 {
		t = tr.free[n-1]
		tr.free = tr.free[:n-1]
	} else {
		t = &trajectory{}
	}
	tr.q = append(tr.q, t)
	return t
}

// recycle takes back a trajectory once it has been fed.
func (tr *trajReader) recycle(t *trajectory) {
	clear(t.reqs)
	t.reqs, t.spans, t.segs, t.sids = t.reqs[:0], t.spans[:0], t.segs[:0], t.sids[:0]
	t.open, t.done = 0, false
	tr.free = append(tr.free, t)
}

func (tr *trajReader) add(w *workload.Request) {
	var t *trajectory
	switch {
	case w.SessionID == 0:
		t = tr.newTraj()
	case w.Turn == 0 && w.ParentSession != 0:
		if t = tr.open[w.ParentSession]; t == nil {
			t = tr.newTraj() // a branch whose parent was never read: its own tree
		}
		tr.open[w.SessionID] = t
		t.sids = append(t.sids, w.SessionID)
		t.open++
	default:
		if t = tr.open[w.SessionID]; t == nil {
			t = tr.newTraj() // a session start (or a turn whose start was not read)
			tr.open[w.SessionID] = t
			t.sids = append(t.sids, w.SessionID)
			t.open++
		}
	}
	a := int32(len(t.segs))
	t.segs = append(t.segs, w.Prompt...)
	t.spans = append(t.spans, [2]int32{a, int32(len(t.segs))})
	t.reqs = append(t.reqs, *w)
	t.reqs[len(t.reqs)-1].Prompt = nil
	if w.SessionID == 0 {
		t.done = true
		return
	}
	if w.Final {
		t.open--
	}
	if t.open == 0 {
		t.done = true
		for _, id := range t.sids {
			delete(tr.open, id)
		}
	}
}
