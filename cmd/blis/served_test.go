package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run that would serve nothing fails at start-up where vLLM would, or at
// the end with exit 1; partial failures are counted on stderr.
func TestRunsThatServeNothing(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		// vLLM refuses to start: the KV cache cannot hold one max-model-len request.
		{[]string{"--model", "qwen3-32b", "--max-model-len", "40960"}, 2, "To serve at least one request with the models's max seq len (40960)"},
		// Every request would be refused.
		{[]string{"--max-model-len", "10"}, 2, `--max-model-len "10": every request would fail: the shortest random request (1024 prompt + 128 output tokens)`},
		{[]string{"--num-gpu-blocks-override", "2"}, 2, "kv_capacity: needs 72 KV blocks, the pool has 1"},
		{[]string{"--dataset-name", "prefix_repetition", "--max-model-len", "300"}, 2, "the shortest prefix_repetition request (512 prompt + 128 output tokens)"},
		{[]string{"--input-file", empty, "--custom-dataset-type", "mooncake_trace"}, 2, "empty.jsonl gave no request to send"},
		// Requests fail one by one: none succeeds.
		{[]string{"--num-prompts", "20", "--request-timeout-seconds", "0.001"}, 1, "no request succeeded: 20 of 20 requests failed: timeout (20): no complete response within 1ms"},
	} {
		code, out, errOut := runCLI(t, append([]string{"run"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d and %q", c.args, code, errOut, c.code, c.want)
		}
		if strings.Contains(out, "Serving Benchmark Result") {
			t.Errorf("%v: printed a result table", c.args)
		}
	}
	// Some prompts longer than --max-model-len: the run goes on and says so.
	code, out, errOut := runCLI(t, "run", "--num-prompts", "100", "--max-model-len", "1100", "--random-range-ratio", "0.5")
	if code != 0 || !strings.Contains(errOut, "WARNING 53 of 100 requests failed: max_model_len (53): this model's maximum context length is 1100 tokens") ||
		!strings.Contains(out, "Failed requests:                         53") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// --step-model auto says on stderr when it falls back to the roofline.
func TestRooflineFallbackIsStated(t *testing.T) {
	code, _, errOut := runCLI(t, "run", "--hardware", "a100", "--dry-run")
	if code != 0 || !strings.Contains(errOut, "INFO step model roofline-v1: no fitted kernel coefficients for a100") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
