package router

import (
	"math"
	"math/rand/v2"
	"time"
)

// The EPP mirrors llm-d's endpoint picker (llm-d-inference-scheduler @
// 520af478, pkg/epp: requestcontrol.Director, scheduling.Scheduler,
// flowcontrol.FlowController): a request passes admission (flow control or
// the legacy saturation check), the admitter plugins, the data producers
// (PrepareData), the profile handler that runs one or more scheduling
// profiles (filters → weighted scorers → picker), and the PreRequest hooks;
// when its response ends the ResponseComplete hooks run.

// filterPlugin narrows the candidate endpoints. It must not modify in; it
// returns a subset, allocated from the cycle's arena or in itself.
type filterPlugin interface {
	filter(c *cycle, in []int) []int
}

// scorerPlugin writes a score in [0,1] for each candidate into out.
type scorerPlugin interface {
	score(c *cycle, eps []int, out []float64)
}

// pickerPlugin returns the index into eps of the chosen endpoint.
type pickerPlugin interface {
	pick(c *cycle, eps []int, scores []float64) int
}

// producerPlugin is a data producer (PrepareData): it runs once per request
// before scheduling, over every candidate endpoint.
type producerPlugin interface {
	produce(c *cycle)
}

// preRequestPlugin runs after the scheduling decision (in-flight counting,
// index updates, LRU bookkeeping).
type preRequestPlugin interface {
	preRequest(c *cycle, decode, prefill int)
}

// completePlugin runs when a routed request's response has ended.
type completePlugin interface {
	complete(e *EPP, now time.Duration, rec *routed)
}

// admitterPlugin may reject a request before scheduling.
type admitterPlugin interface {
	admit(c *cycle) (reason string, ok bool)
}

// saturationPlugin is a saturation detector: ≥ 1 means the pool is full.
type saturationPlugin interface {
	saturation(c *cycle) float64
}

// kvEventPlugin consumes the engines' KV events (precise prefix index).
type kvEventPlugin interface {
	blockEvent(now time.Duration, ep int, hash uint64, stored bool)
}

// profileHandler decides which profiles run and combines their results.
type profileHandler interface {
	schedule(c *cycle) (decode, prefill int)
}

// decider is a P/D (or encode) disaggregation decider.
type decider interface {
	disaggregate(c *cycle, decode int) bool
}

type scoredRef struct {
	s      scorerPlugin
	weight float64
}

// profile is one scheduling profile.
type profile struct {
	name    string
	filters []filterPlugin
	scorers []scoredRef
	picker  pickerPlugin
}

// epState is what the router knows of one endpoint.
type epState struct {
	m         Metrics
	scrapedAt time.Duration
	scraped   bool
	reqs      int64 // in-flight requests counted by the router (PreRequest +, Finished −)
	tokens    int64 // in-flight token estimate (inflight-load-producer's estimator)
}

// routed is the router's record of a scheduled request until Finished.
type routed struct {
	req     *Request
	decode  int
	prefill int
	start   time.Duration
	feat    [latFeatures]float64 // predictor features at dispatch
	hasFeat bool
}

// cycle is the per-request scratch state (CycleState + endpoint attributes),
// reused across requests so a decision allocates nothing.
type cycle struct {
	e     *EPP
	now   time.Duration
	req   *Request
	all   []int
	arena []int
	used  int
	total []float64
	tmp   []float64
	// predicted latency per endpoint (predicted-latency-producer)
	predTTFT, predTPOT []float64
	havePred           bool
}

// alloc returns an n-int slice valid until the next request.
func (c *cycle) alloc(n int) []int {
	if c.used+n > len(c.arena) {
		c.arena = make([]int, 2*len(c.arena)+n)
		c.used = 0
	}
	s := c.arena[c.used : c.used : c.used+n]
	c.used += n
	return s
}

// EPP is a Router built from an EndpointPickerConfig.
type EPP struct {
	eps      []Endpoint
	st       []epState
	rng      *rand.Rand
	scrape   time.Duration
	handler  profileHandler
	order    []*profile
	prod     []producerPlugin
	pre      []preRequestPlugin
	done     []completePlugin
	admit    []admitterPlugin
	kv       []kvEventPlugin
	detector saturationPlugin
	flow     *flowControl
	recs     map[int64]*routed
	free     []*routed
	out      []Assignment
	handed   []Assignment // the slice Ready last returned (see handOver)
	c        cycle
	started  bool
	starters []interface{ start(e *EPP) }
}

// Start implements Router.
func (e *EPP) Start(eps []Endpoint, seed int64) error {
	e.eps = eps
	e.st = make([]epState, len(eps))
	e.rng = rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	e.recs = make(map[int64]*routed)
	e.c = cycle{e: e, all: make([]int, len(eps)), total: make([]float64, len(eps)), tmp: make([]float64, len(eps)),
		predTTFT: make([]float64, len(eps)), predTPOT: make([]float64, len(eps)), arena: make([]int, 8*len(eps)+64)}
	for i := range eps {
		e.c.all[i] = i
	}
	for _, s := range e.starters {
		s.start(e)
	}
	if e.flow != nil {
		e.flow.reset()
	}
	e.out = e.out[:0]
	e.started = true
	return nil
}

// ScrapeInterval implements Router.
func (e *EPP) ScrapeInterval() time.Duration { return e.scrape }

// SetScrapeInterval overrides the metrics refresh interval (GIE
// --refresh-metrics-interval, 50ms by default).
func (e *EPP) SetScrapeInterval(d time.Duration) { e.scrape = d }

// KVEvents implements Router.
func (e *EPP) KVEvents() bool { return len(e.kv) > 0 }

// Scrape implements Router.
func (e *EPP) Scrape(now time.Duration, ep int, m Metrics) {
	s := &e.st[ep]
	s.m, s.scrapedAt, s.scraped = m, now, true
	e.dispatch(now)
}

// BlockStored implements Router.
func (e *EPP) BlockStored(now time.Duration, ep int, hash uint64) {
	for _, k := range e.kv {
		k.blockEvent(now, ep, hash, true)
	}
}

// BlockRemoved implements Router.
func (e *EPP) BlockRemoved(now time.Duration, ep int, hash uint64) {
	for _, k := range e.kv {
		k.blockEvent(now, ep, hash, false)
	}
}

// Submit implements Router.
func (e *EPP) Submit(now time.Duration, r *Request) {
	if e.flow != nil {
		e.flow.enqueue(now, r)
		e.dispatch(now)
		return
	}
	// Legacy admission (requestcontrol.LegacyAdmissionController): a
	// sheddable request is dropped while the pool is saturated; others pass.
	if r.Priority < 0 {
		c := e.begin(now, r)
		if e.detector.saturation(c) >= 1.0 {
			e.reject(r, "system saturated, sheddable request dropped")
			return
		}
	}
	e.route(now, r)
}

// Ready implements Router.
func (e *EPP) Ready(now time.Duration) []Assignment {
	if e.flow != nil {
		e.flow.expire(now)
		e.dispatch(now)
	}
	return handOver(&e.out, &e.handed)
}

// handOver returns the decisions collected in *out and starts collecting in
// the buffer handed out before, so the slice returned stays unchanged until
// the next Ready: the loop acts on it while submitting and finishing
// requests, and the decisions those calls make go to the other buffer.
func handOver(out, handed *[]Assignment) []Assignment {
	got := *out
	*out, *handed = (*handed)[:0], got
	return got
}

// Wake implements Router.
func (e *EPP) Wake() time.Duration {
	if e.flow != nil {
		return e.flow.nextExpiry()
	}
	return math.MaxInt64
}

// Finished implements Router.
func (e *EPP) Finished(now time.Duration, r *Request, endpoint int) {
	rec := e.recs[r.ID]
	if rec == nil {
		return
	}
	delete(e.recs, r.ID)
	for _, d := range e.done {
		d.complete(e, now, rec)
	}
	rec.req = nil
	e.free = append(e.free, rec)
	e.dispatch(now)
}

func (e *EPP) reject(r *Request, reason string) {
	e.out = append(e.out, Assignment{Req: r, Endpoint: -1, Prefill: -1, Rejected: true, Reason: reason})
}

func (e *EPP) begin(now time.Duration, r *Request) *cycle {
	c := &e.c
	c.now, c.req, c.used, c.havePred = now, r, 0, false
	return c
}

// route runs admitters, producers, the profile handler and PreRequest.
func (e *EPP) route(now time.Duration, r *Request) {
	c := e.begin(now, r)
	if len(e.eps) == 0 {
		e.reject(r, "no endpoints")
		return
	}
	for _, a := range e.admit {
		if reason, ok := a.admit(c); !ok {
			e.reject(r, reason)
			return
		}
	}
	for _, p := range e.prod {
		p.produce(c)
	}
	dec, pre := e.handler.schedule(c)
	if dec < 0 {
		e.reject(r, "no endpoint passed the filters")
		return
	}
	var rec *routed
	if n := len(e.free); n > 0 {
		rec, e.free = e.free[n-1], e.free[:n-1]
	} else {
		rec = new(routed)
	}
	*rec = routed{req: r, decode: dec, prefill: pre, start: now}
	e.recs[r.ID] = rec
	for _, p := range e.pre {
		p.preRequest(c, dec, pre)
	}
	e.out = append(e.out, Assignment{Req: r, Endpoint: dec, Prefill: pre})
}

// runProfile runs one scheduling profile over every endpoint and returns
// the picked endpoint, or -1 when the filters left none.
func (c *cycle) runProfile(p *profile) int {
	cands := c.all
	for _, f := range p.filters {
		cands = f.filter(c, cands)
		if len(cands) == 0 {
			return -1
		}
	}
	total := c.total[:len(cands)]
	for i := range total {
		total[i] = 0
	}
	tmp := c.tmp[:len(cands)]
	for _, s := range p.scorers {
		s.s.score(c, cands, tmp)
		for i, v := range tmp {
			total[i] += clamp01(v) * s.weight
		}
	}
	i := p.picker.pick(c, cands, total)
	if i < 0 {
		return -1
	}
	return cands[i]
}

func clamp01(v float64) float64 {
	if v < 0 || v != v {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

// dispatch releases requests held by flow control while the pool is not
// saturated.
func (e *EPP) dispatch(now time.Duration) {
	if e.flow == nil || !e.started {
		return
	}
	for {
		r := e.flow.head()
		if r == nil {
			return
		}
		c := e.begin(now, r)
		if e.flow.detector.saturation(c) >= 1.0 {
			return // head-of-line blocking, as the ShardProcessor's dispatch cycle
		}
		e.flow.pop()
		e.route(now, r)
	}
}
