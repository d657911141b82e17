package engine

import "math/bits"

// hashTable maps a block hash to the block caching it, on the hot path
// (every block filled registers a hash, every reused block drops one). Open
// addressing with linear probing and backward-shift deletion, at most half
// full. A slot holds only a 32-bit fingerprint of the hash and the block id
// (8 bytes, so the table for a pool of 26k blocks fits in 512 KiB): the full
// hash lives in the block itself (block.hash), which confirms a fingerprint
// match. The slot a hash starts probing at is a function of its fingerprint
// alone, so moving entries needs no trip to the blocks.
type hashTable struct {
	slots []htSlot
	blk   []block // the pool's blocks: entry (fp, b) stands for blk[b].hash
	shift uint
	mask  uint32
	n     int
}

type htSlot struct {
	fp  uint32 // 0: empty
	val int32
}

func newHashTable(capacity int, blk []block) *hashTable {
	size := 1 << bits.Len(uint(2*max(capacity, 8)-1))
	return &hashTable{
		slots: make([]htSlot, size),
		blk:   blk,
		shift: uint(32 - bits.TrailingZeros(uint(size))),
		mask:  uint32(size - 1),
	}
}

// fingerprint is the hash's high 32 bits after mixing, never 0.
func fingerprint(k uint64) uint32 {
	if f := uint32((k * 0x9e3779b97f4a7c15) >> 32); f != 0 {
		return f
	}
	return 1
}

func (t *hashTable) home(fp uint32) uint32 { return (fp * 0x9e3779b9) >> t.shift }

// get returns the block registered under k.
func (t *hashTable) get(k uint64) (int32, bool) {
	fp := fingerprint(k)
	for i := t.home(fp); ; i = (i + 1) & t.mask {
		s := t.slots[i]
		if s.fp == 0 {
			return 0, false
		}
		if s.fp == fp && t.blk[s.val].hash == k {
			return s.val, true
		}
	}
}

// put registers k → v unless k is registered, and reports whether it did.
// The caller then sets blk[v].hash = k.
func (t *hashTable) put(k uint64, v int32) bool {
	fp := fingerprint(k)
	i := t.home(fp)
	for ; t.slots[i].fp != 0; i = (i + 1) & t.mask {
		if s := t.slots[i]; s.fp == fp && t.blk[s.val].hash == k {
			return false
		}
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
		return t.put(k, v)
	}
	t.slots[i] = htSlot{fp, v}
	t.n++
	return true
}

// del removes the entry k → v (v still carries k).
func (t *hashTable) del(k uint64, v int32) {
	fp := fingerprint(k)
	i := t.home(fp)
	for ; t.slots[i] != (htSlot{fp, v}); i = (i + 1) & t.mask {
		if t.slots[i].fp == 0 {
			return
		}
	}
	// Backward shift: pull later entries of the probe run into the hole.
	for j := (i + 1) & t.mask; t.slots[j].fp != 0; j = (j + 1) & t.mask {
		home := t.home(t.slots[j].fp)
		// Move j into the hole at i unless its home lies cyclically in (i, j].
		if (j-home)&t.mask >= (j-i)&t.mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = htSlot{}
	t.n--
}

func (t *hashTable) grow() {
	old := t.slots
	*t = *newHashTable(len(old), t.blk)
	for _, s := range old {
		if s.fp == 0 {
			continue
		}
		i := t.home(s.fp)
		for t.slots[i].fp != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = s
		t.n++
	}
}
