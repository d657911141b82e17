package sim

import "testing"

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
