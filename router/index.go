package router

import "time"

// epSet is the set of endpoints holding one block hash; the first member is
// stored inline so the common single-holder case allocates nothing.
type epSet struct {
	first int32 // -1: empty
	more  []int32
}

func (s *epSet) has(ep int32) bool {
	if s.first == ep {
		return true
	}
	for _, e := range s.more {
		if e == ep {
			return true
		}
	}
	return false
}

func (s *epSet) add(ep int32) {
	if s.has(ep) {
		return
	}
	if s.first < 0 {
		s.first = ep
		return
	}
	s.more = append(s.more, ep)
}

// remove deletes ep and reports whether the set is now empty.
func (s *epSet) remove(ep int32) bool {
	if s.first == ep {
		if n := len(s.more); n > 0 {
			s.first = s.more[n-1]
			s.more = s.more[:n-1]
		} else {
			s.first = -1
		}
	} else {
		for i, e := range s.more {
			if e == ep {
				s.more[i] = s.more[len(s.more)-1]
				s.more = s.more[:len(s.more)-1]
				break
			}
		}
	}
	return s.first < 0
}

func (s *epSet) each(f func(ep int32)) {
	if s.first < 0 {
		return
	}
	f(s.first)
	for _, e := range s.more {
		f(e)
	}
}

// lru is one endpoint's LRU of block hashes, a doubly linked list in a slab.
type lru struct {
	cap        int
	pos        *hmap
	nodes      []lruNode
	head, tail int32 // head: most recent
	free       int32
}

type lruNode struct {
	h          uint64
	prev, next int32
}

func newLRU(capacity int) *lru {
	return &lru{cap: capacity, pos: newHmap(min(capacity, 1<<16)), head: -1, tail: -1, free: -1}
}

func (l *lru) unlink(i int32) {
	n := &l.nodes[i]
	if n.prev >= 0 {
		l.nodes[n.prev].next = n.next
	} else {
		l.head = n.next
	}
	if n.next >= 0 {
		l.nodes[n.next].prev = n.prev
	} else {
		l.tail = n.prev
	}
}

func (l *lru) pushFront(i int32) {
	n := &l.nodes[i]
	n.prev, n.next = -1, l.head
	if l.head >= 0 {
		l.nodes[l.head].prev = i
	}
	l.head = i
	if l.tail < 0 {
		l.tail = i
	}
}

// add touches h; it returns the evicted hash (ok=true) when full.
func (l *lru) add(h uint64) (evicted uint64, ok bool) {
	if i, found := l.pos.get(h); found {
		l.unlink(i)
		l.pushFront(i)
		return 0, false
	}
	var i int32
	if l.pos.len() >= l.cap && l.tail >= 0 {
		i = l.tail
		evicted, ok = l.nodes[i].h, true
		l.unlink(i)
		l.pos.del(evicted)
	} else if l.free >= 0 {
		i = l.free
		l.free = l.nodes[i].next
	} else {
		l.nodes = append(l.nodes, lruNode{})
		i = int32(len(l.nodes) - 1)
	}
	l.nodes[i].h = h
	l.pos.put(h, i)
	l.pushFront(i)
	return evicted, ok
}

// approxIndex mirrors llm-d's approximate prefix indexer
// (requestcontrol/dataproducer/approximateprefix/indexer.go @ 520af478):
// hash → endpoints that (probably) cache it, plus one LRU per endpoint
// sized by its GPU block count; evicting from an endpoint's LRU removes the
// endpoint from the hash's set.
type approxIndex struct {
	byHash *epIndex
	lrus   []*lru
}

func newApproxIndex(n int) *approxIndex {
	return &approxIndex{byHash: newEPIndex(), lrus: make([]*lru, n)}
}

func (x *approxIndex) add(hashes []uint64, ep int, capacity int) {
	l := x.lrus[ep]
	if l == nil {
		l = newLRU(capacity)
		x.lrus[ep] = l
	}
	for _, h := range hashes {
		if ev, ok := l.add(h); ok {
			x.byHash.remove(ev, int32(ep))
		}
	}
	for _, h := range hashes {
		x.byHash.add(h, int32(ep))
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
		s := x.byHash.get(h)
		if s == nil || s.first < 0 {
			return
		}
		counts[s.first]++
		for _, e := range s.more {
			counts[e]++
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
	pending []kvEvent
	head    int
	// speculative entries (speculativeIndexing): blocks the router expects
	// an endpoint to cache because it just sent the prompt there, kept
	// until their TTL even if no KV event confirms them.
	spec     *epIndex
	specQ    []specEntry
	specHead int
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
	x.specQ = append(x.specQ, specEntry{at: expiry, ep: int32(ep), hs: hs})
	for _, h := range hashes {
		x.spec.add(h, int32(ep))
	}
}

func (x *preciseIndex) expireSpec(now time.Duration) {
	for x.specHead < len(x.specQ) && x.specQ[x.specHead].at <= now {
		e := x.specQ[x.specHead]
		x.specQ[x.specHead] = specEntry{}
		x.specHead++
		for _, h := range e.hs {
			x.spec.remove(h, e.ep)
		}
		x.specFree = append(x.specFree, e.hs)
	}
	if x.specHead == len(x.specQ) {
		x.specQ, x.specHead = x.specQ[:0], 0
	}
}

func (x *preciseIndex) event(now time.Duration, ep int, h uint64, stored bool) {
	x.pending = append(x.pending, kvEvent{at: now + x.delay, ep: int32(ep), stored: stored, h: h})
}

// advance applies every event due by now and drops expired speculation.
func (x *preciseIndex) advance(now time.Duration) {
	x.expireSpec(now)
	for x.head < len(x.pending) && x.pending[x.head].at <= now {
		ev := x.pending[x.head]
		x.head++
		if ev.stored {
			x.byHash.add(ev.h, ev.ep)
		} else {
			x.byHash.remove(ev.h, ev.ep)
		}
	}
	if x.head == len(x.pending) {
		x.pending, x.head = x.pending[:0], 0
	} else if x.head > 4096 && x.head*2 > len(x.pending) {
		n := copy(x.pending, x.pending[x.head:])
		x.pending, x.head = x.pending[:n], 0
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
