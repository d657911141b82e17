package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Small, fast scenario flags for tests.
var small = []string{"--num-prompts", "40", "--random-input-len", "256", "--random-output-len", "16"}

func TestDefaultRunPrintsVLLMTable(t *testing.T) {
	code, out, errOut := runCLI(t, append([]string{"run"}, small...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"============ Serving Benchmark Result ============", "Successful requests:                     40",
		"Mean TTFT (ms):", "Mean TPOT (ms):", "Mean ITL (ms):"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "GPU KV cache size:") || !strings.Contains(errOut, "Maximum concurrency for 131,072 tokens per request:") {
		t.Errorf("stderr lacks vLLM's start-up lines:\n%s", errOut)
	}
}

func TestExitCodesAndMessages(t *testing.T) {
	dir := t.TempDir()
	badYAML := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badYAML, []byte("model: qwen3-32b\nmax-num-seq: 8\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"run", "--request-rate", "0"}, 2, "--request-rate"},
		{[]string{"run", "--request-rate", "-2"}, 2, "must be > 0"},
		{[]string{"run", "--num-prompts", "-1"}, 2, "--num-prompts"},
		{[]string{"run", "--max-concurrency", "-1"}, 2, "--max-concurrency"},
		{[]string{"run", "-dp", "0"}, 2, "--data-parallel-size"},
		{[]string{"run", "-tp", "3", "--model", "meta-llama/Llama-3.1-70B", "--hardware", "h200"}, 2, "does not divide num_attention_heads 64"},
		{[]string{"run", "--model", "meta-llama/Llama-3.1-70B"}, 2, "does not fit"},
		{[]string{"run", "--model", "llama-3.1-7b"}, 2, "did you mean"},
		{[]string{"run", "--hardware", "tpu-v9"}, 2, "known chips"},
		{[]string{"run", "--random-range-ratio", "1.5"}, 2, "--random-range-ratio"},
		{[]string{"run", badYAML}, 2, "bad.yaml:2: max-num-seq: unknown key; did you mean max-num-seqs"},
		{[]string{"run", filepath.Join(dir, "missing.yaml")}, 2, "cannot read the scenario"},
		{[]string{"run", "a.yaml", "b.yaml"}, 2, "at most one scenario file"},
		{[]string{"nonsense"}, 2, "unknown command"},
	}
	for _, c := range cases {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q (want %q)", c.args, code, c.code, errOut, c.want)
		}
	}
}

func TestSavedResultIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	read := func(name string) []byte {
		args := append([]string{"run", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", name,
			"--request-rate", "20", "--random-range-ratio", "0.5", "--seed", "7",
			"--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99"}, small...)
		if code, _, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := read("a.json"), read("b.json")
	if !bytes.Equal(a, b) {
		t.Fatal("same scenario and seed gave different result files")
	}
	for _, key := range []string{`"duration"`, `"completed"`, `"total_input_tokens"`, `"request_throughput"`, `"output_throughput"`,
		`"total_token_throughput"`, `"max_concurrent_requests"`, `"mean_ttft_ms"`, `"median_tpot_ms"`, `"p99_itl_ms"`, `"p90_e2el_ms"`,
		`"std_ttft_ms"`, `"gpu_kv_cache_tokens"`, `"num_preemptions"`, `"prefix_cache_hit_rate"`, `"mean_batch_size"`, `"deployment"`,
		`"step_launch_share"`, `"input_lens"`, `"itls"`} {
		if !bytes.Contains(a, []byte(key)) {
			t.Errorf("result JSON lacks %s", key)
		}
	}
	if c := read("c.json"); bytes.Equal(a, c) == false {
		t.Fatal("third run differs")
	}
}

func TestScenarioFileFlagsOverrideAndDryRun(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "s.yaml")
	os.WriteFile(f, []byte("model: qwen3-32b\nhardware: h200\ntensor-parallel-size: 2\nmax-model-len: 8192\n"), 0o644)
	code, out, errOut := runCLI(t, "run", f, "--dry-run", "-tp=4", "--no-enable-prefix-caching", "--num_gpu_blocks_override", "5000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Qwen/Qwen3-32B on h200, TP 4", "KV pool: 5000 blocks, 80,000 tokens (--num-gpu-blocks-override)", "weights",
		"Step price per operator, ms (decode: 256 rows at 1,024-token context; prefill: one 8,191-token prompt)", "qkv_proj", "step total"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Serving Benchmark Result") {
		t.Error("dry run simulated")
	}
}

// Outside one full CUDA graph a step pays the GPU gaps between one graph
// (or eager kernels) per decoder layer; the dry run's step price shows them
// (64 layers × 7 µs for Qwen3-32B). Under FULL the decode step is one graph
// and pays none; the 8,191-token prefill exceeds the capture sizes and runs
// eagerly under either mode.
func TestDryRunShowsPiecewiseGaps(t *testing.T) {
	for _, tc := range []struct {
		mode, want string
		gaps       bool
	}{
		{`{"cudagraph_mode":"PIECEWISE"}`, "launch       0.448     0.448", true},
		{`{"cudagraph_mode":"FULL"}`, "launch       0.000     0.448", true},
	} {
		code, out, errOut := runCLI(t, "run", "--model", "qwen3-32b", "--hardware", "h100", "--max-model-len", "4096",
			"--max-num-seqs", "64", "--compilation-config", tc.mode, "--dry-run")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.mode, code, errOut)
		}
		if strings.Contains(out, tc.want) != tc.gaps {
			t.Errorf("%s: want line %q present=%v:\n%s", tc.mode, tc.want, tc.gaps, out)
		}
	}
}

func TestNormalizeArgs(t *testing.T) {
	got := normalizeArgs([]string{"-tp", "2", "-tp=4", "-dp", "2", "-dp=3", "--max_num_seqs=8", "--random_input_len", "5", "x_y.yaml", "--", "--a_b"})
	want := []string{"--tensor-parallel-size", "2", "--tensor-parallel-size=4", "--data-parallel-size", "2", "--data-parallel-size=3",
		"--max-num-seqs=8", "--random-input-len", "5", "x_y.yaml", "--", "--a_b"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	// vLLM's several-word flags become one flag per word; a word of
	// another shape (a scenario file) or a flag ends the list.
	got = normalizeArgs([]string{"--goodput", "ttft:1", "tpot:2", "s.yaml", "--metadata", "a=1", "b=2", "--seed", "3", "--metadata", "odd"})
	want = []string{"--goodput", "ttft:1", "--goodput", "tpot:2", "s.yaml", "--metadata", "a=1", "--metadata", "b=2", "--seed", "3", "--metadata", "odd"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestExportWritesEveryFormat(t *testing.T) {
	dir := t.TempDir()
	args := append([]string{"run", "--export", "aiperf,guidellm,llmd,vllm,inferencex,inference-perf", "--export-dir", dir}, small...)
	if code, _, errOut := runCLI(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, f := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "profile_export_aiperf.csv",
		"benchmarks.json", "benchmark_report_v0.2.yaml", "vllm_bench_result.json", "inferencex_agg.json",
		"per_request_lifecycle_metrics.json", "summary_lifecycle_metrics.json", "stage_0_lifecycle_metrics.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if code, _, errOut := runCLI(t, "run", "--export", "csv"); code != 2 || !strings.Contains(errOut, "allowed:") {
		t.Fatalf("bad format: exit %d, %s", code, errOut)
	}
}

func TestMooncakeTraceReplay(t *testing.T) {
	code, out, errOut := runCLI(t, "run", "--input-file", "../../workload/testdata/mooncake_conversation_head200.jsonl",
		"--custom-dataset-type", "mooncake_trace", "--fixed-schedule")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "Successful requests:                     200") || strings.Contains(out, "Maximum request concurrency") {
		t.Fatalf("a trace replays every record with no cap from the default scenario:\n%s", out)
	}
}

// Data parallel: every DP rank logs its own KV pool as vLLM's engine cores
// do, and the run is byte-identical twice.
func TestRunDataParallel(t *testing.T) {
	args := append([]string{"run", "--model", "qwen3-30b-a3b", "-dp", "2", "--enable-expert-parallel", "--max-model-len", "4096"}, small...)
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"(DP2 × TP1)", "(EngineCore_DP0) GPU KV cache size:", "(EngineCore_DP1) GPU KV cache size:"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if _, out2, _ := runCLI(t, args...); out2 != out {
		t.Error("two identical DP runs printed different results")
	}
}

// normalizeArgs keeps every word of the command line, in order: it only
// renames flags and repeats a several-word flag before each of its words.
func FuzzNormalizeArgs(f *testing.F) {
	f.Add("run --goodput ttft:1 tpot:2 s.yaml --metadata a=1 b=2 -tp 2 --max_num_seqs=8")
	f.Add("run -- --a_b --metadata x=y")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		out := normalizeArgs(args)
		var words []string
		for _, a := range args {
			if !strings.HasPrefix(a, "-") {
				words = append(words, a)
			}
		}
		i := 0
		for _, o := range out {
			if i < len(words) && o == words[i] {
				i++
			}
		}
		if i != len(words) {
			t.Fatalf("%q → %q lost a word", args, out)
		}
	})
}
