package client

import (
	"time"

	"blis/engine"
	"blis/sim"
	"blis/workload"
)

// Multi-turn sessions (workload.Request's session contract): a follow-up
// turn is released its Delay (capped by Config.TraceIdleGapCap) after its
// predecessor — and every sub-agent branch it joins — has finished; in
// PerRequest mode never before its own Arrival, and then it waits for a
// concurrency slot like any request; in Lanes mode it is sent at once on its
// lane. Its prompt is the predecessor's whole context (prompt and output, by
// identity, so the prefix cache sees it) followed by its own new tokens.
// This mirrors aiperf's multi-turn replay (timing/ and dataset/loader/,
// delays after the previous response).

// session is the client's state of one session.
type session struct {
	doneTurn int           // highest finished turn (−1: none yet)
	doneAt   time.Duration // when it finished
	ctx      []workload.Segment
	ctxLen   int
	parked   map[int]*workload.Request // follow-ups read but not released, by turn
	// branch bookkeeping by the parent turn they were spawned after.
	branchDone map[int]int
	branchAt   map[int]time.Duration
	branchWait map[int][]*workload.Request // branch first turns waiting for that parent turn
	// where this session reports its Final turn when it is a branch.
	parent     uint64
	parentTurn int
	isBranch   bool
	lane       int32  // Lanes: the lane playing its trajectory
	marker     uint64 // its trajectory's cache-bust marker (0: none)
	stopped    bool   // Lanes: a turn was refused; its later turns are not sent
}

func isFollowUp(r *workload.Request) bool {
	return r.SessionID != 0 && (r.Turn > 0 || r.ParentSession != 0)
}

func (d *Client) sess(id uint64) *session {
	if d.sessions == nil {
		d.sessions = map[uint64]*session{}
	}
	s := d.sessions[id]
	if s == nil {
		s = &session{doneTurn: -1, lane: -1}
		d.sessions[id] = s
	}
	return s
}

func cloneReq(w *workload.Request) *workload.Request {
	c := *w
	c.Prompt = append([]workload.Segment(nil), w.Prompt...)
	return &c
}

// park keeps a follow-up until its predecessor finishes, releasing it at
// once if that already happened.
func (d *Client) park(w *workload.Request) {
	c := cloneReq(w)
	d.res.Sessions.FollowUps++
	if c.ParentSession != 0 && c.Turn == 0 {
		b := d.sess(c.SessionID)
		b.isBranch, b.parent, b.parentTurn = true, c.ParentSession, c.ParentTurn
		p := d.sess(c.ParentSession)
		if p.doneTurn >= c.ParentTurn {
			d.m.followUpAt(c, p.doneAt)
			return
		}
		if p.branchWait == nil {
			p.branchWait = map[int][]*workload.Request{}
		}
		p.branchWait[c.ParentTurn] = append(p.branchWait[c.ParentTurn], c)
		return
	}
	s := d.sess(c.SessionID)
	if s.parked == nil {
		s.parked = map[int]*workload.Request{}
	}
	s.parked[c.Turn] = c
	d.tryRelease(c.SessionID, s, c.Turn)
}

// tryRelease releases turn of session s when its predecessor and the
// branches it joins have all finished.
func (d *Client) tryRelease(id uint64, s *session, turn int) {
	c := s.parked[turn]
	if c == nil || s.doneTurn != turn-1 || s.branchDone[turn-1] < c.WaitBranches {
		return
	}
	delete(s.parked, turn)
	at := s.doneAt
	if b, ok := s.branchAt[turn-1]; ok && b > at {
		at = b
	}
	d.m.followUpAt(c, at)
}

// pushFollow schedules follow-up c's release at `at` and returns its slot
// in follows.
func (d *Client) pushFollow(c *workload.Request, at time.Duration) int32 {
	var i int32
	if n := len(d.followFree); n > 0 {
		i = d.followFree[n-1]
		d.followFree = d.followFree[:n-1]
	} else {
		i = int32(len(d.follows))
		d.follows = append(d.follows, followSlot{})
	}
	f := &d.follows[i]
	f.c, f.at, f.lane = c, at, -1
	d.srv.At(sim.Event{At: at, Kind: evFollowUp, Target: int(f.gen), Arg: int64(i)})
	return i
}

// followStale reports whether a follow-up event was superseded (its
// release moved earlier).
func (d *Client) followStale(ev sim.Event) bool {
	return d.follows[ev.Arg].gen != uint32(ev.Target)
}

// releaseFollowUp: a follow-up's release time came; the mode sends it
// (queued for a slot, or on its lane).
func (d *Client) releaseFollowUp(ev sim.Event) {
	if d.followStale(ev) {
		return
	}
	i := int32(ev.Arg)
	f := &d.follows[i]
	c, lane := f.c, f.lane
	f.c = nil
	f.gen++
	d.followFree = append(d.followFree, i)
	d.m.followUp(c, i, lane)
}

// buildFollowUp materialises a follow-up: the predecessor's context, then
// its own prompt; a branch inherits its tree's cache-bust marker, and a
// fresh branch carries it in its first message.
func (d *Client) buildFollowUp(c *workload.Request, kind uint8, salt uint64) *engine.Request {
	r := d.newRequest(c, kind, salt)
	if c.PrevContext {
		pred := d.sess(c.SessionID)
		if c.Turn == 0 {
			pred = d.sess(c.ParentSession)
		}
		r.Prompt = append(append(r.Prompt[:0], pred.ctx...), c.Prompt...)
		r.PromptLen = pred.ctxLen + c.InputLen
	}
	if c.Turn == 0 && c.ParentSession != 0 {
		m := d.sess(c.ParentSession).marker
		d.sess(c.SessionID).marker = m
		if m != 0 && !c.PrevContext {
			d.insertMarker(r, m, c.SystemSegments)
		}
	}
	f := d.fl(r)
	f.session, f.turn, f.final = c.SessionID, c.Turn, c.Final
	return r
}

// sessionDone records a finished (or rejected, or cancelled) turn: its
// context becomes the next turn's prefix, and waiting follow-ups and joins
// are released. pad is recorded output the turn did not generate (a
// one-token warm-up): the context still holds that many tokens, as the
// replayed conversation does, but the engine never computed them.
func (d *Client) sessionDone(r *engine.Request, f *flight) {
	if f.session == 0 {
		return
	}
	pad := int(f.pad)
	s := d.sess(f.session)
	if r.Status == engine.StatusRejected && d.m.refused(s) {
		return
	}
	s.doneTurn, s.doneAt = f.turn, d.now()
	s.ctx = append(s.ctx[:0], r.Prompt...)
	s.ctxLen = r.PromptLen
	if r.NumOutput > 0 {
		s.ctx = append(s.ctx, workload.Segment{ID: r.OutputID, Len: r.NumOutput})
		s.ctxLen += r.NumOutput
	}
	if pad > 0 {
		s.ctx = append(s.ctx, workload.Segment{ID: splitmix(r.OutputID ^ tagPad), Len: pad})
		s.ctxLen += pad
	}
	for _, b := range s.branchWait[f.turn] {
		d.m.followUpAt(b, d.now())
	}
	delete(s.branchWait, f.turn)
	if f.final && s.isBranch {
		d.branchFinished(s)
	}
	d.tryRelease(f.session, s, f.turn+1)
	if f.final && len(s.parked) == 0 && len(s.branchWait) == 0 {
		delete(d.sessions, f.session)
	}
}

// branchFinished tells a branch's parent that it is done, releasing the
// joining turn when it was the last one.
func (d *Client) branchFinished(s *session) {
	p := d.sess(s.parent)
	if p.branchDone == nil {
		p.branchDone, p.branchAt = map[int]int{}, map[int]time.Duration{}
	}
	p.branchDone[s.parentTurn]++
	p.branchAt[s.parentTurn] = max(p.branchAt[s.parentTurn], d.now())
	d.tryRelease(s.parent, p, s.parentTurn+1)
}

// dropTree forgets a branch that never started and everything under it,
// returning how many of its requests will not be sent besides its first.
func (d *Client) dropTree(id uint64) int {
	b := d.sessions[id]
	if b == nil {
		return 0
	}
	n := len(b.parked)
	for _, list := range b.branchWait {
		for _, c := range list {
			n += 1 + d.dropTree(c.SessionID)
		}
	}
	delete(d.sessions, id)
	return n
}
