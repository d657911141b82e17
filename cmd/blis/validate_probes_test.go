package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --probes overrides the manifest: a listed BLIS assumption is re-checked
// on the InferenceX fixture, written in its own section, and the headline
// (and so --check) does not change; a bad value is a usage error.
func TestValidatePageProbesFlag(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--record", "--probes", "step-model"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	md, _ := os.ReadFile(filepath.Join(dir, "small.md"))
	for _, want := range []string{"## Gap re-checks", "| Llama-3.1-70B FP8 H100 | step-model | assumed |", "Bracketed over unstated settings"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	out.Reset()
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--check", "--probes", "off"}, &out, &errb); code != 0 {
		t.Fatalf("check without probes against a baseline recorded with them: exit %d: %s", code, out.String())
	}
	errb.Reset()
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--probes", "sometimes"}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `--probes "sometimes": "sometimes" is not a setting BLIS can toggle`) {
		t.Errorf("bad --probes: exit %d, stderr %q", code, errb.String())
	}
}
