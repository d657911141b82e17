package sim

import (
	"strconv"
	"testing"
)

func TestQueueOrdersByTimeThenInsertion(t *testing.T) {
	var q Queue
	q.Push(Event{At: 5, Arg: 1})
	q.Push(Event{At: 3, Arg: 2})
	q.Push(Event{At: 5, Arg: 3})
	q.Push(Event{At: 3, Arg: 4})
	q.Push(Event{At: 0, Arg: 5})
	want := []int64{5, 2, 4, 1, 3}
	for i, w := range want {
		e, ok := q.Pop()
		if !ok || e.Arg != w {
			t.Fatalf("pop %d: got %v ok=%v, want arg %d", i, e, ok, w)
		}
	}
	if _, ok := q.Pop(); ok {
		t.Fatal("queue should be empty")
	}
}

func TestRNGStreamsAreReproducibleAndIndependent(t *testing.T) {
	a1, a2, b := RNG(42, "arrivals"), RNG(42, "arrivals"), RNG(42, "lengths")
	same, diff := true, false
	for i := 0; i < 100; i++ {
		x, y, z := a1.Uint64(), a2.Uint64(), b.Uint64()
		same = same && x == y
		diff = diff || x != z
	}
	if !same {
		t.Fatal("same seed and name must give the same stream")
	}
	if !diff {
		t.Fatal("different names must give different streams")
	}
	if RNG(1, "x").Uint64() == RNG(2, "x").Uint64() {
		t.Fatal("different seeds should differ")
	}
}

// TestQueueMatchesSortedOrder pushes and pops random events in random
// interleavings and checks every pop against a reference: the earliest
// pending event by (time, insertion order).
func TestQueueMatchesSortedOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seed    int64
		times   int64 // events draw their time in [0, times): small means many ties
		ops     int
		popBias int // percent of operations that pop
	}{
		{"ties", 1, 4, 5000, 45},
		{"spread", 2, 1 << 40, 5000, 45},
		{"growing", 3, 100, 20000, 30},
		{"draining", 4, 1000, 20000, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := RNG(tc.seed, "queue-test")
			var q Queue
			type ref struct {
				at  Time
				arg int64
			}
			var pending []ref // in insertion order
			next := int64(0)
			for op := 0; op < tc.ops; op++ {
				if rng.IntN(100) < tc.popBias && len(pending) > 0 {
					best := 0
					for i, p := range pending {
						if p.at < pending[best].at {
							best = i
						}
					}
					want := pending[best]
					pending = append(pending[:best], pending[best+1:]...)
					got, ok := q.Pop()
					if !ok || got.At != want.at || got.Arg != want.arg {
						t.Fatalf("op %d: popped %+v ok=%v, want at=%v arg=%d", op, got, ok, want.at, want.arg)
					}
					continue
				}
				at := Time(rng.Int64N(tc.times))
				q.Push(Event{At: at, Arg: next})
				pending = append(pending, ref{at, next})
				next++
				if q.Len() != len(pending) {
					t.Fatalf("op %d: Len %d, want %d", op, q.Len(), len(pending))
				}
			}
			for len(pending) > 0 {
				best := 0
				for i, p := range pending {
					if p.at < pending[best].at {
						best = i
					}
				}
				want := pending[best]
				pending = append(pending[:best], pending[best+1:]...)
				if e, ok := q.Peek(); !ok || e.Arg != want.arg {
					t.Fatalf("peek %+v, want arg %d", e, want.arg)
				}
				if got, _ := q.Pop(); got.Arg != want.arg {
					t.Fatalf("drain: popped arg %d, want %d", got.Arg, want.arg)
				}
			}
		})
	}
}

func TestQueueSteadyStateAllocatesNothing(t *testing.T) {
	var q Queue
	for i := 0; i < 1024; i++ {
		q.Push(Event{At: Time(i * 7 % 1000)})
	}
	now := Time(0)
	allocs := testing.AllocsPerRun(1000, func() {
		e, _ := q.Pop()
		now = e.At
		q.Push(Event{At: now + Time(e.Arg%97+1), Arg: e.Arg + 1})
	})
	if allocs != 0 {
		t.Fatalf("steady-state pop+push allocates %v per op, want 0", allocs)
	}
}

// BenchmarkQueue measures one pop and one push on a queue holding n events,
// the loop's steady state:
//
//	go test ./sim -run '^$' -bench Queue -benchmem
func BenchmarkQueue(b *testing.B) {
	for _, n := range []int{16, 1024, 65536} {
		b.Run("pending="+strconv.Itoa(n), func(b *testing.B) {
			var q Queue
			rng := RNG(1, "bench")
			for i := 0; i < n; i++ {
				q.Push(Event{At: Time(rng.Int64N(1 << 30))})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e, _ := q.Pop()
				q.Push(Event{At: e.At + Time(rng.Int64N(1<<20)), Kind: e.Kind})
			}
		})
	}
}
