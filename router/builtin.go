package router

import (
	"errors"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
)

// builtinConfigs are the llm-d configs behind the named routers, verbatim
// from llm-d/llm-d-inference-scheduler @ 520af478 (Apache-2.0).
var builtinConfigs = map[string]string{
	// deploy/config/epp-estimate-prefix-cache-config.yaml
	"prefix-aware": `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: single-profile-handler
- type: decode-filter
- type: prefix-cache-scorer
- type: load-aware-scorer
- type: max-score-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: decode-filter
  - pluginRef: prefix-cache-scorer
    weight: 1.0
  - pluginRef: load-aware-scorer
    weight: 1.0
  - pluginRef: max-score-picker
`,
	// deploy/config/epp-config.yaml
	"llm-d": `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefix-cache-scorer
- type: decode-filter
- type: max-score-picker
- type: single-profile-handler
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: decode-filter
  - pluginRef: max-score-picker
  - pluginRef: prefix-cache-scorer
    weight: 2
`,
}

var builtinNames = []string{"round-robin", "random", "least-requests", "k8s-service", "prefix-aware", "llm-d"}

// Names lists the built-in routers Named accepts.
func Names() []string { return append([]string(nil), builtinNames...) }

// Named returns a fresh built-in router:
//
//   - round-robin: endpoints in turn.
//   - random: a uniformly random endpoint per request.
//   - least-requests: fewest requests in flight as counted by the router
//     (ties broken at random).
//   - k8s-service: a Kubernetes Service in front of the pods as
//     `vllm bench serve` drives it; see NewK8sService.
//   - prefix-aware: llm-d's epp-estimate-prefix-cache-config (approximate
//     prefix-cache scorer + load-aware scorer, weight 1 each).
//   - llm-d: the scheduler's default deploy/config/epp-config.yaml
//     (decode-filter, prefix-cache-scorer weight 2, max-score-picker).
func Named(name string) (Router, error) {
	switch name {
	case "round-robin":
		return &simple{kind: rrKind}, nil
	case "random":
		return &simple{kind: randomKind}, nil
	case "least-requests":
		return &simple{kind: leastKind}, nil
	case "k8s-service":
		return NewK8sService(VLLMKeepAlive, false), nil
	}
	if y, ok := builtinConfigs[name]; ok {
		c, err := Load([]byte(y), "builtin:"+name)
		if err != nil {
			return nil, err
		}
		return c.New()
	}
	return nil, &ConfigError{Key: "router", Value: name, Msg: "unknown router; built-ins: " + strings.Join(builtinNames, ", ") + " (or a path to an llm-d EndpointPickerConfig)"}
}

// Open returns the built-in router called spec, or else the router of the
// llm-d config in the file at path spec (see Load).
func Open(spec string) (Router, error) {
	if slices.Contains(builtinNames, spec) {
		return Named(spec)
	}
	data, err := os.ReadFile(spec)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &ConfigError{Key: "router", Value: spec, Msg: "neither a built-in router (" + strings.Join(builtinNames, ", ") + ") nor a readable config file"}
		}
		return nil, err
	}
	c, err := Load(data, spec)
	if err != nil {
		return nil, err
	}
	return c.New()
}

// BuiltinConfig returns the llm-d config text behind a config-backed
// built-in (prefix-aware, llm-d).
func BuiltinConfig(name string) (string, bool) {
	y, ok := builtinConfigs[name]
	return y, ok
}

type simpleKind uint8

const (
	rrKind simpleKind = iota
	randomKind
	leastKind
	k8sKind
)

// simple is the family of routers without scheduling profiles.
type simple struct {
	kind     simpleKind
	n        int
	next     int
	rng      *rand.Rand
	inflight []int
	out      []Assignment
	handed   []Assignment // the slice Ready last returned (see handOver)
	// k8s-service connection pool
	idle       []conn
	keepAlive  time.Duration
	forceClose bool
}

type conn struct {
	ep    int
	since time.Duration
}

// VLLMKeepAlive is how long an idle keep-alive connection to a vLLM pod
// survives: `vllm bench serve` keeps idle connections 60s
// (aiohttp.TCPConnector keepalive_timeout=60 in vllm/benchmarks/serve.py),
// but vLLM's uvicorn server closes them after VLLM_HTTP_TIMEOUT_KEEP_ALIVE,
// 5s by default, and the shorter wins.
const VLLMKeepAlive = 5 * time.Second

// NewK8sService models a Kubernetes Service (kube-proxy, iptables or
// IPVS-rr per connection; both spread connections uniformly) in front of
// the pods, driven by `vllm bench serve`. kube-proxy balances connections,
// not requests: a new TCP connection goes to a uniformly random backend
// and every request on it goes there too. vLLM's benchmark client
// (aiohttp ClientSession with TCPConnector(limit=max_concurrency,
// force_close=False)) reuses an idle keep-alive connection when one is
// left: aiohttp's connector takes the most recently released one
// (BaseConnector._get pops the end of the per-host list), dropping those
// idle longer than keepAlive; otherwise it opens a new one. With
// forceClose (the --force-close-connections behaviour of later vLLM
// releases) every request opens a new connection, so each goes to a random
// pod.
func NewK8sService(keepAlive time.Duration, forceClose bool) Router {
	return &simple{kind: k8sKind, keepAlive: keepAlive, forceClose: forceClose}
}

func (s *simple) Start(eps []Endpoint, seed int64) error {
	s.n = len(eps)
	s.next = 0
	s.rng = rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	s.inflight = make([]int, len(eps))
	s.idle = s.idle[:0]
	s.out = s.out[:0]
	return nil
}

func (s *simple) Submit(now time.Duration, r *Request) {
	if s.n == 0 {
		s.out = append(s.out, Assignment{Req: r, Endpoint: -1, Prefill: -1, Rejected: true, Reason: "no endpoints"})
		return
	}
	ep := 0
	switch s.kind {
	case rrKind:
		ep = s.next
		s.next = (s.next + 1) % s.n
	case randomKind:
		ep = s.rng.IntN(s.n)
	case leastKind:
		best, ties := -1, 0
		for i, v := range s.inflight {
			switch {
			case best < 0 || v < s.inflight[best]:
				best, ties = i, 1
			case v == s.inflight[best]:
				ties++
				if s.rng.IntN(ties) == 0 {
					best = i
				}
			}
		}
		ep = best
	case k8sKind:
		ep = -1
		for len(s.idle) > 0 {
			c := s.idle[len(s.idle)-1]
			s.idle = s.idle[:len(s.idle)-1]
			if now-c.since <= s.keepAlive {
				ep = c.ep
				break
			}
		}
		if ep < 0 {
			ep = s.rng.IntN(s.n)
		}
	}
	s.inflight[ep]++
	s.out = append(s.out, Assignment{Req: r, Endpoint: ep, Prefill: -1})
}

func (s *simple) Ready(time.Duration) []Assignment { return handOver(&s.out, &s.handed) }

func (s *simple) Finished(now time.Duration, r *Request, ep int) {
	if ep < 0 || ep >= s.n {
		return
	}
	s.inflight[ep]--
	if s.kind == k8sKind && !s.forceClose {
		s.idle = append(s.idle, conn{ep: ep, since: now})
	}
}

func (s *simple) ScrapeInterval() time.Duration           { return 0 }
func (s *simple) Scrape(time.Duration, int, Metrics)      {}
func (s *simple) KVEvents() bool                          { return false }
func (s *simple) BlockStored(time.Duration, int, uint64)  {}
func (s *simple) BlockRemoved(time.Duration, int, uint64) {}
func (s *simple) Wake() time.Duration                     { return math.MaxInt64 }
