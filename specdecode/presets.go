package specdecode

import (
	_ "embed"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

//go:embed presets.csv
var presetsCSV string

// Profile is a named, published acceptance measurement (a preset): the
// proposer and target it was measured on and its per-position schedule.
type Profile struct {
	Name        string // the measurement's id in presets.csv
	Method      string // as reported: eagle3, mtp, ngram, …
	TargetModel string
	DraftModel  string
	K           int // num_speculative_tokens it was measured with
	Dataset     string
	Temperature string
	Engine      string // engine and version as reported
	Source      string // the public thread or file the numbers come from
	// Schedule is the measured per-position schedule, or, where only a
	// mean acceptance length was reported (FromMean set), the i.i.d.
	// schedule of that mean at K.
	Schedule Schedule
	FromMean bool
}

var (
	presetsOnce sync.Once
	presets     []Profile
	presetsErr  error
)

// Presets returns every preset, sorted by name.
func Presets() []Profile {
	loadPresets()
	return slices.Clone(presets)
}

// Preset returns the preset called name.
func Preset(name string) (Profile, error) {
	loadPresets()
	i, ok := slices.BinarySearchFunc(presets, name, func(p Profile, n string) int { return strings.Compare(p.Name, n) })
	if !ok {
		return Profile{}, fmt.Errorf("unknown acceptance preset %q; presets: %s", name, strings.Join(PresetNames(), ", "))
	}
	return presets[i], nil
}

// PresetNames lists the presets' names, sorted.
func PresetNames() []string {
	loadPresets()
	out := make([]string, len(presets))
	for i, p := range presets {
		out[i] = p.Name
	}
	return out
}

func loadPresets() {
	presetsOnce.Do(func() {
		presets, presetsErr = parsePresets(presetsCSV)
		if presetsErr != nil {
			panic("specdecode: embedded presets.csv: " + presetsErr.Error()) // a build defect, not user input
		}
	})
}

// parsePresets reads the measurements table. A row becomes a preset when
// it has a plain integer k and either a per-position schedule or a mean
// acceptance length; rows reporting several windows (separated by ";" or
// "/") contribute their first. Other rows (throughput only, tree-shaped
// drafts without a chain k, k not stated) are skipped.
func parsePresets(text string) ([]Profile, error) {
	rd := csv.NewReader(strings.NewReader(text))
	rows, err := rd.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(rows) < 1 {
		return nil, fmt.Errorf("no header")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"id", "method", "target_model", "draft_model", "k_num_spec_tokens", "dataset",
		"temperature", "engine_version", "mean_acceptance_length", "per_position", "source_url"} {
		if _, ok := col[h]; !ok {
			return nil, fmt.Errorf("missing column %q", h)
		}
	}
	var out []Profile
	prevSource := ""
	for n, r := range rows[1:] {
		get := func(h string) string { return strings.TrimSpace(r[col[h]]) }
		// A row citing "same file" shares the previous row's source.
		source := get("source_url")
		if source == "same file" {
			source = prevSource
		}
		prevSource = source
		k, err := strconv.Atoi(get("k_num_spec_tokens"))
		if err != nil || k < 1 || k > MaxPositions {
			continue
		}
		p := Profile{
			Name: get("id"), Method: get("method"), TargetModel: get("target_model"), DraftModel: get("draft_model"),
			K: k, Dataset: get("dataset"), Temperature: get("temperature"), Engine: get("engine_version"), Source: source,
		}
		if pp := firstWindow(get("per_position")); pp != "" {
			var u []float64
			for _, f := range strings.Split(pp, "|") {
				x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
				if err != nil {
					return nil, fmt.Errorf("row %d (%s): per_position %q: %v", n+2, p.Name, pp, err)
				}
				u = append(u, x)
			}
			if p.Schedule, err = FromRates(u); err != nil {
				return nil, fmt.Errorf("row %d (%s): %v", n+2, p.Name, err)
			}
		} else if m := firstWindow(get("mean_acceptance_length")); m != "" {
			a, err := strconv.ParseFloat(m, 64)
			if err != nil {
				continue // a mean the table does not state as one number (several models per row)
			}
			if p.Schedule, err = FromMean(a, k); err != nil {
				return nil, fmt.Errorf("row %d (%s): %v", n+2, p.Name, err)
			}
			p.FromMean = true
		} else {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Profile) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("duplicate preset %q", out[i].Name)
		}
	}
	return out, nil
}

// firstWindow is the first of several reported windows ("a ; b ; c" or
// "a / b / c (note)"), trimmed.
func firstWindow(s string) string {
	if i := strings.IndexAny(s, ";/"); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '('); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
