package inferencex

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"blis/validate/score"
)

func runFixture(t *testing.T, opts Options) (*Report, string, string) {
	t.Helper()
	rep, err := Validate("inferencex_small.csv", readFixture(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	var txt, js bytes.Buffer
	if err := rep.WriteText(&txt, true); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	return rep, txt.String(), js.String()
}

// The report is byte-identical whatever the number of workers.
func TestDeterministicAcrossJobs(t *testing.T) {
	base := Options{MapOptions: MapOptions{Backend: BackendAll, EPAsTP: true}}
	o1, o4 := base, base
	o1.Jobs, o4.Jobs = 1, 4
	_, t1, j1 := runFixture(t, o1)
	rep, t4, j4 := runFixture(t, o4)
	if t1 != t4 {
		t.Errorf("text differs between --jobs 1 and 4:\n%s\n----\n%s", t1, t4)
	}
	if j1 != j4 {
		t.Error("JSON differs between --jobs 1 and 4")
	}
	if len(rep.Rows) < 6 {
		t.Errorf("only %d rows simulated", len(rep.Rows))
	}
}

func TestReportNumbers(t *testing.T) {
	rep, txt, js := runFixture(t, Options{MapOptions: defaultMap, Jobs: 2})
	if rep.Statistic != StatMedian {
		t.Errorf("statistic %q", rep.Statistic)
	}
	var all []float64
	for _, r := range rep.Rows {
		if r.TTFTms != r.BLIS.TTFTMedianMs || r.TPOTms != r.BLIS.TPOTMedianMs {
			t.Errorf("line %d: compared values are not the medians", r.Plan.Row.Line)
		}
		if want := 100 * (r.TTFTms/r.Plan.Row.TTFTms - 1); math.Abs(r.TTFTError-want) > 1e-9 {
			t.Errorf("line %d: TTFT error %v, want %v", r.Plan.Row.Line, r.TTFTError, want)
		}
		if !(r.TTFTms > 0) || !(r.TPOTms > 0) || r.BLIS.Completed != r.Plan.Scenario.NumPrompts {
			t.Errorf("line %d: %+v", r.Plan.Row.Line, r.BLIS)
		}
		all = append(all, r.TPOTError)
	}
	if got, want := rep.Overall.TPOT, score.Summarize(all); got != want {
		t.Errorf("overall TPOT %+v, want %+v", got, want)
	}
	n := 0
	for _, g := range rep.Groups {
		n += g.TTFT.N
	}
	if n != len(rep.Rows) {
		t.Errorf("groups hold %d rows, %d simulated", n, len(rep.Rows))
	}
	if len(rep.Rows)+len(rep.Skipped)+rep.Filtered != rep.Total {
		t.Errorf("rows lost")
	}
	for _, want := range []string{"Compared: BLIS median TTFT", "[llama70b-fp8-h100]", "--max-num-seqs CONC",
		"--enable-prefix-caching*", "Skipped rows: 10", "attention data parallel > 1", "line 4 kimi_b200_dp4"} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["simulated"].(float64) != float64(len(rep.Rows)) || len(doc["rows"].([]any)) != len(rep.Rows) || len(doc["skipped"].([]any)) != 10 {
		t.Errorf("JSON counts: %v %v", doc["simulated"], len(doc["skipped"].([]any)))
	}

	mean, _, _ := runFixture(t, Options{MapOptions: defaultMap, Statistic: StatMean})
	for _, r := range mean.Rows {
		if r.TTFTms != r.BLIS.TTFTMeanMs || r.TPOTms != r.BLIS.TPOTMeanMs {
			t.Errorf("--statistic mean: line %d compares %v, mean is %v", r.Plan.Row.Line, r.TTFTms, r.BLIS.TTFTMeanMs)
		}
	}
}

func TestLimitAndOptions(t *testing.T) {
	rep, _, _ := runFixture(t, Options{MapOptions: defaultMap, Limit: 2})
	if len(rep.Rows) != 2 {
		t.Errorf("--limit 2 simulated %d rows", len(rep.Rows))
	}
	limited := 0
	for _, s := range rep.Skipped {
		if s.Reason == ReasonLimit {
			limited++
		}
	}
	if limited == 0 {
		t.Error("rows beyond --limit are not listed")
	}
	if _, err := Validate("x", nil, Options{Statistic: "p99"}); err == nil {
		t.Error("statistic p99 accepted")
	}
	if _, err := Validate("x", nil, Options{Limit: -1}); err == nil {
		t.Error("limit -1 accepted")
	}
	rep, err := Validate("x", nil, Options{})
	if err != nil || len(rep.Rows) != 0 {
		t.Errorf("empty file: %v %v", rep, err)
	}
}

func TestRegimeStats(t *testing.T) {
	row := func(model string, isl, conc int, ttft, tpot float64) RowResult {
		return RowResult{Plan: &Plan{Row: &Row{ModelPath: model, ISL: isl}, Concurrency: conc}, TTFTError: ttft, TPOTError: tpot}
	}
	rows := []RowResult{
		row("b/Model", 8192, 64, -40, 5), row("b/Model", 1024, 4, -10, 2), row("b/Model", 8000, 32, -20, 1),
		row("a/Other", 1024, 128, 3, -3), row("b/Model", 1024, 1, -12, 4),
	}
	got := regimeStats(rows)
	want := []struct {
		model, isl, conc string
		n                int
		ttftSigned       float64
	}{
		{"a/Other", "1k", "65+", 1, 3},
		{"b/Model", "1k", "1-4", 2, -11},
		{"b/Model", "8k", "17-64", 2, -30},
	}
	if len(got) != len(want) {
		t.Fatalf("%d regimes, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Model != w.model || g.ISL != w.isl || g.Concurrency != w.conc || g.TTFT.N != w.n || g.TTFT.SignedMean != w.ttftSigned {
			t.Errorf("regime %d: %s %s %s n=%d signed %g, want %+v", i, g.Model, g.ISL, g.Concurrency, g.TTFT.N, g.TTFT.SignedMean, w)
		}
	}
	for _, tc := range []struct {
		isl  int
		want string
	}{{1, "1k"}, {1024, "1k"}, {1025, "2k"}, {8192, "8k"}, {9000, ">8k"}} {
		if got := islBucket(tc.isl); got != tc.want {
			t.Errorf("islBucket(%d) = %s, want %s", tc.isl, got, tc.want)
		}
	}
	for _, tc := range []struct {
		c    int
		want string
	}{{1, "1-4"}, {4, "1-4"}, {5, "5-16"}, {64, "17-64"}, {65, "65+"}} {
		if got := concBucket(tc.c); got != tc.want {
			t.Errorf("concBucket(%d) = %s, want %s", tc.c, got, tc.want)
		}
	}
}
