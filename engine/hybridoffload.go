package engine

import (
	"time"

	"blis/kvtier"
)

// KV offloading for a hybrid KV cache (hybrid.go: full-attention groups
// plus sliding-window groups drawing on one block pool; gpt-oss,
// DeepSeek-V4). It mirrors vLLM's OffloadingConnector with HMA support
// (vLLM ≥ v0.21: vllm-project/vllm#41228 sliding-window groups on the
// scheduler side, #41445 full HMA enablement, #43142 DeepSeek-V4 support;
// vllm/distributed/kv_transfer/kv_connector/v1/offloading/scheduler.py,
// OffloadingConnectorScheduler with RequestGroupState, _lookup,
// _sliding_window_lookup, _touch, update_state_after_alloc and
// _build_store_jobs):
//
//   - Every group offloads its own blocks under its own key, the chunk's
//     block hash with the group (make_offload_key(hash, group_idx)); the
//     tier counts one entry per (chunk, group), of BlocksPerChunk pool
//     blocks (a pool block is one page of each of the group's layers, the
//     same bytes in every group).
//   - Store: as a chunk fills, each group stores it unless its last GPU
//     block is the null block (a sliding group's block skipped at
//     allocation, before the window of a prefix hit); only the chunk's
//     non-null blocks cross the host link.
//   - Lookup: full-attention groups first, the longest prefix of stored
//     chunks after the GPU hit; then sliding groups, scanning right to
//     left for cdiv(window, chunk tokens) consecutive stored chunks (or a
//     shorter run reaching the first chunk looked up); the hit is capped at
//     num_tokens − 1 and must hold in every group, the sliding groups
//     looked up again when a later group shortened it.
//   - Load: each full group reads the hit's blocks after its GPU hit; a
//     sliding group only the blocks from the window of the cached tokens
//     on (its blocks before the window are null blocks, never allocated).
//   - Touch: full groups all their chunks, sliding groups only from the
//     window before the first lookup's hit on (what a later hit needs).
//
// When vLLM's full-attention block is larger than a sliding group's
// (DeepSeek-V4), a load hit ends on a full block's boundary, so a sliding
// group stores, of each full block's chunks, only the last
// cdiv(window, chunk) (alignment_block_count, the prefix-cache
// optimisation of #42258 applied to offloading in #43142). BLIS gives every
// group one block size; OffloadConfig.AlignTokens carries the real full
// block. Mamba
// groups are refused (validate): vLLM offloads their state only with mamba
// prefix caching, which BLIS does not model. LMCache's connector is not
// modelled for hybrid caches (refused).

// hybOff is the hybrid connector's scratch, kept to spare allocations.
type hybOff struct {
	base    []uint64 // the request's chunk hashes (group 0's keys)
	keys    []uint64 // keys being assembled
	one     [1]uint64
	partial map[uint64]int // stored keys of fewer than BlocksPerChunk live blocks: their blocks
	rest    []uint64       // keys outside the CPU tier, by tier
	order   []int          // groups in lookup order
}

// swChunks is the sliding window in chunks (vLLM's
// sliding_window_size_in_blocks: cdiv(sliding_window, offloaded_block_size)).
func (e *Engine) swChunks() int { return cdiv(e.hy.window, e.off.chunkTok) }

// baseKeys copies r's chunk hashes [0, n) into o.hy.base.
func (e *Engine) baseKeys(r *Request, n int) []uint64 {
	o := e.off
	o.hy.base = append(o.hy.base[:0], e.chunkKeys(r, 0, n)...)
	return o.hy.base
}

// holds reports whether tier t has key k stored and readable.
func (o *offload) holds(t kvtier.Tier, k uint64) bool {
	o.hy.one[0] = k
	return t.Lookup(o.hy.one[:]) == 1
}

// stored reports whether key k is readable in the CPU tier or a secondary one.
func (o *offload) stored(k uint64) bool {
	if o.holds(o.cpu, k) {
		return true
	}
	for i := range o.sec {
		if o.holds(o.sec[i].t, k) {
			return true
		}
	}
	return false
}

// prefixHits is _maximal_prefix_lookup over group g's chunks [from, to).
func (e *Engine) prefixHits(base []uint64, g, from, to int) int {
	n := 0
	for k := from; k < to && e.off.stored(gkey(base[k], g)); k++ {
		n++
	}
	return n
}

// windowHits is _sliding_window_lookup over group g's chunks [from, to):
// the end (from from) of the last run of w stored chunks, scanning right
// to left, else the run that reaches from.
func (e *Engine) windowHits(base []uint64, g, from, to, w int) int {
	run := 0
	for k := to - 1; k >= from; k-- {
		if !e.off.stored(gkey(base[k], g)) {
			run = 0
			continue
		}
		if run++; run == w {
			return k - from + w
		}
	}
	return run
}

// offloadLookupHybrid is offloadLookup for a hybrid cache (vLLM's _lookup
// with every group): the tokens the tiers bring beyond the GPU hit of
// gpuTok tokens, loaded asynchronously, or offWait when another request
// is loading some of the chunks the hit needs.
func (e *Engine) offloadLookupHybrid(r *Request, gpuTok int) (ext, how int) {
	o, h := e.off, &e.hy
	if r.NumComputed != 0 {
		return 0, offNone
	}
	cs := o.chunkTok
	nChunks := r.NumTokens() / cs
	base := e.baseKeys(r, nChunks)
	w := e.swChunks()
	hit := e.hybridHit(base, r.NumTokens(), gpuTok)
	if !r.off.looked {
		// update_num_hit_blocks: for a new request only.
		r.off.looked = true
		r.off.hitChunks = (gpuTok + hit) / cs
	}
	e.touchHybrid(r, base)
	if hit == 0 {
		return 0, offNone
	}
	start, end := gpuTok/cs, cdiv(gpuTok+hit, cs)
	for g, win := range h.windows {
		from := start
		if win > 0 {
			from = max(start, end-w)
		}
		for k := from; k < end; k++ {
			if o.loading[gkey(base[k], g)] > 0 {
				return 0, offWait
			}
		}
	}
	return hit, offAsync
}

// hybridHit is _lookup's hit size in tokens beyond gpuTok for a request of
// numTokens tokens whose chunk hashes are base: 0 unless at least a chunk.
func (e *Engine) hybridHit(base []uint64, numTokens, gpuTok int) int {
	h, cs := &e.hy, e.off.chunkTok
	w := e.swChunks()
	maxHit := numTokens
	if len(h.slide) > 0 {
		maxHit-- // the last prompt token is recomputed: keep a hit after that
	}
	maxHit = min(maxHit, len(base)*cs)
	hit := 0
	if e.off.hy.order == nil {
		// _lookup_groups: full-attention groups first, then sliding ones
		// (one window here, so no sorting by window).
		e.off.hy.order = append(append([]int{}, h.full...), h.slide...)
	}
	groups := e.off.hy.order
	for len(groups) > 0 {
		pass := groups
		groups = nil
		lookedSW := false
		for _, g := range pass {
			if maxHit-gpuTok < cs {
				return 0
			}
			to := min(cdiv(maxHit, cs), len(base))
			from := gpuTok / cs
			var n int
			sliding := h.windows[g] > 0
			if sliding {
				n = e.windowHits(base, g, from, to, w)
			} else {
				n = e.prefixHits(base, g, from, to)
			}
			if n == 0 {
				return 0
			}
			maxHit = min(maxHit, cs*(from+n))
			nh := maxHit - gpuTok
			if nh < cs {
				return 0
			}
			if nh < hit && lookedSW && groups == nil {
				// Confirm the sliding groups' hit at the shorter length.
				groups = h.slide
			}
			lookedSW = lookedSW || sliding
			hit = nh
		}
	}
	return hit
}

// touchHybrid is _touch: full groups' chunks all, sliding groups' from
// the window before the first lookup's hit on.
func (e *Engine) touchHybrid(r *Request, base []uint64) {
	o, w := e.off, e.swChunks()
	keys := o.hy.keys[:0]
	for g, win := range e.hy.windows {
		from := 0
		if win > 0 {
			from = max(0, r.off.hitChunks-w)
		}
		for k := from; k < len(base); k++ {
			keys = append(keys, gkey(base[k], g))
		}
	}
	o.cpu.Touch(keys)
	o.hy.keys = keys
}

// offloadReserveHybrid is offloadReserve for a hybrid cache: r's blocks
// in every group are allocated, null blocks in the sliding groups before
// the window of the cached tokens (as vLLM allocates them), and each
// group's missing blocks of the hit are read from the tiers
// (update_state_after_alloc).
func (e *Engine) offloadReserveHybrid(r *Request, now time.Duration, hitBlocks, ext int) bool {
	o, h := e.off, &e.hy
	bs, bpc, cs := e.cfg.BlockSize, o.cfg.BlocksPerChunk, o.chunkTok
	gpuTok := hitBlocks * bs
	e.delayCache = true
	e.look, e.ext = e.spec.look, ext
	// The loaded tokens' blocks and one step's beyond them (vLLM
	// allocates the loaded ones only; the single-group path takes the
	// whole prompt so a loaded request can always take its next step,
	// but a whole long prompt's blocks in every sliding group can
	// outgrow the pool: one step's tokens keep that guarantee and stay
	// within blocksNeeded).
	n := min(r.NumTokens()-gpuTok, ext+e.cfg.MaxNumBatchedTokens)
	ok := e.allocateSlots(r, n, nil, hitBlocks)
	e.delayCache, e.look, e.ext = false, 0, 0
	if !ok {
		return false
	}
	cached := gpuTok + ext
	nb, end := cdiv(cached, bs), cdiv(cached, cs)
	base := e.baseKeys(r, end)
	hs := o.hashes()
	blocks := 0
	for g, w := range h.windows {
		first := hitBlocks
		if w > 0 {
			first = max(first, e.windowSkipped(cached, w))
		}
		if first >= nb {
			continue
		}
		blocks += nb - first
		for k := first / bpc; k < end; k++ {
			hs = append(hs, gkey(base[k], g))
		}
	}
	cpuHits := o.byTier(hs)
	e.offloadAdmitted(r, now, gpuTok, ext, true)
	r.Status = StatusWaitingForRemoteKVs
	e.loading = append(e.loading, r)
	o.seq++
	j := job{r: r, id: o.seq, hs: hs}
	r.off.loadID, r.off.loadTok = j.id, cached
	r.off.nextStore = end // every group's next_stored_block_idx
	for _, k := range j.hs {
		o.loading[k]++
	}
	o.cpu.PrepareLoad(j.hs)
	at := e.readSecondary(&j, now, cpuHits)
	bytes := int64(blocks) * o.cfg.BlockBytes
	j.done = o.h2d.Send(at, bytes)
	o.loads.push(j)
	e.stats.OffloadLoads++
	e.stats.OffloadLoadedBytes += bytes
	e.stats.OffloadLoadTime += j.done - now
	e.stats.PeakUsedBlocks = max(e.stats.PeakUsedBlocks, e.HeldBlocks())
	return true
}

// byTier orders hs with the CPU tier's keys first, then each secondary
// tier's (those of the first tier holding them), as readSecondary reads
// them, and returns how many the CPU tier holds.
func (o *offload) byTier(hs []uint64) int {
	rest := o.hy.rest[:0]
	n := 0
	for _, k := range hs {
		if o.holds(o.cpu, k) {
			hs[n] = k
			n++
		} else {
			rest = append(rest, k)
		}
	}
	at := n
	for i := range o.sec {
		m := 0
		for _, k := range rest {
			if o.holds(o.sec[i].t, k) {
				hs[at] = k
				at++
			} else {
				rest[m] = k
				m++
			}
		}
		rest = rest[:m]
	}
	copy(hs[at:], rest)
	o.hy.rest = rest[:0]
	return n
}

// offloadFilledHybrid stores, in every group, r's chunks that its first
// upto tokens fill (_build_store_jobs), called as the blocks are
// registered (cacheFullGroups).
func (e *Engine) offloadFilledHybrid(r *Request, upto int) {
	o := e.off
	if o.cfg.Store == StorePromptOnly {
		upto = min(upto, r.PromptLen)
	}
	full := upto / o.chunkTok
	if full <= r.off.nextStore {
		return
	}
	bpc := o.cfg.BlocksPerChunk
	// alignment_block_count: chunks per full-attention block.
	seg, w := max(o.cfg.AlignTokens/o.chunkTok, 1), e.swChunks()
	base := e.baseKeys(r, r.NumTokens()/o.chunkTok) // every chunk: the stored ones, then touchHybrid's
	keys := o.hy.keys[:0]
	clear(o.hy.partial)
	for g, win := range e.hy.windows {
		k := r.group(g)
		for c := r.off.nextStore; c < full; c++ {
			if win == 0 {
				keys = append(keys, gkey(base[c], g))
				continue
			}
			// The chunk's last GPU block null: skipped by the window.
			if (c+1)*bpc > len(k.blocks) || k.blocks[(c+1)*bpc-1] == 0 {
				continue
			}
			if seg > w && seg-1-c%seg >= w {
				continue // no load can hit it: not in the window before a full block's end
			}
			key := gkey(base[c], g)
			keys = append(keys, key)
			live := 0
			for _, b := range k.blocks[c*bpc : (c+1)*bpc] {
				if b != 0 {
					live++
				}
			}
			if live < bpc {
				if o.hy.partial == nil {
					o.hy.partial = map[uint64]int{}
				}
				o.hy.partial[key] = live
			}
		}
	}
	o.hy.keys = keys
	if len(keys) == 0 {
		r.off.nextStore = full
		return
	}
	stored := e.prepareStore(r, keys, full, false)
	if stored == nil {
		return
	}
	e.touchHybrid(r, base)
	blocks := int64(len(stored) * bpc)
	for _, k := range stored {
		if live, ok := o.hy.partial[k]; ok {
			blocks -= int64(bpc - live)
		}
	}
	e.stats.OffloadStores++
	e.stats.OffloadStoredBytes += blocks * o.cfg.BlockBytes
	e.trackStore(r, stored, blocks*o.cfg.BlockBytes)
}
