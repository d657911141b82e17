package catalog

import (
	"io/fs"
	"strings"
	"testing"
	"time"
)

func TestLookupStackVLLM(t *testing.T) {
	s, err := LookupStack("vLLM")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want time.Duration
		source    string // a word the source must name
	}{
		{"HostPiecewisePerLayer", s.HostPiecewisePerLayer, 75 * time.Microsecond, "vllm#47089"},
		{"PiecewiseGapPerLayer", s.PiecewiseGapPerLayer, 7 * time.Microsecond, "vllm#47089"},
		{"FrontendLatency", s.FrontendLatency, 10200 * time.Microsecond, "vllm#54628"},
		{"HostStepGraphed", s.HostStepGraphed, 400 * time.Microsecond, "assumption"},
		{"HostStepEager", s.HostStepEager, 1500 * time.Microsecond, "assumption"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
		if !strings.Contains(s.Sources[tc.name], tc.source) {
			t.Errorf("%s's source %q does not name %q", tc.name, s.Sources[tc.name], tc.source)
		}
	}
	if s.CustomAllReduceMaxBytes != 8<<20 {
		t.Errorf("CustomAllReduceMaxBytes = %g", s.CustomAllReduceMaxBytes)
	}
	s.Sources["FrontendLatency"] = "changed"
	again, _ := LookupStack("vllm")
	if again.Sources["FrontendLatency"] == "changed" {
		t.Error("LookupStack returned shared state")
	}
	if _, err := LookupStack("sglang"); err == nil || !strings.Contains(err.Error(), "known: vllm") {
		t.Errorf("unknown stack: %v", err)
	}
}

func TestParseStackStrict(t *testing.T) {
	data, err := fs.ReadFile(stackFS, "stacks/vllm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	good := string(data)
	tests := []struct {
		name, data string
		want       []string
	}{
		{"unknown key", good + "\nturbo: true\n", []string{"s.yaml", "turbo"}},
		{"missing value", strings.Replace(good, "  value: 75e-6\n", "", 1), []string{`"host_piecewise_per_layer_s"`, "missing value"}},
		{"missing source", good[:strings.Index(good, "frontend_latency_s:")] + "frontend_latency_s:\n  value: 0.01\n", []string{`"frontend_latency_s"`, "missing source"}},
		{"negative", strings.Replace(good, "value: 7e-6", "value: -7e-6", 1), []string{`"piecewise_gap_per_layer_s"`, "outside"}},
		{"upper-case name", strings.Replace(good, "name: vllm", "name: VLLM", 1), []string{`"name"`}},
		{"empty", "", []string{"empty file"}},
	}
	if _, err := ParseStack("s.yaml", data); err != nil {
		t.Fatalf("the embedded vllm.yaml does not parse: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseStack("s.yaml", []byte(tt.data))
			if err == nil {
				t.Fatalf("no error; got %+v", s)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzParseStack(f *testing.F) {
	data, _ := fs.ReadFile(stackFS, "stacks/vllm.yaml")
	f.Add(data)
	f.Add([]byte("name: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseStack("fuzz.yaml", data)
		if err != nil {
			return
		}
		if s.HostStepGraphed < 0 || s.FrontendLatency < 0 || s.CustomAllReduceMaxBytes < 0 || len(s.Sources) != 10 {
			t.Fatalf("accepted %+v", s)
		}
	})
}
