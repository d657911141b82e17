package cluster

import (
	"fmt"
	"math"
	"time"

	"blis/engine"
	"blis/router"
)

// Test routers: small policies that exercise every call of router.Router,
// and a contract checker the loop must satisfy. The real policies live in
// package router.

// roundRobin sends each request to the next endpoint at once.
type roundRobin struct {
	n, next int
	out     []router.Assignment
}

func (r *roundRobin) Start(eps []router.Endpoint, _ int64) error {
	r.n = len(eps)
	return nil
}

func (r *roundRobin) Submit(_ time.Duration, q *router.Request) {
	r.out = append(r.out, router.Assignment{Req: q, Endpoint: r.next, Prefill: -1})
	r.next = (r.next + 1) % r.n
}

func (r *roundRobin) Ready(time.Duration) []router.Assignment {
	out := r.out
	r.out = r.out[:0]
	return out
}

func (*roundRobin) Finished(time.Duration, *router.Request, int) {}
func (*roundRobin) ScrapeInterval() time.Duration                { return 0 }
func (*roundRobin) Scrape(time.Duration, int, router.Metrics)    {}
func (*roundRobin) KVEvents() bool                               { return false }
func (*roundRobin) BlockStored(time.Duration, int, uint64)       {}
func (*roundRobin) BlockRemoved(time.Duration, int, uint64)      {}
func (*roundRobin) Wake() time.Duration                          { return math.MaxInt64 }

// prefixSticky indexes the engines' KV events and sends a request to the
// endpoint caching the longest prefix of its prompt, ties to the one with
// the fewest requests in flight, then the lowest index. It reads scraped
// metrics too (only to check them).
type prefixSticky struct {
	eps      []router.Endpoint
	index    map[uint64]uint64 // block hash → bitmask of endpoints caching it (≤ 64 endpoints)
	ranks    map[[2]uint64]int // (hash, endpoint) → ranks of the endpoint caching it
	inFlight []int
	out      []router.Assignment
	hashes   []uint64
	scrapes  int
	lastSeen time.Duration
	bad      error
}

func (p *prefixSticky) Start(eps []router.Endpoint, _ int64) error {
	if len(eps) > 64 {
		return fmt.Errorf("prefixSticky: %d endpoints, at most 64", len(eps))
	}
	p.eps, p.index, p.ranks, p.inFlight = eps, map[uint64]uint64{}, map[[2]uint64]int{}, make([]int, len(eps))
	return nil
}

func (p *prefixSticky) Submit(_ time.Duration, q *router.Request) {
	p.hashes = engine.PromptBlockHashes(p.hashes[:0], q.Prompt, p.eps[0].BlockSize)
	best, bestLen := -1, -1
	for ep := range p.eps {
		n := 0
		for _, h := range p.hashes {
			if p.index[h]&(1<<ep) == 0 {
				break
			}
			n++
		}
		if n > bestLen || (n == bestLen && p.inFlight[ep] < p.inFlight[best]) {
			best, bestLen = ep, n
		}
	}
	p.inFlight[best]++
	p.out = append(p.out, router.Assignment{Req: q, Endpoint: best, Prefill: -1})
}

func (p *prefixSticky) Ready(time.Duration) []router.Assignment {
	out := p.out
	p.out = p.out[:0]
	return out
}

func (p *prefixSticky) Finished(_ time.Duration, _ *router.Request, ep int) { p.inFlight[ep]-- }
func (p *prefixSticky) ScrapeInterval() time.Duration                       { return 25 * time.Millisecond }

func (p *prefixSticky) Scrape(now time.Duration, ep int, m router.Metrics) {
	p.scrapes++
	p.lastSeen = now
	if m.Waiting < 0 || m.Running < 0 || m.KVUsage < 0 || m.KVUsage > 1 {
		p.bad = fmt.Errorf("scrape of endpoint %d: %+v", ep, m)
	}
}

func (*prefixSticky) KVEvents() bool { return true }

// Each DP rank of an endpoint has its own cache and reports its own
// events: a hash is cached by an endpoint while some rank holds it.
func (p *prefixSticky) BlockStored(_ time.Duration, ep int, h uint64) {
	p.ranks[[2]uint64{h, uint64(ep)}]++
	p.index[h] |= 1 << ep
}

func (p *prefixSticky) BlockRemoved(_ time.Duration, ep int, h uint64) {
	k := [2]uint64{h, uint64(ep)}
	if p.ranks[k] == 0 {
		if p.bad == nil {
			p.bad = fmt.Errorf("endpoint %d removed block %x it never stored", ep, h)
		}
		return
	}
	if p.ranks[k]--; p.ranks[k] > 0 {
		return
	}
	delete(p.ranks, k)
	if p.index[h] &^= 1 << ep; p.index[h] == 0 {
		delete(p.index, h)
	}
}

func (*prefixSticky) Wake() time.Duration { return math.MaxInt64 }

// gated holds requests at the gateway while every endpoint has cap
// requests in flight (flow control), rejects those held longer than wait
// (the wake-up makes that happen with nothing else going on), and sheds
// every shedEvery-th request at once.
type gated struct {
	cap       int
	wait      time.Duration
	shedEvery int64
	n         int
	inFlight  []int
	held      []heldReq
	out       []router.Assignment
}

type heldReq struct {
	q  *router.Request
	at time.Duration
}

func (g *gated) Start(eps []router.Endpoint, _ int64) error {
	g.n, g.inFlight = len(eps), make([]int, len(eps))
	return nil
}

func (g *gated) Submit(now time.Duration, q *router.Request) {
	if g.shedEvery > 0 && q.ID%g.shedEvery == g.shedEvery-1 {
		g.out = append(g.out, router.Assignment{Req: q, Endpoint: -1, Prefill: -1, Rejected: true,
			Reason: "shed: every request " + fmt.Sprint(g.shedEvery) + "th is dropped by the test admitter"})
		return
	}
	g.held = append(g.held, heldReq{q, now})
	g.dispatch(now)
}

// dispatch sends held requests, oldest first, while an endpoint has room,
// and rejects those that waited too long.
func (g *gated) dispatch(now time.Duration) {
	kept := g.held[:0]
	for _, h := range g.held {
		best := -1
		for ep := 0; ep < g.n; ep++ {
			if g.inFlight[ep] < g.cap && (best < 0 || g.inFlight[ep] < g.inFlight[best]) {
				best = ep
			}
		}
		switch {
		case best >= 0:
			g.inFlight[best]++
			g.out = append(g.out, router.Assignment{Req: h.q, Endpoint: best, Prefill: -1})
		case now-h.at >= g.wait:
			g.out = append(g.out, router.Assignment{Req: h.q, Endpoint: -1, Prefill: -1, Rejected: true,
				Reason: "flow_control_timeout: held at the gateway for " + g.wait.String()})
		default:
			kept = append(kept, h)
		}
	}
	g.held = kept
}

func (g *gated) Ready(now time.Duration) []router.Assignment {
	g.dispatch(now)
	out := g.out
	g.out = g.out[:0]
	return out
}

func (g *gated) Finished(_ time.Duration, _ *router.Request, ep int) { g.inFlight[ep]-- }
func (*gated) ScrapeInterval() time.Duration                         { return 0 }
func (*gated) Scrape(time.Duration, int, router.Metrics)             {}
func (*gated) KVEvents() bool                                        { return false }
func (*gated) BlockStored(time.Duration, int, uint64)                {}
func (*gated) BlockRemoved(time.Duration, int, uint64)               {}

func (g *gated) Wake() time.Duration {
	if len(g.held) == 0 {
		return math.MaxInt64
	}
	return g.held[0].at + g.wait
}

// checked wraps a router and checks the loop's side of the contract: every
// submitted request gets exactly one decision, every one sent to an
// endpoint exactly one Finished naming that endpoint, the request object
// is unchanged until its decision, and calls come in time order.
type checked struct {
	router.Router
	pending  map[*router.Request]router.Request
	assigned map[*router.Request]int
	last     time.Duration
	finished int
	rejected int
	bad      error
}

func check(r router.Router) *checked {
	return &checked{Router: r, pending: map[*router.Request]router.Request{}, assigned: map[*router.Request]int{}}
}

func (c *checked) fail(format string, args ...any) {
	if c.bad == nil {
		c.bad = fmt.Errorf(format, args...)
	}
}

func (c *checked) at(now time.Duration) {
	if now < c.last {
		c.fail("call at %v after one at %v", now, c.last)
	}
	c.last = now
}

func (c *checked) Submit(now time.Duration, q *router.Request) {
	c.at(now)
	if _, ok := c.pending[q]; ok {
		c.fail("request %d submitted twice", q.ID)
	}
	if _, ok := c.assigned[q]; ok {
		c.fail("request %d submitted while still assigned", q.ID)
	}
	c.pending[q] = *q
	c.Router.Submit(now, q)
}

func (c *checked) Ready(now time.Duration) []router.Assignment {
	c.at(now)
	as := c.Router.Ready(now)
	for _, a := range as {
		was, ok := c.pending[a.Req]
		if !ok {
			c.fail("decision on request %d, not pending", a.Req.ID)
			continue
		}
		if was.ID != a.Req.ID || was.Handle != a.Req.Handle || was.PromptLen != a.Req.PromptLen || len(was.Prompt) != len(a.Req.Prompt) {
			c.fail("request %d changed between Submit and its decision", was.ID)
		}
		delete(c.pending, a.Req)
		if a.Rejected {
			c.rejected++
		} else {
			c.assigned[a.Req] = a.Endpoint
		}
	}
	return as
}

func (c *checked) Finished(now time.Duration, q *router.Request, ep int) {
	c.at(now)
	got, ok := c.assigned[q]
	if !ok || got != ep {
		c.fail("Finished(request %d, endpoint %d): assigned %v to %d", q.ID, ep, ok, got)
	}
	delete(c.assigned, q)
	c.finished++
	c.Router.Finished(now, q, ep)
}

func (c *checked) Scrape(now time.Duration, ep int, m router.Metrics) {
	c.at(now)
	c.Router.Scrape(now, ep, m)
}

func (c *checked) BlockStored(now time.Duration, ep int, h uint64) {
	c.at(now)
	c.Router.BlockStored(now, ep, h)
}

func (c *checked) BlockRemoved(now time.Duration, ep int, h uint64) {
	c.at(now)
	c.Router.BlockRemoved(now, ep, h)
}

// drained reports what the run left behind: nothing, for a run that ended
// by itself.
func (c *checked) drained() error {
	if c.bad != nil {
		return c.bad
	}
	if len(c.pending) != 0 || len(c.assigned) != 0 {
		return fmt.Errorf("run ended with %d requests pending at the router and %d never finished", len(c.pending), len(c.assigned))
	}
	return nil
}
