package client

import (
	"testing"
	"time"

	"blis/engine"
	"blis/metrics"
	"blis/sim"
	"blis/workload"
)

const ms = time.Millisecond

// fakeServer answers every request after a fixed latency with its whole
// output, refuses prompts longer than maxPrompt on arrival, and drives the
// client as the cluster loop does, with no engine at all.
type fakeServer struct {
	t         *testing.T
	c         *Client
	q         sim.Queue
	now       time.Duration
	latency   time.Duration
	maxPrompt int
	reqs      []*engine.Request // by Handle − 1
	gens      []int64           // by Handle − 1: moves on when a request is cancelled
	free      []int
	sends     []time.Duration // send times, in send order
	cancels   int
	inFlight  int
	peak      int
}

func (s *fakeServer) Now() time.Duration { return s.now }

func (s *fakeServer) NewRequest() *engine.Request {
	if n := len(s.free); n > 0 {
		i := s.free[n-1]
		s.free = s.free[:n-1]
		s.reqs[i].Reset()
		s.reqs[i].Handle = uint64(i) + 1
		return s.reqs[i]
	}
	r := &engine.Request{Handle: uint64(len(s.reqs)) + 1}
	s.reqs = append(s.reqs, r)
	s.gens = append(s.gens, 0)
	return r
}

func (s *fakeServer) release(r *engine.Request) { s.free = append(s.free, int(r.Handle-1)) }

func (s *fakeServer) Send(r *engine.Request, at time.Duration, _ uint64) {
	s.sends = append(s.sends, at)
	r.Arrived = at
	if r.PromptLen > s.maxPrompt {
		r.Status, r.RejectReason = engine.StatusRejected, "max_model_len: too long for the fake server"
		s.c.Ended(r)
		s.release(r)
		return
	}
	s.inFlight++
	s.peak = max(s.peak, s.inFlight)
	i := int(r.Handle - 1)
	s.q.Push(sim.Event{At: s.now + s.latency, Kind: -1, Target: i, Arg: s.gens[i]})
}

func (s *fakeServer) Cancel(r *engine.Request) {
	s.cancels++
	s.inFlight--
	s.gens[r.Handle-1]++ // its response event goes stale
	s.release(r)
}

func (s *fakeServer) Drop(r *engine.Request) { s.release(r) }
func (s *fakeServer) At(ev sim.Event)        { s.q.Push(ev) }
func (s *fakeServer) Skip() time.Duration    { return 0 }
func (s *fakeServer) Idle() bool             { return false }
func (s *fakeServer) Deferrable() bool       { return false }
func (s *fakeServer) Backlogged() bool       { return false }

// run drives the client to the end, as cluster's loop does.
func (s *fakeServer) run() Result {
	if err := s.c.Start(s); err != nil {
		s.t.Fatal(err)
	}
	for !s.c.Stopped() {
		s.c.Settle()
		t := s.c.Wake()
		if ev, ok := s.q.Peek(); ok && ev.At < t {
			t = ev.At
		}
		if t == never {
			break
		}
		s.now = t
		for !s.c.Stopped() {
			if ev, ok := s.q.Peek(); ok && ev.At == s.now {
				s.q.Pop()
				if ev.Kind >= 0 {
					s.c.Timer(ev)
					continue
				}
				r := s.reqs[ev.Target]
				if s.gens[ev.Target] != ev.Arg {
					continue // cancelled
				}
				s.inFlight--
				r.Status, r.FirstScheduled, r.FirstToken, r.Finished = engine.StatusFinished, r.Arrived, s.now, s.now
				r.NumOutput = r.MaxTokens
				s.c.Tokens([]engine.Sample{{Req: r, First: true, Done: r.MaxTokens == 1}})
				s.c.Ended(r)
				s.release(r)
				s.c.Resume()
				continue
			}
			if s.c.Wake() <= s.now {
				s.c.Fire()
				continue
			}
			break
		}
	}
	res, stalled, _, err := s.c.Finish(false)
	if err != nil || stalled {
		s.t.Fatalf("finish: stalled %v, %v", stalled, err)
	}
	return res
}

type list struct {
	reqs []workload.Request
	i    int
}

func (l *list) Next(r *workload.Request) bool {
	if l.i >= len(l.reqs) {
		return false
	}
	*r = l.reqs[l.i]
	l.i++
	return true
}

func prompts(lens ...int) *list {
	l := &list{}
	for i, n := range lens {
		l.reqs = append(l.reqs, workload.Request{Index: int64(i), InputLen: n, OutputLen: 4,
			Prompt: []workload.Segment{{ID: uint64(i + 1), Len: n}}})
	}
	return l
}

// The client alone, against a server that answers in a fixed time: what
// it sends when, what it counts, and what it cancels.
func TestClientAgainstAFakeServer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		src       *list
		latency   time.Duration
		sends     []time.Duration
		peak      int
		completed int64
		rejected  int64
		timedOut  int64
		cancels   int
	}{
		{name: "cap of two serialises pairs", cfg: Config{MaxConcurrency: 2}, src: prompts(10, 10, 10, 10, 10),
			latency: 10 * ms, sends: []time.Duration{0, 0, 10 * ms, 10 * ms, 20 * ms}, peak: 2, completed: 5},
		{name: "no cap sends everything at once", cfg: Config{}, src: prompts(10, 10, 10),
			latency: 10 * ms, sends: []time.Duration{0, 0, 0}, peak: 3, completed: 3},
		{name: "a refusal frees its slot at once", cfg: Config{MaxConcurrency: 1}, src: prompts(10, 999, 10),
			latency: 10 * ms, sends: []time.Duration{0, 10 * ms, 10 * ms}, peak: 1, completed: 2, rejected: 1},
		// Warm-ups count as sent when the run starts (vllm bench gathers
		// them at once), though the cap holds the second one back.
		{name: "warm-ups go first and are not counted", cfg: Config{MaxConcurrency: 1, NumWarmups: 2}, src: prompts(10, 10),
			latency: 10 * ms, sends: []time.Duration{0, 0, 20 * ms, 30 * ms}, peak: 1, completed: 2},
		{name: "timeouts cancel", cfg: Config{MaxConcurrency: 1, RequestTimeout: 15 * ms}, src: prompts(10, 10),
			latency: 40 * ms, sends: []time.Duration{0, 15 * ms}, peak: 1, timedOut: 2, cancels: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := metrics.NewRecorder(metrics.RecorderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, err := New(tc.cfg, tc.src, rec)
			if err != nil {
				t.Fatal(err)
			}
			s := &fakeServer{t: t, c: c, latency: tc.latency, maxPrompt: 100}
			res := s.run()
			if len(s.sends) != len(tc.sends) {
				t.Fatalf("sent at %v, want %v", s.sends, tc.sends)
			}
			for i := range s.sends {
				if s.sends[i] != tc.sends[i] {
					t.Fatalf("sent at %v, want %v", s.sends, tc.sends)
				}
			}
			if s.peak != tc.peak || res.Completed != tc.completed || res.Rejected != tc.rejected ||
				res.TimedOut != tc.timedOut || s.cancels != tc.cancels {
				t.Fatalf("peak %d completed %d rejected %d timed out %d cancels %d; want %d %d %d %d %d",
					s.peak, res.Completed, res.Rejected, res.TimedOut, s.cancels,
					tc.peak, tc.completed, tc.rejected, tc.timedOut, tc.cancels)
			}
		})
	}
}
