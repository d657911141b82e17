package metrics

import (
	"fmt"
	"hash/fnv"
	"time"
)

// DefaultEpochUnixNano is the wall-clock time given to simulated time 0
// when RunInfo.EpochUnixNano is zero: 2026-01-01T00:00:00Z.
const DefaultEpochUnixNano int64 = 1767225600 * int64(time.Second)

// RunInfo is what the export formats (metrics/format) need besides the
// Result: the deployment and workload as the other tools describe them,
// and the wall-clock anchor of simulated time. The zero value works
// (unknown fields are written empty or as the tool's default).
type RunInfo struct {
	Model     string // Hugging Face id; "" means Result.ModelID
	Chip      string // accelerator, e.g. "H100" (llm-d accelerator.model, InferenceX hw)
	Precision string // e.g. "bf16", "fp8" (InferenceX precision)
	// GPUs is the number of GPUs serving the run, the denominator of
	// InferenceX's per-GPU throughputs; 0 means TP × DP × Replicas.
	GPUs     int
	TP       int // --tensor-parallel-size; 0 means 1
	DP       int // data parallel ranks per replica; 0 means 1
	EP       int // expert parallel size; 0 means 1
	Replicas int // engine replicas; 0 means 1

	ISL, OSL   int     // configured input and output lengths (--random-input-len, --random-output-len)
	RangeRatio float64 // --random-range-ratio; 0 means fixed lengths
	Seed       int64   // --seed

	// EpochUnixNano is the Unix time, in nanoseconds, of simulated time 0;
	// 0 means DefaultEpochUnixNano. Timestamps are EpochUnixNano plus
	// simulated time, so the bytes do not depend on when BLIS ran.
	EpochUnixNano int64
	// BenchmarkID names the run (aiperf benchmark_id, guidellm run_id,
	// llm-d run.uid); "" means one derived from the run's description.
	BenchmarkID string
	Version     string // BLIS version, written where a format names the tool that wrote it

	// MultiTurn says the workload has multi-turn sessions: the formats
	// then name each request's conversation (inference-perf's session_id),
	// and a request outside any session is a conversation of its own
	// numbered −1 − Index, clear of the session ids.
	MultiTurn bool
	// Stages are the run's inference-perf load stages (nil: one stage, the
	// whole run); inference-perf's export writes one report per stage.
	Stages []Stage
}

// Epoch is the Unix time, in nanoseconds, of simulated time 0.
func (ri *RunInfo) Epoch() int64 {
	if ri.EpochUnixNano == 0 {
		return DefaultEpochUnixNano
	}
	return ri.EpochUnixNano
}

// ModelName is the model written for r: Model, or r's ModelID.
func (ri *RunInfo) ModelName(r *Result) string {
	if ri.Model != "" {
		return ri.Model
	}
	return r.ModelID
}

// Parallelism is TP, DP, EP and Replicas with 0 read as 1.
func (ri *RunInfo) Parallelism() (tp, dp, ep, replicas int) {
	return orOne(ri.TP), orOne(ri.DP), orOne(ri.EP), orOne(ri.Replicas)
}

func orOne(v int) int {
	if v <= 0 {
		return 1
	}
	return v
}

// GPUCount is the GPU count: GPUs, or TP × DP × Replicas.
func (ri *RunInfo) GPUCount() int {
	if ri.GPUs > 0 {
		return ri.GPUs
	}
	tp, dp, _, replicas := ri.Parallelism()
	return tp * dp * replicas
}

// ToolVersion names the tool that wrote a file: "blis" or "blis <Version>".
func (ri *RunInfo) ToolVersion() string {
	if ri.Version == "" {
		return "blis"
	}
	return "blis " + ri.Version
}

// ConversationOf is the conversation and turn of q: its session, or a
// conversation of its own (its Index; −1 − Index in a MultiTurn run).
func (ri *RunInfo) ConversationOf(q *RequestResult) (int64, int) {
	switch {
	case q.Session != 0:
		return int64(q.Session), q.Turn
	case ri.MultiTurn:
		return -1 - q.Index, 0
	}
	return q.Index, 0
}

// RunID is BenchmarkID or a stable id derived from the run description
// (FNV-1a of model, chip, lengths, concurrency, rate, seed).
func (ri *RunInfo) RunID(r *Result) string {
	if ri.BenchmarkID != "" {
		return ri.BenchmarkID
	}
	desc := fmt.Sprintf("%s|%s|%d|%d|%d|%d|%v|%d|%d", ri.ModelName(r), ri.Chip, ri.GPUCount(), ri.ISL, ri.OSL,
		r.MaxConcurrency, r.RequestRate, r.NumPrompts, ri.Seed)
	h := fnv64a(desc)
	h2 := fnv64a(desc + "#2")
	// UUID-shaped (version 8, "custom"): 8-4-4-4-12 hex digits.
	return fmt.Sprintf("%08x-%04x-8%03x-%04x-%012x", h>>32, (h>>16)&0xffff, h&0xfff,
		0x8000|(h2>>48)&0x3fff, h2&0xffffffffffff)
}

func fnv64a(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// UnixNano is simulated time t as Unix nanoseconds.
func (ri *RunInfo) UnixNano(t time.Duration) int64 { return ri.Epoch() + int64(t) }

// UnixSeconds is simulated time t as Unix float seconds, as time.time()
// returns it: the nearest float64 to the exact value.
func (ri *RunInfo) UnixSeconds(t time.Duration) float64 {
	ns := ri.UnixNano(t)
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	return float64(sec) + float64(frac)/1e9
}

// RequestSpan is the first send and the last end over r's requests, in
// Unix nanoseconds; ok is false when r has none.
func (ri *RunInfo) RequestSpan(r *Result) (start, end int64, ok bool) {
	if r.Completed+r.Failed == 0 {
		return 0, 0, false
	}
	return ri.UnixNano(r.FirstStart), ri.UnixNano(r.LastEnd), true
}
