package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesRun runs every scenario in examples/ (cut to a few requests)
// from the repository root, as its header comment says to: each must run,
// and a cluster example must print its replicas.
func TestExamplesRun(t *testing.T) {
	t.Chdir("../..")
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cut := []string{"--num-prompts", "24"}
			if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), "\nstages:") && strings.Contains(string(data), "dataset-name: random") {
				// Staged random load: --num-prompts conflicts with the stages, so cut those.
				cut = []string{"--stages", "[{rate: 2, duration: 12}]"}
			}
			code, out, errOut := runCLI(t, append([]string{"run", f}, cut...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut, "cluster: ") || !strings.Contains(out, "Replicas (router: ") {
				t.Errorf("no cluster report:\n%s\n%s", errOut, out)
			}
		})
	}
}
