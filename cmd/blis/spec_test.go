package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"blis/specdecode"
)

func TestSpecPresets(t *testing.T) {
	code, out, errOut := runCLI(t, "spec", "presets")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	ps := specdecode.Presets()
	if len(lines) != len(ps)+1 || !strings.HasPrefix(lines[0], "name ") {
		t.Fatalf("want a header and %d rows, got:\n%s", len(ps), out)
	}
	for i, p := range ps {
		f := strings.Fields(lines[i+1])
		row := fmt.Sprintf("  %d  %.2f  ", p.K, p.Schedule.MeanLength())
		if f[0] != p.Name || !strings.Contains(strings.Join(strings.Fields(lines[i+1]), "  "), row) ||
			!strings.Contains(lines[i+1], fmt.Sprintf("%.3f", p.Schedule.Rate(1))) {
			t.Errorf("row %d = %q, want preset %s", i+1, lines[i+1], p.Name)
		}
	}
	if !strings.Contains(out, "vllm-test-llama8b              eagle3             meta-llama/Llama-3.1-8B-Instruct     3  2.60         0.730,0.521,0.354 ") {
		t.Errorf("vLLM's Llama-3.1-8B EAGLE-3 baseline row is missing or misaligned:\n%s", out)
	}

	code, out, errOut = runCLI(t, "spec", "presets", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	var got []presetJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	if len(got) != len(ps) {
		t.Fatalf("--json lists %d presets, want %d", len(got), len(ps))
	}
	for i, p := range ps {
		g := got[i]
		if g.Name != p.Name || g.NumSpeculativeTokens != p.K || len(g.PerPosition) != p.K || g.MeanAcceptanceLength != p.Schedule.MeanLength() || g.Source != p.Source {
			t.Errorf("--json preset %d = %+v, want %s k=%d", i, g, p.Name, p.K)
		}
	}

	if code, _, errOut := runCLI(t, "spec", "presets", "extra"); code != 2 || !strings.Contains(errOut, "takes no arguments") {
		t.Errorf("an argument: exit %d, stderr %q; want 2 and a usage error", code, errOut)
	}
}
