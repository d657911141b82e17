package main

import (
	"strings"
	"testing"
)

// An aiperf agentic-replay run (InferenceX's AgentX client settings, shortened)
// over the sessions example: lanes, per-lane warm-up, idle caps, cache
// busting and a benchmark window with the corpus replayed from its start.
func TestLanesReplay(t *testing.T) {
	args := []string{"run", "--dataset-name", "sessions", "--dataset-path", "../../workload/testdata/sessions_example.jsonl",
		"--max-concurrency", "2", "--warmup-requests-per-lane", "2", "--trajectory-start-min-ratio", "0.25",
		"--trajectory-start-max-ratio", "0.75", "--trace-idle-gap-cap-seconds", "1", "--system-idle-gap-cap-seconds", "0.5",
		"--cache-bust", "first_turn_prefix", "--benchmark-duration", "30", "--seed", "42"}
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Successful requests:") || strings.Contains(out, "Successful requests:                     0\n") {
		t.Fatalf("no requests completed:\n%s", out)
	}
	_, again, _ := runCLI(t, args...)
	if again != out {
		t.Fatal("two identical runs differ")
	}
	code, _, errOut = runCLI(t, "run", "--concurrency-mode", "lanes", "--max-concurrency", "0")
	if code != 2 || !strings.Contains(errOut, "number of lanes") {
		t.Fatalf("lanes without --max-concurrency: exit %d, %s", code, errOut)
	}
}
