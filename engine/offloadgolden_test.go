package engine

import (
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
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

// TestOffloadPrivateSameAsUnmarked: requests that share no content give the
// same output whether marked Private (their chunks skip the lookups that
// cannot find them) or not.
func TestOffloadPrivateSameAsUnmarked(t *testing.T) {
	for trial := 0; trial < 300; trial++ {
		s1, o1 := specOffloadRunContent(t, trial, unique)
		s2, o2 := specOffloadRunContent(t, trial, uniquePrivate)
		if s1 != s2 || !slices.Equal(o1, o2) {
			t.Fatalf("trial %d: Private changes the output:\n%+v\n%+v", trial, s1, s2)
		}
	}
}

// TestOffloadQueriesCountedOnce: each request is looked up once, when
// admitted with nothing computed; the one whose KV the connector loads is
// not counted again when it rejoins the queue with the loaded tokens
// computed (vLLM records connector_prefix_cache_stats at the lookup only).
func TestOffloadQueriesCountedOnce(t *testing.T) {
	_, st := reload(t, offCfg(64), 140)
	if st.OffloadLoads != 1 {
		t.Fatalf("%d loads, want 1", st.OffloadLoads)
	}
	if want := int64(3*1024 + 1040); st.ExternalPrefixQueries != want || st.ExternalPrefixHits == 0 {
		t.Errorf("external queries %d (hits %d), want %d tokens, one lookup per request", st.ExternalPrefixQueries, st.ExternalPrefixHits, want)
	}
}
