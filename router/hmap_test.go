package router

import (
	"math/rand/v2"
	"testing"
)

// TestHmapMatchesGoMap drives the table and a Go map with the same random
// puts, gets and deletes on a small key space (so probe runs collide,
// wrap and shift) and checks they always agree.
func TestHmapMatchesGoMap(t *testing.T) {
	for _, keys := range []uint64{5, 60, 3000} {
		m, ref := newHmap(4), map[uint64]int32{}
		rng := rand.New(rand.NewPCG(1, keys))
		for step := 0; step < 200000; step++ {
			k := 1 + rng.Uint64N(keys)
			if keys == 3000 {
				k *= 0x9e3779b97f4a7c15 // spread keys over the 64 bits too
			}
			switch rng.IntN(3) {
			case 0:
				v := rng.Int32()
				m.put(k, v)
				ref[k] = v
			case 1:
				m.del(k)
				delete(ref, k)
			}
			v, ok := m.get(k)
			rv, rok := ref[k]
			if ok != rok || v != rv || m.len() != len(ref) {
				t.Fatalf("keys %d step %d: key %d got (%d,%v) len %d, want (%d,%v) len %d", keys, step, k, v, ok, m.len(), rv, rok, len(ref))
			}
		}
		for k, rv := range ref {
			if v, ok := m.get(k); !ok || v != rv {
				t.Fatalf("keys %d: final key %d got (%d,%v), want %d", keys, k, v, ok, rv)
			}
		}
	}
}

func TestEPIndexSets(t *testing.T) {
	x := newEPIndex()
	x.add(7, 1)
	x.add(7, 3)
	x.add(7, 1)
	x.add(9, 2)
	if s := x.get(7); s == nil || !s.has(1) || !s.has(3) || s.has(2) {
		t.Fatalf("set of 7 = %+v", s)
	}
	x.remove(7, 1)
	x.remove(7, 3)
	if x.get(7) != nil || x.len() != 1 {
		t.Fatalf("7 should be gone, len %d", x.len())
	}
	x.add(11, 4) // reuses the freed set
	if s := x.get(11); s == nil || !s.has(4) || s.has(3) || s.has(1) {
		t.Fatalf("reused set of 11 = %+v", s)
	}
	x.remove(12, 1) // absent: no effect
	if x.len() != 2 {
		t.Fatalf("len %d", x.len())
	}
}
