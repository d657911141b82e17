package engine

import "fmt"

// The hybrid KV cache manager, for models mixing full-attention and
// sliding-window layers (gpt-oss) or made of sliding-window layers only
// (Mistral-style). It mirrors vLLM main after v0.11
// (vllm/v1/core/single_type_kv_cache_manager.py at 129ab7c60cbb:
// FullAttentionManager, SlidingWindowManager with get_num_skipped_tokens;
// kv_cache_coordinator.py HybridKVCacheCoordinator of the same series, full
// attention first; kv_cache_manager.py allocate_slots), one block size for
// every group and no EAGLE, KV connector or prefix-cache retention:
//
//   - Every request holds a block table in every KV cache group; all groups
//     draw from the one block pool, so admission and preemption weigh the
//     sum of the new blocks every group needs.
//   - A sliding-window group frees, before each allocation, the blocks
//     wholly before the window of the next token (remove_skipped_blocks:
//     max(0, computed − window + 1) tokens skipped), leaving null blocks
//     in their place; the freed blocks keep their prefix-cache hash.
//   - A prefix-cache hit must hold in every group: the longest run cached
//     in every full-attention group, then, within it, the sliding groups'
//     hit (scanning right to left for cdiv(window − 1, block_size)
//     contiguous cached blocks, or a shorter run from the first block),
//     and the full-attention hit cut to that length. Hashes are keyed by
//     group, as vLLM keys cached blocks by (block hash, group id).

// hybridState is the engine's view of the KV cache groups.
type hybridState struct {
	windows []int // per group: 0 full attention, else the sliding window
	full    []int // full-attention group indices
	slide   []int // sliding-window group indices
	mamba   []int // Gated DeltaNet state group indices (mamba.go)
	window  int   // the sliding window (one per model: vLLM's coordinator supports one other type)
	contig  int   // blocks a sliding hit needs: cdiv(window − 1, block_size)

	hits    [][]int32 // per full group: the blocks of the current prefix hit
	swRun   [][]int32 // per group: a sliding group's hit run
	swStart int       // block index where the sliding run starts
}

// validateGroups checks the KV cache layout a Config names.
func (c Config) validateGroups() error {
	l := c.KVCache
	switch {
	case l.Groups < 0 || l.Groups > 64:
		return fmt.Errorf("%d KV cache groups: want 0 to 64", l.Groups)
	case l.Groups < 64 && l.Sliding>>uint(l.Groups) != 0:
		return fmt.Errorf("KV cache groups: sliding-window mask %#x names groups beyond the %d", l.Sliding, l.Groups)
	case l.Sliding != 0 && l.Window < 1:
		return fmt.Errorf("KV cache groups: sliding window %d must be ≥ 1", l.Window)
	case l.Mamba != 0:
		return c.validateMamba()
	case l.Groups > 1 && (l.Sliding == 0 || l.Sliding == 1<<uint(l.Groups)-1):
		return fmt.Errorf("%d KV cache groups: vLLM's hybrid KV cache coordinator needs full-attention groups plus sliding-window groups", l.Groups)
	}
	return nil
}

// hybridCache reports whether the KV cache takes the hybrid path: more
// than one group, or a sliding window; a plain model (no groups, or one
// full-attention group) does not.
func (c Config) hybridCache() bool { return c.KVCache.Groups > 1 || c.KVCache.Sliding != 0 }

// initHybrid sets the engine up for the configured groups; a plain model
// keeps the plain path.
func (e *Engine) initHybrid() {
	l := e.cfg.KVCache
	if !e.cfg.hybridCache() {
		return
	}
	e.hybrid = true
	h := &e.hy
	n := max(l.Groups, 1)
	h.windows = make([]int, n)
	h.hits = make([][]int32, n)
	h.swRun = make([][]int32, n)
	for g := 0; g < n; g++ {
		if l.IsMamba(g) {
			h.windows[g] = mambaGroup
			h.mamba = append(h.mamba, g)
			continue
		}
		if l.IsSliding(g) {
			h.windows[g] = l.Window
			h.slide = append(h.slide, g)
		} else {
			h.full = append(h.full, g)
		}
	}
	h.window = l.Window
	h.contig = cdiv(h.window-1, e.cfg.BlockSize)
}

// gkey is the prefix-cache key of block hash h in group g (vLLM's
// BlockHashWithGroupId). Group 0 uses the hash itself.
func gkey(h uint64, g int) uint64 {
	if g == 0 {
		return h
	}
	k := splitmix64(h + uint64(g))
	if k == 0 {
		k = 1
	}
	return k
}

// removeSkipped frees, in every sliding-window group, r's blocks wholly
// before the window of the token after its first c computed ones (vLLM's
// remove_skipped_blocks; blocks go to the free queue last-first).
func (e *Engine) removeSkipped(r *Request, c int) {
	nb := e.windowSkipped(c, e.hy.window)
	if nb == 0 {
		return
	}
	for _, g := range e.hy.slide {
		k := r.group(g)
		n := min(nb, len(k.blocks))
		for i := n - 1; i >= k.skipped; i-- {
			e.pool.unref(k.blocks[i])
			k.blocks[i] = 0
		}
		k.skipped = max(k.skipped, n)
	}
}

// windowSkipped is the whole blocks before the sliding window of w tokens
// that ends at c computed tokens (vLLM's SlidingWindowManager
// get_num_skipped_tokens, c − w + 1, in blocks).
func (e *Engine) windowSkipped(c, w int) int { return max(0, c-w+1) / e.cfg.BlockSize }

// cachedIn reports whether hash h is cached in every group of gs.
func (e *Engine) cachedIn(h uint64, gs []int) bool {
	for _, g := range gs {
		if _, ok := e.pool.lookup(gkey(h, g)); !ok {
			return false
		}
	}
	return true
}

// longestHitHybrid finds r's prefix-cache hit in every group (vLLM's
// HybridKVCacheCoordinator.find_longest_cache_hit, or the sliding manager's
// alone for an all-sliding model), capped at num_tokens − 1, and returns its
// length in blocks. The full groups' blocks are left in hy.hits, the sliding
// run in hy.swRun from block hy.swStart.
func (e *Engine) longestHitHybrid(r *Request) int {
	bs := e.cfg.BlockSize
	h := &e.hy
	limit := (r.NumTokens() - 1) / bs
	r.extendHashes(limit*bs, bs)
	for _, g := range h.full {
		h.hits[g] = h.hits[g][:0]
	}
	n := limit
	if len(h.full) > 0 {
		// FullAttentionManager: left to right while every full group hits.
		for n = 0; n < limit; n++ {
			all := true
			for _, g := range h.full {
				b, ok := e.pool.lookup(gkey(r.hashes[n], g))
				if !ok {
					all = false
					break
				}
				h.hits[g] = append(h.hits[g], b)
			}
			if !all {
				for _, g := range h.full {
					h.hits[g] = h.hits[g][:min(n, len(h.hits[g]))]
				}
				break
			}
		}
		if e.spec.drop && n > 0 {
			n-- // FullAttentionManager with use_eagle pops the last matched block
		}
	}
	// With an EAGLE-style drafter the sliding groups need one more cached
	// block in the run, and drop the last (SlidingWindowManager, use_eagle).
	slideDrop := e.spec.drop && len(h.slide) > 0
	contig := h.contig
	if slideDrop {
		contig++
	}
	// SlidingWindowManager within the full hit: right to left for a run
	// of contig cached blocks, else the run from the first block.
	start, end, run := 0, 0, 0
	for i := n - 1; i >= 0; i-- {
		if !e.cachedIn(r.hashes[i], h.slide) {
			run = 0
			continue
		}
		run++
		if run >= contig {
			start, end = i, i+run
			break
		}
	}
	if end == 0 {
		// No full run: the run that reaches the first block is a hit.
		start, end = 0, run
	}
	if slideDrop && end > 0 {
		end--
	}
	for _, g := range h.full {
		h.hits[g] = h.hits[g][:end] // cut to the sliding groups' hit
	}
	for _, g := range h.slide {
		buf := h.swRun[g][:0]
		for k := start; k < end; k++ {
			b, _ := e.pool.lookup(gkey(r.hashes[k], g))
			buf = append(buf, b)
		}
		h.swRun[g] = buf
	}
	h.swStart = start
	return end
}

// hitBlock is the k-th block of the current prefix hit in group g (0, the
// null block, before a sliding run).
func (e *Engine) hitBlock(g, k int) int32 {
	h := &e.hy
	if h.windows[g] == 0 {
		return h.hits[g][k]
	}
	if k < h.swStart {
		return 0
	}
	return h.swRun[g][k-h.swStart]
}

// allocateHybrid mirrors KVCacheManager.allocate_slots over all groups for
// n new tokens after hit prefix-cache blocks (0 for a running request): it
// frees the blocks the windows skipped, then succeeds only if every group's
// new blocks plus the free cached hit blocks it takes fit in the free queue.
func (e *Engine) allocateHybrid(r *Request, n, hit int) bool {
	bs := e.cfg.BlockSize
	h := &e.hy
	computed := r.NumComputed + hit*bs
	// With a connector's load (e.ext external tokens), the window is that
	// of every computed token (allocate_new_computed_blocks with
	// num_external_computed_tokens): the sliding groups' blocks before it
	// are null blocks.
	skipAt := computed + e.ext
	need := min(computed+n+e.look, e.cfg.MaxModelLen)
	required := cdiv(need, bs)
	e.removeSkipped(r, skipAt)

	// get_num_blocks_to_allocate, summed over groups.
	total := 0
	for g, w := range h.windows {
		k := r.group(g)
		if w == mambaGroup {
			total += e.mambaBlocksToAllocate(k)
			continue
		}
		skipped := 0
		if w > 0 {
			skipped = e.windowSkipped(skipAt, w)
		}
		total += max(required-max(skipped, hit+len(k.blocks)), 0)
		for i := max(0, skipped-len(k.blocks)); i < hit; i++ {
			if b := e.hitBlock(g, i); b != 0 && e.pool.blk[b].ref == 0 {
				total++
			}
		}
	}
	if total > e.pool.free {
		return false
	}
	if hit > 0 {
		// allocate_new_computed_blocks: every group's hit blocks, the
		// window's skipped ones replaced by the null block.
		for g, w := range h.windows {
			k := r.group(g)
			skipped := 0
			if w > 0 {
				skipped = min(e.windowSkipped(skipAt, w), hit)
			}
			for i := 0; i < skipped; i++ {
				k.blocks = append(k.blocks, 0)
			}
			for i := skipped; i < hit; i++ {
				b := e.hitBlock(g, i)
				if b != 0 {
					e.pool.touch(b)
				}
				k.blocks = append(k.blocks, b)
			}
			k.skipped = skipped
			k.numCached = len(k.blocks)
		}
		r.NumComputed = computed
	}
	for g, w := range h.windows {
		k := r.group(g)
		want := required
		if w == mambaGroup {
			want = e.mambaBlocks()
		}
		if w > 0 && e.ext > 0 {
			// The loaded tokens' slots before the window: null.
			skipped := min(e.windowSkipped(skipAt, w), want)
			for len(k.blocks) < skipped {
				k.blocks = append(k.blocks, 0)
			}
			k.skipped = max(k.skipped, skipped)
		}
		if m := want - len(k.blocks); m > 0 {
			k.blocks = e.pool.take(m, k.blocks)
		}
	}
	if e.cfg.EnablePrefixCaching && !e.delayCache {
		e.cacheFullGroups(r, min(computed+n, r.NumTokens()))
	}
	return true
}

// cacheFullGroups registers, in every group, the hashes of r's blocks that
// the first upto tokens fill (cache_full_blocks; null blocks are skipped).
func (e *Engine) cacheFullGroups(r *Request, upto int) {
	if e.off != nil {
		e.offloadFilledHybrid(r, upto) // every group stores its chunks filled (hybridoffload.go)
	}
	bs := e.cfg.BlockSize
	full := upto / bs
	r.extendHashes(full*bs, bs)
	for g, w := range e.hy.windows {
		if w == mambaGroup {
			continue // no prefix caching of the state (kernel.HybridPrefixCaching)
		}
		k := r.group(g)
		for i := k.numCached; i < full; i++ {
			if b := k.blocks[i]; b != 0 {
				e.pool.register(b, gkey(r.hashes[i], g))
			}
		}
		k.numCached = max(k.numCached, full)
	}
}
