package metrics

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// MeasuredRun is a benchmark run as read back from another tool's result
// file (or from a BLIS export of it): per-request records where the format
// has them, and the format's aggregates as named metrics with units.
type MeasuredRun struct {
	Format string // one of ExportFormats
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

// Read reads a result file (for aiperf: the export directory; for
// inference-perf: the report directory or one report file) of the given
// format.
func Read(format, path string) (*MeasuredRun, error) {
	switch strings.ToLower(format) {
	case FormatVLLM:
		return ReadVLLM(path)
	case FormatAIPerf:
		return ReadAIPerf(path)
	case FormatGuideLLM:
		return ReadGuideLLM(path)
	case FormatLLMD:
		return ReadLLMD(path)
	case FormatInferenceX:
		return ReadInferenceX(path)
	case FormatInferencePerf:
		return ReadInferencePerf(path)
	}
	return nil, fmt.Errorf("metrics: read format %q: allowed: %s", format, strings.Join(ExportFormats(), ", "))
}

// maxReadBytes bounds the size of a result file read into memory.
const maxReadBytes = 4 << 30

func readFileBounded(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxReadBytes {
		return nil, fmt.Errorf("%s: %d bytes: allowed: at most %d", path, st.Size(), int64(maxReadBytes))
	}
	return os.ReadFile(path)
}
