package router

import (
	"fmt"
	"math"
	"testing"
	"time"

	"blis/workload"
)

// bareEPP is an EPP with n endpoints and no plugins, for driving single
// plugins by hand.
func bareEPP(t testing.TB, n int) *EPP {
	t.Helper()
	e := &EPP{}
	if err := e.Start(testEndpoints(n), 1); err != nil {
		t.Fatal(err)
	}
	e.c.req = &Request{ID: 1, PromptLen: 100}
	return e
}

func approxEq(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func checkScores(t *testing.T, name string, got, want []float64) {
	t.Helper()
	for i := range want {
		if !approxEq(got[i], want[i]) {
			t.Errorf("%s: scores %v, want %v", name, got, want)
			return
		}
	}
}

func TestScorerArithmetic(t *testing.T) {
	type ep struct {
		waiting, running int
		kv               float64
		reqs, tokens     int64
	}
	tests := []struct {
		name string
		s    scorerPlugin
		eps  []ep
		want []float64
	}{
		// (maxQ − q)/(maxQ − minQ)
		{"queue", queueScorer{}, []ep{{waiting: 0}, {waiting: 5}, {waiting: 10}}, []float64{1, 0.5, 0}},
		{"queue all equal", queueScorer{}, []ep{{waiting: 3}, {waiting: 3}}, []float64{1, 1}},
		{"running", queueScorer{running: true}, []ep{{running: 2}, {running: 6}}, []float64{1, 0}},
		// 1 − usage
		{"kv", kvUtilScorer{}, []ep{{kv: 0}, {kv: 0.25}, {kv: 1}}, []float64{1, 0.75, 0}},
		// 0.5 when empty, 0.5·(1 − min(q,T)/T)
		{"load-aware", loadAwareScorer{threshold: 128}, []ep{{waiting: 0}, {waiting: 64}, {waiting: 500}}, []float64{0.5, 0.25, 0}},
		// 1 − min(1, tokens/T)
		{"token-load", tokenLoadScorer{threshold: 1000}, []ep{{tokens: 0}, {tokens: 250}, {tokens: 5000}}, []float64{1, 0.75, 0}},
		// idle (≤ 0) → 1; else (max − n)/max · maxBusy
		{"active-request", activeRequestScorer{idle: 0, maxBusy: 1}, []ep{{reqs: 0}, {reqs: 2}, {reqs: 4}}, []float64{1, 0.5, 0}},
		{"active-request idle 2, busy .5", activeRequestScorer{idle: 2, maxBusy: 0.5}, []ep{{reqs: 2}, {reqs: 3}, {reqs: 6}}, []float64{1, 0.25, 0}},
		{"lora (no LoRA: flat)", constScorer{0}, []ep{{}, {waiting: 9}}, []float64{0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := bareEPP(t, len(tc.eps))
			ids := make([]int, len(tc.eps))
			for i, x := range tc.eps {
				ids[i] = i
				e.st[i].m = Metrics{Waiting: x.waiting, Running: x.running, KVUsage: x.kv}
				e.st[i].reqs, e.st[i].tokens = x.reqs, x.tokens
			}
			out := make([]float64, len(ids))
			tc.s.score(&e.c, ids, out)
			checkScores(t, tc.name, out, tc.want)
		})
	}
}

func TestPrefixScoreAndContextLength(t *testing.T) {
	e := bareEPP(t, 3)
	src := &approxProducer{}
	src.info = prefixInfo{match: []int{0, 2, 4}, total: 4, blockSize: 16}
	out := make([]float64, 3)
	(&prefixScorer{src: src}).score(&e.c, []int{0, 1, 2}, out)
	checkScores(t, "prefix", out, []float64{0, 0.5, 1})

	// context-length-aware: range 0-1000 with 100 tokens:
	// 0.3 + 0.7·(0.7/(1+0.1) + 0.3·0.9); 2000-4000: 0.3/(1+1.9); unlabelled 0.5.
	e.eps[0].Labels = map[string]string{"llm-d.ai/context-length-range": "0-1000"}
	e.eps[1].Labels = map[string]string{"llm-d.ai/context-length-range": "2000-4000"}
	cl := &contextLength{label: "llm-d.ai/context-length-range", filtering: true}
	cl.score(&e.c, []int{0, 1, 2}, out)
	checkScores(t, "context-length", out, []float64{0.3 + 0.7*(0.7/1.1+0.3*0.9), 0.3 / 2.9, 0.5})
	if got := cl.filter(&e.c, []int{0, 1, 2}); len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("context-length filter kept %v, want [0 2]", got)
	}
}

func TestNoHitLRU(t *testing.T) {
	e := bareEPP(t, 4)
	src := &approxProducer{}
	src.info = prefixInfo{match: make([]int, 4), total: 3}
	s := &noHitLRUScorer{src: src, size: 1024}
	s.start(e)
	out := make([]float64, 4)
	ids := []int{0, 1, 2, 3}
	// cold, nobody used: 1 − i/(n−1) in candidate order
	s.score(&e.c, ids, out)
	checkScores(t, "cold fresh", out, []float64{1, 2.0 / 3, 1.0 / 3, 0})
	s.preRequest(&e.c, 0, -1) // 0 used
	s.score(&e.c, ids, out)
	checkScores(t, "0 used", out, []float64{0, 1, 2.0 / 3, 1.0 / 3})
	s.preRequest(&e.c, 2, -1) // LRU order: 0 (oldest), 2
	s.score(&e.c, ids, out)
	// never used: 1, 3 → 1, 2/3; used: 0 at rank 2+0 → 1/3, 2 at rank 2+1 → 0
	checkScores(t, "0,2 used", out, []float64{1.0 / 3, 1, 0, 2.0 / 3})
	// warm request: 0.5 everywhere and no LRU update
	src.info.match[1] = 1
	s.score(&e.c, ids, out)
	checkScores(t, "warm", out, []float64{0.5, 0.5, 0.5, 0.5})
}

func TestSessionAffinity(t *testing.T) {
	e := bareEPP(t, 3)
	s := &sessionAffinityScorer{}
	s.start(e)
	r := &Request{ID: 1, Session: 7}
	s.complete(e, 0, &routed{req: r, decode: 2})
	e.c.req = &Request{ID: 2, Session: 7}
	out := make([]float64, 3)
	s.score(&e.c, []int{0, 1, 2}, out)
	checkScores(t, "session", out, []float64{0, 0, 1})
	e.c.req = &Request{ID: 3, Session: 8}
	s.score(&e.c, []int{0, 1, 2}, out)
	checkScores(t, "other session", out, []float64{0, 0, 0})
}

func TestFilters(t *testing.T) {
	e := bareEPP(t, 5)
	roles := []string{"decode", "prefill", "both", "", "encode"}
	for i, r := range roles {
		if r != "" {
			e.eps[i].Labels = map[string]string{roleLabel: r, "tier": "gold"}
		}
	}
	e.eps[4].Labels["tier"] = "silver"
	all := []int{0, 1, 2, 3, 4}
	same := func(a []int, b ...int) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	dec, _ := registry["decode-filter"].build(nil, "", newParams("", "", nil))
	pre, _ := registry["prefill-filter"].build(nil, "", newParams("", "", nil))
	enc, _ := registry["encode-filter"].build(nil, "", newParams("", "", nil))
	tests := []struct {
		name string
		f    filterPlugin
		want []int
	}{
		{"decode keeps decode, both, unlabelled", dec.(filterPlugin), []int{0, 2, 3}},
		{"prefill keeps prefill, both", pre.(filterPlugin), []int{1, 2}},
		{"encode", enc.(filterPlugin), []int{4}},
		{"selector In", &labelSelectorFilter{exprs: []selectorReq{{key: "tier", op: "In", values: []string{"gold"}}}}, []int{0, 1, 2}},
		{"selector NotIn", &labelSelectorFilter{exprs: []selectorReq{{key: "tier", op: "NotIn", values: []string{"gold"}}}}, []int{3, 4}},
		{"selector matchLabels", &labelSelectorFilter{match: map[string]string{"tier": "silver"}}, []int{4}},
		{"selector DoesNotExist", &labelSelectorFilter{exprs: []selectorReq{{key: "tier", op: "DoesNotExist"}}}, []int{3}},
	}
	for _, tc := range tests {
		if got := tc.f.filter(&e.c, all); !same(got, tc.want...) {
			t.Errorf("%s: kept %v, want %v", tc.name, got, tc.want)
		}
	}

	// GIE v0.5 queue / KV filters: waiting 0,3,10,4,128; kv .1,.5,.9,.2,.3
	w := []int{0, 3, 10, 4, 200}
	kv := []float64{0.1, 0.5, 0.9, 0.2, 0.3}
	for i := range w {
		e.st[i].m = Metrics{Waiting: w[i], KVUsage: kv[i]}
	}
	if got := (&lowQueueFilter{threshold: 128}).filter(&e.c, all); !same(got, 0, 1, 2, 3) {
		t.Errorf("low-queue kept %v", got)
	}
	// least-queue: min 0, max 200, 0 + 200/5 = 40 → waiting ≤ 40
	if got := (leastQueueFilter{}).filter(&e.c, all); !same(got, 0, 1, 2, 3) {
		t.Errorf("least-queue kept %v", got)
	}
	// least-kv: .1 + .8/5 = .26 → .1, .2
	if got := (leastKVFilter{}).filter(&e.c, all); !same(got, 0, 3) {
		t.Errorf("least-kv kept %v", got)
	}
	// GIE default-plugins tree: low-queue ok → lora (none) → least-queue(on low-queue's set) → least-kv
	tree := &decisionTree{current: &lowQueueFilter{threshold: 128},
		onSuccess: &decisionTree{current: loraAffinityFilter{},
			onEither: &decisionTree{current: leastQueueFilter{},
				onEither: &decisionTree{current: leastKVFilter{}}}}}
	// low-queue → {0,1,2,3}; lora → {} → least-queue on {0,1,2,3}: 0+10/4=2 → {0};
	// least-kv on {0} → {0}
	if got := tree.filter(&e.c, all); !same(got, 0) {
		t.Errorf("decision tree kept %v, want [0]", got)
	}
}

func TestPrefixAffinityFilter(t *testing.T) {
	e := bareEPP(t, 3)
	src := &approxProducer{}
	src.info = prefixInfo{match: []int{9, 10, 1}, total: 10}
	f := &prefixAffinityFilter{src: src, threshold: 0.8, peakPrefill: 15928}
	all := []int{0, 1, 2}
	if got := f.filter(&e.c, all); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("sticky set %v, want [0 1]", got)
	}
	// token gate: sticky best 50000 tokens vs other 0 → break when > 40000
	e.st[0].tokens, e.st[1].tokens = 60000, 50000
	f.maxTokensInFlight = 40000
	if got := f.filter(&e.c, all); len(got) != 3 {
		t.Fatalf("token gate kept %v, want all", got)
	}
	// TTFT gate: 50000/15928 s = 3139ms gap > 3000ms → break
	f.maxTokensInFlight, f.maxTTFTPenaltyMs = 0, 3000
	if got := f.filter(&e.c, all); len(got) != 3 {
		t.Fatalf("ttft gate kept %v, want all", got)
	}
	f.maxTTFTPenaltyMs = 4000
	if got := f.filter(&e.c, all); len(got) != 2 {
		t.Fatalf("within penalty kept %v, want sticky", got)
	}
	src.info.match = []int{1, 1, 1}
	if got := f.filter(&e.c, all); len(got) != 3 {
		t.Fatalf("no sticky kept %v, want all", got)
	}
}

func TestDetectors(t *testing.T) {
	e := bareEPP(t, 2)
	d := &utilizationDetector{queue: 5, kv: 0.8, stale: 200 * time.Millisecond}
	e.c.now = time.Second
	if s := d.saturation(&e.c); s != 1 {
		t.Fatalf("never scraped: saturation %v, want 1", s)
	}
	for i, m := range []Metrics{{Waiting: 5, KVUsage: 0.4}, {Waiting: 1, KVUsage: 0.4}} {
		e.st[i].m, e.st[i].scraped, e.st[i].scrapedAt = m, true, 900*time.Millisecond
	}
	// mean(max(5/5, .5), max(1/5, .5)) = 0.75
	if s := d.saturation(&e.c); !approxEq(s, 0.75) {
		t.Fatalf("saturation %v, want 0.75", s)
	}
	if got := d.filter(&e.c, []int{0, 1}); len(got) != 1 || got[0] != 1 {
		t.Fatalf("filter kept %v, want [1]", got)
	}
	e.c.now = 1200 * time.Millisecond // 300ms old: stale → saturated
	if s := d.saturation(&e.c); s != 1 {
		t.Fatalf("stale saturation %v, want 1", s)
	}
	c := &concurrencyDetector{maxReq: 4}
	e.st[0].reqs, e.st[1].reqs = 4, 2
	if s := c.saturation(&e.c); !approxEq(s, 0.75) {
		t.Fatalf("concurrency saturation %v", s)
	}
	if got := c.filter(&e.c, []int{0, 1}); len(got) != 1 || got[0] != 1 {
		t.Fatalf("concurrency filter kept %v", got)
	}
	// probabilistic admitter: sat 0.75 → p = min(.75^5·300, 1) = 1 for sheddable
	e.c.req = &Request{Priority: -1}
	a := &probabilisticAdmitter{q: 5, kv: 0.8, power: 5, k: 300}
	e.st[0].scraped, e.st[1].scraped = true, true
	if _, ok := a.admit(&e.c); ok {
		t.Fatal("saturated sheddable request admitted")
	}
	e.c.req = &Request{Priority: 0}
	if _, ok := a.admit(&e.c); !ok {
		t.Fatal("non-sheddable request rejected")
	}
}

func TestPickers(t *testing.T) {
	e := bareEPP(t, 4)
	ids := []int{0, 1, 2, 3}
	if i := (maxScorePicker{}).pick(&e.c, ids, []float64{0.1, 0.9, 0.3, 0.2}); i != 1 {
		t.Fatalf("max-score picked %d", i)
	}
	// ties: both tied endpoints are picked, deterministically per seed
	count := map[int]int{}
	for range 1000 {
		count[(maxScorePicker{}).pick(&e.c, ids, []float64{0.5, 0.9, 0.9, 0.1})]++
	}
	if count[1]+count[2] != 1000 || count[1] < 400 || count[2] < 400 {
		t.Fatalf("tie-break counts %v", count)
	}
	count = map[int]int{}
	for range 1000 {
		count[(weightedRandomPicker{}).pick(&e.c, ids, []float64{0, 1, 3, 0})]++
	}
	if count[0] != 0 || count[3] != 0 || count[2] < 650 || count[2] > 850 {
		t.Fatalf("weighted-random counts %v (want ~250/750 on 1,2)", count)
	}
	count = map[int]int{}
	for range 400 {
		count[(weightedRandomPicker{}).pick(&e.c, ids, []float64{0, 0, 0, 0})]++
	}
	if len(count) != 4 {
		t.Fatalf("all-zero weighted-random should fall back to uniform: %v", count)
	}
}

func TestPrecisePropagationDelay(t *testing.T) {
	e := bareEPP(t, 2)
	p := &preciseProducer{blockSize: 16, delay: 5 * time.Millisecond}
	p.start(e)
	prompt := []workload.Segment{{ID: 1, Len: 64}}
	e.c.req = &Request{ID: 1, Prompt: prompt, PromptLen: 64}
	hs := promptHashes(nil, e.c.req, 16, 0)
	for _, h := range hs[:3] {
		p.blockEvent(10*time.Millisecond, 1, h, true)
	}
	e.c.now = 12 * time.Millisecond
	p.produce(&e.c)
	if p.info.match[1] != 0 {
		t.Fatalf("index saw the blocks before the propagation delay")
	}
	e.c.now = 15 * time.Millisecond
	p.produce(&e.c)
	if p.info.match[1] != 3 || p.info.total != 4 {
		t.Fatalf("match %d of %d, want 3 of 4", p.info.match[1], p.info.total)
	}
	p.blockEvent(20*time.Millisecond, 1, hs[0], false) // first block gone: no prefix
	e.c.now = 30 * time.Millisecond
	p.produce(&e.c)
	if p.info.match[1] != 0 {
		t.Fatalf("after removing block 0, match %d, want 0", p.info.match[1])
	}
}

func TestApproxIndexLRU(t *testing.T) {
	x := newApproxIndex(2)
	x.add([]uint64{1, 2, 3}, 0, 3)
	x.add([]uint64{1, 2}, 1, 3)
	counts := make([]int, 2)
	x.match([]uint64{1, 2, 3, 4}, counts)
	if counts[0] != 3 || counts[1] != 2 {
		t.Fatalf("counts %v, want [3 2]", counts)
	}
	x.add([]uint64{9}, 0, 3) // evicts 1 from endpoint 0 (least recent)
	x.match([]uint64{1, 2, 3}, counts)
	if counts[0] != 2 || counts[1] != 2 {
		t.Fatalf("after eviction counts %v, want [2 2] (greedy walk: 0 holds 2,3)", counts)
	}
}

func TestPreciseSpeculativeIndexing(t *testing.T) {
	e := bareEPP(t, 2)
	p := &preciseProducer{blockSize: 16, delay: 5 * time.Millisecond, specTTL: 2 * time.Second}
	p.start(e)
	e.c.req = &Request{ID: 1, Prompt: []workload.Segment{{ID: 1, Len: 64}}, PromptLen: 64}
	e.c.now = 0
	p.produce(&e.c)
	p.preRequest(&e.c, 1, -1)
	e.c.now = time.Second
	p.produce(&e.c)
	if p.info.match[1] != 4 {
		t.Fatalf("speculative entries not matched: %d", p.info.match[1])
	}
	e.c.now = 2 * time.Second
	p.produce(&e.c)
	if p.info.match[1] != 0 {
		t.Fatalf("speculative entries outlived their TTL: %d", p.info.match[1])
	}
}

// no-hit-lru-scorer's coldness belongs to the request it scored (llm-d
// keeps it in per-request plugin state): a request whose profiles never
// ran the scorer — here a short prompt the decider keeps aggregated, with
// the scorer only in the prefill profile — leaves the LRU alone even when
// the request before it was cold.
func TestNoHitLRUColdnessIsPerRequest(t *testing.T) {
	c, err := Load([]byte(`kind: EndpointPickerConfig
plugins:
- type: disagg-profile-handler
  parameters:
    deciders:
      prefill: prefix-based-pd-decider
- type: prefix-based-pd-decider
  parameters:
    nonCachedTokens: 100
- type: decode-filter
- type: prefill-filter
- type: no-hit-lru-scorer
- type: max-score-picker
schedulingProfiles:
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: max-score-picker
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: no-hit-lru-scorer
  - pluginRef: max-score-picker
`), "nohit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.New()
	if err != nil {
		t.Fatal(err)
	}
	eps := testEndpoints(4)
	eps[0].Role, eps[1].Role, eps[2].Role, eps[3].Role = RolePrefill, RolePrefill, RoleDecode, RoleDecode
	e.Start(eps, 3)
	var s *noHitLRUScorer
	for _, p := range e.pre {
		if x, ok := p.(*noHitLRUScorer); ok {
			s = x
		}
	}
	if s == nil {
		t.Fatal("no no-hit-lru-scorer among the PreRequest hooks")
	}
	long := &Request{ID: 1, PromptLen: 200, Prompt: prompt(1, 200, 0)}
	e.Submit(0, long)
	if as := e.Ready(0); len(as) != 1 || as[0].Prefill < 0 {
		t.Fatalf("long cold prompt not disaggregated: %+v", as)
	}
	after := append([]int(nil), s.order...)
	short := &Request{ID: 2, PromptLen: 50, Prompt: prompt(2, 50, 0)}
	e.Submit(time.Millisecond, short)
	if as := e.Ready(time.Millisecond); len(as) != 1 || as[0].Prefill >= 0 {
		t.Fatalf("short prompt disaggregated: %+v", as)
	}
	if fmt.Sprint(s.order) != fmt.Sprint(after) {
		t.Fatalf("LRU moved by a request the scorer never scored: %v, was %v", s.order, after)
	}
}
