package engine

import (
	"math/rand/v2"
	"testing"
)

// The table must agree with a Go map under random inserts and deletes,
// including the wrap-around and backward-shift paths of a small table and
// growth. As in the pool, a registered block carries its hash (blk[v].hash).
func TestHashTableMatchesMap(t *testing.T) {
	for _, capacity := range []int{1, 8, 100} {
		rng := rand.New(rand.NewPCG(uint64(capacity), 1))
		blk := make([]block, 400)
		ht := newHashTable(capacity, blk)
		ref := map[uint64]int32{}
		free := make([]int32, 0, len(blk))
		for b := len(blk) - 1; b >= 1; b-- {
			free = append(free, int32(b))
		}
		var keys []uint64
		for i := 0; i < 20000; i++ {
			switch op := rng.IntN(3); {
			case (op == 0 || len(keys) == 0) && len(free) > 0:
				k := uint64(rng.IntN(300)) + 1 // small key space: repeats and collisions
				if rng.IntN(4) == 0 {
					k = rng.Uint64() | 1
				}
				v := free[len(free)-1]
				_, had := ref[k]
				if ht.put(k, v) == had {
					t.Fatalf("put(%d): inserted=%v but map had it=%v", k, !had, had)
				}
				if !had {
					free = free[:len(free)-1]
					blk[v].hash = k
					ref[k] = v
					keys = append(keys, k)
				}
			case op == 1 && len(keys) > 0:
				j := rng.IntN(len(keys))
				k := keys[j]
				keys[j] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
				v := ref[k]
				ht.del(k, v)
				blk[v].hash = 0
				free = append(free, v)
				delete(ref, k)
			case len(keys) > 0:
				k := keys[rng.IntN(len(keys))]
				if v, ok := ht.get(k); !ok || v != ref[k] {
					t.Fatalf("get(%d) = %d,%v want %d", k, v, ok, ref[k])
				}
			}
			if ht.n != len(ref) {
				t.Fatalf("size %d, map %d", ht.n, len(ref))
			}
		}
		for k, v := range ref {
			if got, ok := ht.get(k); !ok || got != v {
				t.Fatalf("final get(%d) = %d,%v want %d", k, got, ok, v)
			}
		}
		if _, ok := ht.get(999999); ok {
			t.Fatal("absent key found")
		}
	}
}
