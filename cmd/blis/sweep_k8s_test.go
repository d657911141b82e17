package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/scenario"
)

// runSweepK8s executes `blis sweep k8s` with args and returns its stdout,
// the exit status `blis` would give it and the error.
func runSweepK8s(t *testing.T, args ...string) (string, int, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := newSweepK8sCmd(&stdout, &stderr)
	cmd.SetArgs(args)
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	code := 0
	if err != nil {
		code = 1
		var ue *usageError
		if errors.As(err, &ue) || scenario.IsInputError(err) {
			code = 2
		}
	}
	return stdout.String(), code, err
}

func writeGridFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	f := filepath.Join(dir, name)
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSweepK8sRenders(t *testing.T) {
	dir := t.TempDir()
	grid := writeGridFile(t, dir, "grid.yaml", "name: llama70b-h100\nscenario: base.yaml\naxes: {tensor-parallel-size: [2, 4]}\n")
	writeGridFile(t, dir, "base.yaml", "model: llama-3.1-70b\nhardware: h100\n")
	out, _, err := runSweepK8s(t, grid, "--image", "registry.example.com/blis:v1", "--shards", "16", "--pvc", "sweeps",
		"--cpu", "4", "--memory", "8Gi", "--namespace", "capacity", "--ttl", "1h")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kind: ConfigMap", "grid.yaml: |", "base.yaml: |", "model: llama-3.1-70b",
		"kind: Job", "name: llama70b-h100\n", "namespace: capacity", "completionMode: Indexed", "completions: 16", "parallelism: 8",
		"image: registry.example.com/blis:v1", "- /results/llama70b-h100/shard-$(JOB_COMPLETION_INDEX)", "claimName: sweeps",
		"cpu: \"4\"", "memory: 8Gi", "ttlSecondsAfterFinished: 3600",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The same inputs give the same bytes.
	again, _, _ := runSweepK8s(t, grid, "--image", "registry.example.com/blis:v1", "--shards", "16", "--pvc", "sweeps",
		"--cpu", "4", "--memory", "8Gi", "--namespace", "capacity", "--ttl", "1h")
	if again != out {
		t.Error("two renderings differ")
	}

	pod, _, err := runSweepK8s(t, grid, "--pvc", "sweeps", "--copy-pod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pod, "kind: Pod") || !strings.Contains(pod, "name: llama70b-h100-results") || strings.Contains(pod, "kind: Job") {
		t.Errorf("copy pod:\n%s", pod)
	}
}

func TestSweepK8sErrors(t *testing.T) {
	dir := t.TempDir()
	grid := writeGridFile(t, dir, "grid.yaml", "name: g\naxes: {max-num-seqs: [64]}\n")
	noScenario := writeGridFile(t, dir, "s.yaml", "name: s\nscenario: missing.yaml\n")
	list := writeGridFile(t, dir, "list.yaml", "- a\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no grid", []string{"--pvc", "p"}, "sweep k8s takes one grid file, got 0 arguments"},
		{"two grids", []string{grid, grid, "--pvc", "p"}, "got 2 arguments"},
		{"missing grid", []string{filepath.Join(dir, "nope.yaml"), "--pvc", "p"}, "nope.yaml: cannot read the grid: no such file or directory"},
		{"grid is a folder", []string{dir, "--pvc", "p"}, "cannot read the grid: is a directory"},
		{"grid not a mapping", []string{list, "--pvc", "p"}, "list.yaml:1: a grid is a mapping with the keys"},
		{"missing scenario", []string{noScenario, "--pvc", "p"}, `s.yaml:2: scenario "missing.yaml": cannot read the scenario file: no such file or directory`},
		{"no volume", []string{grid}, "--pvc: give the ReadWriteMany claim"},
		{"zero shards", []string{grid, "--pvc", "p", "--shards", "0"}, `--shards "0": allowed: 1 to 100000`},
		{"bad quantity", []string{grid, "--pvc", "p", "--memory", "lots"}, `--memory "lots": a positive Kubernetes quantity`},
		{"bad name", []string{grid, "--pvc", "p", "--name", "My_Sweep"}, `--name "My_Sweep": not a DNS-1123 label`},
		{"negative ttl", []string{grid, "--pvc", "p", "--ttl", "-1h"}, "--ttl -1h0m0s: allowed: 0 or more"},
		{"unknown flag", []string{grid, "--pvc", "p", "--gpus", "8"}, "unknown flag: --gpus"},
		{"bad int", []string{grid, "--pvc", "p", "--shards", "many"}, `invalid argument "many"`},
		{"copy pod without claim", []string{grid, "--results-volume", "emptyDir", "--copy-pod"}, "--copy-pod: needs --pvc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code, err := runSweepK8s(t, tc.args...)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if code != 2 {
				t.Errorf("exit %d, want 2 (bad input): %v", code, err)
			}
			if out != "" {
				t.Errorf("printed on error:\n%s", out)
			}
		})
	}
}
