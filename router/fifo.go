package router

// fifo is a first-in, first-out queue in one slice, for the router's
// queues that may never empty in a long run (flow control's bands under
// sustained overload, KV events in flight, speculative index entries):
// popped slots are zeroed so what they pointed to can be collected, and
// once the popped head is large and the bigger part of the slice the
// queued items move to its front, so the slice grows with what is queued,
// not with everything ever queued.
type fifo[T any] struct {
	q    []T
	head int
}

// compactAt is how many popped slots a fifo keeps before it may move its
// items to the front (only when they are fewer than the popped ones, so
// each item moves O(1) times on average).
const compactAt = 4096

func (f *fifo[T]) push(v T) { f.q = append(f.q, v) }

func (f *fifo[T]) len() int { return len(f.q) - f.head }

// front is the oldest item; the fifo must not be empty.
func (f *fifo[T]) front() *T { return &f.q[f.head] }

// pop removes and returns the oldest item; the fifo must not be empty.
func (f *fifo[T]) pop() T {
	v := f.q[f.head]
	var zero T
	f.q[f.head] = zero
	f.head++
	switch {
	case f.head == len(f.q):
		f.q, f.head = f.q[:0], 0
	case f.head > compactAt && 2*f.head > len(f.q):
		n := copy(f.q, f.q[f.head:])
		clear(f.q[n:])
		f.q, f.head = f.q[:n], 0
	}
	return v
}

// reset empties the fifo, keeping its slice.
func (f *fifo[T]) reset() {
	clear(f.q)
	f.q, f.head = f.q[:0], 0
}
