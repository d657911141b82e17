// Package kvtier is an offloaded KV cache tier: a set of KV chunks, named
// by hash, with a capacity in chunks and an eviction policy. It mirrors the
// scheduler-side OffloadingManager of vLLM's native KV offload (vLLM v0.11–
// v0.12: vllm/v1/kv_offload/lru_manager.py LRUOffloadingManager and
// arc_manager.py ARCOffloadingManager): a request's chunks are looked up
// (Lookup counts the leading ready ones), touched (Touch), pinned while they
// are read back to the GPU (PrepareLoad/CompleteLoad), and written in two
// phases (PrepareStore makes room and reserves them, not yet readable and
// not evictable; CompleteStore makes them readable).
//
// A chunk's hash is the engine's chained hash of the last GPU block of the
// chunk, so a hit on chunk k implies the whole prefix up to it matches.
//
// The Tier interface is what an engine uses. A Cache may be given to several
// engines at once (a filesystem or Mooncake store shared by replicas): the
// engines then see each other's chunks and compete for its capacity. The
// simulator is single-threaded, so sharing needs no locking.
//
// Every operation is O(1) per chunk and allocates nothing: the entries are
// preallocated slots on intrusive doubly linked lists, indexed by an
// open-addressing hash table (with a small memo of recently reserved
// chunks in front). TouchRun touches a request's growing prefix in time
// proportional to its new chunks, not to the prefix, as long as the
// prefix's chunks have not moved since its last touch.
package kvtier

import (
	"fmt"
	"math/bits"
	"time"
)

// Policy is the eviction policy (vLLM's kv_connector_extra_config
// "eviction_policy": "lru", the default, or "arc").
type Policy uint8

const (
	LRU Policy = iota
	ARC
)

func (p Policy) String() string {
	switch p {
	case LRU:
		return "lru"
	case ARC:
		return "arc"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// ParsePolicy reads an eviction policy's name.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "lru", "":
		return LRU, nil
	case "arc":
		return ARC, nil
	}
	return 0, fmt.Errorf("eviction policy %q: must be lru or arc", s)
}

// Tier is the offloading manager an engine talks to. Hash slices are in
// prefix order; none is retained.
type Tier interface {
	// Lookup counts the leading chunks of hs that are stored and readable.
	Lookup(hs []uint64) int
	// Touch marks hs as used now (most recent last in hs first: vLLM
	// touches in reverse so the prefix's head ends most recent).
	Touch(hs []uint64)
	// PrepareLoad pins hs (all readable) while they are read back.
	PrepareLoad(hs []uint64)
	// CompleteLoad unpins chunks PrepareLoad pinned.
	CompleteLoad(hs []uint64)
	// PrepareStore reserves room for the chunks of hs not stored yet,
	// evicting unpinned chunks by the policy, and appends them to dst. It
	// reports false, and changes nothing, when pinned chunks leave too
	// little room. Reserved chunks are neither readable nor evictable
	// until CompleteStore.
	PrepareStore(hs []uint64, dst []uint64) (stored []uint64, evicted int, ok bool)
	// PrepareStoreFresh is PrepareStore for distinct chunks the caller
	// knows the tier has never held or has forgotten (not even as ARC
	// ghosts): a private request's chunks it has not stored before. It
	// skips looking them up.
	PrepareStoreFresh(hs []uint64, dst []uint64) (stored []uint64, evicted int, ok bool)
	// CompleteStore makes chunks PrepareStore reserved readable.
	CompleteStore(hs []uint64)
	// TouchRun is Touch(hs) for a caller that touches a growing prefix
	// again and again (a request's chunks after each store): each call's
	// hs extends the previous call's with the same handle. Release the
	// handle with ReleaseRun when done with it.
	TouchRun(run *Run, hs []uint64)
	// ReleaseRun lets go of run (a zero or stale Run is fine).
	ReleaseRun(run *Run)
	// Capacity is the tier's size in chunks; Len the chunks it holds.
	Capacity() int
	Len() int
}

// Lists a slot can be on. LRU uses t1 only; ARC all four (b1, b2 are the
// ghost lists of recently evicted hashes, which hold no data).
const (
	listFree uint8 = iota
	listT1
	listT2
	listB1
	listB2
	numLists
)

type slot struct {
	hash       uint64
	prev, next int32
	// run: the run (index + 1, 0: none) whose contiguous stretch of T1
	// this slot is in, valid while runGen matches the run's gen.
	run    int32
	runGen uint32
	// ref: −1 while being stored (not ready), else the number of loads
	// reading it (vLLM's BlockStatus.ref_cnt).
	ref  int32
	list uint8
}

type list struct{ head, tail, n int32 } // head: least recently used

// Cache is a Tier with LRU or ARC eviction.
type Cache struct {
	policy   Policy
	capacity int
	slots    []slot
	lists    [numLists]list
	index    table
	// ARC's adaptive target size of T1 (vLLM's target_t1_size).
	target int
	// Evictions counts chunks evicted to make room.
	evictions int64
	pinned    int // resident chunks with ref ≠ 0

	runs     []runRec
	freeRuns []int32
	scratch  []int32
	// memo remembers the slot of the hash last reserved in each of its
	// cells (the hash's top 32 bits, then the slot plus one; 0: none): a
	// request's chunks are looked up again when touched and when their
	// stores complete, and the memo (small enough to stay in cache) finds
	// them without probing the index.
	memo     []uint64
	memoMask uint64
}

// memoMax is the most cells a memo has (128 KiB).
const memoMax = 1 << 14

// find is index.get(h): the memo's slot when it holds h (a slot in use
// holding h is the one the index maps h to), else the index's.
func (c *Cache) find(h uint64) (int32, bool) {
	if m := c.memo[h&c.memoMask]; m>>32 == h>>32 && uint32(m) != 0 {
		if i := int32(uint32(m)) - 1; c.slots[i].hash == h && c.slots[i].list != listFree {
			return i, true
		}
	}
	return c.index.get(h, c.slots)
}

// New makes a tier of capacity chunks (≥ 1).
func New(capacity int, p Policy) (*Cache, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("KV offload tier of %d chunks: need at least 1", capacity)
	}
	if p != LRU && p != ARC {
		return nil, fmt.Errorf("eviction policy %d: must be lru or arc", p)
	}
	n := capacity
	if p == ARC {
		n = 3 * capacity // T1+T2 ≤ c, B1 ≤ c, B2 ≤ c
	}
	c := &Cache{policy: p, capacity: capacity, slots: make([]slot, n), index: newTable(n)}
	m := min(1<<bits.Len(uint(n-1)), memoMax)
	c.memo, c.memoMask = make([]uint64, m), uint64(m-1)
	for i := range c.lists {
		c.lists[i] = list{-1, -1, 0}
	}
	for i := range c.slots {
		c.slots[i] = slot{prev: -1, next: -1}
		c.push(listFree, int32(i))
	}
	return c, nil
}

// Capacity is the tier's size in chunks.
func (c *Cache) Capacity() int { return c.capacity }

// Len is the number of chunks stored or being stored.
func (c *Cache) Len() int { return int(c.lists[listT1].n + c.lists[listT2].n) }

// Evictions is the number of chunks evicted so far.
func (c *Cache) Evictions() int64 { return c.evictions }

// PinnedChunks is the number of chunks being loaded or stored.
func (c *Cache) PinnedChunks() int { return c.pinned }

// Contains reports whether h is stored or being stored.
func (c *Cache) Contains(h uint64) bool {
	i, ok := c.find(h)
	return ok && c.resident(i)
}

func (c *Cache) resident(i int32) bool {
	l := c.slots[i].list
	return l == listT1 || l == listT2
}

// Ready reports whether h is stored and readable.
func (c *Cache) Ready(h uint64) bool {
	i, ok := c.find(h)
	return ok && c.resident(i) && c.slots[i].ref >= 0
}

// Pinned reports whether h is held by a load or a store in progress.
func (c *Cache) Pinned(h uint64) bool {
	i, ok := c.find(h)
	return ok && c.resident(i) && c.slots[i].ref != 0
}

func (c *Cache) push(l uint8, i int32) {
	s, L := &c.slots[i], &c.lists[l]
	s.list, s.prev, s.next = l, L.tail, -1
	if L.tail >= 0 {
		c.slots[L.tail].next = i
	} else {
		L.head = i
	}
	L.tail = i
	L.n++
}

func (c *Cache) unlink(i int32) {
	s := &c.slots[i]
	if s.run != 0 {
		if r := &c.runs[s.run-1]; r.gen == s.runGen {
			r.intact = false // a member moves: the stretch is broken
		}
		s.run = 0
	}
	L := &c.lists[s.list]
	if s.prev >= 0 {
		c.slots[s.prev].next = s.next
	} else {
		L.head = s.next
	}
	if s.next >= 0 {
		c.slots[s.next].prev = s.prev
	} else {
		L.tail = s.prev
	}
	s.prev, s.next = -1, -1
	L.n--
}

func (c *Cache) move(i int32, l uint8) {
	c.unlink(i)
	c.push(l, i)
}

// Lookup counts the leading ready chunks of hs.
func (c *Cache) Lookup(hs []uint64) int {
	for k, h := range hs {
		if !c.Ready(h) {
			return k
		}
	}
	return len(hs)
}

// Touch marks hs used, last to first.
func (c *Cache) Touch(hs []uint64) {
	for k := len(hs) - 1; k >= 0; k-- {
		i, ok := c.find(hs[k])
		if !ok {
			continue
		}
		s := &c.slots[i]
		switch s.list {
		case listT1:
			if c.policy == LRU || s.ref < 0 {
				c.move(i, listT1) // LRU: most recent; ARC: a chunk just reserved was not used twice
			} else {
				c.move(i, listT2) // ARC: used twice, frequent
			}
		case listT2:
			c.move(i, listT2)
		case listB1:
			b1, b2 := int(c.lists[listB1].n), int(c.lists[listB2].n)
			c.target = min(c.target+max(1, b2/b1), c.capacity)
		case listB2:
			b1, b2 := int(c.lists[listB1].n), int(c.lists[listB2].n)
			c.target = max(c.target-max(1, b1/b2), 0)
		}
	}
}

// PrepareLoad pins hs for reading.
func (c *Cache) PrepareLoad(hs []uint64) {
	for _, h := range hs {
		if i, ok := c.find(h); ok && c.resident(i) && c.slots[i].ref >= 0 {
			if c.slots[i].ref == 0 {
				c.pinned++
			}
			c.slots[i].ref++
		}
	}
}

// CompleteLoad unpins hs.
func (c *Cache) CompleteLoad(hs []uint64) {
	for _, h := range hs {
		if i, ok := c.find(h); ok && c.resident(i) && c.slots[i].ref > 0 {
			c.slots[i].ref--
			if c.slots[i].ref == 0 {
				c.pinned--
			}
		}
	}
}

// PrepareStore reserves the chunks of hs not stored yet (see Tier). As in
// vLLM, the chunks to store are chosen before evicting, so an eviction
// may take a chunk of hs that was already stored.
func (c *Cache) PrepareStore(hs []uint64, dst []uint64) ([]uint64, int, bool) {
	return c.prepareStore(hs, dst, false)
}

// PrepareStoreFresh is PrepareStore for chunks not in the tier at all.
func (c *Cache) PrepareStoreFresh(hs []uint64, dst []uint64) ([]uint64, int, bool) {
	return c.prepareStore(hs, dst, true)
}

func (c *Cache) prepareStore(hs []uint64, dst []uint64, fresh bool) ([]uint64, int, bool) {
	base := len(dst)
	if fresh {
		dst = append(dst, hs...)
	} else {
		for _, h := range hs {
			if !c.Contains(h) {
				dst = append(dst, h)
			}
		}
	}
	need := len(dst) - base
	if need == 0 {
		return dst, 0, true
	}
	evict := need - (c.capacity - c.Len())
	if evict > 0 && c.evictable() < evict {
		return dst[:base], 0, false // vLLM: "cannot store"; the caller retries later
	}
	for k := 0; k < evict; k++ {
		c.evictOne()
	}
	c.boundGhosts()
	out := base
	for _, h := range dst[base:] {
		var i int32
		var ok bool
		if !fresh {
			i, ok = c.find(h)
		}
		if ok && c.resident(i) {
			continue // a duplicate in hs
		}
		if ok {
			c.unlink(i) // a ghost entry comes back
		} else {
			// A slot is free: the resident chunks leave room for this
			// one, and the ghost lists are bounded (New sizes the slots).
			i = c.lists[listFree].head
			c.unlink(i)
			c.slots[i].hash = h
			c.index.put(h, i)
			c.memo[h&c.memoMask] = h>>32<<32 | uint64(uint32(i+1))
		}
		c.slots[i].ref = -1
		c.pinned++
		c.push(listT1, i)
		dst[out] = h
		out++
	}
	return dst[:out], max(evict, 0), true
}

// evictable counts unpinned resident chunks.
func (c *Cache) evictable() int { return c.Len() - c.pinned }

// evictOne evicts the policy's victim (the caller checked one exists).
// LRU: the least recently used unpinned chunk. ARC: T1's oldest unpinned
// chunk when T1 is at least its target, else T2's, falling back to the other
// list; the victim's hash joins its ghost list.
func (c *Cache) evictOne() {
	var i int32 = -1
	if c.policy == LRU {
		c.forget(c.oldestUnpinned(listT1))
		c.evictions++
		return
	}
	ghost := listB2
	if int(c.lists[listT1].n) >= c.target {
		if i = c.oldestUnpinned(listT1); i >= 0 {
			ghost = listB1
		}
	}
	if i < 0 {
		if i = c.oldestUnpinned(listT2); i < 0 {
			// vLLM's ARC fails the store here when T1 is under its
			// target; BLIS takes T1's oldest unpinned chunk instead.
			i, ghost = c.oldestUnpinned(listT1), listB1
		}
	}
	c.move(i, ghost)
	c.evictions++
}

func (c *Cache) oldestUnpinned(l uint8) int32 {
	for i := c.lists[l].head; i >= 0; i = c.slots[i].next {
		if c.slots[i].ref == 0 {
			return i
		}
	}
	return -1
}

// boundGhosts keeps each ghost list at most capacity long (oldest go).
func (c *Cache) boundGhosts() {
	for _, l := range [...]uint8{listB1, listB2} {
		for int(c.lists[l].n) > c.capacity {
			c.forget(c.lists[l].head)
		}
	}
}

// forget drops slot i's hash from the tier (an LRU eviction, or a ghost
// entry beyond ARC's bound) and frees the slot.
func (c *Cache) forget(i int32) {
	c.unlink(i)
	c.index.del(c.slots[i].hash, i)
	c.push(listFree, i)
}

// CompleteStore makes reserved chunks readable.
func (c *Cache) CompleteStore(hs []uint64) {
	for _, h := range hs {
		if i, ok := c.find(h); ok && c.resident(i) && c.slots[i].ref < 0 {
			c.slots[i].ref = 0
			c.pinned--
		}
	}
}

// table maps a hash to its slot: open addressing, linear probing,
// backward-shift deletion, at most half full. An entry is one word: the
// hash's fingerprint (its top 32 bits after a multiplicative mix; the
// probe starts at the fingerprint's top bits) above the slot plus one (0:
// empty). One word per entry keeps a probe to one cache line and the table
// small; a fingerprint match is confirmed against the slot's hash (a slot
// the caller reads anyway), and a deletion finds its entry by slot.
type table struct {
	e     []uint64
	mask  uint64
	shift uint8 // 32 − log2(len(e))
}

func newTable(n int) table {
	b := bits.Len(uint(2*max(n, 4) - 1))
	return table{e: make([]uint64, 1<<b), mask: 1<<b - 1, shift: uint8(32 - b)}
}

// fp is k's fingerprint.
func fp(k uint64) uint32 { return uint32((k * 0x9e3779b97f4a7c15) >> 32) }

func (t *table) home(f uint32) uint64 { return uint64(f >> t.shift) }

// get is k's slot, confirmed in slots.
func (t *table) get(k uint64, slots []slot) (int32, bool) {
	f := fp(k)
	for i := t.home(f); ; i = (i + 1) & t.mask {
		e := t.e[i]
		if e == 0 {
			return 0, false
		}
		if uint32(e>>32) == f {
			if v := int32(uint32(e)) - 1; slots[v].hash == k {
				return v, true
			}
		}
	}
}

// put indexes slot v under k, which the table does not hold.
func (t *table) put(k uint64, v int32) {
	f := fp(k)
	i := t.home(f)
	for t.e[i] != 0 {
		i = (i + 1) & t.mask
	}
	t.e[i] = uint64(f)<<32 | uint64(uint32(v+1))
}

// del drops k's entry, which names slot v.
func (t *table) del(k uint64, v int32) {
	want := uint64(fp(k))<<32 | uint64(uint32(v+1))
	i := t.home(fp(k))
	for t.e[i] != want {
		if t.e[i] == 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	for j := (i + 1) & t.mask; t.e[j] != 0; j = (j + 1) & t.mask {
		h := t.home(uint32(t.e[j] >> 32))
		if (j-h)&t.mask >= (j-i)&t.mask {
			t.e[i] = t.e[j]
			i = j
		}
	}
	t.e[i] = 0
}

// Link is a FIFO transfer queue at a fixed bandwidth: a host link in one
// direction, or a storage tier's read or write path. Transfers are
// serialised at BW; each one's Latency is added to its completion but does
// not hold the queue (the next transfer's setup overlaps). A Link given to
// several engines (a storage tier shared by replicas) makes their
// transfers queue behind each other; the callers' times must not go back.
type Link struct {
	BW      float64       // bytes/s
	Latency time.Duration // per transfer
	free    time.Duration // when the queue is next idle
}

// Send queues bytes at time at and returns when they have arrived.
func (l *Link) Send(at time.Duration, bytes int64) time.Duration {
	start := max(at, l.free)
	l.free = start + time.Duration(float64(bytes)/l.BW*1e9)
	return l.free + l.Latency
}

// Duration is how long bytes take on an idle link.
func (l *Link) Duration(bytes int64) time.Duration {
	return l.Latency + time.Duration(float64(bytes)/l.BW*1e9)
}

// Run is a caller's handle on a run: the chunks of a prefix it touched
// last, which an LRU tier keeps as one contiguous stretch of its list (most
// recent last, in reverse prefix order) for as long as none of them moves.
// Touching the prefix again, extended by a few chunks, then splices the
// stretch to the list's tail in O(1) and handles only the new chunks,
// where Touch walks the whole prefix: a request's decode-time stores
// touch all its chunks each time (vLLM's _get_reqs_to_store), O(chunks²)
// per request. The zero Run is none.
type Run struct {
	id  int32 // index + 1
	gen uint32
}

type runRec struct {
	first, last int32 // the stretch: first (hs[n-1]) nearest the head, last (hs[0])
	n           int32 // chunks: hs[:n]
	gen         uint32
	intact      bool // no member has moved since the stretch formed
}

// rec is run's record while run is live.
func (c *Cache) rec(run *Run) *runRec {
	if run.id == 0 || int(run.id) > len(c.runs) {
		return nil
	}
	if r := &c.runs[run.id-1]; r.gen == run.gen {
		return r
	}
	return nil
}

// LiveRuns counts the runs handed out by TouchRun and not released.
func (c *Cache) LiveRuns() int { return len(c.runs) - len(c.freeRuns) }

// ReleaseRun lets go of run.
func (c *Cache) ReleaseRun(run *Run) {
	if r := c.rec(run); r != nil {
		r.gen++
		r.intact = false
		c.freeRuns = append(c.freeRuns, run.id-1)
	}
	*run = Run{}
}

// TouchRun is Touch(hs), where hs extends the hs of the last TouchRun
// with the same run. LRU only takes the fast path (ARC moves a chunk
// touched twice to T2, so its order is not one stretch's).
func (c *Cache) TouchRun(run *Run, hs []uint64) {
	if c.policy != LRU {
		c.Touch(hs)
		return
	}
	r := c.rec(run)
	if r != nil && r.intact && int(r.n) <= len(hs) && c.slots[r.last].hash == hs[0] && c.slots[r.first].hash == hs[r.n-1] {
		m := int(r.n)
		id, gen := run.id, r.gen
		// The new chunks: all in the tier, none in the stretch already
		// (that needs a repeated hash), else the long way.
		c.scratch = c.scratch[:0]
		fast := true
		for k := len(hs) - 1; k >= m; k-- {
			i, ok := c.find(hs[k])
			if !ok || (c.slots[i].run == id && c.slots[i].runGen == gen) {
				fast = false
				break
			}
			c.scratch = append(c.scratch, i)
		}
		if fast {
			for _, i := range c.scratch {
				c.move(i, listT1)
			}
			c.splice(r.first, r.last)
			for _, i := range c.scratch {
				c.slots[i].run, c.slots[i].runGen = id, gen
			}
			if len(c.scratch) > 0 {
				r.first = c.scratch[0]
			}
			r.n = int32(len(hs))
			return
		}
	}
	c.Touch(hs)
	c.formRun(run, hs)
}

// splice moves T1's stretch first..last to its tail, in order.
func (c *Cache) splice(first, last int32) {
	L := &c.lists[listT1]
	if L.tail == last {
		return
	}
	p, n := c.slots[first].prev, c.slots[last].next // n ≥ 0: last is not the tail
	if p >= 0 {
		c.slots[p].next = n
	} else {
		L.head = n
	}
	c.slots[n].prev = p
	c.slots[first].prev = L.tail
	c.slots[L.tail].next = first
	c.slots[last].next = -1
	L.tail = last
}

// formRun makes run the stretch of hs at T1's tail, just touched, when
// all of hs is there (else run is released).
func (c *Cache) formRun(run *Run, hs []uint64) {
	i := c.lists[listT1].tail
	first := i
	for _, h := range hs {
		if i < 0 || c.slots[i].hash != h {
			c.ReleaseRun(run)
			return
		}
		first = i
		i = c.slots[i].prev
	}
	if len(hs) == 0 {
		c.ReleaseRun(run)
		return
	}
	r := c.rec(run)
	if r == nil {
		c.ReleaseRun(run)
		if n := len(c.freeRuns); n > 0 {
			run.id = c.freeRuns[n-1] + 1
			c.freeRuns = c.freeRuns[:n-1]
		} else {
			c.runs = append(c.runs, runRec{})
			run.id = int32(len(c.runs))
		}
		r = &c.runs[run.id-1]
	}
	r.gen++ // old members' tags lapse
	run.gen = r.gen
	r.first, r.last, r.n, r.intact = first, c.lists[listT1].tail, int32(len(hs)), true
	for k := c.lists[listT1].tail; ; k = c.slots[k].prev {
		c.slots[k].run, c.slots[k].runGen = run.id, r.gen
		if k == first {
			break
		}
	}
}
