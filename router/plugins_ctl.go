package router

import (
	"math"
	"strconv"
	"time"
)

// ---- profile handlers ----

// singleHandler is single-profile-handler: run the one profile.
// data-parallel-profile-handler maps here too: BLIS models an endpoint with
// all its DP ranks behind one address, so rank selection (the
// X-Data-Parallel-Endpoint header to primaryPort) is the engine's business.
type singleHandler struct{ p *profile }

func (h *singleHandler) schedule(c *cycle) (int, int) { return c.runProfile(h.p), -1 }

// disaggHandler mirrors disagg-profile-handler
// (profilehandler/disagg/disagg_profile_handler.go @ 520af478): the decode
// profile always runs first; if it found an endpoint, the encode stage runs
// when its profile exists and the encode decider says so, then the prefill
// stage when its profile exists and the prefill decider says so. The
// decode endpoint is the primary target; the prefill endpoint goes in
// Assignment.Prefill, where the cluster loop runs the prefill. BLIS has no encoders: an encode stage is
// decided but its result is not used.
type disaggHandler struct {
	decode, prefill, encode *profile
	pd, enc                 decider
}

func (h *disaggHandler) schedule(c *cycle) (int, int) {
	if h.decode == nil {
		return -1, -1
	}
	dec := c.runProfile(h.decode)
	if dec < 0 {
		return -1, -1
	}
	if h.encode != nil && h.enc != nil && h.enc.disaggregate(c, dec) {
		c.runProfile(h.encode)
	}
	pre := -1
	if h.prefill != nil && h.pd != nil && h.pd.disaggregate(c, dec) {
		pre = c.runProfile(h.prefill)
	}
	return dec, pre
}

// legacyPDHandler mirrors pd-profile-handler as at llm-d-inference-scheduler
// v0.2.1–v0.4.0 (pkg/plugins/profile/pd_profile_handler.go): after decode,
// run prefill unless threshold > 0 and the uncached part of the prompt on
// the decode endpoint, (1 − hit share)·prompt, is below threshold. The hit
// share is matched blocks × block size / prompt tokens (v0.2.1 counts
// characters with hashBlockSize characters per block; BLIS counts tokens).
type legacyPDHandler struct {
	decode, prefill *profile
	threshold       int
	src             prefixSource
}

func (h *legacyPDHandler) schedule(c *cycle) (int, int) {
	if h.decode == nil {
		return -1, -1
	}
	dec := c.runProfile(h.decode)
	if dec < 0 || h.prefill == nil {
		return dec, -1
	}
	if h.threshold > 0 && c.req.PromptLen > 0 {
		hit := 0.0
		if h.src != nil {
			info := h.src.prefixInfo()
			hit = float64(info.match[dec]*info.blockSize) / float64(c.req.PromptLen)
		}
		if (1-hit)*float64(c.req.PromptLen) < float64(h.threshold) {
			return dec, -1
		}
	}
	return dec, c.runProfile(h.prefill)
}

// prefixPDDecider is prefix-based-pd-decider: disaggregate when the prompt
// has at least nonCachedTokens tokens and the part not cached on the chosen
// decode endpoint (prompt − matched blocks × block size) is at least
// nonCachedTokens; 0 disables. llm-d estimates prompt tokens as characters
// / 4; BLIS knows them.
type prefixPDDecider struct {
	n   int
	src prefixSource
}

func (d *prefixPDDecider) disaggregate(c *cycle, dec int) bool {
	if d.n == 0 || c.req.PromptLen < d.n || d.src == nil {
		return false
	}
	info := d.src.prefixInfo()
	return c.req.PromptLen-info.match[dec]*info.blockSize >= d.n
}

// constDecider is always-disagg-pd-decider (true) and
// always-disagg-multimodal-decider (true only for requests with multimodal
// content; BLIS requests are text, so false).
type constDecider bool

func (d constDecider) disaggregate(*cycle, int) bool { return bool(d) }

// ---- admitters ----

// probabilisticAdmitter is probabilistic-admitter: a sheddable request
// (priority < 0) is rejected with probability min(sat^power·k, 1), sat the
// poolLoad over queueDepthThreshold and kvCacheUtilThreshold (an endpoint
// never scraped counts 1; no staleness limit).
type probabilisticAdmitter struct {
	q, kv, power, k float64
}

func (a *probabilisticAdmitter) admit(c *cycle) (string, bool) {
	if c.req.Priority >= 0 || len(c.e.eps) == 0 {
		return "", true
	}
	sat := poolLoad(c, a.q, a.kv, math.MaxInt64)
	p := math.Min(math.Pow(sat, a.power)*a.k, 1)
	if c.e.rng.Float64() < p {
		return "probabilistic-admitter: rejected (pool saturation " + ftoa(sat) + ")", false
	}
	return "", true
}

// latencySLOAdmitter is latency-slo-admitter: it rejects sheddable requests
// whose SLO headers no endpoint is predicted to meet. BLIS requests carry
// no SLO headers, so it admits every request.
type latencySLOAdmitter struct{}

func (latencySLOAdmitter) admit(*cycle) (string, bool) { return "", true }

// ---- saturation detectors ----

// utilizationDetector mirrors utilization-detector
// (flowcontrol/saturationdetector/utilization @ 520af478): pool saturation
// is the mean over endpoints of max(waiting/queueDepthThreshold,
// kvUsage/kvCacheUtilThreshold), an endpoint whose metrics are older than
// metricsStalenessThreshold (or never scraped) counting 1. As a filter it
// keeps endpoints under threshold·(1+headroom) on both, or all if none is.
type utilizationDetector struct {
	queue    int
	kv       float64
	stale    time.Duration
	headroom float64
}

// scrapedWithin reports whether ep's metrics were scraped at most stale ago.
func scrapedWithin(c *cycle, ep int, stale time.Duration) bool {
	s := &c.e.st[ep]
	return s.scraped && c.now-s.scrapedAt <= stale
}

// poolLoad is the mean over endpoints of max(waiting/queue, kvUsage/kv),
// an endpoint without fresh metrics counting 1: the utilization
// detector's saturation and the probabilistic admitter's; there must be
// an endpoint.
func poolLoad(c *cycle, queue, kv float64, stale time.Duration) float64 {
	total := 0.0
	for ep := range c.e.st {
		if !scrapedWithin(c, ep, stale) {
			total++
			continue
		}
		m := &c.e.st[ep].m
		total += math.Max(float64(m.Waiting)/queue, m.KVUsage/kv)
	}
	return total / float64(len(c.e.st))
}

func (d *utilizationDetector) saturation(c *cycle) float64 {
	if len(c.e.st) == 0 {
		return 1
	}
	return poolLoad(c, float64(d.queue), d.kv, d.stale)
}

func (d *utilizationDetector) filter(c *cycle, in []int) []int {
	ql := float64(d.queue) * (1 + d.headroom)
	kl := d.kv * (1 + d.headroom)
	out := c.alloc(len(in))
	for _, ep := range in {
		if !scrapedWithin(c, ep, d.stale) {
			continue
		}
		m := &c.e.st[ep].m
		if float64(m.Waiting) < ql && m.KVUsage < kl {
			out = append(out, ep)
		}
	}
	if len(out) == 0 {
		return in
	}
	return out
}

// concurrencyDetector mirrors concurrency-detector: saturation is total
// in-flight (requests, or tokens in concurrencyMode tokens) / (endpoints ×
// maxConcurrency); as a filter it keeps endpoints under
// max·(1+headroom).
type concurrencyDetector struct {
	maxReq, maxTok int64
	tokens         bool
	headroom       float64
}

func (d *concurrencyDetector) saturation(c *cycle) float64 {
	var load, capacity int64
	for i := range c.e.st {
		if d.tokens {
			load += c.e.st[i].tokens
			capacity += d.maxTok
		} else {
			load += c.e.st[i].reqs
			capacity += d.maxReq
		}
	}
	if capacity == 0 {
		return 1
	}
	return float64(load) / float64(capacity)
}

func (d *concurrencyDetector) filter(c *cycle, in []int) []int {
	lim := int64(float64(d.maxReq) * (1 + d.headroom))
	if d.tokens {
		lim = int64(float64(d.maxTok) * (1 + d.headroom))
	}
	out := c.alloc(len(in))
	for _, ep := range in {
		v := c.e.st[ep].reqs
		if d.tokens {
			v = c.e.st[ep].tokens
		}
		if v < lim {
			out = append(out, ep)
		}
	}
	return out
}

// ---- predicted latency ----

// latFeatures is the predictor's feature count per stage (TTFT and TPOT).
const latFeatures = 4

// latencyProducer stands in for predicted-latency-producer. llm-d trains
// XGBoost / Bayesian-ridge TTFT and TPOT models in sidecar servers from
// per-token timings the EPP observes while streaming. The BLIS router sees
// only each request's dispatch and completion time, so it fits one
// recursive least-squares model of end-to-end latency
//
//	e2e ≈ x·a + (maxTokens−1)·(x·b),  x = [1, in-flight tokens/10⁴,
//	                                       waiting, uncached prompt/10³]
//
// at dispatch, and predicts TTFT = x·a and TPOT = x·b per endpoint. It is
// the simplest online model the router's observations identify; it starts
// at zero (no preference) and learns as responses finish.
type latencyProducer struct {
	src    prefixSource
	w      [2 * latFeatures]float64
	p      [2 * latFeatures][2 * latFeatures]float64
	lambda float64
}

func (l *latencyProducer) start(e *EPP) {
	l.w = [2 * latFeatures]float64{}
	for i := range l.p {
		for j := range l.p[i] {
			l.p[i][j] = 0
		}
		l.p[i][i] = 1e3
	}
	if l.lambda == 0 {
		l.lambda = 0.999
	}
}

func (l *latencyProducer) features(c *cycle, ep int) [latFeatures]float64 {
	s := &c.e.st[ep]
	uncached := float64(c.req.PromptLen)
	if l.src != nil {
		info := l.src.prefixInfo()
		uncached -= float64(info.match[ep] * info.blockSize)
	}
	return [latFeatures]float64{1, float64(s.tokens) / 1e4, float64(s.m.Waiting), math.Max(uncached, 0) / 1e3}
}

func (l *latencyProducer) produce(c *cycle) {
	for ep := range c.e.eps {
		x := l.features(c, ep)
		var ttft, tpot float64
		for i, v := range x {
			ttft += l.w[i] * v
			tpot += l.w[latFeatures+i] * v
		}
		c.predTTFT[ep], c.predTPOT[ep] = math.Max(ttft, 0), math.Max(tpot, 0)
	}
	c.havePred = true
}

func (l *latencyProducer) preRequest(c *cycle, dec, pre int) {
	rec := c.e.recs[c.req.ID]
	if rec != nil {
		rec.feat, rec.hasFeat = l.features(c, dec), true
	}
}

// complete is one recursive-least-squares step on the finished request.
func (l *latencyProducer) complete(_ *EPP, now time.Duration, rec *routed) {
	if !rec.hasFeat {
		return
	}
	const n = 2 * latFeatures
	var z [n]float64
	out := float64(max(rec.req.MaxTokens-1, 0))
	for i := 0; i < latFeatures; i++ {
		z[i] = rec.feat[i]
		z[latFeatures+i] = rec.feat[i] * out
	}
	y := (now - rec.start).Seconds()
	var pz [n]float64
	den := l.lambda
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			pz[i] += l.p[i][j] * z[j]
		}
		den += z[i] * pz[i]
	}
	if den <= 0 || math.IsNaN(den) || math.IsInf(den, 0) {
		return
	}
	pred := 0.0
	for i := 0; i < n; i++ {
		pred += l.w[i] * z[i]
	}
	errv := y - pred
	for i := 0; i < n; i++ {
		l.w[i] += pz[i] / den * errv
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			l.p[i][j] = (l.p[i][j] - pz[i]*pz[j]/den) / l.lambda
		}
	}
}

// latencyScorer stands in for latency-scorer. With SLO headers llm-d scores
// by predicted headroom; BLIS requests carry none, so it prefers lower
// predicted ttftWeight·TTFT + tpotWeight·TPOT, min-max normalised (all
// equal → 1).
type latencyScorer struct {
	ttftW, tpotW float64
}

func (s *latencyScorer) score(c *cycle, eps []int, out []float64) {
	if !c.havePred {
		for i := range out {
			out[i] = 1
		}
		return
	}
	lo, hi := math.MaxFloat64, -math.MaxFloat64
	for i, ep := range eps {
		v := s.ttftW*c.predTTFT[ep] + s.tpotW*c.predTPOT[ep]
		out[i] = v
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	for i := range out {
		if hi == lo {
			out[i] = 1
		} else {
			out[i] = (hi - out[i]) / (hi - lo)
		}
	}
}

// noop stands for plugins that only touch HTTP headers, parsing, data
// sources or queue policies that BLIS models elsewhere or not at all
// (disagg-headers-handler, prefill-header-handler, token-producer,
// tokenizer, openai-parser, metrics-data-source, core-metrics-extractor,
// endpoint-notification-source, fcfs-ordering-policy,
// round-robin-fairness-policy, …).
type noop struct{ typ string }

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
