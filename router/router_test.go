package router

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"blis/workload"
)

// fakeCluster is a tiny stand-in for the cluster loop: each endpoint
// serves requests one after another for `service` each; the waiting queue
// is what is in flight beyond the one running.
type fakeCluster struct {
	r        Router
	n        int
	inflight []int
	ends     []fakeEnd
	got      []Assignment
	service  time.Duration
}

type fakeEnd struct {
	at  time.Duration
	req *Request
	ep  int
}

func newFake(t testing.TB, r Router, n int) *fakeCluster {
	if err := r.Start(testEndpoints(n), 42); err != nil {
		t.Fatal(err)
	}
	return &fakeCluster{r: r, n: n, inflight: make([]int, n), service: 100 * time.Millisecond}
}

func (f *fakeCluster) scrape(now time.Duration) {
	for i := 0; i < f.n; i++ {
		w := max(f.inflight[i]-1, 0)
		f.r.Scrape(now, i, Metrics{Waiting: w, Running: min(f.inflight[i], 1), KVUsage: math.Min(float64(f.inflight[i])/20, 1)})
	}
	f.collect(now)
}

func (f *fakeCluster) collect(now time.Duration) {
	for _, a := range f.r.Ready(now) {
		f.got = append(f.got, a)
		if !a.Rejected {
			f.inflight[a.Endpoint]++
			f.ends = append(f.ends, fakeEnd{at: now + time.Duration(f.inflight[a.Endpoint])*f.service, req: a.Req, ep: a.Endpoint})
		}
	}
}

// advance finishes everything due by now.
func (f *fakeCluster) advance(now time.Duration) {
	keep := f.ends[:0]
	for _, e := range f.ends {
		if e.at <= now {
			f.inflight[e.ep]--
			f.r.Finished(e.at, e.req, e.ep)
			f.collect(e.at)
		} else {
			keep = append(keep, e)
		}
	}
	f.ends = keep
}

func (f *fakeCluster) submit(now time.Duration, r *Request) Assignment {
	n := len(f.got)
	f.r.Submit(now, r)
	f.collect(now)
	if len(f.got) == n {
		return Assignment{Endpoint: -2}
	}
	return f.got[len(f.got)-1]
}

func prompt(prefix uint64, prefixLen int, suffix uint64) []workload.Segment {
	return []workload.Segment{{ID: prefix, Len: prefixLen}, {ID: suffix, Len: 64}}
}

func TestPrefixAwareKeepsPrefixesTogether(t *testing.T) {
	r, err := Named("prefix-aware")
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, r, 4)
	home := map[uint64]int{}
	now := time.Duration(0)
	for i := range 40 {
		now += 20 * time.Millisecond
		f.advance(now)
		f.scrape(now)
		group := uint64(i%4 + 1)
		a := f.submit(now, &Request{ID: int64(i), Prompt: prompt(group, 1024, uint64(1000+i)), PromptLen: 1088})
		if a.Rejected || a.Endpoint < 0 {
			t.Fatalf("request %d not routed: %+v", i, a)
		}
		if i < 4 {
			home[group] = a.Endpoint
			continue
		}
		if a.Endpoint != home[group] {
			t.Fatalf("request %d (prefix %d) went to %d, its prefix lives on %d", i, group, a.Endpoint, home[group])
		}
	}
}

func TestPrefixAwareWithoutSharingBalancesLoad(t *testing.T) {
	r, _ := Named("prefix-aware")
	f := newFake(t, r, 4)
	now := time.Duration(0)
	for i := range 40 {
		now += 10 * time.Millisecond
		f.advance(now)
		f.scrape(now)
		f.submit(now, &Request{ID: int64(i), Prompt: prompt(uint64(100+i), 1024, 7), PromptLen: 1088})
	}
	count := make([]int, 4)
	for _, a := range f.got {
		count[a.Endpoint]++
	}
	for i, c := range count {
		if c < 6 || c > 14 {
			t.Fatalf("endpoint %d got %d of 40 requests without shared prefixes: %v", i, c, count)
		}
	}
}

const flowConfig = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
featureGates: [flowControl]
plugins:
- type: queue-scorer
- type: utilization-detector
  parameters:
    queueDepthThreshold: 2
flowControl:
  defaultRequestTTL: 1s
  saturationDetector:
    pluginRef: utilization-detector
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
`

func TestFlowControlHoldsWhileSaturated(t *testing.T) {
	c, err := Load([]byte(flowConfig), "flow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.New()
	if err := r.Start(testEndpoints(2), 1); err != nil {
		t.Fatal(err)
	}
	sat := Metrics{Waiting: 4}
	r.Scrape(0, 0, sat)
	r.Scrape(0, 1, sat)
	r.Ready(0)
	r.Submit(10*time.Millisecond, &Request{ID: 1, PromptLen: 10})
	r.Submit(11*time.Millisecond, &Request{ID: 2, PromptLen: 10})
	if got := r.Ready(11 * time.Millisecond); len(got) != 0 {
		t.Fatalf("saturated pool released %v", got)
	}
	if w := r.Wake(); w != time.Second+10*time.Millisecond {
		t.Fatalf("Wake %v, want the first TTL expiry 1.01s", w)
	}
	// endpoint 1 drains: mean(max(4/2), 0) = 1 still saturated; both idle: 0.
	r.Scrape(50*time.Millisecond, 1, Metrics{})
	if got := r.Ready(50 * time.Millisecond); len(got) != 0 {
		t.Fatalf("pool at saturation 1.0 released %d", len(got))
	}
	r.Scrape(60*time.Millisecond, 0, Metrics{Waiting: 1})
	got := r.Ready(60 * time.Millisecond)
	if len(got) != 2 || got[0].Req.ID != 1 || got[1].Req.ID != 2 || got[0].Endpoint != 1 {
		t.Fatalf("release: %+v (want requests 1, 2 in order, 1 to the empty endpoint)", got)
	}
}

func TestFlowControlTTL(t *testing.T) {
	c, _ := Load([]byte(flowConfig), "flow.yaml")
	r, _ := c.New()
	r.Start(testEndpoints(1), 1)
	r.Scrape(0, 0, Metrics{Waiting: 10})
	r.Submit(0, &Request{ID: 1})
	r.Submit(500*time.Millisecond, &Request{ID: 2})
	if got := r.Ready(999 * time.Millisecond); len(got) != 0 {
		t.Fatalf("early: %v", got)
	}
	got := r.Ready(time.Second)
	if len(got) != 1 || !got[0].Rejected || got[0].Req.ID != 1 || !strings.Contains(got[0].Reason, "TTL") {
		t.Fatalf("at TTL: %+v", got)
	}
	if w := r.Wake(); w != 1500*time.Millisecond {
		t.Fatalf("next Wake %v", w)
	}
}

func TestLegacyAdmissionShedsSheddable(t *testing.T) {
	r, _ := Named("llm-d")
	r.Start(testEndpoints(2), 1)
	for i := range 2 {
		r.Scrape(0, i, Metrics{Waiting: 50})
	}
	r.Submit(0, &Request{ID: 1, Priority: -1})
	r.Submit(0, &Request{ID: 2, Priority: 0})
	got := r.Ready(0)
	if len(got) != 2 || !got[0].Rejected || got[1].Rejected {
		t.Fatalf("%+v", got)
	}
}

const pdConfig = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefill-filter
- type: decode-filter
- type: queue-scorer
- type: prefix-based-pd-decider
  parameters:
    nonCachedTokens: 256
- type: disagg-profile-handler
  parameters:
    deciders:
      prefill: prefix-based-pd-decider
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: queue-scorer
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: queue-scorer
`

func TestDisaggregation(t *testing.T) {
	c, err := Load([]byte(pdConfig), "pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.New()
	eps := testEndpoints(3)
	eps[0].Role, eps[1].Role, eps[2].Role = RolePrefill, RoleDecode, RoleDecode
	r.Start(eps, 1)
	r.Scrape(0, 1, Metrics{Waiting: 3})
	long := &Request{ID: 1, Prompt: prompt(5, 1024, 1), PromptLen: 1088}
	r.Submit(0, long)
	a := r.Ready(0)[0]
	if a.Endpoint != 2 || a.Prefill != 0 {
		t.Fatalf("long prompt: decode %d prefill %d, want 2 and 0", a.Endpoint, a.Prefill)
	}
	// the same prefix again: 1024 of 1088 cached on endpoint 2 → 64 < 256 → no P/D
	r.Submit(time.Millisecond, &Request{ID: 2, Prompt: prompt(5, 1024, 2), PromptLen: 1088})
	if a := r.Ready(time.Millisecond)[0]; a.Endpoint != 2 || a.Prefill != -1 {
		t.Fatalf("cached prompt: decode %d prefill %d, want 2 and -1", a.Endpoint, a.Prefill)
	}
	r.Submit(2*time.Millisecond, &Request{ID: 3, Prompt: prompt(6, 100, 2), PromptLen: 164})
	if a := r.Ready(2 * time.Millisecond)[0]; a.Prefill != -1 {
		t.Fatalf("short prompt disaggregated")
	}
}

func TestLegacyPDThreshold(t *testing.T) {
	cfg := strings.Replace(pdConfig, `- type: disagg-profile-handler
  parameters:
    deciders:
      prefill: prefix-based-pd-decider`, `- type: prefix-cache-scorer
- type: pd-profile-handler
  parameters:
    threshold: 500`, 1)
	c, err := Load([]byte(cfg), "pd-legacy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.New()
	eps := testEndpoints(2)
	eps[0].Role, eps[1].Role = RolePrefill, RoleDecode
	r.Start(eps, 1)
	r.Submit(0, &Request{ID: 1, Prompt: prompt(5, 1024, 1), PromptLen: 1088})
	r.Submit(0, &Request{ID: 2, Prompt: prompt(6, 300, 1), PromptLen: 364})
	got := r.Ready(0)
	if got[0].Prefill != 0 || got[1].Prefill != -1 {
		t.Fatalf("threshold 500: %+v", got)
	}
}

func TestDeterminism(t *testing.T) {
	for _, name := range Names() {
		run := func() []int {
			r, err := Named(name)
			if err != nil {
				t.Fatal(err)
			}
			f := newFake(t, r, 8)
			now := time.Duration(0)
			for i := range 200 {
				now += 7 * time.Millisecond
				f.advance(now)
				if i%7 == 0 {
					f.scrape(now)
				}
				f.submit(now, &Request{ID: int64(i), Prompt: prompt(uint64(i%5), 512, uint64(i)), PromptLen: 576, Session: uint64(i % 3)})
			}
			out := make([]int, len(f.got))
			for i, a := range f.got {
				out[i] = a.Endpoint
			}
			return out
		}
		a, b := run(), run()
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s: two runs with the same seed differ", name)
		}
	}
}

func TestK8sServiceConnectionReuse(t *testing.T) {
	r := NewK8sService(5*time.Second, false)
	r.Start(testEndpoints(8), 3)
	r.Submit(0, &Request{ID: 1})
	a := r.Ready(0)[0]
	r.Finished(time.Second, a.Req, a.Endpoint)
	// the released connection is reused: same pod
	r.Submit(2*time.Second, &Request{ID: 2})
	b := r.Ready(2 * time.Second)[0]
	if b.Endpoint != a.Endpoint {
		t.Fatalf("idle keep-alive connection not reused: %d then %d", a.Endpoint, b.Endpoint)
	}
	// two connections released: the most recent one is taken (LIFO)
	r.Submit(2*time.Second, &Request{ID: 3})
	c := r.Ready(2 * time.Second)[0]
	r.Finished(3*time.Second, b.Req, b.Endpoint)
	r.Finished(4*time.Second, c.Req, c.Endpoint)
	r.Submit(4*time.Second, &Request{ID: 4})
	if d := r.Ready(4 * time.Second)[0]; d.Endpoint != c.Endpoint {
		t.Fatalf("reused %d, want the most recently released %d", d.Endpoint, c.Endpoint)
	}
	// every pod gets connections over many fresh opens
	seen := map[int]bool{}
	fc := NewK8sService(5*time.Second, true)
	fc.Start(testEndpoints(8), 3)
	for i := range 200 {
		fc.Submit(0, &Request{ID: int64(i)})
		seen[fc.Ready(0)[0].Endpoint] = true
	}
	if len(seen) != 8 {
		t.Fatalf("force-close: pods reached %v", seen)
	}
}

func TestK8sServiceKeepAliveExpiry(t *testing.T) {
	r := NewK8sService(5*time.Second, false)
	r.Start(testEndpoints(64), 3)
	r.Submit(0, &Request{ID: 1})
	a := r.Ready(0)[0]
	r.Finished(time.Second, a.Req, a.Endpoint)
	same := 0
	for i := range 20 {
		rr := NewK8sService(5*time.Second, false)
		rr.Start(testEndpoints(64), int64(i))
		rr.Submit(0, &Request{ID: 1})
		x := rr.Ready(0)[0]
		rr.Finished(time.Second, x.Req, x.Endpoint)
		rr.Submit(7*time.Second, &Request{ID: 2}) // idle 6s > 5s: closed, new connection
		if rr.Ready(7 * time.Second)[0].Endpoint == x.Endpoint {
			same++
		}
	}
	if same > 5 {
		t.Fatalf("expired connections look reused (%d of 20 on the same pod)", same)
	}
}

func TestLeastRequestsAndRoundRobin(t *testing.T) {
	r, _ := Named("least-requests")
	r.Start(testEndpoints(3), 1)
	for i := range 3 {
		r.Submit(0, &Request{ID: int64(i)})
	}
	got := r.Ready(0)
	seen := map[int]bool{}
	for _, a := range got {
		seen[a.Endpoint] = true
	}
	if len(seen) != 3 {
		t.Fatalf("least-requests stacked requests: %+v", got)
	}
	r.Finished(1, got[1].Req, got[1].Endpoint)
	r.Submit(2, &Request{ID: 9})
	if a := r.Ready(2)[0]; a.Endpoint != got[1].Endpoint {
		t.Fatalf("least-requests chose %d, want the idle %d", a.Endpoint, got[1].Endpoint)
	}
	rr, _ := Named("round-robin")
	rr.Start(testEndpoints(3), 1)
	for i := range 6 {
		rr.Submit(0, &Request{ID: int64(i)})
	}
	for i, a := range rr.Ready(0) {
		if a.Endpoint != i%3 {
			t.Fatalf("round-robin order broken at %d: %d", i, a.Endpoint)
		}
	}
}

func TestNamed(t *testing.T) {
	for _, n := range Names() {
		r, err := Named(n)
		if err != nil || r == nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	_, err := Named("nope")
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "round-robin, random, least-requests, k8s-service, prefix-aware, llm-d") {
		t.Fatalf("unknown name error: %v", err)
	}
	r, _ := Named("llm-d")
	if r.ScrapeInterval() != 50*time.Millisecond || r.KVEvents() {
		t.Fatalf("llm-d: scrape %v kv %v", r.ScrapeInterval(), r.KVEvents())
	}
}

func TestOpen(t *testing.T) {
	if _, err := Open("round-robin"); err != nil {
		t.Fatal(err)
	}
	r, err := Open("testdata/configs/scheduler-HEAD/deploy_config_epp-precise-prefix-cache-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !r.KVEvents() {
		t.Fatal("precise prefix config does not ask for KV events")
	}
	_, err = Open("no/such/file.yaml")
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "neither a built-in router") {
		t.Fatalf("%v", err)
	}
}

// least-requests as an llm-d config: active-request-scorer's
// (max − n)/max is highest for the fewest in flight.
func TestLeastRequestsAsConfig(t *testing.T) {
	c, err := Load([]byte("kind: EndpointPickerConfig\nplugins:\n- type: active-request-scorer\n"), "lr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, _ := c.New()
	r.Start(testEndpoints(3), 1)
	var got []Assignment
	for i := range 3 {
		r.Submit(0, &Request{ID: int64(i)})
		got = append(got, r.Ready(0)...)
	}
	seen := map[int]bool{}
	for _, a := range got {
		seen[a.Endpoint] = true
	}
	if len(seen) != 3 {
		t.Fatalf("stacked: %+v", got)
	}
}

// The slice Ready returns stays as it was until the next Ready, even when
// the loop, acting on it, submits or finishes requests (a refused request's
// client sends its next one; a cancelled one is finished) and the router
// decides on those meanwhile.
func TestReadySliceSurvivesCallsUntilNextReady(t *testing.T) {
	for _, name := range Names() {
		r, err := Named(name)
		if err != nil {
			t.Fatal(err)
		}
		r.Start(testEndpoints(3), 7)
		reqs := make([]Request, 6)
		for i := range reqs {
			reqs[i] = Request{ID: int64(i), PromptLen: 64, MaxTokens: 8, Prompt: prompt(uint64(i+1), 32, uint64(100+i))}
		}
		for i := range 2 {
			r.Submit(0, &reqs[i])
		}
		as := r.Ready(0)
		before := append([]Assignment(nil), as...)
		if len(as) != 2 {
			t.Fatalf("%s: %d assignments, want 2", name, len(as))
		}
		// Acting on as[0]: it ends at once, and its client sends two more.
		r.Finished(time.Millisecond, as[0].Req, as[0].Endpoint)
		r.Submit(time.Millisecond, &reqs[2])
		r.Submit(time.Millisecond, &reqs[3])
		for i := range as {
			if as[i] != before[i] {
				t.Fatalf("%s: assignment %d changed under the loop: %+v, was %+v", name, i, as[i], before[i])
			}
		}
		next := r.Ready(time.Millisecond)
		if len(next) != 2 || next[0].Req != &reqs[2] || next[1].Req != &reqs[3] {
			t.Fatalf("%s: next Ready %+v, want requests 2 and 3", name, next)
		}
	}
}
