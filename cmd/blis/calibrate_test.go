package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/catalog"
)

// runCalibrate runs the calibrate command on its own (main.go wires it
// into the root command).
func runCalibrate(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newCalibrateCmd(&out, &errb)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCalibrateOpsWritesCoefficients(t *testing.T) {
	// A data folder with only H100's collective tables: a fast fit.
	data := t.TempDir()
	for _, rel := range []string{"comm/nccl/2.29.2/nccl_perf.parquet", "comm/vllm/0.24.0/custom_allreduce_perf.parquet"} {
		copyFile(t, filepath.Join("../../data/ops/h100_sxm", rel), filepath.Join(data, "h100_sxm", rel))
	}
	out := filepath.Join(t.TempDir(), "coeffs")
	stdout, stderr, err := runCalibrate(t, "ops", "--data", data, "--write", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"family", "h100: fit% held% rows", "comm nccl        all_reduce", "comm vllm_custom all_reduce"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "wrote "+filepath.Join(out, "h100.yaml")) {
		t.Errorf("stderr: %q", stderr)
	}
	written, err := os.ReadFile(filepath.Join(out, "h100.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.ParseCoefficients("h100.yaml", written)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Comm) != 5 || len(c.GEMM) != 0 {
		t.Errorf("fitted %d collective and %d GEMM laws from collective tables only", len(c.Comm), len(c.GEMM))
	}
	// Without --write nothing is written; the table is the same.
	again, _, err := runCalibrate(t, "ops", "--data", data, "--out", filepath.Join(t.TempDir(), "none"))
	if err != nil || again != stdout {
		t.Errorf("second run: %v, same table: %v", err, again == stdout)
	}
}

func TestCalibrateOpsBadData(t *testing.T) {
	_, _, err := runCalibrate(t, "ops", "--data", filepath.Join(t.TempDir(), "missing"))
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "not a folder of per-chip tables") {
		t.Errorf("missing --data folder: %v", err)
	}
	// A chip folder the catalog does not know.
	data := t.TempDir()
	os.MkdirAll(filepath.Join(data, "tpu_v9"), 0o755)
	if _, _, err := runCalibrate(t, "ops", "--data", data); err == nil || !strings.Contains(err.Error(), `unknown chip "tpu_v9"`) {
		t.Errorf("unknown chip folder: %v", err)
	}
}
