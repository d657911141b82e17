package metrics

import (
	"fmt"
	"math"
	"os"
	"time"
)

// A measured run is another benchmark tool's result read back: the
// vocabulary every reader under metrics/format returns, and what a
// validation pairs with BLIS's own requests.

// MeasuredRun is a benchmark run as read back from another tool's result
// file (or from a BLIS export of it): per-request records where the format
// has them, and the format's aggregates as named metrics with units.
type MeasuredRun struct {
	Format string // the format's name, as metrics/format lists it
	Path   string // the file (or, for aiperf, the directory) read
	// Requests are in file order; empty when the format keeps no
	// per-request data (llm-d, InferenceX, vLLM without --save-detailed).
	Requests []MeasuredRequest
	// Metrics are the format's aggregates in file order, each named by its
	// path in the file (e.g. "time_to_first_token.p50",
	// "results.request_performance.aggregate.latency.time_to_first_token.p50").
	Metrics []MeasuredMetric
}

// MeasuredMetric is one aggregate value as the file states it.
type MeasuredMetric struct {
	Name  string
	Unit  string // the format's unit ("ms", "s", "tokens/sec", ...); "" when the format gives none
	Value float64
}

// MeasuredRequest is one request as a format records it. Times are
// nanoseconds; Start and End are on the format's clock: Unix time for
// aiperf and guidellm, time since the benchmark start for vLLM.
type MeasuredRequest struct {
	ID           string
	Conversation string // conversation/session id; "" when the format has none
	Turn         int
	Start, End   int64
	Success      bool
	Error        string // "" on success
	InputTokens  int
	OutputTokens int
	TTFT         time.Duration   // 0 when failed
	ITLs         []time.Duration // every streamed-chunk gap, where the format lists them
	// TPOTms is the request's decode time per output token after the
	// first, (E2E − TTFT)/(output tokens − 1), in ms, as the format states
	// it (aiperf inter_token_latency, guidellm inter_token_latency_ms) or
	// computes it (vLLM); 0 with fewer than two output tokens.
	TPOTms float64
	// Chunks is the number of streamed chunks that carried tokens, where
	// the format records it (guidellm token_iterations); 0 otherwise.
	Chunks int
}

// Metric returns the value of the named aggregate and whether it is there.
func (m *MeasuredRun) Metric(name string) (MeasuredMetric, bool) {
	for _, x := range m.Metrics {
		if x.Name == name {
			return x, true
		}
	}
	return MeasuredMetric{}, false
}

// Recomputed is one published aggregate next to the value the tool's
// formula gives from the run's records.
type Recomputed struct {
	Name       string // as MeasuredRun.Metrics names it
	Unit       string // the published unit
	Published  float64
	Recomputed float64 // NaN when the records cannot give it
	// Quantum is half a unit of the file's last printed decimal (aiperf's
	// CSV keeps two decimals: 0.005); 0 when the file prints the value in
	// full.
	Quantum float64
}

// ResultFromMeasured rebuilds a Result (and the RunInfo anchoring its
// clock) from measured records, so that a format's own encoding formulas
// apply to them (metrics/format recomputes published aggregates this way).
// A request's latency is its end minus its start; file order is both its
// Index and its completion order (Seq). Only the per-request fields, the
// counts and the span are set.
func ResultFromMeasured(reqs []MeasuredRequest) (*Result, *RunInfo) {
	base := int64(math.MaxInt64)
	for i := range reqs {
		base = min(base, reqs[i].Start)
	}
	r := &Result{Detailed: true, Requests: make([]RequestResult, 0, len(reqs))}
	for i := range reqs {
		q := &reqs[i]
		rr := RequestResult{Index: int64(i), Seq: int64(i), Success: q.Success, Error: q.Error, InputTokens: q.InputTokens,
			Start: time.Duration(q.Start - base), End: time.Duration(q.End - base)}
		if q.Success {
			rr.OutputTokens, rr.TTFT, rr.Latency, rr.ITLs = q.OutputTokens, q.TTFT, time.Duration(q.End-q.Start), q.ITLs
			r.Completed++
		} else {
			r.Failed++
		}
		if i == 0 {
			r.FirstStart, r.LastEnd = rr.Start, rr.End
		}
		r.FirstStart, r.LastEnd = min(r.FirstStart, rr.Start), max(r.LastEnd, rr.End)
		r.Requests = append(r.Requests, rr)
	}
	return r, &RunInfo{EpochUnixNano: base}
}

// MaxResultFileBytes bounds the size of a result file a reader loads
// into memory.
const MaxResultFileBytes = 4 << 30

// ReadResultFile reads a benchmark tool's result file whole, refusing one
// larger than MaxResultFileBytes.
func ReadResultFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxResultFileBytes {
		return nil, fmt.Errorf("%s: %d bytes: allowed: at most %d", path, st.Size(), int64(MaxResultFileBytes))
	}
	return os.ReadFile(path)
}

// FromSeconds recovers nanoseconds from float seconds, as the Python tools
// write times: the nearest whole nanosecond.
func FromSeconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
