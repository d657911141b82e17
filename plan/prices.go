package plan

import (
	"bytes"
	_ "embed"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"blis/catalog"
	"blis/scenario"
)

//go:embed prices.yaml
var defaultPrices []byte

// Prices is dollars per GPU-hour by catalog chip name.
type Prices map[string]float64

// DefaultPrices is the embedded table (prices.yaml: public on-demand list
// prices, each with its source), an editable default.
func DefaultPrices() Prices {
	p, err := ParsePrices("prices.yaml", defaultPrices)
	if err != nil {
		panic("plan: the embedded prices.yaml is broken: " + err.Error()) // a build defect, not user input
	}
	return p
}

// ParsePrices reads a price table: a YAML mapping usd_per_gpu_hour of chip
// name to a non-negative number. Strict: an unknown key, a chip not in the
// catalog, or a bad number is an error naming the file and line.
func ParsePrices(file string, data []byte) (Prices, error) {
	var doc struct {
		USD map[string]yaml.Node `yaml:"usd_per_gpu_hour"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, &scenario.InputError{File: file, Msg: "not a price table (a mapping usd_per_gpu_hour: {CHIP: USD, ...}): " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.USD) == 0 {
		return nil, &scenario.InputError{File: file, Msg: "no prices: give usd_per_gpu_hour: {CHIP: USD, ...}"}
	}
	out := Prices{}
	for _, name := range slices.Sorted(maps.Keys(doc.USD)) {
		n := doc.USD[name]
		chip, err := catalog.LookupChip(name)
		if err != nil {
			return nil, &scenario.InputError{File: file, Line: n.Line, Key: "usd_per_gpu_hour." + name, Msg: err.Error()}
		}
		var v float64
		if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return nil, &scenario.InputError{File: file, Line: n.Line, Key: "usd_per_gpu_hour." + name, Value: n.Value, Msg: "allowed: a number of US dollars per GPU-hour, at least 0"}
		}
		if _, dup := out[chip.Name]; dup {
			return nil, &scenario.InputError{File: file, Line: n.Line, Key: "usd_per_gpu_hour." + name, Msg: fmt.Sprintf("a second price for chip %s", chip.Name)}
		}
		out[chip.Name] = v
	}
	return out, nil
}

// Cost is the dollars per hour of gpus GPUs of each chip; a chip the table
// has no price for is an error naming it.
func (p Prices) Cost(gpus map[string]int) (float64, error) {
	total := 0.0
	for _, chip := range slices.Sorted(maps.Keys(gpus)) {
		price, ok := p[chip]
		if !ok {
			return 0, &scenario.InputError{Key: "--prices", Msg: fmt.Sprintf("no price for chip %s; the table has %s", chip, strings.Join(slices.Sorted(maps.Keys(p)), ", "))}
		}
		total += price * float64(gpus[chip])
	}
	return total, nil
}
