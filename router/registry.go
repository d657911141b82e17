package router

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// pluginType is one entry of the plugin registry: the kind shown in
// errors and docs, the release it mirrors, and a constructor that decodes
// its parameters strictly.
type pluginType struct {
	kind    string
	release string
	build   func(b *builder, name string, p *params) (any, error)
}

const (
	relHEAD = "llm-d-inference-scheduler 520af478 (2026-05-17)"
	rel021  = "llm-d-inference-scheduler v0.2.1"
	relGIE5 = "gateway-api-inference-extension v0.5.1"
)

// registry maps a plugin type name to its constructor.
var registry map[string]pluginType

func init() {
	registry = map[string]pluginType{
		// filters
		"decode-filter":                {"filter", relHEAD, roleFactory(true, "decode", "prefill-decode", "both", "encode-prefill-decode")},
		"prefill-filter":               {"filter", relHEAD, roleFactory(false, "prefill", "encode-prefill", "prefill-decode", "both", "encode-prefill-decode")},
		"encode-filter":                {"filter", relHEAD, roleFactory(false, "encode", "encode-prefill", "encode-prefill-decode")},
		"label-selector-filter":        {"filter", relHEAD, buildLabelSelector},
		"by-label-selector":            {"filter", rel021 + " (alias of label-selector-filter)", buildLabelSelector},
		"prefix-cache-affinity-filter": {"filter", relHEAD + " + optimized-baseline guide load gates", buildAffinityFilter},
		"slo-headroom-tier-filter": {"filter", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			f := &sloTierFilter{epsilon: 0.01}
			p.Float("epsilonExploreNeg", &f.epsilon)
			return f, p.done()
		}},
		"low-queue-filter": {"filter", relGIE5, func(b *builder, _ string, p *params) (any, error) {
			f := &lowQueueFilter{threshold: 128}
			p.Int("threshold", &f.threshold)
			return f, p.done()
		}},
		"least-queue-filter":    {"filter", relGIE5, noParams(leastQueueFilter{})},
		"least-kv-cache-filter": {"filter", relGIE5, noParams(leastKVFilter{})},
		"lora-affinity-filter": {"filter", relGIE5, func(b *builder, _ string, p *params) (any, error) {
			f := &loraAffinityFilter{threshold: 0.999}
			p.Float("threshold", &f.threshold)
			return f, p.done()
		}},
		"decision-tree-filter": {"filter", relGIE5, buildDecisionTree},
		// scorers
		"context-length-aware": {"scorer+filter", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			s := &contextLength{label: "llm-d.ai/context-length-range"}
			p.String("label", &s.label)
			p.Bool("enableFiltering", &s.filtering)
			if s.label == "" {
				p.fail(p.node, "parameters.label", "", "must not be empty")
			}
			return s, p.done()
		}},
		"prefix-cache-scorer":           {"scorer", relHEAD + "; legacy parameters as " + relGIE5 + " / " + rel021, buildPrefixScorer},
		"precise-prefix-cache-scorer":   {"scorer+producer", relHEAD, buildPrecise},
		"precise-prefix-cache-producer": {"producer", relHEAD, buildPrecise},
		"queue-scorer":                  {"scorer", relHEAD, noParams(queueScorer{})},
		"running-requests-size-scorer":  {"scorer", relHEAD, noParams(queueScorer{running: true})},
		"kv-cache-utilization-scorer":   {"scorer", relHEAD, noParams(kvUtilScorer{})},
		"kv-cache-scorer":               {"scorer", rel021 + " (old name of kv-cache-utilization-scorer)", noParams(kvUtilScorer{})},
		"load-aware-scorer": {"scorer", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			t := 128
			p.Int("threshold", &t)
			if t <= 0 {
				t = 128 // llm-d falls back to the default on a non-positive threshold
			}
			return loadAwareScorer{threshold: float64(t)}, p.done()
		}},
		"token-load-scorer": {"scorer", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			t := 4194304
			p.Int("queueThresholdTokens", &t)
			if t <= 0 {
				t = 4194304
			}
			b.needInflight = true
			return tokenLoadScorer{threshold: float64(t)}, p.done()
		}},
		"active-request-scorer": {"scorer", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			idle, busy := 0, 1.0
			p.Int("idleThreshold", &idle)
			p.Float("maxBusyScore", &busy)
			p.Ignore("requestTimeout") // deprecated and ignored by llm-d
			if idle < 0 {
				idle = 0
			}
			if busy < 0 || busy > 1 {
				busy = 1
			}
			b.needInflight = true
			return activeRequestScorer{idle: int64(idle), maxBusy: busy}, p.done()
		}},
		"no-hit-lru-scorer": {"scorer", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			s := &noHitLRUScorer{size: 1024}
			p.Int("lruSize", &s.size)
			producer := ""
			p.String("prefixMatchInfoProducerName", &producer)
			p.Ignore("prefixPluginType", "prefixPluginName")
			if s.size <= 0 {
				s.size = 1024
			}
			b.prefixUsers = append(b.prefixUsers, prefixUser{producer, func(src prefixSource) { s.src = src }, false})
			return s, p.done()
		}},
		"session-affinity-scorer": {"scorer", relHEAD, fresh(func() any { return &sessionAffinityScorer{} })},
		"lora-affinity-scorer":    {"scorer", relHEAD + " (no LoRA in BLIS: every endpoint scores 0)", noParams(constScorer{0})},
		"latency-scorer": {"scorer", relHEAD + " (no SLOs in BLIS: prefers lower predicted latency)", func(b *builder, _ string, p *params) (any, error) {
			s := &latencyScorer{ttftW: 1, tpotW: 1}
			p.Float("ttftWeight", &s.ttftW)
			p.Float("tpotWeight", &s.tpotW)
			p.Ignore("headroomSelectionStrategy", "compositeKVWeight", "compositeQueueWeight", "compositePrefixWeight")
			b.needLatency = true
			return s, p.done()
		}},
		// pickers
		"max-score-picker":       {"picker", relHEAD, buildPicker(maxScorePicker{})},
		"random-picker":          {"picker", relHEAD, buildPicker(randomPicker{})},
		"weighted-random-picker": {"picker", relHEAD, buildPicker(weightedRandomPicker{})},
		// producers
		"approx-prefix-cache-producer": {"producer", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			return buildApprox(p, false)
		}},
		"inflight-load-producer": {"producer", relHEAD, noParams(inflightProducer{})},
		"predicted-latency-producer": {"producer", relHEAD + " (online least squares, not XGBoost)", func(b *builder, _ string, p *params) (any, error) {
			p.Ignore("samplingMean", "maxDecodeTokenSamplesForPrediction", "sloBufferFactor", "contextTTL",
				"streamingMode", "endpointRoleLabel", "predictInProduce")
			l := &latencyProducer{}
			b.prefixUsers = append(b.prefixUsers, prefixUser{"", func(src prefixSource) { l.src = src }, true})
			return l, p.done()
		}},
		"token-producer": {"producer (no-op)", relHEAD, ignoreParams("token-producer", "modelName", "vllm", "estimate", "uds", "timeout", "mmTimeout")},
		"tokenizer":      {"producer (no-op)", "llm-d-inference-scheduler v0.4.0", ignoreParams("tokenizer", "modelName", "udsTokenizerConfig", "localTokenizerConfig", "hfTokenizerConfig")},
		// profile handlers and deciders
		"single-profile-handler": {"profile handler", relHEAD, fresh(func() any { return &singleHandler{} })},
		"data-parallel-profile-handler": {"profile handler", relHEAD + " (deprecated; one address per endpoint in BLIS)", func(b *builder, _ string, p *params) (any, error) {
			port := 8000
			p.Int("primaryPort", &port)
			if port < 1 || port > 65535 {
				p.fail(p.node, "parameters.primaryPort", fmt.Sprint(port), "must be in 1..65535")
			}
			return &singleHandler{}, p.done()
		}},
		"disagg-profile-handler": {"profile handler", relHEAD, buildDisagg},
		"pd-profile-handler":     {"profile handler", rel021 + " … v0.4.0 (deprecated)", buildLegacyPD},
		"prefix-based-pd-decider": {"decider", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			d := &prefixPDDecider{}
			p.Int("nonCachedTokens", &d.n)
			if d.n < 0 {
				p.fail(p.node, "parameters.nonCachedTokens", fmt.Sprint(d.n), "must be >= 0 (0 disables disaggregation)")
			}
			b.prefixUsers = append(b.prefixUsers, prefixUser{"", func(src prefixSource) { d.src = src }, false})
			return d, p.done()
		}},
		"always-disagg-pd-decider":         {"decider", relHEAD, noParams(constDecider(true))},
		"always-disagg-multimodal-decider": {"decider", relHEAD + " (text-only in BLIS: never)", noParams(constDecider(false))},
		"disagg-headers-handler":           {"pre-request (header only)", relHEAD, ignoreParams("disagg-headers-handler", "prefillProfile", "encodeProfile")},
		"prefill-header-handler":           {"pre-request (header only)", rel021, ignoreParams("prefill-header-handler", "prefillProfile")},
		// admission, saturation, flow control
		"probabilistic-admitter": {"admitter", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			a := &probabilisticAdmitter{q: 5, kv: 0.8, power: 5, k: 300}
			qi := 5
			p.Int("queueDepthThreshold", &qi)
			a.q = float64(qi)
			p.Float("kvCacheUtilThreshold", &a.kv)
			p.Float("power", &a.power)
			p.Float("k", &a.k)
			if a.q <= 0 || a.kv <= 0 || a.power <= 0 || a.k <= 0 {
				p.fail(p.node, "parameters", "", "queueDepthThreshold, kvCacheUtilThreshold, power and k must be > 0")
			}
			return a, p.done()
		}},
		"latency-slo-admitter": {"admitter", relHEAD + " (no SLOs in BLIS: admits all)", func(b *builder, _ string, p *params) (any, error) {
			b.needLatency = true
			return latencySLOAdmitter{}, p.done()
		}},
		"utilization-detector": {"saturation detector+filter", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			return buildUtilization(p)
		}},
		"concurrency-detector": {"saturation detector+filter", relHEAD, func(b *builder, _ string, p *params) (any, error) {
			d := &concurrencyDetector{maxReq: 100, maxTok: 1000000}
			mr, mt := 100, 1000000
			mode := "requests"
			p.Int("maxConcurrency", &mr)
			p.Int("maxTokenConcurrency", &mt)
			p.Float("headroom", &d.headroom)
			p.String("concurrencyMode", &mode)
			d.maxReq, d.maxTok = int64(mr), int64(mt)
			switch {
			case mr <= 0:
				p.fail(p.node, "parameters.maxConcurrency", fmt.Sprint(mr), "must be > 0")
			case mt <= 0:
				p.fail(p.node, "parameters.maxTokenConcurrency", fmt.Sprint(mt), "must be > 0")
			case d.headroom < 0:
				p.fail(p.node, "parameters.headroom", ftoa(d.headroom), "must be >= 0")
			case mode != "requests" && mode != "tokens":
				p.fail(p.node, "parameters.concurrencyMode", mode, "must be requests or tokens")
			}
			d.tokens = mode == "tokens"
			b.needInflight = true
			return d, p.done()
		}},
		"fcfs-ordering-policy":          {"flow-control ordering", relHEAD, noParams(noop{"fcfs-ordering-policy"})},
		"round-robin-fairness-policy":   {"flow-control fairness (one flow per band in BLIS: FIFO)", relHEAD, noParams(noop{"round-robin-fairness-policy"})},
		"global-strict-fairness-policy": {"flow-control fairness", relHEAD, noParams(noop{"global-strict-fairness-policy"})},
		"static-usage-limit-policy":     {"flow-control usage limit (ceiling 1.0)", relHEAD, noParams(noop{"static-usage-limit-policy"})},
		// data layer / parsing: I/O BLIS does not have
		"metrics-data-source":          {"data source (scrape; no-op)", relHEAD, anyParams("metrics-data-source")},
		"core-metrics-extractor":       {"data extractor (no-op)", relHEAD, anyParams("core-metrics-extractor")},
		"endpoint-notification-source": {"data source (no-op)", relHEAD, anyParams("endpoint-notification-source")},
		"file-discovery":               {"endpoint discovery (no-op: BLIS gives the endpoints)", relHEAD, ignoreParams("file-discovery", "path", "watchFile")},
		"openai-parser":                {"request parser (no-op)", relHEAD, noParams(noop{"openai-parser"})},
		"passthrough-parser":           {"request parser (no-op)", relHEAD, noParams(noop{"passthrough-parser"})},
	}
}

// SupportedPlugins lists the plugin types Load accepts with the kind and
// release each mirrors, one "type (kind; release)" per line, sorted.
func SupportedPlugins() []string {
	out := make([]string, 0, len(registry))
	for t, pt := range registry {
		out = append(out, t+" ("+pt.kind+"; "+pt.release+")")
	}
	sort.Strings(out)
	return out
}

func typeNames() string {
	names := make([]string, 0, len(registry))
	for t := range registry {
		names = append(names, t)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func noParams(v any) func(*builder, string, *params) (any, error) {
	return fresh(func() any { return v })
}

// fresh builds a parameterless plugin; mk must return a new value for
// stateful plugins so routers built from one config share nothing.
func fresh(mk func() any) func(*builder, string, *params) (any, error) {
	return func(_ *builder, _ string, p *params) (any, error) {
		return mk(), p.done()
	}
}

func ignoreParams(typ string, keys ...string) func(*builder, string, *params) (any, error) {
	return func(b *builder, _ string, p *params) (any, error) {
		p.Ignore(keys...)
		return noop{typ}, p.done()
	}
}

// anyParams accepts any parameters: they configure scraping and endpoint
// discovery I/O that the simulator performs itself.
func anyParams(typ string) func(*builder, string, *params) (any, error) {
	return func(*builder, string, *params) (any, error) { return noop{typ}, nil }
}

func roleFactory(unlabelled bool, values ...string) func(*builder, string, *params) (any, error) {
	return func(b *builder, _ string, p *params) (any, error) {
		return &roleFilter{values: values, keepUnlabelled: unlabelled}, p.done()
	}
}

func buildPicker(v pickerPlugin) func(*builder, string, *params) (any, error) {
	return func(b *builder, _ string, p *params) (any, error) {
		n := 1
		p.Int("maxNumOfEndpoints", &n) // BLIS routes to one endpoint; extra picks would be fallbacks
		return v, p.done()
	}
}

func buildLabelSelector(b *builder, _ string, p *params) (any, error) {
	f := &labelSelectorFilter{match: map[string]string{}}
	if n := p.Node("matchLabels"); n != nil {
		if n.Kind != yaml.MappingNode {
			p.fail(n, "parameters.matchLabels", "", "must be a mapping of label to value")
		} else {
			for i := 0; i+1 < len(n.Content); i += 2 {
				f.match[n.Content[i].Value] = n.Content[i+1].Value
			}
		}
	}
	if n := p.Node("matchExpressions"); n != nil {
		if n.Kind != yaml.SequenceNode {
			p.fail(n, "parameters.matchExpressions", "", "must be a list of {key, operator, values}")
		} else {
			for _, e := range n.Content {
				ep := newParams(p.file, p.where, e)
				var r selectorReq
				ep.String("key", &r.key)
				ep.String("operator", &r.op)
				if v := ep.Node("values"); v != nil {
					for _, x := range v.Content {
						r.values = append(r.values, x.Value)
					}
				}
				switch r.op {
				case "In", "NotIn", "Exists", "DoesNotExist":
				default:
					ep.fail(e, "parameters.matchExpressions.operator", r.op, "must be In, NotIn, Exists or DoesNotExist")
				}
				if err := ep.done(); err != nil {
					return nil, err
				}
				f.exprs = append(f.exprs, r)
			}
		}
	}
	return f, p.done()
}

func buildAffinityFilter(b *builder, _ string, p *params) (any, error) {
	f := &prefixAffinityFilter{threshold: 0.80, explore: 0.01, maxTTFTPenaltyMs: 5000, peakPrefill: 15928}
	p.Float("affinityThreshold", &f.threshold)
	p.Float("explorationProbability", &f.explore)
	p.Float("maxTTFTPenaltyMs", &f.maxTTFTPenaltyMs)
	p.Float("peakPrefillThroughput", &f.peakPrefill)
	p.Float("maxTokensInFlightPenalty", &f.maxTokensInFlight)
	producer := ""
	p.String("prefixMatchInfoProducerName", &producer)
	switch {
	case f.threshold > 1:
		p.fail(p.node, "parameters.affinityThreshold", ftoa(f.threshold), "must be <= 1.0")
	case f.explore < 0 || f.explore > 1:
		p.fail(p.node, "parameters.explorationProbability", ftoa(f.explore), "must be in [0, 1]")
	case f.maxTTFTPenaltyMs < 0:
		p.fail(p.node, "parameters.maxTTFTPenaltyMs", ftoa(f.maxTTFTPenaltyMs), "must be >= 0")
	case f.peakPrefill <= 0:
		p.fail(p.node, "parameters.peakPrefillThroughput", ftoa(f.peakPrefill), "must be > 0 tokens/s")
	case f.maxTokensInFlight < 0:
		p.fail(p.node, "parameters.maxTokensInFlightPenalty", ftoa(f.maxTokensInFlight), "must be >= 0")
	}
	b.needInflight = true
	b.prefixUsers = append(b.prefixUsers, prefixUser{producer, func(src prefixSource) { f.src = src }, false})
	b.affinity = append(b.affinity, f)
	return f, p.done()
}

func buildDecisionTree(b *builder, name string, p *params) (any, error) {
	d := &decisionTree{}
	if err := b.treeNode(d, p.node, p); err != nil {
		return nil, err
	}
	return d, nil
}

// treeNode reads one decision-tree level: current + nextOnSuccess /
// nextOnFailure / nextOnSuccessOrFailure, each a {pluginRef} or a nested
// {decisionTree: …}.
func (b *builder) treeNode(d *decisionTree, n *yaml.Node, p *params) error {
	q := newParams(p.file, p.where, n)
	cur := q.Node("current")
	if cur == nil {
		q.fail(n, "parameters.current", "", "a decision tree level needs current: {pluginRef: …}")
		return q.done()
	}
	set := func(key string, dst *filterPlugin) {
		v := q.Node(key)
		if v == nil {
			return
		}
		r := newParams(p.file, p.where, v)
		ref := ""
		r.String("pluginRef", &ref)
		sub := r.Node("decisionTree")
		if err := r.done(); err != nil {
			q.err = err
			return
		}
		switch {
		case ref != "":
			line := v.Line
			b.links = append(b.links, func() error {
				f, ok := b.byName[ref].(filterPlugin)
				if !ok {
					return &ConfigError{File: b.file, Line: line, Key: "pluginRef", Value: ref, Msg: p.where + ": decision tree needs a filter plugin declared under plugins"}
				}
				*dst = f
				return nil
			})
		case sub != nil:
			child := &decisionTree{}
			if err := b.treeNode(child, sub, p); err != nil {
				q.err = err
				return
			}
			*dst = child
		default:
			q.fail(v, "parameters."+key, "", "needs pluginRef or decisionTree")
		}
	}
	set("current", &d.current)
	set("nextOnSuccess", &d.onSuccess)
	set("nextOnFailure", &d.onFailure)
	set("nextOnSuccessOrFailure", &d.onEither)
	return q.done()
}

// buildApprox reads approx-prefix-cache-producer parameters (HEAD), or the
// GIE v0.5 prefix-cache-scorer form when legacy is set (hashBlockSize in
// characters, 4 per token; no auto-tuning).
func buildApprox(p *params, legacy bool) (*approxProducer, error) {
	a := &approxProducer{autoTune: true, blockTokens: 16, maxBlocks: 256, lruCap: 31250}
	p.Bool("autoTune", &a.autoTune)
	p.Int("blockSizeTokens", &a.blockTokens)
	p.Int("maxPrefixBlocksToMatch", &a.maxBlocks)
	p.Int("maxPrefixTokensToMatch", &a.maxTokens)
	p.Int("lruCapacityPerServer", &a.lruCap)
	chars := 0
	if p.Int("blockSize", &chars) && !legacy {
		p.fail(p.node, "parameters.blockSize", fmt.Sprint(chars), "is deprecated (characters); use blockSizeTokens")
	}
	hb := 0
	if p.Int("hashBlockSize", &hb) || legacy {
		if hb == 0 {
			hb = 64
		}
		if chars > 0 {
			hb = chars
		}
		a.autoTune = false
		a.blockTokens = max(hb/4, 1)
	}
	switch {
	case !a.autoTune && a.blockTokens <= 0:
		p.fail(p.node, "parameters.blockSizeTokens", fmt.Sprint(a.blockTokens), "must be > 0 when autoTune is false")
	case a.maxTokens < 0:
		p.fail(p.node, "parameters.maxPrefixTokensToMatch", fmt.Sprint(a.maxTokens), "must be >= 0")
	case a.lruCap <= 0:
		a.lruCap = 31250
	}
	return a, p.done()
}

// buildPrefixScorer accepts both forms of prefix-cache-scorer: HEAD's (no
// parameters but prefixMatchInfoProducerName; reads a producer, one is
// added if none is configured) and the older forms that owned their index
// (GIE v0.5 hashBlockSize / maxPrefixBlocksToMatch / lruCapacityPerServer;
// llm-d v0.2 mode: estimate | cache_tracking with indexerConfig). HEAD
// ignores those parameters; BLIS applies them to the scorer's own producer.
func buildPrefixScorer(b *builder, name string, p *params) (any, error) {
	s := &prefixScorer{}
	producer := ""
	p.String("prefixMatchInfoProducerName", &producer)
	mode := ""
	p.String("mode", &mode)
	legacy := false
	for _, k := range []string{"hashBlockSize", "maxPrefixBlocksToMatch", "lruCapacityPerServer", "blockSize", "blockSizeTokens", "autoTune", "maxPrefixTokensToMatch"} {
		if _, ok := lookupKey(p.node, k); ok {
			legacy = true
		}
	}
	switch mode {
	case "cache_tracking":
		pp, err := preciseFrom(b, p)
		if err != nil {
			return nil, err
		}
		s.src, s.own = pp, pp
		return s, nil
	case "", "estimate":
	default:
		p.fail(p.node, "parameters.mode", mode, "must be estimate or cache_tracking")
		return nil, p.done()
	}
	if legacy {
		_, isHashForm := lookupKey(p.node, "hashBlockSize")
		a, err := buildApprox(p, isHashForm)
		if err != nil {
			return nil, err
		}
		s.src, s.own = a, a
		return s, nil
	}
	b.prefixUsers = append(b.prefixUsers, prefixUser{producer, func(src prefixSource) { s.src = src }, false})
	return s, p.done()
}

func lookupKey(n *yaml.Node, key string) (*yaml.Node, bool) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], true
		}
	}
	return nil, false
}

func buildPrecise(b *builder, _ string, p *params) (any, error) { return preciseFrom(b, p) }

// preciseFrom reads the llm-d-kv-cache configuration of the precise
// producer / scorer: tokenProcessorConfig.blockSize (top level or under
// indexerConfig; default 16) and kvBlockIndexConfig.maxPrefixBlocksToMatch;
// speculativeIndexing / speculativeTTL (2s); the rest (ZMQ endpoints, hash
// seed, metrics, pod discovery) configures I/O and is accepted without
// effect. The BLIS-only
// parameter propagationDelay sets how long a KV event takes to reach the
// index (default 5ms).
func preciseFrom(b *builder, p *params) (*preciseProducer, error) {
	pp := &preciseProducer{blockSize: 16, delay: b.opts.KVEventDelay}
	// findInt reads the integer at path under n into dst, reporting whether
	// it is there; name is its full key for errors.
	findInt := func(dst *int, n *yaml.Node, name string, path ...string) bool {
		for _, k := range path {
			v, ok := lookupKey(n, k)
			if !ok {
				return false
			}
			n = v
		}
		if n.Kind != yaml.ScalarNode {
			p.fail(n, name, "", "must be a single value, not a list or mapping")
			return true
		}
		p.intValue(n, name, dst)
		return true
	}
	tp, ic := p.Node("tokenProcessorConfig"), p.Node("indexerConfig")
	if !findInt(&pp.blockSize, tp, "parameters.tokenProcessorConfig.blockSize", "blockSize") {
		findInt(&pp.blockSize, ic, "parameters.indexerConfig.tokenProcessorConfig.blockSize", "tokenProcessorConfig", "blockSize")
	}
	findInt(&pp.maxBlocks, ic, "parameters.indexerConfig.kvBlockIndexConfig.maxPrefixBlocksToMatch", "kvBlockIndexConfig", "maxPrefixBlocksToMatch")
	if pp.blockSize <= 0 {
		p.fail(tp, "parameters.tokenProcessorConfig.blockSize", fmt.Sprint(pp.blockSize), "must be > 0 (the engines' block size)")
	}
	p.Duration("propagationDelay", &pp.delay)
	spec := false
	p.Bool("speculativeIndexing", &spec)
	ttl := 2 * time.Second
	p.Duration("speculativeTTL", &ttl)
	if spec {
		if ttl <= 0 {
			ttl = 2 * time.Second
		}
		pp.specTTL = ttl
	}
	p.Ignore("kvEventsConfig", "mode")
	b.hasKV = true
	return pp, p.done()
}

func buildDisagg(b *builder, _ string, p *params) (any, error) {
	h := &disaggHandler{}
	names := struct{ decode, prefill, encode, pd, enc string }{"decode", "prefill", "encode", "", ""}
	if n := p.Node("profiles"); n != nil {
		q := newParams(p.file, p.where, n)
		q.String("decode", &names.decode)
		q.String("prefill", &names.prefill)
		q.String("encode", &names.encode)
		if err := q.done(); err != nil {
			return nil, err
		}
	}
	if n := p.Node("deciders"); n != nil {
		q := newParams(p.file, p.where, n)
		q.String("prefill", &names.pd)
		q.String("encode", &names.enc)
		if err := q.done(); err != nil {
			return nil, err
		}
	}
	// deprecated flat form
	p.String("decodeProfile", &names.decode)
	p.String("prefillProfile", &names.prefill)
	p.String("encodeProfile", &names.encode)
	p.String("prefillDeciderPluginName", &names.pd)
	p.String("encodeDeciderPluginName", &names.enc)
	if names.pd == "" {
		p.String("deciderPluginName", &names.pd)
	} else {
		var x string
		p.String("deciderPluginName", &x)
	}
	p.Ignore("prefixPluginType", "prefixPluginName", "primaryPort")
	line := 0
	if p.node != nil {
		line = p.node.Line
	}
	b.links = append(b.links, func() error {
		for _, d := range []struct {
			ref string
			dst *decider
		}{{names.pd, &h.pd}, {names.enc, &h.enc}} {
			if d.ref == "" {
				continue
			}
			x, ok := b.byName[d.ref].(decider)
			if !ok {
				return &ConfigError{File: b.file, Line: line, Key: "deciders", Value: d.ref, Msg: p.where + ": not a decider plugin declared under plugins"}
			}
			*d.dst = x
		}
		h.decode, h.prefill, h.encode = b.profiles[names.decode], b.profiles[names.prefill], b.profiles[names.encode]
		if h.decode == nil {
			return &ConfigError{File: b.file, Line: line, Key: "profiles.decode", Value: names.decode, Msg: p.where + ": no scheduling profile of that name"}
		}
		return nil
	})
	return h, p.done()
}

func buildLegacyPD(b *builder, _ string, p *params) (any, error) {
	h := &legacyPDHandler{}
	dn, pn, dec := "decode", "prefill", ""
	p.String("decodeProfile", &dn)
	p.String("prefillProfile", &pn)
	p.Int("threshold", &h.threshold)
	hb := 0
	p.Int("hashBlockSize", &hb)
	p.String("deciderPluginName", &dec)
	p.Ignore("prefixPluginType", "prefixPluginName", "primaryPort")
	b.prefixUsers = append(b.prefixUsers, prefixUser{"", func(src prefixSource) { h.src = src }, true})
	line := 0
	if p.node != nil {
		line = p.node.Line
	}
	if dec != "" {
		// HEAD form: pd-profile-handler is an alias of the disagg handler
		// with a named decider.
		d := &disaggHandler{}
		b.links = append(b.links, func() error {
			x, ok := b.byName[dec].(decider)
			if !ok {
				return &ConfigError{File: b.file, Line: line, Key: "deciderPluginName", Value: dec, Msg: p.where + ": not a decider plugin declared under plugins"}
			}
			d.pd, d.decode, d.prefill = x, b.profiles[dn], b.profiles[pn]
			if d.decode == nil {
				return &ConfigError{File: b.file, Line: line, Key: "decodeProfile", Value: dn, Msg: p.where + ": no scheduling profile of that name"}
			}
			return nil
		})
		return d, p.done()
	}
	b.links = append(b.links, func() error {
		h.decode, h.prefill = b.profiles[dn], b.profiles[pn]
		if h.decode == nil {
			return &ConfigError{File: b.file, Line: line, Key: "decodeProfile", Value: dn, Msg: p.where + ": no scheduling profile of that name"}
		}
		return nil
	})
	return h, p.done()
}

func buildUtilization(p *params) (*utilizationDetector, error) {
	d := &utilizationDetector{queue: 5, kv: 0.8, stale: 200 * time.Millisecond}
	p.Int("queueDepthThreshold", &d.queue)
	p.Float("kvCacheUtilThreshold", &d.kv)
	p.Duration("metricsStalenessThreshold", &d.stale)
	p.Float("headroom", &d.headroom)
	switch {
	case d.queue <= 0:
		p.fail(p.node, "parameters.queueDepthThreshold", fmt.Sprint(d.queue), "must be > 0")
	case d.kv <= 0 || d.kv > 1:
		p.fail(p.node, "parameters.kvCacheUtilThreshold", ftoa(d.kv), "must be in (0, 1]")
	case d.stale <= 0:
		p.fail(p.node, "parameters.metricsStalenessThreshold", d.stale.String(), "must be > 0")
	case d.headroom < 0:
		p.fail(p.node, "parameters.headroom", ftoa(d.headroom), "must be >= 0")
	}
	return d, p.done()
}
