// Package grid reads a sweep's grid file and expands it into points: one
// scenario per combination of the axes' values, in a stable order, each with
// an ID and a seed derived from its content, so that any point can be re-run
// alone with `blis run` on its scenario file and give the same result.
//
// Every key is a scenario key (the flag names of `blis run`), and every value
// is checked by the setting's own parser before any point runs, so a bad grid
// fails in milliseconds with the file, line and key, not after an hour.
package grid

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"blis/internal/suggest"
	"blis/scenario"
)

// DefaultMaxPoints is the largest grid expanded without --force.
const DefaultMaxPoints = 100_000

// DefaultPercentiles are the percentiles every point reports unless the grid
// sets metric-percentiles: the store's p50/p90/p99 columns.
const DefaultPercentiles = "50,90,99"

// DefaultPercentileMetrics adds E2EL to vLLM's default ttft,tpot,itl so the
// store has E2EL percentiles, unless the grid sets percentile-metrics.
const DefaultPercentileMetrics = "ttft,tpot,itl,e2el"

// topKeys are the grid file's own keys, in the order docs/sweeps.md lists
// them.
var topKeys = []string{"name", "scenario", "base", "axes", "zip", "load", "exclude"}

// outputKeys are scenario keys a grid may not set: the sweep writes each
// point's result itself (its store's points/ directory), so these would
// only scatter files or change the result's shape behind the store's back.
var outputKeys = []string{"save-result", "result-dir", "result-filename", "export", "export-dir", "append-result"}

// Grid is a parsed, validated grid file.
type Grid struct {
	// Name is the grid's name: the store's default directory.
	Name string
	// File is the grid file's path as given (for messages).
	File string
	// Text is the grid file's bytes. Hash is their SHA-256 in hex, and that
	// of the scenario file too when the grid names one: it identifies what
	// the grid expands to, and a resume or a merge with a different grid is
	// refused on it.
	Text []byte
	Hash string
	// ScenarioFile is the `scenario:` value as written ("" when absent);
	// ScenarioText is that file's bytes.
	ScenarioFile string
	ScenarioText []byte
	// Base is the scenario every point starts from (the scenario file's
	// keys, then base's), in order; its values are YAML nodes so that
	// structured settings (stages, pools) pass through as written.
	Base []Entry
	// Axes are the dimensions of the product, slowest first: each plain
	// axis, then each zip group, then the load axis.
	Axes []Axis
	// Exclude are the rules dropping points: a point matching every key of
	// one rule is dropped.
	Exclude []Rule
	// SetsSeed reports whether the grid sets seed itself (in base or on an
	// axis); otherwise each point's seed is derived from its content.
	SetsSeed bool

	// canon caches each value node's canonical text: a point's ID
	// needs every value's, and the nodes repeat across points.
	canon map[*yaml.Node]string
}

// Entry is one scenario key and its value.
type Entry struct {
	Key   string
	Value *yaml.Node
}

// Axis is one dimension: one key, or several zipped keys that vary
// together. Values[i][k] is the i-th value of Keys[k].
type Axis struct {
	Keys   []string
	Values [][]*yaml.Node
	// canon[i][k] is Values[i][k] in canonical text (for exclusion rules
	// and IDs).
	canon [][]string
}

// Len is the number of values on the axis.
func (a Axis) Len() int { return len(a.Values) }

// Rule is one exclusion rule: canonical values by key.
type Rule map[string]string

// Point is one expanded configuration.
type Point struct {
	// Index is the point's place in the expansion (0-based, after
	// exclusions): shards and the store order points by it.
	Index int
	// ID is a hash of the point's canonical settings: stable across
	// reorderings of the grid file and equal for equal settings.
	ID string
	// Seed is the point's seed: the grid's own, or derived from its ID.
	Seed int64
	// Values are the axis values of the point, by key, in axis order
	// (canonical text).
	Values []KV
	// Scenario is the point's complete scenario file: `blis run` of it
	// gives the point's result JSON byte for byte.
	Scenario []byte
}

// KV is one key and its canonical text.
type KV struct{ Key, Value string }

// Keys lists every axis key of the grid in axis order (the store's axis
// columns).
func (g *Grid) Keys() []string {
	var out []string
	for _, a := range g.Axes {
		out = append(out, a.Keys...)
	}
	return out
}

// ReadFile reads and parses a grid file.
func ReadFile(path string) (*Grid, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		if u := errors.Unwrap(err); u != nil {
			msg = u.Error()
		}
		return nil, &scenario.InputError{File: path, Msg: "cannot read the grid: " + msg}
	}
	return Parse(path, data)
}

// Parse parses and validates a grid file's bytes; file names it in errors
// and is where a `scenario:` path is taken relative to.
func Parse(file string, data []byte) (*Grid, error) {
	g := &Grid{File: file, Text: slices.Clone(data)}
	p := parser{file: file, g: g}
	if err := p.parse(data); err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(data)
	if g.ScenarioFile != "" {
		// The scenario file's keys are every point's base: a change to it
		// is another grid. A NUL and the name keep the two parts apart.
		fmt.Fprintf(h, "\x00scenario %s\x00", g.ScenarioFile)
		h.Write(g.ScenarioText)
	}
	g.Hash = hex.EncodeToString(h.Sum(nil))
	return g, nil
}

// parser holds what validation needs: the settings' names and the lines
// keys were first seen on.
type parser struct {
	file  string
	g     *Grid
	names []string
	known map[string]bool
	// axisLine is the line of each axis key (a key on two axes is an
	// error naming both).
	axisLine map[string]int
}

func (p *parser) errf(line int, key, value, format string, args ...any) error {
	return &scenario.InputError{File: p.file, Line: line, Key: key, Value: value, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) parse(data []byte) error {
	s := scenario.Defaults()
	p.known = map[string]bool{}
	for _, st := range s.Settings() {
		p.names = append(p.names, st.Name)
		p.known[st.Name] = true
	}
	p.axisLine = map[string]int{}

	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return p.errf(0, "", "", "the grid is empty; it needs at least base or axes")
		}
		return p.errf(0, "", "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		line := 0
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return p.errf(line, "", "", "a grid is a mapping with the keys %s", strings.Join(topKeys, ", "))
	}
	root := doc.Content[0]
	seen := map[string]int{}
	var base, scen, axes, zip, load, exclude *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if prev, dup := seen[k.Value]; dup {
			return p.errf(k.Line, k.Value, "", "given twice (first on line %d)", prev)
		}
		seen[k.Value] = k.Line
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return p.errf(v.Line, "name", "", "must be a plain name")
			}
			if err := checkName(v.Value); err != nil {
				return p.errf(v.Line, "name", v.Value, "%v", err)
			}
			p.g.Name = v.Value
		case "scenario":
			scen = v
		case "base":
			base = v
		case "axes":
			axes = v
		case "zip":
			zip = v
		case "load":
			load = v
		case "exclude":
			exclude = v
		default:
			msg := "unknown grid key"
			cands := make([]suggest.Candidate, len(topKeys))
			for i, t := range topKeys {
				cands[i] = suggest.Candidate{Key: t, Name: t}
			}
			if c := suggest.CloseMatches(k.Value, cands, 2); len(c) > 0 {
				msg += "; did you mean " + strings.Join(c, ", ") + "?"
			} else {
				msg += "; allowed: " + strings.Join(topKeys, ", ")
			}
			if p.known[strings.ReplaceAll(k.Value, "_", "-")] {
				msg += " (scenario keys go under base: or axes:)"
			}
			return p.errf(k.Line, k.Value, "", "%s", msg)
		}
	}
	if p.g.Name == "" {
		p.g.Name = strings.TrimSuffix(filepath.Base(p.file), filepath.Ext(p.file))
		if checkName(p.g.Name) != nil {
			p.g.Name = "sweep"
		}
	}
	if scen != nil {
		if err := p.scenarioFile(scen); err != nil {
			return err
		}
	}
	if base != nil {
		if err := p.base(base); err != nil {
			return err
		}
	}
	if axes != nil {
		if err := p.axes(axes); err != nil {
			return err
		}
	}
	if zip != nil {
		if err := p.zip(zip); err != nil {
			return err
		}
	}
	if load != nil {
		if err := p.load(load); err != nil {
			return err
		}
	}
	if exclude != nil {
		if err := p.exclude(exclude); err != nil {
			return err
		}
	}
	for _, e := range p.g.Base {
		if e.Key == "seed" {
			p.g.SetsSeed = true
		}
	}
	if _, ok := p.axisLine["seed"]; ok {
		p.g.SetsSeed = true
	}
	return nil
}

// checkName accepts names usable as a directory name.
func checkName(n string) error {
	if n == "" || n == "." || n == ".." || len(n) > 100 {
		return errors.New(`must be 1 to 100 characters, and not "." or ".."`)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return errors.New("may hold only letters, digits, '-', '_' and '.' (it names the store's directory)")
		}
	}
	return nil
}

// key checks a scenario key from the grid: known, not an output key.
func (p *parser) key(k *yaml.Node) (string, error) {
	if k.Kind != yaml.ScalarNode {
		return "", p.errf(k.Line, "", "", "a key must be a plain name")
	}
	name := strings.ReplaceAll(k.Value, "_", "-")
	if !p.known[name] {
		cands := make([]suggest.Candidate, len(p.names))
		for i, n := range p.names {
			cands[i] = suggest.Candidate{Key: n, Name: n}
		}
		msg := "not a scenario key"
		if c := suggest.CloseMatches(name, cands, 3); len(c) > 0 {
			msg += "; did you mean " + strings.Join(c, ", ") + "?"
		} else {
			msg += "; `blis flags` lists them"
		}
		return "", p.errf(k.Line, k.Value, "", "%s", msg)
	}
	if slices.Contains(outputKeys, name) {
		return "", p.errf(k.Line, k.Value, "", "not allowed in a grid: the sweep stores each point's result JSON itself (keys not allowed: %s)", strings.Join(outputKeys, ", "))
	}
	return name, nil
}

// check applies one value to a fresh scenario with the setting's own parser
// (the same check, and message, as blis run's) and returns its canonical
// text.
func (p *parser) check(key string, v *yaml.Node) (string, error) {
	return canonical(p.file, key, v)
}

// canonical checks v as the value of key and returns its canonical text:
// a scalar as the setting prints it once set (so 2 and 2.0 of a float, or
// INF and inf of a rate, are one value), anything else as YAML flow text.
func canonical(file, key string, v *yaml.Node) (string, error) {
	doc, err := encode([]Entry{{Key: key, Value: v}})
	if err != nil {
		return "", &scenario.InputError{File: file, Line: v.Line, Key: key, Msg: err.Error()}
	}
	s := scenario.Defaults()
	if err := s.ApplyYAML(file, doc, nil); err != nil {
		var ie *scenario.InputError
		if errors.As(err, &ie) {
			e := *ie
			e.File, e.Line, e.Key = file, v.Line, key
			return "", &e
		}
		return "", err
	}
	if v.Kind == yaml.ScalarNode {
		for _, st := range s.Settings() {
			if st.Name == key {
				return st.Value.String(), nil
			}
		}
	}
	return strings.TrimSpace(string(flow(v))), nil
}

// flow is v as one line of YAML flow text.
func flow(v *yaml.Node) []byte {
	c := cloneNode(v)
	setFlow(c)
	out, err := yaml.Marshal(c)
	if err != nil {
		return []byte(v.Value)
	}
	return out
}

func setFlow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	n.Line, n.Column = 0, 0
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		setFlow(c)
	}
}

func cloneNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = cloneNode(k)
	}
	return &c
}

// scenarioFile reads `scenario: FILE` (relative to the grid file) into the
// base; base's own keys override it.
func (p *parser) scenarioFile(v *yaml.Node) error {
	if v.Kind != yaml.ScalarNode || v.Value == "" {
		return p.errf(v.Line, "scenario", "", "must be the path of a scenario file")
	}
	path := v.Value
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(p.file), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		if u := errors.Unwrap(err); u != nil {
			msg = u.Error()
		}
		return p.errf(v.Line, "scenario", v.Value, "cannot read the scenario file: %s", msg)
	}
	p.g.ScenarioFile, p.g.ScenarioText = v.Value, data
	// Checked as blis run checks it, with its own file and lines.
	s := scenario.Defaults()
	if err := s.ApplyYAML(path, data, nil); err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // an empty scenario: all defaults
	}
	m := doc.Content[0]
	sub := parser{file: path, g: p.g, names: p.names, known: p.known, axisLine: p.axisLine}
	for i := 0; i+1 < len(m.Content); i += 2 {
		name, err := sub.key(m.Content[i])
		if err != nil {
			return err
		}
		p.g.Base = append(p.g.Base, Entry{Key: name, Value: m.Content[i+1]})
	}
	return nil
}

func (p *parser) base(v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return p.errf(v.Line, "base", "", "must be a mapping of scenario keys to values")
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		name, err := p.key(v.Content[i])
		if err != nil {
			return err
		}
		if prev, dup := seen[name]; dup {
			return p.errf(v.Content[i].Line, name, "", "given twice in base (first on line %d)", prev)
		}
		seen[name] = v.Content[i].Line
		if _, err := p.check(name, v.Content[i+1]); err != nil {
			return err
		}
		// base overrides the scenario file's key of the same name.
		p.g.Base = slices.DeleteFunc(p.g.Base, func(e Entry) bool { return e.Key == name })
		p.g.Base = append(p.g.Base, Entry{Key: name, Value: v.Content[i+1]})
	}
	return nil
}

// values reads one axis key's list of values.
func (p *parser) values(k, v *yaml.Node) (string, []*yaml.Node, []string, error) {
	name, err := p.key(k)
	if err != nil {
		return "", nil, nil, err
	}
	if prev, dup := p.axisLine[name]; dup {
		return "", nil, nil, p.errf(k.Line, name, "", "on two axes (also on line %d); a key may vary on one axis only", prev)
	}
	p.axisLine[name] = k.Line
	if v.Kind != yaml.SequenceNode {
		return "", nil, nil, p.errf(v.Line, name, "", "an axis is a list of values, e.g. %s: [1, 2, 4]", name)
	}
	if len(v.Content) == 0 {
		return "", nil, nil, p.errf(v.Line, name, "", "empty axis: give at least one value")
	}
	canon := make([]string, len(v.Content))
	seen := map[string]int{}
	for i, c := range v.Content {
		if canon[i], err = p.check(name, c); err != nil {
			return "", nil, nil, err
		}
		if prev, dup := seen[canon[i]]; dup {
			return "", nil, nil, p.errf(c.Line, name, canon[i], "value given twice on the axis (first on line %d)", prev)
		}
		seen[canon[i]] = c.Line
	}
	return name, v.Content, canon, nil
}

func (p *parser) axes(v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return p.errf(v.Line, "axes", "", "must be a mapping of scenario keys to lists of values")
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if err := p.axis(v.Content[i], v.Content[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// axis reads one key's list of values as an axis of its own.
func (p *parser) axis(k, v *yaml.Node) error {
	name, vals, canon, err := p.values(k, v)
	if err != nil {
		return err
	}
	a := Axis{Keys: []string{name}}
	for j := range vals {
		a.Values = append(a.Values, []*yaml.Node{vals[j]})
		a.canon = append(a.canon, []string{canon[j]})
	}
	p.g.Axes = append(p.g.Axes, a)
	return nil
}

func (p *parser) zip(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return p.errf(v.Line, "zip", "", "must be a list of groups, each a mapping of keys to equally long lists")
	}
	for _, grp := range v.Content {
		if grp.Kind != yaml.MappingNode || len(grp.Content) == 0 {
			return p.errf(grp.Line, "zip", "", "each group is a mapping of keys to equally long lists")
		}
		var a Axis
		firstKey, firstLine := "", 0
		for i := 0; i+1 < len(grp.Content); i += 2 {
			name, vals, canon, err := p.values(grp.Content[i], grp.Content[i+1])
			if err != nil {
				return err
			}
			if i == 0 {
				firstKey, firstLine = name, grp.Content[i].Line
				a.Values = make([][]*yaml.Node, len(vals))
				a.canon = make([][]string, len(vals))
			} else if len(vals) != len(a.Values) {
				return p.errf(grp.Content[i].Line, name, "", "zipped with %s (line %d) but has %d values to its %d; zipped axes must be equally long", firstKey, firstLine, len(vals), len(a.Values))
			}
			a.Keys = append(a.Keys, name)
			for j := range vals {
				a.Values[j] = append(a.Values[j], vals[j])
				a.canon[j] = append(a.canon[j], canon[j])
			}
		}
		p.g.Axes = append(p.g.Axes, a)
	}
	return nil
}

// load reads the load axis: exactly one of a max-concurrency list, a
// request-rate list, or a request-rate ramp.
func (p *parser) load(v *yaml.Node) error {
	const allowed = "max-concurrency: [list], request-rate: [list] or ramp: {from, to, steps, scale: log|linear}"
	if v.Kind != yaml.MappingNode || len(v.Content) != 2 {
		return p.errf(v.Line, "load", "", "must hold exactly one of %s", allowed)
	}
	k, val := v.Content[0], v.Content[1]
	switch strings.ReplaceAll(k.Value, "_", "-") {
	case "max-concurrency", "request-rate":
		return p.axis(k, val)
	case "ramp":
		return p.ramp(k, val)
	}
	return p.errf(k.Line, k.Value, "", "not a load axis; allowed: %s", allowed)
}

// ramp expands an open-loop ramp into a request-rate axis: steps rates from
// from to to, evenly spaced (linear) or geometrically (log).
func (p *parser) ramp(k, v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return p.errf(v.Line, "ramp", "", "must be a mapping {from: REQ/S, to: REQ/S, steps: N, scale: log|linear}")
	}
	var from, to float64
	steps, scale := 0, "linear"
	got := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		kk, vv := v.Content[i], v.Content[i+1]
		if vv.Kind != yaml.ScalarNode {
			return p.errf(vv.Line, "ramp."+kk.Value, "", "must be a plain value")
		}
		if got[kk.Value] {
			return p.errf(kk.Line, "ramp."+kk.Value, "", "given twice in the ramp")
		}
		got[kk.Value] = true
		switch kk.Value {
		case "from", "to":
			f, err := strconv.ParseFloat(vv.Value, 64)
			if err != nil || !(f > 0) || math.IsInf(f, 0) {
				return p.errf(vv.Line, "ramp."+kk.Value, vv.Value, "must be a finite rate > 0 requests/s")
			}
			if kk.Value == "from" {
				from = f
			} else {
				to = f
			}
		case "steps":
			n, err := strconv.Atoi(vv.Value)
			if err != nil || n < 2 || n > 10_000 {
				return p.errf(vv.Line, "ramp.steps", vv.Value, "must be an integer from 2 to 10000")
			}
			steps = n
		case "scale":
			if vv.Value != "log" && vv.Value != "linear" {
				return p.errf(vv.Line, "ramp.scale", vv.Value, "allowed: log, linear")
			}
			scale = vv.Value
		default:
			return p.errf(kk.Line, "ramp."+kk.Value, "", "unknown ramp key; allowed: from, to, steps, scale")
		}
	}
	for _, need := range []string{"from", "to", "steps"} {
		if !got[need] {
			return p.errf(v.Line, "ramp", "", "needs %s (from, to and steps; scale defaults to linear)", need)
		}
	}
	if to <= from {
		return p.errf(v.Line, "ramp", "", "to (%g) must be above from (%g)", to, from)
	}
	if prev, dup := p.axisLine["request-rate"]; dup {
		return p.errf(k.Line, "ramp", "", "varies request-rate, already on an axis (line %d)", prev)
	}
	p.axisLine["request-rate"] = k.Line
	a := Axis{Keys: []string{"request-rate"}}
	seen := map[string]bool{}
	for i := range steps {
		t := float64(i) / float64(steps-1)
		r := from + t*(to-from)
		if scale == "log" {
			r = from * math.Pow(to/from, t)
		}
		if i == steps-1 {
			r = to
		}
		text := strconv.FormatFloat(r, 'g', 6, 64)
		node := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: text, Line: v.Line}
		canon, err := p.check("request-rate", node)
		if err != nil {
			return err
		}
		if seen[canon] {
			return p.errf(v.Line, "ramp", "", "steps %d is too fine for 6 significant digits between %g and %g (rate %s twice)", steps, from, to, canon)
		}
		seen[canon] = true
		a.Values = append(a.Values, []*yaml.Node{node})
		a.canon = append(a.canon, []string{canon})
	}
	p.g.Axes = append(p.g.Axes, a)
	return nil
}

func (p *parser) exclude(v *yaml.Node) error {
	if v.Kind != yaml.SequenceNode {
		return p.errf(v.Line, "exclude", "", "must be a list of rules, each a mapping of axis keys to values")
	}
	for _, r := range v.Content {
		if r.Kind != yaml.MappingNode || len(r.Content) == 0 {
			return p.errf(r.Line, "exclude", "", "each rule is a mapping of axis keys to values, e.g. {tensor-parallel-size: 2, max-num-seqs: 256}")
		}
		rule := Rule{}
		for i := 0; i+1 < len(r.Content); i += 2 {
			k, val := r.Content[i], r.Content[i+1]
			name, err := p.key(k)
			if err != nil {
				return err
			}
			ai, ki := p.g.axisOf(name)
			if ai < 0 {
				return p.errf(k.Line, k.Value, "", "not an axis of the grid; exclusion rules match axis values (axes: %s)", strings.Join(p.g.Keys(), ", "))
			}
			canon, err := p.check(name, val)
			if err != nil {
				return err
			}
			found := false
			for _, c := range p.g.Axes[ai].canon {
				if c[ki] == canon {
					found = true
				}
			}
			if !found {
				return p.errf(val.Line, name, canon, "not a value of the axis, so the rule drops nothing")
			}
			if _, dup := rule[name]; dup {
				return p.errf(k.Line, name, "", "given twice in one rule")
			}
			rule[name] = canon
		}
		p.g.Exclude = append(p.g.Exclude, rule)
	}
	return nil
}

// axisOf finds the axis and the place in it of a key; -1 if none.
func (g *Grid) axisOf(key string) (int, int) {
	for i, a := range g.Axes {
		if k := slices.Index(a.Keys, key); k >= 0 {
			return i, k
		}
	}
	return -1, -1
}

// Size is the number of combinations before exclusions, or math.MaxInt
// when it overflows.
func (g *Grid) Size() int {
	n := 1
	for _, a := range g.Axes {
		if a.Len() > 0 && n > math.MaxInt/a.Len() {
			return math.MaxInt
		}
		n *= a.Len()
	}
	return n
}

// ReadPoints reads and checks a grid file, refuses it over maxPoints
// combinations unless force, and expands it: what every command that runs
// a grid does before any work.
func ReadPoints(path string, maxPoints int, force bool) (*Grid, []Point, error) {
	g, err := ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if err := g.CheckSize(maxPoints, force); err != nil {
		return nil, nil, err
	}
	points, err := g.Expand()
	if err != nil {
		return nil, nil, err
	}
	return g, points, nil
}

// CheckSize refuses a grid over maxPoints combinations unless force: an
// error before any work, naming the axes' lengths.
func (g *Grid) CheckSize(maxPoints int, force bool) error {
	n := g.Size()
	if n <= maxPoints || force {
		return nil
	}
	var parts []string
	for _, a := range g.Axes {
		parts = append(parts, fmt.Sprintf("%s %d", strings.Join(a.Keys, "+"), a.Len()))
	}
	size := strconv.Itoa(n)
	if n == math.MaxInt {
		size = "more than " + strconv.Itoa(math.MaxInt)
	}
	return &scenario.InputError{File: g.File, Key: "--max-points", Value: strconv.Itoa(maxPoints),
		Msg: fmt.Sprintf("the grid has %s points before exclusions (%s); narrow it, or pass --force (or a larger --max-points) to run them all", size, strings.Join(parts, " × "))}
}

// Expand lists the grid's points in their stable order: the cartesian
// product with the first axis slowest and the load axis fastest, excluded
// points dropped, then numbered. Call CheckSize first. It caches each
// value's canonical text in g, so one Grid expands on one goroutine at a time.
func (g *Grid) Expand() ([]Point, error) {
	var out []Point
	idx := make([]int, len(g.Axes))
	total := g.Size()
	// The axis values were made canonical when the grid was parsed: only
	// the base's and the defaults' are left for point to compute.
	if g.canon == nil {
		g.canon = map[*yaml.Node]string{}
	}
	for _, a := range g.Axes {
		for i, vals := range a.Values {
			for k, v := range vals {
				g.canon[v] = a.canon[i][k]
			}
		}
	}
	for n := 0; n < total; n++ {
		var vals []KV
		var entries []Entry
		for ai, a := range g.Axes {
			for ki, k := range a.Keys {
				vals = append(vals, KV{k, a.canon[idx[ai]][ki]})
				entries = append(entries, Entry{k, a.Values[idx[ai]][ki]})
			}
		}
		if !g.excluded(vals) {
			p, err := g.point(len(out), vals, entries)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
		// Odometer: the last axis turns fastest.
		for ai := len(idx) - 1; ai >= 0; ai-- {
			idx[ai]++
			if idx[ai] < g.Axes[ai].Len() {
				break
			}
			idx[ai] = 0
		}
	}
	return out, nil
}

func (g *Grid) excluded(vals []KV) bool {
	for _, r := range g.Exclude {
		all := true
		for _, kv := range vals {
			if want, ok := r[kv.Key]; ok && want != kv.Value {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// point builds one point's scenario: the base, the axis values, the
// store's percentiles unless set, and the seed.
func (g *Grid) point(index int, vals []KV, axisEntries []Entry) (Point, error) {
	entries := make([]Entry, 0, len(g.Base)+len(axisEntries)+3)
	for _, e := range g.Base {
		if !slices.ContainsFunc(axisEntries, func(a Entry) bool { return a.Key == e.Key }) {
			entries = append(entries, e)
		}
	}
	entries = append(entries, axisEntries...)
	has := func(k string) bool { return slices.ContainsFunc(entries, func(e Entry) bool { return e.Key == k }) }
	if !has("metric-percentiles") {
		entries = append(entries, Entry{"metric-percentiles", defaultPercentiles})
	}
	if !has("percentile-metrics") {
		entries = append(entries, Entry{"percentile-metrics", defaultPercentileMetrics})
	}
	// The ID hashes the settings sorted by key, values canonical, so it
	// does not depend on the grid's layout.
	canon := make([]KV, 0, len(entries))
	for _, e := range entries {
		c, ok := g.canon[e.Value]
		if !ok {
			var err error
			if c, err = canonical(g.File, e.Key, e.Value); err != nil {
				return Point{}, err
			}
			g.canon[e.Value] = c
		}
		canon = append(canon, KV{e.Key, c})
	}
	slices.SortFunc(canon, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	h := sha256.New()
	for _, kv := range canon {
		fmt.Fprintf(h, "%s=%s\n", kv.Key, kv.Value)
	}
	sum := h.Sum(nil)
	p := Point{Index: index, ID: hex.EncodeToString(sum[:6]), Values: vals}
	if !g.SetsSeed {
		// A positive 31-bit seed (vLLM's --seed is an int) from the hash.
		p.Seed = int64(binary.BigEndian.Uint32(sum[8:12]) & 0x7fffffff)
		entries = append(entries, Entry{"seed", scalar(strconv.FormatInt(p.Seed, 10))})
	} else {
		for _, kv := range canon {
			if kv.Key == "seed" {
				p.Seed, _ = strconv.ParseInt(kv.Value, 10, 64)
			}
		}
	}
	doc, err := encode(entries)
	if err != nil {
		return Point{}, err
	}
	p.Scenario = doc
	return p, nil
}

// The defaults' nodes are shared so that canonical caches them once.
var (
	defaultPercentiles       = scalar(DefaultPercentiles)
	defaultPercentileMetrics = scalar(DefaultPercentileMetrics)
)

func scalar(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v}
}

// encode writes entries as a scenario file (block YAML, keys in order).
func encode(entries []Entry) ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for _, e := range entries {
		v := cloneNode(e.Value)
		clearPos(v)
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.Key}, v)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func clearPos(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		clearPos(c)
	}
}
