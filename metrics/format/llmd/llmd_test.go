package llmd

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"blis/metrics"
	"blis/metrics/format/internal/formattest"
)

// exportTo writes the report of formattest.Result into a fresh directory.
func exportTo(t *testing.T) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	b, err := Encode(res, &run)
	if err != nil {
		t.Fatal(err)
	}
	return formattest.Dir(t, map[string][]byte{ReportFile: b}), res, run
}

func TestRoundTrip(t *testing.T) {
	dir, res, _ := exportTo(t)
	path := filepath.Join(dir, ReportFile)
	m, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	const agg = "results.request_performance.aggregate."
	check := func(name, unit string, want float64) {
		t.Helper()
		got, ok := m.Metric(agg + name)
		if !ok || got.Value != want || got.Unit != unit {
			t.Errorf("%s = %v %q (%v), want %v %q bit for bit", name, got.Value, got.Unit, ok, want, unit)
		}
	}
	check("requests.total", "count", float64(res.Completed+res.Failed))
	check("requests.failures", "count", float64(res.Failed))
	check("throughput.output_token_rate.mean", "tokens/s", res.OutputThroughput)
	check("throughput.total_token_rate.mean", "tokens/s", res.TotalTokenThroughput)
	check("throughput.request_rate.mean", "queries/s", res.RequestThroughput)
	for _, l := range []struct {
		name, unit string
		st         metrics.Stat
	}{{"time_to_first_token", "ms", res.TTFT}, {"time_per_output_token", "ms/token", res.TPOT},
		{"inter_token_latency", "ms/token", res.ITL}, {"request_latency", "ms", res.E2EL}} {
		p := "latency." + l.name + "."
		check(p+"mean", l.unit, l.st.Mean)
		check(p+"stddev", l.unit, l.st.Std)
		check(p+"p50", l.unit, l.st.Median)
		for i, q := range res.Percentiles {
			if k := llmdPctKey(q); k != "" {
				check(p+k, l.unit, l.st.Percentiles[i])
			}
		}
	}
	validateLLMD(t, path)
}

// llmdSchemaErr validates a YAML report against llm-d's v0.2 JSON schema.
func llmdSchemaErr(t *testing.T, data []byte) error {
	t.Helper()
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("report is not JSON-compatible: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	sf, err := os.Open(filepath.Join("testdata", "llmd_br_v0_2_json_schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	sdoc, err := jsonschema.UnmarshalJSON(sf)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("br_v0_2.json", sdoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("br_v0_2.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(inst)
}

func validateLLMD(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := llmdSchemaErr(t, data); err != nil {
		t.Errorf("%s does not validate against llm-d's v0.2 schema: %v", path, err)
	}
}

func TestSchemaRejectsABrokenReport(t *testing.T) {
	// The validator can fail: an unknown unit, a missing run uid and a
	// malformed start time are each refused.
	dir, _, _ := exportTo(t)
	data, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	for _, c := range [][2]string{
		{"units: queries/s", "units: requests/minute"},
		{"  uid:", "  uuid:"},
		{"start: \"20", "start: \"yesterday 20"},
	} {
		bad := bytes.Replace(data, []byte(c[0]), []byte(c[1]), 1)
		if bytes.Equal(bad, data) {
			t.Fatalf("report has no %q", c[0])
		}
		if llmdSchemaErr(t, bad) == nil {
			t.Errorf("%q → %q validated", c[0], c[1])
		}
	}
}

func TestReadExample(t *testing.T) {
	m, err := Read(filepath.Join("testdata", "llmd_br_v0_2_example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := m.Metric("results.request_performance.aggregate.latency.time_to_first_token.p50")
	if !ok || got.Value != 0.03622930939309299 || got.Unit != "s" {
		t.Errorf("ttft p50 %+v %v", got, ok)
	}
	if got, ok := m.Metric("results.request_performance.aggregate.requests.total"); !ok || got.Value != 500 {
		t.Errorf("requests.total %+v", got)
	}
}

// The reader names the file, line, path, what it found and what it wants.
func TestReadErrorsNameFileLineAndPath(t *testing.T) {
	dir, _, _ := exportTo(t)
	formattest.ReadErrors(t, func(p string) error { _, err := Read(p); return err },
		formattest.BadFile{What: "version", Path: formattest.Mutate(t, dir, ReportFile, `version: "0.2"`, `version: "0.3"`, 1),
			Want: []string{ReportFile + ":", "$.version", "0.2"}},
		formattest.BadFile{What: "number", Path: formattest.Mutate(t, dir, ReportFile, "results:", "results: 7\nx:", 1),
			Want: []string{ReportFile + ":", "want a mapping"}})
}

// A run without requests, and one summarised without per-request gaps,
// still give reports that validate and read back.
func TestEdgeCasesValidate(t *testing.T) {
	for name, res := range map[string]*metrics.Result{"empty": formattest.Empty(t), "plain": formattest.Plain(t)} {
		b, err := Encode(res, &metrics.RunInfo{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p := formattest.WriteFile(t, t.TempDir(), ReportFile, b)
		validateLLMD(t, p)
		if _, err := Read(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPyYAMLFloat(t *testing.T) {
	for x, want := range map[float64]string{1e16: "1.0e+16", 2.5e-7: "2.5e-07", 0.5: "0.5", 3: "3.0",
		math.Inf(1): ".inf", math.Inf(-1): "-.inf"} {
		if got := pyYAMLFloat(x); got != want {
			t.Errorf("pyYAMLFloat(%v) = %s, want %s", x, got, want)
		}
	}
	if got := pyYAMLFloat(math.NaN()); got != ".nan" {
		t.Errorf("pyYAMLFloat(NaN) = %s", got)
	}
}
