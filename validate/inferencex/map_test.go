package inferencex

import (
	"math"
	"os"
	"strings"
	"testing"

	"blis/catalog"
	"blis/validate/internal/fixture"
)

func readFixture(t *testing.T) []Row {
	t.Helper()
	f, err := os.Open(fixture.Path("inferencex_small.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := Read("inferencex_small.csv", f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func rowByID(t *testing.T, rows []Row, id string) *Row {
	t.Helper()
	for i := range rows {
		if rows[i].ID == id {
			return &rows[i]
		}
	}
	t.Fatalf("fixture has no row %s", id)
	return nil
}

var defaultMap = MapOptions{Backend: BackendVLLM, EPAsTP: true}

func TestMapSkipReasons(t *testing.T) {
	rows := readFixture(t)
	fp4 := ReasonFP4
	if _, err := catalog.LookupModel("nvidia/Llama-3.3-70B-Instruct-FP4"); err == nil {
		fp4 = "" // the catalog gained the checkpoint: the row is simulable
	}
	dsv4 := ReasonModel
	if _, err := catalog.LookupModel("deepseek-ai/DeepSeek-V4-Flash"); err == nil {
		dsv4 = "" // the catalog models DeepSeek-V4: the row is simulable
	}
	cases := []struct {
		id, reason string
		opts       MapOptions
	}{
		{"kimi_b200_dp4", ReasonDP, defaultMap},
		{"kimi_gb200_disagg", ReasonDisagg, defaultMap},
		{"glm5_b200_tp8", ReasonPrecision, defaultMap}, // GLM-5 is in the catalog, its INT4 checkpoint is not
		{"dsv4_b200_tp8", dsv4, defaultMap},
		{"gptoss_gb300", ReasonChip, defaultMap},
		{"llama_b200_fp4", fp4, defaultMap},
		{"dsr1_sglang_b200", ReasonBackend, defaultMap},
		{"dsr1_sglang_b200", "", MapOptions{Backend: BackendAll, EPAsTP: true}},
		{"dsr1_sglang_b200", "", MapOptions{Backend: "sglang"}},
		{"llama_h100_tp4_c4", ReasonBackend, MapOptions{Backend: "sglang"}},
		{"llama_h100_pp2", ReasonPP, defaultMap},
		{"llama_h100_conc_mismatch", ReasonConcurrency, defaultMap},
		{"minimax_b200_ep8_tp4", ReasonEP, defaultMap},
		{"minimax_h100_tp4_ep4_c4", "", defaultMap},
		{"minimax_h100_tp4_ep4_c4", ReasonEPOff, MapOptions{Backend: BackendVLLM, EPAsTP: false}},
	}
	for _, c := range cases {
		p, s := MapRow(rowByID(t, rows, c.id), c.opts)
		switch {
		case c.reason == "" && s != nil:
			t.Errorf("%s: skipped (%s: %s), want simulated", c.id, s.Reason, s.Detail)
		case c.reason != "" && s == nil:
			t.Errorf("%s: simulated as %+v, want skipped: %s", c.id, p.Scenario, c.reason)
		case c.reason != "" && s.Reason != c.reason:
			t.Errorf("%s: reason %q, want %q", c.id, s.Reason, c.reason)
		}
	}
}

func TestSelectSkipsDuplicates(t *testing.T) {
	rows := readFixture(t)
	sel := Select(rows, Filter{}, defaultMap)
	found := false
	for _, s := range sel.Skipped {
		if s.Row.ID == "llama_h100_tp4_c4_again" {
			found = true
			if s.Reason != ReasonDuplicate || !strings.Contains(s.Detail, "llama_h100_tp4_c4 (line 2)") {
				t.Errorf("duplicate: %+v", s)
			}
		}
	}
	if !found {
		t.Error("the repeated row was not skipped")
	}
	if len(sel.Plans)+len(sel.Skipped)+sel.Filtered != len(rows) || sel.Total != len(rows) {
		t.Errorf("rows lost: %d plans + %d skipped + %d filtered != %d", len(sel.Plans), len(sel.Skipped), sel.Filtered, len(rows))
	}
	for i := 1; i < len(sel.Plans); i++ {
		if sel.Plans[i].Row.Line <= sel.Plans[i-1].Row.Line {
			t.Error("plans not in file order")
		}
	}
}

func TestFilter(t *testing.T) {
	rows := readFixture(t)
	count := func(f Filter) int {
		n := 0
		for i := range rows {
			if f.Keep(&rows[i]) {
				n++
			}
		}
		return n
	}
	if n := count(Filter{Hardware: "h100"}); n != 6 {
		t.Errorf("h100: %d rows, want 6", n)
	}
	if n := count(Filter{Hardware: "H100_SXM"}); n != 6 {
		t.Errorf("H100_SXM: %d rows, want 6", n)
	}
	if n := count(Filter{Model: "minimax"}); n != 4 {
		t.Errorf("minimax: %d rows, want 4", n)
	}
	if n := count(Filter{Model: "llama-3.1-70b", Hardware: "b200"}); n != 1 {
		t.Errorf("llama-3.1-70b on b200: %d rows, want 1", n)
	}
}

// The Llama-3.1-70B FP8 H100 row gets InferenceX's launch of
// nvidia/Llama-3.3-70B-Instruct-FP8 and its 2025 client (no warm-ups).
func TestMapLlamaH100(t *testing.T) {
	rows := readFixture(t)
	p, s := MapRow(rowByID(t, rows, "llama_h100_tp4_c4"), defaultMap)
	if s != nil {
		t.Fatalf("skipped: %+v", s)
	}
	sc := p.Scenario
	if p.Recipe.Key != "llama70b-fp8-h100" || sc.Model != "nvidia/Llama-3.3-70B-Instruct-FP8" || sc.Hardware != "h100" ||
		sc.TensorParallelSize != 4 || sc.KVCacheDtype != "fp8" || sc.MaxNumBatchedTokens != 8192 || sc.MaxModelLen != 10240 ||
		sc.GPUMemoryUtilization != 0.9 || sc.MaxNumSeqs != 4 || sc.EnablePrefixCaching || sc.Quantization != "" {
		t.Errorf("serve settings: recipe %s, %+v", p.Recipe.Key, sc)
	}
	if sc.RandomInputLen != 1024 || sc.RandomOutputLen != 128 || sc.RandomRangeRatio != 0.8 || sc.RandomRangeStyle != "legacy" ||
		sc.NumPrompts != 40 || sc.MaxConcurrency != 4 || !math.IsInf(sc.RequestRate, 1) || sc.NumWarmups != 0 {
		t.Errorf("client settings: %+v", sc)
	}
	for _, a := range p.Args {
		if a.Assumed {
			t.Errorf("--%s %s assumed; every value of this row is confirmed", a.Flag, a.Value)
		}
	}
	if _, err := sc.Resolve(); err != nil {
		t.Errorf("does not resolve: %v", err)
	}
}

// MiniMax-M2.5 on H100 with EP 4 = TP 4: simulated as TP 4, labelled;
// measured in 2026, so 2×CONC warm-ups; max-model-len from the generator.
func TestMapMiniMaxH100EPAsTP(t *testing.T) {
	rows := readFixture(t)
	p, s := MapRow(rowByID(t, rows, "minimax_h100_tp4_ep4_c4"), defaultMap)
	if s != nil {
		t.Fatalf("skipped: %+v", s)
	}
	sc := p.Scenario
	if p.Recipe.Key != "minimax-fp8-h100-0.18.0" || sc.TensorParallelSize != 4 || sc.MaxNumSeqs != 256 ||
		sc.GPUMemoryUtilization != 0.9 || sc.MaxModelLen != 1024+128+200 || sc.NumWarmups != 8 || sc.KVCacheDtype != "auto" {
		t.Errorf("%s: %+v", p.Recipe.Key, sc)
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "expert parallel 4 = TP") {
		t.Errorf("notes: %q", p.Notes)
	}
	if a, _ := p.Arg("enable-prefix-caching"); !a.Assumed || a.Value != "true" {
		t.Errorf("prefix caching: %+v, want assumed on", a)
	}
	// Between 2025-12 and 2026-03 the range ratio is not confirmed.
	if a, _ := p.Arg("random-range-ratio"); !a.Assumed {
		t.Errorf("range ratio of a 2026-03-27 row should be assumed")
	}
}

func TestMapBlackwellRecipes(t *testing.T) {
	rows := readFixture(t)
	// gpt-oss-120b B200 vLLM 0.15.1, 8192 in / 128 out: max-model-len ISL+OSL+200.
	p, s := MapRow(rowByID(t, rows, "gptoss_b200_8k1k_c4"), defaultMap)
	if s != nil {
		t.Fatalf("gpt-oss skipped: %+v", s)
	}
	if sc := p.Scenario; p.Recipe.Key != "gptoss-b200-0.15.1" || sc.Model != "openai/gpt-oss-120b" || sc.KVCacheDtype != "fp8" ||
		sc.MaxModelLen != 8192+128+200 || sc.MaxNumSeqs != 512 || sc.NumWarmups != 8 || sc.TensorParallelSize != 2 {
		t.Errorf("gpt-oss: %s %+v", p.Recipe.Key, sc)
	}
	// MiniMax-M2.5 B200 vLLM 0.19.0 on 2026-04-22: max-model-len ISL+OSL+256, 2×ISL batched tokens, block 32.
	p, s = MapRow(rowByID(t, rows, "minimax_b200_c4"), defaultMap)
	if s != nil {
		t.Fatalf("minimax skipped: %+v", s)
	}
	if sc := p.Scenario; p.Recipe.Key != "minimax-fp8-b200-0.19.0" || sc.MaxModelLen != 1024+128+256 || sc.MaxNumBatchedTokens != 2048 ||
		sc.BlockSize != 32 || sc.KVCacheDtype != "fp8" || sc.EnablePrefixCaching {
		t.Errorf("minimax: %s %+v", p.Recipe.Key, sc)
	}
	// wip=True: every serve value is assumed.
	p, s = MapRow(rowByID(t, rows, "minimax_b300_nightly"), defaultMap)
	if s != nil {
		t.Fatalf("nightly skipped: %+v", s)
	}
	for _, a := range p.Args {
		if (a.Flag == "gpu-memory-utilization" || a.Flag == "block-size" || a.Flag == "kv-cache-dtype") && !a.Assumed {
			t.Errorf("wip row: --%s not assumed", a.Flag)
		}
	}
}

// Qwen3-32B FP8 gap-analysis rows are not InferenceX runs: the FP8
// checkpoint is chosen, and every setting is assumed.
func TestMapGapAnalysis(t *testing.T) {
	rows := readFixture(t)
	p, s := MapRow(rowByID(t, rows, "qwen3_32b_fp8_gap"), defaultMap)
	if s != nil {
		t.Fatalf("skipped: %+v", s)
	}
	if p.Recipe.Key != "qwen3-32b-h100-gap" || p.Checkpoint != "Qwen/Qwen3-32B-FP8" || p.Scenario.NumWarmups != 0 {
		t.Errorf("%s %s %+v", p.Recipe.Key, p.Checkpoint, p.Scenario)
	}
	for _, f := range []string{"gpu-memory-utilization", "random-range-ratio", "num-prompts", "num-warmups"} {
		if a, ok := p.Arg(f); !ok || !a.Assumed {
			t.Errorf("--%s: %+v, want assumed", f, a)
		}
	}
}

// --backend all simulates an SGLang row as vLLM with the generic
// settings, labelled, every setting assumed.
func TestMapOtherBackendAsVLLM(t *testing.T) {
	rows := readFixture(t)
	p, s := MapRow(rowByID(t, rows, "dsr1_sglang_b200"), MapOptions{Backend: BackendAll})
	if s != nil {
		t.Fatalf("skipped: %+v", s)
	}
	if p.Recipe != &recipes().generic || p.SimulatedAs != "vllm" || p.Backend() != "sglang→vllm" || p.Checkpoint != "deepseek-ai/DeepSeek-R1" {
		t.Errorf("%s %q %q %s", p.Recipe.Key, p.SimulatedAs, p.Backend(), p.Checkpoint)
	}
	for _, a := range p.Args {
		switch a.Flag {
		case "model", "hardware", "tensor-parallel-size", "random-input-len", "random-output-len", "max-concurrency":
		default:
			if !a.Assumed {
				t.Errorf("--%s %s not assumed", a.Flag, a.Value)
			}
		}
	}
}

// Every recipe's values expand and are accepted by the scenario for a row
// it matches, and a row it serves resolves or is skipped for a stated
// catalog reason.
func TestEveryRecipeApplies(t *testing.T) {
	for i := range recipes().list {
		rc := &recipes().list[i]
		row := Row{
			Line: 2, ID: rc.Key, Backend: "vllm", BackendVersion: strings.TrimSuffix(rc.Version, "*") + map[bool]string{true: "x", false: ""}[strings.HasSuffix(rc.Version, "*")],
			ModelPath: rc.Model, System: rc.System, Precision: rc.Precision, Mode: "agg", ISL: 1024, OSL: 1024,
			Agg: Layout{BatchSize: 8, TP: 4, PP: 1, AttentionDP: 1, MoETP: 4, MoEEP: 1}, TTFTms: 100, TPOTms: 10,
		}
		if row.System == "" {
			row.System = "b200_sxm"
		}
		if row.Precision == "*" {
			row.Precision = ""
		}
		date := rc.From
		if date == "" {
			date = rc.To
		}
		if date == "" {
			date = "2026-01-01"
		}
		row.Source = "source_file=x.csv; silicon_concurrency=8; measured=" + date + "T00:00:00Z"
		if rc.GapAnalysis {
			row.Source = "source_file=/a/aic-auto-gap-analysis/x.csv; silicon_concurrency=8"
		}
		if got := RecipeFor(&row); got != rc {
			t.Errorf("%s: a row made for it matches %v", rc.Key, got)
			continue
		}
		for _, a := range rc.Args {
			if _, err := expandValue(a.Value, &row, 8); err != nil {
				t.Errorf("%s: %v", rc.Key, err)
			}
		}
		p, s := MapRow(&row, defaultMap)
		if s != nil {
			if s.Reason != ReasonFP4 && s.Reason != ReasonCheckpoint {
				t.Errorf("%s: skipped: %s: %s", rc.Key, s.Reason, s.Detail)
			}
			continue
		}
		if _, err := p.Scenario.Resolve(); err != nil {
			t.Errorf("%s: %v", rc.Key, err)
		}
	}
}

func TestExpandValue(t *testing.T) {
	row := &Row{ISL: 8192, OSL: 1024, Source: "measured=2026-04-19T00:00:00Z"}
	late := &Row{ISL: 1024, OSL: 1024, Source: "measured=2026-04-20T00:00:00Z"}
	cases := []struct {
		v    string
		row  *Row
		want string
	}{
		{"CONC", row, "64"}, {"2*ISL", row, "16384"}, {"GEN", row, "9416"}, {"GEN", late, "2304"},
		{"ISL+OSL+20/200", row, "9416"}, {"ISL+OSL+20/200", late, "2068"}, {"0.9", row, "0.9"},
	}
	for _, c := range cases {
		if got, err := expandValue(c.v, c.row, 64); err != nil || got != c.want {
			t.Errorf("expandValue(%q) = %q, %v; want %q", c.v, got, err, c.want)
		}
	}
	for _, bad := range []string{"ISL+OSL", "3*ISL", ""} {
		if _, err := expandValue(bad, row, 64); err == nil {
			t.Errorf("expandValue(%q): no error", bad)
		}
	}
}

// A recipe whose script cannot launch attention DP runs rows the dump
// labels attention_dp_size N, moe_ep_size N·TP as TP with expert parallel;
// any other DP row, or a label that does not fit that reading, is skipped.
func TestMapDPLabelWithoutDPScript(t *testing.T) {
	base := rowByID(t, readFixture(t), "minimax_h100_tp4_ep4_c4")
	cases := []struct {
		name       string
		dp, ep     int
		date       string
		wantReason string
	}{
		{"label only", 4, 16, "2026-03-28", ""},
		{"ep not dp×tp", 4, 8, "2026-03-28", ReasonDP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row := *base
			row.Agg.AttentionDP, row.Agg.MoEEP, row.Agg.BatchSize = c.dp, c.ep, 1
			row.Source = strings.Replace(row.Source, "2026-03-27", c.date, 1)
			p, sk := MapRow(&row, defaultMap)
			if c.wantReason != "" {
				if sk == nil || sk.Reason != c.wantReason {
					t.Fatalf("got plan %v skip %+v, want skipped: %s", p != nil, sk, c.wantReason)
				}
				return
			}
			if sk != nil {
				t.Fatalf("skipped: %+v", sk)
			}
			s := p.Scenario
			if s.TensorParallelSize != 4 || !s.EnableExpertParallel || p.Concurrency != 4 || s.MaxConcurrency != 4 {
				t.Errorf("TP %d EP %v concurrency %d/%d, want TP 4 with expert parallel at concurrency 4",
					s.TensorParallelSize, s.EnableExpertParallel, p.Concurrency, s.MaxConcurrency)
			}
			found := false
			for _, n := range p.Notes {
				found = found || strings.Contains(n, "launched as TP 4 with --enable-expert-parallel (EP 4, DP 1)")
			}
			if !found {
				t.Errorf("notes %q do not say how the DP label was read", p.Notes)
			}
		})
	}
}

// A MiniMax FP8 0.19 dp-labelled row (tp 2, attention DP 2, EP 4) runs as
// InferenceX's dp-attn launch from the recipe's DP date, and as the plain
// TP + EP launch of the script that had no DP path before it.
func TestMapDPAttentionLaunch(t *testing.T) {
	base := *rowByID(t, readFixture(t), "minimax_b200_c4")
	base.Agg.TP, base.Agg.AttentionDP, base.Agg.MoEEP, base.Agg.BatchSize = 2, 2, 4, 2
	cases := []struct {
		date         string
		tp, dp       int
		dpArgAssumed bool
		wantDPArg    bool
	}{
		{"2026-04-22", 1, 2, true, true},
		{"2026-04-03", 2, 1, false, false},
	}
	for _, c := range cases {
		row := base
		row.Source = strings.Replace(row.Source, "2026-04-22", c.date, 1)
		p, sk := MapRow(&row, defaultMap)
		if sk != nil {
			t.Fatalf("%s: skipped: %+v", c.date, sk)
		}
		s := p.Scenario
		if s.TensorParallelSize != c.tp || s.DataParallelSize != c.dp || !s.EnableExpertParallel || p.Concurrency != 4 {
			t.Errorf("%s: TP %d DP %d EP %v concurrency %d, want TP %d DP %d with expert parallel at 4",
				c.date, s.TensorParallelSize, s.DataParallelSize, s.EnableExpertParallel, p.Concurrency, c.tp, c.dp)
		}
		a, ok := p.Arg("data-parallel-size")
		if ok != c.wantDPArg || (ok && (a.Value != "2" || a.Assumed != c.dpArgAssumed)) {
			t.Errorf("%s: data-parallel-size arg %+v (present %v)", c.date, a, ok)
		}
	}
}

// A copy rounded to 0.01 ms is the same measurement; two precise rows that
// merely agree to 0.01 ms are not.
func TestDuplicatesRoundedCopies(t *testing.T) {
	base := *rowByID(t, readFixture(t), "llama_h100_tp4_c4")
	with := func(ttft, tpot float64) Row {
		r := base
		r.TTFTms, r.TPOTms = ttft, tpot
		return r
	}
	cases := []struct {
		name string
		rows []Row
		want int
	}{
		{"rounded copy after", []Row{with(134.73297602613457, 10.045052272695978), with(134.73, 10.05)}, 1},
		{"rounded copy before", []Row{with(134.73, 10.05), with(134.73297602613457, 10.045052272695978)}, 1},
		{"two precise runs", []Row{with(134.7312, 10.0451), with(134.7298, 10.0449)}, 0},
		{"rounded, other numbers", []Row{with(134.73297602613457, 10.045052272695978), with(134.74, 10.05)}, 0},
	}
	for _, c := range cases {
		if got := len(Duplicates(c.rows)); got != c.want {
			t.Errorf("%s: %d duplicates, want %d", c.name, got, c.want)
		}
	}
}
