package kvtier

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// store reserves and completes hs, failing the test if it cannot.
func store(t testing.TB, c *Cache, hs ...uint64) {
	t.Helper()
	got, _, ok := c.PrepareStore(hs, nil)
	if !ok {
		t.Fatalf("PrepareStore(%v) refused", hs)
	}
	c.CompleteStore(got)
}

func contents(c *Cache) []uint64 {
	var out []uint64
	for _, l := range [...]uint8{listT1, listT2} {
		for i := c.lists[l].head; i >= 0; i = c.slots[i].next {
			out = append(out, c.slots[i].hash)
		}
	}
	slices.Sort(out)
	return out
}

func TestLRUOrder(t *testing.T) {
	const a, b, cc, d = 1, 2, 3, 4
	tests := []struct {
		name string
		run  func(c *Cache)
		want []uint64
	}{
		{"hit a, insert d: b evicted", func(c *Cache) {
			store(t, c, a)
			store(t, c, b)
			store(t, c, cc)
			if c.Lookup([]uint64{a}) != 1 {
				t.Fatal("a not found")
			}
			c.Touch([]uint64{a})
			store(t, c, d)
		}, []uint64{a, cc, d}},
		{"no hit: a evicted", func(c *Cache) {
			store(t, c, a, b, cc)
			store(t, c, d)
		}, []uint64{b, cc, d}},
		{"touch reverses: head of a prefix is most recent", func(c *Cache) {
			store(t, c, a, b, cc)
			c.Touch([]uint64{a, b, cc}) // order becomes c, b, a (a most recent)
			store(t, c, d)
		}, []uint64{a, b, d}},
		{"pinned by a load is not evicted", func(c *Cache) {
			store(t, c, a, b, cc)
			c.PrepareLoad([]uint64{a})
			store(t, c, d)
		}, []uint64{a, cc, d}},
		{"unpinned after the load: evictable again", func(c *Cache) {
			store(t, c, a, b, cc)
			c.PrepareLoad([]uint64{a})
			c.CompleteLoad([]uint64{a})
			store(t, c, d)
		}, []uint64{b, cc, d}},
		{"already stored: nothing evicted", func(c *Cache) {
			store(t, c, a, b, cc)
			store(t, c, a, b)
		}, []uint64{a, b, cc}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(3, LRU)
			if err != nil {
				t.Fatal(err)
			}
			tt.run(c)
			if got := contents(c); !slices.Equal(got, tt.want) {
				t.Errorf("contents %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStoreTwoPhase(t *testing.T) {
	for _, p := range []Policy{LRU, ARC} {
		t.Run(p.String(), func(t *testing.T) {
			c, _ := New(2, p)
			got, ev, ok := c.PrepareStore([]uint64{7, 8}, nil)
			if !ok || ev != 0 || !slices.Equal(got, []uint64{7, 8}) {
				t.Fatalf("PrepareStore = %v %d %v", got, ev, ok)
			}
			if c.Lookup([]uint64{7, 8}) != 0 {
				t.Error("a chunk being stored is readable")
			}
			if !c.Pinned(7) {
				t.Error("a chunk being stored is not pinned")
			}
			// Both slots are being stored: no room for a third.
			if _, _, ok := c.PrepareStore([]uint64{9}, nil); ok {
				t.Error("evicted a chunk being stored")
			}
			c.CompleteStore(got)
			if c.Lookup([]uint64{7, 8, 9}) != 2 {
				t.Error("stored chunks not readable")
			}
			_, ev, ok = c.PrepareStore([]uint64{9}, nil)
			if !ok || ev != 1 || c.Evictions() != 1 || c.Len() != 2 {
				t.Errorf("third store: ok %v evicted %d (total %d) len %d", ok, ev, c.Evictions(), c.Len())
			}
		})
	}
}

func TestLookupStopsAtFirstMiss(t *testing.T) {
	c, _ := New(8, LRU)
	store(t, c, 1, 2, 4)
	if n := c.Lookup([]uint64{1, 2, 3, 4}); n != 2 {
		t.Errorf("Lookup = %d, want 2", n)
	}
}

func TestARC(t *testing.T) {
	tests := []struct {
		name string
		run  func(c *Cache)
		want []uint64
	}{
		{"a chunk used twice survives a scan", func(c *Cache) {
			store(t, c, 1, 2, 3)
			c.Touch([]uint64{1}) // 1 → T2
			store(t, c, 4)       // T1 (2,3) ≥ target 0: evict T1's oldest, 2
			store(t, c, 5)       // evict 3
			store(t, c, 6)       // evict 4; 1 stays in T2
		}, []uint64{1, 5, 6}},
		{"a ghost hit in B1 grows T1's target", func(c *Cache) {
			store(t, c, 1, 2, 3)
			c.Touch([]uint64{3})
			c.Touch([]uint64{2}) // T1 = {1}, T2 = {3, 2}
			store(t, c, 4)       // T1 (1 chunk) ≥ target 0: evict 1 → B1
			c.Touch([]uint64{1}) // B1 hit: target 1
			if c.target != 1 {
				t.Errorf("target %d, want 1", c.target)
			}
			store(t, c, 5) // T1 = {4} ≥ 1: evict 4
		}, []uint64{2, 3, 5}},
		{"a chunk just reserved is not promoted by a touch", func(c *Cache) {
			got, _, _ := c.PrepareStore([]uint64{1}, nil)
			c.Touch([]uint64{1})
			c.CompleteStore(got)
			store(t, c, 2, 3)
			store(t, c, 4) // 1 still in T1 and oldest: evicted
		}, []uint64{2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := New(3, ARC)
			tt.run(c)
			if got := contents(c); !slices.Equal(got, tt.want) {
				t.Errorf("contents %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	if _, err := New(0, LRU); err == nil {
		t.Error("capacity 0 accepted")
	}
	if _, err := New(4, Policy(9)); err == nil {
		t.Error("unknown policy accepted")
	}
	for _, s := range []string{"lru", "arc"} {
		if p, err := ParsePolicy(s); err != nil || p.String() != s {
			t.Errorf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePolicy("fifo"); err == nil {
		t.Error("fifo accepted")
	}
}

// TestTableChurn stores far more chunks than fit, so every slot and table
// entry is reused many times, and checks the index against the lists.
func TestTableChurn(t *testing.T) {
	for _, p := range []Policy{LRU, ARC} {
		c, _ := New(64, p)
		for k := uint64(1); k <= 10_000; k++ {
			store(t, c, k*0x9e37)
			if k%3 == 0 {
				c.Touch([]uint64{(k - 1) * 0x9e37})
			}
		}
		got := contents(c)
		if len(got) != 64 {
			t.Fatalf("%v: %d resident, want 64", p, len(got))
		}
		for _, h := range got {
			if !c.Ready(h) {
				t.Errorf("%v: %x resident but not found", p, h)
			}
		}
	}
}

var _ Tier = (*Cache)(nil)

// BenchmarkTierLRU is the steady state of a full LRU tier: a lookup that
// hits, a touch, and a store that evicts.
//
//	go test ./kvtier -run x -bench . -benchmem
func BenchmarkTierLRU(b *testing.B) { benchTier(b, LRU) }

func BenchmarkTierARC(b *testing.B) { benchTier(b, ARC) }

func benchTier(b *testing.B, p Policy) {
	const capacity = 1 << 16
	c, _ := New(capacity, p)
	var one [1]uint64
	var dst []uint64
	for k := uint64(1); k <= capacity; k++ {
		one[0] = k
		dst, _, _ = c.PrepareStore(one[:], dst[:0])
		c.CompleteStore(dst)
	}
	next := uint64(capacity + 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		one[0] = next - capacity/2
		c.Lookup(one[:])
		c.Touch(one[:])
		one[0] = next
		next++
		dst, _, _ = c.PrepareStore(one[:], dst[:0])
		c.CompleteStore(dst)
	}
}

// check verifies the lists, the index and the pin count agree.
func (c *Cache) check(t *testing.T) {
	t.Helper()
	seen, pinned, total := 0, 0, 0
	for l := uint8(0); l < numLists; l++ {
		n := int32(0)
		prev := int32(-1)
		for i := c.lists[l].head; i >= 0; i = c.slots[i].next {
			s := c.slots[i]
			if s.list != l || s.prev != prev {
				t.Fatalf("slot %d on list %d says list %d prev %d (want %d)", i, l, s.list, s.prev, prev)
			}
			prev = i
			n++
			if l != listFree {
				if j, ok := c.index.get(s.hash, c.slots); !ok || j != i {
					t.Fatalf("slot %d (hash %x, list %d) not indexed: %d %v", i, s.hash, l, j, ok)
				}
			}
			if (l == listT1 || l == listT2) && s.ref != 0 {
				pinned++
			}
			if l != listFree {
				seen++
			}
		}
		if n != c.lists[l].n || prev != c.lists[l].tail {
			t.Fatalf("list %d: walked %d, n %d; tail %d vs %d", l, n, c.lists[l].n, prev, c.lists[l].tail)
		}
		total += int(n)
	}
	if total != len(c.slots) || pinned != c.pinned || c.Len() > c.capacity {
		t.Fatalf("slots %d of %d, pinned %d vs %d, len %d of %d", total, len(c.slots), pinned, c.pinned, c.Len(), c.capacity)
	}
	indexed := 0
	for _, v := range c.index.e {
		if v != 0 {
			indexed++
		}
	}
	if indexed != seen {
		t.Fatalf("index holds %d entries, lists %d", indexed, seen)
	}
}

// TestRandomOpsKeepInvariants runs random stores, loads and touches over
// small hash spaces, both policies, checking the structure after each.
func TestRandomOpsKeepInvariants(t *testing.T) {
	for trial := 0; trial < 200; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 3))
		c, _ := New(1+rng.IntN(12), Policy(trial%2))
		var storing, loading [][]uint64
		for op := 0; op < 400; op++ {
			hs := make([]uint64, 1+rng.IntN(5))
			for i := range hs {
				hs[i] = uint64(1 + rng.IntN(40))
			}
			switch rng.IntN(6) {
			case 0, 1:
				if got, _, ok := c.PrepareStore(hs, nil); ok {
					storing = append(storing, got)
				}
			case 2:
				if len(storing) > 0 {
					k := rng.IntN(len(storing))
					c.CompleteStore(storing[k])
					storing = append(storing[:k], storing[k+1:]...)
				}
			case 3:
				if n := c.Lookup(hs); n > 0 {
					c.PrepareLoad(hs[:n])
					loading = append(loading, hs[:n])
				}
			case 4:
				if len(loading) > 0 {
					k := rng.IntN(len(loading))
					c.CompleteLoad(loading[k])
					loading = append(loading[:k], loading[k+1:]...)
				}
			case 5:
				c.Touch(hs)
			}
			c.check(t)
		}
	}
}

func TestLinkQueuesAtItsBandwidth(t *testing.T) {
	tests := []struct {
		name  string
		sends [][2]int64 // at (ns), bytes
		want  []time.Duration
	}{
		{"idle link: latency + bytes/BW", [][2]int64{{0, 1000}}, []time.Duration{1000 + 100}},
		{"back to back: the second waits for the first, not for its latency",
			[][2]int64{{0, 1000}, {0, 1000}}, []time.Duration{1100, 2100}},
		{"a gap: the link was idle", [][2]int64{{0, 1000}, {5000, 500}}, []time.Duration{1100, 5600}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &Link{BW: 1e9, Latency: 100} // 1 byte/ns
			for i, s := range tt.sends {
				if got := l.Send(time.Duration(s[0]), s[1]); got != tt.want[i] {
					t.Errorf("send %d done at %v, want %v", i, got, tt.want[i])
				}
			}
		})
	}
	if d := (&Link{BW: 2e9, Latency: 7}).Duration(1000); d != 507 {
		t.Errorf("Duration = %v, want 507ns", d)
	}
}

// dump is c's whole observable state: every list in order with its
// chunks' pins, ARC's target and the eviction count.
func dump(c *Cache) []int64 {
	out := []int64{int64(c.target), c.evictions, int64(c.pinned)}
	for l := uint8(1); l < numLists; l++ {
		out = append(out, -1)
		for i := c.lists[l].head; i >= 0; i = c.slots[i].next {
			out = append(out, int64(c.slots[i].hash), int64(c.slots[i].ref))
		}
	}
	return out
}

// TestTouchRunMatchesTouch drives two tiers with the same random requests
// (prefixes shared between some, chunks stored as they fill, each store
// touching the request's whole prefix), loads, stray touches and restarts:
// one touching with TouchRun, the other with Touch. Their lists, pins and
// counters must stay identical.
func TestTouchRunMatchesTouch(t *testing.T) {
	for trial := 0; trial < 300; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		p := Policy(trial % 2)
		capacity := 1 + rng.IntN(60)
		a, _ := New(capacity, p)
		b, _ := New(capacity, p)
		type req struct {
			hs   []uint64
			next int
			run  Run
		}
		reqs := make([]req, 1+rng.IntN(8))
		mk := func(j int) []uint64 {
			hs := make([]uint64, 1+rng.IntN(40))
			base := uint64(1 + rng.IntN(3))
			shared := rng.IntN(len(hs) + 1)
			for k := range hs {
				if k < shared {
					hs[k] = base<<32 | uint64(k) // a prefix other requests share
				} else {
					hs[k] = uint64(1000+trial*100+j)<<32 | uint64(k) | 1<<62
				}
			}
			return hs
		}
		for j := range reqs {
			reqs[j].hs = mk(j)
		}
		var storing, loading [][]uint64
		for op := 0; op < 600; op++ {
			j := rng.IntN(len(reqs))
			r := &reqs[j]
			switch rng.IntN(8) {
			case 0, 1, 2, 3: // r fills more chunks
				full := min(len(r.hs), r.next+1+rng.IntN(3))
				if full <= r.next {
					break
				}
				ga, ea, oka := a.PrepareStore(r.hs[r.next:full], nil)
				gb, eb, okb := b.PrepareStore(r.hs[r.next:full], nil)
				if oka != okb || ea != eb || !slices.Equal(ga, gb) {
					t.Fatalf("trial %d op %d: PrepareStore differs", trial, op)
				}
				if !oka {
					break
				}
				r.next = full
				if len(ga) > 0 {
					storing = append(storing, ga)
					a.TouchRun(&r.run, r.hs[:full])
					b.Touch(r.hs[:full])
				}
			case 4:
				if len(storing) > 0 {
					k := rng.IntN(len(storing))
					a.CompleteStore(storing[k])
					b.CompleteStore(storing[k])
					storing = append(storing[:k], storing[k+1:]...)
				}
			case 5: // a lookup: touch and maybe load
				a.Touch(r.hs)
				b.Touch(r.hs)
				if n := a.Lookup(r.hs); n > 0 && rng.IntN(2) == 0 {
					a.PrepareLoad(r.hs[:n])
					b.PrepareLoad(r.hs[:n])
					loading = append(loading, r.hs[:n])
				}
			case 6:
				if len(loading) > 0 {
					k := rng.IntN(len(loading))
					a.CompleteLoad(loading[k])
					b.CompleteLoad(loading[k])
					loading = append(loading[:k], loading[k+1:]...)
				}
			case 7: // r ends; a new request takes its place
				a.ReleaseRun(&r.run)
				*r = req{hs: mk(j)}
			}
			if !slices.Equal(dump(a), dump(b)) {
				t.Fatalf("trial %d op %d: TouchRun's tier\n%v\nTouch's\n%v", trial, op, dump(a), dump(b))
			}
			a.check(t)
		}
	}
}

// BenchmarkTierRequests is the CPU tier under a native connector's
// decode-time stores: 256 requests at once, each filling 80 chunks one at a
// time, each store touching the request's whole prefix, in a full LRU tier
// of 51,200 chunks (100 GiB of Llama-3.1-8B's 2 MiB blocks). One op is one
// chunk stored (reserve, evict, touch, complete). The hashes are random,
// as the engine's chained hashes are: an arithmetic sequence would land
// in neighbouring index cells and hide the index's cache misses.
//
//	go test ./kvtier -run x -bench Requests -benchmem
//
// Its cache misses, which timings on a shared machine hide, are counted
// exactly by cachegrind (a 1 MiB L2 as the last level; valgrind lacks
// rdtscp, which the Go runtime's lock spinning can hit: rerun on SIGILL):
//
//	go test -c -o kvtier.test ./kvtier
//	GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=yes --D1=49152,12,64 \
//	  --LL=1048576,16,64 ./kvtier.test -test.run x -test.bench Requests/TouchRun -test.benchtime 1000000x
func BenchmarkTierRequests(b *testing.B) {
	for _, mode := range []string{"Touch", "TouchRun"} {
		b.Run(mode, func(b *testing.B) {
			const capacity, conc, chunks = 51_200, 256, 80
			c, _ := New(capacity, LRU)
			type req struct {
				hs  [chunks]uint64
				n   int
				run Run
			}
			reqs := make([]req, conc)
			seq := uint64(0)
			start := func(r *req) {
				c.ReleaseRun(&r.run)
				r.n = 0
				for k := range r.hs {
					seq++
					r.hs[k] = mix(seq)
				}
			}
			for i := range reqs {
				start(&reqs[i])
				reqs[i].n = i % chunks // staggered
			}
			var dst []uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r := &reqs[i%conc]
				if r.n == chunks {
					start(r)
				}
				dst, _, _ = c.PrepareStore(r.hs[r.n:r.n+1], dst[:0])
				r.n++
				if mode == "Touch" {
					c.Touch(r.hs[:r.n])
				} else {
					c.TouchRun(&r.run, r.hs[:r.n])
				}
				c.CompleteStore(dst)
			}
		})
	}
}

// TestTableMatchesMap runs random puts, deletes and gets on the index
// against a map, with keys chosen so that many share a fingerprint (k +
// j·g⁻¹ multiplies to k·g + j, the same top bits): a fingerprint match
// must be confirmed by the slot's hash, and deletion must keep every
// probe chain whole.
func TestTableMatchesMap(t *testing.T) {
	inv := uint64(1)
	for i := 0; i < 6; i++ { // Newton's iteration: the inverse of g mod 2⁶⁴
		inv *= 2 - 0x9e3779b97f4a7c15*inv
	}
	if inv*0x9e3779b97f4a7c15 != 1 {
		t.Fatal("no inverse")
	}
	for trial := 0; trial < 50; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 7))
		const n = 64
		slots := make([]slot, n)
		tb := newTable(n)
		want := map[uint64]int32{}
		free := make([]int32, 0, n)
		for i := n - 1; i >= 0; i-- {
			free = append(free, int32(i))
		}
		key := func() uint64 {
			base := uint64(rng.IntN(4)) << 40
			return base + uint64(rng.IntN(24))*inv
		}
		for op := 0; op < 2000; op++ {
			k := key()
			v, ok := tb.get(k, slots)
			w, wok := want[k]
			if ok != wok || (ok && v != w) {
				t.Fatalf("trial %d op %d: get(%x) = %d %v, want %d %v", trial, op, k, v, ok, w, wok)
			}
			switch {
			case wok && rng.IntN(2) == 0:
				tb.del(k, w)
				delete(want, k)
				free = append(free, w)
			case !wok && len(free) > 0:
				s := free[len(free)-1]
				free = free[:len(free)-1]
				slots[s].hash = k
				tb.put(k, s)
				want[k] = s
			}
		}
		for k, w := range want {
			if v, ok := tb.get(k, slots); !ok || v != w {
				t.Fatalf("trial %d: %x lost (%d %v, want %d)", trial, k, v, ok, w)
			}
		}
	}
}

// mix is splitmix64's finaliser: random-looking hashes for benchmarks.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
