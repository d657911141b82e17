package format

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"blis/metrics"
	"blis/metrics/format/aiperf"
	"blis/metrics/format/guidellm"
	"blis/metrics/format/inferenceperf"
	"blis/metrics/format/inferencex"
	"blis/metrics/format/internal/formattest"
	"blis/metrics/format/llmd"
	"blis/metrics/format/vllmbench"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// exportTo exports formattest.Result in formats into a fresh directory.
func exportTo(t *testing.T, formats ...string) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	dir := t.TempDir()
	if _, err := Export(dir, formats, res, run); err != nil {
		t.Fatal(err)
	}
	return dir, res, run
}

func TestExportWritesEveryFormatDeterministically(t *testing.T) {
	res, run := formattest.Result(t)
	d1, d2 := t.TempDir(), t.TempDir()
	p1, err := Export(d1, Names(), res, run)
	if err != nil {
		t.Fatal(err)
	}
	res2, run2 := formattest.Result(t)
	p2, err := Export(d2, []string{"inference-perf", "inferencex", "LLMD", "guidellm", "aiperf", "vllm", "vllm"}, res2, run2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{vllmbench.ResultFile, aiperf.RecordsFile, aiperf.JSONFile, aiperf.CSVFile, guidellm.ReportFile, llmd.ReportFile, inferencex.ResultFile,
		inferenceperf.PerRequestFile, inferenceperf.SummaryFile, "stage_0_lifecycle_metrics.json"}
	if len(p1) != len(want) || len(p2) != len(want) {
		t.Fatalf("wrote %v and %v, want %v", p1, p2, want)
	}
	for i, name := range want {
		if filepath.Base(p1[i]) != name {
			t.Errorf("file %d is %s, want %s", i, p1[i], name)
		}
		a, _ := os.ReadFile(p1[i])
		b, _ := os.ReadFile(p2[i])
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s: not byte-identical across runs (%d vs %d bytes)", name, len(a), len(b))
		}
		golden := filepath.Join("testdata", "export", name+".golden")
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, a, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		g, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(a, g) {
			t.Errorf("%s differs from %s (run go test ./metrics/format -run Export -update, then review the diff)", name, golden)
		}
	}
}

func TestExportRejectsBadInput(t *testing.T) {
	res, run := formattest.Result(t)
	if _, err := Export(t.TempDir(), []string{"aiperf", "json"}, res, run); err == nil || !strings.Contains(err.Error(), `"json"`) {
		t.Errorf("unknown format: err %v", err)
	}
	plain := formattest.Plain(t)
	if _, err := Export(t.TempDir(), []string{"aiperf"}, plain, run); err == nil || !strings.Contains(err.Error(), "Detailed") {
		t.Errorf("aiperf without a detailed recorder: err %v", err)
	}
	if _, err := Export(t.TempDir(), []string{"inference-perf"}, plain, run); err == nil || !strings.Contains(err.Error(), "Detailed") {
		t.Errorf("inference-perf without a detailed recorder: err %v", err)
	}
	if _, err := Export(t.TempDir(), []string{"vllm", "guidellm", "llmd", "inferencex"}, plain, run); err != nil {
		t.Errorf("summary-only formats from a plain recorder: %v", err)
	}
}

func TestExportEdgeCases(t *testing.T) {
	// No requests at all, and a run summarised without per-request gaps:
	// every format still writes and reads back (llmd's test validates
	// those reports against llm-d's schema).
	for name, res := range map[string]*metrics.Result{"empty": formattest.Empty(t), "plain": formattest.Plain(t)} {
		formats := Names()
		if !res.Detailed {
			formats = slices.DeleteFunc(formats, func(f string) bool { return f == AIPerf || f == InferencePerf })
		}
		dir := t.TempDir()
		if _, err := Export(dir, formats, res, metrics.RunInfo{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range formats {
			p := dir
			switch f {
			case VLLM:
				p = filepath.Join(dir, vllmbench.ResultFile)
			case GuideLLM:
				p = filepath.Join(dir, guidellm.ReportFile)
			case LLMD:
				p = filepath.Join(dir, llmd.ReportFile)
			case InferenceX:
				p = filepath.Join(dir, inferencex.ResultFile)
			}
			m, err := Read(f, p)
			if err != nil {
				t.Errorf("%s %s: %v", name, f, err)
				continue
			}
			if f == GuideLLM && len(m.Requests) != len(res.Requests) {
				t.Errorf("%s %s: %d requests, want %d", name, f, len(m.Requests), len(res.Requests))
			}
		}
	}
}

// Every bound aggregate of BLIS's own exports recomputes to the value
// written, bit for bit where the file keeps full precision.
func TestRecomputeOwnExports(t *testing.T) {
	dir, _, _ := exportTo(t, AIPerf, VLLM, GuideLLM, LLMD)
	for _, c := range []struct{ format, path string }{
		{AIPerf, dir},
		{VLLM, filepath.Join(dir, vllmbench.ResultFile)},
		{GuideLLM, filepath.Join(dir, guidellm.ReportFile)},
	} {
		run, err := Read(c.format, c.path)
		if err != nil {
			t.Fatal(err)
		}
		rs := Recompute(run)
		if len(rs) < 10 {
			t.Errorf("%s: %d aggregates recomputed", c.format, len(rs))
		}
		for _, r := range rs {
			// Exact but for float rounding, except where the file keeps
			// less: guidellm's Unix-second floats (0.24 µs near 2026) and
			// the ITL sketch behind BLIS's vLLM ITL percentiles.
			rel := 1e-9
			switch {
			case c.format == GuideLLM:
				rel = 1e-5
			case c.format == VLLM && strings.HasSuffix(r.Name, "_itl_ms") && !strings.HasPrefix(r.Name, "mean"):
				rel = metrics.DefaultRelativeAccuracy
			}
			if d := r.Recomputed - r.Published; d > rel*max(1, r.Published) || d < -rel*max(1, r.Published) {
				t.Errorf("%s %s: published %v, recomputed %v", c.format, r.Name, r.Published, r.Recomputed)
			}
		}
	}
	// Aggregates only: nothing to recompute.
	run, err := Read(LLMD, filepath.Join(dir, llmd.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if rs := Recompute(run); rs != nil {
		t.Errorf("llm-d: %d recomputed", len(rs))
	}
}

// aiperf's injected E2E-normalised interactivity and InferenceX's agree.
func TestAIPerfAndInferenceXAgreeOnE2EInteractivity(t *testing.T) {
	dir, res, _ := exportTo(t, AIPerf)
	m, err := Read(AIPerf, dir)
	if err != nil {
		t.Fatal(err)
	}
	pt := inferencex.Compute(res, 1)
	n := 0
	for _, e := range pt.E2EInteractivity {
		if e.Key != "p75_e2e_intvty" && e.Key != "p90_e2e_intvty" {
			continue
		}
		n++
		tag := "e2e_normalized_interactivity_" + strings.TrimSuffix(e.Key, "_e2e_intvty") + ".avg"
		if got, ok := m.Metric(tag); !ok || got.Value != e.Value {
			t.Errorf("%s = %v, want %v", tag, got.Value, e.Value)
		}
	}
	if n != 2 {
		t.Errorf("%d of p75 and p90 compared", n)
	}
}

func TestReadDispatch(t *testing.T) {
	dir, _, _ := exportTo(t, InferencePerf)
	m, err := Read("Inference-Perf", dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != InferencePerf || m.Path != dir || len(m.Requests) == 0 {
		t.Errorf("format %q path %q, %d requests", m.Format, m.Path, len(m.Requests))
	}
	if _, err := Read("csv", dir); err == nil || !strings.Contains(err.Error(), `"csv": allowed: vllm, aiperf`) ||
		!strings.Contains(err.Error(), ", lmbench") {
		t.Errorf("unknown read format: %v", err)
	}
	// lmbench is read, never written.
	m, err = Read("LMBench", "lmbench/testdata/sharegpt_small.csv")
	if err != nil || m.Format != LMBench || len(m.Requests) != 3 || Recompute(m) != nil || RecomputeFormula(LMBench) != "" {
		t.Errorf("lmbench: %+v, %v", m, err)
	}
	if slices.Contains(Names(), LMBench) || !slices.Contains(ReadNames(), LMBench) {
		t.Errorf("Names %v, ReadNames %v", Names(), ReadNames())
	}
}

func TestRecomputeFormula(t *testing.T) {
	for _, f := range Names() {
		got := RecomputeFormula(f)
		if recomputed := f != LLMD && f != InferenceX; (got != "") != recomputed {
			t.Errorf("%s: formula %q", f, got)
		}
	}
}
