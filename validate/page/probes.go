package page

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/scenario"
	"blis/validate/inferencex"
	"blis/validate/score"
)

// Gap re-checks: a provenance table claims gaps — a setting the run stated
// that BLIS simulated differently (a removable MISMATCH), or one the run
// left unstated that BLIS has a knob for. A probe re-runs the arm's replay
// (the same levels and seed) with only that knob changed, once per
// candidate value, and reports how far each candidate moves the headline
// metrics. The verdicts (ProbeVerdictRule) say whether the gap matters: a claimed
// gap that moves nothing is immaterial, and one that moves the error toward
// the measurement is CONFIRMED. Probes are never part of the headline or
// the regression gate; where an unstated setting is material the page
// brackets the population metrics over its candidates.

// ProbeThresholdPct is the verdicts' threshold: a metric "moves" when
// BLIS's value at some level changes by more than this many percent, and a
// probe moves the error "toward the measurement" when the mean headline
// MAPE falls by more than this many percentage points.
const ProbeThresholdPct = 1.0

// Probe verdicts.
const (
	ProbeConfirmed        = "CONFIRMED"
	ProbeConfirmedPartial = "CONFIRMED (partial)"
	ProbeRefuted          = "REFUTED"
	ProbeImmaterial       = "immaterial"
	ProbeMaterial         = "material (bracketed)"
	ProbeNotRun           = "not re-checked"
)

// ProbeVerdictRule is the verdict rule, written on every page that runs probes.
var ProbeVerdictRule = fmt.Sprintf("Each probe re-runs the arm's replay (same levels, same seed) with one setting changed, once per candidate value; "+
	"the headline metrics are TTFT mean, TPOT mean, ITL mean and output tok/s, where both sides state them. "+
	"A candidate moves a metric when BLIS's value at some level changes by more than %[1]s%% from the headline run. "+
	"immaterial: no candidate moves any headline metric (\"byte-identical\" when every compared value is equal to the last bit). "+
	"For a removable MISMATCH the candidate is the measured value: CONFIRMED when it lowers the mean of the headline MAPEs by more than %[1]s pp "+
	"and raises none by more than %[1]s pp; CONFIRMED (partial) when it lowers the mean by more than %[1]s pp but raises some metric's MAPE by more; "+
	"REFUTED when it moves the metrics but the mean MAPE does not fall by more than %[1]s pp (the gap is not what separates BLIS from the measurement). "+
	"For an UNSTATED setting there is no measured value to move toward: it is immaterial, or material (bracketed), and the population tables "+
	"then show the bracket over its candidates.", strconv.FormatFloat(ProbeThresholdPct, 'f', -1, 64))

// HeadlineMetrics are the metrics a probe judges by.
var HeadlineMetrics = []score.Metric{score.MTTFTMean, score.MTPOTMean, score.MITLMean, score.MOutputTokS}

// probeTarget is one setting to re-check, before it runs.
type probeTarget struct {
	setting    string // scenario key
	label      string // the provenance row's setting
	provenance string
	measured   string
	cands      []ProbeCandidate // the headline first
	applies    []bool           // per level; nil = every level
}

// probeTargets picks the settings to re-check from an arm's provenance
// rows: removable MISMATCH rows (candidates: BLIS's value, the measured
// one) and UNSTATED rows the candidate table knows (BLIS's value, then
// the table's). A list spec keeps only its settings, and adds the listed
// ones with no row that the table knows.
func probeTargets(rows []score.ProvRow, spec ProbeSpec) []probeTarget {
	if spec.Mode != ProbesAuto && spec.Mode != ProbesList {
		return nil
	}
	want := func(name string) bool { return spec.Mode == ProbesAuto || slices.Contains(spec.Settings, name) }
	var out []probeTarget
	seen := map[string]bool{}
	known := settingNames()
	for _, r := range rows {
		name := r.Setting
		if _, flag, ok := strings.Cut(name, ": "); ok { // "recipe: flag" on multi-recipe InferenceX arms
			name = flag
		}
		if name == "chip" {
			name = "hardware"
		}
		if seen[r.Setting] || !want(name) || !slices.Contains(known, name) || isOutputSetting(name) {
			continue
		}
		t := probeTarget{setting: name, label: r.Setting, provenance: r.VerdictText()}
		switch {
		case r.Verdict == score.Mismatch && r.Removable:
			want, ok := canonical(name, r.Measured)
			if !ok {
				continue
			}
			t.measured = r.Measured
			t.cands = []ProbeCandidate{{Value: r.BLIS, Why: "BLIS's value (the headline)", Headline: true},
				{Value: want, Why: "the measured run's value", Measured: true}}
		case r.Verdict == score.Unstated && candidatesFor(name) != nil:
			t.cands = []ProbeCandidate{{Value: r.BLIS, Why: "BLIS's assumption (the headline)", Headline: true}}
			for _, c := range candidatesFor(name) {
				t.cands = append(t.cands, ProbeCandidate{Value: c.value, Why: c.why})
			}
		default:
			continue
		}
		seen[r.Setting] = true
		out = append(out, t)
	}
	if spec.Mode == ProbesList {
		for _, name := range spec.Settings {
			if slices.ContainsFunc(rows, func(r score.ProvRow) bool { return r.Setting == name || strings.HasSuffix(r.Setting, ": "+name) }) ||
				candidatesFor(name) == nil {
				continue
			}
			t := probeTarget{setting: name, label: name, provenance: "assumed"}
			t.cands = []ProbeCandidate{{Value: "", Why: "BLIS's value (the headline)", Headline: true}}
			for _, c := range candidatesFor(name) {
				t.cands = append(t.cands, ProbeCandidate{Value: c.value, Why: c.why})
			}
			out = append(out, t)
		}
	}
	return out
}

// probeRun simulates one level with one setting changed and returns
// BLIS's values.
type probeRun func(level int, setting, value string) (score.Values, error)

// probeResolve resolves level's scenario with one setting changed, for
// effectiveKey ("" value: unchanged).
type probeResolve func(level int, setting, value string) (*scenario.Scenario, *scenario.Resolved, error)

// runProbes runs every target's candidates on every level it applies to
// (b.parallel: the result does not depend on the workers) and judges them.
// levels are the arm's page levels (measured values, failures); headline
// BLIS's headline values per level.
func (b *builder) runProbes(targets []probeTarget, levels []LevelPage, headline []score.Values, run probeRun, resolve probeResolve) []Probe {
	metricsUsed := probeMetrics(levels)
	// Drop candidates that resolve to what the headline ran (on the first
	// level the target applies to), and fill in the headline's value of
	// targets with no provenance row.
	for ti := range targets {
		t := &targets[ti]
		first := -1
		for i := range levels {
			if levels[i].Failed == "" && (t.applies == nil || t.applies[i]) {
				first = i
				break
			}
		}
		if first < 0 {
			continue
		}
		s0, r0, err := resolve(first, t.setting, "")
		if err != nil {
			continue
		}
		base := effectiveKey(s0, r0, t.setting)
		if t.cands[0].Value == "" {
			t.cands[0].Value = effectiveKey(s0, r0, t.setting)
		}
		kept := t.cands[:1]
		seen := map[string]bool{base: true}
		for _, c := range t.cands[1:] {
			s, r, err := resolve(first, t.setting, c.Value)
			if err == nil {
				k := effectiveKey(s, r, t.setting)
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			kept = append(kept, c)
		}
		t.cands = kept
	}

	type job struct{ t, c, l int }
	var jobs []job
	for ti := range targets {
		t := &targets[ti]
		for ci := range t.cands {
			c := &t.cands[ci]
			c.vals = make([]score.Values, len(levels))
			for li := range levels {
				c.vals[li] = headline[li]
				if levels[li].Failed != "" {
					c.vals[li] = score.NoValues()
				}
			}
			if ci == 0 {
				continue
			}
			for li := range levels {
				if levels[li].Failed == "" && (t.applies == nil || t.applies[li]) {
					jobs = append(jobs, job{ti, ci, li})
				}
			}
		}
	}
	errs := make([]error, len(jobs))
	b.parallel(len(jobs), func(i int) {
		j := jobs[i]
		c := &targets[j.t].cands[j.c]
		c.vals[j.l], errs[i] = run(j.l, targets[j.t].setting, c.Value)
	})
	for i, j := range jobs {
		if errs[i] != nil {
			c := &targets[j.t].cands[j.c]
			if c.Failed == "" {
				c.Failed = fmt.Sprintf("level %s: %v", levels[j.l].Text, errs[i])
			}
			c.vals[j.l] = score.NoValues()
		}
	}

	var out []Probe
	for ti := range targets {
		t := &targets[ti]
		p := Probe{Setting: t.label, Provenance: t.provenance, Measured: t.measured}
		for _, m := range metricsUsed {
			p.Metrics = append(p.Metrics, m.Info().Key)
		}
		for li := range levels {
			if levels[li].Failed == "" && (t.applies == nil || t.applies[li]) {
				p.Varied++
			}
		}
		for ci := range t.cands {
			c := t.cands[ci]
			summarizeCandidate(&c, t.cands[0].vals, levels, metricsUsed)
			for li := range c.Levels {
				c.Levels[li].Stated = t.applies != nil && !t.applies[li]
			}
			p.Candidates = append(p.Candidates, c)
		}
		judgeProbe(&p, ProbeThresholdPct)
		out = append(out, p)
	}
	return out
}

// probeMetrics are the headline metrics measured at some level.
func probeMetrics(levels []LevelPage) []score.Metric {
	var out []score.Metric
	for _, m := range HeadlineMetrics {
		for _, l := range levels {
			if l.Failed == "" && !math.IsNaN(l.meas[m]) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// summarizeCandidate fills a candidate's per-level errors, MAPE, signed
// mean and movement against the headline run.
func summarizeCandidate(c *ProbeCandidate, head []score.Values, levels []LevelPage, ms []score.Metric) {
	c.MAPE, c.SignedMean, c.MaxMove = map[string]score.Num{}, map[string]score.Num{}, map[string]score.Num{}
	c.Identical = !c.Headline
	c.Levels = nil
	for _, m := range ms {
		key := m.Info().Key
		var errs []float64
		move := 0.0
		for li, l := range levels {
			if l.Failed != "" {
				continue
			}
			v, h := c.vals[li][m], head[li][m]
			if math.Float64bits(v) != math.Float64bits(h) {
				c.Identical = false
			}
			if e := score.SignedError(v, l.meas[m]); !math.IsNaN(e) {
				errs = append(errs, e)
			}
			if h != 0 && !math.IsNaN(h) && !math.IsNaN(v) {
				move = math.Max(move, math.Abs(v/h-1)*100)
			} else if math.IsNaN(h) != math.IsNaN(v) {
				move = math.Inf(1)
			}
		}
		st := score.Summarize(errs)
		if st.N > 0 {
			c.MAPE[key], c.SignedMean[key] = score.Num(st.MAPE), score.Num(st.SignedMean)
		} else {
			c.MAPE[key], c.SignedMean[key] = score.NaN(), score.NaN()
		}
		if !c.Headline {
			c.MaxMove[key] = score.Num(move)
		}
	}
	if c.Headline {
		c.MaxMove = nil
	}
	for li, l := range levels {
		pl := ProbeLevel{Series: l.Series, Level: l.Level, Text: l.Text, BLIS: map[string]score.Num{}, Errors: map[string]score.Num{}}
		if l.Failed != "" {
			pl.Failed = "the headline run failed"
			c.Levels = append(c.Levels, pl)
			continue
		}
		for _, m := range ms {
			key := m.Info().Key
			if v := c.vals[li][m]; !math.IsNaN(v) {
				pl.BLIS[key] = score.Num(v)
			}
			if e := score.SignedError(c.vals[li][m], l.meas[m]); !math.IsNaN(e) {
				pl.Errors[key] = score.Num(e)
			}
		}
		c.Levels = append(c.Levels, pl)
	}
}

// meanMAPE is the mean of a candidate's finite headline MAPEs.
func meanMAPE(c *ProbeCandidate, keys []string) (float64, bool) {
	s, n := 0.0, 0
	for _, k := range keys {
		if v, ok := c.MAPE[k]; ok && !math.IsNaN(v.F()) {
			s += v.F()
			n++
		}
	}
	if n == 0 {
		return math.NaN(), false
	}
	return s / float64(n), true
}

// judgeProbe applies ProbeVerdictRule with threshold t (percent / percentage
// points) and writes the probe's verdict and a one-line detail.
func judgeProbe(p *Probe, t float64) {
	if len(p.Candidates) == 0 {
		p.Verdict, p.Detail = ProbeNotRun, "no candidate"
		return
	}
	head := &p.Candidates[0]
	var ran []*ProbeCandidate
	var failed []string
	for i := 1; i < len(p.Candidates); i++ {
		c := &p.Candidates[i]
		if c.Failed != "" {
			failed = append(failed, c.Value+" ("+c.Failed+")")
			continue
		}
		ran = append(ran, c)
	}
	failNote := ""
	if len(failed) > 0 {
		failNote = "; BLIS could not simulate " + strings.Join(failed, ", ")
	}
	if len(ran) == 0 {
		if len(p.Candidates) == 1 {
			p.Verdict, p.Detail = ProbeNotRun, "every candidate simulates what the headline ran"
		} else {
			p.Verdict, p.Detail = ProbeNotRun, strings.TrimPrefix(failNote, "; ")
		}
		return
	}
	// The largest move over candidates and metrics.
	bigMove, bigKey, bigVal := -1.0, "", ""
	identical := true
	for _, c := range ran {
		identical = identical && c.Identical
		for _, k := range p.Metrics {
			if mv := c.MaxMove[k].F(); mv > bigMove || (math.IsNaN(mv) && bigMove < 0) {
				bigMove, bigKey, bigVal = mv, k, c.Value
			}
		}
	}
	if identical {
		p.Verdict, p.Detail = ProbeImmaterial, "byte-identical results for every candidate"+failNote
		return
	}
	if !(bigMove > t) {
		p.Verdict = ProbeImmaterial
		p.Detail = fmt.Sprintf("largest move %s%% (%s at %s)%s", score.Num(bigMove).Fixed(2), score.MetricName(bigKey), bigVal, failNote)
		return
	}
	if p.Provenance == score.Mismatch+" (removable)" {
		var meas *ProbeCandidate
		for _, c := range ran {
			if c.Measured {
				meas = c
			}
		}
		if meas == nil {
			p.Verdict, p.Detail = ProbeNotRun, "the measured value could not be simulated"+failNote
			return
		}
		mh, ok1 := meanMAPE(head, p.Metrics)
		mc, ok2 := meanMAPE(meas, p.Metrics)
		if !ok1 || !ok2 {
			p.Verdict, p.Detail = ProbeMaterial, fmt.Sprintf("moves %s by %s%%; no headline MAPE computable", score.MetricName(bigKey), score.Num(bigMove).Fixed(1))
			return
		}
		var worse []string
		var parts []string
		for _, k := range p.Metrics {
			a, bb := head.MAPE[k].F(), meas.MAPE[k].F()
			if math.IsNaN(a) || math.IsNaN(bb) {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s -> %s", score.MetricName(k), score.Num(a).Fixed(1), score.Num(bb).Fixed(1)))
			if bb-a > t {
				worse = append(worse, score.MetricName(k))
			}
		}
		detail := fmt.Sprintf("at the measured value %s the mean headline MAPE goes %s%% -> %s%% (%s)", meas.Value,
			score.Num(mh).Fixed(1), score.Num(mc).Fixed(1), strings.Join(parts, ", "))
		switch {
		case mc < mh-t && len(worse) == 0:
			p.Verdict = ProbeConfirmed
		case mc < mh-t:
			p.Verdict = ProbeConfirmedPartial
			detail += "; worse: " + strings.Join(worse, ", ")
		default:
			p.Verdict = ProbeRefuted
		}
		p.Detail = detail + failNote
		return
	}
	best, bestM := "", math.Inf(1)
	for _, c := range append([]*ProbeCandidate{head}, ran...) {
		if m, ok := meanMAPE(c, p.Metrics); ok && m < bestM {
			best, bestM = c.Value, m
		}
	}
	p.Verdict = ProbeMaterial
	p.Detail = fmt.Sprintf("moves %s by up to %s%% (at %s)", score.MetricName(bigKey), score.Num(bigMove).Fixed(1), bigVal)
	if best != "" {
		p.Detail += fmt.Sprintf("; closest to the measurement: %s (mean headline MAPE %s%%)", best, score.Num(bestM).Fixed(1))
	}
	p.Detail += failNote
}

// armProbeSpec is the spec that applies to arm a: --probes, else the
// arm's probes:, else the manifest's, else off.
func (b *builder) armProbeSpec(a *Arm) ProbeSpec {
	switch {
	case b.probes != nil:
		return *b.probes
	case a.Probes != nil:
		return *a.Probes
	case b.m.Probes != nil:
		return *b.m.Probes
	}
	return ProbeSpec{Mode: ProbesOff}
}

// finishProbes stores probes and brackets on the arm page.
func finishProbes(ap *ArmPage, spec ProbeSpec, probes []Probe, levels []LevelPage, headline []score.Values) {
	if spec.Mode == ProbesOff || spec.Mode == "" {
		return
	}
	ap.Probes = probes
	if len(probes) == 0 {
		ap.ProbeNote = "no provenance row names a setting BLIS can toggle (a removable MISMATCH, or an UNSTATED setting with candidate values)"
		if spec.Mode == ProbesList {
			ap.ProbeNote = "none of the listed settings (" + strings.Join(spec.Settings, ", ") + ") is a removable MISMATCH or an UNSTATED setting with candidate values in this arm"
		}
	}
	ap.Brackets = brackets(ap.Population, probes, levels, headline)
}

// ---- file arms ----

// fileProbes re-checks a file arm's gaps (called by fileArm after its
// levels are scored).
func (b *builder) fileProbes(a *Arm, ap *ArmPage, lv []fileLevel) {
	spec := b.armProbeSpec(a)
	if spec.Mode == ProbesOff || spec.Mode == "" {
		return
	}
	headline := blisValues(ap.Levels)
	targets := probeTargets(ap.Provenance, spec)
	resolve := func(i int, name, value string) (*scenario.Scenario, *scenario.Resolved, error) {
		s := lv[i].sc
		if value != "" {
			if err := setKey(&s, name, value); err != nil {
				return nil, nil, err
			}
		}
		res, err := s.Resolve()
		return &s, res, err
	}
	run := func(i int, name, value string) (score.Values, error) {
		x := fileLevel{run: lv[i].run, sc: lv[i].sc}
		x.sc.MetricPercentiles = slices.Clone(lv[i].sc.MetricPercentiles)
		if err := setKey(&x.sc, name, value); err != nil {
			return score.NoValues(), err
		}
		simulateLevel(&x)
		if x.simErr != nil {
			return score.NoValues(), x.simErr
		}
		return fileBLISValues(&x), nil
	}
	probes := b.runProbes(targets, ap.Levels, headline, run, resolve)
	finishProbes(ap, spec, probes, ap.Levels, headline)
}

// ---- InferenceX arms ----

// ixProbes re-checks an InferenceX arm's gaps. An assumed recipe argument
// varies only on the rows that assume it; the others keep the stated
// value.
func (b *builder) ixProbes(a *Arm, ap *ArmPage, plans []*inferencex.Plan, planOf []int) {
	spec := b.armProbeSpec(a)
	if spec.Mode == ProbesOff || spec.Mode == "" {
		return
	}
	headline := blisValues(ap.Levels)
	targets := probeTargets(ap.Provenance, spec)
	for ti := range targets {
		t := &targets[ti]
		if t.provenance != score.Unstated {
			continue
		}
		t.applies = make([]bool, len(ap.Levels))
		recipeKey, _, multi := strings.Cut(t.label, ": ")
		for li := range ap.Levels {
			p := plans[planOf[li]]
			if x, ok := p.Arg(t.setting); ok && x.Assumed && (!multi || p.Recipe.Key == recipeKey) {
				t.applies[li] = true
			}
		}
	}
	plan := func(li int, name, value string) (*inferencex.Plan, error) {
		p := *plans[planOf[li]]
		p.Scenario.MetricPercentiles = slices.Clone(p.Scenario.MetricPercentiles)
		if value != "" {
			if err := setKey(&p.Scenario, name, value); err != nil {
				return nil, err
			}
		}
		return &p, nil
	}
	resolve := func(li int, name, value string) (*scenario.Scenario, *scenario.Resolved, error) {
		p, err := plan(li, name, value)
		if err != nil {
			return nil, nil, err
		}
		res, err := p.Scenario.Resolve()
		return &p.Scenario, res, err
	}
	run := func(li int, name, value string) (score.Values, error) {
		p, err := plan(li, name, value)
		if err != nil {
			return score.NoValues(), err
		}
		pred, sk := inferencex.Simulate(p)
		if sk != nil {
			return score.NoValues(), fmt.Errorf("%s: %s", sk.Reason, sk.Detail)
		}
		v := score.NoValues()
		v[score.MTTFTMean], v[score.MTPOTMean] = pred.TTFTMeanMs, pred.TPOTMeanMs
		return v, nil
	}
	probes := b.runProbes(targets, ap.Levels, headline, run, resolve)
	finishProbes(ap, spec, probes, ap.Levels, headline)
}
