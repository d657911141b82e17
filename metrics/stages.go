package metrics

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"blis/metrics/internal/pytext"
)

// Stage is one inference-perf load stage as the run ran it: its requested
// rate and duration and how many requests it sent. Request i of the timed
// run belongs to the stage whose cumulative count covers i.
type Stage struct {
	Rate     float64 // requests per second
	Duration float64 // seconds
	Requests int64   // ⌊Rate × Duration⌋
}

// StageOf returns the index of the stage request index belongs to (the
// last stage for an index past them all; -1 without stages).
func StageOf(stages []Stage, index int64) int {
	if len(stages) == 0 {
		return -1
	}
	end := int64(0)
	for k, st := range stages {
		end += st.Requests
		if index < end {
			return k
		}
	}
	return len(stages) - 1
}

// StageResult is one stage's share of the run, in vllm bench serve's
// units (ms), as inference-perf reports each stage of a staged load. Means
// and standard deviations come from running moments; medians and
// percentiles from streaming sketches (within DefaultRelativeAccuracy's
// bound), so a staged run's memory stays bounded.
type StageResult struct {
	Stage
	Completed, Failed int64
	DurationS         float64 // the stage's first send to its last response
	TotalInputTokens  int64
	TotalOutputTokens int64
	RequestThroughput float64 // completed / DurationS
	OutputThroughput  float64
	TTFT, TPOT, ITL   Stat
	E2EL              Stat
	HasITL            bool // the recorder was Detailed, so every gap was seen
	percentiles       []float64
}

// StageStats is a Sink that splits the run's requests into its load stages
// and keeps, per stage, counts, sums and sketches: O(stages), whatever the
// run's length.
type StageStats struct {
	stages []Stage
	per    []stageAcc
}

type stageAcc struct {
	completed, failed     int64
	in, out               int64
	first, last           time.Duration
	seen                  bool
	ttft, tpot, itl, e2el *Sketch // seconds
	itlSeen               bool
}

// sketchStat is a sketch's vLLM-style statistics in ms (values in seconds);
// zeros when it is empty.
func sketchStat(sk *Sketch, percentiles []float64) Stat {
	st := Stat{Percentiles: make([]float64, len(percentiles))}
	if sk.Count() == 0 {
		return st
	}
	st.Mean, st.Std, st.Median = sk.Mean()*1000, sk.Std()*1000, sk.Quantile(0.5)*1000
	for i, p := range percentiles {
		st.Percentiles[i] = sk.Quantile(p/100) * 1000
	}
	return st
}

// NewStageStats returns a sink for a run with these stages, whose sketches
// answer within relativeAccuracy (0: DefaultRelativeAccuracy).
func NewStageStats(stages []Stage, relativeAccuracy float64) *StageStats {
	if relativeAccuracy == 0 {
		relativeAccuracy = DefaultRelativeAccuracy
	}
	s := &StageStats{stages: stages, per: make([]stageAcc, len(stages))}
	for k := range s.per {
		a := &s.per[k]
		a.ttft, a.tpot, a.itl, a.e2el = NewSketch(relativeAccuracy), NewSketch(relativeAccuracy), NewSketch(relativeAccuracy), NewSketch(relativeAccuracy)
	}
	return s
}

// Request adds one finished request to its stage (see Sink).
func (s *StageStats) Request(q *RequestResult) error {
	k := StageOf(s.stages, q.Index)
	if k < 0 {
		return nil
	}
	a := &s.per[k]
	if !a.seen || q.Start < a.first {
		a.first = q.Start
	}
	if !a.seen || q.End > a.last {
		a.last = q.End
	}
	a.seen = true
	if !q.Success {
		a.failed++
		return nil
	}
	a.completed++
	a.in += int64(q.InputTokens)
	a.out += int64(q.OutputTokens)
	a.ttft.Add(Seconds(q.TTFT))
	a.e2el.Add(Seconds(q.Latency))
	if q.OutputTokens > 1 {
		// vLLM bench's TPOT: the decode time over the tokens after the first.
		a.tpot.Add(Seconds(q.Latency-q.TTFT) / float64(q.OutputTokens-1))
	}
	if q.ITLs != nil || q.OutputTokens <= 1 {
		a.itlSeen = true
		for _, g := range q.ITLs {
			a.itl.Add(Seconds(g))
		}
	}
	return nil
}

// Results returns every stage's statistics with these percentiles.
func (s *StageStats) Results(percentiles []float64) []StageResult {
	out := make([]StageResult, len(s.stages))
	for k := range s.stages {
		a := &s.per[k]
		r := StageResult{Stage: s.stages[k], Completed: a.completed, Failed: a.failed,
			TotalInputTokens: a.in, TotalOutputTokens: a.out, HasITL: a.itlSeen, percentiles: percentiles}
		if a.seen {
			r.DurationS = Seconds(a.last - a.first)
		}
		if r.DurationS > 0 {
			r.RequestThroughput = float64(a.completed) / r.DurationS
			r.OutputThroughput = float64(a.out) / r.DurationS
		}
		r.TTFT, r.TPOT = sketchStat(a.ttft, percentiles), sketchStat(a.tpot, percentiles)
		r.ITL, r.E2EL = sketchStat(a.itl, percentiles), sketchStat(a.e2el, percentiles)
		out[k] = r
	}
	return out
}

// stagesJSON is the result file's "stages" list: per stage its request,
// its counts and throughputs, and vLLM bench's per-metric keys.
func stagesJSON(stages []StageResult) pyRaw {
	var b bytes.Buffer
	b.WriteByte('[')
	for k, st := range stages {
		if k > 0 {
			b.WriteString(", ")
		}
		var o pyObject
		o.set("stage", int64(k))
		o.set("requested_rate", st.Rate)
		o.set("requested_duration", st.Duration)
		o.set("num_prompts", st.Requests)
		o.set("duration", st.DurationS)
		o.set("completed", st.Completed)
		o.set("failed", st.Failed)
		o.set("total_input_tokens", st.TotalInputTokens)
		o.set("total_output_tokens", st.TotalOutputTokens)
		o.set("request_throughput", st.RequestThroughput)
		o.set("output_throughput", st.OutputThroughput)
		for _, m := range st.metrics() {
			o.set("mean_"+m.name+"_ms", m.st.Mean)
			o.set("median_"+m.name+"_ms", m.st.Median)
			o.set("std_"+m.name+"_ms", m.st.Std)
			for i, p := range st.percentiles {
				o.set("p"+PercentileWord(p)+"_"+m.name+"_ms", m.st.Percentiles[i])
			}
		}
		var ob bytes.Buffer
		_ = o.encodeTo(&ob) // a bytes.Buffer does not fail
		b.Write(bytes.TrimSuffix(ob.Bytes(), []byte("\n")))
	}
	b.WriteByte(']')
	return pyRaw(b.Bytes())
}

type namedStat struct {
	name, label string
	st          Stat
}

// metrics lists the stage's metrics in vLLM's order; ITL only when every
// gap was seen.
func (st *StageResult) metrics() []namedStat {
	out := []namedStat{{MetricTTFT, "TTFT", st.TTFT}, {MetricTPOT, "TPOT", st.TPOT}}
	if st.HasITL {
		out = append(out, namedStat{MetricITL, "ITL", st.ITL})
	}
	return append(out, namedStat{MetricE2EL, "E2EL", st.E2EL})
}

// stageTable is the table's per-stage section, in the main table's style.
func stageTable(stages []StageResult) string {
	var b strings.Builder
	intRow := func(label string, v int64) { fmt.Fprintf(&b, "%-40s %-10d\n", label, v) }
	fRow := func(label string, v float64) { fmt.Fprintf(&b, "%-40s %-10s\n", label, pytext.Fixed2(v)) }
	b.WriteString(center(" Per load stage (inference-perf) ", '=') + "\n")
	for k, st := range stages {
		b.WriteString(center(fmt.Sprintf(" Stage %d: %g req/s for %g s ", k, st.Rate, st.Duration), '-') + "\n")
		intRow("Requests sent:", st.Requests)
		intRow("Successful requests:", st.Completed)
		intRow("Failed requests:", st.Failed)
		fRow("Stage duration (s):", st.DurationS)
		fRow("Request throughput (req/s):", st.RequestThroughput)
		fRow("Output token throughput (tok/s):", st.OutputThroughput)
		for _, m := range st.metrics() {
			fRow("Mean "+m.label+" (ms):", m.st.Mean)
			fRow("Median "+m.label+" (ms):", m.st.Median)
			for i, p := range st.percentiles {
				fRow("P"+PercentileWord(p)+" "+m.label+" (ms):", m.st.Percentiles[i])
			}
		}
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	return b.String()
}
