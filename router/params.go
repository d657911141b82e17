package router

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// params decodes one plugin's `parameters:` mapping strictly: every key the
// plugin reads is declared by a getter call, and done() rejects any key
// nobody asked for, naming it and listing the accepted ones. Errors carry
// the file and line of the offending node.
type params struct {
	file    string
	where   string // "plugin <name> (type <type>)"
	node    *yaml.Node
	known   []string
	ignored map[string]bool
	err     error
}

func newParams(file, where string, n *yaml.Node) *params {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return &params{file: file, where: where, node: n}
}

func (p *params) fail(n *yaml.Node, key, value, msg string) {
	if p.err != nil {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	p.err = &ConfigError{File: p.file, Line: line, Key: key, Value: value, Msg: p.where + ": " + msg}
}

// lookup returns the value node of key, nil when absent.
func (p *params) lookup(key string) *yaml.Node {
	p.known = append(p.known, key)
	v, ok := lookupKey(p.node, key)
	if !ok || v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	return v
}

func (p *params) scalar(key string) (*yaml.Node, bool) {
	v := p.lookup(key)
	if v == nil {
		return nil, false
	}
	if v.Kind != yaml.ScalarNode {
		p.fail(v, "parameters."+key, "", "must be a single value, not a list or mapping")
		return nil, false
	}
	return v, true
}

// Int reads an integer parameter (YAML ints or quoted ints).
func (p *params) Int(key string, dst *int) bool {
	v, ok := p.scalar(key)
	if !ok {
		return false
	}
	return p.intValue(v, "parameters."+key, dst)
}

// intValue reads the integer in scalar v (YAML ints, quoted ints, or
// floats with no fraction); name is its key for errors.
func (p *params) intValue(v *yaml.Node, name string, dst *int) bool {
	s := strings.TrimSpace(v.Value)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			p.fail(v, name, v.Value, "must be an integer")
			return false
		}
		n = int64(f)
	}
	*dst = int(n)
	return true
}

// Float reads a number parameter.
func (p *params) Float(key string, dst *float64) bool {
	v, ok := p.scalar(key)
	if !ok {
		return false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		p.fail(v, "parameters."+key, v.Value, "must be a finite number")
		return false
	}
	*dst = f
	return true
}

// Bool reads a true/false parameter.
func (p *params) Bool(key string, dst *bool) bool {
	v, ok := p.scalar(key)
	if !ok {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(v.Value)) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		p.fail(v, "parameters."+key, v.Value, "must be true or false")
		return false
	}
	return true
}

// String reads a string parameter.
func (p *params) String(key string, dst *string) bool {
	v, ok := p.scalar(key)
	if !ok {
		return false
	}
	*dst = v.Value
	return true
}

// Duration reads a Go duration ("2s", "150ms").
func (p *params) Duration(key string, dst *time.Duration) bool {
	v, ok := p.scalar(key)
	if !ok {
		return false
	}
	d, err := time.ParseDuration(strings.TrimSpace(v.Value))
	if err != nil {
		p.fail(v, "parameters."+key, v.Value, "must be a duration such as 2s or 150ms")
		return false
	}
	*dst = d
	return true
}

// Node returns a nested parameter (mapping or list) for the caller to walk;
// the caller takes responsibility for validating it.
func (p *params) Node(key string) *yaml.Node { return p.lookup(key) }

// Ignore accepts keys a plugin parses for compatibility but that have no
// effect in a simulation (HTTP endpoints, ZMQ addresses, metrics flags).
func (p *params) Ignore(keys ...string) {
	if p.ignored == nil {
		p.ignored = map[string]bool{}
	}
	for _, k := range keys {
		p.known = append(p.known, k)
		p.ignored[k] = true
	}
}

// done reports the first error, or the first key no getter declared.
func (p *params) done() error {
	if p.err != nil {
		return p.err
	}
	if p.node == nil {
		return nil
	}
	if p.node.Kind == yaml.ScalarNode && (p.node.Tag == "!!null" || p.node.Value == "") {
		return nil
	}
	if p.node.Kind != yaml.MappingNode {
		return &ConfigError{File: p.file, Line: p.node.Line, Key: "parameters", Msg: p.where + ": must be a mapping of parameter names to values"}
	}
	for i := 0; i+1 < len(p.node.Content); i += 2 {
		k := p.node.Content[i]
		if !slices.Contains(p.known, k.Value) {
			allowed := append([]string(nil), p.known...)
			sort.Strings(allowed)
			allowed = dedup(allowed)
			msg := "unknown parameter"
			if len(allowed) == 0 {
				msg += "; this plugin takes no parameters"
			} else {
				msg += "; accepted: " + strings.Join(allowed, ", ")
			}
			return &ConfigError{File: p.file, Line: k.Line, Key: "parameters." + k.Value, Msg: p.where + ": " + msg}
		}
	}
	return nil
}

func dedup(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
