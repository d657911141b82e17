// Package router picks the replica (endpoint) each request goes to, as
// llm-d's inference scheduler (the EPP) does: a profile handler, filters,
// weighted scorers and a picker, fed by data producers (prefix indexes,
// in-flight load) and by metrics scraped from the engines, behind flow
// control that holds requests at the gateway while every endpoint is
// saturated. Built-in shortcuts cover the routers people compare llm-d
// with (round-robin, random, least-requests, a Kubernetes Service).
//
// The cluster loop owns the clock; the router never sees engines, only
// what a real EPP sees: endpoint descriptions, scraped metrics, KV events
// and the requests it routed.
package router

import (
	"time"

	"blis/workload"
)

// Role is an endpoint's llm-d role label (llm-d.ai/role).
type Role uint8

const (
	RoleBoth    Role = iota // serves prefill and decode (aggregated; the label "both" or none)
	RolePrefill             // "prefill"
	RoleDecode              // "decode"
)

// Endpoint describes one model server (one replica, all its DP ranks
// behind one address) the router may send to.
type Endpoint struct {
	Name   string // "<pool>-<i>", unique in the run
	Pool   string // the pool (model-server deployment) it belongs to
	Role   Role
	Labels map[string]string // pod labels; llm-d.ai/role is set from Role
	// BlockSize is the engine's KV block size in tokens (what vLLM reports
	// in vllm:cache_config_info, and the granularity of its KV events).
	BlockSize int
	// KVBlocks and MaxNumSeqs are the engine's capacity (for saturation
	// detection and scorers that normalise by capacity).
	KVBlocks   int
	MaxNumSeqs int
}

// Metrics is what the router scrapes from an endpoint's /metrics
// (vllm:num_requests_waiting, vllm:num_requests_running,
// vllm:kv_cache_usage_perc), summed over its DP ranks.
type Metrics struct {
	Waiting, Running int
	KVUsage          float64 // 0..1
}

// Request is what the router sees of a request. The loop owns it: it stays
// valid and unchanged from Submit until its Assignment comes back from
// Ready, and the router must not keep it after Finished.
type Request struct {
	ID        int64
	Prompt    []workload.Segment // token identity (engine.PromptBlockHashes names its blocks)
	PromptLen int
	MaxTokens int
	Session   uint64 // multi-turn session (0: none)
	Priority  int    // flow-control priority; < 0 is sheddable
	Handle    uint64 // the loop's own; the router never reads it
}

// Assignment is the router's decision for one submitted request.
type Assignment struct {
	Req      *Request
	Endpoint int // index into the endpoints given to Start; −1 when rejected
	// Prefill is the endpoint chosen to run the prefill of a
	// disaggregated request (the cluster loop runs it there with one output
	// token, moves its KV to Endpoint over the fabric, and decodes on
	// Endpoint), −1 when the request is not disaggregated.
	Prefill  int
	Rejected bool
	Reason   string // why rejected (shed by an admitter, flow-control timeout, no endpoint)
}

// Router is one routing policy. The loop calls Start once, then, in
// simulated time order: Submit for each request reaching the gateway,
// Scrape every ScrapeInterval for every endpoint, BlockStored and
// BlockRemoved for the engines' KV events (only when KVEvents is true), and
// Finished when a routed request's response ends; after each of those
// calls, and at Wake, it calls Ready and acts on the assignments.
type Router interface {
	Start(eps []Endpoint, seed int64) error
	Submit(now time.Duration, r *Request)
	// Ready returns the decisions made since the last call, in decision
	// order. The slice stays unchanged until the next call, which reuses
	// it: the calls the loop makes while acting on it do not touch it.
	Ready(now time.Duration) []Assignment
	Finished(now time.Duration, r *Request, endpoint int)
	// ScrapeInterval is how often the loop scrapes every endpoint's
	// metrics (0: the router reads no metrics).
	ScrapeInterval() time.Duration
	Scrape(now time.Duration, endpoint int, m Metrics)
	// KVEvents reports whether the router consumes the engines' KV events
	// (a precise prefix index); when false the loop does not collect them.
	KVEvents() bool
	BlockStored(now time.Duration, endpoint int, hash uint64)
	BlockRemoved(now time.Duration, endpoint int, hash uint64)
	// Wake is the next time the router needs Ready called with nothing
	// else happening (a flow-control timeout); math.MaxInt64 when none.
	Wake() time.Duration
}
