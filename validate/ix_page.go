package validate

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"blis/catalog"
)

// InferenceX arms: the rows of a calibration CSV selected by model, chip,
// precision and launch recipe, replayed as `blis validate inferencex`
// replays them (validate/inferencex_map.go). A row is one level of one
// series (TP × ISL/OSL); the rows are per-run aggregates — the mean TTFT
// and TPOT — so only those two metrics are compared and no request is
// paired.

// readCSV reads (once) an InferenceX CSV named by a manifest.
func (b *builder) readCSV(sel *IXSelect, key string) ([]InferenceXRow, error) {
	p := b.m.Path(sel.CSV)
	if rows, ok := b.csv[p]; ok {
		return rows, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, b.inputErr(sel.Line, key+".csv", sel.CSV, err)
	}
	defer f.Close()
	rows, err := ReadInferenceX(p, bufio.NewReader(f))
	if err != nil {
		return nil, err
	}
	if err := b.addInput(p); err != nil {
		return nil, b.inputErr(sel.Line, key+".csv", sel.CSV, err)
	}
	b.csv[p] = rows
	return rows, nil
}

func precisionOf(r *InferenceXRow) string {
	if r.Precision == "" {
		return "-"
	}
	return r.Precision
}

// ixKeep applies the precision and recipe filters.
func ixKeep(sel *IXSelect, row *InferenceXRow, recipe *ServeRecipe) bool {
	if sel.Precision != "" && precisionOf(row) != sel.Precision {
		return false
	}
	if sel.Recipe != "" {
		if recipe == nil {
			recipe = recipeFor(row)
		}
		if recipe == nil || recipe.Key != sel.Recipe {
			return false
		}
	}
	return true
}

// skipCounts says whether a skip reason marks a row BLIS cannot score
// (rather than one left out by choice or counted elsewhere).
func skipCounts(reason string) bool {
	return reason != ReasonBackend && reason != ReasonDuplicate && reason != ReasonLimit
}

func (b *builder) ixArm(ai int, a *Arm, covered map[string]bool) (*ArmPage, error) {
	key := fmt.Sprintf("arms[%d].inferencex", ai)
	sel := a.InferenceX
	rows, err := b.readCSV(sel, key)
	if err != nil {
		return nil, err
	}
	s := Select(rows, Filter{Model: sel.Model, Hardware: sel.Hardware}, MapOptions{Backend: sel.Backend, EPAsTP: true})
	var plans []*Plan
	nearDups := 0
	for _, p := range s.Plans {
		if !ixKeep(sel, p.Row, p.Recipe) {
			continue
		}
		// The same measurement can reach the CSV twice with its numbers
		// differing in the last bit (two dumps); Select's exact check
		// misses those. Count it once.
		if slices.ContainsFunc(plans, func(q *Plan) bool { return nearRepeat(p.Row, q.Row) }) {
			nearDups++
			covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(p.Row.Line)] = true
			continue
		}
		plans = append(plans, p)
	}
	ap := &ArmPage{Name: a.Name, Label: a.Label, Kind: "inferencex", LevelKey: "max-concurrency"}
	csvRel := b.rel(b.m.Path(sel.CSV))
	dups := 0
	type group struct {
		set, needed string
		n           int
	}
	var groups []*group
	for _, sk := range s.Skipped {
		if !ixKeep(sel, sk.Row, nil) {
			continue
		}
		covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(sk.Row.Line)] = true
		if sk.Reason == ReasonDuplicate {
			dups++
			continue
		}
		if !skipCounts(sk.Reason) {
			continue
		}
		set := fmt.Sprintf("%s %s on %s: %s", shortModel(sk.Row.ModelPath), precisionOf(sk.Row), sk.Row.System, sk.Reason)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.set == set })
		if i < 0 {
			groups = append(groups, &group{set: set, needed: neededFor(sk.Reason, sk.Detail)})
			i = len(groups) - 1
		}
		groups[i].n++
	}
	for _, g := range groups {
		ap.Unscored = append(ap.Unscored, Unscored{Set: g.set, Rows: g.n, Needed: g.needed})
	}

	preds := make([]Prediction, len(plans))
	fails := make([]*Skip, len(plans))
	b.parallel(len(plans), func(i int) { preds[i], fails[i] = simulate(plans[i]) })

	var tps []int
	var versions []string
	for i, p := range plans {
		covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(p.Row.Line)] = true
		if !slices.Contains(tps, p.Row.Agg.TP) {
			tps = append(tps, p.Row.Agg.TP)
		}
		if v := rowVersion(p); !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
		lp := LevelPage{Series: fmt.Sprintf("TP%d %d/%d", p.Row.Agg.TP, p.Row.ISL, p.Row.OSL), Level: Num(p.Concurrency),
			Text: strconv.Itoa(p.Concurrency), Source: fmt.Sprintf("%s line %d (%s)", csvRel, p.Row.Line, p.Row.ID)}
		lp.meas = noValues()
		lp.meas[MTTFTMean], lp.meas[MTPOTMean] = p.Row.TTFTms, p.Row.TPOTms
		lp.blis = noValues()
		if fails[i] != nil {
			lp.Failed = fails[i].Reason + ": " + fails[i].Detail
			ap.Unscored = append(ap.Unscored, Unscored{Set: fmt.Sprintf("%s line %d (%s)", csvRel, p.Row.Line, p.Row.ID), Rows: 1,
				Needed: neededFor(fails[i].Reason, fails[i].Detail)})
		} else {
			lp.blis[MTTFTMean], lp.blis[MTPOTMean] = preds[i].TTFTMeanMs, preds[i].TPOTMeanMs
			lp.KVTokens = preds[i].GPUKVCacheTokens
			if ap.StepModel == "" {
				ap.StepModel = preds[i].StepModel
			} else if ap.StepModel != preds[i].StepModel {
				ap.StepModel = "mixed"
			}
		}
		lp.Measured, lp.BLIS, lp.Errors = levelMaps(lp.meas, lp.blis)
		ap.Levels = append(ap.Levels, lp)
	}
	slices.Sort(tps)
	// Levels in series order, then by concurrency (file order breaks ties).
	slices.SortStableFunc(ap.Levels, func(x, y LevelPage) int {
		if c := compareSeries(x.Series, y.Series); c != 0 {
			return c
		}
		switch {
		case x.Level < y.Level:
			return -1
		case x.Level > y.Level:
			return 1
		}
		return 0
	})
	ap.Population = population(ap.Levels)
	ap.Inputs = []string{fmt.Sprintf("InferenceX rows of %s: model %s, chip %s, precision %s, recipe %s, backend %s (%d rows%s)",
		csvRel, sel.Model, sel.Hardware, orAny(sel.Precision), orAny(sel.Recipe), sel.Backend, len(plans), dupText(dups+nearDups))}
	ap.PairingNote = "InferenceX rows are per-run aggregates (silicon_ttft_ms, silicon_tpot_ms); there are no per-request records, so no request is paired."
	ap.KVNote = "InferenceX rows carry no vLLM start-up KV figure, so no KV-pool ratio is reported."
	if len(plans) == 0 {
		ap.Deployment = fmt.Sprintf("%s on %s (no row simulable)", sel.Model, sel.Hardware)
		ap.Verdict = NotReproducible
		return ap, nil
	}
	prec := plans[0].Row.Precision
	if prec == "" {
		prec = "precision column empty"
	}
	ap.Deployment = fmt.Sprintf("%s (%s) on %s, TP %s, vLLM %s", plans[0].Checkpoint, prec,
		strings.ToUpper(plans[0].Chip), joinInts(tps), strings.Join(versions, ", "))
	ap.Provenance, ap.Notes = ixProvenance(plans, tps, versions)
	b.ixProbes(a, ap, plans, preds, fails) // probes.go
	scored := 0
	for _, f := range fails {
		if f == nil {
			scored++
		}
	}
	ap.Verdict = ArmVerdict(ap.Provenance, scored > 0)
	ap.MakeExact = WhatWouldMakeExact(ap.Provenance)
	return ap, nil
}

func dupText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d repeats of earlier rows (the same deployment and numbers equal to 1e-9) not counted twice", n)
}

func orAny(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

// compareSeries orders "TP2 1024/1024" series by TP, then ISL, then OSL.
func compareSeries(a, b string) int {
	pa, pb := seriesNums(a), seriesNums(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return strings.Compare(a, b)
}

func seriesNums(s string) [3]int {
	var out [3]int
	f := strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	for i := 0; i < len(f) && i < 3; i++ {
		out[i], _ = strconv.Atoi(f[i])
	}
	return out
}

// rowVersion is the vLLM version a row ran: backend_version, or the tag
// of the image silicon_data_source names, or "unstated".
func rowVersion(p *Plan) string {
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

// ixClientFlags are the client settings of an InferenceX plan.
var ixClientFlags = []string{"random-input-len", "random-output-len", "random-range-ratio", "random-range-style",
	"num-prompts", "max-concurrency", "request-rate", "num-warmups"}

// ixProvenance builds an InferenceX arm's table from its plans: every
// plan of an arm shares a recipe unless the manifest selects several.
func ixProvenance(plans []*Plan, tps []int, versions []string) ([]ProvRow, []string) {
	var rows []ProvRow
	var notes []string
	first := plans[0]
	rc := first.Recipe
	recipes := usedRecipes(plans)

	// Model: the checkpoint InferenceX served.
	served := servedCheckpoint(rc, first.Row)
	mr := ProvRow{Setting: "model", BLIS: first.Checkpoint, Source: rc.Source}
	if served == "" {
		mr.Measured, mr.Source = first.Row.ModelPath+" ("+precisionOf(first.Row)+")", "model_path and precision columns"
		base, err := catalog.LookupModel(first.Row.ModelPath)
		q, quantized := argOfPlan(first, "quantization")
		switch {
		case quantized:
			mr.Verdict, mr.Note = Unstated, "the served checkpoint is not stated; BLIS quantizes the weights online to "+q.Value
		case err == nil && first.Row.Precision == "":
			mr.Verdict, mr.Note = Unstated, "the precision column is empty; BLIS simulates the model's own "+base.WeightDtype+" weights"
		case err != nil || base.ID != first.Checkpoint:
			mr.Verdict, mr.Note = Unstated, "the served checkpoint is not stated; BLIS simulates the catalog's "+precisionOf(first.Row)+" checkpoint"
		default:
			mr.Verdict = Match // the model's own weights have the row's precision
		}
	} else {
		mr.Measured = served
		if strings.EqualFold(served, first.Checkpoint) {
			mr.Verdict = Match
		} else {
			mr.Verdict, mr.Note = Mismatch, "BLIS simulates another checkpoint"
		}
	}
	rows = append(rows, mr)
	rows = append(rows, ProvRow{Setting: "chip", Measured: first.Row.System, Source: "system column", BLIS: first.Chip, Verdict: Match})
	rows = append(rows, ProvRow{Setting: "tensor-parallel-size", Measured: joinInts(tps), Source: "tp_size column", BLIS: joinInts(tps), Verdict: Match})

	er := ProvRow{Setting: "engine-version", Measured: strings.Join(versions, ", "), Source: "backend_version column or the image in silicon_data_source", BLIS: engineVersionText}
	switch {
	case slices.Contains(versions, "unstated"):
		er.Verdict = Unstated
	case len(versions) == 1 && (versions[0] == EngineVersion || strings.HasPrefix(versions[0], EngineVersion+".")):
		er.Verdict = Match
	default:
		er.Verdict, er.Note = Mismatch, "BLIS prices one engine behaviour; the scheduler of other releases is not modelled"
	}
	rows = append(rows, er)

	// Expert parallel simulated as TP, and other mapping notes.
	for _, p := range plans {
		for _, n := range p.Notes {
			if strings.HasPrefix(n, "expert parallel") {
				// A recipe that lists --enable-expert-parallel as unmodelled
				// says it already.
				stated := slices.ContainsFunc(recipes, func(r *ServeRecipe) bool {
					return slices.ContainsFunc(r.Unmodelled, func(u string) bool { return strings.Contains(u, "expert-parallel") })
				})
				if !stated && !slices.ContainsFunc(rows, func(r ProvRow) bool { return r.Setting == "enable-expert-parallel" }) {
					rows = append(rows, ProvRow{Setting: "enable-expert-parallel", Measured: fmt.Sprintf("EP %d (moe_ep_size)", p.Row.Agg.MoEEP),
						Source: "moe_ep_size column", BLIS: "TP (no expert parallelism)", Verdict: Mismatch,
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
					if x, ok := argOfPlan(p, a.Flag); ok && x.Assumed {
						nAssumed++
					}
				}
			}
			assumed := a.Assumed || nAssumed > 0
			src := r.Source
			if a.Why != "" {
				src = a.Why
			}
			row := ProvRow{Setting: label(a.Flag), Measured: formText(a.Value), Source: src, BLIS: formText(a.Value), Verdict: Match}
			if assumed {
				row.Verdict, row.Measured, row.Source = Unstated, "not stated", r.Source
				row.Note = fmt.Sprintf("assumed for %d of %d rows", max(nAssumed, boolInt(a.Assumed)*n), n)
				if a.Why != "" {
					row.Note += ": " + a.Why
				}
			}
			rows = append(rows, row)
		}
		for _, u := range r.Unmodelled {
			rows = append(rows, ProvRow{Setting: label("launch setting"), Measured: u, Source: r.Source, BLIS: notModelled, Verdict: Mismatch})
		}
	}

	for _, flag := range ixClientFlags {
		var vals []string
		nAssumed := 0
		for _, p := range plans {
			if x, ok := argOfPlan(p, flag); ok {
				if !slices.Contains(vals, x.Value) {
					vals = append(vals, x.Value)
				}
				if x.Assumed {
					nAssumed++
				}
			}
		}
		v := clientText(flag, vals)
		row := ProvRow{Setting: flag, Measured: v, Source: "InferenceX's client (shared/data/README.md, \"Client settings\")", BLIS: v, Verdict: Match}
		if nAssumed > 0 {
			row.Verdict, row.Measured = Unstated, "not stated"
			row.Note = fmt.Sprintf("assumed for %d of %d rows (gap-analysis or wip rows, or a measurement date whose client setting is unconfirmed: validate/inferencex_map.go)", nAssumed, len(plans))
		}
		rows = append(rows, row)
	}
	rows = append(rows, ProvRow{Setting: "compared statistic", Measured: "not documented", Source: "data/e2e/PROVENANCE.md",
		BLIS: "mean TTFT and TPOT", Verdict: Unstated,
		Note: "whether silicon_ttft_ms / silicon_tpot_ms are means or medians is not written anywhere; the rows' TTFT growth with concurrency says mean"})
	return rows, notes
}

func argOfPlan(p *Plan, flag string) (Arg, bool) {
	for _, a := range p.Args {
		if a.Flag == flag {
			return a, true
		}
	}
	return Arg{}, false
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

// ixUnscored lists the rows of sel's CSV and filters that no arm claims
// and BLIS cannot score (each arm lists its own).
func (b *builder) ixUnscored(sel *IXSelect, covered map[string]bool) ([]Unscored, error) {
	rows, err := b.readCSV(sel, "inferencex-unscored")
	if err != nil {
		return nil, err
	}
	s := Select(rows, Filter{Model: sel.Model, Hardware: sel.Hardware}, MapOptions{Backend: sel.Backend, EPAsTP: true})
	type group struct {
		set, needed string
		n           int
	}
	var groups []*group
	add := func(row *InferenceXRow, reason, needed string) {
		set := fmt.Sprintf("%s %s on %s: %s", shortModel(row.ModelPath), precisionOf(row), row.System, reason)
		i := slices.IndexFunc(groups, func(g *group) bool { return g.set == set })
		if i < 0 {
			groups = append(groups, &group{set: set, needed: needed})
			i = len(groups) - 1
		}
		groups[i].n++
	}
	for _, sk := range s.Skipped {
		if !ixKeep(sel, sk.Row, nil) || !skipCounts(sk.Reason) || covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(sk.Row.Line)] {
			continue
		}
		add(sk.Row, sk.Reason, neededFor(sk.Reason, sk.Detail))
	}
	for _, p := range s.Plans {
		if !ixKeep(sel, p.Row, p.Recipe) || covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(p.Row.Line)] {
			continue
		}
		add(p.Row, "simulable, but no arm of this page selects it", "an arm in the manifest (recipe "+p.Recipe.Key+")")
	}
	var out []Unscored
	for _, g := range groups {
		out = append(out, Unscored{Set: g.set, Rows: g.n, Needed: g.needed})
	}
	return out, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nearRepeat reports whether two rows are one measurement: the same
// deployment and shape, and TTFT and TPOT equal to 1e-9 relative.
func nearRepeat(a, b *InferenceXRow) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) }
	return a.Backend == b.Backend && a.BackendVersion == b.BackendVersion && a.ModelPath == b.ModelPath &&
		a.System == b.System && a.Precision == b.Precision && a.Mode == b.Mode && a.ISL == b.ISL && a.OSL == b.OSL &&
		a.Agg == b.Agg && a.Prefill == b.Prefill && a.Decode == b.Decode && near(a.TTFTms, b.TTFTms) && near(a.TPOTms, b.TPOTms)
}
