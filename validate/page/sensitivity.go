package page

import (
	"fmt"
	"slices"

	"blis/validate/score"
)

// Sensitivity runs: an arm may ask for re-runs of its replay with a
// setting the measured run did not have as BLIS replays it — at minimum
// "gaps over N s compressed", the approximation of a client's idle-gap cap
// that a trace or session replay cannot otherwise reproduce. They answer
// "how far would this move the error", not "how close is BLIS", so the page
// reports them in their own section, labelled as sensitivity runs, and
// never in the headline numbers or the regression gate.

// fileSensitivity runs a file arm's sensitivity runs (called by fileArm
// after its levels are scored).
func (b *builder) fileSensitivity(a *Arm, ap *ArmPage, lv []fileLevel) {
	if len(a.Sensitivity) == 0 {
		return
	}
	headline := blisValues(ap.Levels)
	ms := probeMetrics(ap.Levels)
	type job struct{ r, l int }
	var jobs []job
	cands := make([]ProbeCandidate, len(a.Sensitivity))
	for ri := range a.Sensitivity {
		cands[ri].vals = make([]score.Values, len(lv))
		for li := range lv {
			cands[ri].vals[li] = score.NoValues()
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
