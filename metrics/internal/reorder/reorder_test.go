package reorder

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestBufferReleasesInOrder(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       []int64
		released []int64 // before Flush
		flushed  []int64
	}{
		{"in order", []int64{0, 1, 2}, []int64{0, 1, 2}, nil},
		{"swapped", []int64{1, 0, 2}, []int64{0, 1, 2}, nil},
		{"gap held until flush", []int64{0, 2, 3}, []int64{0}, []int64{2, 3}},
		{"late start", []int64{5, 6}, nil, []int64{5, 6}},
		{"repeat", []int64{0, 0, 1}, []int64{0, 0, 1}, nil},
	} {
		var b Buffer[int64]
		var got []int64
		for _, i := range tc.in {
			b.Push(i, i, func(v int64) { got = append(got, v) })
		}
		if !slices.Equal(got, tc.released) {
			t.Errorf("%s: released %v, want %v", tc.name, got, tc.released)
		}
		var each []int64
		b.Each(func(v int64) { each = append(each, v) })
		got = nil
		b.Flush(func(v int64) { got = append(got, v) })
		if !slices.Equal(got, tc.flushed) || !slices.Equal(each, tc.flushed) {
			t.Errorf("%s: flushed %v, Each %v, want %v", tc.name, got, each, tc.flushed)
		}
	}
}

// Random completion orders with bounded displacement: everything comes out
// in order, and the buffer holds no more than the displacement.
func TestBufferRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n, window = 10000, 32
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	for i := 0; i+window <= n; i += window {
		r.Shuffle(window, func(a, b int) { order[i+a], order[i+b] = order[i+b], order[i+a] })
	}
	var b Buffer[int64]
	var got []int64
	maxHeld := 0
	for _, i := range order {
		b.Push(i, i, func(v int64) { got = append(got, v) })
		maxHeld = max(maxHeld, b.Held())
	}
	b.Flush(func(v int64) { got = append(got, v) })
	if len(got) != n || !slices.IsSorted(got) {
		t.Fatalf("released %d items, sorted %v", len(got), slices.IsSorted(got))
	}
	if maxHeld > window {
		t.Errorf("held up to %d items, want at most %d", maxHeld, window)
	}
}
