package page

import (
	"errors"
	"fmt"
	"math"

	"blis/cluster"
	"blis/metrics"
	"blis/metrics/format"
	"blis/metrics/format/aiperf"
	"blis/scenario"
	"blis/validate/score"
	"blis/workload"
)

// The cold full prefill: the first request of a run, sent with an empty
// prefix cache and nothing else in flight, so its TTFT is one whole
// prefill with nothing sharing the steps — the single cleanest TTFT a run
// has (InferenceX's agentic runs: the c1 warm-up primer). Where records
// exist, the page compares it on both sides.

// FirstCold is the index of reqs' first request when it ran its prefill
// alone: the earliest sent, successful, and no other request sent before
// its first token arrived (a request sent at the same instant shares its
// first step). -1 when the first request does not qualify.
func FirstCold(reqs []score.Req) int {
	first := -1
	for i := range reqs {
		if first < 0 || reqs[i].Start < reqs[first].Start {
			first = i
		}
	}
	if first < 0 || !reqs[first].OK {
		return -1
	}
	q := &reqs[first]
	firstToken := q.Start + int64(q.TTFT)
	for i := range reqs {
		if i != first && reqs[i].Start < max(firstToken, q.Start+1) {
			return -1
		}
	}
	return first
}

// firstOnly yields its source's first request and ends.
type firstOnly struct {
	src  workload.Source
	done bool
}

func (f *firstOnly) Next(r *workload.Request) bool {
	if f.done {
		return false
	}
	f.done = true
	return f.src.Next(r)
}

// simulateFirst replays only the scenario's first request, alone, on an
// empty engine: BLIS's cold full prefill. Warm-ups are copies of the
// first request, so this is also the first request BLIS simulates for a
// level with warm-ups (which the recorder leaves out).
func simulateFirst(sc scenario.Scenario) (q score.Req, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("internal error: %v", v)
		}
	}()
	res, err := sc.Resolve()
	if err != nil {
		return q, err
	}
	if ss, ok := res.Source.(workload.StreamSource); ok {
		defer ss.Close()
	}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{Percentiles: sc.MetricPercentiles, Detailed: true})
	if err != nil {
		return q, err
	}
	src := &firstOnly{src: res.Source}
	out, err := cluster.Run(cluster.Config{Engine: res.Engine, Pricer: res.Pricer, MaxConcurrency: 1, Seed: sc.Seed,
		FrontendLatency: res.ClientConfig().FrontendLatency}, src, rec)
	if err != nil {
		return q, err
	}
	reqs := score.ReqsFromResult(rec.Summarize(metrics.SummaryInput{Duration: out.Duration}))
	if len(reqs) != 1 {
		return q, errors.New("the workload has no first request")
	}
	return reqs[0], nil
}

// coldPrefill finds an arm's cold full prefill: at the lowest level whose
// measured first request (warm-up records included where the file keeps
// them) ran its prefill alone. BLIS's side is its first request replayed
// alone, except where the run's warm-ups are not in the file: then both
// sides are the first benchmark request, and BLIS's must qualify too.
func (b *builder) coldPrefill(ai int, a *Arm, ap *ArmPage, lv []fileLevel) error {
	anyRecords := false
	for i, l := range a.Levels {
		x := &lv[i]
		if x.simErr != nil || len(x.run.Requests) == 0 {
			continue
		}
		anyRecords = true
		var warm []metrics.MeasuredRequest
		if l.Format == format.AIPerf {
			w, err := aiperf.ReadWarmups(b.m.Path(l.Path))
			if err != nil {
				return b.inputErr(l.Line, fmt.Sprintf("arms[%d].levels[%d].measured", ai, i), l.Path, err)
			}
			warm = w
		}
		all := score.ReqsFromMeasured(&metrics.MeasuredRun{Requests: append(warm, x.run.Requests...)})
		mi := FirstCold(all)
		if mi < 0 {
			continue
		}
		m := all[mi]
		cp := &ColdPrefill{Level: score.Num(l.Value), Text: l.Text, MeasuredID: m.ID, MeasuredInput: m.InputTokens,
			MeasuredTTFT: score.Num(float64(m.TTFT) / 1e6), BLISTTFT: score.NaN(), Error: score.NaN(), What: "first request"}
		isWarm := mi < len(warm)
		var bq score.Req
		switch {
		case isWarm || x.sc.NumWarmups == 0:
			if isWarm {
				cp.What = "warm-up primer"
			}
			q, err := simulateFirst(x.sc)
			if err != nil {
				cp.Note = "BLIS could not replay the first request: " + err.Error()
				ap.ColdPrefill = cp
				return nil
			}
			bq = q
		default:
			cp.What = fmt.Sprintf("first benchmark request after %d warm-ups (not in the measured file; the prefix cache may hold the warm-ups' prompt)", x.sc.NumWarmups)
			breqs := score.ReqsFromResult(x.result)
			bi := FirstCold(breqs)
			if bi < 0 {
				cp.Note = "BLIS's first benchmark request did not run its prefill alone"
				ap.ColdPrefill = cp
				return nil
			}
			bq = breqs[bi]
		}
		cp.BLISInput, cp.BLISTTFT = bq.InputTokens, score.Num(float64(bq.TTFT)/1e6)
		if bq.InputTokens == m.InputTokens {
			cp.Error = score.Num(score.SignedError(float64(bq.TTFT), float64(m.TTFT)))
		} else {
			cp.Note = fmt.Sprintf("not the same request: %d input tokens measured, %d in BLIS's first request", m.InputTokens, bq.InputTokens)
		}
		if math.IsNaN(cp.Error.F()) && cp.Note == "" {
			cp.Note = "the measured TTFT is 0"
		}
		ap.ColdPrefill = cp
		return nil
	}
	if anyRecords {
		ap.ColdPrefillNote = "No level's first measured request ran its prefill alone (another request was sent before its first token), so no cold full prefill is reported."
	} else {
		ap.ColdPrefillNote = "The measured results have no per-request records, so no cold full prefill is reported."
	}
	return nil
}

// bindArm binds every level whose measured input has records and
// published aggregates, and flags the pairs of UNBOUND levels.
func (b *builder) bindArm(a *Arm, ap *ArmPage, lv []fileLevel, pairing *ArmPairing) {
	for i, l := range a.Levels {
		lb := score.BindLevel(lv[i].run)
		if lb == nil {
			continue
		}
		lb.Level, lb.Text, lb.Source = score.Num(l.Value), l.Text, b.rel(b.m.Path(l.Path))
		ap.Binding = append(ap.Binding, *lb)
		if lb.Verdict == score.Unbound && pairing != nil {
			for j := range pairing.Levels {
				if pairing.Levels[j].Level.F() == l.Value {
					pairing.Levels[j].NotBound = true
				}
			}
		}
	}
	if len(ap.Binding) == 0 {
		ap.BindingNote = "No level's measured input has both per-request records and published aggregates BLIS can recompute, so nothing is bound."
	}
}
