package validate

import (
	"fmt"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Sensitivity runs: an arm may ask for re-runs of its replay with a
// setting the measured run did not have as BLIS replays it — at minimum
// "gaps over N s compressed", the approximation of a client's idle-gap cap
// that a trace or session replay cannot otherwise reproduce. They answer
// "how far would this move the error", not "how close is BLIS", so the page
// reports them in their own section, labelled as sensitivity runs, and
// never in the headline numbers or the regression gate.

// SensitivityNote labels every sensitivity run on the page.
const SensitivityNote = "This is a sensitivity run, not a like-for-like comparison."

// SensitivityRun is one re-run an arm asks for.
type SensitivityRun struct {
	Label string
	// Settings are the blis run keys it changes, applied after the
	// level's own.
	Settings []Stated
	Line     int
}

// SensitivityPage is one sensitivity run's numbers.
type SensitivityPage struct {
	Label    string   `json:"label"`
	Settings []string `json:"settings"` // key=value, as applied
	Note     string   `json:"note"`
	Metrics  []string `json:"metrics"`
	// MAPE and SignedMean of the sensitivity run; ReplayMAPE the as-replayed
	// (headline) run's, over the same levels.
	MAPE       map[string]Num `json:"mape_pct"`
	SignedMean map[string]Num `json:"signed_mean_pct"`
	ReplayMAPE map[string]Num `json:"as_replayed_mape_pct"`
	// Identical says the run changed nothing (the workload has no gap the
	// setting touches).
	Identical bool         `json:"identical_to_replay,omitempty"`
	Failed    string       `json:"failed,omitempty"`
	Levels    []ProbeLevel `json:"levels"`
}

// sensitivity reads an arm's sensitivity: list. Each entry is
// {compress-gaps-over-s: N} (optionally with a label) or {label: L,
// blis: {key: value, ...}}.
func (p *mparser) sensitivity(v *yaml.Node, key string) []SensitivityRun {
	var out []SensitivityRun
	items := p.seq(v, key)
	if p.err == nil && len(items) == 0 {
		p.fail(v, key, "", "needs at least one run: {compress-gaps-over-s: N} or {label: ..., blis: {...}}")
	}
	seen := map[string]int{}
	for i, it := range items {
		path := fmt.Sprintf("%s[%d]", key, i)
		r := SensitivityRun{Line: it.Line}
		gap := 0.0
		var hasGap, hasBLIS bool
		p.fields(it, path, []string{"label", "compress-gaps-over-s", "blis"}, nil, func(k string, x *yaml.Node) {
			kk := join(path, k)
			switch k {
			case "label":
				r.Label = p.text(x, kk)
			case "compress-gaps-over-s":
				hasGap = true
				gap = p.float(x, kk, 0, 1e9)
				if p.err == nil && !(gap > 0) {
					p.fail(x, kk, x.Value, "expected a number of seconds > 0 (idle gaps longer than it are cut to it)")
				}
			case "blis":
				hasBLIS = true
				r.Settings = p.settings(x, kk, true)
				if p.err == nil && len(r.Settings) == 0 {
					p.fail(x, kk, "", "needs at least one blis run key")
				}
				for _, st := range r.Settings {
					if p.err == nil && st.Unstated {
						p.fail(x, join(kk, st.Name), "unstated", "a sensitivity run sets a value")
					}
				}
			}
		})
		if p.err != nil {
			return nil
		}
		switch {
		case hasGap == hasBLIS:
			p.fail(it, path, "", "give exactly one of compress-gaps-over-s: N or blis: {...}")
		case hasBLIS && r.Label == "":
			p.fail(it, join(path, "label"), "", "required with blis: (say what the run changes)")
		}
		if hasGap {
			n := strconv.FormatFloat(gap, 'f', -1, 64)
			// Session delays (think and tool time) over N s, and whole-system
			// idle over N s, both cut to N s.
			r.Settings = []Stated{{Name: "trace-idle-gap-cap-seconds", Value: n, Source: "the manifest", Line: it.Line},
				{Name: "system-idle-gap-cap-seconds", Value: n, Source: "the manifest", Line: it.Line}}
			if r.Label == "" {
				r.Label = "gaps over " + n + " s compressed"
			}
		}
		if prev, dup := seen[r.Label]; dup && p.err == nil {
			p.fail(it, path, r.Label, fmt.Sprintf("the same label as the run on line %d", prev))
		}
		seen[r.Label] = it.Line
		out = append(out, r)
	}
	return out
}

// probes reads a probes: value: off, auto, one setting, or a list of
// settings.
func (p *mparser) probes(v *yaml.Node, key string) *ProbeSpec {
	if p.err != nil {
		return nil
	}
	text := ""
	switch {
	case v.Kind == yaml.ScalarNode && v.Tag != "!!null":
		text = v.Value
	case v.Kind == yaml.SequenceNode:
		for i, c := range v.Content {
			s := p.scalar(c, fmt.Sprintf("%s[%d]", key, i))
			if i > 0 {
				text += ","
			}
			text += s
		}
		if p.err == nil && len(v.Content) == 0 {
			p.fail(v, key, "", "an empty list: write off instead")
		}
	default:
		p.fail(v, key, "", "expected off, auto, or a list of settings")
	}
	if p.err != nil {
		return nil
	}
	spec, err := ParseProbes(text)
	if err != nil {
		p.fail(v, key, text, err.Error())
		return nil
	}
	spec.Line = v.Line
	return &spec
}

// fileSensitivity runs a file arm's sensitivity runs (called by fileArm
// after its levels are scored).
func (b *builder) fileSensitivity(a *Arm, ap *ArmPage, lv []fileLevel) {
	if len(a.Sensitivity) == 0 {
		return
	}
	headline := make([]Values, len(lv))
	for i := range lv {
		headline[i] = noValues()
		if lv[i].simErr == nil && lv[i].result != nil {
			headline[i] = fileBLISValues(&lv[i])
		}
	}
	ms := probeMetrics(ap.Levels)
	type job struct{ r, l int }
	var jobs []job
	cands := make([]ProbeCandidate, len(a.Sensitivity))
	for ri := range a.Sensitivity {
		cands[ri].vals = make([]Values, len(lv))
		for li := range lv {
			cands[ri].vals[li] = noValues()
			if lv[li].simErr == nil {
				jobs = append(jobs, job{ri, li})
			}
		}
	}
	errs := make([]error, len(jobs))
	b.parallel(len(jobs), func(i int) {
		j := jobs[i]
		x := fileLevel{run: lv[j.l].run, sc: lv[j.l].sc}
		x.sc.MetricPercentiles = slices.Clone(lv[j.l].sc.MetricPercentiles)
		for _, st := range a.Sensitivity[j.r].Settings {
			_ = setKey(&x.sc, st.Name, st.Value) // checked when the manifest was read
		}
		simulateLevel(&x)
		if x.simErr != nil {
			errs[i] = x.simErr
			return
		}
		cands[j.r].vals[j.l] = fileBLISValues(&x)
	})
	for i, j := range jobs {
		if errs[i] != nil && cands[j.r].Failed == "" {
			cands[j.r].Failed = fmt.Sprintf("level %s: %v", ap.Levels[j.l].Text, errs[i])
		}
	}
	head := ProbeCandidate{Headline: true, vals: headline}
	summarizeCandidate(&head, headline, ap.Levels, ms)
	for ri, r := range a.Sensitivity {
		c := &cands[ri]
		summarizeCandidate(c, headline, ap.Levels, ms)
		sp := SensitivityPage{Label: r.Label, Note: SensitivityNote, MAPE: c.MAPE, SignedMean: c.SignedMean,
			ReplayMAPE: head.MAPE, Identical: c.Identical && c.Failed == "", Failed: c.Failed, Levels: c.Levels}
		for _, st := range r.Settings {
			sp.Settings = append(sp.Settings, st.Name+"="+st.Value)
		}
		for _, m := range ms {
			sp.Metrics = append(sp.Metrics, m.Info().Key)
		}
		ap.Sensitivity = append(ap.Sensitivity, sp)
	}
}
