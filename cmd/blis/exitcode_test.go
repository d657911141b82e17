package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// One exit-code rule: a content error in any user file (trace, dataset,
// scenario) or a bad flag exits 2 with the file, line, key and value.
func TestContentErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		return p
	}
	mc := write("mc.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n{\"timestamp\": 1, \"input_length\": -5, \"output_length\": 5}\n")
	az := write("az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,x,12\n")
	ss := write("s.jsonl", "{\"session_id\": \"a\", \"turns\": [{\"input_tokens\": 1.5, \"output_tokens\": 2}]}\n")
	sg := write("sg.json", `[{"conversations": 5}]`)
	bin := write("bin.jsonl", "\x01\x02\xff\xfe\x1b[31m,\x00\x80\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-file", mc, "--custom-dataset-type", "mooncake_trace"}, `mc.jsonl:2: "input_length": -5: must be an integer`},
		{[]string{"--dataset-name", "azure", "--dataset-path", az}, "az.csv:3: ContextTokens: x: must be an integer"},
		{[]string{"--dataset-name", "sessions", "--dataset-path", ss}, "s.jsonl:1: "},
		{[]string{"--dataset-name", "sharegpt", "--dataset-path", sg}, `sg.json: entry 1: "conversations": must be a list of turns`},
		{[]string{"--dataset-name", "azure", "--dataset-path", bin}, "bin.jsonl:1: "},
		{[]string{"--input-file", bin, "--custom-dataset-type", "mooncake_trace"}, "bin.jsonl:1: "},
		{[]string{"--dataset-name", "sessions", "--dataset-path", bin}, "bin.jsonl:1: "},
		{[]string{"--custom-dataset-type", "bogus", "--input-file", mc}, "--custom-dataset-type bogus: must be one of"},
		{[]string{"--dataset-name", "agentic", "--agentic-num-sessions", "0"}, "--agentic-num-sessions 0: must be in"},
		{[]string{"--fixed-schedule-speedup", "0"}, `--fixed-schedule-speedup "0": must be a finite number > 0`},
		{[]string{"--fixed-schedule-speedup", "-2"}, `--fixed-schedule-speedup "-2"`},
		{[]string{"--num-prompts", "99999999999999999999"}, "is out of range: at most 9223372036854775807"},
		{[]string{"--max-num-batched-tokens", "100", "--max-num-seqs", "200"}, "max_num_batched_tokens (100) must be greater than or equal to max_num_seqs (200)"},
		{[]string{"--max-num-seqs", "10000"}, `--max-num-seqs "10000": max_num_batched_tokens (8192) must be greater than or equal to max_num_seqs (10000)`},
		{[]string{"--no-enable-chunked-prefill", "--max-num-batched-tokens", "4096", "--max-model-len", "8192"}, "max_num_batched_tokens (4096) is smaller than max_model_len (8192)"},
	} {
		code, _, errOut := runCLI(t, append([]string{"run", "--num-prompts", "5"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
		if !utf8.ValidString(errOut) || strings.ContainsFunc(errOut, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) {
			t.Errorf("%v: raw bytes on stderr: %q", c.args, errOut)
		}
	}
	// vLLM's default max-num-seqs is capped by the token budget.
	if code, _, errOut := runCLI(t, "run", "--max-num-batched-tokens", "128", "--num-prompts", "5", "--random-input-len", "64", "--random-output-len", "4"); code != 0 {
		t.Errorf("--max-num-batched-tokens 128 alone: exit %d: %s", code, errOut)
	}
}

// A filter that selects no row of an InferenceX file is an error naming it
// and the values the file has.
func TestValidateFilterSelectingNothing(t *testing.T) {
	csv := "../../data/e2e/inferencex_calibration.csv"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hardware", "tpu"}, `--hardware "tpu": selects no row; the file's systems: `},
		{[]string{"--model", "gpt-5"}, `--model "gpt-5": selects no row; the file's models: `},
		{[]string{"--backend", "trtllm", "--hardware", "tpu"}, `--hardware "tpu"`},
	} {
		code, _, errOut := runCLI(t, append([]string{"validate", "inferencex", csv}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "h100_sxm") && c.args[0] != "--model" {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
