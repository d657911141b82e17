package scenario

import (
	"strings"
	"testing"

	"blis/kernel"
)

func TestParseEngramConfig(t *testing.T) {
	def := kernel.DefaultEngramPlacement()
	tests := []struct {
		flag string
		want *kernel.EngramPlacement
		err  string
	}{
		{"", nil, ""},
		{`{}`, &def, ""},
		{`{"cpu_offload":true}`, &def, ""},
		{`{"cpu_offload":false}`, &kernel.EngramPlacement{DPSharding: true}, ""},
		{`{"enable_engram_dp_sharding":false,"enable_engram_dp_shared_memory":true}`, &kernel.EngramPlacement{CPUOffload: true, DPSharedMemory: true}, ""},
		{`{"embedding_across_dp":true}`, &def, ""},
		{`{"cpu_offload":"no"}`, nil, "cpu_offload is no, want true or false"},
		{`{"disk_offload_dir":"/raid"}`, nil, `unknown key "disk_offload_dir" (allowed: cpu_offload, embedding_across_dp, enable_engram_dp_sharding, enable_engram_dp_shared_memory)`},
		{`[true]`, nil, "not a JSON object"},
		{`{"cpu_offload":true} {}`, nil, "not a JSON object"},
		{`null`, nil, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			got, err := parseEngramConfig(tc.flag)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--engram-config") {
					t.Fatalf("err %v, want --engram-config and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func FuzzParseEngramConfig(f *testing.F) {
	for _, s := range []string{"", `{"cpu_offload":false}`, `{"x":1}`, `[`, `{"enable_engram_dp_sharding":true}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parseEngramConfig(s)
		if err == nil && p == nil && strings.TrimSpace(s) != "" {
			t.Fatalf("%q: no placement and no error", s)
		}
	})
}
