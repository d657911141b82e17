// Package sim is BLIS's discrete-event core: a virtual clock measured as
// time.Duration since the start of the run, an event queue whose order never
// depends on insertion accidents or map iteration, and named RNG streams
// derived from one seed so that each subsystem draws independently.
package sim

import (
	"container/heap"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// Time is simulated time since the start of the run.
type Time = time.Duration

// Event is one scheduled occurrence. Kind and Target are opaque to the queue;
// the loop that owns the queue interprets them.
type Event struct {
	At     Time
	Kind   int   // caller-defined event kind
	Target int   // caller-defined target (replica index, lane, ...)
	Arg    int64 // caller-defined payload (request index, ...)
	seq    uint64
}

// Queue orders events by time, then by insertion sequence: two events at the
// same instant fire in the order they were scheduled, which is deterministic
// because the simulation itself is.
type Queue struct {
	h   eventHeap
	seq uint64
}

// Push schedules e.
func (q *Queue) Push(e Event) {
	e.seq = q.seq
	q.seq++
	heap.Push(&q.h, e)
}

// Pop removes and returns the earliest event. ok is false when the queue is empty.
func (q *Queue) Pop() (e Event, ok bool) {
	if len(q.h) == 0 {
		return Event{}, false
	}
	return heap.Pop(&q.h).(Event), true
}

// Peek returns the earliest event without removing it.
func (q *Queue) Peek() (e Event, ok bool) {
	if len(q.h) == 0 {
		return Event{}, false
	}
	return q.h[0], true
}

// Len is the number of pending events.
func (q *Queue) Len() int { return len(q.h) }

type eventHeap []Event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].At != h[j].At {
		return h[i].At < h[j].At
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	*h = old[:n-1]
	return e
}

// RNG returns the random stream named name for the run seeded with seed.
// Streams with different names are independent; the same (seed, name) pair
// always yields the same sequence on every machine (PCG, stdlib math/rand/v2).
func RNG(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}
