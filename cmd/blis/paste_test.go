package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A `vllm bench serve` command line pastes into `blis run`: every flag
// parses, those with a meaning in a simulation are honoured (backend,
// label, metadata, goodput, the generic lengths), and each one without is
// named once on stderr.
func TestPastedVLLMBenchServeCommand(t *testing.T) {
	dir := t.TempDir()
	cmd := `vllm bench serve --backend vllm --model meta-llama/Llama-3.1-8B --endpoint /v1/completions
		--host 127.0.0.1 --port 8000 --dataset-name random --input-len 256 --output-len 16
		--num-prompts 40 --max-concurrency 8 --request-rate inf --ignore-eos --seed 1
		--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,90,99
		--goodput ttft:2000 tpot:50 --label my-run --metadata tp=1 hw=h100
		--temperature 0 --trust-remote-code --disable-tqdm --header x-a=1 x-b=2
		--save-result --result-dir ` + dir + ` --result-filename out.json`
	args := strings.Fields(cmd)[3:]
	code, out, errOut := runCLI(t, append([]string{"run"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Successful requests:                     40") || !strings.Contains(out, "Request goodput (req/s):") {
		t.Errorf("table:\n%s", out)
	}
	for _, flag := range []string{"--host", "--port", "--temperature", "--trust-remote-code", "--disable-tqdm", "--header"} {
		if n := strings.Count(errOut, "INFO "+flag+" has no effect in a simulation: "); n != 1 {
			t.Errorf("stderr names %s %d times:\n%s", flag, n, errOut)
		}
	}
	if strings.Contains(errOut, "--endpoint has no effect") {
		t.Error("the default --endpoint is reported")
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	res := string(b)
	for _, want := range []string{`"backend": "vllm"`, `"endpoint_type": "vllm"`, `"label": "my-run"`, `"tp": "1"`, `"hw": "h100"`,
		`"request_goodput": `, `"total_input_tokens": 10240`, `"total_output_tokens": 640`} {
		if !strings.Contains(res, want) {
			t.Errorf("result lacks %s", want)
		}
	}
}

// vLLM's checks on the pasted flags, with vLLM's messages.
func TestBenchServeFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--goodput", "ttft=5"}, "invalid format found for service level objectives"},
		{[]string{"--goodput", "ttft:5", "itl:3"}, "invalid metric name found"},
		{[]string{"--goodput", "ttft:-5"}, "should be non-negative"},
		{[]string{"--metadata", "novalue"}, "please use KEY=VALUE format"},
		{[]string{"--backend", "openai-embeddings"}, "backend for embeddings; BLIS simulates text generation"},
		{[]string{"--backend", "tgi"}, "allowed: vllm, openai, openai-chat"},
		{[]string{"--backend", "openai-chat"}, "must end with chat/completions"},
		{[]string{"--port", "eighty"}, `"eighty" is not an integer`},
		{[]string{"--input-len", "-3"}, "--input-len"},
	} {
		code, _, errOut := runCLI(t, append([]string{"run", "--dry-run"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

// --input-len and --output-len override the dataset-specific lengths, as in
// vLLM; --output-len reaches sharegpt too.
func TestGenericLengthsOverride(t *testing.T) {
	code, out, errOut := runCLI(t, "run", "--num-prompts", "10", "--random-input-len", "999", "--input-len", "100", "--output-len", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Total input tokens:                      1000") || !strings.Contains(out, "Total generated tokens:                  70") {
		t.Errorf("lengths not overridden:\n%s", out)
	}
}
