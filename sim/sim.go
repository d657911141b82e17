// Package sim is BLIS's discrete-event core: a virtual clock measured as
// time.Duration since the start of the run, an event queue whose order never
// depends on insertion accidents or map iteration, and named RNG streams
// derived from one seed so that each subsystem draws independently.
package sim

import (
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
//
// It is a 4-ary min-heap of Event values written for this one type: the
// generic container/heap boxes every pushed value in an interface, one
// allocation per event, which was nearly all of the loop's allocations. A
// 4-ary heap is shallower than a binary one and keeps a node's children in
// one cache line or two; once its slice has grown, Push and Pop allocate
// nothing.
type Queue struct {
	h   []Event
	seq uint64
}

// before is the queue's order: earlier time, then earlier insertion.
func before(a, b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	return a.seq < b.seq
}

// Push schedules e.
func (q *Queue) Push(e Event) {
	e.seq = q.seq
	q.seq++
	q.h = append(q.h, e)
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !before(&e, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

// Pop removes and returns the earliest event. ok is false when the queue is empty.
func (q *Queue) Pop() (e Event, ok bool) {
	n := len(q.h)
	if n == 0 {
		return Event{}, false
	}
	h := q.h
	top := h[0]
	last := h[n-1]
	h = h[:n-1]
	q.h = h
	n--
	if n == 0 {
		return top, true
	}
	// Sift last down from the root.
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if before(&h[k], &h[m]) {
				m = k
			}
		}
		if !before(&h[m], &last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return top, true
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

// RNG returns the random stream named name for the run seeded with seed.
// Streams with different names are independent; the same (seed, name) pair
// always yields the same sequence on every machine (PCG, stdlib math/rand/v2).
func RNG(seed int64, name string) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}
