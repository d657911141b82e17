package router

import (
	"math"
	"sort"
	"time"
)

// flowControl mirrors llm-d's FlowController (pkg/epp/flowcontrol @
// 520af478, enabled by featureGates: [flowControl]): requests wait at the
// gateway in priority bands; a dispatch cycle releases the head of the
// highest non-empty band (fcfs-ordering-policy: FIFO; with one flow per band
// the round-robin fairness policy reduces to FIFO) while the saturation
// detector reports the pool below 1.0, and stops at the first saturated
// check (head-of-line blocking). A request still queued after its TTL
// (defaultRequestTTL; 0: none) is rejected. Band and global maxRequests /
// maxBytes bound the queue; a request that does not fit is rejected at once.
//
// Approximations: llm-d sweeps expired items every second
// (ExpiryCleanupInterval); BLIS rejects at the exact TTL. Request bytes are
// estimated as 4 bytes per prompt token (llm-d counts the HTTP body).
type flowControl struct {
	detector    saturationPlugin
	ttl         time.Duration
	maxRequests int
	maxBytes    int64
	bands       []*band // highest priority first
	defBand     bandLimits
	e           *EPP
	queued      int
	bytes       int64
}

type bandLimits struct {
	maxRequests int
	maxBytes    int64
}

type band struct {
	priority int
	lim      bandLimits
	q        fifo[queued]
	bytes    int64
}

type queued struct {
	r   *Request
	at  time.Duration
	len int64
}

func (f *flowControl) reset() {
	for _, b := range f.bands {
		b.q.reset()
		b.bytes = 0
	}
	f.queued, f.bytes = 0, 0
}

func (f *flowControl) bandFor(p int) *band {
	for _, b := range f.bands {
		if b.priority == p {
			return b
		}
	}
	b := &band{priority: p, lim: f.defBand}
	f.bands = append(f.bands, b)
	sort.SliceStable(f.bands, func(i, j int) bool { return f.bands[i].priority > f.bands[j].priority })
	return b
}

func reqBytes(r *Request) int64 { return 4 * int64(r.PromptLen) }

func (f *flowControl) enqueue(now time.Duration, r *Request) {
	b := f.bandFor(r.Priority)
	n := reqBytes(r)
	full := (f.maxRequests > 0 && f.queued+1 > f.maxRequests) ||
		(f.maxBytes > 0 && f.bytes+n > f.maxBytes) ||
		(b.lim.maxRequests > 0 && b.size()+1 > b.lim.maxRequests) ||
		(b.lim.maxBytes > 0 && b.bytes+n > b.lim.maxBytes)
	if full {
		f.e.reject(r, "flow control: queue at capacity")
		return
	}
	b.q.push(queued{r: r, at: now, len: n})
	b.bytes += n
	f.queued++
	f.bytes += n
}

func (b *band) size() int { return b.q.len() }

func (f *flowControl) head() *Request {
	for _, b := range f.bands {
		if b.size() > 0 {
			return b.q.front().r
		}
	}
	return nil
}

func (f *flowControl) pop() {
	for _, b := range f.bands {
		if b.size() > 0 {
			f.dropHead(b)
			return
		}
	}
}

// dropHead removes b's oldest request from the queue's accounts.
func (f *flowControl) dropHead(b *band) {
	q := b.q.pop()
	b.bytes -= q.len
	f.bytes -= q.len
	f.queued--
}

// expire rejects every queued request whose TTL has passed.
func (f *flowControl) expire(now time.Duration) {
	if f.ttl <= 0 {
		return
	}
	for _, b := range f.bands {
		// FIFO: the oldest items are at the head.
		for b.size() > 0 && now-b.q.front().at >= f.ttl {
			f.e.reject(b.q.front().r, "flow control: request TTL expired in queue")
			f.dropHead(b)
		}
	}
}

func (f *flowControl) nextExpiry() time.Duration {
	if f.ttl <= 0 {
		return math.MaxInt64
	}
	next := time.Duration(math.MaxInt64)
	for _, b := range f.bands {
		if b.size() > 0 {
			if t := b.q.front().at + f.ttl; t < next {
				next = t
			}
		}
	}
	return next
}
