package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every bound aggregate of BLIS's own exports recomputes to the value
// written, bit for bit where the file keeps full precision.
func TestRecomputeAggregatesOwnExports(t *testing.T) {
	dir, _, _ := exportTo(t, FormatAIPerf, FormatVLLM, FormatGuideLLM, FormatLLMD)
	for _, c := range []struct{ format, path string }{
		{FormatAIPerf, dir},
		{FormatVLLM, filepath.Join(dir, VLLMResultFile)},
		{FormatGuideLLM, filepath.Join(dir, GuideLLMReportFile)},
	} {
		run, err := Read(c.format, c.path)
		if err != nil {
			t.Fatal(err)
		}
		rs := RecomputeAggregates(run)
		if len(rs) < 10 {
			t.Errorf("%s: %d aggregates recomputed", c.format, len(rs))
		}
		for _, r := range rs {
			// Exact but for float rounding, except where the file keeps
			// less: guidellm's Unix-second floats (0.24 µs near 2026) and
			// the ITL sketch behind BLIS's vLLM ITL percentiles.
			rel := 1e-9
			switch {
			case c.format == FormatGuideLLM:
				rel = 1e-5
			case c.format == FormatVLLM && strings.HasSuffix(r.Name, "_itl_ms") && !strings.HasPrefix(r.Name, "mean"):
				rel = DefaultRelativeAccuracy
			}
			if d := r.Recomputed - r.Published; d > rel*max(1, r.Published) || d < -rel*max(1, r.Published) {
				t.Errorf("%s %s: published %v, recomputed %v", c.format, r.Name, r.Published, r.Recomputed)
			}
		}
	}
	// Aggregates only: nothing to recompute.
	run, err := Read(FormatLLMD, filepath.Join(dir, LLMDReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if rs := RecomputeAggregates(run); rs != nil {
		t.Errorf("llm-d: %d recomputed", len(rs))
	}
}

// Warm-up records are left out of ReadAIPerf and read by
// ReadAIPerfWarmups.
func TestReadAIPerfWarmups(t *testing.T) {
	dir, _, _ := exportTo(t, FormatAIPerf)
	p := filepath.Join(dir, AIPerfRecordsFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	first := data[:bytes.IndexByte(data, '\n')+1]
	warm := bytes.Replace(first, []byte(`"benchmark_phase":"profiling"`), []byte(`"benchmark_phase":"warmup"`), 1)
	if bytes.Equal(warm, first) {
		t.Fatal("no benchmark_phase in the record")
	}
	before, err := ReadAIPerf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(warm, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := ReadAIPerf(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadAIPerfWarmups(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Requests) != len(before.Requests) || len(w) != 1 || w[0].ID != before.Requests[0].ID {
		t.Errorf("%d profiling records (was %d), warm-ups %+v", len(after.Requests), len(before.Requests), w)
	}
	if _, err := ReadAIPerfWarmups(filepath.Join(dir, "missing")); err == nil {
		t.Error("no error for a missing directory")
	}
}
