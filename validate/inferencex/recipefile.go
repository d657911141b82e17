package inferencex

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"blis/scenario"
)

// The launch recipes are data: recipes.yaml, embedded, read strictly, and
// looked up here. Its header documents the format; parseRecipes holds
// every recipe to it, so a recipe cannot lose its source or a setting its
// provenance.

//go:embed recipes.yaml
var recipesYAML []byte

// recipesFile names the embedded file in errors.
const recipesFile = "validate/inferencex/recipes.yaml"

// recipeSet is the decoded file: the recipes in file order, and the
// generic recipe.
type recipeSet struct {
	list    []Recipe
	generic Recipe
}

// recipes is the embedded set, decoded once. The file ships with the
// binary and a test decodes it, so a decoding error is a build defect.
var recipes = sync.OnceValue(func() *recipeSet {
	set, err := parseRecipes(recipesFile, recipesYAML)
	if err != nil {
		panic(err)
	}
	return set
})

// The file's shape. Fields that must be present even when empty are
// pointers, so that a missing key is told from an empty value.
type (
	recipeFileDoc struct {
		Repository string            `yaml:"repository"`
		Shared     map[string]string `yaml:"shared"`
		Recipes    []recipeDoc       `yaml:"recipes"`
		Generic    *recipeDoc        `yaml:"generic"`
	}
	recipeDoc struct {
		Key           string    `yaml:"key"`
		Match         *matchDoc `yaml:"match"`
		Source        string    `yaml:"source"`
		Checkpoint    string    `yaml:"checkpoint"`
		Image         string    `yaml:"image"`
		Args          []argDoc  `yaml:"args"`
		NotModelled   []string  `yaml:"not_modelled"`
		Note          string    `yaml:"note"`
		NoAttentionDP string    `yaml:"no_attention_dp"`
		DPAttention   *dpDoc    `yaml:"dp_attention"`
	}
	matchDoc struct {
		Model          string  `yaml:"model"`
		System         string  `yaml:"system"`
		Precision      *string `yaml:"precision"`
		BackendVersion *string `yaml:"backend_version"`
		MeasuredFrom   string  `yaml:"measured_from"`
		MeasuredTo     string  `yaml:"measured_to"`
		GapAnalysis    bool    `yaml:"gap_analysis"`
	}
	argDoc struct {
		Flag       string  `yaml:"flag"`
		Value      *string `yaml:"value"`
		Provenance string  `yaml:"provenance"`
		Why        string  `yaml:"why"`
	}
	dpDoc struct {
		MeasuredFrom string `yaml:"measured_from"`
		Provenance   string `yaml:"provenance"`
		Why          string `yaml:"why"`
	}
)

// A setting's provenance.
const (
	provRead    = "read"
	provAssumed = "assumed"
)

var (
	recipeKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	// sourceRE is a script path @ a commit (more may follow: a second
	// script, a same-day change).
	sourceRE = regexp.MustCompile(`^\S+\.sh\b.* @ [0-9a-f]{7,40}\b`)
	yamlLine = regexp.MustCompile(`line (\d+)`)
)

// parseRecipes decodes a recipes file strictly: unknown keys, a missing
// match key, source or provenance, and values a setting does not accept
// are *scenario.InputError naming file, the line and the key.
func parseRecipes(file string, data []byte) (*recipeSet, error) {
	var doc recipeFileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &scenario.InputError{File: file, Msg: "empty file: expected repository:, recipes: and generic:"}
		}
		return nil, yamlError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &scenario.InputError{File: file, Line: extra.Line, Msg: "one YAML document per file: found a second after ---"}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(file, err)
	}
	v := &recipeChecker{file: file, root: &root}
	set := &recipeSet{}
	if strings.TrimSpace(doc.Repository) == "" {
		v.fail(v.at(), "repository", "", "required: the repository the launch scripts are published in")
	}
	seen := map[string]string{}
	for i := range doc.Recipes {
		path := fmt.Sprintf("recipes[%d]", i)
		r := v.recipe(&doc.Recipes[i], path, []any{"recipes", i}, true)
		if prev, dup := seen[r.Key]; dup && v.err == nil {
			v.fail(v.at("recipes", i, "key"), path+".key", r.Key, "repeats the key of "+prev)
		}
		seen[r.Key] = path
		set.list = append(set.list, r)
	}
	if len(doc.Recipes) == 0 {
		v.fail(v.at(), "recipes", "", "required: at least one recipe")
	}
	if doc.Generic == nil {
		v.fail(v.at(), "generic", "", "required: the recipe of rows no recipe matches")
	} else {
		set.generic = v.recipe(doc.Generic, "generic", []any{"generic"}, false)
		if v.err == nil && set.generic.Key != genericKey {
			v.fail(v.at("generic", "key"), "generic.key", set.generic.Key, "the generic recipe's key is "+genericKey)
		}
		if _, dup := seen[genericKey]; dup && v.err == nil {
			v.fail(v.at(), "recipes", genericKey, "the key "+genericKey+" is the generic recipe's")
		}
	}
	if v.err != nil {
		return nil, v.err
	}
	return set, nil
}

// genericKey is the generic recipe's key.
const genericKey = "generic"

// yamlError turns a yaml.v3 error into an InputError with its line.
func yamlError(file string, err error) error {
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	msg = strings.TrimPrefix(strings.TrimPrefix(msg, "yaml: "), fmt.Sprintf("line %d: ", line))
	return &scenario.InputError{File: file, Line: line, Msg: strings.ReplaceAll(msg, "inferencex.", "")}
}

// recipeChecker checks decoded recipes, keeping the first error; root is
// the same file as a node tree, for the lines of keys.
type recipeChecker struct {
	file string
	root *yaml.Node
	err  error
}

func (v *recipeChecker) fail(line int, key, value, msg string) {
	if v.err == nil {
		v.err = &scenario.InputError{File: v.file, Line: line, Key: key, Value: value, Msg: msg}
	}
}

// at is the line of the node at path (mapping keys and sequence indices),
// or of the deepest node on it that exists.
func (v *recipeChecker) at(path ...any) int {
	n := v.root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		var next *yaml.Node
		switch p := p.(type) {
		case string:
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == p {
						line, next = n.Content[i].Line, n.Content[i+1]
						break
					}
				}
			}
		case int:
			if n.Kind == yaml.SequenceNode && p < len(n.Content) {
				next = n.Content[p]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// recipe checks one recipe and converts it; matched says it must have
// match keys (every recipe but the generic one, which has none).
func (v *recipeChecker) recipe(d *recipeDoc, path string, at []any, matched bool) Recipe {
	sub := func(keys ...any) []any { return append(append([]any{}, at...), keys...) }
	r := Recipe{Key: d.Key, Checkpoint: d.Checkpoint, Image: d.Image, Unmodelled: d.NotModelled, Source: d.Source,
		Note: d.Note, NoAttentionDP: d.NoAttentionDP}
	if !recipeKeyRE.MatchString(d.Key) {
		v.fail(v.at(sub("key")...), path+".key", d.Key, "expected a key of lower-case letters, digits, '.', '_' and '-'")
	}
	switch m := d.Match; {
	case !matched && m != nil:
		v.fail(v.at(sub("match")...), path+".match", "", "the generic recipe matches no rows by itself: no match keys")
	case matched && m == nil:
		v.fail(v.at(at...), path+".match", "", "required: model, precision and backend_version (system, measured_from, measured_to, gap_analysis optional)")
	case matched:
		r.Model, r.System, r.From, r.To, r.GapAnalysis = m.Model, m.System, m.MeasuredFrom, m.MeasuredTo, m.GapAnalysis
		if strings.TrimSpace(m.Model) == "" {
			v.fail(v.at(sub("match")...), path+".match.model", "", "required: the model_path the rows carry")
		}
		if m.Precision == nil {
			v.fail(v.at(sub("match")...), path+".match.precision", "", `required: the rows' precision ("" for an empty cell, "*" for any)`)
		} else {
			r.Precision = *m.Precision
		}
		if m.BackendVersion == nil {
			v.fail(v.at(sub("match")...), path+".match.backend_version", "", `required: the rows' backend_version ("" for an empty cell; a trailing "*" matches by prefix)`)
		} else {
			r.Version = *m.BackendVersion
		}
		for _, dt := range []struct{ key, val string }{{"measured_from", m.MeasuredFrom}, {"measured_to", m.MeasuredTo}} {
			if _, err := time.Parse(time.DateOnly, dt.val); dt.val != "" && err != nil {
				v.fail(v.at(sub("match", dt.key)...), path+".match."+dt.key, dt.val, "expected a date YYYY-MM-DD")
			}
		}
		if m.MeasuredFrom != "" && m.MeasuredTo != "" && m.MeasuredTo < m.MeasuredFrom {
			v.fail(v.at(sub("match", "measured_to")...), path+".match.measured_to", m.MeasuredTo, "before measured_from "+m.MeasuredFrom)
		}
	}
	if strings.TrimSpace(d.Source) == "" {
		v.fail(v.at(at...), path+".source", "", `required: the launch script read, as "path @ commit" in the repository, or "none: why"`)
	} else if !sourceRE.MatchString(d.Source) && !strings.HasPrefix(d.Source, "none") && !strings.HasPrefix(d.Source, "no ") {
		v.fail(v.at(sub("source")...), path+".source", d.Source, `expected "path.sh @ commit" in the repository, or why there is none`)
	}
	script := sourceRE.MatchString(d.Source)
	for j := range d.Args {
		a := v.serveArg(&d.Args[j], fmt.Sprintf("%s.args[%d]", path, j), sub("args", j))
		if !a.Assumed && !script {
			v.fail(v.at(sub("args", j)...), fmt.Sprintf("%s.args[%d].provenance", path, j), provRead,
				"read from no script: a recipe whose source names no script can only assume its settings")
		}
		r.Args = append(r.Args, a)
	}
	for j, u := range d.NotModelled {
		if strings.TrimSpace(u) == "" {
			v.fail(v.at(sub("not_modelled", j)...), fmt.Sprintf("%s.not_modelled[%d]", path, j), "", "must not be empty")
		}
	}
	if dp := d.DPAttention; dp != nil {
		key := path + ".dp_attention"
		if _, err := time.Parse(time.DateOnly, dp.MeasuredFrom); err != nil {
			v.fail(v.at(sub("dp_attention")...), key+".measured_from", dp.MeasuredFrom, "required: a date YYYY-MM-DD (rows measured before it are not known to have run so)")
		}
		assumed := v.assumed(dp.Provenance, key+".provenance", sub("dp_attention"))
		if strings.TrimSpace(dp.Why) == "" {
			v.fail(v.at(sub("dp_attention")...), key+".why", "", "required: which script launches it so")
		}
		r.DPAttention = &DPLaunch{From: dp.MeasuredFrom, Why: dp.Why, Assumed: assumed}
	}
	return r
}

// serveArg checks one serve setting: a serve key of blis run, a value it
// accepts (or a row-dependent form), and its provenance.
func (v *recipeChecker) serveArg(d *argDoc, path string, at []any) ServeArg {
	a := ServeArg{Flag: d.Flag, Why: d.Why}
	a.Assumed = v.assumed(d.Provenance, path+".provenance", at)
	if d.Value == nil {
		v.fail(v.at(at...), path+".value", "", "required: a value, or CONC, GEN, 2*ISL, ISL+OSL+20/200")
		return a
	}
	a.Value = *d.Value
	if err := checkServeArg(d.Flag, a.Value); err == errNoServeKey {
		v.fail(v.at(append(at, "flag")...), path+".flag", d.Flag, err.Error())
	} else if err != nil {
		v.fail(v.at(append(at, "value")...), path+".value", a.Value, err.Error()+" (or one of CONC, GEN, 2*ISL, ISL+OSL+20/200)")
	}
	return a
}

// assumed checks a provenance key and says whether it is assumed.
func (v *recipeChecker) assumed(p, key string, at []any) bool {
	switch p {
	case provRead:
		return false
	case provAssumed:
		return true
	case "":
		v.fail(v.at(at...), key, "", "required: read (from the recipe's source) or assumed")
	default:
		v.fail(v.at(append(at, "provenance")...), key, p, "allowed: read, assumed")
	}
	return false
}

// valueForms are the row-dependent values (expandValue).
var valueForms = map[string]bool{"CONC": true, "GEN": true, "2*ISL": true, "ISL+OSL+20/200": true}

var errNoServeKey = errors.New("expected a vllm serve setting BLIS has (a serve flag of blis run)")

// checkServeArg checks that flag is a serve key of blis run that accepts
// value (or value is a row-dependent form).
func checkServeArg(flag, value string) error {
	s := scenario.Defaults()
	for _, st := range s.Settings() {
		if st.Name == flag && st.Group == "serve" {
			if valueForms[value] {
				return nil
			}
			return st.Value.Set(value)
		}
	}
	return errNoServeKey
}

// RecipeFor returns the recipe of a vLLM row, or nil.
func RecipeFor(row *Row) *Recipe {
	for i := range recipes().list {
		if recipes().list[i].matches(row) {
			return &recipes().list[i]
		}
	}
	return nil
}

// RecipeByKey is the recipe named key (the generic one included), or nil.
func RecipeByKey(key string) *Recipe {
	set := recipes()
	for i := range set.list {
		if set.list[i].Key == key {
			return &set.list[i]
		}
	}
	if key == set.generic.Key {
		return &set.generic
	}
	return nil
}

// RecipeKeys lists every recipe's key in table order, the generic one last.
func RecipeKeys() []string {
	var keys []string
	for _, r := range recipes().list {
		keys = append(keys, r.Key)
	}
	return append(keys, recipes().generic.Key)
}
