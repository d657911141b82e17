package engine

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"testing"
)

var updateOffload = flag.Bool("update", false, "rewrite testdata/offload_golden.txt (review the diff)")

// TestOffloadGolden pins the observable output (every counter and every
// sample) of specOffloadRun's random workloads, both connectors, LRU and
// ARC, secondary tiers, preemptions and aborts, to the digests in
// testdata/offload_golden.txt: the connector's and the tier's fast paths
// must leave what is stored, evicted and loaded exactly as it was.
func TestOffloadGolden(t *testing.T) {
	const trials = 500
	var b strings.Builder
	for trial := 0; trial < trials; trial++ {
		st, out := specOffloadRun(t, trial)
		h := fnv.New64a()
		fmt.Fprintf(h, "%+v", st)
		for _, v := range out {
			fmt.Fprintf(h, ",%d", v)
		}
		fmt.Fprintf(&b, "%d %016x\n", trial, h.Sum64())
	}
	const path = "testdata/offload_golden.txt"
	if *updateOffload {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, wl := strings.Split(b.String(), "\n"), strings.Split(string(want), "\n")
	if len(got) != len(wl) {
		t.Fatalf("%d digests, golden has %d", len(got), len(wl))
	}
	for i := range got {
		if got[i] != wl[i] {
			t.Errorf("trial digest %q, golden %q", got[i], wl[i])
		}
	}
}
