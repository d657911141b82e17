package validate

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/scenario"
)

// Gap re-checks: a provenance table claims gaps — a setting the run stated
// that BLIS simulated differently (a removable MISMATCH), or one the run
// left unstated that BLIS has a knob for. A probe re-runs the arm's replay
// (the same levels and seed) with only that knob changed, once per
// candidate value, and reports how far each candidate moves the headline
// metrics. The verdicts (ProbeRule) say whether the gap matters: a claimed
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

// ProbeRule is the verdict rule, written on every page that runs probes.
var ProbeRule = fmt.Sprintf("Each probe re-runs the arm's replay (same levels, same seed) with one setting changed, once per candidate value; "+
	"the headline metrics are TTFT mean, TPOT mean, ITL mean and output tok/s, where both sides state them. "+
	"A candidate moves a metric when BLIS's value at some level changes by more than %[1]s%% from the headline run. "+
	"immaterial: no candidate moves any headline metric (\"byte-identical\" when every compared value is equal to the last bit). "+
	"For a removable MISMATCH the candidate is the measured value: CONFIRMED when it lowers the mean of the headline MAPEs by more than %[1]s pp "+
	"and raises none by more than %[1]s pp; CONFIRMED (partial) when it lowers the mean by more than %[1]s pp but raises some metric's MAPE by more; "+
	"REFUTED when it moves the metrics but the mean MAPE does not fall by more than %[1]s pp (the gap is not what separates BLIS from the measurement). "+
	"For an UNSTATED setting there is no measured value to move toward: it is immaterial, or material (bracketed), and the population tables "+
	"then show the bracket over its candidates.", strconv.FormatFloat(ProbeThresholdPct, 'f', -1, 64))

// Probe modes of a manifest's probes: key and of --probes.
const (
	ProbesOff  = "off"
	ProbesAuto = "auto"
	ProbesList = "list"
)

// ProbeSpec says which settings an arm re-checks: none (off), every
// toggleable provenance row (auto), or the listed settings (list): their
// toggleable provenance rows, plus those with no row that the candidate
// table knows (BLIS's own assumptions such as step-model).
type ProbeSpec struct {
	Mode     string
	Settings []string
	Line     int
}

// probeCandidate is one value a probe tries for an unstated setting.
type probeCandidate struct{ value, why string }

// probeCandidates lists, per setting a run may leave unstated, vLLM's
// default first and then the values launch scripts plausibly used instead.
// The why of each is printed on the page, so a reader sees what was tried
// and why.
var probeCandidates = []struct {
	setting string
	cands   []probeCandidate
}{
	// vLLM's V1 engine caches prefixes unless told not to; most benchmark
	// scripts switch it off for random prompts.
	{"enable-prefix-caching", []probeCandidate{{"true", "vLLM's default (V1 engine)"}, {"false", "off, as most benchmark scripts launch vLLM"}}},
	// V1 always chunks prefills; off is the pre-V1 behaviour.
	{"enable-chunked-prefill", []probeCandidate{{"true", "vLLM's default (V1 engine)"}, {"false", "off (pre-V1 scheduling)"}}},
	// An FP8 KV cache doubles the pool and changes attention reads; it is
	// the usual choice with FP8 checkpoints.
	{"kv-cache-dtype", []probeCandidate{{"auto", "vLLM's default: the model's dtype"}, {"fp8", "FP8 KV cache, usual with FP8 checkpoints"}}},
	// The step token budget: vLLM's default depends on the chip; 2048 is
	// the small-GPU default, 16384 a common throughput setting.
	{"max-num-batched-tokens", []probeCandidate{{"0", "vLLM's default for the chip (8192 on >= 70 GiB GPUs, else 2048)"},
		{"2048", "vLLM's small-GPU default"}, {"16384", "a common throughput setting"}}},
	// 256 is the small-GPU default and what many scripts pass.
	{"max-num-seqs", []probeCandidate{{"0", "vLLM's default for the chip (1024 on >= 70 GiB GPUs, else 256)"},
		{"256", "vLLM's small-GPU default, common in launch scripts"}}},
	// Async scheduling is off by default but on in most recent scripts.
	{"async-scheduling", []probeCandidate{{"false", "vLLM's default"}, {"true", "on, as recent launch scripts run it"}}},
	// FULL_AND_PIECEWISE became the default in vLLM 0.11 (vllm#25444);
	// PIECEWISE was the default before.
	{"compilation-config", []probeCandidate{{`{"cudagraph_mode":"FULL_AND_PIECEWISE"}`, "vLLM's default from 0.11"},
		{`{"cudagraph_mode":"PIECEWISE"}`, "vLLM's default before 0.11"}}},
	{"enforce-eager", []probeCandidate{{"false", "vLLM's default (CUDA graphs)"}, {"true", "no CUDA graphs"}}},
	// Expert parallelism is opt-in; MoE launch scripts often enable it.
	{"enable-expert-parallel", []probeCandidate{{"false", "vLLM's default"}, {"true", "experts split whole across the TP group"}}},
	// 16 is vLLM's CUDA default; some attention backends force 64.
	{"block-size", []probeCandidate{{"16", "vLLM's default"}, {"64", "what MLA / FlashInfer backends force"}}},
	// 0.9 is vLLM's default; scripts often raise it.
	{"gpu-memory-utilization", []probeCandidate{{"0.9", "vLLM's default"}, {"0.95", "common in launch scripts"}}},
	// BLIS's own assumption: which step pricer prices the steps.
	{"step-model", []probeCandidate{{"auto", "BLIS's default"}, {"fitted", "fitted kernel coefficients"}, {"roofline", "roofline pricing"}}},
}

// candidatesFor is the candidate list of setting (nil when the table has
// none).
func candidatesFor(setting string) []probeCandidate {
	for _, c := range probeCandidates {
		if c.setting == setting {
			return c.cands
		}
	}
	return nil
}

// probeSettingNames lists the settings the candidate table knows.
func probeSettingNames() []string {
	var out []string
	for _, c := range probeCandidates {
		out = append(out, c.setting)
	}
	return out
}

// ParseProbes reads a probes value as the manifest key and --probes take
// it: off, auto, or a comma-separated list of scenario keys.
func ParseProbes(value string) (ProbeSpec, error) {
	v := strings.TrimSpace(value)
	switch v {
	case ProbesOff, ProbesAuto:
		return ProbeSpec{Mode: v}, nil
	case "":
		return ProbeSpec{}, fmt.Errorf("expected off, auto, or a list of settings (%s)", strings.Join(probeSettingNames(), ", "))
	}
	spec := ProbeSpec{Mode: ProbesList}
	known := settingNames()
	for _, s := range strings.Split(v, ",") {
		name := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "--"), "_", "-")
		if !slices.Contains(known, name) || isOutputSetting(name) {
			return ProbeSpec{}, fmt.Errorf("%q is not a setting BLIS can toggle; expected off, auto, or a list of blis run keys such as %s",
				name, strings.Join(probeSettingNames(), ", "))
		}
		if slices.Contains(spec.Settings, name) {
			return ProbeSpec{}, fmt.Errorf("%q listed twice", name)
		}
		spec.Settings = append(spec.Settings, name)
	}
	return spec, nil
}

// ProbeData are an arm's gap re-checks and brackets (embedded in ArmPage).
type ProbeData struct {
	Probes []Probe `json:"gap_rechecks,omitempty"`
	// ProbeNote says why an arm that asked for probes has none.
	ProbeNote string    `json:"gap_recheck_note,omitempty"`
	Brackets  []Bracket `json:"brackets,omitempty"`
	// Sensitivity are the arm's sensitivity runs (sensitivity.go).
	Sensitivity []SensitivityPage `json:"sensitivity_runs,omitempty"`
}

// PageProbes is the page-level part (embedded in Page).
type PageProbes struct {
	ProbeRule string `json:"probe_rule,omitempty"`
}

// Probe is one gap re-check: one setting, every candidate value.
type Probe struct {
	Setting string `json:"setting"`
	// Provenance is the row's verdict ("MISMATCH (removable)",
	// "UNSTATED"), or "assumed" for a listed setting with no row.
	Provenance string `json:"provenance"`
	Measured   string `json:"measured,omitempty"`
	// Metrics are the headline metric keys compared.
	Metrics []string `json:"headline_metrics"`
	// Varied counts the levels the setting was varied on (an InferenceX
	// arm varies an assumed argument only on the rows that assume it).
	Varied     int              `json:"levels_varied"`
	Candidates []ProbeCandidate `json:"candidates"`
	Verdict    string           `json:"verdict"`
	Detail     string           `json:"detail"`
}

// ProbeCandidate is one value of a probe and what it did.
type ProbeCandidate struct {
	Value    string `json:"value"`
	Why      string `json:"why"`
	Headline bool   `json:"headline,omitempty"` // the value the page's headline ran
	Measured bool   `json:"measured,omitempty"` // the measured run's value
	Failed   string `json:"failed,omitempty"`
	// MAPE and SignedMean per headline metric key over the levels.
	MAPE       map[string]Num `json:"mape_pct,omitempty"`
	SignedMean map[string]Num `json:"signed_mean_pct,omitempty"`
	// MaxMove is, per headline metric, the largest |BLIS value / the
	// headline run's - 1| over the levels, in percent.
	MaxMove   map[string]Num `json:"max_move_pct,omitempty"`
	Identical bool           `json:"identical_to_headline,omitempty"`
	Levels    []ProbeLevel   `json:"levels,omitempty"`

	vals []Values // per arm level; NaN where the level failed
}

// ProbeLevel is one level of a candidate run.
type ProbeLevel struct {
	Series string         `json:"series,omitempty"`
	Level  Num            `json:"level"`
	Text   string         `json:"level_text"`
	BLIS   map[string]Num `json:"blis"`
	Errors map[string]Num `json:"signed_error_pct"`
	Failed string         `json:"failed,omitempty"`
	// Stated marks a level where the run states the setting, so the
	// probe kept the stated value (InferenceX rows that do not assume it).
	Stated bool `json:"stated_here,omitempty"`
}

// headlineMetrics are the metrics a probe judges by.
var headlineMetrics = []Metric{MTTFTMean, MTPOTMean, MITLMean, MOutputTokS}

// probeTarget is one setting to re-check, before it runs.
type probeTarget struct {
	setting    string // scenario key
	label      string // the provenance row's setting
	provenance string
	measured   string
	cands      []ProbeCandidate // the headline first
	applies    []bool           // per level; nil = every level
}

// effectiveKey is what a setting resolves to in BLIS, so candidates that
// simulate the same thing (0 and the chip's default, "auto" and the fitted
// pricer it picks) run once.
func effectiveKey(s *scenario.Scenario, res *scenario.Resolved, name string) string {
	if res != nil {
		switch name {
		case "compilation-config":
			mode := res.Deployment.CUDAGraphMode
			if mode == "" {
				mode = "FULL_AND_PIECEWISE"
			}
			return fmt.Sprintf("%s/%d/%v", mode, res.Deployment.MaxCUDAGraphCaptureSize, res.Deployment.CaptureSizes)
		case "step-model":
			return res.Pricer.Name()
		case "model":
			return res.Model.ID
		case "hardware":
			return res.Chip.Name
		}
	}
	return effective(s, res, name)
}

// probeTargets picks the settings to re-check from an arm's provenance
// rows: removable MISMATCH rows (candidates: BLIS's value, the measured
// one) and UNSTATED rows the candidate table knows (BLIS's value, then
// the table's). A list spec keeps only its settings, and adds the listed
// ones with no row that the table knows.
func probeTargets(rows []ProvRow, spec ProbeSpec) []probeTarget {
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
		case r.Verdict == Mismatch && r.Removable:
			want, ok := canonical(name, r.Measured)
			if !ok {
				continue
			}
			t.measured = r.Measured
			t.cands = []ProbeCandidate{{Value: r.BLIS, Why: "BLIS's value (the headline)", Headline: true},
				{Value: want, Why: "the measured run's value", Measured: true}}
		case r.Verdict == Unstated && candidatesFor(name) != nil:
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
			if slices.ContainsFunc(rows, func(r ProvRow) bool { return r.Setting == name || strings.HasSuffix(r.Setting, ": "+name) }) ||
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
type probeRun func(level int, setting, value string) (Values, error)

// probeResolve resolves level's scenario with one setting changed, for
// effectiveKey ("" value: unchanged).
type probeResolve func(level int, setting, value string) (*scenario.Scenario, *scenario.Resolved, error)

// runProbes runs every target's candidates on every level it applies to
// (b.parallel: the result does not depend on the workers) and judges them.
// levels are the arm's page levels (measured values, failures); headline
// BLIS's headline values per level.
func (b *builder) runProbes(targets []probeTarget, levels []LevelPage, headline []Values, run probeRun, resolve probeResolve) []Probe {
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
			c.vals = make([]Values, len(levels))
			for li := range levels {
				c.vals[li] = headline[li]
				if levels[li].Failed != "" {
					c.vals[li] = noValues()
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
			c.vals[j.l] = noValues()
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
func probeMetrics(levels []LevelPage) []Metric {
	var out []Metric
	for _, m := range headlineMetrics {
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
func summarizeCandidate(c *ProbeCandidate, head []Values, levels []LevelPage, ms []Metric) {
	c.MAPE, c.SignedMean, c.MaxMove = map[string]Num{}, map[string]Num{}, map[string]Num{}
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
			if e := SignedError(v, l.meas[m]); !math.IsNaN(e) {
				errs = append(errs, e)
			}
			if h != 0 && !math.IsNaN(h) && !math.IsNaN(v) {
				move = math.Max(move, math.Abs(v/h-1)*100)
			} else if math.IsNaN(h) != math.IsNaN(v) {
				move = math.Inf(1)
			}
		}
		st := Summarize(errs)
		if st.N > 0 {
			c.MAPE[key], c.SignedMean[key] = Num(st.MAPE), Num(st.SignedMean)
		} else {
			c.MAPE[key], c.SignedMean[key] = nan(), nan()
		}
		if !c.Headline {
			c.MaxMove[key] = Num(move)
		}
	}
	if c.Headline {
		c.MaxMove = nil
	}
	for li, l := range levels {
		pl := ProbeLevel{Series: l.Series, Level: l.Level, Text: l.Text, BLIS: map[string]Num{}, Errors: map[string]Num{}}
		if l.Failed != "" {
			pl.Failed = "the headline run failed"
			c.Levels = append(c.Levels, pl)
			continue
		}
		for _, m := range ms {
			key := m.Info().Key
			if v := c.vals[li][m]; !math.IsNaN(v) {
				pl.BLIS[key] = Num(v)
			}
			if e := SignedError(c.vals[li][m], l.meas[m]); !math.IsNaN(e) {
				pl.Errors[key] = Num(e)
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

// judgeProbe applies ProbeRule with threshold t (percent / percentage
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
		p.Detail = fmt.Sprintf("largest move %s%% (%s at %s)%s", fixed(Num(bigMove), 2), metricName(bigKey), bigVal, failNote)
		return
	}
	if p.Provenance == Mismatch+" (removable)" {
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
			p.Verdict, p.Detail = ProbeMaterial, fmt.Sprintf("moves %s by %s%%; no headline MAPE computable", metricName(bigKey), fixed(Num(bigMove), 1))
			return
		}
		var worse []string
		var parts []string
		for _, k := range p.Metrics {
			a, bb := head.MAPE[k].F(), meas.MAPE[k].F()
			if math.IsNaN(a) || math.IsNaN(bb) {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %s -> %s", metricName(k), fixed(Num(a), 1), fixed(Num(bb), 1)))
			if bb-a > t {
				worse = append(worse, metricName(k))
			}
		}
		detail := fmt.Sprintf("at the measured value %s the mean headline MAPE goes %s%% -> %s%% (%s)", meas.Value,
			fixed(Num(mh), 1), fixed(Num(mc), 1), strings.Join(parts, ", "))
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
	p.Detail = fmt.Sprintf("moves %s by up to %s%% (at %s)", metricName(bigKey), fixed(Num(bigMove), 1), bigVal)
	if best != "" {
		p.Detail += fmt.Sprintf("; closest to the measurement: %s (mean headline MAPE %s%%)", best, fixed(Num(bestM), 1))
	}
	p.Detail += failNote
}

// metricName is a metric key's page name.
func metricName(key string) string {
	for m := Metric(0); m < NumMetrics; m++ {
		if m.Info().Key == key {
			return m.Info().Name
		}
	}
	return key
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
func finishProbes(ap *ArmPage, spec ProbeSpec, probes []Probe, levels []LevelPage, headline []Values) {
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
	headline := make([]Values, len(lv))
	for i := range lv {
		headline[i] = noValues()
		if lv[i].simErr == nil && lv[i].result != nil {
			headline[i] = fileBLISValues(&lv[i])
		}
	}
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
	run := func(i int, name, value string) (Values, error) {
		x := fileLevel{run: lv[i].run, sc: lv[i].sc}
		x.sc.MetricPercentiles = slices.Clone(lv[i].sc.MetricPercentiles)
		if err := setKey(&x.sc, name, value); err != nil {
			return noValues(), err
		}
		simulateLevel(&x)
		if x.simErr != nil {
			return noValues(), x.simErr
		}
		return fileBLISValues(&x), nil
	}
	probes := b.runProbes(targets, ap.Levels, headline, run, resolve)
	finishProbes(ap, spec, probes, ap.Levels, headline)
}

// fileBLISValues is BLIS's side of a simulated file level, computed as
// the page computes it: from records where the measured run has them.
func fileBLISValues(x *fileLevel) Values {
	if len(x.run.Requests) > 0 {
		return RecordValues(ReqsFromResult(x.result, turnsOf(x.result)))
	}
	return ResultValues(x.result)
}

// ---- InferenceX arms ----

// ixProbes re-checks an InferenceX arm's gaps. An assumed recipe argument
// varies only on the rows that assume it; the others keep the stated
// value.
func (b *builder) ixProbes(a *Arm, ap *ArmPage, plans []*Plan, preds []Prediction, fails []*Skip) {
	spec := b.armProbeSpec(a)
	if spec.Mode == ProbesOff || spec.Mode == "" {
		return
	}
	// Map each page level (sorted by series) back to its plan by the
	// source ixArm wrote: the CSV row.
	csvRel := b.rel(b.m.Path(a.InferenceX.CSV))
	bySource := map[string]int{}
	for i, p := range plans {
		bySource[fmt.Sprintf("%s line %d (%s)", csvRel, p.Row.Line, p.Row.ID)] = i
	}
	planOf := make([]int, len(ap.Levels))
	headline := make([]Values, len(ap.Levels))
	for li, l := range ap.Levels {
		planOf[li] = -1
		headline[li] = noValues()
		if pi, ok := bySource[l.Source]; ok {
			planOf[li] = pi
		}
		if pi := planOf[li]; pi >= 0 && fails[pi] == nil {
			headline[li][MTTFTMean], headline[li][MTPOTMean] = preds[pi].TTFTMeanMs, preds[pi].TPOTMeanMs
		}
	}
	targets := probeTargets(ap.Provenance, spec)
	for ti := range targets {
		t := &targets[ti]
		if t.provenance != Unstated {
			continue
		}
		t.applies = make([]bool, len(ap.Levels))
		for li := range ap.Levels {
			if pi := planOf[li]; pi >= 0 {
				recipeKey, _, multi := strings.Cut(t.label, ": ")
				if x, ok := argOfPlan(plans[pi], t.setting); ok && x.Assumed && (!multi || plans[pi].Recipe.Key == recipeKey) {
					t.applies[li] = true
				}
			}
		}
	}
	plan := func(li int, name, value string) (*Plan, error) {
		pi := planOf[li]
		if pi < 0 {
			return nil, fmt.Errorf("no plan")
		}
		p := *plans[pi]
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
	run := func(li int, name, value string) (Values, error) {
		p, err := plan(li, name, value)
		if err != nil {
			return noValues(), err
		}
		pred, sk := simulate(p)
		if sk != nil {
			return noValues(), fmt.Errorf("%s: %s", sk.Reason, sk.Detail)
		}
		v := noValues()
		v[MTTFTMean], v[MTPOTMean] = pred.TTFTMeanMs, pred.TPOTMeanMs
		return v, nil
	}
	probes := b.runProbes(targets, ap.Levels, headline, run, resolve)
	finishProbes(ap, spec, probes, ap.Levels, headline)
}
