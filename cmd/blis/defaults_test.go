package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// One set of defaults: no file, an empty file and a file naming only the
// model give the same load, with vllm bench serve's defaults (128 output
// tokens, no concurrency cap).
func TestDefaultsDoNotDependOnHowBLISRuns(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o644)
	model := filepath.Join(dir, "model.yaml")
	os.WriteFile(model, []byte("model: meta-llama/Llama-3.1-8B\n"), 0o644)
	result := func(args ...string) string {
		t.Helper()
		name := filepath.Join(dir, "r.json")
		args = append([]string{"run", "--num-prompts", "30", "--save-result", "--result-filename", name}, args...)
		if code, _, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	base := result()
	for _, args := range [][]string{{empty}, {model}, {"--model", "llama-3.1-8b"}} {
		if got := result(args...); got != base {
			t.Errorf("%v gives a different run than no arguments", args)
		}
	}
	for _, want := range []string{`"max_concurrency": null`, `"total_output_tokens": 3840`, `"num_prompts": 30`} {
		if !strings.Contains(base, want) {
			t.Errorf("default run lacks %s:\n%s", want, base)
		}
	}
}

// num_prompts is the count of timed requests when --num-prompts is left at
// 0, as vLLM writes its real --num-prompts: 1000 for random, every record of
// a trace.
func TestNumPromptsIsTheRealCount(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--random-input-len", "64", "--random-output-len", "4"}, `"num_prompts": 1000`},
		{[]string{"--input-file", "../../workload/testdata/mooncake_conversation_head200.jsonl", "--custom-dataset-type", "mooncake_trace"}, `"num_prompts": 200`},
	} {
		name := filepath.Join(dir, "r.json")
		args := append([]string{"run", "--save-result", "--result-filename", name}, tc.args...)
		if code, _, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		b, _ := os.ReadFile(name)
		if !strings.Contains(string(b), tc.want) {
			t.Errorf("%v: result lacks %s", tc.args, tc.want)
		}
	}
}

// The run command's help states the true default run.
func TestRunHelpStatesTheDefaultRun(t *testing.T) {
	code, out, _ := runCLI(t, "run", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := regexp.MustCompile(`meta-llama/Llama-3\.1-8B on 1× H100, serving 1000 random prompts of 1024 tokens in and 128 out,\s+sent all at once \(--request-rate inf\) with no concurrency cap`)
	if !want.MatchString(out) {
		t.Errorf("help does not state the default run:\n%s", out)
	}
}
