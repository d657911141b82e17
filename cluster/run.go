// Package cluster is the serving cluster and the loop that drives a run:
// it owns the simulated clock and the event queue, the endpoints (replicas
// of vLLM deployments, each with its data-parallel ranks), the router
// between them, the frontend that delivers responses, and the step pricing.
// The benchmark client (package client) is driven by the loop and sees the
// cluster only through client.Server; the loop never knows about lanes or
// sessions. README.md describes the loop and the client semantics.
package cluster

import (
	"errors"
	"time"

	"blis/catalog"
	"blis/client"
	"blis/engine"
	"blis/kernel"
	"blis/metrics"
	"blis/router"
	"blis/workload"
	"math"
)

// Mode is how the client bounds its load (client.Mode).
type Mode = client.Mode

const (
	PerRequest = client.PerRequest // vllm bench's --max-concurrency
	Lanes      = client.Lanes      // aiperf's agentic replay
)

// CacheBust is aiperf's --cache-bust target (client.CacheBust).
type CacheBust = client.CacheBust

const (
	CacheBustNone            = client.CacheBustNone
	CacheBustFirstTurnPrefix = client.CacheBustFirstTurnPrefix
	CacheBustSystemPrefix    = client.CacheBustSystemPrefix
)

// Failure is one kind of request failure (client.Failure).
type Failure = client.Failure

// Config is one run: the benchmark client against the serving cluster.
type Config struct {
	// Engine, Pricer, DataParallel and Lockstep describe one vLLM
	// deployment; with no Pools, the cluster is one replica of it.
	Engine engine.Config
	Pricer kernel.Pricer
	// DataParallel is --data-parallel-size: that many engines of
	// Engine's configuration behind vLLM's DP load balancer (0 or 1: one).
	// Lockstep makes them step together, as a MoE model's ranks do
	// (dp.go).
	DataParallel int
	Lockstep     bool
	// Pools are the model-server deployments behind the router, each with
	// its replicas (nil: one replica of Engine). Endpoints are numbered
	// pool by pool, replica by replica, in this order.
	Pools []Pool
	// Router routes requests across the endpoints (nil: only valid with
	// one endpoint, which gets every request).
	Router router.Router
	// Fabric is the network the replicas sit on: KV-cache transfers of
	// disaggregated requests (pd.go) cross it, and replicas are packed
	// onto its nodes pool by pool (cluster/endpoints.go). Nil: nodes of 8 GPUs, and
	// no disaggregated request can be served.
	Fabric *catalog.Fabric
	// Transfers moves the KV caches (nil: fabric.New(Fabric)). Tests set
	// their own.
	Transfers Transfers

	// MaxConcurrency is vllm bench's --max-concurrency: at most this many
	// requests in flight (0 = no cap); in Lanes mode, the number of lanes.
	MaxConcurrency int
	// NumWarmups is vllm bench's --num-warmups: copies of the first request
	// sent (under the same cap) before the timed phase, excluded from metrics.
	// PerRequest mode only.
	NumWarmups int
	// Seed salts request identities (output tokens) so runs with different
	// seeds do not share cache content by accident, and draws the lanes'
	// trajectory start turns.
	Seed int64

	Mode Mode
	// WarmupRequestsPerLane (Lanes) is aiperf's --warmup-requests-per-lane:
	// each lane's warm-up budget, its trajectory primer included; after the
	// primers the lanes replay with no delays. Every warm-up request asks for
	// one output token.
	WarmupRequestsPerLane int
	// TrajectoryStartMin and TrajectoryStartMax (Lanes) are aiperf's
	// --trajectory-start-{min,max}-ratio: each initial lane starts its
	// trajectory at a turn drawn in [min·n, max·n] of its n turns, primed by
	// a warm-up request carrying the whole history. Both 0 and no warm-up
	// budget: lanes start at turn 0 with no warm-up.
	TrajectoryStartMin, TrajectoryStartMax float64
	// TraceIdleGapCap is aiperf's --trace-idle-gap-cap-seconds: in Lanes,
	// when nothing of a lane's tree is in flight, its pending releases move
	// earlier so the next comes within this; in PerRequest mode every
	// session delay is capped at it. 0 = no cap.
	TraceIdleGapCap time.Duration
	// SystemIdleGapCap (aiperf --system-idle-gap-cap-seconds): when no
	// request is in flight or waiting, pending releases move earlier so the
	// next one comes within this; 0 = off.
	SystemIdleGapCap time.Duration
	CacheBust        CacheBust
	// BenchmarkDuration is aiperf's --benchmark-duration: no request is sent
	// after this much of the timed phase; 0 = no limit.
	BenchmarkDuration time.Duration
	// GracePeriod is aiperf's --benchmark-grace-period: after
	// BenchmarkDuration, responses finishing within it are recorded and the
	// rest are dropped; < 0 waits for every response.
	GracePeriod time.Duration
	// RequestTimeout cancels a timed request whose response is not complete
	// this long after it was sent, counting it failed (aiperf
	// --request-timeout-seconds; vllm bench's aiohttp timeout); 0 = none.
	RequestTimeout time.Duration
	// FrontendLatency is what the serving frontend adds to every request on
	// top of the engine, as the client sees it: HTTP, the API server's
	// request processing and tokenisation, the hop to the engine core, and
	// the way back (detokenisation, streaming). A client measures only the
	// sum of the two directions, so BLIS puts all of it on the response
	// path: every response reaches the client this long after the engine
	// finished it, the client's TTFT and E2E grow by it (TPOT and ITL do
	// not), and a closed-loop client sends its next request that much later.
	// 0 = none.
	FrontendLatency time.Duration
	// Reopen returns the workload from its start again; with a
	// BenchmarkDuration, Lanes wrap around the corpus with it (aiperf's
	// sequential sampler). Nil: each trajectory plays once.
	Reopen func() (workload.Source, error)

	// AfterStep, when set, is called after every completed step of every
	// engine (tests use it to check invariants). It must not keep the
	// engine pointer.
	AfterStep func(now time.Duration, e *engine.Engine)
	// Progress, when set, is called each time a timed request ends
	// (completed, rejected or timed out) with the count so far and the
	// simulated time since the timed phase began: a progress bar's feed.
	Progress func(done int64, now time.Duration)
}

// Pool is one model-server deployment: Replicas copies of one vLLM
// deployment (each with its DP ranks), with one role.
type Pool struct {
	Name         string
	Replicas     int
	Role         router.Role
	Labels       map[string]string
	Engine       engine.Config
	Pricer       kernel.Pricer
	DataParallel int
	Lockstep     bool
	// GPUs is how many GPUs one engine rank uses (tensor × pipeline
	// parallel; 0: one), for placing the pool on the fabric's nodes.
	GPUs int
	// KVBlockBytes is one KV block of the whole model on one rank, summed
	// over its GPUs' shards: a disaggregated request's KV transfer into
	// this pool moves this many bytes per block.
	KVBlockBytes float64
}

// ReplicaResult is one endpoint's share of the run.
type ReplicaResult struct {
	Name, Pool string
	Role       router.Role
	// Routed counts timed requests sent here (by the router, or to the
	// only endpoint); Completed those whose response completed here.
	Routed, Completed int64
	// Prefilled counts timed disaggregated requests whose prefill ran
	// here; Decoded those whose KV arrived here from a prefill endpoint.
	Prefilled, Decoded int64
	// KVBytesSent and KVBytesReceived are the KV bytes of those requests'
	// transfers (timed ones).
	KVBytesSent, KVBytesReceived int64
	Engine                       engine.Stats     // its ranks' counters, summed
	StepTime                     kernel.Breakdown // summed over its timed steps
	TimedSteps                   int64
	// PipelineBubble sums the time its timed batches waited for a busy
	// pipeline stage (--pipeline-parallel-size > 1).
	PipelineBubble time.Duration
}

// Result is what the run measured besides the per-request metrics: the
// client's counts (client.Result) and the servers'.
type Result struct {
	client.Result
	// Engine sums every engine's counters (maxima are the largest one's).
	Engine engine.Stats
	// StepTime sums the kernel's per-resource breakdown over the timed
	// phase's steps; TimedSteps counts them.
	StepTime   kernel.Breakdown
	TimedSteps int64
	// PipelineBubble sums ReplicaResult.PipelineBubble.
	PipelineBubble time.Duration
	// Replicas is each endpoint's share, in endpoint order (one entry for a
	// single replica).
	Replicas []ReplicaResult
	// Pools sums Replicas pool by pool and adds the pool's KV transfer
	// times (as received: a decode pool's).
	Pools []PoolResult
}

// PoolResult is one pool's share of the run: its replicas' disaggregation
// counters summed, and the transfers into it.
type PoolResult struct {
	Name                         string
	Role                         router.Role
	Replicas                     int
	Routed, Completed            int64
	Prefilled, Decoded           int64
	KVBytesSent, KVBytesReceived int64
	// Transfers counts timed KV transfers into the pool; TransferMean and
	// TransferP99 are their durations (start to last byte).
	Transfers                 int64
	TransferMean, TransferP99 time.Duration
}

// Loop event kinds (negative: the client's timers are ≥ 0).
const (
	evStepEnd = -1 - iota // an endpoint's step ends (Target: global rank, or −1 − endpoint for a lockstep group)
	evDeliver             // a finished response reaches the client (Target: handle − 1; Arg: its generation)
	evOffload             // an engine's KV offload transfer completes (Target: global rank)
)

const never = time.Duration(math.MaxInt64)

// ErrStalled means the engine had queued work but could form no batch and
// nothing else could change that: a modelling bug, never user input.
var ErrStalled = errors.New("cluster: engine stalled with queued work")

// Run replays src against the cluster and records timed requests into rec.
func Run(cfg Config, src workload.Source, rec *metrics.Recorder) (Result, error) {
	l, err := newLoop(cfg, rec)
	if err != nil {
		return Result{}, err
	}
	cl, err := client.New(client.Config{
		MaxConcurrency: cfg.MaxConcurrency, NumWarmups: cfg.NumWarmups, Seed: cfg.Seed, Mode: cfg.Mode,
		WarmupRequestsPerLane: cfg.WarmupRequestsPerLane,
		TrajectoryStartMin:    cfg.TrajectoryStartMin, TrajectoryStartMax: cfg.TrajectoryStartMax,
		TraceIdleGapCap: cfg.TraceIdleGapCap, SystemIdleGapCap: cfg.SystemIdleGapCap,
		CacheBust: cfg.CacheBust, BenchmarkDuration: cfg.BenchmarkDuration, GracePeriod: cfg.GracePeriod,
		RequestTimeout: cfg.RequestTimeout, FrontendLatency: cfg.FrontendLatency,
		Reopen: cfg.Reopen, Progress: cfg.Progress,
	}, src, rec)
	if err != nil {
		return Result{}, err
	}
	l.cl = cl
	return l.run()
}
