package metrics

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"blis/metrics/internal/pytext"
)

// Exports: faithful writers of other benchmark clients' result files, so
// that each tool's own readers and dashboards work on BLIS output. Every
// writer has a reader (Read*) returning a MeasuredRun.
//
//	format      files                                       mirrors
//	vllm        vllm_bench_result.json                      vLLM bench serve --save-result (WriteJSON)
//	aiperf      profile_export.jsonl,                       ai-dynamo/aiperf, export schema 1.4
//	            profile_export_aiperf.json, .csv
//	guidellm    benchmarks.json                             vllm-project/guidellm report version 2 (0.8.0.dev18)
//	llmd        benchmark_report_v0.2.yaml                  llm-d/llm-d-benchmark benchmark report v0.2
//	inferencex  inferencex_agg.json                         SemiAnalysisAI/InferenceX utils/process_result.py
//	inference-perf per_request_lifecycle_metrics.json,      kubernetes-sigs/inference-perf lifecycle reports
//	            summary_lifecycle_metrics.json, stage_0_lifecycle_metrics.json
//
// Every number is derived from the Result and its per-request records; no
// output depends on the wall clock: absolute timestamps are simulated time
// plus RunInfo.EpochUnixNano.

// Export format names, as --export takes them.
const (
	FormatVLLM       = "vllm"
	FormatAIPerf     = "aiperf"
	FormatGuideLLM   = "guidellm"
	FormatLLMD       = "llmd"
	FormatInferenceX = "inferencex"
)

// ExportFormats lists the export formats in the order Export writes them.
func ExportFormats() []string {
	return []string{FormatVLLM, FormatAIPerf, FormatGuideLLM, FormatLLMD, FormatInferenceX, FormatInferencePerf}
}

// File names the exporters write inside the export directory.
const (
	VLLMResultFile       = "vllm_bench_result.json"
	AIPerfRecordsFile    = "profile_export.jsonl"
	AIPerfJSONFile       = "profile_export_aiperf.json"
	AIPerfCSVFile        = "profile_export_aiperf.csv"
	GuideLLMReportFile   = "benchmarks.json"
	LLMDReportFile       = "benchmark_report_v0.2.yaml"
	InferenceXResultFile = "inferencex_agg.json"
)

// DefaultEpochUnixNano is the wall-clock time given to simulated time 0
// when RunInfo.EpochUnixNano is zero: 2026-01-01T00:00:00Z.
const DefaultEpochUnixNano int64 = 1767225600 * int64(time.Second)

// RunInfo is what the export formats need besides the Result: the
// deployment and workload as the other tools describe them, and the
// wall-clock anchor of simulated time. The zero value works (unknown
// fields are written empty or as the tool's default).
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

	// Conversation maps a request index to its conversation and turn
	// (multi-turn workloads). Nil means every request is a conversation
	// of its own (conversation = index, turn 0).
	Conversation func(index int64) (conversation int64, turn int)
}

func (ri *RunInfo) epoch() int64 {
	if ri.EpochUnixNano == 0 {
		return DefaultEpochUnixNano
	}
	return ri.EpochUnixNano
}

func (ri *RunInfo) model(r *Result) string {
	if ri.Model != "" {
		return ri.Model
	}
	return r.ModelID
}

func orOne(v int) int {
	if v <= 0 {
		return 1
	}
	return v
}

// gpus is the GPU count: GPUs, or TP × DP × Replicas.
func (ri *RunInfo) gpus() int {
	if ri.GPUs > 0 {
		return ri.GPUs
	}
	return orOne(ri.TP) * orOne(ri.DP) * orOne(ri.Replicas)
}

func (ri *RunInfo) version() string {
	if ri.Version == "" {
		return "blis"
	}
	return "blis " + ri.Version
}

func (ri *RunInfo) conversation(index int64) (int64, int) {
	if ri.Conversation == nil {
		return index, 0
	}
	return ri.Conversation(index)
}

// benchmarkID is RunInfo.BenchmarkID or a stable id derived from the run
// description (FNV-1a of model, chip, lengths, concurrency, rate, seed).
func (ri *RunInfo) benchmarkID(r *Result) string {
	if ri.BenchmarkID != "" {
		return ri.BenchmarkID
	}
	desc := fmt.Sprintf("%s|%s|%d|%d|%d|%d|%v|%d|%d", ri.model(r), ri.Chip, ri.gpus(), ri.ISL, ri.OSL,
		r.MaxConcurrency, r.RequestRate, r.NumPrompts, ri.Seed)
	h := fnv64(desc)
	h2 := fnv64(desc + "#2")
	// UUID-shaped (version 8, "custom"): 8-4-4-4-12 hex digits.
	return fmt.Sprintf("%08x-%04x-8%03x-%04x-%012x", h>>32, (h>>16)&0xffff, h&0xfff,
		0x8000|(h2>>48)&0x3fff, h2&0xffffffffffff)
}

func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// unixNano is simulated time t as Unix nanoseconds.
func (ri *RunInfo) unixNano(t time.Duration) int64 { return ri.epoch() + int64(t) }

// unixSeconds is simulated time t as Unix float seconds, as time.time()
// returns it: the nearest float64 to the exact value.
func (ri *RunInfo) unixSeconds(t time.Duration) float64 {
	ns := ri.unixNano(t)
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	return float64(sec) + float64(frac)/1e9
}

// isoUTC is Unix nanoseconds as an RFC 3339 UTC timestamp with whole
// seconds ("2026-01-01T00:00:00Z"), as llm-d's reports write it.
func isoUTC(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05Z")
}

// Export writes r in each of formats into dir (created if needed) and
// returns the paths written, in ExportFormats order. Formats are named as
// ExportFormats lists them; repeats are ignored. The aiperf records carry
// every streamed-chunk gap, so the aiperf format needs a Result from a
// Detailed recorder (RecorderOptions.Detailed); so does the vllm format to
// include the per-request arrays (without it the summary alone is written).
func Export(dir string, formats []string, r *Result, run RunInfo) ([]string, error) {
	if r == nil {
		return nil, fmt.Errorf("metrics: export: no result")
	}
	want := map[string]bool{}
	for _, f := range formats {
		f = strings.ToLower(strings.TrimSpace(f))
		if !slices.Contains(ExportFormats(), f) {
			return nil, fmt.Errorf("metrics: export format %q: allowed: %s", f, strings.Join(ExportFormats(), ", "))
		}
		want[f] = true
	}
	if want[FormatAIPerf] && !r.Detailed {
		return nil, fmt.Errorf("metrics: export format aiperf needs per-request chunk gaps: make the recorder with RecorderOptions.Detailed")
	}
	if want[FormatInferencePerf] && !r.Detailed {
		return nil, errIPNotDetailed
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("metrics: export: %w", err)
	}
	var written []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("metrics: export: %w", err)
		}
		written = append(written, p)
		return nil
	}
	for _, f := range ExportFormats() {
		if !want[f] {
			continue
		}
		var err error
		switch f {
		case FormatVLLM:
			var b bytes.Buffer
			if err = WriteJSON(&b, r, r.Detailed); err == nil {
				err = write(VLLMResultFile, b.Bytes())
			}
		case FormatAIPerf:
			var jsonl, agg, csv []byte
			jsonl, agg, csv, err = encodeAIPerf(r, &run)
			if err == nil {
				err = write(AIPerfRecordsFile, jsonl)
			}
			if err == nil {
				err = write(AIPerfJSONFile, agg)
			}
			if err == nil {
				err = write(AIPerfCSVFile, csv)
			}
		case FormatGuideLLM:
			err = write(GuideLLMReportFile, encodeGuideLLM(r, &run))
		case FormatLLMD:
			var b []byte
			if b, err = encodeLLMD(r, &run); err == nil {
				err = write(LLMDReportFile, b)
			}
		case FormatInferenceX:
			err = write(InferenceXResultFile, encodeInferenceX(r, &run))
		case FormatInferencePerf:
			err = writeInferencePerf(r, &run, write)
		}
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// msToDuration recovers nanoseconds from a millisecond value written by
// nsToMS (or by vLLM's seconds·1000): exact for integral nanosecond
// values below about 18 days.
func msToDuration(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }

// sToDuration recovers nanoseconds from float seconds.
func sToDuration(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// pyISODuration is llm-d's "PT{seconds}S" with seconds as Python's repr.
func pyISODuration(s float64) string { return "PT" + pytext.Float(s) + "S" }

func itoa(i int64) string { return strconv.FormatInt(i, 10) }
