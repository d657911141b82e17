package router

import (
	"math"
	"strconv"
	"strings"
	"time"

	"blis/engine"
)

// ---- endpoint label helpers ----

const roleLabel = "llm-d.ai/role"

// label returns an endpoint's label; llm-d.ai/role falls back to the
// endpoint's Role when the loop did not fill Labels.
func (c *cycle) label(ep int, key string) (string, bool) {
	e := &c.e.eps[ep]
	if v, ok := e.Labels[key]; ok {
		return v, true
	}
	if key == roleLabel {
		switch e.Role {
		case RolePrefill:
			return "prefill", true
		case RoleDecode:
			return "decode", true
		}
	}
	return "", false
}

// ---- filters ----

// roleFilter mirrors decode-filter / prefill-filter / encode-filter
// (scheduling/filter/bylabel/roles.go @ 520af478): keep endpoints whose
// llm-d.ai/role is one of the values; decode-filter also keeps unlabelled
// endpoints.
type roleFilter struct {
	values         []string
	keepUnlabelled bool
}

func (f *roleFilter) filter(c *cycle, in []int) []int {
	out := c.alloc(len(in))
	for _, ep := range in {
		v, ok := c.label(ep, roleLabel)
		if !ok {
			if f.keepUnlabelled {
				out = append(out, ep)
			}
			continue
		}
		for _, want := range f.values {
			if v == want {
				out = append(out, ep)
				break
			}
		}
	}
	return out
}

// selectorReq is one matchExpressions entry of a Kubernetes label selector.
type selectorReq struct {
	key    string
	op     string // In, NotIn, Exists, DoesNotExist
	values []string
}

// labelSelectorFilter mirrors label-selector-filter / by-label-selector
// (bylabel/selector.go): a Kubernetes LabelSelector over endpoint labels.
type labelSelectorFilter struct {
	match map[string]string
	exprs []selectorReq
}

func (f *labelSelectorFilter) filter(c *cycle, in []int) []int {
	out := c.alloc(len(in))
next:
	for _, ep := range in {
		for k, v := range f.match {
			if got, ok := c.label(ep, k); !ok || got != v {
				continue next
			}
		}
		for _, r := range f.exprs {
			got, ok := c.label(ep, r.key)
			in := false
			for _, v := range r.values {
				if ok && got == v {
					in = true
				}
			}
			switch r.op {
			case "In":
				if !in {
					continue next
				}
			case "NotIn":
				if in {
					continue next
				}
			case "Exists":
				if !ok {
					continue next
				}
			case "DoesNotExist":
				if ok {
					continue next
				}
			}
		}
		out = append(out, ep)
	}
	return out
}

// prefixAffinityFilter mirrors prefix-cache-affinity-filter
// (filter/prefixcacheaffinity/plugin.go @ 520af478, plus the
// peakPrefillThroughput / maxTokensInFlightPenalty load gates of the
// optimized-baseline guide): with probability explorationProbability keep
// everyone; otherwise keep the "sticky" endpoints whose prefix score is ≥
// affinityThreshold, unless none is sticky or the sticky ones are too
// loaded. The TTFT gate compares the best predicted TTFT of the sticky and
// the non-sticky sets — the latency predictor's when one is configured, else
// in-flight tokens / peakPrefillThroughput — and breaks stickiness when the
// gap exceeds maxTTFTPenaltyMs (0: never). The token gate breaks it when the
// least-loaded sticky endpoint has more than maxTokensInFlightPenalty
// in-flight tokens over the least-loaded other one (0: off).
type prefixAffinityFilter struct {
	src                prefixSource
	threshold, explore float64
	maxTTFTPenaltyMs   float64
	peakPrefill        float64
	maxTokensInFlight  float64
	latency            *latencyProducer
}

func (f *prefixAffinityFilter) filter(c *cycle, in []int) []int {
	if len(in) <= 1 || f.threshold <= 0 {
		return in
	}
	if f.explore > 0 && c.e.rng.Float64() < f.explore {
		return in
	}
	info := f.src.prefixInfo()
	sticky := c.alloc(len(in))
	bestS, bestN := math.MaxFloat64, math.MaxFloat64
	tokS, tokN := math.MaxFloat64, math.MaxFloat64
	nonSticky := 0
	for _, ep := range in {
		tok := float64(c.e.st[ep].tokens)
		ttft := tok / f.peakPrefill * 1000
		if f.latency != nil && c.havePred {
			ttft = c.predTTFT[ep] * 1000
		}
		if info.score(ep) >= f.threshold {
			sticky = append(sticky, ep)
			bestS, tokS = math.Min(bestS, ttft), math.Min(tokS, tok)
		} else {
			nonSticky++
			bestN, tokN = math.Min(bestN, ttft), math.Min(tokN, tok)
		}
	}
	if len(sticky) == 0 {
		return in
	}
	if nonSticky > 0 {
		if f.maxTTFTPenaltyMs > 0 && bestS-bestN > f.maxTTFTPenaltyMs {
			return in
		}
		if f.maxTokensInFlight > 0 && tokS-tokN > f.maxTokensInFlight {
			return in
		}
	}
	return sticky
}

// contextLength mirrors context-length-aware
// (scorer/contextlengthaware @ 520af478): endpoints declare a token range
// "min-max" in a label; the request's length is its prompt tokens (BLIS has
// them, as llm-d does with a tokenizer).
type contextLength struct {
	label     string
	filtering bool
}

func parseRange(s string) (lo, hi int, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || lo < 0 || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

func (p *contextLength) filter(c *cycle, in []int) []int {
	if !p.filtering {
		return in
	}
	n := c.req.PromptLen
	out := c.alloc(len(in))
	for _, ep := range in {
		v, ok := c.label(ep, p.label)
		if !ok {
			out = append(out, ep)
			continue
		}
		if lo, hi, ok := parseRange(v); ok && n >= lo && n <= hi {
			out = append(out, ep)
		}
	}
	return out
}

func (p *contextLength) score(c *cycle, eps []int, out []float64) {
	n := c.req.PromptLen
	for i, ep := range eps {
		v, ok := c.label(ep, p.label)
		if !ok {
			out[i] = 0.5
			continue
		}
		lo, hi, ok := parseRange(v)
		if !ok {
			out[i] = 0
			continue
		}
		out[i] = rangeScore(n, lo, hi)
	}
}

// rangeScore is calculateRangeScore: in range, 0.3 + 0.7·(0.7·width score +
// 0.3·headroom share); outside, 0.3 / (1 + distance/1000).
func rangeScore(n, lo, hi int) float64 {
	const fallback = 0.3
	if n >= lo && n <= hi {
		w := hi - lo
		if w == 0 {
			return 1
		}
		width := 1 / (1 + float64(w)/10000)
		pos := float64(hi-n) / float64(w)
		return fallback + (0.7*width+0.3*pos)*(1-fallback)
	}
	d := lo - n
	if n > hi {
		d = n - hi
	}
	return fallback / (1 + float64(d)/1000)
}

// lowQueueFilter is GIE v0.5's low-queue-filter: waiting ≤ threshold.
type lowQueueFilter struct{ threshold int }

func (f *lowQueueFilter) filter(c *cycle, in []int) []int {
	out := c.alloc(len(in))
	for _, ep := range in {
		if c.e.st[ep].m.Waiting <= f.threshold {
			out = append(out, ep)
		}
	}
	return out
}

// leastQueueFilter is GIE v0.5's least-queue-filter: waiting within
// [min, min+(max−min)/n] (integer division, as GIE).
type leastQueueFilter struct{}

func (leastQueueFilter) filter(c *cycle, in []int) []int {
	lo, hi := math.MaxInt, 0
	for _, ep := range in {
		q := c.e.st[ep].m.Waiting
		lo, hi = min(lo, q), max(hi, q)
	}
	out := c.alloc(len(in))
	for _, ep := range in {
		if q := c.e.st[ep].m.Waiting; q >= lo && q <= lo+(hi-lo)/len(in) {
			out = append(out, ep)
		}
	}
	return out
}

// leastKVFilter is GIE v0.5's least-kv-cache-filter.
type leastKVFilter struct{}

func (leastKVFilter) filter(c *cycle, in []int) []int {
	lo, hi := math.MaxFloat64, 0.0
	for _, ep := range in {
		u := c.e.st[ep].m.KVUsage
		lo, hi = math.Min(lo, u), math.Max(hi, u)
	}
	out := c.alloc(len(in))
	for _, ep := range in {
		if u := c.e.st[ep].m.KVUsage; u >= lo && u <= lo+(hi-lo)/float64(len(in)) {
			out = append(out, ep)
		}
	}
	return out
}

// loraAffinityFilter is GIE v0.5's lora-affinity-filter. BLIS serves no
// LoRA adapters: no endpoint has the adapter active or waiting, and with
// max_loras 0 none has room, so the filter returns no endpoint — inside a
// decision tree that sends the walk to its failure branch, as it does on a
// vLLM started without --enable-lora.
type loraAffinityFilter struct{ threshold float64 }

func (loraAffinityFilter) filter(c *cycle, in []int) []int { return in[:0:0] }

// decisionTree is GIE v0.5's decision-tree-filter.
type decisionTree struct {
	current, onSuccess, onFailure, onEither filterPlugin
}

func (d *decisionTree) filter(c *cycle, in []int) []int {
	got := d.current.filter(c, in)
	next := d.onEither
	if len(got) > 0 {
		if d.onSuccess == nil && d.onEither == nil {
			return got
		}
		if d.onSuccess != nil {
			next = d.onSuccess
		}
		return next.filter(c, got)
	}
	if d.onFailure == nil && d.onEither == nil {
		return got
	}
	if d.onFailure != nil {
		next = d.onFailure
	}
	return next.filter(c, in)
}

// sloTierFilter is slo-headroom-tier-filter: it splits endpoints by the
// sign of (SLO − predicted latency). BLIS requests carry no SLO headers,
// so every endpoint has positive headroom and all are kept.
type sloTierFilter struct{ epsilon float64 }

func (sloTierFilter) filter(c *cycle, in []int) []int { return in }

// ---- scorers ----

// prefixInfo is the PrefixCacheMatchInfo attribute one producer writes
// for every endpoint.
type prefixInfo struct {
	match     []int
	total     int
	blockSize int
}

func (p *prefixInfo) score(ep int) float64 {
	if p.total == 0 {
		return 0
	}
	return float64(p.match[ep]) / float64(p.total)
}

type prefixSource interface{ prefixInfo() *prefixInfo }

// prefixScorer mirrors prefix-cache-scorer (scorer/prefix/plugin.go @
// 520af478): matched blocks / total blocks from the producer's
// PrefixCacheMatchInfo.
type prefixScorer struct {
	src prefixSource
	own producerPlugin // legacy-form scorer owns its producer
}

func (s *prefixScorer) score(c *cycle, eps []int, out []float64) {
	info := s.src.prefixInfo()
	for i, ep := range eps {
		out[i] = info.score(ep)
	}
}

// queueScorer is queue-scorer: (maxQ − q)/(maxQ − minQ), 1 when all equal.
type queueScorer struct{ running bool }

func (s queueScorer) val(c *cycle, ep int) int {
	if s.running {
		return c.e.st[ep].m.Running
	}
	return c.e.st[ep].m.Waiting
}

func (s queueScorer) score(c *cycle, eps []int, out []float64) {
	lo, hi := math.MaxInt, math.MinInt
	for _, ep := range eps {
		q := s.val(c, ep)
		lo, hi = min(lo, q), max(hi, q)
	}
	for i, ep := range eps {
		if hi == lo {
			out[i] = 1
		} else {
			out[i] = float64(hi-s.val(c, ep)) / float64(hi-lo)
		}
	}
}

// kvUtilScorer is kv-cache-utilization-scorer (v0.2: kv-cache-scorer):
// 1 − KV usage.
type kvUtilScorer struct{}

func (kvUtilScorer) score(c *cycle, eps []int, out []float64) {
	for i, ep := range eps {
		out[i] = 1 - c.e.st[ep].m.KVUsage
	}
}

// loadAwareScorer is load-aware-scorer: 0.5 with an empty queue, else
// 0.5·(1 − min(q, threshold)/threshold).
type loadAwareScorer struct{ threshold float64 }

func (s loadAwareScorer) score(c *cycle, eps []int, out []float64) {
	for i, ep := range eps {
		q := float64(c.e.st[ep].m.Waiting)
		if q == 0 {
			out[i] = 0.5
			continue
		}
		q = math.Min(q, s.threshold)
		out[i] = 0.5 * (1 - q/s.threshold)
	}
}

// tokenLoadScorer is token-load-scorer: 1 − min(1, in-flight tokens /
// queueThresholdTokens).
type tokenLoadScorer struct{ threshold float64 }

func (s tokenLoadScorer) score(c *cycle, eps []int, out []float64) {
	for i, ep := range eps {
		t := float64(c.e.st[ep].tokens)
		if t <= 0 {
			out[i] = 1
			continue
		}
		out[i] = 1 - math.Min(t, s.threshold)/s.threshold
	}
}

// activeRequestScorer is active-request-scorer: endpoints with at most
// idleThreshold in-flight requests score 1; others
// (max − n)/max · maxBusyScore.
type activeRequestScorer struct {
	idle    int64
	maxBusy float64
}

func (s activeRequestScorer) score(c *cycle, eps []int, out []float64) {
	var hi int64
	for _, ep := range eps {
		hi = max(hi, c.e.st[ep].reqs)
	}
	for i, ep := range eps {
		n := c.e.st[ep].reqs
		if n <= s.idle {
			out[i] = 1
			continue
		}
		out[i] = float64(hi-n) / float64(hi) * s.maxBusy
	}
}

// noHitLRUScorer mirrors no-hit-lru-scorer (scorer/nohitlru @ 520af478):
// a request no endpoint has any prefix of ("cold") goes preferably to the
// endpoint that least recently got a cold request; never-used endpoints
// first (1 − i/(n−1) in candidate order), then by LRU position; warm
// requests score 0.5 everywhere. PreRequest moves the cold request's
// targets to the most-recent end.
type noHitLRUScorer struct {
	src   prefixSource
	size  int
	order []int // endpoint ids, oldest first
	pos   []int // position in order, -1 when absent
	cold  bool  // the request being scheduled was scored cold
}

func (s *noHitLRUScorer) start(e *EPP) {
	s.order = s.order[:0]
	s.pos = make([]int, len(e.eps))
	for i := range s.pos {
		s.pos[i] = -1
	}
}

func (s *noHitLRUScorer) score(c *cycle, eps []int, out []float64) {
	info := s.src.prefixInfo()
	s.cold = true
	for _, ep := range eps {
		if info.total > 0 && info.match[ep] > 0 {
			s.cold = false
			break
		}
	}
	if !s.cold {
		for i := range out {
			out[i] = 0.5
		}
		return
	}
	n := len(eps)
	if n == 1 {
		out[0] = 1
		return
	}
	never := 0
	for _, ep := range eps {
		if s.pos[ep] < 0 {
			never++
		}
	}
	k := 0
	for i, ep := range eps {
		if p := s.pos[ep]; p < 0 {
			out[i] = 1 - float64(k)/float64(n-1)
			k++
		} else {
			out[i] = math.Max(0, 1-float64(never+p)/float64(n-1))
		}
	}
}

// produce forgets the previous request's coldness before each request is
// scheduled: llm-d keeps it in per-request plugin state, so a request whose
// profiles never run the scorer (it sits only in a prefill profile the
// decider skips) moves nothing in the LRU.
func (s *noHitLRUScorer) produce(*cycle) { s.cold = false }

func (s *noHitLRUScorer) touch(ep int) {
	if p := s.pos[ep]; p >= 0 {
		copy(s.order[p:], s.order[p+1:])
		s.order = s.order[:len(s.order)-1]
	} else if len(s.order) >= s.size {
		old := s.order[0]
		s.pos[old] = -1
		copy(s.order, s.order[1:])
		s.order = s.order[:len(s.order)-1]
	}
	s.order = append(s.order, ep)
	for i, e := range s.order {
		s.pos[e] = i
	}
}

func (s *noHitLRUScorer) preRequest(c *cycle, dec, pre int) {
	if !s.cold {
		return
	}
	s.touch(dec)
	if pre >= 0 {
		s.touch(pre)
	}
}

// sessionAffinityScorer mirrors session-affinity-scorer: 1 for the
// endpoint that served the session's previous response (llm-d sends it
// back in the x-session-token header; BLIS assumes the client echoes it,
// keyed by Request.Session), 0 elsewhere.
type sessionAffinityScorer struct {
	last map[uint64]int
}

func (s *sessionAffinityScorer) start(e *EPP) { s.last = make(map[uint64]int) }

func (s *sessionAffinityScorer) score(c *cycle, eps []int, out []float64) {
	want := -1
	if c.req.Session != 0 {
		if ep, ok := s.last[c.req.Session]; ok {
			want = ep
		}
	}
	for i, ep := range eps {
		out[i] = 0
		if ep == want {
			out[i] = 1
		}
	}
}

func (s *sessionAffinityScorer) complete(_ *EPP, _ time.Duration, rec *routed) {
	if rec.req.Session != 0 {
		s.last[rec.req.Session] = rec.decode
	}
}

// constScorer scores every endpoint the same: lora-affinity-scorer (BLIS
// has no LoRA adapters, so every endpoint is equally (un)suited).
type constScorer struct{ v float64 }

func (s constScorer) score(c *cycle, eps []int, out []float64) {
	for i := range eps {
		out[i] = s.v
	}
}

// ---- pickers ----

// maxScorePicker is max-score-picker: the highest total score, ties broken
// uniformly at random (llm-d shuffles then stable-sorts; a one-pass
// reservoir over the ties draws from the same distribution).
type maxScorePicker struct{}

func (maxScorePicker) pick(c *cycle, eps []int, scores []float64) int {
	best, ties := -1, 0
	for i, s := range scores {
		switch {
		case best < 0 || s > scores[best]:
			best, ties = i, 1
		case s == scores[best]:
			ties++
			if c.e.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// randomPicker is random-picker: uniform, ignoring scores.
type randomPicker struct{}

func (randomPicker) pick(c *cycle, eps []int, _ []float64) int {
	if len(eps) == 0 {
		return -1
	}
	return c.e.rng.IntN(len(eps))
}

// weightedRandomPicker is weighted-random-picker: A-Res sampling, key
// U^(1/score), highest key wins; zero scores never win unless all are zero
// (then uniform).
type weightedRandomPicker struct{}

func (weightedRandomPicker) pick(c *cycle, eps []int, scores []float64) int {
	best, bestKey := -1, -1.0
	for i, s := range scores {
		if s <= 0 {
			continue
		}
		u := c.e.rng.Float64()
		if u == 0 {
			u = 1e-10
		}
		if k := math.Pow(u, 1/s); k > bestKey {
			best, bestKey = i, k
		}
	}
	if best < 0 {
		return randomPicker{}.pick(c, eps, scores)
	}
	return best
}

// ---- data producers ----

// approxProducer mirrors approx-prefix-cache-producer
// (requestcontrol/dataproducer/approximateprefix @ 520af478): it hashes the
// prompt in blocks, matches them against an index of what it routed where,
// and after the decision records the blocks on the chosen endpoint(s).
// llm-d hashes 4 characters per token of request text with xxhash; BLIS
// hashes token blocks exactly as the engines name them
// (engine.PromptBlockHashes), so "same prefix" means the same tokens. A
// trailing partial block is not hashed (llm-d hashes it too; it only ever
// matches an identical prompt).
type approxProducer struct {
	autoTune    bool
	blockTokens int
	maxBlocks   int
	maxTokens   int
	lruCap      int
	idx         *approxIndex
	info        prefixInfo
	hashes      []uint64
}

func (p *approxProducer) start(e *EPP) {
	p.idx = newApproxIndex(len(e.eps))
	p.info.match = make([]int, len(e.eps))
}

func (p *approxProducer) prefixInfo() *prefixInfo { return &p.info }

func (p *approxProducer) blockSize(c *cycle) int {
	if p.autoTune && len(c.e.eps) > 0 && c.e.eps[0].BlockSize > 0 {
		return c.e.eps[0].BlockSize
	}
	return p.blockTokens
}

func promptHashes(dst []uint64, r *Request, bs, maxBlocks int) []uint64 {
	if bs <= 0 {
		return dst[:0]
	}
	dst = engine.PromptBlockHashes(dst[:0], r.Prompt, bs)
	if maxBlocks > 0 && len(dst) > maxBlocks {
		dst = dst[:maxBlocks]
	}
	return dst
}

func (p *approxProducer) produce(c *cycle) {
	bs := p.blockSize(c)
	maxB := p.maxBlocks
	if p.maxTokens > 0 && bs > 0 {
		maxB = p.maxTokens / bs
	}
	p.hashes = promptHashes(p.hashes, c.req, bs, maxB)
	p.idx.match(p.hashes, p.info.match)
	p.info.total, p.info.blockSize = len(p.hashes), bs
}

func (p *approxProducer) capacity(c *cycle, ep int) int {
	if p.autoTune && c.e.eps[ep].KVBlocks > 0 {
		return c.e.eps[ep].KVBlocks
	}
	return p.lruCap
}

func (p *approxProducer) preRequest(c *cycle, dec, pre int) {
	p.idx.add(p.hashes, dec, p.capacity(c, dec))
	if pre >= 0 {
		p.idx.add(p.hashes, pre, p.capacity(c, pre))
	}
}

// preciseProducer mirrors precise-prefix-cache-producer /
// precise-prefix-cache-scorer / prefix-cache-scorer mode: cache_tracking
// (llm-d-kv-cache indexer): the index is fed by the engines' KV events,
// which reach it after delay; the score is each endpoint's consecutive
// matched blocks from the first / total blocks. The block size must equal
// the engines' (tokenProcessorConfig.blockSize) or nothing ever matches —
// as in llm-d. With speculativeIndexing the blocks of a routed prompt count
// as cached on its endpoint(s) for speculativeTTL (2s) — until the engine's
// own events have had time to arrive.
type preciseProducer struct {
	blockSize int
	maxBlocks int
	delay     time.Duration
	specTTL   time.Duration // > 0: speculativeIndexing with this TTL
	idx       *preciseIndex
	info      prefixInfo
	hashes    []uint64
}

func (p *preciseProducer) start(e *EPP) {
	p.idx = newPreciseIndex(p.delay)
	p.info.match = make([]int, len(e.eps))
}

func (p *preciseProducer) prefixInfo() *prefixInfo { return &p.info }

func (p *preciseProducer) blockEvent(now time.Duration, ep int, h uint64, stored bool) {
	p.idx.advance(now) // keeps the pending queue to the events still in flight
	p.idx.event(now, ep, h, stored)
}

func (p *preciseProducer) produce(c *cycle) {
	p.idx.advance(c.now)
	p.hashes = promptHashes(p.hashes, c.req, p.blockSize, p.maxBlocks)
	p.idx.match(p.hashes, p.info.match)
	p.info.total, p.info.blockSize = len(p.hashes), p.blockSize
}

// preRequest adds speculative entries for the chosen endpoints
// (speculativeIndexing: true), as the precise scorer's PreRequest does.
func (p *preciseProducer) preRequest(c *cycle, dec, pre int) {
	if p.specTTL <= 0 || len(p.hashes) == 0 {
		return
	}
	p.idx.speculate(c.now+p.specTTL, dec, p.hashes)
	if pre >= 0 {
		p.idx.speculate(c.now+p.specTTL, pre, p.hashes)
	}
}

func (p *preciseProducer) score(c *cycle, eps []int, out []float64) {
	for i, ep := range eps {
		out[i] = p.info.score(ep)
	}
}

// inflightProducer mirrors inflight-load-producer
// (dataproducer/inflightload @ 520af478): +1 request and +tokens on each
// profile's target at PreRequest, − at response end. Tokens are its
// SimpleTokenEstimator: input + round(1.5·input); BLIS knows the input
// tokens exactly. llm-d releases the prefill target at the first streamed
// chunk; the router sees no first token, so BLIS releases both at the end.
type inflightProducer struct{}

func estimateTokens(r *Request) int64 {
	in := int64(max(r.PromptLen, 1))
	return in + int64(math.Round(float64(in)*1.5))
}

func (inflightProducer) preRequest(c *cycle, dec, pre int) {
	t := estimateTokens(c.req)
	c.e.st[dec].reqs++
	c.e.st[dec].tokens += t
	if pre >= 0 {
		c.e.st[pre].reqs++
		c.e.st[pre].tokens += t
	}
}

func (inflightProducer) complete(e *EPP, _ time.Duration, rec *routed) {
	t := estimateTokens(rec.req)
	e.st[rec.decode].reqs--
	e.st[rec.decode].tokens -= t
	if rec.prefill >= 0 {
		e.st[rec.prefill].reqs--
		e.st[rec.prefill].tokens -= t
	}
}
