package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An inference-perf profile of several rates runs as one run, reported per
// stage in the table, the result file and inference-perf's stage reports.
func TestStagedRun(t *testing.T) {
	dir := t.TempDir()
	args := []string{"run", "--stages", "[{rate: 20, duration: 2}, {rate: 40, duration: 1}]", "--load-interval", "0.5",
		"--random-input-len", "128", "--random-output-len", "8", "--save-result", "--result-dir", dir,
		"--export", "inference-perf", "--export-dir", dir}
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Successful requests:                     80", "Per load stage (inference-perf)",
		"Stage 0: 20 req/s for 2 s", "Stage 1: 40 req/s for 1 s", "Requests sent:                           40"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	result, err := os.ReadFile(filepath.Join(dir, "blis-Llama-3.1-8B-h100-tp1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(result, []byte(`"stages": [{"stage": 0, "requested_rate": 20.0`)) {
		t.Errorf("result file lacks the stages: %.300s", result)
	}
	for _, f := range []string{"stage_0_lifecycle_metrics.json", "stage_1_lifecycle_metrics.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	code, again, _ := runCLI(t, args...)
	if code != 0 || again != out {
		t.Error("the same staged run printed another table")
	}
	if code, _, errOut := runCLI(t, "run", "--stages", "[{rate: 20}]"); code != 2 || !strings.Contains(errOut, "--stages") {
		t.Errorf("a stage without duration: exit %d, %q", code, errOut)
	}
}
