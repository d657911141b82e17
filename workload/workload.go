// Package workload produces the requests a benchmark client would send, with
// `vllm bench serve` semantics and flag names. It knows nothing of the engine:
// a request is lengths, a prompt identity (for prefix caching) and an intended
// send time.
package workload

import "time"

// Segment is a run of prompt tokens with an identity: two prompts whose
// segment lists agree on (ID, Len) at the same offsets hold the same tokens
// there, so prefix caching sees real sharing. Token j of a segment is a pure
// function of (ID, j). Sources emit segments with Len ≥ 1.
type Segment struct {
	ID  uint64
	Len int
}

// Request is one request in client send order.
type Request struct {
	Index     int64         // 0-based position in send order of the timed phase
	Arrival   time.Duration // when the client's request process releases it (0 for --request-rate inf), relative to the start of the timed phase
	InputLen  int           // prompt tokens (== Σ Prompt[i].Len)
	OutputLen int           // output tokens, honoured exactly (ignore_eos)
	Prompt    []Segment     // prompt identity; reuse-safe: callers copy if they keep it
}

// Source yields requests in send order. Next fills *r and returns false when
// the source is exhausted. A Source is single-use and not safe for
// concurrent use. Streaming: sources hold O(1) state per request emitted.
type Source interface {
	Next(r *Request) bool
}
