// Package engine simulates one vLLM v1 replica: the request state machine,
// the scheduler (continuous batching with chunked prefill under a token
// budget), the paged KV cache with prefix caching, and recompute preemption.
//
// It mirrors vLLM's v1 core as of late 2025 (main after v0.11:
// vllm/v1/core/sched/scheduler.py Scheduler.schedule / update_from_output,
// vllm/v1/core/kv_cache_manager.py allocate_slots / get_computed_blocks,
// vllm/v1/core/block_pool.py), with the FCFS policy, speculative decoding
// (spec.go) and no encoder inputs; of the KV connectors, the NixlConnector's
// scheduler side for disaggregated prefill (remote.go). Models mixing
// full-attention and sliding-window layers use the hybrid KV cache manager
// (hybrid.go).
//
// Like etcd's raft, the engine owns no clock and no goroutines: the caller
// adds requests, asks for the next step's batch (Schedule), prices it, and
// reports the step's end (Complete). Time is only passed in. With a batch
// queue (Config.MaxConcurrentBatches, pipeline parallelism) it may ask for
// more batches before the first ends; they end in order.
package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"blis/kernel"
	"blis/specdecode"
)

// Config holds the vLLM engine arguments the scheduler and KV manager use.
type Config struct {
	MaxNumSeqs                int  // --max-num-seqs
	MaxNumBatchedTokens       int  // --max-num-batched-tokens
	LongPrefillTokenThreshold int  // --long-prefill-token-threshold (0 = off)
	EnableChunkedPrefill      bool // --enable-chunked-prefill (vLLM v1 default: on)
	EnablePrefixCaching       bool // --enable-prefix-caching (default on)
	BlockSize                 int  // --block-size
	NumGPUBlocks              int  // KV pool size in blocks, null block included
	MaxModelLen               int  // --max-model-len
	// AsyncScheduling is --async-scheduling: vLLM's engine core keeps two
	// steps in flight (vllm/v1/engine/core.py step_with_batch_queue; the
	// executors' max_concurrent_batches is 2), scheduling step k+1 when
	// step k is launched. A request that reaches the engine while step k
	// runs therefore joins step k+2, not k+1: Schedule at the end of step
	// k admits only requests that arrived by step k's start, unless no
	// step k+1 would have existed (nothing running and nothing admissible
	// waiting), in which case the engine was idle in vLLM too.
	AsyncScheduling bool
	// KVCache is vLLM's KV cache groups (kernel.MemoryPlan.KVCache). The
	// zero value or one full-attention group is a plain model; otherwise
	// every request holds blocks in every group from the one pool, and
	// sliding-window groups free the blocks that leave the window. Groups,
	// Sliding and Window are read; block size and token budget are the
	// fields above.
	KVCache kernel.KVCacheLayout
	// MaxConcurrentBatches is how many batches the engine keeps in flight
	// (0 or 1: one). With --pipeline-parallel-size P vLLM's engine core
	// keeps a queue of P batches (vllm/v1/engine/core.py
	// step_with_batch_queue; batch_queue_size is the executor's
	// max_concurrent_batches, P in multiproc_executor.py): it schedules a
	// new batch while earlier ones are still in the pipeline. A decode row
	// whose token is still in flight has no new token to schedule, so it
	// waits for its batch; a prompt's next chunk may follow its previous one
	// down the pipeline, as in vLLM. Batches complete in order.
	MaxConcurrentBatches int
	// Offload turns on KV offloading to host memory through a KV connector
	// (offload.go; nil: off).
	Offload *OffloadConfig
	// Spec is speculative decoding (--speculative-config; spec.go). The
	// zero value is off.
	Spec Speculation
}

// Validate reports the first impossible setting, naming its vLLM flag.
func (c Config) Validate() error {
	switch {
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("--max-num-seqs %d: must be ≥ 1", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1:
		return fmt.Errorf("--max-num-batched-tokens %d: must be ≥ 1", c.MaxNumBatchedTokens)
	case c.LongPrefillTokenThreshold < 0:
		return fmt.Errorf("--long-prefill-token-threshold %d: must be ≥ 0", c.LongPrefillTokenThreshold)
	case c.BlockSize < 1:
		return fmt.Errorf("--block-size %d: must be ≥ 1", c.BlockSize)
	case c.NumGPUBlocks > math.MaxInt32:
		return fmt.Errorf("KV pool of %d blocks (--num-gpu-blocks-override or the memory plan): at most %d, the block ids are 32-bit", c.NumGPUBlocks, math.MaxInt32)
	case c.NumGPUBlocks < 2:
		return fmt.Errorf("KV pool of %d blocks (--num-gpu-blocks-override or the memory plan): need at least 2, one is vLLM's null block", c.NumGPUBlocks)
	case c.MaxConcurrentBatches < 0:
		return fmt.Errorf("%d batches in flight (--pipeline-parallel-size): must be ≥ 1", c.MaxConcurrentBatches)
	case c.MaxModelLen < 2:
		return fmt.Errorf("--max-model-len %d: must be ≥ 2", c.MaxModelLen)
	case !c.EnableChunkedPrefill && c.MaxNumBatchedTokens < c.MaxModelLen:
		// vLLM's SchedulerConfig refuses this combination too.
		return fmt.Errorf("--max-num-batched-tokens %d is smaller than --max-model-len %d with chunked prefill disabled: "+
			"a long prompt could never be scheduled; raise --max-num-batched-tokens or enable chunked prefill",
			c.MaxNumBatchedTokens, c.MaxModelLen)
	}
	if err := c.Spec.validate(); err != nil {
		return err
	}
	if s := c.Spec.DraftSlots; c.MaxNumBatchedTokens <= s {
		// vLLM @000fc94b vllm/config/vllm.py _set_max_num_scheduled_tokens
		// refuses this: the input budget could never admit a request.
		return fmt.Errorf("--max-num-batched-tokens %d: must exceed the drafter's %d input slots per request (max_num_new_slots_for_drafting) to schedule a token", c.MaxNumBatchedTokens, s)
	}
	return c.validateGroups()
}

// Stats are counters over the engine's life.
type Stats struct {
	Steps          int64
	Preemptions    int64
	Rejected       int64
	Aborted        int64 // cancelled by the client (timeouts)
	PrefixQueries  int64 // prompt tokens looked up in the prefix cache at admission
	PrefixHits     int64 // of which served from cache
	Evictions      int64 // cached blocks reused for new content
	ScheduledRows  int64 // Σ rows over steps
	MaxRunning     int
	PeakUsedBlocks int
	// RemoteKVLoads counts remote-prefill requests whose prompt KV arrived
	// from a prefill engine (AddRemote, RemoteKVDone).
	RemoteKVLoads int64

	// KV offloading (offload.go), as vLLM's connector metrics count it.
	ExternalPrefixQueries int64 // vllm:external_prefix_cache_queries: tokens of requests admitted with a tier lookup
	ExternalPrefixHits    int64 // vllm:external_prefix_cache_hits: of which loaded from the tiers
	// OffloadTierHits counts chunks loaded from the CPU tier ([0]) and
	// from secondary tiers 1, 2 and any later ([3]).
	OffloadTierHits      [4]int64
	OffloadStores        int64         // store transfers (one per request per step that filled chunks)
	OffloadLoads         int64         // load transfers (one per admitted request with a tier hit)
	OffloadStoredBytes   int64         // device-to-host bytes, per rank
	OffloadLoadedBytes   int64         // host-to-device bytes, per rank
	OffloadTierEvictions int64         // chunks the tiers evicted to make room
	OffloadLoadTime      time.Duration // Σ over asynchronous loads of admission to KV arrival
	// Speculative decoding, as vLLM's SpecDecodingStats counts it: rows
	// that verified drafts (num_drafts), the drafts they verified
	// (num_draft_tokens), those accepted (num_accepted_tokens), and the
	// accepted ones by position (num_accepted_tokens_per_pos).
	SpecDrafts         int64
	SpecDraftTokens    int64
	SpecAccepted       int64
	SpecAcceptedPerPos [specdecode.MaxPositions]int64
}

// Add adds o's counters to s: sums, and maxima for the peaks. A cluster
// sums its ranks' Stats with it.
func (s *Stats) Add(o Stats) {
	s.Steps += o.Steps
	s.Preemptions += o.Preemptions
	s.Rejected += o.Rejected
	s.Aborted += o.Aborted
	s.PrefixQueries += o.PrefixQueries
	s.PrefixHits += o.PrefixHits
	s.Evictions += o.Evictions
	s.ScheduledRows += o.ScheduledRows
	s.MaxRunning = max(s.MaxRunning, o.MaxRunning)
	s.PeakUsedBlocks = max(s.PeakUsedBlocks, o.PeakUsedBlocks)
	s.RemoteKVLoads += o.RemoteKVLoads
	s.ExternalPrefixQueries += o.ExternalPrefixQueries
	s.ExternalPrefixHits += o.ExternalPrefixHits
	for i := range s.OffloadTierHits {
		s.OffloadTierHits[i] += o.OffloadTierHits[i]
	}
	s.OffloadStores += o.OffloadStores
	s.OffloadLoads += o.OffloadLoads
	s.OffloadStoredBytes += o.OffloadStoredBytes
	s.OffloadLoadedBytes += o.OffloadLoadedBytes
	s.OffloadTierEvictions += o.OffloadTierEvictions
	s.OffloadLoadTime += o.OffloadLoadTime
	s.SpecDrafts += o.SpecDrafts
	s.SpecDraftTokens += o.SpecDraftTokens
	s.SpecAccepted += o.SpecAccepted
	for j := range s.SpecAcceptedPerPos {
		s.SpecAcceptedPerPos[j] += o.SpecAcceptedPerPos[j]
	}
}

// Sample is a request's output of a step: one token, or with speculative
// decoding 1 + its accepted drafts, which vLLM streams in one chunk.
type Sample struct {
	Req *Request
	// Tokens is the output tokens in the chunk (1 + accepted drafts; 1 for
	// the first; 0 for an aborted request).
	Tokens int
	Gap    time.Duration // since the request's previous chunk (0 for the first)
	First  bool          // the chunk holds the request's first output token
	Done   bool          // the chunk holds the request's last output token: it has finished
	// Aborted marks a request the client cancelled while it was in the
	// step: it produced no token (Gap and First are unset) and has left
	// the engine (Done is set too).
	Aborted bool
}

// Engine is one vLLM replica's scheduler and KV cache.
type Engine struct {
	cfg     Config
	pool    *blockPool
	waiting ring
	running []*Request

	scheduled []*Request // rows of the step being scheduled (the step in flight without a batch queue)
	samples   []Sample   // outputs of the last completed step
	hitBuf    []int32
	inStep    bool
	anyDone   bool // a request finished in the step being completed
	stats     Stats

	// The batch queue (MaxConcurrentBatches > 1): the batches in flight,
	// oldest first, and spare row lists.
	queue []inflight
	spare [][]row

	// Async scheduling: the start of the step in flight, and the start and
	// end of the last completed step.
	stepStart, lastStart, lastEnd time.Duration
	stepped                       bool // a step has completed

	// The hybrid KV cache manager (off for a plain model): see hybrid.go.
	hybrid bool
	hy     hybridState

	// Disaggregated serving (remote.go): requests whose blocks are
	// allocated and whose KV is in flight (loading), those allocated since
	// the last TakeReserved (reserved), finished requests holding their
	// blocks for a decode engine to read (kept), and allocation without
	// registering the blocks in the prefix cache (delayCache, vLLM's
	// delay_cache_blocks) while a remote prefill's blocks are allocated.
	loading    []*Request
	arrived    ring // remote prefills whose KV arrived, scheduled before waiting
	reserved   []*Request
	kept       int
	delayCache bool

	// KV offloading (offload.go; nil: off). ext is the external tokens a
	// connector's load brings while their blocks are allocated: a hybrid
	// cache's sliding groups take null blocks before their window.
	off *offload
	ext int
	// Speculative decoding (spec.go), and the lookahead slots allocate
	// adds while the running requests are scheduled.
	spec specState
	look int
}

// New builds an engine. The pool has cfg.NumGPUBlocks blocks including the
// null block.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:     cfg,
		pool:    newBlockPool(cfg.NumGPUBlocks, cfg.EnablePrefixCaching),
		running: nil, // grows to at most max-num-seqs; a rank that serves little stays small
	}
	e.initHybrid()
	if cfg.Offload != nil {
		off, err := newOffload(cfg)
		if err != nil {
			return nil, err
		}
		e.off = off
	}
	e.spec = newSpecState(cfg.Spec)
	return e, nil
}

// SetKVEvents makes the engine report its KV cache events to s (nil: stop).
// A request's blocks are then always registered as they fill, Private or
// not (cacheFull), so the events name every block vLLM would.
func (e *Engine) SetKVEvents(s KVEventSink) { e.pool.sink = s }

// Config returns the engine's configuration.
func (e *Engine) Config() Config { return e.cfg }

// Stats returns the counters so far.
func (e *Engine) Stats() Stats {
	s := e.stats
	s.Evictions = e.pool.evictions
	return s
}

// Waiting and Running are the queue lengths. Waiting counts requests
// waiting for remote KV, as vLLM's waiting queue (and
// vllm:num_requests_waiting) holds them.
func (e *Engine) Waiting() int { return e.waiting.len() + e.arrived.len() + len(e.loading) }
func (e *Engine) Running() int { return len(e.running) }

// FreeBlocks is the number of blocks in the free queue (cached-but-free
// blocks included, as in vLLM's get_num_free_blocks).
func (e *Engine) FreeBlocks() int { return e.pool.free }

// UsableBlocks is the number of blocks requests can hold (null block excluded).
func (e *Engine) UsableBlocks() int { return e.pool.usable() }

// HeldBlocks counts blocks with a nonzero reference count.
func (e *Engine) HeldBlocks() int { return e.pool.usable() - e.pool.free }

// Busy reports whether the engine can take no more batches: a step is in
// flight, or, with a batch queue, MaxConcurrentBatches are.
func (e *Engine) Busy() bool {
	if e.cfg.MaxConcurrentBatches > 1 {
		return len(e.queue) >= e.cfg.MaxConcurrentBatches
	}
	return e.inStep
}

// InFlight is the number of batches in flight.
func (e *Engine) InFlight() int {
	if e.cfg.MaxConcurrentBatches > 1 {
		return len(e.queue)
	}
	if e.inStep {
		return 1
	}
	return 0
}

// inflight is one batch in the queue: its rows and when it was scheduled.
type inflight struct {
	rows  []row
	start time.Duration
}

// row is one request of an in-flight batch: whether its computed tokens
// reached its known tokens with this batch (it samples), and its
// preemption count then (a row preempted since produces nothing).
type row struct {
	r       *Request
	samples bool
	preempt int
}

// HasWork reports whether a Schedule call could form a batch.
func (e *Engine) HasWork() bool {
	return len(e.running) > 0 || e.waiting.len() > 0 || e.arrived.len() > 0
}

func cdiv(a, b int) int { return (a + b - 1) / b }

// Add admits a request at time now, or rejects it with a counted reason when
// it can never be served: vLLM's API server refuses prompt + max_tokens over
// --max-model-len, and a request needing more KV blocks than the whole pool
// could only livelock (vLLM refuses such a max-model-len at start-up).
func (e *Engine) Add(r *Request, now time.Duration) bool {
	r.Arrived, r.readyAt = now, now
	if why := e.Refusal(r.PromptLen, r.MaxTokens); why != "" {
		return e.reject(r, why)
	}
	if e.hybrid && len(r.kvMore) < len(e.hy.windows)-1 {
		r.kvMore = append(r.kvMore, make([]reqGroup, len(e.hy.windows)-1-len(r.kvMore))...)
	}
	r.Status = StatusWaiting
	e.waiting.pushBack(r)
	return true
}

// Refusal is why the engine refuses a request of promptLen prompt tokens
// asking for maxTokens, on arrival ("" if it accepts it): the checks of
// vLLM's input processing, whose errors the server answers with HTTP 400,
// and a KV pool too small to ever hold the request.
func (e *Engine) Refusal(promptLen, maxTokens int) string {
	switch {
	case promptLen < 1:
		return "empty prompt"
	case maxTokens < 1:
		return fmt.Sprintf("max_tokens %d: must be ≥ 1", maxTokens)
	case promptLen+maxTokens > e.cfg.MaxModelLen:
		return fmt.Sprintf("max_model_len: this model's maximum context length is %d tokens, "+
			"but %d were requested (%d prompt + %d output)", e.cfg.MaxModelLen, promptLen+maxTokens, promptLen, maxTokens)
	case e.blocksNeeded(e.peakSlots(promptLen, maxTokens)) > e.pool.usable():
		return fmt.Sprintf("kv_capacity: needs %d KV blocks, the pool has %d", e.blocksNeeded(e.peakSlots(promptLen, maxTokens)), e.pool.usable())
	}
	return ""
}

func (e *Engine) reject(r *Request, why string) bool {
	r.Status = StatusRejected
	r.RejectReason = why
	e.stats.Rejected++
	return false
}

// Schedule forms the next step's batch at time now, mirroring
// Scheduler.schedule: running requests first (in order, preempting from the
// tail of the running list when KV blocks run out), then — only if nothing
// was preempted this step — waiting requests in FCFS order, under the
// --max-num-batched-tokens budget and the --max-num-seqs cap. It fills b with
// the step's shape and returns the number of scheduled rows (0: nothing to do).
func (e *Engine) Schedule(now time.Duration, b *kernel.Batch) int {
	if e.Busy() {
		panic("engine: Schedule called while a step is in flight")
	}
	*b = kernel.Batch{}
	e.scheduled = e.scheduled[:0]
	if e.off != nil {
		e.offloadStep(now)
	}
	budget := e.cfg.MaxNumBatchedTokens
	thr := e.cfg.LongPrefillTokenThreshold
	preempted := false

	// With speculative decoding scheduleRunningSpec (spec.go) schedules
	// the running requests; this loop is the plain path.
	first := 0
	if e.spec.k > 0 {
		budget, preempted = e.scheduleRunningSpec(b, budget)
		first = len(e.running)
	}
	for i := first; i < len(e.running) && budget > 0; {
		r := e.running[i]
		n := r.NumTokens() - r.NumComputed
		if thr > 0 && n > thr {
			n = thr
		}
		n = min(n, budget, e.cfg.MaxModelLen-1-r.NumComputed)
		if n <= 0 {
			i++
			continue
		}
		if n == 1 && r.NumComputed < len(r.kv.blocks)*e.cfg.BlockSize {
			// Fast path: a decode row whose next slot is already allocated
			// needs no new block; it only registers a block it fills (and,
			// in a sliding-window group, frees the block leaving the window).
			if e.hybrid {
				e.removeSkipped(r, r.NumComputed)
			}
			if e.cfg.EnablePrefixCaching && (r.NumComputed+1)%e.cfg.BlockSize == 0 && r.NumComputed+1 <= r.NumTokens() {
				e.cacheFullAny(r, r.NumComputed+1)
			}
			e.add(r, 1, b)
			budget--
			i++
			continue
		}
		ok, pre := e.allocateOrPreempt(r, n)
		preempted = preempted || pre
		if !ok {
			break
		}
		e.add(r, n, b)
		budget -= n
		i++
	}

	// Under async scheduling the step formed now was, in vLLM, formed when
	// the previous step started: later arrivals wait one more step.
	cutoff, gated := time.Duration(0), false
	if e.cfg.AsyncScheduling && e.stepped && now == e.lastEnd {
		cutoff = e.lastStart
		head := e.waiting.len() > 0 && e.waiting.peek().readyAt <= cutoff
		if e.arrived.len() > 0 {
			head = e.arrived.peek().readyAt <= cutoff
		}
		gated = len(e.running) > 0 || head
	}
	// vLLM admits no waiting request in a step that preempted. One that
	// preempted every running request and scheduled nothing is followed at
	// once by the engine core's next step, which does: BLIS runs it here.
	if !preempted || len(e.scheduled) == 0 {
		for budget > 0 && e.inputCap(budget) > 0 && len(e.running) < e.cfg.MaxNumSeqs {
			// Requests whose remote KV arrived go first (remote.go).
			q := &e.arrived
			if q.len() == 0 {
				q = &e.waiting
			}
			if q.len() == 0 {
				break
			}
			r := q.peek()
			if gated && r.readyAt > cutoff {
				break // waiting is in arrival order (preempted requests, older, go first)
			}
			if r.remote == remotePending {
				if !e.reserveRemote(r, now) {
					break
				}
				q.popFront()
				continue
			}
			hits, hitBlocks := e.prefixHit(r)
			hitTokens := hitBlocks * e.cfg.BlockSize
			// KV offloading (offload.go): the connector's hit after the
			// GPU's, loaded in the step or, asynchronously, before it.
			ext, how, fromSec := 0, offNone, 0
			looked := r.NumComputed == 0 // the connector looks r up (offloadAdmitted)
			if e.off != nil && !e.unlisted(r) {
				ext, how, fromSec = e.offloadLookup(r, hitTokens)
				if how == offWait {
					break
				}
				if how == offAsync {
					if !e.offloadReserve(r, now, hits, hitBlocks, ext, fromSec) {
						break
					}
					q.popFront()
					continue
				}
			}
			n := r.NumTokens() - r.NumComputed - hitTokens - ext
			if thr > 0 && n > thr {
				n = thr
			}
			if !e.cfg.EnableChunkedPrefill && n > e.inputCap(budget) {
				break
			}
			n = min(n, e.inputCap(budget))
			// A request whose KV a connector brought (it has computed
			// tokens) takes the lookahead slots too; a new or preempted
			// one does not (vLLM's effective_lookahead_tokens).
			if r.NumComputed > 0 {
				e.look = e.spec.look
			}
			ok := e.allocateSlots(r, n+ext, hits, hitBlocks)
			e.look = 0
			if !ok {
				break
			}
			q.popFront()
			if how == offInStep {
				e.offloadInStep(r, hitTokens, ext, fromSec)
			}
			if e.off != nil {
				e.offloadAdmitted(r, now, hitTokens, ext, looked)
			} else {
				e.firstScheduled(r, now, hitTokens)
			}
			r.Status = StatusRunning
			e.running = append(e.running, r)
			e.add(r, n, b)
			budget -= n
		}
	}

	if len(e.scheduled) > 0 && e.cfg.MaxConcurrentBatches > 1 {
		e.enqueue(now)
	}
	if len(e.scheduled) > 0 {
		e.inStep = true
		e.stepStart = now
		e.stats.Steps++
		e.stats.ScheduledRows += int64(len(e.scheduled))
		e.stats.MaxRunning = max(e.stats.MaxRunning, len(e.running))
		e.stats.PeakUsedBlocks = max(e.stats.PeakUsedBlocks, e.HeldBlocks())
	}
	return len(e.scheduled)
}

// prefixHit looks up the prefix-cache hit of a request about to be
// admitted with nothing computed: the hit blocks of a plain model (held in
// e.hitBuf, valid until the next lookup) and the number of hit blocks in
// every group (longestHitHybrid leaves a hybrid model's in e.hy).
func (e *Engine) prefixHit(r *Request) (hits []int32, hitBlocks int) {
	hits = e.hitBuf[:0]
	if r.NumComputed == 0 && e.cfg.EnablePrefixCaching && !e.unlisted(r) {
		if e.hybrid {
			hitBlocks = e.longestHitHybrid(r)
		} else {
			hits = e.longestHit(r, hits)
			hitBlocks = len(hits)
		}
	}
	e.hitBuf = hits
	return hits, hitBlocks
}

// firstScheduled records r's first admission at now with a prefix-cache
// hit of hitTokens: its scheduling time and the prefix-cache statistics
// (vLLM counts a request's query once, when it is first scheduled).
func (e *Engine) firstScheduled(r *Request, now time.Duration, hitTokens int) {
	if r.scheduledOnce {
		return
	}
	r.scheduledOnce = true
	r.FirstScheduled = now
	r.CachedTokens = hitTokens
	e.stats.PrefixQueries += int64(r.NumTokens())
	e.stats.PrefixHits += int64(hitTokens)
}

// cacheFullAny registers r's blocks that the first upto tokens fill, in
// every KV cache group of a hybrid model (cacheFullGroups) or the one of a
// plain model (cacheFull).
func (e *Engine) cacheFullAny(r *Request, upto int) {
	if e.hybrid {
		e.cacheFullGroups(r, upto)
	} else {
		e.cacheFull(r, upto)
	}
}

// allocateOrPreempt allocates slots for n new tokens of running request r,
// preempting from the tail of the running list while the pool is short
// (vLLM's Scheduler.schedule, RUNNING part). ok is false when r itself
// was preempted; preempted reports whether any request was.
func (e *Engine) allocateOrPreempt(r *Request, n int) (ok, preempted bool) {
	for {
		if e.allocateSlots(r, n, nil, 0) {
			return true, preempted
		}
		victim := e.running[len(e.running)-1]
		e.running = e.running[:len(e.running)-1]
		e.preempt(victim)
		preempted = true
		if victim == r {
			return false, true
		}
	}
}

// add records r as a row of the step with n new tokens and advances its
// computed-token count (vLLM's _update_after_schedule).
func (e *Engine) add(r *Request, n int, b *kernel.Batch) {
	c := r.NumComputed
	r.stepContext, r.stepTokens = c, n
	r.NumComputed += n
	e.scheduled = append(e.scheduled, r)
	if r.NumComputed >= r.NumTokens() {
		b.Sampled++
	}
	if r.NumOutput > 0 && n == 1 && c == r.NumTokens()-1 {
		b.NumDecode++
		b.DecodeTokens++
		b.DecodeContext += int64(c + 1)
		return
	}
	b.NumPrefill++
	b.PrefillTokens += n
	b.PrefillContext += int64(c)
	s, cc := float64(n), float64(c)
	b.PrefillAttnPairs += s*cc + s*(s+1)/2
}

// longestHit finds the cached blocks matching r's leading full blocks, capped
// at num_tokens − 1 so the last token is always computed (vLLM's
// get_computed_blocks), less the last one with an EAGLE-style drafter
// (Speculation.DropLastHitBlock).
func (e *Engine) longestHit(r *Request, dst []int32) []int32 {
	bs := e.cfg.BlockSize
	limit := (r.NumTokens() - 1) / bs
	r.extendHashes(limit*bs, bs)
	start := len(dst)
	for k := 0; k < limit; k++ {
		blk, ok := e.pool.lookup(r.hashes[k])
		if !ok {
			break
		}
		dst = append(dst, blk)
	}
	if e.spec.drop && len(dst) > start {
		dst = dst[:len(dst)-1]
	}
	return dst
}

// allocateSlots gives r slots for n new tokens after its prefix-cache hit
// (hits for a plain model; hitBlocks blocks in every group, left by
// longestHitHybrid, for a hybrid one), or reports that the pool is short.
func (e *Engine) allocateSlots(r *Request, n int, hits []int32, hitBlocks int) bool {
	if e.hybrid {
		return e.allocateHybrid(r, n, hitBlocks)
	}
	return e.allocate(r, n, hits)
}

// allocate mirrors KVCacheManager.allocate_slots for full attention, with
// e.look lookahead slots (speculative decoding): it succeeds only if the
// new blocks plus the cached hit blocks that are currently free
// (evictable) fit in the free queue.
func (e *Engine) allocate(r *Request, n int, hits []int32) bool {
	bs := e.cfg.BlockSize
	computed := r.NumComputed + len(hits)*bs
	need := min(computed+n+e.look, e.cfg.MaxModelLen)
	newBlocks := cdiv(need, bs) - len(hits) - len(r.kv.blocks)
	evictable := 0
	for _, blk := range hits {
		if e.pool.blk[blk].ref == 0 {
			evictable++
		}
	}
	if max(newBlocks, 0)+evictable > e.pool.free {
		return false
	}
	for _, blk := range hits {
		e.pool.touch(blk)
	}
	r.kv.blocks = append(r.kv.blocks, hits...)
	if len(hits) > 0 {
		r.kv.numCached = len(r.kv.blocks)
		r.NumComputed = computed
	}
	if newBlocks > 0 {
		r.kv.blocks = e.pool.take(newBlocks, r.kv.blocks)
	}
	if e.cfg.EnablePrefixCaching && !e.delayCache {
		e.cacheFull(r, min(computed+n, r.NumTokens()))
	}
	return true
}

// cacheFull registers the hashes of r's blocks that the first upto tokens
// fill (vLLM's cache_full_blocks).
//
// A private request that has never been preempted (unlisted) only marks
// them: nobody else can look its content up, and it looks its own blocks up
// only after a preemption, so they are registered then (listPrivate),
// before they are freed. Until then the table never holds them, which
// saves hashing and two table operations per block and changes nothing a
// lookup can see: no other block holds a private request's hashes before
// its first preemption, so every registration succeeds whenever it happens.
func (e *Engine) cacheFull(r *Request, upto int) {
	if e.off != nil {
		e.offloadFilled(r, upto) // the connector stores the chunks filled (offload.go)
	}
	bs := e.cfg.BlockSize
	full := upto / bs
	if full <= r.kv.numCached {
		return
	}
	if e.unlisted(r) {
		for k := r.kv.numCached; k < full; k++ {
			e.pool.blk[r.kv.blocks[k]].private = true
		}
		r.kv.numCached = full
		return
	}
	r.extendHashes(full*bs, bs)
	for k := r.kv.numCached; k < full; k++ {
		e.pool.register(r.kv.blocks[k], r.hashes[k])
	}
	r.kv.numCached = full
}

// unlisted reports whether r's full blocks stay out of the hash table
// (cacheFull): a private request of a plain model, never preempted.
func (e *Engine) unlisted(r *Request) bool {
	return r.Private && r.Preemptions == 0 && !e.hybrid && e.cfg.EnablePrefixCaching && e.pool.sink == nil
}

// listPrivate registers the blocks cacheFull only marked for r, as vLLM
// would have when they filled.
func (e *Engine) listPrivate(r *Request) {
	bs, n := e.cfg.BlockSize, r.kv.numCached
	r.extendHashes(n*bs, bs)
	for k := 0; k < n; k++ {
		b := r.kv.blocks[k]
		e.pool.blk[b].private = false
		e.pool.register(b, r.hashes[k])
	}
}

// preempt frees r's blocks and puts it back at the head of the waiting queue
// for recomputation (vLLM's _preempt_request, RECOMPUTE mode).
func (e *Engine) preempt(r *Request) {
	if e.unlisted(r) {
		e.listPrivate(r)
	}
	e.freeBlocks(r)
	r.NumComputed = 0
	r.spec = reqSpec{} // vLLM's _preempt_request clears spec_token_ids
	r.Status = StatusPreempted
	r.Preemptions++
	e.stats.Preemptions++
	e.waiting.pushFront(r)
}

// Abort cancels r (vLLM's Scheduler.finish_requests with FINISHED_ABORTED,
// called when a client disconnects): its blocks are freed and it leaves the
// queues. It reports true when r left at once; when r is part of the step
// in flight it leaves when that step completes, as a Sample with Aborted
// set and no token, and Abort reports false.
func (e *Engine) Abort(r *Request) bool {
	switch r.Status {
	case StatusFinished, StatusRejected, StatusAborted:
		return true
	}
	e.stats.Aborted++
	r.remote = remoteNone
	if e.inStep && e.inFlight(r) {
		r.abortPending = true
		return false
	}
	e.removeAborted(r)
	return true
}

func (e *Engine) removeAborted(r *Request) {
	if r.Status == StatusWaitingForRemoteKVs {
		e.dropLoading(r)
	} else if r.Status == StatusRunning {
		if i := slices.Index(e.running, r); i >= 0 {
			e.running = slices.Delete(e.running, i, i+1)
		}
	} else {
		e.waiting.remove(r)
		e.arrived.remove(r)
	}
	e.freeBlocks(r)
	r.Status = StatusAborted
}

// Complete ends the step in flight at time now (vLLM's update_from_output):
// every row whose computed tokens caught up with its known tokens samples one
// output token; a request reaching its max_tokens finishes and frees its
// blocks, tail first. The returned samples are valid until the next Complete.
func (e *Engine) Complete(now time.Duration) []Sample {
	if !e.inStep {
		panic("engine: Complete called with no step in flight")
	}
	if e.cfg.MaxConcurrentBatches > 1 {
		return e.completeQueued(now)
	}
	e.inStep = false
	e.stepped, e.lastStart, e.lastEnd = true, e.stepStart, now
	e.samples = e.samples[:0]
	for _, r := range e.scheduled {
		if r.abortPending {
			r.abortPending = false
			e.removeAborted(r)
			e.samples = append(e.samples, Sample{Req: r, Done: true, Aborted: true})
			continue
		}
		if r.NumComputed < r.NumTokens() {
			continue // a prefill chunk that did not reach the end of the known tokens
		}
		e.emit(r, now)
	}
	e.finishStep()
	return e.samples
}

// emit records r's output at now: one token, plus the drafts accepted
// when r verified some (verify), capped at max_tokens (vLLM's
// _update_request_with_output stops mid-chunk); r finishes at its
// max_tokens, or carries new drafts for its next step.
func (e *Engine) emit(r *Request, now time.Duration) {
	n := 1
	if d := r.spec.step; d > 0 {
		n += e.verify(r, int(d))
		n = min(n, r.MaxTokens-r.NumOutput)
	}
	s := Sample{Req: r, Tokens: n, First: r.NumOutput == 0}
	r.NumOutput += n
	if s.First {
		r.FirstToken = now
	} else {
		s.Gap = now - r.LastToken
	}
	r.LastToken = now
	if r.NumOutput >= r.MaxTokens {
		s.Done = true
		e.anyDone = true
		r.Status = StatusFinished
		r.Finished = now
		if r.KeepKV {
			r.kvKept = true
			e.kept++
		} else {
			e.freeBlocks(r)
		}
	} else if e.spec.k > 0 {
		r.spec.drafts = uint8(e.spec.k) // the proposer's drafts for r's next step
	}
	e.samples = append(e.samples, s)
}

// finishStep drops the requests that finished in the step from the running
// list.
func (e *Engine) finishStep() {
	if !e.anyDone {
		return
	}
	e.anyDone = false
	kept := e.running[:0]
	for _, r := range e.running {
		if r.Status != StatusFinished {
			kept = append(kept, r)
		}
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// enqueue moves the batch just scheduled into the batch queue.
func (e *Engine) enqueue(now time.Duration) {
	var rows []row
	if n := len(e.spare); n > 0 {
		rows, e.spare = e.spare[n-1][:0], e.spare[:n-1]
	}
	for _, r := range e.scheduled {
		rows = append(rows, row{r: r, samples: r.NumComputed >= r.NumTokens(), preempt: r.Preemptions})
	}
	e.queue = append(e.queue, inflight{rows: rows, start: now})
}

// inFlight reports whether r is a row of a batch in flight.
func (e *Engine) inFlight(r *Request) bool {
	if e.cfg.MaxConcurrentBatches <= 1 {
		return slices.Contains(e.scheduled, r)
	}
	for _, b := range e.queue {
		for _, x := range b.rows {
			if x.r == r {
				return true
			}
		}
	}
	return false
}

// completeQueued is Complete with a batch queue: the oldest batch leaves
// the pipeline. A row preempted or finished since its batch was scheduled
// produces nothing (its KV was dropped; it is recomputed or gone).
func (e *Engine) completeQueued(now time.Duration) []Sample {
	b := e.queue[0]
	copy(e.queue, e.queue[1:])
	e.queue = e.queue[:len(e.queue)-1]
	e.inStep = len(e.queue) > 0
	e.stepped, e.lastStart, e.lastEnd = true, b.start, now
	if e.inStep {
		e.stepStart = e.queue[0].start
	}
	e.samples = e.samples[:0]
	for _, x := range b.rows {
		r := x.r
		if r.abortPending {
			r.abortPending = false
			e.removeAborted(r)
			e.samples = append(e.samples, Sample{Req: r, Done: true, Aborted: true})
			continue
		}
		if !x.samples || x.preempt != r.Preemptions || r.Status != StatusRunning {
			continue
		}
		e.emit(r, now)
	}
	e.finishStep()
	e.spare = append(e.spare, b.rows[:0])
	return e.samples
}

// freeBlocks releases every block r holds, group by group, each tail first
// (vLLM's KVCacheCoordinator.free).
func (e *Engine) freeBlocks(r *Request) {
	if e.off != nil && e.offloadHold(r) {
		return // freed when its stores complete (offload.go)
	}
	e.pool.release(r.kv.blocks)
	r.kv = reqGroup{blocks: r.kv.blocks[:0]}
	if e.hybrid {
		for i := range r.kvMore {
			k := &r.kvMore[i]
			e.pool.release(k.blocks)
			*k = reqGroup{blocks: k.blocks[:0]}
		}
	}
}

// blocksNeeded is the most blocks a request of n tokens holds at once: one
// per block_size tokens in a plain model; summed over the groups of a hybrid
// one, a sliding-window group holding at most window − 1 + one step's tokens
// (SlidingWindowSpec.max_memory_usage_bytes).
func (e *Engine) blocksNeeded(n int) int {
	full := cdiv(n, e.cfg.BlockSize)
	if !e.hybrid {
		return full
	}
	total := 0
	for _, w := range e.hy.windows {
		if w == mambaGroup {
			total += e.mambaBlocks() // its state blocks (mamba.go)
		} else if w == 0 {
			total += full
		} else {
			total += min(full, cdiv(min(w-1+e.cfg.MaxNumBatchedTokens, n), e.cfg.BlockSize)+1)
		}
	}
	return total
}

// ring is a double-ended FIFO of requests (vLLM's FCFSRequestQueue, a deque).
type ring struct {
	buf        []*Request
	head, size int
}

func (q *ring) len() int { return q.size }

func (q *ring) grow() {
	n := max(16, 2*len(q.buf))
	nb := make([]*Request, n)
	for i := 0; i < q.size; i++ {
		nb[i] = q.buf[(q.head+i)%len(q.buf)]
	}
	q.buf, q.head = nb, 0
}

func (q *ring) pushBack(r *Request) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.size)%len(q.buf)] = r
	q.size++
}

func (q *ring) pushFront(r *Request) {
	if q.size == len(q.buf) {
		q.grow()
	}
	q.head = (q.head - 1 + len(q.buf)) % len(q.buf)
	q.buf[q.head] = r
	q.size++
}

func (q *ring) peek() *Request { return q.buf[q.head] }

// remove takes r out of the queue wherever it stands (aborts are rare).
func (q *ring) remove(r *Request) {
	for i := 0; i < q.size; i++ {
		if q.buf[(q.head+i)%len(q.buf)] != r {
			continue
		}
		for j := i; j < q.size-1; j++ {
			q.buf[(q.head+j)%len(q.buf)] = q.buf[(q.head+j+1)%len(q.buf)]
		}
		q.buf[(q.head+q.size-1)%len(q.buf)] = nil
		q.size--
		return
	}
}

func (q *ring) popFront() *Request {
	r := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return r
}
