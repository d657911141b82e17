package engine

import (
	"fmt"
	"math"
	"time"

	"blis/kvtier"
)

// KV offloading to host memory (and tiers behind it), as vLLM runs it with
// a KV connector. BLIS mirrors vLLM v0.11–v0.12's native OffloadingConnector
// (vllm/distributed/kv_transfer/kv_connector/v1/offloading_connector.py,
// OffloadingConnectorScheduler; vllm/v1/kv_offload/) and, more coarsely,
// LMCache's vLLM v1 adapter (LMCache lmcache/integration/vllm/
// vllm_v1_adapter.py, LMCacheConnectorV1 without async loading).
//
// KV moves in chunks of BlocksPerChunk GPU blocks (vLLM's offloaded block,
// block_size/gpu block size; LMCache's chunk_size, 256 tokens), named by the
// chained hash of the chunk's last GPU block.
//
// Native connector:
//   - Store on write: when a step's scheduled tokens complete a chunk
//     (build_connector_meta → _get_reqs_to_store), the chunks not in the
//     tier are reserved there (prepare_store, evicting by LRU or ARC) and
//     copied device-to-host after the step, asynchronously: one transfer per
//     request per step on the D2H link. A finished request's blocks are
//     freed only when its stores complete (request_finished returns
//     delay_free_blocks while the request is being stored). A preempted or
//     aborted request frees its blocks at once (vLLM's worker waits for a
//     preempted request's stores, handle_preemptions; BLIS does not charge
//     that wait).
//   - Load: a request admitted with nothing computed looks up the chunks
//     after its GPU prefix hit (get_num_new_matched_tokens: from the chunk
//     holding the hit's end, consecutive ready chunks); with at least one,
//     its prompt's blocks are allocated (all of them, with the lookahead
//     slots of speculative decoding, as for a remote prefill: vLLM
//     allocates the loaded ones only, which lets requests holding loaded
//     KV fill the pool and deadlock), it waits as
//     WAITING_FOR_REMOTE_KVS taking no budget, the chunks are pinned and read host-to-device, and it rejoins
//     the head of the queue when they arrive, with those tokens computed
//     (less the last prompt token, which is recomputed, as after a remote
//     prefill). A request whose hit chunks another request is loading waits
//     at the head of the queue (vLLM defers just that request).
//
// LMCache: the lookup is the same, but the load runs inside the step
// (start_load_kv before the forward) and the store too (wait_for_save after
// it), so their transfer time lengthens the step: StepTransferTime. Only
// the prompt is stored (LMCache's save_decode_cache is off by default).
//
// The host link: one FIFO queue per direction (PCIe is full duplex, so a
// store does not slow a load), serialised at LinkBW; each transfer's
// LinkLatency is added to its completion but does not occupy the link
// (DMA setup overlaps the previous copy).
//
// Secondary tiers sit behind the CPU tier, as in vLLM's tiering layer
// (vllm/v1/kv_offload/tiering/base.py SecondaryTierManager: "Store: GPU →
// CPU (primary) → secondary (cascade); Load: secondary → CPU (primary) →
// GPU (promotion)"): only the CPU tier talks to the GPU. Every chunk
// stored to the CPU tier is written on to each secondary tier after its
// D2H copy (on that tier's write queue, the CPU copy pinned meanwhile); a
// chunk missing from the CPU tier but found in a secondary one is read
// into the CPU tier first (its read queue), then loaded to the GPU.

// OffloadConnector is the KV connector offloading the cache.
type OffloadConnector uint8

const (
	// OffloadNative is vLLM's OffloadingConnector (--kv-offloading-backend
	// native).
	OffloadNative OffloadConnector = iota + 1
	// OffloadLMCache is LMCacheConnectorV1 (--kv-offloading-backend lmcache).
	OffloadLMCache
)

// OffloadStore is which chunks are stored.
type OffloadStore uint8

const (
	// StoreAll stores every chunk as it fills, output included (vLLM's
	// OffloadingConnector with offload_prompt_only false).
	StoreAll OffloadStore = iota
	// StorePromptOnly stores the prompt's chunks only (the
	// OffloadingConnector's default, offload_prompt_only true; LMCache's).
	StorePromptOnly
)

// OffloadTier is a secondary tier behind the CPU tier (a filesystem, a
// remote store such as Mooncake). Engines given the same Tier share its
// chunks; given the same Read and Write links they also share its
// bandwidth.
type OffloadTier struct {
	Name    string
	Chunks  int           // capacity in chunks (when Tier is nil)
	Policy  kvtier.Policy // eviction policy (when Tier is nil)
	Tier    kvtier.Tier   // a tier shared by several engines; nil: the engine makes its own
	ReadBW  float64       // bytes/s into the CPU tier (when Read is nil)
	WriteBW float64       // bytes/s from the CPU tier (when Write is nil)
	Latency time.Duration // per transfer (when Read or Write is nil)
	// Read and Write are the tier's paths when shared; nil: the engine
	// makes its own from ReadBW, WriteBW and Latency.
	Read, Write *kvtier.Link
}

// OffloadConfig turns KV offloading on (Config.Offload; nil: off).
type OffloadConfig struct {
	Connector      OffloadConnector
	BlocksPerChunk int   // GPU blocks per offloaded chunk (vLLM's blocks_per_chunk)
	CPUChunks      int   // CPU tier capacity in chunks (when CPU is nil)
	BlockBytes     int64 // bytes of one GPU block on one rank (ranks copy in parallel)
	// LinkBW is the host link's bandwidth in bytes/s in each direction
	// (the chip's PCIe bandwidth); LinkLatency its per-transfer latency.
	LinkBW      float64
	LinkLatency time.Duration
	Store       OffloadStore
	Policy      kvtier.Policy
	// CPU is a CPU tier shared with other engines (nil: the engine makes
	// its own of CPUChunks with Policy).
	CPU kvtier.Tier
	// Name is what reports call the primary tier ("": "CPU"; a Mooncake
	// store shared by the pool is "mooncake").
	Name      string
	Secondary []OffloadTier
	// AlignTokens is, for a hybrid cache, vLLM's full-attention offloaded
	// block in tokens where it exceeds the engine's chunk (DeepSeek-V4's
	// compressed caches use 256-token blocks, its sliding groups smaller
	// ones): sliding groups then store only the chunks a load can hit,
	// the window's before each such boundary (hybridoffload.go). 0: every
	// group's chunk is aligned.
	AlignTokens int
}

// validate reports the first impossible setting.
func (o *OffloadConfig) validate(c Config) error {
	switch {
	case o.Connector != OffloadNative && o.Connector != OffloadLMCache:
		return fmt.Errorf("KV offload connector %d: must be native (OffloadingConnector) or lmcache (LMCacheConnectorV1)", o.Connector)
	case o.BlocksPerChunk < 1:
		return fmt.Errorf("KV offload blocks_per_chunk %d: must be ≥ 1", o.BlocksPerChunk)
	case o.CPU == nil && o.CPUChunks < 1:
		return fmt.Errorf("KV offload CPU tier of %d chunks (--kv-offloading-size too small for one chunk): need at least 1", o.CPUChunks)
	case o.BlockBytes < 1:
		return fmt.Errorf("KV offload block bytes %d: must be ≥ 1", o.BlockBytes)
	case !(o.LinkBW > 0) || math.IsInf(o.LinkBW, 0):
		return fmt.Errorf("KV offload host link bandwidth %v B/s: must be positive and finite", o.LinkBW)
	case o.LinkLatency < 0:
		return fmt.Errorf("KV offload host link latency %v: must be ≥ 0", o.LinkLatency)
	case o.AlignTokens < 0 || o.AlignTokens%(o.BlocksPerChunk*c.BlockSize) != 0:
		return fmt.Errorf("KV offload alignment %d tokens: must be a multiple of the %d-token chunk", o.AlignTokens, o.BlocksPerChunk*c.BlockSize)
	case c.KVCache.Mamba != 0:
		// vLLM's connector offloads a mamba group's state only with mamba
		// prefix caching (mamba_cache_mode "align"), which BLIS does not
		// model: it serves these models with prefix caching off.
		return fmt.Errorf("KV offload with mamba (Gated DeltaNet) KV cache groups is not modelled: vLLM offloads their state only with mamba prefix caching, which BLIS does not model")
	case c.hybridCache() && o.Connector != OffloadNative:
		return fmt.Errorf("KV offload through LMCache with a hybrid KV cache (%d groups, sliding windows) is not modelled: use vLLM's OffloadingConnector (--kv-offloading-backend native)", c.KVCache.Groups)
	case !c.EnablePrefixCaching:
		return fmt.Errorf("KV offload needs prefix caching (chunks are named by block hashes): drop --no-enable-prefix-caching")
	}
	for i, t := range o.Secondary {
		switch {
		case t.Tier == nil && t.Chunks < 1:
			return fmt.Errorf("KV offload tier %d (%s) of %d chunks: need at least 1", i+1, t.Name, t.Chunks)
		case (t.Read == nil && (!(t.ReadBW > 0) || math.IsInf(t.ReadBW, 0))) || (t.Write == nil && (!(t.WriteBW > 0) || math.IsInf(t.WriteBW, 0))):
			return fmt.Errorf("KV offload tier %d (%s) bandwidth read %v / write %v B/s: must be positive and finite", i+1, t.Name, t.ReadBW, t.WriteBW)
		case t.Latency < 0:
			return fmt.Errorf("KV offload tier %d (%s) latency %v: must be ≥ 0", i+1, t.Name, t.Latency)
		}
	}
	return nil
}

// offReq is a request's offload state.
type offReq struct {
	nextStore int        // next chunk to store (vLLM's _next_stored_block_idx)
	tracker   int32      // its store tracker + 1 (0: none)
	loadID    uint64     // its load in flight (0: none)
	loadTok   int        // tokens that load brings
	run       kvtier.Run // its chunks' stretch in the CPU tier (TouchRun)
	// A hybrid cache's connector (hybridoffload.go): whether r was looked
	// up, and the chunks its first lookup hit (GPU and tiers).
	looked    bool
	hitChunks int
}

// job is one transfer in flight: chunks hs, done at done.
type job struct {
	done    time.Duration
	hs      []uint64
	tracker int32    // stores: the request's tracker + 1
	r       *Request // loads
	id      uint64   // loads
	promote []uint64 // loads: chunks read from a secondary tier into the CPU tier
	bytes   int64    // stores: bytes on the link (0: a chunk's bytes per hash)
}

// fifo is a queue of jobs in completion order.
type fifo struct {
	jobs []job
	head int
}

func (f *fifo) push(j job) { f.jobs = append(f.jobs, j) }
func (f *fifo) next() time.Duration {
	if f.head < len(f.jobs) {
		return f.jobs[f.head].done
	}
	return never
}
func (f *fifo) pop() job {
	j := f.jobs[f.head]
	f.jobs[f.head] = job{}
	f.head++
	if f.head == len(f.jobs) {
		f.jobs, f.head = f.jobs[:0], 0
	}
	return j
}

// tracker counts a request's stores in flight; a finished request's blocks
// wait in it until they are done (delay_free_blocks).
type tracker struct {
	n      int
	r      *Request // nil once the request let go
	blocks []int32  // held blocks of a finished request
	groups int      // a hybrid cache's: the groups blocks holds, last group first, equally many slots each
}

// never is NextWake's "nothing pending".
const never = time.Duration(math.MaxInt64)

type secTier struct {
	cfg         OffloadTier
	t           kvtier.Tier
	read, write *kvtier.Link
	writes      fifo // writes in flight, in completion order
}

// offload is an engine's connector state.
type offload struct {
	cfg        OffloadConfig
	cpu        kvtier.Tier
	sec        []secTier
	chunkTok   int
	chunkBytes int64
	h2d, d2h   kvtier.Link

	pending []job // stores recorded by the step being scheduled, not on the link yet
	stores  fifo  // D2H copies in flight
	loads   fifo  // H2D loads in flight
	loading map[uint64]int32

	trackers []tracker
	freeTr   []int32
	spare    [][]uint64
	keys     []uint64
	seq      uint64

	// LMCache: transfer time inside the step being scheduled, host link
	// each way and secondary-tier reads.
	stepH2D, stepD2H, stepSecondary time.Duration
	now                             time.Duration // the last time the engine was told

	hy hybOff // a hybrid cache's scratch (hybridoffload.go)
}

func newOffload(c Config) (*offload, error) {
	oc := c.Offload
	if err := oc.validate(c); err != nil {
		return nil, err
	}
	o := &offload{cfg: *oc, cpu: oc.CPU, chunkTok: oc.BlocksPerChunk * c.BlockSize,
		chunkBytes: int64(oc.BlocksPerChunk) * oc.BlockBytes, loading: map[uint64]int32{},
		h2d: kvtier.Link{BW: oc.LinkBW, Latency: oc.LinkLatency}, d2h: kvtier.Link{BW: oc.LinkBW, Latency: oc.LinkLatency}}
	if o.cpu == nil {
		t, err := kvtier.New(oc.CPUChunks, oc.Policy)
		if err != nil {
			return nil, err
		}
		o.cpu = t
	}
	for _, s := range oc.Secondary {
		t := s.Tier
		if t == nil {
			var err error
			if t, err = kvtier.New(s.Chunks, s.Policy); err != nil {
				return nil, err
			}
		}
		st := secTier{cfg: s, t: t, read: s.Read, write: s.Write}
		if st.read == nil {
			st.read = &kvtier.Link{BW: s.ReadBW, Latency: s.Latency}
		}
		if st.write == nil {
			st.write = &kvtier.Link{BW: s.WriteBW, Latency: s.Latency}
		}
		o.sec = append(o.sec, st)
	}
	return o, nil
}

func (o *offload) hashes() []uint64 {
	if n := len(o.spare); n > 0 {
		h := o.spare[n-1][:0]
		o.spare = o.spare[:n-1]
		return h
	}
	return nil
}

func (o *offload) recycle(h []uint64) {
	if h != nil {
		o.spare = append(o.spare, h[:0])
	}
}

// chunkKeys is the hashes of r's chunks [from, to), in o.keys or, with
// one-block chunks, in r's block hashes; callers must not keep or change it.
func (e *Engine) chunkKeys(r *Request, from, to int) []uint64 {
	o, bpc := e.off, e.off.cfg.BlocksPerChunk
	r.extendHashes(to*o.chunkTok, e.cfg.BlockSize)
	if bpc == 1 {
		return r.hashes[from:to:to] // a chunk is a block: its hashes as they are
	}
	o.keys = o.keys[:0]
	for k := from; k < to; k++ {
		o.keys = append(o.keys, r.hashes[(k+1)*bpc-1])
	}
	return o.keys
}

// Admission outcomes of offloadLookup.
const (
	offNone   = iota // no external hit: admit as usual
	offInStep        // LMCache: ext tokens load inside the step
	offAsync         // native: reserve blocks and load asynchronously
	offWait          // the hit chunks are being loaded by another request: stop admitting
)

// offloadLookup finds r's external hit after a GPU hit of gpuTok tokens
// (get_num_new_matched_tokens): the tokens it brings beyond gpuTok, how,
// and how many of its chunks come from a secondary tier (the last ones).
func (e *Engine) offloadLookup(r *Request, gpuTok int) (ext, how, fromSec int) {
	o := e.off
	if e.hybrid {
		ext, how = e.offloadLookupHybrid(r, gpuTok)
		return ext, how, 0
	}
	if r.NumComputed != 0 {
		return 0, offNone, 0
	}
	total := r.NumTokens() / o.chunkTok
	if o.cfg.Connector == OffloadLMCache {
		total = (r.NumTokens() - 1) / o.chunkTok // LMCache loads all but the last token's chunk in the step
	}
	// The request's chunks are touched before the hit is sized, so even
	// one the GPU's prefix cache serves keeps them recent.
	keys := e.chunkKeys(r, 0, total)
	o.cpu.Touch(keys)
	start := gpuTok / o.chunkTok
	if total*o.chunkTok-gpuTok < o.chunkTok {
		return 0, offNone, 0
	}
	hs := keys[start:]
	hits := o.cpu.Lookup(hs)
	for _, s := range o.sec {
		if hits == len(hs) {
			break
		}
		k := s.t.Lookup(hs[hits:])
		hits += k
		fromSec += k
	}
	if hits == 0 {
		return 0, offNone, 0
	}
	ext = (start+hits)*o.chunkTok - gpuTok
	if o.cfg.Connector == OffloadLMCache {
		return ext, offInStep, fromSec
	}
	for _, h := range hs[:hits] {
		if o.loading[h] > 0 {
			return 0, offWait, 0
		}
	}
	return ext, offAsync, fromSec
}

// offloadReserve allocates r's blocks for its GPU hit and ext external
// tokens and starts their load at now (native connector), or reports the
// pool short.
func (e *Engine) offloadReserve(r *Request, now time.Duration, hits []int32, hitBlocks, ext, fromSec int) bool {
	if e.hybrid {
		return e.offloadReserveHybrid(r, now, hitBlocks, ext)
	}
	o := e.off
	gpuTok := hitBlocks * e.cfg.BlockSize
	e.delayCache = true
	// The whole prompt's blocks, as for a remote prefill, and the
	// lookahead slots its first step after the load takes (vLLM allocates
	// only the loaded ones, and the rest with the lookahead when the
	// request is scheduled after the load; requests holding loaded KV can
	// then fill the pool between them and wait for each other for ever).
	e.look = e.spec.look
	ok := e.allocateSlots(r, r.NumTokens()-gpuTok, hits, hitBlocks)
	e.delayCache, e.look = false, 0
	if !ok {
		return false
	}
	start, end := gpuTok/o.chunkTok, (gpuTok+ext)/o.chunkTok
	e.offloadAdmitted(r, now, gpuTok, ext, true)
	r.Status = StatusWaitingForRemoteKVs
	e.loading = append(e.loading, r)
	o.seq++
	j := job{r: r, id: o.seq, hs: append(o.hashes(), e.chunkKeys(r, start, end)...)}
	r.off.loadID, r.off.loadTok = j.id, gpuTok+ext
	// Stores resume after the loaded chunks (update_state_after_alloc sets
	// _next_stored_block_idx): a preempted request whose stored chunks
	// were partly evicted stores those again as it recomputes them.
	r.off.nextStore = end
	for _, h := range j.hs {
		o.loading[h]++
	}
	o.cpu.PrepareLoad(j.hs) // pins the CPU hits before a promotion can evict them
	at := e.readSecondary(&j, now, len(j.hs)-fromSec)
	j.done = o.h2d.Send(at, int64(len(j.hs))*o.chunkBytes)
	o.loads.push(j)
	e.stats.OffloadLoads++
	e.stats.OffloadLoadedBytes += int64(len(j.hs)) * o.chunkBytes
	e.stats.OffloadLoadTime += j.done - now
	e.stats.PeakUsedBlocks = max(e.stats.PeakUsedBlocks, e.HeldBlocks())
	return true
}

// readSecondary reads the chunks of j.hs from index cpuHits on from the
// secondary tiers into the CPU tier (reserving them there), starting at
// now, and returns when they are all in the CPU tier. With now < 0 (a read
// inside the step) it bypasses the tiers' queues and returns the longest
// read's duration.
func (e *Engine) readSecondary(j *job, now time.Duration, cpuHits int) time.Duration {
	o := e.off
	at := max(now, 0)
	rest := j.hs[cpuHits:]
	for i := range o.sec {
		if len(rest) == 0 {
			break
		}
		s := &o.sec[i]
		k := s.t.Lookup(rest)
		if k == 0 {
			continue
		}
		e.stats.OffloadTierHits[min(i+1, len(e.stats.OffloadTierHits)-1)] += int64(k)
		s.t.Touch(rest[:k])
		if now < 0 {
			at = max(at, s.read.Duration(int64(k)*o.chunkBytes))
		} else {
			at = max(at, s.read.Send(now, int64(k)*o.chunkBytes))
		}
		rest = rest[k:]
	}
	e.stats.OffloadTierHits[0] += int64(cpuHits)
	if cpuHits < len(j.hs) {
		var ev int
		var ok bool
		j.promote, ev, ok = o.cpu.PrepareStore(j.hs[cpuHits:], o.hashes())
		e.stats.OffloadTierEvictions += int64(ev)
		if !ok {
			j.promote = nil // the CPU tier is full of pinned chunks: read past it
		}
	}
	return at
}

// offloadInStep admits r with ext external tokens loaded inside the step
// (LMCache): r's computed tokens grow by ext, and the step by the load.
func (e *Engine) offloadInStep(r *Request, gpuTok, ext, fromSec int) {
	o := e.off
	start, end := gpuTok/o.chunkTok, (gpuTok+ext)/o.chunkTok
	j := job{hs: append(o.hashes(), e.chunkKeys(r, start, end)...)}
	o.cpu.PrepareLoad(j.hs)
	o.stepSecondary = max(o.stepSecondary, e.readSecondary(&j, -1, len(j.hs)-fromSec))
	o.cpu.CompleteLoad(j.hs) // the promoted chunks are still being stored: left alone
	o.cpu.CompleteStore(j.promote)
	o.recycle(j.promote)
	bytes := int64(len(j.hs)) * o.chunkBytes
	o.stepH2D += time.Duration(float64(bytes) / o.cfg.LinkBW * 1e9)
	o.recycle(j.hs)
	r.NumComputed += ext
	r.off.nextStore = max(r.off.nextStore, end)
	e.stats.OffloadLoads++
	e.stats.OffloadLoadedBytes += bytes
}

// offloadStep starts a Schedule call at now: transfers advance, and the
// in-step transfer time starts from zero.
func (e *Engine) offloadStep(now time.Duration) {
	e.offloadAdvance(now)
	e.off.stepH2D, e.off.stepD2H, e.off.stepSecondary = 0, 0, 0
}

// offloadAdmitted records r's admission at now with gpuTok tokens from
// the GPU prefix cache and ext from the tiers: the external lookup, when
// r was admitted with nothing computed (vLLM's scheduler records
// connector_prefix_cache_stats only then, so not again when a request
// whose KV was loaded rejoins the queue; a private request counts too,
// with no hit, though BLIS skips its lookup), and, the first time, its
// scheduling, with both counted as cached (vLLM's num_cached_tokens; the
// GPU prefix-cache statistics count the GPU's hit only).
func (e *Engine) offloadAdmitted(r *Request, now time.Duration, gpuTok, ext int, looked bool) {
	if looked {
		e.stats.ExternalPrefixQueries += int64(r.NumTokens())
		e.stats.ExternalPrefixHits += int64(ext)
	}
	first := !r.scheduledOnce
	e.firstScheduled(r, now, gpuTok)
	if first {
		r.CachedTokens += ext
	}
}

// offloadFilled stores r's chunks that its first upto tokens fill
// (_get_reqs_to_store), called as the blocks are registered (cacheFull).
func (e *Engine) offloadFilled(r *Request, upto int) {
	o := e.off
	if o.cfg.Store == StorePromptOnly || o.cfg.Connector == OffloadLMCache {
		upto = min(upto, r.PromptLen)
	}
	full := upto / o.chunkTok
	if full <= r.off.nextStore {
		return
	}
	keys := e.chunkKeys(r, r.off.nextStore, full)
	// No other request has these chunks (Private), and r has not stored
	// them (before a preemption nextStore only grows; a load after one can
	// lower it): the engine's own tier cannot hold them.
	fresh := r.Private && r.Preemptions == 0 && o.cfg.CPU == nil
	stored := e.prepareStore(r, keys, full, fresh)
	if stored == nil {
		return
	}
	o.cpu.TouchRun(&r.off.run, e.chunkKeys(r, 0, full))
	bytes := int64(len(stored)) * o.chunkBytes
	e.stats.OffloadStores++
	e.stats.OffloadStoredBytes += bytes
	if o.cfg.Connector == OffloadLMCache {
		// Saved in wait_for_save, on the step.
		o.stepD2H += time.Duration(float64(bytes) / o.cfg.LinkBW * 1e9)
		o.cpu.CompleteStore(stored)
		e.writeThrough(stored, o.now+o.stepD2H) // from the end of the save, roughly
		o.recycle(stored)
		return
	}
	e.trackStore(r, stored, 0)
}

// prepareStore reserves the CPU tier's room for r's chunk keys, the
// chunks before chunk full (fresh: none of them can be in the tier), and
// returns the keys it must store, or nil when it stores nothing: no room
// (vLLM logs "cannot store" and retries at the next fill, nextStore left
// as it was) or every key already stored (vLLM's _get_reqs_to_store skips
// a request with nothing to store before touching its chunks).
func (e *Engine) prepareStore(r *Request, keys []uint64, full int, fresh bool) []uint64 {
	o := e.off
	var stored []uint64
	var ev int
	var ok bool
	if fresh {
		stored, ev, ok = o.cpu.PrepareStoreFresh(keys, o.hashes())
	} else {
		stored, ev, ok = o.cpu.PrepareStore(keys, o.hashes())
	}
	e.stats.OffloadTierEvictions += int64(ev)
	if ok {
		r.off.nextStore = full
	}
	if !ok || len(stored) == 0 {
		o.recycle(stored)
		return nil
	}
	return stored
}

// trackStore records the D2H copy of r's chunks stored (bytes on the
// link; 0: a chunk's per hash) for the end of the step, under r's tracker.
func (e *Engine) trackStore(r *Request, stored []uint64, bytes int64) {
	o := e.off
	if r.off.tracker == 0 {
		if n := len(o.freeTr); n > 0 {
			r.off.tracker = o.freeTr[n-1] + 1
			o.freeTr = o.freeTr[:n-1]
		} else {
			o.trackers = append(o.trackers, tracker{})
			r.off.tracker = int32(len(o.trackers))
		}
		o.trackers[r.off.tracker-1].r = r
	}
	o.trackers[r.off.tracker-1].n++
	o.pending = append(o.pending, job{hs: stored, tracker: r.off.tracker, bytes: bytes})
}

// writeThrough queues chunks hs, in the CPU tier at time at, for every
// secondary tier that lacks them; their CPU copies stay pinned until
// written.
func (e *Engine) writeThrough(hs []uint64, at time.Duration) {
	o := e.off
	for i := range o.sec {
		s := &o.sec[i]
		w, ev, ok := s.t.PrepareStore(hs, o.hashes())
		e.stats.OffloadTierEvictions += int64(ev)
		if !ok || len(w) == 0 {
			o.recycle(w)
			continue
		}
		o.cpu.PrepareLoad(w)
		s.writes.push(job{done: s.write.Send(at, int64(len(w))*o.chunkBytes), hs: w})
	}
}

// offloadHold keeps a finished request's blocks while its stores are in
// flight (delay_free_blocks) and reports whether it did; any other request
// lets go of its stores and of its load in flight.
func (e *Engine) offloadHold(r *Request) bool {
	o := e.off
	r.off.loadID = 0 // a load in flight still completes, for nobody
	o.cpu.ReleaseRun(&r.off.run)
	if r.off.tracker == 0 {
		return false
	}
	t := &o.trackers[r.off.tracker-1]
	r.off.tracker = 0
	t.r = nil
	if r.Status != StatusFinished {
		return false
	}
	// Held in reverse group order: release frees from the end, so group 0
	// goes first, tail first, as freeBlocks does.
	t.blocks = t.blocks[:0]
	t.groups = 1 + len(r.kvMore)
	for i := len(r.kvMore) - 1; i >= 0; i-- {
		k := &r.kvMore[i]
		t.blocks = append(t.blocks, k.blocks...)
		*k = reqGroup{blocks: k.blocks[:0]}
	}
	t.blocks = append(t.blocks, r.kv.blocks...)
	r.kv = reqGroup{blocks: r.kv.blocks[:0]}
	return true
}

// offloadAdvance moves the connector to now: the stores recorded by the
// last step start, and the transfers done by now complete, in time order.
func (e *Engine) offloadAdvance(now time.Duration) {
	o := e.off
	o.now = max(o.now, now)
	for i := range o.pending {
		j := o.pending[i]
		b := j.bytes
		if b == 0 {
			b = int64(len(j.hs)) * o.chunkBytes
		}
		j.done = o.d2h.Send(now, b)
		o.stores.push(j)
		o.pending[i] = job{}
	}
	o.pending = o.pending[:0]
	for {
		s, l := o.stores.next(), o.loads.next()
		w, tier := o.nextWrite()
		t := min(s, l, w)
		if t > now {
			return
		}
		switch t {
		case s:
			e.storeDone(o.stores.pop())
		case l:
			e.loadDone(o.loads.pop(), t)
		default:
			sec := &o.sec[tier]
			j := sec.writes.pop()
			sec.t.CompleteStore(j.hs)
			o.cpu.CompleteLoad(j.hs)
			o.recycle(j.hs)
		}
	}
}

// nextWrite is the secondary tiers' next write completion and its tier.
func (o *offload) nextWrite() (time.Duration, int) {
	t, tier := never, -1
	for i := range o.sec {
		if w := o.sec[i].writes.next(); w < t {
			t, tier = w, i
		}
	}
	return t, tier
}

func (e *Engine) storeDone(j job) {
	o := e.off
	o.cpu.CompleteStore(j.hs)
	e.writeThrough(j.hs, j.done)
	o.recycle(j.hs)
	t := &o.trackers[j.tracker-1]
	if t.n--; t.n > 0 {
		return
	}
	if t.r != nil {
		t.r.off.tracker = 0
	}
	if len(t.blocks) > 0 {
		e.pool.release(t.blocks)
	}
	t.r, t.blocks = nil, t.blocks[:0]
	o.freeTr = append(o.freeTr, j.tracker-1)
}

// loadDone: j's chunks are in GPU memory at now. Its request (unless it
// left meanwhile) rejoins the head of the queue with them computed.
func (e *Engine) loadDone(j job, now time.Duration) {
	o := e.off
	for _, h := range j.hs {
		if o.loading[h]--; o.loading[h] == 0 {
			delete(o.loading, h)
		}
	}
	o.cpu.CompleteLoad(j.hs)
	o.cpu.CompleteStore(j.promote)
	o.recycle(j.promote)
	o.recycle(j.hs)
	r := j.r
	if r.off.loadID != j.id || r.Status != StatusWaitingForRemoteKVs {
		return // aborted meanwhile
	}
	r.off.loadID = 0
	e.dropLoading(r)
	c := min(r.off.loadTok, r.NumTokens()-1)
	e.cacheFullAny(r, c)
	r.NumComputed = c
	r.Status = StatusWaiting
	r.readyAt = now
	e.arrived.pushBack(r)
}

// Wake moves the engine's KV offloading to time now: transfers done by then
// complete (a loaded request becomes schedulable; a finished request's
// held blocks are freed). Call it when NextWake comes, and after Complete.
// Without offloading it does nothing.
func (e *Engine) Wake(now time.Duration) {
	if e.off != nil {
		e.offloadAdvance(now)
	}
}

// NextWake is when the engine's next transfer completes (0: stores are
// waiting to start, call Wake now; a huge duration when nothing is
// pending or offloading is off).
func (e *Engine) NextWake() time.Duration {
	o := e.off
	if o == nil {
		return never
	}
	if len(o.pending) > 0 && !e.inStep {
		return 0
	}
	w, _ := o.nextWrite()
	return min(o.stores.next(), o.loads.next(), w)
}

// StepTransferTime is the KV transfer time inside the step just scheduled
// (LMCache loads its hits before the forward and saves after it): the
// caller adds it to the step's priced time. 0 without such transfers.
func (e *Engine) StepTransferTime() time.Duration {
	o := e.off
	if o == nil {
		return 0
	}
	t := o.stepSecondary
	if o.stepH2D > 0 {
		t += o.stepH2D + o.cfg.LinkLatency
	}
	if o.stepD2H > 0 {
		t += o.stepD2H + o.cfg.LinkLatency
	}
	return t
}

// CPUTier is the engine's CPU offload tier (nil when offloading is off).
func (e *Engine) CPUTier() kvtier.Tier {
	if e.off == nil {
		return nil
	}
	return e.off.cpu
}
