package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/scenario"
)

const validateFixture = "../../validate/internal/fixture/testdata/inferencex_small.csv"

func runValidate(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := newValidateCmd(&out, &errb)
	cmd.SetArgs(normalizeArgs(args))
	cmd.SetOut(&errb)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

func TestValidateInferenceXDeterministicAcrossJobs(t *testing.T) {
	dir := t.TempDir()
	j1, j4 := filepath.Join(dir, "j1.json"), filepath.Join(dir, "j4.json")
	out1, err1, err := runValidate(t, "inferencex", validateFixture, "--backend", "all", "--jobs", "1", "--json", j1)
	if err != nil {
		t.Fatalf("%v\n%s", err, err1)
	}
	out4, _, err := runValidate(t, "inferencex", validateFixture, "--backend", "all", "--jobs", "4", "--json", j4)
	if err != nil {
		t.Fatal(err)
	}
	if out1 != out4 {
		t.Errorf("stdout differs between --jobs 1 and 4:\n%s\n----\n%s", out1, out4)
	}
	b1, _ := os.ReadFile(j1)
	b4, _ := os.ReadFile(j4)
	if len(b1) == 0 || !bytes.Equal(b1, b4) {
		t.Error("JSON differs between --jobs 1 and 4 (or is empty)")
	}
	var doc struct {
		Simulated int `json:"simulated"`
		Rows      []struct {
			TTFTError float64 `json:"ttft_error_pct"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b1, &doc); err != nil || doc.Simulated == 0 || len(doc.Rows) != doc.Simulated {
		t.Errorf("JSON: %v, %+v", err, doc)
	}
	for _, want := range []string{"Per row (times in ms):", "Error per (model, chip, backend)", "sglang→vllm", "Skipped rows:"} {
		if !strings.Contains(out1, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(err1, "Simulated ") || !strings.Contains(err1, "Report written to") {
		t.Errorf("stderr: %s", err1)
	}
}

func TestValidateInferenceXFilters(t *testing.T) {
	out, _, err := runValidate(t, "inferencex", validateFixture, "--hardware", "h100", "--model", "llama", "--statistic", "mean")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Compared: BLIS mean TTFT") || !strings.Contains(out, "13 filtered out") {
		t.Errorf("stdout:\n%s", out)
	}
}

func TestValidateInferenceXBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("id,oops\n"), 0o644)
	cases := []struct {
		args  []string
		input bool // a *scenario.InputError (exit 2)
		usage bool // a usageError (exit 2)
		want  string
	}{
		{[]string{"inferencex", bad}, true, false, "bad.csv:1: header"},
		{[]string{"inferencex", filepath.Join(dir, "none.csv")}, true, false, "cannot read"},
		{[]string{"inferencex"}, false, true, "takes one CSV file"},
		{[]string{"inferencex", validateFixture, "--statistic", "p99"}, false, true, "--statistic"},
		{[]string{"inferencex", validateFixture, "--backend", "tgi"}, false, true, "--backend"},
		{[]string{"inferencex", validateFixture, "--limit", "-1"}, false, true, "--limit"},
	}
	for _, c := range cases {
		_, _, err := runValidate(t, c.args...)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		var ue *usageError
		if c.input != scenario.IsInputError(err) || c.usage != errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %T %v", c.args, err, err)
		}
	}
}
