package inferencex

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"blis/catalog"
	"blis/scenario"
)

// InferenceX's client: its fork of vLLM's old benchmark_serving.py
// (SemiAnalysisAI/InferenceX utils/bench_serving/ @ d053ae24), with the
// flags benchmarks/benchmark_lib.sh passes it.
const (
	ixRangeRatio  = 0.8
	ixRangeStyle  = "legacy" // uniform over the integers [floor(0.8·L), L]
	ixPromptsX    = 10       // --num-prompts = 10 × CONC
	ixWarmupsX    = 2        // --num-warmups = 2 × CONC ...
	ixWarmupsFrom = "2026-01-21"
)

// Backend selections of MapOptions.Backend.
const (
	BackendVLLM = "vllm"
	BackendAll  = "all"
)

// MapOptions choose which rows become scenarios.
type MapOptions struct {
	// Backend is vllm (the default), sglang, trtllm or all. Rows of other
	// backends are skipped; non-vLLM rows are simulated as if vLLM served
	// them, and labelled so.
	Backend string
	// EPAsTP simulates rows whose expert parallelism equals their tensor
	// parallelism with attention DP 1 (vLLM's --enable-expert-parallel on
	// one TP group) as plain TP, labelled; otherwise they are skipped.
	EPAsTP bool
	Seed   int64
}

// Arg is one setting of a planned run as `vllm serve` / `vllm bench serve`
// spell it.
type Arg struct {
	Flag    string `json:"flag"`
	Value   string `json:"value"`
	Assumed bool   `json:"assumed,omitempty"`
}

// Plan is one row mapped onto a BLIS scenario.
type Plan struct {
	Row         *Row
	Recipe      *Recipe
	Checkpoint  string // catalog model id simulated
	Chip        string // catalog chip name
	Concurrency int
	// SimulatedAs is set when the row ran another backend and is simulated
	// as if vLLM served it.
	SimulatedAs string
	Scenario    scenario.Scenario
	// Args are the settings applied, serve then client, each marked when
	// assumed.
	Args []Arg
	// Notes are approximations the mapping made (EP simulated as TP, ...).
	Notes []string
}

// Backend is the label of the plan's group: the row's backend, with
// "→vllm" when it is simulated as vLLM.
func (p *Plan) Backend() string {
	if p.SimulatedAs != "" {
		return p.Row.Backend + "→vllm"
	}
	return p.Row.Backend
}

// Skip is a row that cannot be simulated: a short Reason shared by every
// row skipped for the same cause, and the row's Detail.
type Skip struct {
	Row    *Row
	Reason string
	Detail string
}

// Skip reasons (stable strings: the report groups rows by them).
const (
	ReasonBackend     = "backend not selected (BLIS models vLLM; --backend all simulates other backends as if vLLM)"
	ReasonDisagg      = "disaggregated prefill/decode: BLIS has no P/D yet"
	ReasonPP          = "pipeline parallel > 1: BLIS has no PP yet"
	ReasonDP          = "attention data parallel > 1: no transcribed script says how it was launched"
	ReasonEP          = "expert parallel ≠ tensor parallel with attention DP 1: no vLLM launch gives that layout"
	ReasonEPOff       = "expert parallel > 1 skipped (--ep-as-tp=false)"
	ReasonConcurrency = "batch_size × attention_dp_size disagrees with silicon_concurrency"
	ReasonDuplicate   = "duplicate: same deployment and same measured numbers as an earlier row"
	ReasonChip        = "chip not in the catalog"
	ReasonModel       = "model not in catalog"
	ReasonFP4         = "FP4 checkpoint not in the catalog"
	ReasonCheckpoint  = "served checkpoint not in the catalog"
	ReasonPrecision   = "precision not supported"
	ReasonRejected    = "BLIS rejected the deployment"
	ReasonFailed      = "simulation failed"
	ReasonLimit       = "not run (beyond --limit)"
)

// dedupKey is every column but id and silicon_data_source, the measured
// numbers rounded to round (0: exact).
func dedupKey(r *Row, round float64) string {
	ttft, tpot := r.TTFTms, r.TPOTms
	if round > 0 {
		ttft, tpot = math.Round(ttft/round), math.Round(tpot/round)
	}
	return fmt.Sprint(r.Backend, "|", r.BackendVersion, "|", r.ModelPath, "|", r.System, "|", r.Precision, "|",
		r.Mode, "|", r.ISL, "|", r.OSL, "|", r.GemmQuantMode, "|", r.MoEQuantMode, "|", r.Agg, r.Prefill, r.Decode, "|",
		math.Float64bits(ttft), "|", math.Float64bits(tpot))
}

// dupRound is the precision of the dump's rounded copies: aiconfigurator's
// gap-analysis files repeat some InferenceX measurements with TTFT and TPOT
// rounded to 0.01 ms (e.g. kimi-k2.5-gap-analysis.csv, every row a copy of a
// 2026-03-24 Kimi-K2.5 INT4 B200 run).
const dupRound = 0.01

// Duplicates maps the index of every row that repeats an earlier one to that
// earlier row's index: all columns equal but id and silicon_data_source, or
// equal once rounded to 0.01 ms where one of the two rows was stored so
// rounded (two runs agreeing to 10 µs in both numbers are one measurement).
func Duplicates(rows []Row) map[int]int {
	first := map[string]int{}
	rounded := map[string]int{}
	isRounded := func(r *Row) bool {
		on := func(x float64) bool { return math.Abs(x/dupRound-math.Round(x/dupRound)) < 1e-6 }
		return on(r.TTFTms) && on(r.TPOTms)
	}
	dup := map[int]int{}
	for i := range rows {
		r := &rows[i]
		k := dedupKey(r, 0)
		if j, ok := first[k]; ok {
			dup[i] = j
			continue
		}
		first[k] = i
		rk := dedupKey(r, dupRound)
		if j, ok := rounded[rk]; ok && (isRounded(r) || isRounded(&rows[j])) {
			dup[i] = j
			continue
		}
		if _, ok := rounded[rk]; !ok {
			rounded[rk] = i
		}
	}
	return dup
}

// MapRow decides how one row is simulated: a Plan, or a Skip saying why
// not. It does not consult duplicates (see Duplicates).
func MapRow(row *Row, opts MapOptions) (*Plan, *Skip) {
	skip := func(reason, detail string) (*Plan, *Skip) {
		return nil, &Skip{Row: row, Reason: reason, Detail: detail}
	}
	backend := opts.Backend
	if backend == "" {
		backend = BackendVLLM
	}
	if backend != BackendAll && row.Backend != backend {
		return skip(ReasonBackend, "backend "+row.Backend)
	}
	if row.Mode == "disagg" {
		return skip(ReasonDisagg, fmt.Sprintf("prefill TP%d×%d workers, decode TP%d×%d workers",
			row.Prefill.TP, row.Prefill.NumWorkers, row.Decode.TP, row.Decode.NumWorkers))
	}
	l := row.Agg
	if l.PP > 1 {
		return skip(ReasonPP, fmt.Sprintf("pp_size %d", l.PP))
	}
	lay, reason, detail := launchOf(row, opts)
	if reason != "" {
		return skip(reason, detail)
	}
	notes := lay.notes

	conc := l.BatchSize * max(1, l.AttentionDP)
	if sc := row.SourceField("silicon_concurrency"); sc != "" {
		n, err := strconv.Atoi(sc)
		if err != nil || n != conc {
			return skip(ReasonConcurrency, fmt.Sprintf("batch_size %d, attention_dp_size %d, silicon_concurrency %s", l.BatchSize, l.AttentionDP, sc))
		}
	}

	chip, err := catalog.LookupChip(row.System)
	if err != nil {
		return skip(ReasonChip, row.System)
	}
	if _, err := catalog.LookupModel(row.ModelPath); err != nil {
		return skip(ReasonModel, row.ModelPath)
	}

	p := &Plan{Row: row, Chip: chip.Name, Concurrency: conc, Notes: notes}
	if row.Backend != BackendVLLM {
		p.SimulatedAs = BackendVLLM
		p.Recipe = &recipes().generic
		p.Notes = append(p.Notes, fmt.Sprintf("measured on %s %s; simulated as if vLLM served it", row.Backend, row.BackendVersion))
	} else if p.Recipe = RecipeFor(row); p.Recipe == nil {
		p.Recipe = &recipes().generic
	}

	quant := ""
	assumedQuant := false
	if served := servedCheckpoint(p.Recipe, row); served != "" {
		m, err := catalog.LookupModel(served)
		if err != nil {
			reason := ReasonCheckpoint
			if row.Precision == "fp4" {
				reason = ReasonFP4
			}
			return skip(reason, served+" (served by InferenceX)")
		}
		p.Checkpoint = m.ID
	} else {
		id, q, reason, detail := checkpointFor(row)
		if reason != "" {
			return skip(reason, detail)
		}
		p.Checkpoint, quant, assumedQuant = id, q, q != ""
	}

	s := scenario.Defaults()
	s.Model, s.Hardware, s.TensorParallelSize, s.DataParallelSize = p.Checkpoint, p.Chip, lay.tp, lay.dp
	s.Quantization = quant
	settings := map[string]scenario.Setting{}
	for _, st := range s.Settings() {
		settings[st.Name] = st
	}
	wip := row.WIP()
	set := func(flag, value string, assumed bool) error {
		st, ok := settings[flag]
		if !ok {
			return fmt.Errorf("validate: recipe %s: unknown flag --%s", p.Recipe.Key, flag)
		}
		if err := st.Value.Set(value); err != nil {
			return fmt.Errorf("validate: recipe %s: --%s %s: %v", p.Recipe.Key, flag, value, err)
		}
		p.Args = append(p.Args, Arg{Flag: flag, Value: value, Assumed: assumed})
		return nil
	}
	p.Args = append(p.Args, Arg{Flag: "model", Value: p.Checkpoint}, Arg{Flag: "hardware", Value: p.Chip},
		Arg{Flag: "tensor-parallel-size", Value: strconv.Itoa(lay.tp)})
	p.Args = append(p.Args, lay.dpArgs...)
	if quant != "" {
		p.Args = append(p.Args, Arg{Flag: "quantization", Value: quant, Assumed: assumedQuant})
	}
	if lay.expertParallel {
		if err := set("enable-expert-parallel", "true", false); err != nil {
			return skip(ReasonRejected, err.Error())
		}
	}
	for _, a := range p.Recipe.Args {
		v, err := expandValue(a.Value, row, conc)
		if err == nil {
			err = set(a.Flag, v, a.Assumed || wip)
		}
		if err != nil {
			// A bad table entry is a programming error; report it on the row.
			return skip(ReasonRejected, err.Error())
		}
	}
	if wip {
		p.Notes = append(p.Notes, "wip=True: measured from an unmerged InferenceX branch; its settings are unconfirmed (all assumed)")
	}

	// The client, as InferenceX ran it.
	date := row.MeasuredDate()
	clientAssumed := row.GapAnalysis() || row.Backend != BackendVLLM
	ratioAssumed := clientAssumed || date == "" || (date > "2025-11-30" && date < "2026-04-01")
	promptsAssumed := clientAssumed || (row.System == "b200_sxm" && date != "" && date < "2026-01-01")
	warmups := 0
	if date >= ixWarmupsFrom {
		warmups = ixWarmupsX * conc
	}
	s.DatasetName = "random"
	s.RandomInputLen, s.RandomOutputLen = row.ISL, row.OSL
	s.RandomRangeRatio, s.RandomRangeStyle = ixRangeRatio, ixRangeStyle
	s.NumPrompts = ixPromptsX * conc
	s.MaxConcurrency = conc
	s.RequestRate = math.Inf(1)
	s.NumWarmups = warmups
	s.Seed = opts.Seed
	s.MetricPercentiles = []float64{50}
	s.PercentileMetrics = "ttft,tpot"
	p.Args = append(p.Args,
		Arg{Flag: "random-input-len", Value: strconv.Itoa(row.ISL)},
		Arg{Flag: "random-output-len", Value: strconv.Itoa(row.OSL)},
		Arg{Flag: "random-range-ratio", Value: "0.8", Assumed: ratioAssumed},
		Arg{Flag: "random-range-style", Value: ixRangeStyle, Assumed: ratioAssumed},
		Arg{Flag: "num-prompts", Value: strconv.Itoa(s.NumPrompts), Assumed: promptsAssumed},
		Arg{Flag: "max-concurrency", Value: strconv.Itoa(conc)},
		Arg{Flag: "request-rate", Value: "inf", Assumed: clientAssumed},
		Arg{Flag: "num-warmups", Value: strconv.Itoa(warmups), Assumed: clientAssumed || date == ""},
	)
	p.Scenario = s
	return p, nil
}

// launchSpec is how a row's deployment was launched: vLLM's tensor and data
// parallel sizes, whether experts were split whole (--enable-expert-parallel),
// the data-parallel argument when one was passed, and notes on the reading.
type launchSpec struct {
	tp, dp         int
	expertParallel bool
	dpArgs         []Arg
	notes          []string
}

// launchOf reads the row's parallelism columns as the launch its recipe's
// script made, or says why it cannot (a skip reason and detail).
func launchOf(row *Row, opts MapOptions) (launchSpec, string, string) {
	l := row.Agg
	lay := launchSpec{tp: l.TP, dp: 1}
	ep := l.MoEEP
	if l.AttentionDP > 1 {
		var rc *Recipe
		if row.Backend == BackendVLLM {
			rc = RecipeFor(row)
		}
		dpSkip := fmt.Sprintf("attention_dp_size %d, tp %d, moe_ep %d", l.AttentionDP, l.TP, l.MoEEP)
		switch {
		case rc == nil || l.MoEEP != l.AttentionDP*l.TP:
			return lay, ReasonDP, dpSkip
		case rc.NoAttentionDP != "" && (rc.DPAttention == nil || row.MeasuredDate() < rc.DPAttention.From):
			// The script has no attention-DP path: it launched the row as
			// plain TP whatever the sweep entry said, and the dump's
			// moe_ep_size = DP × TP is --enable-expert-parallel over TP.
			ep = l.TP
			lay.notes = append(lay.notes, fmt.Sprintf("attention_dp_size %d, moe_ep_size %d in the dump, launched as TP %d with --enable-expert-parallel (EP %d, DP 1): %s",
				l.AttentionDP, l.MoEEP, l.TP, ep, rc.NoAttentionDP))
		case rc.DPAttention != nil && l.AttentionDP == l.TP && row.MeasuredDate() >= rc.DPAttention.From:
			lay.tp, lay.dp, lay.expertParallel = 1, l.TP, true
			lay.dpArgs = []Arg{{Flag: "data-parallel-size", Value: strconv.Itoa(lay.dp), Assumed: rc.DPAttention.Assumed}}
			lay.notes = append(lay.notes, fmt.Sprintf("dp-attn over %d GPUs: --tensor-parallel-size 1 --data-parallel-size %d --enable-expert-parallel (%s)",
				l.TP, l.TP, rc.DPAttention.Why))
			return lay, "", ""
		default:
			return lay, ReasonDP, dpSkip
		}
	}
	if ep > 1 {
		if ep != l.TP {
			return lay, ReasonEP, fmt.Sprintf("moe_ep_size %d, tp_size %d", l.MoEEP, l.TP)
		}
		if !opts.EPAsTP {
			return lay, ReasonEPOff, fmt.Sprintf("moe_ep_size %d = tp_size", l.MoEEP)
		}
		// vLLM --enable-expert-parallel with DP 1: each TP rank holds 1/EP
		// of the experts whole instead of 1/TP of every expert, and the MoE
		// output is all-reduced over the same group as TP's.
		lay.expertParallel = true
		lay.notes = append(lay.notes, fmt.Sprintf("expert parallel %d = TP with attention DP 1: --enable-expert-parallel (expert load imbalance not modelled)", ep))
	}
	return lay, "", ""
}

// servedCheckpoint is the checkpoint InferenceX served for row: its
// recipe's, or (for the generic recipe) that of any recipe of the same
// model and precision — InferenceX served the same checkpoint to every
// backend (e.g. nvidia/Llama-3.3-70B-Instruct-FP8 for the Llama-3.1-70B FP8
// rows of vLLM and TRT-LLM alike: InferenceX's launch scripts under
// benchmarks/ in SemiAnalysisAI/InferenceX serve one checkpoint per model
// and precision).
func servedCheckpoint(rc *Recipe, row *Row) string {
	if rc.Checkpoint != "" || rc != &recipes().generic {
		return rc.Checkpoint
	}
	for i := range recipes().list {
		r := &recipes().list[i]
		if r.Checkpoint != "" && r.Model == row.ModelPath && r.Precision == row.Precision {
			return r.Checkpoint
		}
	}
	return ""
}

// checkpointFor picks the catalog checkpoint of row's model for its
// precision: the model itself when its own weights have that precision,
// else a "-FP8" / "-FP4" / "-NVFP4" sibling, else (FP8 only) online FP8
// quantization of the model's weights. The quantization returned is
// assumed.
func checkpointFor(row *Row) (id, quant, reason, detail string) {
	base, err := catalog.LookupModel(row.ModelPath)
	if err != nil {
		return "", "", ReasonModel, row.ModelPath
	}
	sibling := func(suffixes ...string) string {
		name := row.ModelPath[strings.LastIndex(row.ModelPath, "/")+1:]
		for _, suf := range suffixes {
			for _, cand := range []string{row.ModelPath + suf, "nvidia/" + name + suf} {
				if m, err := catalog.LookupModel(cand); err == nil {
					return m.ID
				}
			}
		}
		return ""
	}
	switch row.Precision {
	case "", "bf16", "fp16":
		return base.ID, "", "", ""
	case "fp8":
		if base.WeightDtype == "fp8" {
			return base.ID, "", "", ""
		}
		if id := sibling("-FP8"); id != "" {
			return id, "", "", ""
		}
		return base.ID, "fp8", "", ""
	case "fp4":
		if base.WeightDtype == "mxfp4" || base.WeightDtype == "nvfp4" {
			return base.ID, "", "", ""
		}
		if id := sibling("-FP4", "-NVFP4"); id != "" {
			return id, "", "", ""
		}
		return "", "", ReasonFP4, "no FP4 checkpoint of " + row.ModelPath
	case "int4":
		if base.WeightDtype == "int4" {
			return base.ID, "", "", ""
		}
		return "", "", ReasonPrecision, "int4: no INT4 checkpoint of " + row.ModelPath
	}
	return "", "", ReasonPrecision, row.Precision
}

// Selection is the outcome of mapping a file's rows.
type Selection struct {
	Total    int     // rows in the file
	Filtered int     // rows left out by --model / --hardware
	Plans    []*Plan // in file order
	Skipped  []Skip  // in file order
}

// Filter selects rows by model and chip before mapping: Model matches a
// case-insensitive substring of model_path, Hardware a catalog chip name or
// alias (or a substring of system). Empty matches every row.
type Filter struct {
	Model    string `json:"model"`
	Hardware string `json:"hardware"`
}

// Keep reports whether f selects row.
func (f Filter) Keep(row *Row) bool {
	if f.Model != "" && !strings.Contains(strings.ToLower(row.ModelPath), strings.ToLower(f.Model)) {
		// An alias such as llama-3.1-70b names the same catalog entry.
		want, err1 := catalog.LookupModel(f.Model)
		got, err2 := catalog.LookupModel(row.ModelPath)
		if err1 != nil || err2 != nil || want.ID != got.ID {
			return false
		}
	}
	if f.Hardware != "" {
		want := strings.ToLower(f.Hardware)
		if c, err := catalog.LookupChip(f.Hardware); err == nil {
			want = c.Name
		}
		got := strings.ToLower(row.System)
		if c, err := catalog.LookupChip(row.System); err == nil {
			got = c.Name
		}
		if got != want && !strings.Contains(strings.ToLower(row.System), strings.ToLower(f.Hardware)) {
			return false
		}
	}
	return true
}

// Select filters and maps rows. A row that could be simulated but repeats
// an earlier row of the file (see Duplicates) is skipped as a duplicate.
func Select(rows []Row, f Filter, opts MapOptions) Selection {
	sel := Selection{Total: len(rows)}
	dups := Duplicates(rows)
	for i := range rows {
		row := &rows[i]
		if !f.Keep(row) {
			sel.Filtered++
			continue
		}
		p, s := MapRow(row, opts)
		if s != nil {
			sel.Skipped = append(sel.Skipped, *s)
			continue
		}
		if j, ok := dups[i]; ok {
			sel.Skipped = append(sel.Skipped, Skip{Row: row, Reason: ReasonDuplicate,
				Detail: fmt.Sprintf("repeats %s (line %d)", rows[j].ID, rows[j].Line)})
			continue
		}
		sel.Plans = append(sel.Plans, p)
	}
	return sel
}

// usedRecipes lists the recipes of plans, in table order (generic last).
func usedRecipes(plans []*Plan) []*Recipe {
	seen := map[*Recipe]bool{}
	for _, p := range plans {
		seen[p.Recipe] = true
	}
	var out []*Recipe
	for i := range recipes().list {
		if seen[&recipes().list[i]] {
			out = append(out, &recipes().list[i])
		}
	}
	if seen[&recipes().generic] {
		out = append(out, &recipes().generic)
	}
	return out
}
