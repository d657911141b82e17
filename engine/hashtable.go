package engine

import "math/bits"

// hashTable maps a block hash to the block caching it: open addressing with
// linear probing and backward-shift deletion, sized at construction to keep
// the load under one half. It replaces a Go map on the hot path (every block
// filled registers a hash, every reused block drops one): one probe is one
// cache line instead of a map's group walk. Keys are already well-mixed
// 64-bit hashes; 0 marks an empty slot (block hashes are never 0).
type hashTable struct {
	slots []htSlot
	shift uint
	mask  uint64
	n     int
}

// htSlot keeps key and value on one cache line.
type htSlot struct {
	key uint64
	val int32
}

func newHashTable(capacity int) *hashTable {
	size := 1 << bits.Len(uint(2*max(capacity, 8)-1))
	return &hashTable{
		slots: make([]htSlot, size),
		shift: uint(64 - bits.TrailingZeros(uint(size))),
		mask:  uint64(size - 1),
	}
}

func (t *hashTable) slot(k uint64) uint64 { return (k * 0x9e3779b97f4a7c15) >> t.shift }

func (t *hashTable) get(k uint64) (int32, bool) {
	for i := t.slot(k); ; i = (i + 1) & t.mask {
		switch t.slots[i].key {
		case k:
			return t.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// put inserts k → v if k is absent and reports whether it did.
func (t *hashTable) put(k uint64, v int32) bool {
	i := t.slot(k)
	for ; t.slots[i].key != 0; i = (i + 1) & t.mask {
		if t.slots[i].key == k {
			return false
		}
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
		return t.put(k, v)
	}
	t.slots[i] = htSlot{k, v}
	t.n++
	return true
}

func (t *hashTable) del(k uint64) {
	i := t.slot(k)
	for ; t.slots[i].key != k; i = (i + 1) & t.mask {
		if t.slots[i].key == 0 {
			return
		}
	}
	// Backward-shift: pull later entries of the probe run into the hole.
	for j := (i + 1) & t.mask; t.slots[j].key != 0; j = (j + 1) & t.mask {
		home := t.slot(t.slots[j].key)
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
	old := *t
	*t = *newHashTable(len(old.slots))
	for _, sl := range old.slots {
		if sl.key != 0 {
			t.put(sl.key, sl.val)
		}
	}
}
