package inferencex

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"blis/catalog"
	"blis/validate/score"
)

// What a validation page says of InferenceX rows: the deployment an arm's
// rows ran, its provenance table (every recipe argument and client
// setting, read or assumed, with its source), and what rows BLIS cannot
// score would need.

// Deployment states what an arm's plans ran, as a page's sources table
// prints it: the served checkpoint, precision, chip, TP sizes and vLLM
// versions.
func Deployment(plans []*Plan) string {
	prec := plans[0].Row.Precision
	if prec == "" {
		prec = "precision column empty"
	}
	return fmt.Sprintf("%s (%s) on %s, TP %s, vLLM %s", plans[0].Checkpoint, prec,
		strings.ToUpper(plans[0].Chip), joinInts(tpsOf(plans)), strings.Join(versionsOf(plans), ", "))
}

// tpsOf lists the plans' tensor-parallel sizes, ascending.
func tpsOf(plans []*Plan) []int {
	var tps []int
	for _, p := range plans {
		if !slices.Contains(tps, p.Row.Agg.TP) {
			tps = append(tps, p.Row.Agg.TP)
		}
	}
	slices.Sort(tps)
	return tps
}

// versionsOf lists the vLLM versions the plans ran, in plan order.
func versionsOf(plans []*Plan) []string {
	var versions []string
	for _, p := range plans {
		if v := p.VLLMVersion(); !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	return versions
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

// VLLMVersion is the vLLM version the plan's row ran: backend_version, or
// the tag of the image silicon_data_source names, or "unstated".
func (p *Plan) VLLMVersion() string {
	if v := p.Row.BackendVersion; v != "" {
		return v
	}
	if im := p.Row.Image(); im != "" {
		if _, tag, ok := strings.Cut(im, ":"); ok {
			return strings.TrimPrefix(strings.SplitN(tag, "-", 2)[0], "v")
		}
	}
	if p.Recipe != nil && strings.HasPrefix(p.Recipe.Image, "vllm/vllm-openai:v") {
		tag := strings.TrimPrefix(p.Recipe.Image, "vllm/vllm-openai:v")
		return strings.Fields(tag)[0]
	}
	return "unstated"
}

// PrecisionText is the row's precision, "-" when the cell is empty.
func (r *Row) PrecisionText() string {
	if r.Precision == "" {
		return "-"
	}
	return r.Precision
}

// shortModel is a model_path without its organisation ("Llama-3.1-70B").
func shortModel(m string) string { return m[strings.LastIndex(m, "/")+1:] }

// Label names the deployment a row belongs to on a page's list of sets
// that cannot be scored: "Llama-3.1-70B fp8 on h100_sxm".
func (r *Row) Label() string {
	return fmt.Sprintf("%s %s on %s", shortModel(r.ModelPath), r.PrecisionText(), r.System)
}

// CannotScore says whether a skip reason marks a row BLIS cannot score
// (rather than one left out by choice or counted elsewhere).
func CannotScore(reason string) bool {
	return reason != ReasonBackend && reason != ReasonDuplicate && reason != ReasonLimit
}

// Needed says what scoring a row skipped for reason needs.
func Needed(reason, detail string) string {
	switch reason {
	case ReasonDisagg:
		return "prefill/decode disaggregation in BLIS"
	case ReasonPP:
		return "pipeline parallelism in BLIS"
	case ReasonDP:
		return "attention data parallelism in BLIS"
	case ReasonEP, ReasonEPOff:
		return "expert parallelism other than EP = TP in BLIS"
	case ReasonChip:
		return "a catalog entry for chip " + detail
	case ReasonModel:
		return "a catalog entry for " + detail + " (config.json + graph.yaml)"
	case ReasonFP4, ReasonCheckpoint:
		return "a catalog entry for the served checkpoint (" + detail + ")"
	case ReasonPrecision:
		return "a catalog checkpoint of that precision (" + detail + ")"
	case ReasonConcurrency:
		return "a row whose batch_size × attention_dp_size agrees with silicon_concurrency"
	}
	return "BLIS accepting the deployment (" + detail + ")"
}

// Arg is the plan's setting of flag.
func (p *Plan) Arg(flag string) (Arg, bool) {
	for _, a := range p.Args {
		if a.Flag == flag {
			return a, true
		}
	}
	return Arg{}, false
}

// clientFlags are the client settings of an InferenceX plan.
var clientFlags = []string{"random-input-len", "random-output-len", "random-range-ratio", "random-range-style",
	"num-prompts", "max-concurrency", "request-rate", "num-warmups"}

// Provenance builds the table of an arm's plans (and the notes of its
// mapping): every plan of an arm shares a recipe unless the manifest
// selects several.
func Provenance(plans []*Plan) ([]score.ProvRow, []string) {
	tps, versions := tpsOf(plans), versionsOf(plans)
	var rows []score.ProvRow
	var notes []string
	first := plans[0]
	rc := first.Recipe
	recipes := usedRecipes(plans)

	// Model: the checkpoint InferenceX served.
	served := servedCheckpoint(rc, first.Row)
	mr := score.ProvRow{Setting: "model", BLIS: first.Checkpoint, Source: rc.Source}
	if served == "" {
		mr.Measured, mr.Source = first.Row.ModelPath+" ("+first.Row.PrecisionText()+")", "model_path and precision columns"
		base, err := catalog.LookupModel(first.Row.ModelPath)
		q, quantized := first.Arg("quantization")
		switch {
		case quantized:
			mr.Verdict, mr.Note = score.Unstated, "the served checkpoint is not stated; BLIS quantizes the weights online to "+q.Value
		case err == nil && first.Row.Precision == "":
			mr.Verdict, mr.Note = score.Unstated, "the precision column is empty; BLIS simulates the model's own "+base.WeightDtype+" weights"
		case err != nil || base.ID != first.Checkpoint:
			mr.Verdict, mr.Note = score.Unstated, "the served checkpoint is not stated; BLIS simulates the catalog's "+first.Row.PrecisionText()+" checkpoint"
		default:
			mr.Verdict = score.Match // the model's own weights have the row's precision
		}
	} else {
		mr.Measured = served
		if strings.EqualFold(served, first.Checkpoint) {
			mr.Verdict = score.Match
		} else {
			mr.Verdict, mr.Note = score.Mismatch, "BLIS simulates another checkpoint"
		}
	}
	rows = append(rows, mr)
	rows = append(rows, score.ProvRow{Setting: "chip", Measured: first.Row.System, Source: "system column", BLIS: first.Chip, Verdict: score.Match})
	rows = append(rows, score.ProvRow{Setting: "tensor-parallel-size", Measured: joinInts(tps), Source: "tp_size column", BLIS: joinInts(tps), Verdict: score.Match})

	er := score.ProvRow{Setting: "engine-version", Measured: strings.Join(versions, ", "), Source: "backend_version column or the image in silicon_data_source", BLIS: score.EngineVersionText}
	switch {
	case slices.Contains(versions, "unstated"):
		er.Verdict = score.Unstated
	case len(versions) == 1 && score.EngineMatches(versions[0]):
		er.Verdict = score.Match
	default:
		er.Verdict, er.Note = score.Mismatch, score.EngineMismatchNote
	}
	rows = append(rows, er)

	// Expert parallel simulated as TP, and other mapping notes.
	for _, p := range plans {
		for _, n := range p.Notes {
			if strings.HasPrefix(n, "expert parallel") {
				// A recipe that lists --enable-expert-parallel as unmodelled
				// says it already.
				stated := slices.ContainsFunc(recipes, func(r *Recipe) bool {
					return slices.ContainsFunc(r.Unmodelled, func(u string) bool { return strings.Contains(u, "expert-parallel") })
				})
				if !stated && !slices.ContainsFunc(rows, func(r score.ProvRow) bool { return r.Setting == "enable-expert-parallel" }) {
					rows = append(rows, score.ProvRow{Setting: "enable-expert-parallel", Measured: fmt.Sprintf("EP %d (moe_ep_size)", p.Row.Agg.MoEEP),
						Source: "moe_ep_size column", BLIS: "TP (no expert parallelism)", Verdict: score.Mismatch,
						Note: "same per-GPU weights and all-reduce; expert load imbalance not modelled"})
				}
			} else if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
	}

	prefix := len(recipes) > 1
	for _, r := range recipes {
		label := func(flag string) string {
			if prefix {
				return r.Key + ": " + flag
			}
			return flag
		}
		n := 0
		for _, p := range plans {
			if p.Recipe == r {
				n++
			}
		}
		for _, a := range r.Args {
			nAssumed := 0
			for _, p := range plans {
				if p.Recipe == r {
					if x, ok := p.Arg(a.Flag); ok && x.Assumed {
						nAssumed++
					}
				}
			}
			assumed := a.Assumed || nAssumed > 0
			src := r.Source
			if a.Why != "" {
				src = a.Why
			}
			row := score.ProvRow{Setting: label(a.Flag), Measured: formText(a.Value), Source: src, BLIS: formText(a.Value), Verdict: score.Match}
			if assumed {
				row.Verdict, row.Measured, row.Source = score.Unstated, "not stated", r.Source
				row.Note = fmt.Sprintf("assumed for %d of %d rows", max(nAssumed, boolInt(a.Assumed)*n), n)
				if a.Why != "" {
					row.Note += ": " + a.Why
				}
			}
			rows = append(rows, row)
		}
		for _, u := range r.Unmodelled {
			rows = append(rows, score.ProvRow{Setting: label("launch setting"), Measured: u, Source: r.Source, BLIS: score.NotModelled, Verdict: score.Mismatch})
		}
	}

	for _, flag := range clientFlags {
		var vals []string
		nAssumed := 0
		for _, p := range plans {
			if x, ok := p.Arg(flag); ok {
				if !slices.Contains(vals, x.Value) {
					vals = append(vals, x.Value)
				}
				if x.Assumed {
					nAssumed++
				}
			}
		}
		v := clientText(flag, vals)
		row := score.ProvRow{Setting: flag, Measured: v, Source: "InferenceX's client: its fork of vLLM's benchmark_serving.py (SemiAnalysisAI/InferenceX utils/bench_serving/ @ d053ae24), flags from benchmarks/benchmark_lib.sh", BLIS: v, Verdict: score.Match}
		if nAssumed > 0 {
			row.Verdict, row.Measured = score.Unstated, "not stated"
			row.Note = fmt.Sprintf("assumed for %d of %d rows (gap-analysis or wip rows, or a measurement date whose client setting is unconfirmed: validate/inferencex/map.go)", nAssumed, len(plans))
		}
		rows = append(rows, row)
	}
	rows = append(rows, score.ProvRow{Setting: "compared statistic", Measured: "not documented", Source: "data/e2e/PROVENANCE.md",
		BLIS: "mean TTFT and TPOT", Verdict: score.Unstated,
		Note: "whether silicon_ttft_ms / silicon_tpot_ms are means or medians is not written anywhere; the rows' TTFT growth with concurrency says mean"})
	return rows, notes
}

// formText spells a recipe value form for the page.
func formText(v string) string {
	switch v {
	case "CONC":
		return "the row's concurrency"
	case "GEN":
		return "ISL + OSL + 200 (+256 from 2026-04-20)"
	case "2*ISL":
		return "2 × ISL"
	case "ISL+OSL+20/200":
		return "ISL + OSL + 20 (+200 at 8k)"
	}
	return v
}

// clientText summarises a client flag's values over an arm's rows.
func clientText(flag string, vals []string) string {
	switch flag {
	case "max-concurrency":
		return "the row's concurrency"
	case "num-prompts":
		return "10 × concurrency"
	case "random-input-len":
		return "the row's ISL"
	case "random-output-len":
		return "the row's OSL"
	case "num-warmups":
		if len(vals) == 1 && vals[0] == "0" {
			return "0"
		}
		return "2 × concurrency from 2026-01-21, else 0"
	}
	return strings.Join(vals, ", ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
