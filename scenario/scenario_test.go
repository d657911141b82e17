package scenario

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestApplyYAMLSetsKeysAndRespectsSkip(t *testing.T) {
	s := Defaults()
	y := []byte("model: qwen3-32b\ntensor_parallel_size: 2\nenable-prefix-caching: false\nrequest-rate: 4.5\nmetric-percentiles: [50, 99]\n")
	if err := s.ApplyYAML("x.yaml", y, func(n string) bool { return n == "request-rate" }); err != nil {
		t.Fatal(err)
	}
	if s.Model != "qwen3-32b" || s.TensorParallelSize != 2 || s.EnablePrefixCaching || len(s.MetricPercentiles) != 2 {
		t.Fatalf("got %+v", s)
	}
	if s.RequestRate != Defaults().RequestRate {
		t.Fatal("skipped key was applied")
	}
}

func TestApplyYAMLErrorsNameFileLineKey(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"max-num-seq: 4\n", "x.yaml:1: max-num-seq: unknown key; did you mean max-num-seqs"},
		{"model: a\nblock-size: big\n", `x.yaml:2: block-size "big": "big" is not an integer`},
		{"seed: 1\nseed: 2\n", "given twice (first on line 1)"},
		{"- a\n- b\n", "a scenario is a mapping"},
		{"model: {a: 1}\n", "must be a plain value"},
		{"model: [\n", "not valid YAML"},
		{"request-rate: fast\n", "not a rate"},
		{"gpu-memory-utilization: .nan\n", "not a finite number"},
		{"enforce-eager: maybe\n", "not a boolean"},
		{"model:\n", "has no value"},
	}
	for _, c := range cases {
		s := Defaults()
		err := s.ApplyYAML("x.yaml", []byte(c.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !IsInputError(err) {
			t.Errorf("%q: got %v, want %q", c.yaml, err, c.want)
		}
	}
}

// An empty scenario file changes nothing: the defaults are Defaults()
// whether or not a file is given.
func TestEmptyScenarioIsDefaults(t *testing.T) {
	for _, y := range []string{"", "# nothing\n", "---\n"} {
		s := Defaults()
		if err := s.ApplyYAML("empty.yaml", []byte(y), nil); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s, Defaults()) {
			t.Errorf("%q: %+v differs from Defaults()", y, s)
		}
	}
}

// The load defaults are vllm bench serve's (vllm/benchmarks/datasets.py
// add_dataset_parser and serve.py add_cli_args).
func TestDefaultsAreVLLMBenchServe(t *testing.T) {
	d := Defaults()
	if d.RandomInputLen != 1024 || d.RandomOutputLen != 128 || d.MaxConcurrency != 0 || !math.IsInf(d.RequestRate, 1) ||
		d.Seed != 0 || d.NumWarmups != 0 || d.RandomRangeRatio != 0 || d.RandomPrefixLen != 0 || d.Burstiness != 1 {
		t.Fatalf("defaults drifted from vllm bench serve: %+v", d)
	}
}

func FuzzApplyYAML(f *testing.F) {
	f.Add([]byte("model: meta-llama/Llama-3.1-8B\nhardware: h100\nrandom-output-len: 256\nmax-concurrency: 32\n"))
	f.Add([]byte("model: x\nseed: -3\nmetric-percentiles: 1,2\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Defaults()
		err := s.ApplyYAML("f.yaml", data, nil)
		if err != nil && !IsInputError(err) {
			t.Fatalf("non-input error: %v", err)
		}
		if err == nil && s.NumPrompts <= 10000 {
			if _, err := s.Resolve(); err != nil && !IsInputError(err) {
				t.Fatalf("Resolve: non-input error: %v", err)
			}
		}
	})
}

func TestParseCompilationConfig(t *testing.T) {
	cases := []struct {
		js, want string
		mode     string
		maxCap   int
	}{
		{"", "", "", 0},
		{`{"cudagraph_mode":"PIECEWISE"}`, "", "PIECEWISE", 0},
		{`{"cudagraph_mode":"FULL_DECODE_ONLY","max_cudagraph_capture_size":2048,"pass_config":{"fuse_allreduce_rms":true}}`, "", "FULL_DECODE_ONLY", 2048},
		{`{"cudagraph_mode":"SOMETIMES"}`, "cudagraph_mode: allowed", "", 0},
		{`{"cudagraph_capture_sizes":[0,8]}`, "positive integers", "", 0},
		{`{"graph_everything":true}`, "unknown key", "", 0},
		{`[1,2]`, "not a JSON object", "", 0},
	}
	for _, c := range cases {
		cc, err := parseCompilationConfig(c.js)
		if c.want == "" {
			if err != nil || cc.Mode != c.mode || cc.MaxCaptureSize != c.maxCap {
				t.Errorf("%s: got %+v, %v", c.js, cc, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !IsInputError(err) {
			t.Errorf("%s: got %v, want %q", c.js, err, c.want)
		}
	}
}

// DeepSeek sparse attention runs with 64-token blocks whatever --block-size
// asks (vLLM forces it when the config has index_topk); other models keep
// the flag's value.
func TestDSAForcesBlockSize64(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  int
	}{{"deepseek-ai/DeepSeek-V3.2", 64}, {"deepseek-ai/DeepSeek-V3", 16}} {
		s := Defaults()
		s.Model, s.Hardware, s.TensorParallelSize, s.MaxModelLen, s.BlockSize = tc.model, "h200", 8, 8192, 16
		r, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if r.Deployment.BlockSize != tc.want || r.Engine.BlockSize != tc.want || r.Memory.KVCache.BlockSize != tc.want {
			t.Errorf("%s: block size %d / %d / %d, want %d", tc.model, r.Deployment.BlockSize, r.Engine.BlockSize, r.Memory.KVCache.BlockSize, tc.want)
		}
	}
}

// --step-model auto falls back to the roofline only for a chip without
// fitted coefficients, and says so; other failures are errors.
func TestAutoStepModelFallback(t *testing.T) {
	s := Defaults()
	s.Hardware = "a100"
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if r.Pricer.Name() != "roofline-v1" || !slices.Contains(r.Notes, "INFO step model roofline-v1: no fitted kernel coefficients for a100") {
		t.Fatalf("pricer %s, notes %q", r.Pricer.Name(), r.Notes)
	}
	s.StepModel = "fitted"
	if _, err := s.Resolve(); err == nil || !IsInputError(err) || !strings.Contains(err.Error(), "no fitted kernel coefficients") {
		t.Fatalf("--step-model fitted on a100: %v", err)
	}
	d := Defaults()
	r, err = d.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	dep := r.Deployment
	m := *dep.Model
	m.ID = "test/no-graph"
	dep.Model = &m
	if _, _, err := newPricer("auto", dep); err == nil || !strings.Contains(err.Error(), "--step-model") {
		t.Fatalf("auto with a model lacking a graph: %v", err)
	}
}
