package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"blis/catalog"
	"blis/scenario"
)

// docs/flags.md is generated from the settings table; this fails when it
// is stale.
func TestFlagsDocIsCurrent(t *testing.T) {
	var want bytes.Buffer
	writeFlagsMarkdown(&want)
	got, err := os.ReadFile("../../" + flagsDoc)
	if err != nil {
		t.Fatalf("%v; run `go run ./cmd/blis flags --write` from the repository root", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s is stale (%s); run `go run ./cmd/blis flags --write` from the repository root",
			flagsDoc, firstDifference(got, want.Bytes()))
	}
	code, out, _ := runCLI(t, "flags")
	if code != 0 || out != want.String() {
		t.Fatalf("blis flags: exit %d, output differs from the generator", code)
	}
}

// --help shows each setting's default from scenario.Defaults(), the
// catalog's chips, and no --no-NAME flag with a misleading default.
func TestRunHelpIsGeneratedFromTheTable(t *testing.T) {
	code, out, _ := runCLI(t, "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	norm := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"--random-output-len int mean output tokens",
		"(default: 128)",
		"--max-concurrency int max requests in flight (default: none)",
		"--[no-]enable-prefix-caching automatic prefix caching; --no-enable-prefix-caching turns it off (default: true)",
		"Deployment (vllm serve):", "Load (vllm bench serve):", "Output:",
		"--dry-run",
	} {
		if !strings.Contains(norm, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	for _, c := range catalog.Chips() {
		if !strings.Contains(norm, c.Name) {
			t.Errorf("help lacks chip %s", c.Name)
		}
	}
	for _, m := range catalog.Models() {
		if !strings.Contains(norm, m.ID) {
			t.Errorf("help lacks model %s", m.ID)
		}
	}
	for _, st := range scenario.DefaultSettings() {
		if st.Neg != nil && strings.Contains(out, "  --no-"+st.Name) {
			t.Errorf("help lists --no-%s as a flag of its own", st.Name)
		}
	}
	if strings.Contains(out, "(default true)") {
		t.Errorf("help shows pflag's default:\n%s", out)
	}
	// The hidden spelling still works.
	if code, _, errOut := runCLI(t, "run", "--no-enable-prefix-caching", "--dry-run"); code != 0 {
		t.Fatalf("--no-enable-prefix-caching: exit %d: %s", code, errOut)
	}
}
