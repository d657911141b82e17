// Package reorder puts items that arrive in completion order back in index
// order, holding only those that arrived ahead of a lower index still
// outstanding. vLLM bench lists its per-request results in request order
// (asyncio.gather keeps the order of its tasks), while a simulated client
// finishes requests in any order.
package reorder

// Buffer releases items in ascending index order, starting at index 0:
// an item is released once every lower index has been. An index below the
// next one expected (a repeat, or a buffer started late) is released at
// once. The zero Buffer is ready.
type Buffer[T any] struct {
	next int64
	heap []entry[T] // min-heap by index
}

type entry[T any] struct {
	index int64
	v     T
}

// Push adds the item of index and releases, through emit, every item that
// is now in order.
func (b *Buffer[T]) Push(index int64, v T, emit func(T)) {
	if index < b.next {
		emit(v)
		return
	}
	if index == b.next && len(b.heap) == 0 {
		b.next++
		emit(v)
		return
	}
	b.push(entry[T]{index, v})
	for len(b.heap) > 0 && b.heap[0].index <= b.next {
		e := b.pop()
		if e.index == b.next {
			b.next++
		}
		emit(e.v)
	}
}

// InOrder reports whether an item of index would be released at once by
// Push (so a caller need not copy what the item borrows).
func (b *Buffer[T]) InOrder(index int64) bool { return index <= b.next }

// Flush releases every held item in index order (gaps are not waited for)
// and empties the buffer.
func (b *Buffer[T]) Flush(emit func(T)) {
	for len(b.heap) > 0 {
		e := b.pop()
		b.next = max(b.next, e.index+1)
		emit(e.v)
	}
}

// Held is the number of items waiting for a lower index.
func (b *Buffer[T]) Held() int { return len(b.heap) }

// Each calls fn for every held item in index order without releasing any.
func (b *Buffer[T]) Each(fn func(T)) {
	c := Buffer[T]{heap: append([]entry[T](nil), b.heap...)}
	for len(c.heap) > 0 {
		fn(c.pop().v)
	}
}

func (b *Buffer[T]) push(e entry[T]) {
	b.heap = append(b.heap, e)
	i := len(b.heap) - 1
	for i > 0 {
		p := (i - 1) / 2
		if b.heap[p].index <= b.heap[i].index {
			break
		}
		b.heap[p], b.heap[i] = b.heap[i], b.heap[p]
		i = p
	}
}

func (b *Buffer[T]) pop() entry[T] {
	h := b.heap
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	var zero entry[T]
	h[n] = zero
	h = h[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h[l].index < h[m].index {
			m = l
		}
		if r < n && h[r].index < h[m].index {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	b.heap = h
	return top
}
