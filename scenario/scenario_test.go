package scenario

import (
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

func TestEmbeddedDefaultParses(t *testing.T) {
	s := Defaults()
	if err := s.ApplyYAML("default.yaml", DefaultYAML, nil); err != nil {
		t.Fatal(err)
	}
	if s.MaxConcurrency != 32 || s.RandomOutputLen != 256 {
		t.Fatalf("default scenario: %+v", s)
	}
}

func FuzzApplyYAML(f *testing.F) {
	f.Add(DefaultYAML)
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
