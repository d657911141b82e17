package llmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
)

// Read reads an llm-d benchmark report v0.2 (YAML or JSON, which YAML
// includes): every number under results, named by its path
// ("results.request_performance.aggregate.latency.time_to_first_token.p50";
// sequence items as [i]), with the units of the Statistics block it is in.
func Read(path string) (*metrics.MeasuredRun, error) {
	data, err := metrics.ReadResultFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
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

func parse(file string, data []byte) (run *metrics.MeasuredRun, err error) {
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
	run = &metrics.MeasuredRun{Format: Name, Path: file}
	r.flatten(&run.Metrics, res, "$.results", "results", "", 0)
	if r.err != nil {
		return nil, r.err
	}
	return run, nil
}

// flatten appends the numbers under n; units is the nearest enclosing
// Statistics block's "units".
func (r *yReader) flatten(out *[]metrics.MeasuredMetric, n *yaml.Node, path, name, units string, depth int) {
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
			r.flatten(out, e, jsonx.PathIdx(path, i), jsonx.PathIdx(name, i), units, depth+1)
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
		last := name[strings.LastIndexByte(name, '.')+1:]
		if last == "total" || last == "failures" || last == "incomplete" {
			u = "count"
		}
		*out = append(*out, metrics.MeasuredMetric{Name: name, Unit: u, Value: v})
	}
}
