// Package format is the registry of the benchmark clients' result formats
// BLIS writes and reads: faithful writers of other tools' result files, so
// that each tool's own readers and dashboards work on BLIS output, and a
// reader for each returning a metrics.MeasuredRun.
//
//	format          files                                      mirrors (package)
//	vllm            vllm_bench_result.json                     vLLM bench serve --save-result (metrics.WriteJSON; vllmbench reads it)
//	aiperf          profile_export.jsonl,                      ai-dynamo/aiperf, export schema 1.4 (aiperf)
//	                profile_export_aiperf.json, .csv
//	guidellm        benchmarks.json                            vllm-project/guidellm report version 2, 0.8.0.dev18 (guidellm)
//	llmd            benchmark_report_v0.2.yaml                 llm-d/llm-d-benchmark benchmark report v0.2 (llmd)
//	inferencex      inferencex_agg.json                        SemiAnalysisAI/InferenceX utils/process_result.py (inferencex)
//	inference-perf  per_request_lifecycle_metrics.json,        kubernetes-sigs/inference-perf lifecycle reports (inferenceperf)
//	                summary_lifecycle_metrics.json, stage_0_lifecycle_metrics.json
//	lmbench         LMBench_<scenario>_….csv (read only)       LMCache/LMBenchmark per-request CSV (lmbench)
//
// Every number is derived from the Result and its per-request records; no
// output depends on the wall clock: absolute timestamps are simulated time
// plus RunInfo.EpochUnixNano. The tool packages know nothing of each other
// or of this registry.
//
// Each format is a streaming writer behind the Exporter (a metrics.Sink):
// per-request records are written as requests finish — in completion
// order, as aiperf, GuideLLM and inference-perf record them; vLLM's
// arrays in request order — and each writer keeps for its aggregates a
// few varints per request (and per chunk where the tool's statistics run
// over chunks), spilled to temporary files beyond 4 MiB. Writing the
// aggregates reads those values back in passes; GuideLLM's per-iteration
// distributions and inference-perf's per-token ITL statistics hold one
// entry per token while they are computed.
package format

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"blis/metrics"
	"blis/metrics/format/aiperf"
	"blis/metrics/format/guidellm"
	"blis/metrics/format/inferenceperf"
	"blis/metrics/format/inferencex"
	"blis/metrics/format/llmd"
	"blis/metrics/format/lmbench"
	"blis/metrics/format/vllmbench"
)

// Format names, as --export takes them and MeasuredRun.Format holds them.
const (
	VLLM          = vllmbench.Name
	AIPerf        = aiperf.Name
	GuideLLM      = guidellm.Name
	LLMD          = llmd.Name
	InferenceX    = inferencex.Name
	InferencePerf = inferenceperf.Name
	LMBench       = lmbench.Name // read only: BLIS does not write it
)

// Names lists the formats in the order Export writes them.
func Names() []string {
	return []string{VLLM, AIPerf, GuideLLM, LLMD, InferenceX, InferencePerf}
}

// ReadNames lists the formats Read takes: every export format, then those
// BLIS only reads.
func ReadNames() []string { return append(Names(), LMBench) }

var errIPNotDetailed = errors.New("metrics: export format inference-perf needs per-request chunk times: make the recorder with RecorderOptions.Detailed")

// writer is one format's streaming writer.
type writer interface {
	metrics.Sink
	// Close writes what is left for the run's summary and returns the
	// files written.
	Close(r *metrics.Result) ([]string, error)
	// Abort closes the files without finishing them.
	Abort()
}

// Exporter writes formats into a directory as a run goes: a metrics.Sink
// to give the recorder (RecorderOptions.Sinks), closed with the run's
// summary. Each format writes its per-request records as requests finish
// and keeps only what its aggregates need.
type Exporter struct {
	writers []writer
}

// NewExporter creates the formats' files in dir (created if needed).
// Formats are named as Names lists them; repeats are ignored. detailed says
// the requests will carry their chunk gaps (a Detailed recorder), which
// aiperf's and inference-perf's records need, and the vllm format's
// per-request arrays (without it the summary alone is written).
func NewExporter(dir string, formats []string, run metrics.RunInfo, detailed bool) (*Exporter, error) {
	want := map[string]bool{}
	for _, f := range formats {
		f = strings.ToLower(strings.TrimSpace(f))
		if !slices.Contains(Names(), f) {
			return nil, fmt.Errorf("metrics: export format %q: allowed: %s", f, strings.Join(Names(), ", "))
		}
		want[f] = true
	}
	if want[AIPerf] && !detailed {
		return nil, fmt.Errorf("metrics: export format aiperf needs per-request chunk gaps: make the recorder with RecorderOptions.Detailed")
	}
	if want[InferencePerf] && !detailed {
		return nil, errIPNotDetailed
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("metrics: export: %w", err)
	}
	e := &Exporter{}
	for _, f := range Names() {
		if !want[f] {
			continue
		}
		var w writer
		var err error
		switch f {
		case VLLM:
			w, err = newVLLMWriter(dir, run, detailed)
		case AIPerf:
			w, err = aiperf.NewWriter(dir, run)
		case GuideLLM:
			w = guidellm.NewWriter(dir, run, detailed)
		case LLMD:
			w = llmd.NewWriter(dir, run)
		case InferenceX:
			w = inferencex.NewWriter(dir, run)
		case InferencePerf:
			w, err = inferenceperf.NewWriter(dir, run)
		}
		if err != nil {
			e.Abort()
			return nil, fmt.Errorf("metrics: export: %w", err)
		}
		e.writers = append(e.writers, w)
	}
	return e, nil
}

// Request hands q to every format (see metrics.Sink).
func (e *Exporter) Request(q *metrics.RequestResult) error {
	for _, w := range e.writers {
		if err := w.Request(q); err != nil {
			return fmt.Errorf("metrics: export: %w", err)
		}
	}
	return nil
}

// Close finishes every format for r, whose requests were all given to
// Request, and returns the paths written, in Names order.
func (e *Exporter) Close(r *metrics.Result) ([]string, error) {
	var written []string
	for i, w := range e.writers {
		paths, err := w.Close(r)
		written = append(written, paths...)
		if err != nil {
			for _, rest := range e.writers[i+1:] {
				rest.Abort()
			}
			return written, fmt.Errorf("metrics: export: %w", err)
		}
	}
	return written, nil
}

// Abort closes every format's files without finishing them.
func (e *Exporter) Abort() {
	for _, w := range e.writers {
		w.Abort()
	}
}

// vllmWriter is the vllm format: metrics.JSONWriter into ResultFile.
type vllmWriter struct {
	f *os.File
	j *metrics.JSONWriter
}

func newVLLMWriter(dir string, run metrics.RunInfo, detailed bool) (*vllmWriter, error) {
	f, err := os.Create(filepath.Join(dir, vllmbench.ResultFile))
	if err != nil {
		return nil, err
	}
	return &vllmWriter{f: f, j: metrics.NewJSONWriter(f, metrics.JSONOptions{
		Detailed: detailed, EpochUnixNano: run.Epoch(), TempDir: dir})}, nil
}

func (w *vllmWriter) Request(q *metrics.RequestResult) error { return w.j.Request(q) }

func (w *vllmWriter) Close(r *metrics.Result) ([]string, error) {
	err := w.j.Close(r)
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return []string{w.f.Name()}, nil
}

func (w *vllmWriter) Abort() { w.f.Close() }

// Export writes r in each of formats into dir (created if needed) and
// returns the paths written, in Names order: an Exporter fed r's requests
// in completion order (RequestResult.Seq). The aiperf records carry every
// streamed-chunk gap, so the aiperf format needs a Result from a Detailed
// recorder (RecorderOptions.Detailed); so does inference-perf for its
// chunk times, and the vllm format to include the per-request arrays
// (without it the summary alone is written).
func Export(dir string, formats []string, r *metrics.Result, run metrics.RunInfo) ([]string, error) {
	if r == nil {
		return nil, fmt.Errorf("metrics: export: no result")
	}
	if run.Model == "" {
		run.Model = run.ModelName(r)
	}
	e, err := NewExporter(dir, formats, run, r.Detailed)
	if err != nil {
		return nil, err
	}
	for _, q := range r.InCompletionOrder() {
		if err := e.Request(q); err != nil {
			e.Abort()
			return nil, err
		}
	}
	return e.Close(r)
}

// tool is what the registry knows of a format besides its writer.
type tool struct {
	read      func(path string) (*metrics.MeasuredRun, error)
	recompute func(run *metrics.MeasuredRun) []metrics.Recomputed // nil: aggregates only
	formula   string                                              // whose formulas recompute applies
}

var tools = map[string]tool{
	VLLM:          {vllmbench.Read, vllmbench.Recompute, vllmbench.Formula},
	AIPerf:        {aiperf.Read, aiperf.Recompute, aiperf.Formula},
	GuideLLM:      {guidellm.Read, guidellm.Recompute, guidellm.Formula},
	LLMD:          {read: llmd.Read},
	InferenceX:    {read: inferencex.Read},
	InferencePerf: {inferenceperf.Read, inferenceperf.Recompute, inferenceperf.Formula},
	LMBench:       {read: lmbench.Read}, // the CSV states no aggregates
}

// Read reads a result file (for aiperf: the export directory; for
// inference-perf: the report directory or one report file) of the given
// format, one of ReadNames.
func Read(format, path string) (*metrics.MeasuredRun, error) {
	if t, ok := tools[strings.ToLower(format)]; ok {
		return t.read(path)
	}
	return nil, fmt.Errorf("metrics: read format %q: allowed: %s", format, strings.Join(ReadNames(), ", "))
}

// Recompute recomputes a measured run's main published aggregates (the
// latencies, token counts and throughputs a validation compares) from its
// own per-request records, with the publishing tool's formulas: the code
// the tool's package writes those aggregates with, so there is one copy of
// each tool's formulas. A run whose recomputed aggregates match the
// published ones has records that are the population the published
// numbers describe; only then may its requests be paired with BLIS's and
// stand for the published run.
//
// It returns nil when the run has no records, no aggregates (LMBenchmark's
// CSV states none), or a format whose aggregates BLIS cannot recompute
// (llm-d, InferenceX), and for a
// guidellm file holding more than one benchmark (its records are pooled).
func Recompute(run *metrics.MeasuredRun) []metrics.Recomputed {
	if run == nil || len(run.Requests) == 0 || len(run.Metrics) == 0 {
		return nil
	}
	if t := tools[run.Format]; t.recompute != nil {
		return t.recompute(run)
	}
	return nil
}

// RecomputeFormula says whose formulas Recompute applies to a run of the
// format (for a validation page); "" for a format it does not recompute.
func RecomputeFormula(format string) string { return tools[format].formula }
