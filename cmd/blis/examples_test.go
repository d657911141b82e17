package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"blis/catalog"
	"blis/fabric"
)

// fabricMissing says why the disaggregated examples cannot run on this
// build ("" when they can): they need fabric.Transfers to move KV and the
// fabric catalog for --fabric.
func fabricMissing() string {
	f := &catalog.Fabric{Name: "probe", GPUsPerNode: 8,
		NVLink: catalog.Link{Kind: "nvlink", Bandwidth: 1e9}, PCIe: catalog.Link{Kind: "pcie", Bandwidth: 1e9},
		Network: catalog.Link{Kind: "tcp", Bandwidth: 1e9}}
	t := fabric.New(f)
	t.Start(0, 1, fabric.Place{Node: 0, GPU: 0, GPUs: 1}, fabric.Place{Node: 1, GPU: 0, GPUs: 1}, 1)
	if t.Next() == math.MaxInt64 {
		return "fabric.Transfers completes no transfer in this build"
	}
	if _, err := catalog.LookupFabric("h100-nvlink-tcp"); err != nil {
		return err.Error()
	}
	return ""
}

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
			if why := fabricMissing(); strings.HasPrefix(filepath.Base(f), "pd-") && why != "" {
				t.Skip("disaggregated example: " + why)
			}
			code, out, errOut := runCLI(t, "run", f, "--num-prompts", "24")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if !strings.Contains(errOut, "cluster: ") || !strings.Contains(out, "Replicas (router: ") {
				t.Errorf("no cluster report:\n%s\n%s", errOut, out)
			}
		})
	}
}
