package metrics

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/metrics/internal/pytext"
	"go.yaml.in/yaml/v3"
)

// llm-d-benchmark's benchmark report v0.2, mirrored from llm-d/llm-d-benchmark
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
func llmdStats(units string, st *Stat, pcts []float64) *jObj {
	o := newObj().set("units", units).set("mean", st.Mean).set("stddev", st.Std).set("p50", st.Median)
	for i, p := range pcts {
		if k := llmdPctKey(p); k != "" && k != "p50" {
			o.set(k, st.Percentiles[i])
		}
	}
	return o
}

// llmdReport builds the report document.
func llmdReport(r *Result, run *RunInfo) *jObj {
	model := run.model(r)
	start, end, ok := requestSpan(r, run)
	if !ok {
		start, end = run.epoch(), run.epoch()
	}
	tp, dp := orOne(run.TP), orOne(run.DP)
	engineArgs := newObj().set("--model", model).set("--tensor-parallel-size", tp)
	if dp > 1 {
		engineArgs.set("--data-parallel-size", dp)
	}
	chip := run.Chip
	if chip == "" {
		chip = "unknown"
	}
	engine := newObj().
		set("metadata", newObj().set("schema_version", "0.0.1").set("label", "vllm-0").
			set("cfg_id", fmt.Sprintf("%016x", fnv64(fmt.Sprintf("%s|%s|%d|%d|%d", model, chip, tp, dp, orOne(run.Replicas)))))).
		set("standardized", newObj().
			set("kind", "inference_engine").set("tool", "vllm").set("tool_version", run.version()).
			set("role", "replica").set("replicas", orOne(run.Replicas)).
			set("model", newObj().set("name", model)).
			set("accelerator", newObj().set("model", chip).set("count", tp*dp).
				set("parallelism", newObj().set("tp", tp).set("dp", dp).set("dp_local", dp).
					set("workers", 1).set("ep", orOne(run.EP)).set("pp", 1)))).
		set("native", newObj().set("args", engineArgs))

	seqLen := func(v int) *jObj {
		if run.RangeRatio > 0 && run.RangeRatio < 1 {
			return newObj().set("distribution", "uniform").set("value", v)
		}
		return newObj().set("distribution", "fixed").set("value", v)
	}
	loadArgs := newObj().set("--dataset-name", "random").
		set("--random-input-len", run.ISL).set("--random-output-len", run.OSL).
		set("--num-prompts", r.NumPrompts).set("--seed", run.Seed)
	std := newObj().set("tool", "vllm-benchmark").set("tool_version", run.version()).
		set("stage", 0).set("source", "random").
		set("input_seq_len", seqLen(run.ISL)).set("output_seq_len", seqLen(run.OSL))
	if !math.IsInf(r.RequestRate, 1) && r.RequestRate > 0 {
		std.set("rate_qps", r.RequestRate)
		loadArgs.set("--request-rate", r.RequestRate)
	}
	if r.MaxConcurrency > 0 {
		std.set("concurrency", r.MaxConcurrency)
		loadArgs.set("--max-concurrency", r.MaxConcurrency)
	}
	load := newObj().
		set("metadata", newObj().set("schema_version", "0.0.1").
			set("cfg_id", fmt.Sprintf("%016x", fnv64(fmt.Sprintf("%d|%d|%v|%d|%d|%d", run.ISL, run.OSL, r.RequestRate, r.MaxConcurrency, r.NumPrompts, run.Seed))))).
		set("standardized", std).
		set("native", newObj().set("args", loadArgs))

	reqs := newObj().set("total", r.Completed+r.Failed).set("failures", r.Failed)
	if r.Completed > 0 {
		reqs.set("input_length", newObj().set("units", "count").set("mean", float64(r.TotalInputTokens)/float64(r.Completed)))
		reqs.set("output_length", newObj().set("units", "count").set("mean", float64(r.TotalOutputTokens)/float64(r.Completed)))
	}
	latency := newObj().
		set("time_to_first_token", llmdStats("ms", &r.TTFT, r.Percentiles)).
		set("time_per_output_token", llmdStats("ms/token", &r.TPOT, r.Percentiles)).
		set("inter_token_latency", llmdStats("ms/token", &r.ITL, r.Percentiles)).
		set("request_latency", llmdStats("ms", &r.E2EL, r.Percentiles))
	input := 0.0
	if r.DurationS > 0 {
		input = float64(r.TotalInputTokens) / r.DurationS
	}
	throughput := newObj().
		set("input_token_rate", newObj().set("units", "tokens/s").set("mean", input)).
		set("output_token_rate", newObj().set("units", "tokens/s").set("mean", r.OutputThroughput)).
		set("total_token_rate", newObj().set("units", "tokens/s").set("mean", r.TotalTokenThroughput)).
		set("request_rate", newObj().set("units", "queries/s").set("mean", r.RequestThroughput))

	return newObj().
		set("version", "0.2").
		set("run", newObj().
			set("uid", run.benchmarkID(r)).
			set("time", newObj().set("start", isoUTC(start)).set("end", isoUTC(end)).
				set("duration", pyISODuration(r.DurationS))).
			set("description", "BLIS simulation of vllm bench serve").
			set("keywords", []any{"blis", "simulation"})).
		set("scenario", newObj().set("stack", []any{engine}).set("load", load)).
		set("results", newObj().set("request_performance", newObj().set("aggregate", newObj().
			set("requests", reqs).set("latency", latency).set("throughput", throughput))))
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
	case *jObj:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		idx := make([]int, len(x.keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(x.keys[a], x.keys[b]) })
		for _, i := range idx {
			n.Content = append(n.Content, yamlNode(x.keys[i]), yamlNode(x.vals[i]))
		}
		return n
	}
	panic(fmt.Sprintf("metrics: yamlNode: unsupported %T", v)) // unreachable: only the exporters build values
}

func encodeLLMD(r *Result, run *RunInfo) ([]byte, error) {
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

// --- reading ---

// ReadLLMD reads an llm-d benchmark report v0.2 (YAML or JSON, which YAML
// includes): every number under results, named by its path
// ("results.request_performance.aggregate.latency.time_to_first_token.p50";
// sequence items as [i]), with the units of the Statistics block it is in.
func ReadLLMD(path string) (*MeasuredRun, error) {
	data, err := readFileBounded(path)
	if err != nil {
		return nil, err
	}
	return parseLLMD(path, data)
}

type yReader struct {
	file string
	err  error
}

func (r *yReader) fail(n *yaml.Node, path, format string, args ...any) {
	if r.err != nil {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	r.err = fmt.Errorf("%s:%d: %s: %s", r.file, line, path, fmt.Sprintf(format, args...))
}

func yKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return "scalar " + strconv.Quote(n.Value)
	}
	return "nothing"
}

func (r *yReader) mapping(n *yaml.Node, path string) *yaml.Node {
	if r.err != nil {
		return nil
	}
	if n == nil || n.Kind != yaml.MappingNode {
		if n == nil {
			r.fail(nil, path, "missing: want a mapping")
		} else {
			r.fail(n, path, "want a mapping, got %s", yKind(n))
		}
		return nil
	}
	return n
}

func yField(m *yaml.Node, k string) *yaml.Node {
	if m == nil {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Kind == yaml.ScalarNode && m.Content[i].Value == k {
			return m.Content[i+1]
		}
	}
	return nil
}

func parseLLMD(file string, data []byte) (run *MeasuredRun, err error) {
	r := &yReader{file: file}
	var doc yaml.Node
	func() {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%s: invalid YAML: %v", file, p)
			}
		}()
		err = yaml.Unmarshal(data, &doc)
	}()
	if err != nil {
		if strings.HasPrefix(err.Error(), file) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: invalid YAML: %w", file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("%s: want one YAML document holding a benchmark report", file)
	}
	root := r.mapping(doc.Content[0], "$")
	if r.err != nil {
		return nil, r.err
	}
	v := yField(root, "version")
	switch {
	case v == nil:
		r.fail(root, "$", "missing key \"version\"")
	case v.Kind != yaml.ScalarNode || v.Value != "0.2":
		r.fail(v, "$.version", "want \"0.2\", got %s", yKind(v))
	}
	rn := r.mapping(yField(root, "run"), "$.run")
	if u := yField(rn, "uid"); r.err == nil && (u == nil || u.Kind != yaml.ScalarNode || u.Tag != "!!str") {
		if u == nil {
			r.fail(rn, "$.run", "missing key \"uid\"")
		} else {
			r.fail(u, "$.run.uid", "want a string, got %s", yKind(u))
		}
	}
	res := r.mapping(yField(root, "results"), "$.results")
	if r.err != nil {
		return nil, r.err
	}
	run = &MeasuredRun{Format: FormatLLMD, Path: file}
	r.flatten(&run.Metrics, res, "$.results", "results", "", 0)
	if r.err != nil {
		return nil, r.err
	}
	return run, nil
}

// flatten appends the numbers under n; units is the nearest enclosing
// Statistics block's "units".
func (r *yReader) flatten(out *[]MeasuredMetric, n *yaml.Node, path, name, units string, depth int) {
	if r.err != nil {
		return
	}
	if depth > 32 {
		r.fail(n, path, "nested too deeply")
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		r.fail(n, path, "YAML aliases are not supported in a benchmark report")
	case yaml.MappingNode:
		if len(n.Content)%2 != 0 {
			r.fail(n, path, "malformed mapping")
			return
		}
		if u := yField(n, "units"); u != nil {
			if u.Kind != yaml.ScalarNode {
				r.fail(u, path+".units", "want a unit name, got %s", yKind(u))
				return
			}
			units = u.Value
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				r.fail(k, path, "want a string key, got %s", yKind(k))
				return
			}
			if k.Value == "units" {
				continue
			}
			r.flatten(out, n.Content[i+1], path+"."+k.Value, name+"."+k.Value, units, depth+1)
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			r.flatten(out, e, pathIdx(path, i), pathIdx(name, i), units, depth+1)
		}
	case yaml.ScalarNode:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			return
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil {
			if n.Tag == "!!float" {
				switch strings.ToLower(n.Value) {
				case ".inf", "+.inf":
					v, err = math.Inf(1), nil
				case "-.inf":
					v, err = math.Inf(-1), nil
				case ".nan":
					v, err = math.NaN(), nil
				}
			}
			if n.Tag == "!!int" {
				if i, e := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); e == nil {
					v, err = float64(i), nil
				}
			}
			if err != nil {
				r.fail(n, path, "want a number, got %q", n.Value)
				return
			}
		}
		u := units
		last := name[lastDot(name)+1:]
		if last == "total" || last == "failures" || last == "incomplete" {
			u = "count"
		}
		*out = append(*out, MeasuredMetric{Name: name, Unit: u, Value: v})
	}
}
