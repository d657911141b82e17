// Package llmd writes and reads llm-d-benchmark's benchmark report v0.2,
// so that llm-d's analysis tooling works on BLIS output. The report is
// mirrored from llm-d/llm-d-benchmark
// @ 8bc9f1dd llmdbenchmark/analysis/benchmark_report (br_v0_2_json_schema.json,
// schema_v0_2.py, and native_to_br0_2.py import_vllm_benchmark, which maps a
// `vllm bench serve` result onto the report): BLIS is the vLLM-benchmark
// harness here, so the latency statistics are vLLM bench's own (ms, and
// ms/token for TPOT and ITL) and keep every bit; the report is written as
// BenchmarkReport.export_yaml does (yaml.dump of model_dump(exclude_none):
// keys sorted, block style, floats as Python repr with PyYAML's ".0e").
// Only the statistics vLLM bench computed are written: mean, stddev, p50
// (its median) and the configured percentiles the schema names (p0p1, p1,
// p5, p10, p25, p75, p90, p95, p99, p99p9).
package llmd

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/pytext"
)

// Name is the format's name, as --export takes it.
const Name = "llmd"

// ReportFile is the file the export writes.
const ReportFile = "benchmark_report_v0.2.yaml"

// llmdPctKey maps a percentile to the schema's key.
func llmdPctKey(p float64) string {
	switch p {
	case 0.1:
		return "p0p1"
	case 99.9:
		return "p99p9"
	case 1, 5, 10, 25, 50, 75, 90, 95, 99:
		return "p" + strconv.Itoa(int(p))
	}
	return ""
}

// llmdStats is a Statistics block from a vLLM bench Stat (ms).
func llmdStats(units string, st *metrics.Stat, pcts []float64) *jsonx.Obj {
	o := jsonx.NewObj().Set("units", units).Set("mean", st.Mean).Set("stddev", st.Std).Set("p50", st.Median)
	for i, p := range pcts {
		if k := llmdPctKey(p); k != "" && k != "p50" {
			o.Set(k, st.Percentiles[i])
		}
	}
	return o
}

// llmdReport builds the report document.
func llmdReport(r *metrics.Result, run *metrics.RunInfo) *jsonx.Obj {
	model := run.ModelName(r)
	start, end, ok := run.RequestSpan(r)
	if !ok {
		start, end = run.Epoch(), run.Epoch()
	}
	tp, dp, ep, replicas := run.Parallelism()
	engineArgs := jsonx.NewObj().Set("--model", model).Set("--tensor-parallel-size", tp)
	if dp > 1 {
		engineArgs.Set("--data-parallel-size", dp)
	}
	chip := run.Chip
	if chip == "" {
		chip = "unknown"
	}
	engine := jsonx.NewObj().
		Set("metadata", jsonx.NewObj().Set("schema_version", "0.0.1").Set("label", "vllm-0").
			Set("cfg_id", fmt.Sprintf("%016x", fnv64a(fmt.Sprintf("%s|%s|%d|%d|%d", model, chip, tp, dp, replicas))))).
		Set("standardized", jsonx.NewObj().
			Set("kind", "inference_engine").Set("tool", "vllm").Set("tool_version", run.ToolVersion()).
			Set("role", "replica").Set("replicas", replicas).
			Set("model", jsonx.NewObj().Set("name", model)).
			Set("accelerator", jsonx.NewObj().Set("model", chip).Set("count", tp*dp).
				Set("parallelism", jsonx.NewObj().Set("tp", tp).Set("dp", dp).Set("dp_local", dp).
					Set("workers", 1).Set("ep", ep).Set("pp", 1)))).
		Set("native", jsonx.NewObj().Set("args", engineArgs))

	seqLen := func(v int) *jsonx.Obj {
		if run.RangeRatio > 0 && run.RangeRatio < 1 {
			return jsonx.NewObj().Set("distribution", "uniform").Set("value", v)
		}
		return jsonx.NewObj().Set("distribution", "fixed").Set("value", v)
	}
	loadArgs := jsonx.NewObj().Set("--dataset-name", "random").
		Set("--random-input-len", run.ISL).Set("--random-output-len", run.OSL).
		Set("--num-prompts", r.NumPrompts).Set("--seed", run.Seed)
	std := jsonx.NewObj().Set("tool", "vllm-benchmark").Set("tool_version", run.ToolVersion()).
		Set("stage", 0).Set("source", "random").
		Set("input_seq_len", seqLen(run.ISL)).Set("output_seq_len", seqLen(run.OSL))
	if !math.IsInf(r.RequestRate, 1) && r.RequestRate > 0 {
		std.Set("rate_qps", r.RequestRate)
		loadArgs.Set("--request-rate", r.RequestRate)
	}
	if r.MaxConcurrency > 0 {
		std.Set("concurrency", r.MaxConcurrency)
		loadArgs.Set("--max-concurrency", r.MaxConcurrency)
	}
	load := jsonx.NewObj().
		Set("metadata", jsonx.NewObj().Set("schema_version", "0.0.1").
			Set("cfg_id", fmt.Sprintf("%016x", fnv64a(fmt.Sprintf("%d|%d|%v|%d|%d|%d", run.ISL, run.OSL, r.RequestRate, r.MaxConcurrency, r.NumPrompts, run.Seed))))).
		Set("standardized", std).
		Set("native", jsonx.NewObj().Set("args", loadArgs))

	reqs := jsonx.NewObj().Set("total", r.Completed+r.Failed).Set("failures", r.Failed)
	if r.Completed > 0 {
		reqs.Set("input_length", jsonx.NewObj().Set("units", "count").Set("mean", float64(r.TotalInputTokens)/float64(r.Completed)))
		reqs.Set("output_length", jsonx.NewObj().Set("units", "count").Set("mean", float64(r.TotalOutputTokens)/float64(r.Completed)))
	}
	latency := jsonx.NewObj().
		Set("time_to_first_token", llmdStats("ms", &r.TTFT, r.Percentiles)).
		Set("time_per_output_token", llmdStats("ms/token", &r.TPOT, r.Percentiles)).
		Set("inter_token_latency", llmdStats("ms/token", &r.ITL, r.Percentiles)).
		Set("request_latency", llmdStats("ms", &r.E2EL, r.Percentiles))
	input := 0.0
	if r.DurationS > 0 {
		input = float64(r.TotalInputTokens) / r.DurationS
	}
	throughput := jsonx.NewObj().
		Set("input_token_rate", jsonx.NewObj().Set("units", "tokens/s").Set("mean", input)).
		Set("output_token_rate", jsonx.NewObj().Set("units", "tokens/s").Set("mean", r.OutputThroughput)).
		Set("total_token_rate", jsonx.NewObj().Set("units", "tokens/s").Set("mean", r.TotalTokenThroughput)).
		Set("request_rate", jsonx.NewObj().Set("units", "queries/s").Set("mean", r.RequestThroughput))

	return jsonx.NewObj().
		Set("version", "0.2").
		Set("run", jsonx.NewObj().
			Set("uid", run.RunID(r)).
			Set("time", jsonx.NewObj().Set("start", isoUTC(start)).Set("end", isoUTC(end)).
				Set("duration", pyISODuration(r.DurationS))).
			Set("description", "BLIS simulation of vllm bench serve").
			Set("keywords", []any{"blis", "simulation"})).
		Set("scenario", jsonx.NewObj().Set("stack", []any{engine}).Set("load", load)).
		Set("results", jsonx.NewObj().Set("request_performance", jsonx.NewObj().Set("aggregate", jsonx.NewObj().
			Set("requests", reqs).Set("latency", latency).Set("throughput", throughput))))
}

// pyYAMLFloat is PyYAML's representation of a float: repr, with ".0"
// inserted before an exponent that has no point, .inf/.nan for the rest.
func pyYAMLFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return ".nan"
	case math.IsInf(x, 1):
		return ".inf"
	case math.IsInf(x, -1):
		return "-.inf"
	}
	s := pytext.Float(x)
	if !strings.Contains(s, ".") && strings.Contains(s, "e") {
		s = strings.Replace(s, "e", ".0e", 1)
	}
	return s
}

// yamlNode converts a document to YAML nodes with sorted keys (PyYAML's
// default sort_keys).
func yamlNode(v any) *yaml.Node {
	switch x := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: pyYAMLFloat(x)}
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, e := range x {
			n.Content = append(n.Content, yamlNode(e))
		}
		return n
	case *jsonx.Obj:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		idx := make([]int, len(x.Keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(x.Keys[a], x.Keys[b]) })
		for _, i := range idx {
			n.Content = append(n.Content, yamlNode(x.Keys[i]), yamlNode(x.Vals[i]))
		}
		return n
	}
	panic(fmt.Sprintf("metrics: yamlNode: unsupported %T", v)) // unreachable: only the exporters build values
}

// Encode renders the report (ReportFile).
func Encode(r *metrics.Result, run *metrics.RunInfo) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(yamlNode(llmdReport(r, run))); err != nil {
		return nil, fmt.Errorf("metrics: llm-d report: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("metrics: llm-d report: %w", err)
	}
	return b.Bytes(), nil
}

// isoUTC is Unix nanoseconds as an RFC 3339 UTC timestamp with whole
// seconds ("2026-01-01T00:00:00Z"), as llm-d's reports write it.
func isoUTC(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05Z")
}

// pyISODuration is llm-d's "PT{seconds}S" with seconds as Python's repr.
func pyISODuration(s float64) string { return "PT" + pytext.Float(s) + "S" }

// fnv64a is the 64-bit FNV-1a hash of s, behind the report's cfg_ids.
func fnv64a(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// Writer writes ReportFile into a directory at Close: the report is
// aggregates only, so it keeps nothing per request.
type Writer struct {
	dir string
	run metrics.RunInfo
}

// NewWriter returns a writer of ReportFile in dir.
func NewWriter(dir string, run metrics.RunInfo) *Writer { return &Writer{dir: dir, run: run} }

// Request does nothing (see metrics.Sink): the report needs no request.
func (w *Writer) Request(*metrics.RequestResult) error { return nil }

// Close writes ReportFile for r and returns its path.
func (w *Writer) Close(r *metrics.Result) ([]string, error) {
	b, err := Encode(r, &w.run)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(w.dir, ReportFile)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return nil, err
	}
	return []string{p}, nil
}

// Abort does nothing: Close writes the file.
func (w *Writer) Abort() {}
