package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesRun runs every scenario in examples/ (cut to a few requests)
// from the repository root, as its header comment says to: each must run,
// a cluster example must print its replicas, and one showing speculative
// decoding or KV offload must print that feature's report.
func TestExamplesRun(t *testing.T) {
	t.Chdir("../..")
	files, err := filepath.Glob("examples/*.yaml")
	seeds, err2 := filepath.Glob("examples/seeds/*.yaml")
	if err != nil || err2 != nil || len(files) == 0 || len(seeds) == 0 {
		t.Fatalf("no examples: %v %v", err, err2)
	}
	files = append(files, seeds...)
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, "examples/"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cut := []string{"--num-prompts", "24"}
			if strings.Contains(string(data), "dataset-name: agentic") {
				cut = []string{"--agentic-num-sessions", "4"}
			}
			if strings.Contains(string(data), "\nstages:") && strings.Contains(string(data), "dataset-name: random") {
				// Staged random load: --num-prompts conflicts with the stages, so cut those.
				cut = []string{"--stages", "[{rate: 2, duration: 12}]"}
			}
			code, out, errOut := runCLI(t, append([]string{"run", f}, cut...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			text := string(data)
			for _, want := range []struct{ key, report string }{
				{"\nreplicas:", "Replicas (router: "},
				{"\npools:", "Replicas (router: "},
				{"-replicas:", "Replicas (router: "},
				{"\nspeculative-config:", "SpecDecoding metrics: "},
				{"OffloadingConnector", " KV offload "},
				{"LMCacheConnectorV1", " KV offload "},
				{"\nkv-offloading-size:", " KV offload "},
			} {
				if strings.Contains(text, want.key) && !strings.Contains(out, want.report) {
					t.Errorf("%s: no %q report:\n%s\n%s", strings.TrimSpace(want.key), want.report, errOut, out)
				}
			}
			// A cluster run also says so on stderr, with its router.
			if strings.Contains(out, "Replicas (router: ") && !strings.Contains(errOut, "cluster: ") {
				t.Errorf("no cluster line on stderr:\n%s", errOut)
			}
		})
	}
}
