package router

import "math/bits"

// hmap maps a block hash to an int32 on the prefix indexes' hot path: a
// router with an approximate index inserts and evicts one entry per prompt
// block of every request it routes, so the index churns at the request
// rate. Go's map leaves tombstones behind that churn and slows down as they
// pile up; this table uses open addressing with linear probing and
// backward-shift deletion (no tombstones), at most half full, in one array
// of 16-byte slots. Key 0 marks an empty slot: engine.PromptBlockHashes and
// the engines' KV events never name a block 0.
type hmap struct {
	slots []hslot
	shift uint
	mask  uint64
	n     int
}

type hslot struct {
	k uint64
	v int32
}

func newHmap(capacity int) *hmap {
	size := 1 << bits.Len(uint(2*max(capacity, 8)-1))
	return &hmap{slots: make([]hslot, size), shift: uint(64 - bits.TrailingZeros(uint(size))), mask: uint64(size - 1)}
}

func (m *hmap) home(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> m.shift }

func (m *hmap) len() int { return m.n }

// get returns k's value.
func (m *hmap) get(k uint64) (int32, bool) {
	for i := m.home(k); ; i = (i + 1) & m.mask {
		s := &m.slots[i]
		if s.k == k {
			return s.v, true
		}
		if s.k == 0 {
			return 0, false
		}
	}
}

// put sets k's value.
func (m *hmap) put(k uint64, v int32) {
	i := m.home(k)
	for ; m.slots[i].k != 0; i = (i + 1) & m.mask {
		if m.slots[i].k == k {
			m.slots[i].v = v
			return
		}
	}
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
		m.put(k, v)
		return
	}
	m.slots[i] = hslot{k, v}
	m.n++
}

// del removes k.
func (m *hmap) del(k uint64) {
	i := m.home(k)
	for ; m.slots[i].k != k; i = (i + 1) & m.mask {
		if m.slots[i].k == 0 {
			return
		}
	}
	// Backward shift: pull later entries of the probe run into the hole.
	for j := (i + 1) & m.mask; m.slots[j].k != 0; j = (j + 1) & m.mask {
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j-m.home(m.slots[j].k))&m.mask >= (j-i)&m.mask {
			m.slots[i] = m.slots[j]
			i = j
		}
	}
	m.slots[i] = hslot{}
	m.n--
}

func (m *hmap) grow() {
	old := m.slots
	*m = *newHmap(len(old))
	for _, s := range old {
		if s.k != 0 {
			i := m.home(s.k)
			for m.slots[i].k != 0 {
				i = (i + 1) & m.mask
			}
			m.slots[i] = s
			m.n++
		}
	}
}

// epIndex maps a block hash to the endpoints holding it: the sets live in
// a slab, the table holds their slot numbers, and freed slots are reused.
type epIndex struct {
	m    *hmap
	sets []holders
	free []int32
}

func newEPIndex() *epIndex { return &epIndex{m: newHmap(1024)} }

// get returns the set holding h, nil when no endpoint does.
func (x *epIndex) get(h uint64) *holders {
	if i, ok := x.m.get(h); ok {
		return &x.sets[i]
	}
	return nil
}

// entry returns the slot of h's set, creating an empty one when none
// holds it.
func (x *epIndex) entry(h uint64) int32 {
	if i, ok := x.m.get(h); ok {
		return i
	}
	var i int32
	if n := len(x.free); n > 0 {
		i, x.free = x.free[n-1], x.free[:n-1]
		x.sets[i].first.ep, x.sets[i].more = -1, x.sets[i].more[:0]
	} else {
		x.sets = append(x.sets, holders{first: epNode{ep: -1}})
		i = int32(len(x.sets) - 1)
	}
	x.m.put(h, i)
	return i
}

// add records that ep holds h.
func (x *epIndex) add(h uint64, ep int32) {
	if s := &x.sets[x.entry(h)]; !s.has(ep) {
		s.add(epNode{ep: ep})
	}
}

// remove records that ep no longer holds h.
func (x *epIndex) remove(h uint64, ep int32) {
	i, ok := x.m.get(h)
	if !ok {
		return
	}
	if x.sets[i].drop(ep) {
		x.m.del(h)
		x.free = append(x.free, i)
	}
}

// len is the number of hashes some endpoint holds.
func (x *epIndex) len() int { return x.m.len() }
