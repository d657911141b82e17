package grid

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/scenario"
)

const example = `name: llama70b-h100
base: {model: llama-3.1-70b, hardware: h100, num-prompts: 200}
axes:
  tensor-parallel-size: [2, 4, 8]
  max-num-seqs: [128, 256]
zip:
  - {max-num-batched-tokens: [2048, 8192], long-prefill-token-threshold: [512, 2048]}
load:
  max-concurrency: [1, 4, 16]
exclude:
  - {tensor-parallel-size: 2, max-num-seqs: 256}
`

func TestExpandOrderAndCount(t *testing.T) {
	g, err := Parse("g.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "llama70b-h100" {
		t.Errorf("name %q", g.Name)
	}
	if got := strings.Join(g.Keys(), ","); got != "tensor-parallel-size,max-num-seqs,max-num-batched-tokens,long-prefill-token-threshold,max-concurrency" {
		t.Errorf("keys %s", got)
	}
	if g.Size() != 3*2*2*3 {
		t.Errorf("size %d", g.Size())
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// tp 2 × seqs 256 drops 2×3 points.
	if len(pts) != 36-6 {
		t.Fatalf("%d points", len(pts))
	}
	want := [][]string{
		{"2", "128", "2048", "512", "1"},
		{"2", "128", "2048", "512", "4"},
		{"2", "128", "2048", "512", "16"},
		{"2", "128", "8192", "2048", "1"},
	}
	for i, w := range want {
		var got []string
		for _, kv := range pts[i].Values {
			got = append(got, kv.Value)
		}
		if strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("point %d: %v, want %v", i, got, w)
		}
	}
	ids := map[string]bool{}
	for i, p := range pts {
		if p.Index != i {
			t.Errorf("point %d has index %d", i, p.Index)
		}
		if ids[p.ID] {
			t.Errorf("duplicate ID %s", p.ID)
		}
		ids[p.ID] = true
		if p.Seed <= 0 {
			t.Errorf("point %d seed %d", i, p.Seed)
		}
		// The point's scenario is a valid scenario file with its values.
		s := scenario.Defaults()
		if err := s.ApplyYAML("p.yaml", p.Scenario, nil); err != nil {
			t.Fatalf("point %d scenario: %v\n%s", i, err, p.Scenario)
		}
		if s.Seed != p.Seed || s.NumPrompts != 200 || len(s.MetricPercentiles) != 3 || s.PercentileMetrics != DefaultPercentileMetrics {
			t.Errorf("point %d scenario: %+v", i, s)
		}
	}
}

// The ID and seed depend on the point's settings, not on the grid's layout:
// the same point in a reordered grid keeps both; the expansion is stable.
func TestIDsAndSeedsStable(t *testing.T) {
	a, err := Parse("a.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	reordered := `name: other
base: {num-prompts: 200, hardware: h100, model: llama-3.1-70b}
axes:
  max-num-seqs: [256, 128]
  tensor-parallel-size: [8, 4, 2]
zip:
  - {long-prefill-token-threshold: [2048, 512], max-num-batched-tokens: [8192, 2048]}
load:
  max-concurrency: [16, 4, 1]
`
	b, err := Parse("b.yaml", []byte(reordered))
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := a.Expand()
	pb, _ := b.Expand()
	seeds := map[string]int64{}
	for _, p := range pb {
		seeds[p.ID] = p.Seed
	}
	for _, p := range pa {
		s, ok := seeds[p.ID]
		if !ok || s != p.Seed {
			t.Errorf("point %d (%s) not in the reordered grid with the same seed", p.Index, p.ID)
		}
	}
	again, _ := Parse("a.yaml", []byte(example))
	pa2, _ := again.Expand()
	for i := range pa {
		if pa[i].ID != pa2[i].ID || string(pa[i].Scenario) != string(pa2[i].Scenario) {
			t.Fatalf("point %d differs between two expansions", i)
		}
	}
	// Pinned: a change to the ID or seed derivation changes every
	// stored sweep's points, so it must be deliberate.
	if pa[0].ID != pinnedID || pa[0].Seed != pinnedSeed {
		t.Errorf("point 0: ID %s seed %d; pinned %s %d", pa[0].ID, pa[0].Seed, pinnedID, pinnedSeed)
	}
}

const (
	pinnedID   = "afe41c1462ad"
	pinnedSeed = 1815428574
)

func TestGridSetsSeed(t *testing.T) {
	g, err := Parse("g.yaml", []byte("base: {seed: 7}\naxes: {max-num-seqs: [64, 128]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, _ := g.Expand()
	for _, p := range pts {
		if p.Seed != 7 || strings.Count(string(p.Scenario), "seed:") != 1 {
			t.Errorf("point %d: seed %d\n%s", p.Index, p.Seed, p.Scenario)
		}
	}
	if g.Name != "g" {
		t.Errorf("default name %q", g.Name)
	}
}

func TestRamp(t *testing.T) {
	g, err := Parse("g.yaml", []byte("load: {ramp: {from: 1, to: 100, steps: 3, scale: log}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, _ := g.Expand()
	var got []string
	for _, p := range pts {
		got = append(got, p.Values[0].Value)
	}
	if strings.Join(got, " ") != "1 10 100" {
		t.Errorf("log ramp %v", got)
	}
	g, _ = Parse("g.yaml", []byte("load: {ramp: {from: 2, to: 8, steps: 4}}\n"))
	pts, _ = g.Expand()
	got = nil
	for _, p := range pts {
		got = append(got, p.Values[0].Value)
	}
	if strings.Join(got, " ") != "2 4 6 8" {
		t.Errorf("linear ramp %v", got)
	}
}

func TestScenarioFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("model: llama-3.1-8b\nnum-prompts: 50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Parse(filepath.Join(dir, "g.yaml"), []byte("scenario: s.yaml\nbase: {num-prompts: 20}\naxes: {max-num-seqs: [8]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, _ := g.Expand()
	s := scenario.Defaults()
	if err := s.ApplyYAML("p", pts[0].Scenario, nil); err != nil {
		t.Fatal(err)
	}
	if s.Model != "llama-3.1-8b" || s.NumPrompts != 20 || s.MaxNumSeqs != 8 {
		t.Errorf("%+v", s)
	}
}

// The hash identifies what the grid expands to, so a resume or merge is
// refused when the scenario file the grid starts from has changed, not
// only when the grid file has.
func TestHashCoversScenarioFile(t *testing.T) {
	dir := t.TempDir()
	grid := filepath.Join(dir, "g.yaml")
	text := []byte("scenario: s.yaml\naxes: {max-num-seqs: [8]}\n")
	hash := func(scen string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scen), 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := Parse(grid, text)
		if err != nil {
			t.Fatal(err)
		}
		return g.Hash
	}
	a, b := hash("model: llama-3.1-8b\n"), hash("model: llama-3.1-70b\n")
	if a == b {
		t.Error("two scenario files, one hash: a resume would mix their points")
	}
	if a != hash("model: llama-3.1-8b\n") {
		t.Error("the hash is not stable")
	}
	// A grid without a scenario file keeps the plain hash of its text.
	g, err := Parse(grid, []byte("axes: {max-num-seqs: [8]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(g.Text)
	if g.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("hash %s, want the SHA-256 of the grid file", g.Hash)
	}
}

func TestBadGrids(t *testing.T) {
	for _, tc := range []struct {
		name, grid string
		want       string // in the message
		line       int
	}{
		{"unknown top key", "name: x\naxis: {max-num-seqs: [1]}\n", `axis: unknown grid key; did you mean axes`, 2},
		{"scenario key on top", "max-num-seqs: 4\n", "scenario keys go under base", 1},
		{"unknown axis key", "axes:\n  max-num-seq: [1, 2]\n", `max-num-seq: not a scenario key; did you mean max-num-seqs`, 2},
		{"unknown base key", "base: {modle: x}\n", `modle: not a scenario key; did you mean model`, 1},
		{"bad value", "axes:\n  tensor-parallel-size: [2, two]\n", `tensor-parallel-size "two"`, 2},
		{"bad base value", "base:\n  request-rate: fast\n", `request-rate "fast"`, 2},
		{"empty axis", "axes:\n  max-num-seqs: []\n", "max-num-seqs: empty axis", 2},
		{"axis not a list", "axes:\n  max-num-seqs: 4\n", "an axis is a list", 2},
		{"zip mismatch", "zip:\n  - {max-num-batched-tokens: [1, 2], long-prefill-token-threshold: [1]}\n", "long-prefill-token-threshold: zipped with max-num-batched-tokens (line 2) but has 1 values to its 2", 2},
		{"key on two axes", "axes:\n  max-num-seqs: [1]\nzip:\n  - {max-num-seqs: [2], block-size: [16]}\n", "max-num-seqs: on two axes (also on line 2)", 4},
		{"load and axis", "axes:\n  max-concurrency: [1]\nload:\n  max-concurrency: [2]\n", "on two axes", 4},
		{"two loads", "load: {max-concurrency: [1], request-rate: [2]}\n", "exactly one of", 1},
		{"bad load", "load: {num-prompts: [1]}\n", "not a load axis", 1},
		{"bad ramp", "load: {ramp: {from: 5, to: 1, steps: 3}}\n", "to (1) must be above from (5)", 1},
		{"ramp key twice", "load:\n  ramp: {from: 1, to: 4, steps: 3, from: 2}\n", "ramp.from: given twice in the ramp", 2},
		{"ramp scale", "load: {ramp: {from: 1, to: 2, steps: 3, scale: cubic}}\n", `ramp.scale "cubic": allowed: log, linear`, 1},
		{"output key", "base: {save-result: true}\n", "save-result: not allowed in a grid", 1},
		{"exclude non-axis", "axes: {max-num-seqs: [1, 2]}\nexclude:\n  - {block-size: 16}\n", "block-size: not an axis", 3},
		{"exclude missing value", "axes: {max-num-seqs: [1, 2]}\nexclude:\n  - {max-num-seqs: 3}\n", `max-num-seqs "3": not a value of the axis`, 3},
		{"duplicate value", "axes:\n  max-num-seqs: [1, 1]\n", "value given twice", 2},
		{"duplicate top key", "name: a\nname: b\n", "name: given twice (first on line 1)", 2},
		{"bad name", "name: a/b\n", `name "a/b": may hold only`, 1},
		{"not a mapping", "- a\n", "a grid is a mapping", 1},
		{"not yaml", "axes: [\n", "not valid YAML", 0},
		{"empty", "", "the grid is empty", 0},
		{"missing scenario", "scenario: nope.yaml\n", "cannot read the scenario file", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(tc.grid))
			var ie *scenario.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an InputError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to contain %q", err, tc.want)
			}
			if ie.Line != tc.line {
				t.Errorf("line %d, want %d (%v)", ie.Line, tc.line, err)
			}
			if !strings.HasPrefix(err.Error(), "g.yaml") {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

func TestMaxPoints(t *testing.T) {
	g, err := Parse("g.yaml", []byte("axes:\n  max-num-seqs: [1, 2, 3]\n  block-size: [16, 32]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.CheckSize(6, false); err != nil {
		t.Error(err)
	}
	err = g.CheckSize(5, false)
	if err == nil || !strings.Contains(err.Error(), "6 points") || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), "max-num-seqs 3 × block-size 2") {
		t.Errorf("got %v", err)
	}
	if err := g.CheckSize(5, true); err != nil {
		t.Error(err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte("load: {ramp: {from: 1, to: 100, steps: 3, scale: log}}\n"))
	f.Add([]byte("zip:\n  - {max-num-batched-tokens: [1, 2], long-prefill-token-threshold: [1]}\n"))
	f.Add([]byte("base: {stages: [{rate: 1, duration: 2}]}\naxes: {seed: [1, 2]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse("f.yaml", data)
		if err != nil {
			var ie *scenario.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("not an InputError: %v", err)
			}
			return
		}
		if g.CheckSize(1000, false) != nil {
			return
		}
		pts, err := g.Expand()
		if err != nil {
			return
		}
		for _, p := range pts {
			s := scenario.Defaults()
			if err := s.ApplyYAML("p", p.Scenario, nil); err != nil {
				t.Fatalf("point %d scenario does not re-read: %v\n%s", p.Index, err, p.Scenario)
			}
		}
	})
}
