package cluster

import (
	"time"

	"blis/engine"
	"blis/sim"
	"blis/workload"
)

// Multi-turn sessions (workload.Request's session contract): a follow-up
// turn is released Delay after its predecessor — and every sub-agent branch
// it joins — has finished, never before its own Arrival, and then waits for
// a concurrency slot like any request. Its prompt is the predecessor's whole
// context (prompt and output, by identity, so the prefix cache sees it)
// followed by its own new tokens. This mirrors aiperf's multi-turn replay
// (timing/ and dataset/loader/, delays after the previous response).

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
}

func isFollowUp(r *workload.Request) bool {
	return r.SessionID != 0 && (r.Turn > 0 || r.ParentSession != 0)
}

func (d *driver) sess(id uint64) *session {
	if d.sessions == nil {
		d.sessions = map[uint64]*session{}
	}
	s := d.sessions[id]
	if s == nil {
		s = &session{doneTurn: -1}
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
func (d *driver) park(w *workload.Request) {
	c := cloneReq(w)
	d.res.Sessions.FollowUps++
	if c.ParentSession != 0 && c.Turn == 0 {
		b := d.sess(c.SessionID)
		b.isBranch, b.parent, b.parentTurn = true, c.ParentSession, c.ParentTurn
		p := d.sess(c.ParentSession)
		if p.doneTurn >= c.ParentTurn {
			d.releaseFollowAt(c, p.doneAt+c.Delay)
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
func (d *driver) tryRelease(id uint64, s *session, turn int) {
	c := s.parked[turn]
	if c == nil || s.doneTurn != turn-1 || s.branchDone[turn-1] < c.WaitBranches {
		return
	}
	delete(s.parked, turn)
	at := s.doneAt
	if b, ok := s.branchAt[turn-1]; ok && b > at {
		at = b
	}
	d.releaseFollowAt(c, at+c.Delay)
}

// releaseFollowAt schedules a follow-up's release at max(its Arrival, at).
func (d *driver) releaseFollowAt(c *workload.Request, at time.Duration) {
	if arr := d.t0 + c.Arrival; arr > at {
		at = arr
	}
	if at < d.now {
		at = d.now
	}
	var i int64
	if n := len(d.followFree); n > 0 {
		i = d.followFree[n-1]
		d.followFree = d.followFree[:n-1]
		d.followQ[i] = c
	} else {
		i = int64(len(d.followQ))
		d.followQ = append(d.followQ, c)
	}
	d.q.Push(sim.Event{At: at, Kind: evFollowUp, Arg: i})
}

// releaseFollowUp turns a released follow-up into an engine request, its
// prompt prefixed with the predecessor's context, queued for a slot.
func (d *driver) releaseFollowUp(i int64) {
	c := d.followQ[i]
	d.followQ[i] = nil
	d.followFree = append(d.followFree, i)
	r := d.newRequest(c, tagTimed, uint64(c.Index)<<1)
	if c.PrevContext {
		pred := d.sess(c.SessionID)
		if c.Turn == 0 {
			pred = d.sess(c.ParentSession)
		}
		r.Prompt = append(append(r.Prompt[:0], pred.ctx...), c.Prompt...)
		r.PromptLen = pred.ctxLen + c.InputLen
	}
	r.SessionID, r.Turn, r.Final = c.SessionID, c.Turn, c.Final
	r.Released = d.now
	d.res.Sent++
	d.blocked = append(d.blocked, r)
	d.fill()
}

// sessionDone records a finished (or rejected) turn: its context becomes
// the next turn's prefix, and waiting follow-ups and joins are released.
func (d *driver) sessionDone(r *engine.Request) {
	if r.SessionID == 0 {
		return
	}
	s := d.sess(r.SessionID)
	s.doneTurn, s.doneAt = r.Turn, d.now
	s.ctx = append(s.ctx[:0], r.Prompt...)
	s.ctxLen = r.PromptLen
	if r.NumOutput > 0 {
		s.ctx = append(s.ctx, workload.Segment{ID: r.OutputID, Len: r.NumOutput})
		s.ctxLen += r.NumOutput
	}
	for _, b := range s.branchWait[r.Turn] {
		d.releaseFollowAt(b, d.now+b.Delay)
	}
	delete(s.branchWait, r.Turn)
	if r.Final && s.isBranch {
		p := d.sess(s.parent)
		if p.branchDone == nil {
			p.branchDone, p.branchAt = map[int]int{}, map[int]time.Duration{}
		}
		p.branchDone[s.parentTurn]++
		p.branchAt[s.parentTurn] = max(p.branchAt[s.parentTurn], d.now)
		d.tryRelease(s.parent, p, s.parentTurn+1)
	}
	d.tryRelease(r.SessionID, s, r.Turn+1)
	if r.Final && len(s.parked) == 0 && len(s.branchWait) == 0 {
		delete(d.sessions, r.SessionID)
	}
}
