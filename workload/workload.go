// Package workload produces the requests a benchmark client would send, with
// `vllm bench serve` semantics and flag names. It knows nothing of the engine:
// a request is lengths, a prompt identity (for prefix caching) and an intended
// send time, plus, for multi-turn and agentic workloads, the session it
// belongs to and what it waits for.
//
// Sources: NewRandom (vllm bench random), and through Open the trace readers
// and synthetic datasets listed in README.md (sharegpt, prefix_repetition,
// shared_prefix, mooncake_trace, azure, sessions, agentic, lmbench).
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
//
// A request whose SessionID is 0 stands alone: the driver sends it at
// Arrival when a concurrency slot is free (the first five fields are all it
// needs). Session fields describe multi-turn conversations and agentic
// sub-agent branches; their contract with the driver is below.
//
// # Sessions: the contract a driver implements
//
// Roles. A session request with Turn == 0 and ParentSession == 0 starts a
// session: the driver treats it like a standalone request. Every other
// session request is a follow-up, and has exactly one predecessor:
//
//	Turn > 0:                   (SessionID, Turn−1), the previous turn;
//	Turn == 0, ParentSession≠0: (ParentSession, ParentTurn), the turn that
//	                            spawned this branch.
//
// Order. A source yields every follow-up after its predecessor. Requests that
// stand alone or start a session come in non-decreasing Arrival order;
// follow-ups may come anywhere after their predecessor. A driver must not
// let a follow-up block the stream: it parks it (per predecessor) and keeps
// reading, and stops reading ahead only at a standalone or session-starting
// request whose Arrival is still in the future.
//
// Release. Let done(p) be the time the predecessor p finished (its last
// output token reached the client; for a rejected p, the time it was
// rejected). A follow-up f is released at
//
//	max(Arrival, D + Delay), D = max(done(p), done of the Final turns of the
//	                                 WaitBranches branches joined by f)
//
// and then waits for a concurrency slot like any request. Arrival is a lower
// bound for a follow-up: a trace's own timestamp for that turn when it has
// one (aiperf sends a follow-up at its timestamp, or at once if that has
// passed), else the session's start. Whether a parked follow-up holds a
// concurrency slot is the driver's policy: vllm bench has no sessions,
// aiperf's --concurrency counts sessions (a slot is held from the first
// turn to the last); cluster/README.md describes both clients.
//
// Prompt. Let C(p) be p's full context after it ran: the prompt the engine
// saw, followed by Segment{ID: p.OutputID, Len: p.NumOutput} for the tokens
// p generated (left out when it generated none). If PrevContext is true,
// f's prompt is C(p) followed by f.Prompt, and f's prompt length is
// len(C(p)) + f.InputLen; otherwise it is f.Prompt alone (a sub-agent
// started with a fresh context). ContextLen is what the source expects
// len(C(p)) to be when every earlier turn ran to its OutputLen; the driver
// uses the real C(p), which differs when a turn was rejected or cut short.
// InputLen counts f.Prompt only, so InputLen == Σ Prompt[i].Len always
// holds. The driver must keep C(p) until every follow-up of p has been sent,
// and may drop a session's contexts once its Final turn and all branches
// spawned from it have been sent. Formats that cannot know the last turn
// (mooncake_trace with session_id) never set Final: their contexts live
// until the source ends.
//
// Branches and joins. A branch is a session whose first turn names a parent
// turn (ParentSession, ParentTurn); it starts Delay after that turn
// finished, with the parent's context (PrevContext) or a fresh one. The
// parent's next turn, Turn == ParentTurn+1, has WaitBranches equal to the
// number of branches spawned after ParentTurn and is not released before
// every one of them has finished its Final turn. A branch finishes when its
// Final turn does; the sessions format forbids branches after a session's
// last turn, so every branch is joined.
//
// Limits. Sources do not check lengths against a model's max-model-len: the
// engine rejects (and counts) a request whose prompt does not fit, as vLLM
// does.
type Request struct {
	Index     int64         // 0-based position in send order of the timed phase
	Arrival   time.Duration // when the client's request process releases it (0 for --request-rate inf), relative to the start of the timed phase; a lower bound for a follow-up (see above)
	InputLen  int           // prompt tokens (== Σ Prompt[i].Len); for a PrevContext follow-up, the new tokens after the previous context
	OutputLen int           // output tokens, honoured exactly (ignore_eos)
	Prompt    []Segment     // prompt identity; reuse-safe: callers copy if they keep it

	// SessionID names the session (conversation, agent run) this request is
	// a turn of; 0 means none. IDs are unique within one source.
	SessionID uint64
	// Turn is the 0-based index of this request within its session.
	Turn int
	// Final is true on the last turn of a session when the format says so
	// (sessions, agentic, shared_prefix sessions end with their stage).
	Final bool
	// PrevContext: this prompt starts with the predecessor's full context
	// (its prompt and its output); Prompt holds only what comes after.
	PrevContext bool
	// ContextLen is the expected length of that context, tokens; 0 unless
	// PrevContext.
	ContextLen int
	// Delay is the think or tool time after the predecessor finished (and
	// the joined branches with it) before this turn is released; 0 for
	// requests that are not follow-ups.
	Delay time.Duration
	// ParentSession and ParentTurn name the turn a branch was spawned from;
	// set on a branch's first turn only (ParentSession 0: not a branch).
	ParentSession uint64
	ParentTurn    int
	// WaitBranches is the number of branches spawned after turn Turn−1 of
	// this session that must finish before this turn is released.
	WaitBranches int
	// SystemSegments is how many leading Prompt segments are a shared system
	// prompt (instructions, tool definitions) rather than the turn's own
	// message; set on a session's first turn, 0 when it has none. A client
	// that makes each session's first user message unique (aiperf's
	// --cache-bust first_turn_prefix) inserts its marker after them.
	SystemSegments int
	// Unique says no other request of the source shares any of this one's
	// prompt segments (a random prompt with no shared prefix), so nothing
	// else can ever hit its blocks in a prefix cache. Sources that cannot
	// promise it leave it false.
	Unique bool
}

// Source yields requests in send order. Next fills *r and returns false when
// the source is exhausted. A Source is single-use and not safe for
// concurrent use. Streaming: sources hold O(1) state per request emitted.
//
// A Source read from a file can also fail partway: such sources implement
// StreamSource, and Err(src) reports why Next returned false.
type Source interface {
	Next(r *Request) bool
}

// StreamSource is a Source that reads a stream and can fail after it was
// opened (a malformed line 10 million lines in). Next returns false at the
// first error; Err returns it (nil after a clean end). Close releases the
// file; sources close it themselves when they end, so Close matters only
// when a caller stops early. Every source that reads a file implements it
// (mooncake_trace, azure, sessions, and sharegpt, which never fails after
// Open), and so does agentic.
type StreamSource interface {
	Source
	Err() error
	Close() error
}

// Err returns src's error when src is a StreamSource, else nil. Call it
// after Next returned false: a nil result means the source ended cleanly.
func Err(src Source) error {
	if s, ok := src.(StreamSource); ok {
		return s.Err()
	}
	return nil
}

// Close closes src when it is a StreamSource.
func Close(src Source) error {
	if s, ok := src.(StreamSource); ok {
		return s.Close()
	}
	return nil
}
