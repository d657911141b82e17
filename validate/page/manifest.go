package page

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"blis/metrics/format"
	"blis/scenario"
	"blis/validate/inferencex"
	"blis/validate/score"
)

// A validation manifest says what was measured and how BLIS replays it:
// per arm (one measured deployment) the deployment as the run states it,
// every field with its source or explicitly unstated; the client settings
// BLIS replays; the load levels, each with its measured result files; or,
// for InferenceX sweeps, the rows selected from a calibration CSV.
// docs/validation/README.md documents the format; the reader is strict:
// unknown or repeated keys, missing required keys and bad values are
// errors naming the file, the line, the key and what is allowed. Every
// missing key is reported at once (with the first other problem), so a
// half-written manifest is completed in one pass.

// Manifest is a parsed validation manifest.
type Manifest struct {
	File string // as given
	Dir  string // paths inside are relative to it
	Data []byte // the file's bytes (the page cites their digest)

	Name        string // validation: the page's file stem
	Title       string
	Description string
	// TolerancePP is the regression gate's tolerance: how many percentage
	// points a headline MAPE may grow before --check fails.
	TolerancePP float64
	Unscored    *IXSelect // inferencex-unscored: rows to list as not scorable
	// Probes are the gap re-checks of every arm without its own probes:
	// (nil: off; probes.go).
	Probes *ProbeSpec
	Arms   []Arm
}

// Stated is one deployment field as the measured run states it.
type Stated struct {
	Name     string // the setting (a vllm serve flag name, or model/chip/...)
	Value    string
	Source   string
	Unstated bool
	Line     int

	incomplete bool // a required key is missing (reported): do not check the value
}

// Arm is one measured deployment.
type Arm struct {
	Name, Label string
	Line        int

	// Deployment as measured (nil for InferenceX arms).
	Deployment *Deployment
	// Workload are the client settings BLIS replays (scenario keys).
	Workload []Stated
	// BLIS are settings BLIS assumes (scenario keys): what an unstated
	// field is simulated as, or a deliberate override.
	BLIS     []Stated
	LevelKey string
	Levels   []Level
	PairBy   string
	// ServerLog is a vLLM server log of the deployment ("" when none).
	ServerLog     string
	ServerLogLine int

	InferenceX *IXSelect

	// Probes overrides the manifest's probes: for this arm; Sensitivity
	// are its sensitivity runs (sensitivity.go).
	Probes      *ProbeSpec
	Sensitivity []SensitivityRun
}

// Deployment is an arm's deployment as measured.
type Deployment struct {
	Model, Chip, TP, EngineVersion Stated
	ServeArgs                      []Stated
}

// Level is one load level of an arm.
type Level struct {
	Value  float64
	Text   string // as written
	Line   int
	Format string // measured file format (one of format.Names)
	Path   string // relative to the manifest
	BLIS   []Stated

	incomplete bool // level: is missing (reported)
}

// IXSelect selects rows of an InferenceX calibration CSV.
type IXSelect struct {
	CSV       string
	Model     string
	Hardware  string
	Precision string // "" any; "-" the empty precision cell
	Recipe    string // "" any
	Backend   string // default vllm
	Line      int
}

// SensitivityRun is one re-run an arm asks for.
type SensitivityRun struct {
	Label string
	// Settings are the blis run keys it changes, applied after the
	// level's own.
	Settings []Stated
	Line     int
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// measuredFormats are the result formats a level may name.
var measuredFormats = []string{format.AIPerf, format.VLLM, format.GuideLLM, format.LLMD, format.InferencePerf, format.LMBench}

// ParseManifest reads a manifest's bytes. file names it in errors and
// anchors its relative paths.
func ParseManifest(file string, data []byte) (*Manifest, error) {
	p := &mparser{file: file}
	m := &Manifest{File: file, Dir: filepath.Dir(file), Data: data, TolerancePP: 1}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return nil, p.errf(0, "", "", "empty manifest: expected validation:, title: and arms:")
		}
		return nil, p.errf(yamlErrLine(err), "", "", "not valid YAML: "+strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, p.errf(extra.Line, "", "", "one document per manifest: found a second after ---")
	}
	if len(doc.Content) == 0 {
		return nil, p.errf(0, "", "", "empty manifest: expected validation:, title: and arms:")
	}
	root := doc.Content[0]
	p.fields(root, "", []string{"validation", "title", "description", "tolerance-pp", "probes", "inferencex-unscored", "arms"},
		[]string{"validation", "title", "arms"}, func(k string, v *yaml.Node) {
			switch k {
			case "validation":
				m.Name = p.name(v, k)
			case "title":
				m.Title = p.text(v, k)
			case "description":
				m.Description = p.text(v, k)
			case "tolerance-pp":
				m.TolerancePP = p.float(v, k, 0, 100)
			case "inferencex-unscored":
				m.Unscored = p.ixSelect(v, k)
			case "probes":
				m.Probes = p.probes(v, k)
			case "arms":
				items := p.seq(v, k)
				if len(items) == 0 && p.err == nil {
					p.fail(v, k, "", "needs at least one arm")
				}
				seen := map[string]int{}
				for i, it := range items {
					a := p.arm(it, fmt.Sprintf("arms[%d]", i))
					if prev, dup := seen[a.Name]; dup && a.Name != "" && p.err == nil {
						p.fail(it, fmt.Sprintf("arms[%d].name", i), a.Name, fmt.Sprintf("arm name repeats (first on line %d)", prev))
					}
					seen[a.Name] = it.Line
					m.Arms = append(m.Arms, a)
				}
			}
		})
	if err := p.result(); err != nil {
		return nil, err
	}
	return m, nil
}

// Path resolves a manifest-relative path.
func (m *Manifest) Path(rel string) string {
	if filepath.IsAbs(rel) {
		return rel
	}
	return filepath.Join(m.Dir, rel)
}

// mparser walks the YAML tree, keeping the first error and every missing
// key (a missing key does not stop the walk: the rest is still checked).
type mparser struct {
	file    string
	err     error
	missing []*scenario.InputError
	// clearable: the settings being read are blis: overrides, where an
	// empty value clears a setting the deployment states (BLIS without
	// a stated connector, to show what it changes).
	clearable bool
}

// ManifestErrors are the problems of one manifest found in one reading:
// every missing required key, and the first other problem (nil when
// none).
type ManifestErrors struct {
	Missing []*scenario.InputError
	Other   *scenario.InputError
}

// all lists the problems in line order.
func (e *ManifestErrors) all() []*scenario.InputError {
	all := append([]*scenario.InputError(nil), e.Missing...)
	if e.Other != nil {
		all = append(all, e.Other)
	}
	slices.SortStableFunc(all, func(a, b *scenario.InputError) int { return a.Line - b.Line })
	return all
}

// Error names the file and the count, then each problem on its own line.
func (e *ManifestErrors) Error() string {
	all := e.all()
	var b strings.Builder
	keys := "keys"
	if len(e.Missing) == 1 {
		keys = "key"
	}
	fmt.Fprintf(&b, "%s: %d required %s missing", all[0].File, len(e.Missing), keys)
	if e.Other != nil {
		b.WriteString(", and another problem")
	}
	b.WriteString(":")
	for _, x := range all {
		b.WriteString("\n  " + x.Error())
	}
	return b.String()
}

// Unwrap gives each problem, so that errors.As finds an InputError.
func (e *ManifestErrors) Unwrap() []error {
	var out []error
	for _, x := range e.all() {
		out = append(out, x)
	}
	return out
}

// result is the walk's error: nil, the one problem, or *ManifestErrors.
func (p *mparser) result() error {
	if len(p.missing) == 0 {
		return p.err
	}
	other, ok := p.err.(*scenario.InputError)
	switch {
	case p.err != nil && !ok:
		return p.err
	case p.err == nil && len(p.missing) == 1:
		return p.missing[0]
	}
	return &ManifestErrors{Missing: p.missing, Other: other}
}

// missingKey records a required key that is absent.
func (p *mparser) missingKey(n *yaml.Node, key, msg string) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.missing = append(p.missing, &scenario.InputError{File: p.file, Line: line, Key: key, Msg: msg})
}

func (p *mparser) errf(line int, key, value, msg string) error {
	return &scenario.InputError{File: p.file, Line: line, Key: key, Value: value, Msg: msg}
}

func (p *mparser) fail(n *yaml.Node, key, value, msg string) {
	if p.err == nil {
		line := 0
		if n != nil {
			line = n.Line
		}
		p.err = p.errf(line, key, value, msg)
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// fields checks a mapping's keys against allowed (and required) and calls
// f for each in file order; complete is false when a required key is
// missing (recorded, and the keys present are still read).
func (p *mparser) fields(n *yaml.Node, path string, allowed, required []string, f func(k string, v *yaml.Node)) (complete bool) {
	if p.err != nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		what := path
		if what == "" {
			what = "the manifest"
		}
		p.fail(n, path, "", fmt.Sprintf("%s must be a mapping (key: value lines) with keys: %s", what, strings.Join(allowed, ", ")))
		return false
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			p.fail(k, path, "", "keys must be plain names")
			return false
		}
		if !slices.Contains(allowed, k.Value) {
			p.fail(k, join(path, k.Value), "", "unknown key; allowed: "+strings.Join(allowed, ", "))
			return false
		}
		if prev, dup := seen[k.Value]; dup {
			p.fail(k, join(path, k.Value), "", fmt.Sprintf("given twice (first on line %d)", prev))
			return false
		}
		seen[k.Value] = k.Line
	}
	complete = true
	for _, r := range required {
		if _, ok := seen[r]; !ok {
			p.missingKey(n, join(path, r), requiredMsg)
			complete = false
		}
	}
	for i := 0; i+1 < len(n.Content) && p.err == nil; i += 2 {
		f(n.Content[i].Value, n.Content[i+1])
	}
	return complete
}

// requiredMsg is the message of a missing required key.
const requiredMsg = "required key missing"

func (p *mparser) scalar(v *yaml.Node, key string) string {
	if p.err != nil {
		return ""
	}
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		p.fail(v, key, "", "must be a plain value")
		return ""
	}
	return v.Value
}

func (p *mparser) text(v *yaml.Node, key string) string {
	s := strings.TrimSpace(p.scalar(v, key))
	if p.err == nil && s == "" {
		p.fail(v, key, "", "must not be empty")
	}
	if p.err == nil && strings.ContainsAny(s, "\x00") {
		p.fail(v, key, "", "must not hold NUL bytes")
	}
	return s
}

func (p *mparser) name(v *yaml.Node, key string) string {
	s := p.scalar(v, key)
	if p.err == nil && !nameRE.MatchString(s) {
		p.fail(v, key, s, "expected a name of lower-case letters, digits, '.', '_' and '-' (at most 64), starting with a letter or digit")
	}
	return s
}

func (p *mparser) float(v *yaml.Node, key string, lo, hi float64) float64 {
	s := p.scalar(v, key)
	if p.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < lo || f > hi {
		p.fail(v, key, s, fmt.Sprintf("expected a number in [%g, %g]", lo, hi))
	}
	return f
}

func (p *mparser) seq(v *yaml.Node, key string) []*yaml.Node {
	if p.err != nil {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.fail(v, key, "", "must be a list (lines starting with '- ')")
		return nil
	}
	return v.Content
}

// stated reads `unstated`, `{value: X, source: S}`, or (when bare is
// allowed) a plain value whose source is the manifest itself.
func (p *mparser) stated(v *yaml.Node, key, name string, bare bool) Stated {
	st := Stated{Name: name, Line: v.Line}
	if p.err != nil {
		return st
	}
	if v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
		if v.Value == "unstated" {
			st.Unstated = true
			return st
		}
		if bare {
			st.Value, st.Source = strings.TrimSpace(v.Value), "the manifest"
			if st.Value == "" {
				p.fail(v, key, "", "must not be empty")
			}
			return st
		}
		p.fail(v, key, v.Value, "expected unstated, or {value: X, source: where the run states it}")
		return st
	}
	st.incomplete = !p.fields(v, key, []string{"value", "source"}, []string{"value", "source"}, func(k string, x *yaml.Node) {
		switch k {
		case "value":
			st.Value = strings.TrimSpace(p.scalar(x, join(key, k)))
			if p.err == nil && st.Value == "" && !p.clearable {
				p.fail(x, join(key, k), "", "must not be empty (write unstated instead)")
			}
		case "source":
			st.Source = p.text(x, join(key, k))
		}
	})
	return st
}

// settings reads a mapping of scenario keys (workload:, blis:). Each
// value must be one the key accepts.
func (p *mparser) settings(v *yaml.Node, path string, bare bool) []Stated {
	if p.err != nil {
		return nil
	}
	known := settingNames()
	var out []Stated
	if v.Kind != yaml.MappingNode {
		p.fail(v, path, "", "must be a mapping of scenario keys (the flags of blis run) to values")
		return nil
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(v.Content) && p.err == nil; i += 2 {
		k, x := v.Content[i], v.Content[i+1]
		name := strings.ReplaceAll(k.Value, "_", "-")
		key := join(path, k.Value)
		if !slices.Contains(known, name) {
			p.fail(k, key, "", "unknown scenario key; allowed: the flags of blis run ("+strings.Join(known, ", ")+")")
			return nil
		}
		if isOutputSetting(name) {
			p.fail(k, key, "", "output settings are chosen by blis validate, not the manifest")
			return nil
		}
		if prev, dup := seen[name]; dup {
			p.fail(k, key, "", fmt.Sprintf("given twice (first on line %d)", prev))
			return nil
		}
		seen[name] = k.Line
		var st Stated
		if x.Kind == yaml.SequenceNode {
			parts := make([]string, 0, len(x.Content))
			for _, c := range x.Content {
				parts = append(parts, p.scalar(c, key))
			}
			st = Stated{Name: name, Value: strings.Join(parts, ","), Source: "the manifest", Line: x.Line}
		} else {
			st = p.stated(x, key, name, bare)
		}
		if p.err == nil && !st.Unstated && !st.incomplete {
			if err := trySet(name, st.Value); err != nil {
				p.fail(x, key, st.Value, err.Error())
			}
		}
		out = append(out, st)
	}
	return out
}

func (p *mparser) arm(n *yaml.Node, path string) Arm {
	a := Arm{Line: n.Line, LevelKey: "max-concurrency", PairBy: score.PairByOrder}
	var hasLevels, hasDeployment bool
	var other []string
	p.fields(n, path, []string{"name", "label", "deployment", "workload", "blis", "level-key", "levels", "pair-by", "server-log", "inferencex", "probes", "sensitivity"},
		[]string{"name", "label"}, func(k string, v *yaml.Node) {
			key := join(path, k)
			if k != "name" && k != "label" && k != "inferencex" && k != "probes" {
				other = append(other, k)
			}
			switch k {
			case "name":
				a.Name = p.name(v, key)
			case "label":
				a.Label = p.text(v, key)
			case "deployment":
				hasDeployment = true
				a.Deployment = p.deployment(v, key)
			case "workload":
				a.Workload = p.settings(v, key, true)
			case "blis":
				p.clearable = true
				a.BLIS = p.settings(v, key, true)
				p.clearable = false
			case "level-key":
				a.LevelKey = strings.ReplaceAll(p.scalar(v, key), "_", "-")
				if p.err == nil && !slices.Contains(settingNames(), a.LevelKey) {
					p.fail(v, key, a.LevelKey, "expected a scenario key such as max-concurrency or request-rate")
				}
			case "levels":
				hasLevels = true
				for i, it := range p.seq(v, key) {
					a.Levels = append(a.Levels, p.level(it, fmt.Sprintf("%s[%d]", key, i)))
				}
			case "pair-by":
				a.PairBy = p.scalar(v, key)
				if p.err == nil && !slices.Contains([]string{score.PairBySession, score.PairByID, score.PairByOrder}, a.PairBy) {
					p.fail(v, key, a.PairBy, "allowed: session, id, order")
				}
			case "server-log":
				a.ServerLog, a.ServerLogLine = p.text(v, key), v.Line
			case "inferencex":
				a.InferenceX = p.ixSelect(v, key)
			case "probes":
				a.Probes = p.probes(v, key)
			case "sensitivity":
				a.Sensitivity = p.sensitivity(v, key)
			}
		})
	if p.err != nil {
		return a
	}
	if a.InferenceX != nil {
		if len(other) > 0 {
			p.fail(n, join(path, other[0]), "", "an inferencex arm takes its deployment, levels and client from the CSV rows: only name, label, probes and inferencex are allowed")
		}
		return a
	}
	if !hasDeployment {
		p.missingKey(n, join(path, "deployment"), requiredMsg+" (or give inferencex: to select InferenceX rows)")
	}
	switch {
	case !hasLevels:
		p.missingKey(n, join(path, "levels"), requiredMsg+": needs at least one level")
	case len(a.Levels) == 0:
		p.fail(n, join(path, "levels"), "", "needs at least one level")
	}
	if p.err != nil || !hasDeployment || slices.ContainsFunc(a.Levels, func(l Level) bool { return l.incomplete }) {
		return a
	}
	// Every level value must suit the level key, and appear once.
	slices.SortStableFunc(a.Levels, func(x, y Level) int { return cmp.Compare(x.Value, y.Value) })
	for i, l := range a.Levels {
		if err := trySet(a.LevelKey, l.Text); err != nil {
			p.err = p.errf(l.Line, join(path, "levels"), l.Text, fmt.Sprintf("not a value of %s: %v", a.LevelKey, err))
			return a
		}
		if i > 0 && l.Value == a.Levels[i-1].Value {
			p.err = p.errf(l.Line, join(path, "levels"), l.Text, fmt.Sprintf("level repeats (also on line %d)", a.Levels[i-1].Line))
			return a
		}
	}
	// BLIS must know what to simulate for an unstated model or chip.
	d := a.Deployment
	for _, f := range []struct {
		st  Stated
		key string
	}{{d.Model, "model"}, {d.Chip, "hardware"}} {
		if f.st.Unstated && !hasSetting(a.BLIS, f.key) {
			p.err = p.errf(f.st.Line, join(path, "deployment."+f.st.Name), "",
				fmt.Sprintf("unstated: give blis: {%s: ...} so BLIS knows what to simulate", f.key))
			return a
		}
	}
	return a
}

func hasSetting(list []Stated, name string) bool {
	for _, s := range list {
		if s.Name == name && !s.Unstated {
			return true
		}
	}
	return false
}

func (p *mparser) deployment(n *yaml.Node, path string) *Deployment {
	d := &Deployment{}
	p.fields(n, path, []string{"model", "chip", "tensor-parallel-size", "engine-version", "serve-args"},
		[]string{"model", "chip", "tensor-parallel-size", "engine-version"}, func(k string, v *yaml.Node) {
			key := join(path, k)
			switch k {
			case "model":
				d.Model = p.stated(v, key, k, false)
			case "chip":
				d.Chip = p.stated(v, key, k, false)
			case "tensor-parallel-size":
				d.TP = p.stated(v, key, k, false)
				if p.err == nil && !d.TP.Unstated && !d.TP.incomplete {
					if n, err := strconv.Atoi(d.TP.Value); err != nil || n < 1 || n > 1024 {
						p.fail(v, key, d.TP.Value, "expected an integer in [1, 1024]")
					}
				}
			case "engine-version":
				d.EngineVersion = p.stated(v, key, k, false)
				if p.err == nil && !d.EngineVersion.Unstated && !d.EngineVersion.incomplete && !score.ValidVersion(strings.TrimPrefix(d.EngineVersion.Value, "v")) {
					p.fail(v, key, d.EngineVersion.Value, "expected a vLLM version such as 0.10.2 or v0.11.0")
				}
			case "serve-args":
				if v.Kind != yaml.MappingNode {
					p.fail(v, key, "", "must be a mapping of vllm serve flag names to {value, source} or unstated")
					return
				}
				seen := map[string]int{}
				for i := 0; i+1 < len(v.Content) && p.err == nil; i += 2 {
					kk, vv := v.Content[i], v.Content[i+1]
					name := strings.TrimPrefix(strings.ReplaceAll(kk.Value, "_", "-"), "--")
					ak := join(key, kk.Value)
					if !flagRE.MatchString(name) {
						p.fail(kk, ak, "", "expected a vllm serve flag name such as max-num-seqs")
						return
					}
					switch name {
					case "model", "hardware", "tensor-parallel-size":
						p.fail(kk, ak, "", "stated by deployment."+map[string]string{"model": "model", "hardware": "chip", "tensor-parallel-size": "tensor-parallel-size"}[name]+", not serve-args")
						return
					}
					if prev, dup := seen[name]; dup {
						p.fail(kk, ak, "", fmt.Sprintf("given twice (first on line %d)", prev))
						return
					}
					seen[name] = kk.Line
					d.ServeArgs = append(d.ServeArgs, p.stated(vv, ak, name, false))
				}
			}
		})
	return d
}

var flagRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)

func (p *mparser) level(n *yaml.Node, path string) Level {
	l := Level{Line: n.Line}
	l.incomplete = !p.fields(n, path, []string{"level", "measured", "blis"}, []string{"level", "measured"}, func(k string, v *yaml.Node) {
		key := join(path, k)
		switch k {
		case "level":
			l.Text = strings.TrimSpace(p.scalar(v, key))
			f, err := strconv.ParseFloat(l.Text, 64)
			if p.err == nil && (err != nil || !(f > 0)) {
				p.fail(v, key, l.Text, "expected a number > 0 (a concurrency or a request rate), or inf")
			}
			l.Value, l.Line = f, v.Line
		case "measured":
			p.fields(v, key, []string{"format", "path"}, []string{"format", "path"}, func(k2 string, x *yaml.Node) {
				switch k2 {
				case "format":
					l.Format = p.scalar(x, join(key, k2))
					if p.err == nil && !slices.Contains(measuredFormats, l.Format) {
						p.fail(x, join(key, k2), l.Format, "allowed: "+strings.Join(measuredFormats, ", "))
					}
				case "path":
					l.Path = p.text(x, join(key, k2))
				}
			})
		case "blis":
			p.clearable = true
			l.BLIS = p.settings(v, key, true)
			p.clearable = false
		}
	})
	return l
}

func (p *mparser) ixSelect(n *yaml.Node, path string) *IXSelect {
	s := &IXSelect{Line: n.Line, Backend: inferencex.BackendVLLM}
	p.fields(n, path, []string{"csv", "model", "hardware", "precision", "recipe", "backend"}, []string{"csv", "hardware"}, func(k string, v *yaml.Node) {
		key := join(path, k)
		switch k {
		case "csv":
			s.CSV = p.text(v, key)
		case "model":
			s.Model = p.text(v, key)
		case "hardware":
			s.Hardware = p.text(v, key)
		case "precision":
			s.Precision = p.text(v, key)
		case "recipe":
			s.Recipe = p.text(v, key)
			if p.err == nil && inferencex.RecipeByKey(s.Recipe) == nil {
				p.fail(v, key, s.Recipe, "unknown recipe; allowed: "+strings.Join(inferencex.RecipeKeys(), ", "))
			}
		case "backend":
			s.Backend = p.scalar(v, key)
			if p.err == nil && !slices.Contains([]string{"vllm", "sglang", "trtllm", inferencex.BackendAll}, s.Backend) {
				p.fail(v, key, s.Backend, "allowed: vllm, sglang, trtllm, all")
			}
		}
	})
	if p.err == nil && path != "inferencex-unscored" && s.Model == "" {
		p.missingKey(n, join(path, "model"), requiredMsg)
	}
	return s
}

// yamlErrLine digs the line out of a yaml.v3 error ("yaml: line 3: ...").
func yamlErrLine(err error) int {
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		j := i + 5
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if n, e := strconv.Atoi(s[i+5 : j]); e == nil {
			return n
		}
	}
	return 0
}

// sensitivity reads an arm's sensitivity: list. Each entry is
// {compress-gaps-over-s: N} (optionally with a label) or {label: L,
// blis: {key: value, ...}}.
func (p *mparser) sensitivity(v *yaml.Node, key string) []SensitivityRun {
	var out []SensitivityRun
	items := p.seq(v, key)
	if p.err == nil && len(items) == 0 {
		p.fail(v, key, "", "needs at least one run: {compress-gaps-over-s: N} or {label: ..., blis: {...}}")
	}
	seen := map[string]int{}
	for i, it := range items {
		path := fmt.Sprintf("%s[%d]", key, i)
		r := SensitivityRun{Line: it.Line}
		gap := 0.0
		var hasGap, hasBLIS bool
		p.fields(it, path, []string{"label", "compress-gaps-over-s", "blis"}, nil, func(k string, x *yaml.Node) {
			kk := join(path, k)
			switch k {
			case "label":
				r.Label = p.text(x, kk)
			case "compress-gaps-over-s":
				hasGap = true
				gap = p.float(x, kk, 0, 1e9)
				if p.err == nil && !(gap > 0) {
					p.fail(x, kk, x.Value, "expected a number of seconds > 0 (idle gaps longer than it are cut to it)")
				}
			case "blis":
				hasBLIS = true
				r.Settings = p.settings(x, kk, true)
				if p.err == nil && len(r.Settings) == 0 {
					p.fail(x, kk, "", "needs at least one blis run key")
				}
				for _, st := range r.Settings {
					if p.err == nil && st.Unstated {
						p.fail(x, join(kk, st.Name), "unstated", "a sensitivity run sets a value")
					}
				}
			}
		})
		if p.err != nil {
			return nil
		}
		switch {
		case hasGap == hasBLIS:
			p.fail(it, path, "", "give exactly one of compress-gaps-over-s: N or blis: {...}")
		case hasBLIS && r.Label == "":
			p.missingKey(it, join(path, "label"), "required with blis: (say what the run changes)")
		}
		if hasGap {
			n := strconv.FormatFloat(gap, 'f', -1, 64)
			// Session delays (think and tool time) over N s, and whole-system
			// idle over N s, both cut to N s.
			r.Settings = []Stated{{Name: "trace-idle-gap-cap-seconds", Value: n, Source: "the manifest", Line: it.Line},
				{Name: "system-idle-gap-cap-seconds", Value: n, Source: "the manifest", Line: it.Line}}
			if r.Label == "" {
				r.Label = "gaps over " + n + " s compressed"
			}
		}
		if prev, dup := seen[r.Label]; dup && r.Label != "" && p.err == nil {
			p.fail(it, path, r.Label, fmt.Sprintf("the same label as the run on line %d", prev))
		}
		seen[r.Label] = it.Line
		out = append(out, r)
	}
	return out
}

// probes reads a probes: value: off, auto, one setting, or a list of
// settings.
func (p *mparser) probes(v *yaml.Node, key string) *ProbeSpec {
	if p.err != nil {
		return nil
	}
	text := ""
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag != "!!null":
		text = v.Value
	case v.Kind == yaml.SequenceNode:
		for i, c := range v.Content {
			s := p.scalar(c, fmt.Sprintf("%s[%d]", key, i))
			if i > 0 {
				text += ","
			}
			text += s
		}
		if p.err == nil && len(v.Content) == 0 {
			p.fail(v, key, "", "an empty list: write off instead")
		}
	default:
		p.fail(v, key, "", "expected off, auto, or a list of settings")
	}
	if p.err != nil {
		return nil
	}
	spec, err := ParseProbes(text)
	if err != nil {
		p.fail(v, key, text, err.Error())
		return nil
	}
	spec.Line = v.Line
	return &spec
}
