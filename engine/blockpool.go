package engine

// blockPool mirrors vLLM v1's BlockPool (vllm/v1/core/block_pool.py, v0.11–main
// of late 2025): a fixed array of KV blocks, a free queue that doubles as the
// LRU eviction order, reference counts, and a hash → block map for prefix
// caching. Cached blocks stay cached while free (ref 0) until a new allocation
// pops them from the head of the free queue ("lazy eviction").
//
// Block 0 is vLLM's null block: taken out of the free queue at start-up and
// never handed out, so a pool of N blocks offers N−1.
//
// Everything is indexed by int32 block id in flat slices: no allocation once
// the pool exists.
type blockPool struct {
	ref    []int32  // reference count per block
	hash   []uint64 // block hash while the block is registered in cached (0 = none)
	prev   []int32  // free-queue links (-1 = none); a block is in the queue iff inQ
	next   []int32
	inQ    []bool
	head   int32 // least recently freed: evicted first
	tail   int32 // most recently freed
	free   int   // blocks in the free queue
	cached map[uint64]int32

	caching   bool
	evictions int64 // cached blocks whose hash was dropped to reuse the block
}

func newBlockPool(numBlocks int, caching bool) *blockPool {
	p := &blockPool{
		ref:     make([]int32, numBlocks),
		hash:    make([]uint64, numBlocks),
		prev:    make([]int32, numBlocks),
		next:    make([]int32, numBlocks),
		inQ:     make([]bool, numBlocks),
		head:    -1,
		tail:    -1,
		caching: caching,
	}
	if caching {
		p.cached = make(map[uint64]int32, numBlocks)
	}
	// vLLM builds the free queue in block-id order, then takes the null block.
	for b := int32(1); b < int32(numBlocks); b++ {
		p.pushTail(b)
	}
	return p
}

func (p *blockPool) numBlocks() int { return len(p.ref) }

// usable is the number of blocks requests can ever hold (all but the null block).
func (p *blockPool) usable() int { return len(p.ref) - 1 }

func (p *blockPool) pushTail(b int32) {
	p.prev[b], p.next[b] = p.tail, -1
	if p.tail >= 0 {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.inQ[b] = true
	p.free++
}

func (p *blockPool) remove(b int32) {
	if p.prev[b] >= 0 {
		p.next[p.prev[b]] = p.next[b]
	} else {
		p.head = p.next[b]
	}
	if p.next[b] >= 0 {
		p.prev[p.next[b]] = p.prev[b]
	} else {
		p.tail = p.prev[b]
	}
	p.prev[b], p.next[b] = -1, -1
	p.inQ[b] = false
	p.free--
}

// take pops n blocks from the head of the free queue into dst, evicting any
// cached hash they carry (vLLM's get_new_blocks + _maybe_evict_cached_block).
// The caller has checked n ≤ p.free.
func (p *blockPool) take(n int, dst []int32) []int32 {
	for i := 0; i < n; i++ {
		b := p.head
		p.remove(b)
		if h := p.hash[b]; h != 0 {
			if p.cached[h] == b {
				delete(p.cached, h)
			}
			p.hash[b] = 0
			p.evictions++
		}
		p.ref[b] = 1
		dst = append(dst, b)
	}
	return dst
}

// touch takes a reference on a cached block found by a prefix lookup; a free
// cached block leaves the free queue (vLLM's BlockPool.touch).
func (p *blockPool) touch(b int32) {
	if p.ref[b] == 0 && p.inQ[b] {
		p.remove(b)
	}
	p.ref[b]++
}

// release drops one reference from each block, in the order given; blocks
// reaching zero join the tail of the free queue (vLLM frees a request's blocks
// tail-first so its last blocks are evicted first).
func (p *blockPool) release(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		b := blocks[i]
		p.ref[b]--
		if p.ref[b] == 0 {
			p.pushTail(b)
		}
	}
}

// register records that block b holds the content with hash h (vLLM's
// cache_full_blocks). When another block already holds h, the first stays the
// one lookups find; b keeps no hash, so its eviction is silent.
func (p *blockPool) register(b int32, h uint64) {
	if !p.caching {
		return
	}
	if _, ok := p.cached[h]; ok {
		return
	}
	p.cached[h] = b
	p.hash[b] = h
}

// lookup returns the block caching hash h.
func (p *blockPool) lookup(h uint64) (int32, bool) {
	b, ok := p.cached[h]
	return b, ok
}
