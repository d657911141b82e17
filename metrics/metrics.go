// Package metrics records what a benchmark client would measure — one record
// per request plus streaming distributions — and writes vLLM bench's result
// table and JSON. It knows nothing of the engine's insides. Its Result,
// RunInfo and MeasuredRun are also what the other tools' formats
// (metrics/format) write from and read back into.
//
// A run's result files stream: the Recorder hands every finished request
// to its Sinks (JSONWriter, metrics/format's Exporter) and keeps only the
// compact values its own statistics need, so memory follows the requests
// in flight, not the run's length.
package metrics

import "time"

// Record is one request as the client and the engine saw it. Times are
// simulated time since the start of the timed phase.
type Record struct {
	Index        int64
	Sent         time.Duration // the client sent it (after the concurrency cap)
	Scheduled    time.Duration // the engine first scheduled it
	FirstToken   time.Duration // first output token reached the client
	Finish       time.Duration // last output token reached the client
	InputTokens  int
	OutputTokens int
	CachedTokens int // prompt tokens served from the prefix cache at first scheduling
	Preemptions  int
	Rejected     bool
	RejectReason string // set when Rejected: why the engine refused it
	// ClientQueueTime is how long the request waited for a --max-concurrency
	// slot before Sent (vLLM bench's client_queue_time); zero without a cap.
	ClientQueueTime time.Duration
	// Session and Turn place a multi-turn request in its conversation
	// (workload.Request's SessionID and Turn); Session 0 means none.
	Session uint64
	Turn    int
}
