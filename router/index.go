package router

import "time"

// holders is the set of endpoints holding one block hash, each with a
// node of the holder's own (its LRU node in the approximate index, unused
// in the precise one); the first member is inline so the common single
// holder allocates nothing.
type holders struct {
	first epNode // ep −1: none
	more  []epNode
}

type epNode struct{ ep, node int32 }

// find returns ep's node, −1 when ep does not hold the hash.
func (hs *holders) find(ep int32) int32 {
	if hs.first.ep == ep {
		return hs.first.node
	}
	for _, e := range hs.more {
		if e.ep == ep {
			return e.node
		}
	}
	return -1
}

func (hs *holders) has(ep int32) bool { return hs.find(ep) >= 0 }

// add puts n's endpoint in the set; it must not hold the hash yet.
func (hs *holders) add(n epNode) {
	if hs.first.ep < 0 {
		hs.first = n
		return
	}
	hs.more = append(hs.more, n)
}

// drop removes ep and reports whether no endpoint holds the hash now.
func (hs *holders) drop(ep int32) bool {
	if hs.first.ep == ep {
		if n := len(hs.more); n > 0 {
			hs.first, hs.more = hs.more[n-1], hs.more[:n-1]
		} else {
			hs.first.ep = -1
		}
	} else {
		for i, e := range hs.more {
			if e.ep == ep {
				hs.more[i] = hs.more[len(hs.more)-1]
				hs.more = hs.more[:len(hs.more)-1]
				break
			}
		}
	}
	return hs.first.ep < 0
}

func (hs *holders) each(f func(ep int32)) {
	if hs.first.ep < 0 {
		return
	}
	f(hs.first.ep)
	for _, e := range hs.more {
		f(e.ep)
	}
}

// approxIndex mirrors llm-d's approximate prefix indexer
// (requestcontrol/dataproducer/approximateprefix @ 520af478): for every
// endpoint an LRU of the block hashes of the prompts routed there, capped
// at that endpoint's capacity; a lookup walks a prompt's blocks and counts,
// per endpoint, the ones it holds.
//
// One table maps a hash to its holders, and each holder carries its node
// in its endpoint's LRU, so inserting a block touches the table once and
// evicting one twice: this index churns at the request rate times the
// prompt's blocks (every routed prompt's blocks go in, as many old ones
// come out), which makes it the router's hot path.
type approxIndex struct {
	held  *epIndex  // who holds each hash, each holder with its LRU node
	lrus  []epLRU   // per endpoint
	nodes []lruNode // every endpoint's LRU nodes
	nfree int32     // free list of nodes (−1: none)
}

// epLRU is one endpoint's LRU, a doubly linked list through nodes.
type epLRU struct {
	head, tail int32 // head: most recent; −1: empty
	n          int
}

type lruNode struct {
	h          uint64
	prev, next int32
}

func newApproxIndex(n int) *approxIndex {
	x := &approxIndex{held: newEPIndex(), lrus: make([]epLRU, n), nfree: -1}
	for i := range x.lrus {
		x.lrus[i] = epLRU{head: -1, tail: -1}
	}
	return x
}

func (x *approxIndex) unlink(l *epLRU, i int32) {
	n := &x.nodes[i]
	if n.prev >= 0 {
		x.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next >= 0 {
		x.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
}

func (x *approxIndex) pushFront(l *epLRU, i int32) {
	n := &x.nodes[i]
	n.prev, n.next = -1, l.head
	if l.head >= 0 {
		x.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}

// add records a routed prompt's blocks on ep, most recent last; ep's LRU
// holds at most capacity blocks, the least recently routed going first.
func (x *approxIndex) add(hashes []uint64, ep int, capacity int) {
	e32, l := int32(ep), &x.lrus[ep]
	for _, h := range hashes {
		ei := x.held.entry(h)
		if nd := x.held.sets[ei].find(e32); nd >= 0 {
			x.unlink(l, nd)
			x.pushFront(l, nd)
			continue
		}
		var nd int32
		switch {
		case l.n >= max(capacity, 1) && l.tail >= 0:
			// Evict the least recent block: its node is reused for h.
			nd = l.tail
			x.unlink(l, nd)
			x.held.remove(x.nodes[nd].h, e32)
			l.n--
		case x.nfree >= 0:
			nd = x.nfree
			x.nfree = x.nodes[nd].next
		default:
			x.nodes = append(x.nodes, lruNode{})
			nd = int32(len(x.nodes) - 1)
		}
		x.nodes[nd].h = h
		x.pushFront(l, nd)
		l.n++
		x.held.sets[ei].add(epNode{e32, nd})
	}
}

// match counts, for each endpoint, the blocks of the greedy longest-prefix
// walk that it holds: the walk stops at the first block nobody holds
// (matchLongestPrefix; an endpoint need not hold every block before).
func (x *approxIndex) match(hashes []uint64, counts []int) {
	for i := range counts {
		counts[i] = 0
	}
	for _, h := range hashes {
		hs := x.held.get(h)
		if hs == nil || hs.first.ep < 0 {
			return
		}
		counts[hs.first.ep]++
		for _, e := range hs.more {
			counts[e.ep]++
		}
	}
}

// preciseIndex mirrors llm-d-kv-cache's KV-block index fed by vLLM
// KVEvents (BlockStored / BlockRemoved over ZMQ). An event reaches the
// index delay after the engine emitted it (ZMQ publish + the indexer's
// worker pool); until then the index is stale.
type preciseIndex struct {
	byHash  *epIndex
	delay   time.Duration
	pending fifo[kvEvent]
	// speculative entries (speculativeIndexing): blocks the router expects
	// an endpoint to cache because it just sent the prompt there, kept
	// until their TTL even if no KV event confirms them.
	spec     *epIndex
	specQ    fifo[specEntry]
	specFree [][]uint64
}

type specEntry struct {
	at time.Duration
	ep int32
	hs []uint64
}

type kvEvent struct {
	at     time.Duration
	ep     int32
	stored bool
	h      uint64
}

func newPreciseIndex(delay time.Duration) *preciseIndex {
	return &preciseIndex{byHash: newEPIndex(), spec: newEPIndex(), delay: delay}
}

// speculate records hashes on ep until expiry.
func (x *preciseIndex) speculate(expiry time.Duration, ep int, hashes []uint64) {
	var hs []uint64
	if n := len(x.specFree); n > 0 {
		hs, x.specFree = x.specFree[n-1][:0], x.specFree[:n-1]
	}
	hs = append(hs, hashes...)
	x.specQ.push(specEntry{at: expiry, ep: int32(ep), hs: hs})
	for _, h := range hashes {
		x.spec.add(h, int32(ep))
	}
}

func (x *preciseIndex) expireSpec(now time.Duration) {
	for x.specQ.len() > 0 && x.specQ.front().at <= now {
		e := x.specQ.pop()
		for _, h := range e.hs {
			x.spec.remove(h, e.ep)
		}
		x.specFree = append(x.specFree, e.hs)
	}
}

func (x *preciseIndex) event(now time.Duration, ep int, h uint64, stored bool) {
	x.pending.push(kvEvent{at: now + x.delay, ep: int32(ep), stored: stored, h: h})
}

// advance applies every event due by now and drops expired speculation.
func (x *preciseIndex) advance(now time.Duration) {
	x.expireSpec(now)
	for x.pending.len() > 0 && x.pending.front().at <= now {
		ev := x.pending.pop()
		if ev.stored {
			x.byHash.add(ev.h, ev.ep)
		} else {
			x.byHash.remove(ev.h, ev.ep)
		}
	}
}

// match counts each endpoint's consecutive run of blocks from the first
// (llm-d-kv-cache's LongestPrefixScorer).
func (x *preciseIndex) match(hashes []uint64, counts []int) {
	for i := range counts {
		counts[i] = 0
	}
	for i, h := range hashes {
		advanced := false
		step := func(ep int32) {
			if counts[ep] == i {
				counts[ep]++
				advanced = true
			}
		}
		if s := x.byHash.get(h); s != nil {
			s.each(step)
		}
		if s := x.spec.get(h); s != nil {
			s.each(step)
		}
		if !advanced {
			return
		}
	}
}
