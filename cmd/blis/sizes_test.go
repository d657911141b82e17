package main

import (
	"strings"
	"testing"
)

// Absurd sizes are refused at start-up with exit 2 and a reason, before
// anything is allocated for them.
func TestAbsurdSizesAreBounded(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--num-gpu-blocks-override", "2000000000"}, "a KV pool of 2000000000 blocks needs 3906250.00 GiB per GPU"},
		{[]string{"--num-gpu-blocks-override", "9000000000000000000"}, "vLLM's KV cache allocation would fail with CUDA out of memory"},
		{[]string{"-dp", "100000"}, "--data-parallel-size \"100000\": at most 4096 ranks"},
		{[]string{"--concurrency-mode", "lanes", "--max-concurrency", "1000000000", "--dataset-name", "agentic"}, "at most 1048576 lanes"},
		{[]string{"--max-num-seqs", "2000000000", "--max-num-batched-tokens", "2000000000"}, "does not fit on h100"},
		{[]string{"--random-input-len", "2000000000"}, "--random-input-len 2000000000: must be an integer in"},
	} {
		code, _, errOut := runCLI(t, append([]string{"run", "--dry-run"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	// vLLM caps the CUDA-graph capture size at the token budget.
	if code, _, errOut := runCLI(t, "run", "--dry-run", "--max-cudagraph-capture-size", "2000000000"); code != 0 {
		t.Errorf("--max-cudagraph-capture-size 2000000000: exit %d: %s", code, errOut)
	}
}
