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
// Everything is indexed by int32 block id in one flat slice of per-block
// records (one cache line per block touched). The records are made when a
// block is first handed out: vLLM's initial free queue is every block in id
// order and freed blocks join its tail, so blocks never used are always the
// head of the queue, taken in id order before any freed block. Holding them
// as a counter (fresh) changes nothing a request sees and keeps an idle
// pool, or a thousand data-parallel ranks that each serve a few requests,
// at O(blocks ever used) memory rather than O(pool).
type blockPool struct {
	blk    []block // blocks [0, fresh) ever handed out, the null block 0 included
	n      int32   // blocks in the pool, the null block included
	fresh  int32   // next block never handed out; [fresh, n) head the free queue
	head   int32   // least recently freed used block: evicted first after the fresh ones
	tail   int32   // most recently freed
	free   int     // blocks in the free queue, fresh ones included
	cached *hashTable

	caching   bool
	evictions int64 // cached blocks whose hash was dropped to reuse the block

	// sink receives the KV events (nil: none are made).
	sink KVEventSink
}

// KVEventSink receives an engine's KV cache events, as vLLM publishes them
// for a router's prefix index (vllm/distributed/kv_events.py, emitted by
// vllm/v1/core/block_pool.py): BlockStored when a full block's hash is
// registered in the prefix cache (cache_full_blocks), BlockRemoved when a
// cached block is evicted to be reused (_maybe_evict_cached_block).
//
// BLIS reports the hashes its prefix cache can find: when two blocks hold
// the same content only the first is registered (blockPool.register), so a
// duplicate makes no event, and removing a hash means no block serves it
// any more. A hybrid model's groups other than the first are reported
// under their group keys. Hashes are engine.PromptBlockHashes's.
type KVEventSink interface {
	BlockStored(hash uint64)
	BlockRemoved(hash uint64)
}

// block is one KV block's bookkeeping.
type block struct {
	hash       uint64 // block hash while registered in cached (0 = none)
	ref        int32  // reference count
	prev, next int32  // free-queue links (-1 = none)
	inQ        bool   // in the free queue
	// private: full and cached in vLLM's sense, but left out of the hash
	// table because only its private request could look it up (Request.Private);
	// its reuse still counts as an eviction.
	private bool
}

// newBlockPool makes a pool of numBlocks blocks (Config.Validate bounds it
// by the int32 block ids).
func newBlockPool(numBlocks int, caching bool) *blockPool {
	p := &blockPool{
		blk:     make([]block, 1, min(numBlocks, 64)),
		n:       int32(numBlocks),
		fresh:   1, // vLLM takes the null block out of the queue at start-up
		head:    -1,
		tail:    -1,
		free:    numBlocks - 1,
		caching: caching,
	}
	p.blk[0] = block{prev: -1, next: -1}
	if caching {
		p.cached = newHashTable(min(numBlocks, 64), p.blk)
	}
	return p
}

func (p *blockPool) numBlocks() int { return int(p.n) }

// usable is the number of blocks requests can ever hold (all but the null block).
func (p *blockPool) usable() int { return int(p.n) - 1 }

func (p *blockPool) pushTail(b int32) {
	k := &p.blk[b]
	k.prev, k.next, k.inQ = p.tail, -1, true
	if p.tail >= 0 {
		p.blk[p.tail].next = b
	} else {
		p.head = b
	}
	p.tail = b
	p.free++
}

func (p *blockPool) remove(b int32) {
	k := &p.blk[b]
	if k.prev >= 0 {
		p.blk[k.prev].next = k.next
	} else {
		p.head = k.next
	}
	if k.next >= 0 {
		p.blk[k.next].prev = k.prev
	} else {
		p.tail = k.prev
	}
	k.prev, k.next, k.inQ = -1, -1, false
	p.free--
}

// take pops n blocks from the head of the free queue into dst, evicting any
// cached hash they carry (vLLM's get_new_blocks + _maybe_evict_cached_block).
// The caller has checked n ≤ p.free.
func (p *blockPool) take(n int, dst []int32) []int32 {
	for i := 0; i < n; i++ {
		if p.fresh < p.n {
			// A block never used: no hash to evict.
			b := p.fresh
			p.fresh++
			p.free--
			p.blk = append(p.blk, block{ref: 1, prev: -1, next: -1})
			if p.cached != nil {
				p.cached.blk = p.blk
			}
			dst = append(dst, b)
			continue
		}
		b := p.head
		p.remove(b)
		k := &p.blk[b]
		if k.hash != 0 {
			p.cached.del(k.hash, b) // only the block a hash maps to carries it
			if p.sink != nil {
				p.sink.BlockRemoved(k.hash)
			}
			k.hash = 0
			p.evictions++
		} else if k.private {
			k.private = false
			p.evictions++
		}
		k.ref = 1
		dst = append(dst, b)
	}
	return dst
}

// touch takes a reference on a cached block found by a prefix lookup; a free
// cached block leaves the free queue (vLLM's BlockPool.touch).
func (p *blockPool) touch(b int32) {
	if k := &p.blk[b]; k.ref == 0 && k.inQ {
		p.remove(b)
	}
	p.blk[b].ref++
}

// release drops one reference from each block, last to first; blocks
// reaching zero join the tail of the free queue (vLLM frees a request's blocks
// tail-first so its last blocks are evicted first). Null-block entries (a
// sliding window's freed slots) are skipped.
func (p *blockPool) release(blocks []int32) {
	for i := len(blocks) - 1; i >= 0; i-- {
		if b := blocks[i]; b != 0 {
			p.unref(b)
		}
	}
}

// unref drops one reference from block b.
func (p *blockPool) unref(b int32) {
	p.blk[b].ref--
	if p.blk[b].ref == 0 {
		p.pushTail(b)
	}
}

// register records that block b holds the content with hash h (vLLM's
// cache_full_blocks). When another block already holds h, the first stays the
// one lookups find; b keeps no hash, so its eviction is silent.
func (p *blockPool) register(b int32, h uint64) {
	if !p.caching {
		return
	}
	if p.cached.put(h, b) {
		p.blk[b].hash = h
		if p.sink != nil {
			p.sink.BlockStored(h)
		}
	}
}

// lookup returns the block caching hash h.
func (p *blockPool) lookup(h uint64) (int32, bool) {
	return p.cached.get(h)
}
