package router

import "testing"

// A queue that never empties keeps its order and a slice sized by what it
// holds, not by everything that passed through it.
func TestFifoOrderAndBoundedSlice(t *testing.T) {
	var f fifo[*int]
	vals := make([]int, 100000)
	next := 0
	for i := range vals {
		vals[i] = i
		f.push(&vals[i])
		if i >= 10 { // keep about ten queued at all times
			if got := *f.pop(); got != next {
				t.Fatalf("pop %d: got %d", next, got)
			}
			next++
		}
	}
	if f.len() != 10 || **f.front() != next {
		t.Fatalf("len %d front %d, want 10 and %d", f.len(), **f.front(), next)
	}
	if c := cap(f.q); c > 4*compactAt {
		t.Fatalf("slice capacity %d after %d pushes with 10 queued: grows with history", c, len(vals))
	}
	for i, v := range f.q[:f.head] {
		if v != nil {
			t.Fatalf("popped slot %d still points at %d", i, *v)
		}
	}
	for f.len() > 0 {
		if got := *f.pop(); got != next {
			t.Fatalf("drain: got %d, want %d", got, next)
		}
		next++
	}
	if next != len(vals) || len(f.q) != 0 {
		t.Fatalf("drained to %d, slice len %d", next, len(f.q))
	}
}
