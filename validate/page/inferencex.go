package page

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"blis/validate/inferencex"
	"blis/validate/score"
)

// InferenceX arms: the rows of a calibration CSV selected by model, chip,
// precision and launch recipe, replayed as `blis validate inferencex`
// replays them (inferencex.Select). A row is one level of one series (TP ×
// ISL/OSL); the rows are per-run aggregates — the mean TTFT and TPOT — so
// only those two metrics are compared and no request is paired.

// readCSV reads (once) an InferenceX CSV named by a manifest.
func (b *builder) readCSV(sel *IXSelect, key string) ([]inferencex.Row, error) {
	p := b.m.Path(sel.CSV)
	if rows, ok := b.csv[p]; ok {
		return rows, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, b.inputErr(sel.Line, key+".csv", sel.CSV, err)
	}
	defer f.Close()
	rows, err := inferencex.Read(p, bufio.NewReader(f))
	if err != nil {
		return nil, err
	}
	if err := b.addInput(p); err != nil {
		return nil, b.inputErr(sel.Line, key+".csv", sel.CSV, err)
	}
	b.csv[p] = rows
	return rows, nil
}

// ixKeep applies the precision and recipe filters.
func ixKeep(sel *IXSelect, row *inferencex.Row, recipe *inferencex.Recipe) bool {
	if sel.Precision != "" && row.PrecisionText() != sel.Precision {
		return false
	}
	if sel.Recipe != "" {
		if recipe == nil {
			recipe = inferencex.RecipeFor(row)
		}
		if recipe == nil || recipe.Key != sel.Recipe {
			return false
		}
	}
	return true
}

func (b *builder) ixArm(ai int, a *Arm, covered map[string]bool) (*ArmPage, error) {
	key := fmt.Sprintf("arms[%d].inferencex", ai)
	sel := a.InferenceX
	rows, err := b.readCSV(sel, key)
	if err != nil {
		return nil, err
	}
	s := inferencex.Select(rows, inferencex.Filter{Model: sel.Model, Hardware: sel.Hardware}, inferencex.MapOptions{Backend: sel.Backend, EPAsTP: true})
	var plans []*inferencex.Plan
	nearDups := 0
	for _, p := range s.Plans {
		if !ixKeep(sel, p.Row, p.Recipe) {
			continue
		}
		// The same measurement can reach the CSV twice with its numbers
		// differing in the last bit (two dumps); Select's exact check
		// misses those. Count it once.
		if slices.ContainsFunc(plans, func(q *inferencex.Plan) bool { return nearRepeat(p.Row, q.Row) }) {
			nearDups++
			covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(p.Row.Line)] = true
			continue
		}
		plans = append(plans, p)
	}
	ap := &ArmPage{Name: a.Name, Label: a.Label, Kind: "inferencex", LevelKey: "max-concurrency"}
	csvRel := b.rel(b.m.Path(sel.CSV))
	dups := 0
	for _, sk := range s.Skipped {
		if !ixKeep(sel, sk.Row, nil) {
			continue
		}
		covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(sk.Row.Line)] = true
		if sk.Reason == inferencex.ReasonDuplicate {
			dups++
			continue
		}
		if inferencex.CannotScore(sk.Reason) {
			ap.Unscored = addUnscored(ap.Unscored, sk.Row.Label()+": "+sk.Reason, inferencex.Needed(sk.Reason, sk.Detail))
		}
	}

	preds := make([]inferencex.Prediction, len(plans))
	fails := make([]*inferencex.Skip, len(plans))
	b.parallel(len(plans), func(i int) { preds[i], fails[i] = inferencex.Simulate(plans[i]) })

	levels := make([]LevelPage, 0, len(plans))
	for i, p := range plans {
		covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(p.Row.Line)] = true
		lp := LevelPage{Series: fmt.Sprintf("TP%d %d/%d", p.Row.Agg.TP, p.Row.ISL, p.Row.OSL), Level: score.Num(p.Concurrency),
			Text: strconv.Itoa(p.Concurrency), Source: fmt.Sprintf("%s line %d (%s)", csvRel, p.Row.Line, p.Row.ID)}
		meas, blis := score.NoValues(), score.NoValues()
		meas[score.MTTFTMean], meas[score.MTPOTMean] = p.Row.TTFTms, p.Row.TPOTms
		if fails[i] != nil {
			lp.Failed = fails[i].Reason + ": " + fails[i].Detail
			ap.Unscored = append(ap.Unscored, score.Unscored{Set: fmt.Sprintf("%s line %d (%s)", csvRel, p.Row.Line, p.Row.ID), Rows: 1,
				Needed: inferencex.Needed(fails[i].Reason, fails[i].Detail)})
		} else {
			blis[score.MTTFTMean], blis[score.MTPOTMean] = preds[i].TTFTMeanMs, preds[i].TPOTMeanMs
			lp.KVTokens = preds[i].GPUKVCacheTokens
			if ap.StepModel == "" {
				ap.StepModel = preds[i].StepModel
			} else if ap.StepModel != preds[i].StepModel {
				ap.StepModel = "mixed"
			}
		}
		lp.SetValues(meas, blis)
		levels = append(levels, lp)
	}
	// Levels in series order, then by concurrency (file order breaks ties):
	// level li is the row of plans[planOf[li]].
	planOf := make([]int, len(plans))
	for i := range planOf {
		planOf[i] = i
	}
	slices.SortStableFunc(planOf, func(i, j int) int {
		if c := compareSeries(levels[i].Series, levels[j].Series); c != 0 {
			return c
		}
		return cmp.Compare(levels[i].Level, levels[j].Level)
	})
	for _, pi := range planOf {
		ap.Levels = append(ap.Levels, levels[pi])
	}
	ap.Population = Population(ap.Levels)
	ap.Inputs = []string{fmt.Sprintf("InferenceX rows of %s: model %s, chip %s, precision %s, recipe %s, backend %s (%d rows%s)",
		csvRel, sel.Model, sel.Hardware, orAny(sel.Precision), orAny(sel.Recipe), sel.Backend, len(plans), dupText(dups+nearDups))}
	ap.PairingNote = "InferenceX rows are per-run aggregates (silicon_ttft_ms, silicon_tpot_ms); there are no per-request records, so no request is paired."
	ap.KVNote = "InferenceX rows carry no vLLM start-up KV figure, so no KV-pool ratio is reported."
	if len(plans) == 0 {
		ap.Deployment = fmt.Sprintf("%s on %s (no row simulable)", sel.Model, sel.Hardware)
		ap.Verdict = score.NotReproducible
		return ap, nil
	}
	ap.Deployment = inferencex.Deployment(plans)
	ap.Provenance, ap.Notes = inferencex.Provenance(plans)
	b.ixProbes(a, ap, plans, planOf) // probes.go
	scored := 0
	for _, f := range fails {
		if f == nil {
			scored++
		}
	}
	ap.Verdict = score.ArmVerdict(ap.Provenance, scored > 0)
	ap.MakeExact = score.WhatWouldMakeExact(ap.Provenance)
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

// ixUnscored lists the rows of sel's CSV and filters that no arm claims
// and BLIS cannot score (each arm lists its own).
func (b *builder) ixUnscored(sel *IXSelect, covered map[string]bool) ([]score.Unscored, error) {
	rows, err := b.readCSV(sel, "inferencex-unscored")
	if err != nil {
		return nil, err
	}
	s := inferencex.Select(rows, inferencex.Filter{Model: sel.Model, Hardware: sel.Hardware}, inferencex.MapOptions{Backend: sel.Backend, EPAsTP: true})
	var out []score.Unscored
	for _, sk := range s.Skipped {
		if !ixKeep(sel, sk.Row, nil) || !inferencex.CannotScore(sk.Reason) || covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(sk.Row.Line)] {
			continue
		}
		out = addUnscored(out, sk.Row.Label()+": "+sk.Reason, inferencex.Needed(sk.Reason, sk.Detail))
	}
	for _, p := range s.Plans {
		if !ixKeep(sel, p.Row, p.Recipe) || covered[b.m.Path(sel.CSV)+"#"+strconv.Itoa(p.Row.Line)] {
			continue
		}
		out = addUnscored(out, p.Row.Label()+": simulable, but no arm of this page selects it", "an arm in the manifest (recipe "+p.Recipe.Key+")")
	}
	return out, nil
}

// addUnscored counts one row into its set of list, adding the set (with
// what scoring it needs) at its first row.
func addUnscored(list []score.Unscored, set, needed string) []score.Unscored {
	i := slices.IndexFunc(list, func(u score.Unscored) bool { return u.Set == set })
	if i < 0 {
		list = append(list, score.Unscored{Set: set, Needed: needed})
		i = len(list) - 1
	}
	list[i].Rows++
	return list
}

// nearRepeat reports whether two rows are one measurement: the same
// deployment and shape, and TTFT and TPOT equal to 1e-9 relative.
func nearRepeat(a, b *inferencex.Row) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)) }
	return a.Backend == b.Backend && a.BackendVersion == b.BackendVersion && a.ModelPath == b.ModelPath &&
		a.System == b.System && a.Precision == b.Precision && a.Mode == b.Mode && a.ISL == b.ISL && a.OSL == b.OSL &&
		a.Agg == b.Agg && a.Prefill == b.Prefill && a.Decode == b.Decode && near(a.TTFTms, b.TTFTms) && near(a.TPOTms, b.TPOTms)
}
