package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"blis/sim"
)

// LoadSpec is inference-perf's `load:` section (kubernetes-sigs/inference-perf
// config/loadgen/config.py and loadgen/load_timer.py, 2026): stages of a
// given rate and duration run one after the other, so a profile of several
// rates is one run. Without stages the load is vllm bench's request process
// (--request-rate, --burstiness, --num-prompts).
type LoadSpec struct {
	// Type is load.type: "constant" (the default) or "poisson".
	Type string
	// Stages is load.stages; empty means no stages.
	Stages []LoadStage
	// Interval is load.interval, seconds between the end of a stage and the
	// start of the next (0 means inference-perf's default, 1).
	Interval float64
}

// LoadStage is one inference-perf standard load stage.
type LoadStage struct {
	Rate     float64 // requests per second, > 0
	Duration float64 // seconds, > 0
}

// Load types of LoadSpec.Type.
const (
	LoadConstant = "constant"
	LoadPoisson  = "poisson"
)

// DefaultLoadSpec returns inference-perf's defaults (no stages).
func DefaultLoadSpec() LoadSpec { return LoadSpec{Type: LoadConstant, Interval: 1} }

// StageRequests is how many requests each stage sends: ⌊rate × duration⌋,
// as inference-perf's load generator computes it.
func (l LoadSpec) StageRequests() []int64 {
	out := make([]int64, len(l.Stages))
	for i, st := range l.Stages {
		out[i] = int64(st.Rate * st.Duration)
	}
	return out
}

// Requests is the number of requests of all stages.
func (l LoadSpec) Requests() int64 {
	n := int64(0)
	for _, k := range l.StageRequests() {
		n += k
	}
	return n
}

// withDefaults fills the zero fields with inference-perf's defaults.
func (l LoadSpec) withDefaults() LoadSpec {
	d := DefaultLoadSpec()
	if l.Type == "" {
		l.Type = d.Type
	}
	if l.Interval == 0 {
		l.Interval = d.Interval
	}
	return l
}

// maxStageRequests bounds one run's staged requests (a billion), so a
// mistyped rate does not run for days.
const maxStageRequests = 1_000_000_000

// Validate checks the spec; errors name the flags.
func (l LoadSpec) Validate() error {
	l = l.withDefaults()
	switch l.Type {
	case LoadConstant, LoadPoisson:
	default:
		return badInput("--load-type", quoteIfOdd(l.Type), "must be constant or poisson")
	}
	if !(l.Interval >= 0) || math.IsInf(l.Interval, 1) || l.Interval > maxSpanSeconds {
		return badInput("--load-interval", fmtFloat(l.Interval), fmt.Sprintf("must be a number of seconds in [0, %g]", float64(maxSpanSeconds)))
	}
	total, n := 0.0, 0.0
	for i, st := range l.Stages {
		key := fmt.Sprintf("--stages: stage %d", i+1)
		if !(st.Rate > 0) || math.IsInf(st.Rate, 1) || st.Rate > 1e6 {
			return badInput(key+" rate", fmtFloat(st.Rate), "must be a number in (0, 1e6] (requests per second)")
		}
		if !(st.Duration > 0) || st.Duration > maxSpanSeconds {
			return badInput(key+" duration", fmtFloat(st.Duration), fmt.Sprintf("must be a number in (0, %g] (seconds)", float64(maxSpanSeconds)))
		}
		total += st.Duration + l.Interval
		n += math.Floor(st.Rate * st.Duration)
	}
	if total > maxSpanSeconds {
		return badInput("--stages", strconv.Itoa(len(l.Stages))+" stages", fmt.Sprintf("span %s s with their intervals; at most %g", fmtFloat(total), float64(maxSpanSeconds)))
	}
	if n > maxStageRequests {
		return badInput("--stages", strconv.Itoa(len(l.Stages))+" stages", fmt.Sprintf("send %s requests in all; at most %d", fmtFloat(n), maxStageRequests))
	}
	return nil
}

// stageClock releases the requests of a staged load, mirroring
// inference-perf's load timers (loadgen/load_timer.py):
//
//   - a stage sends ⌊rate × duration⌋ requests;
//   - constant (ConstantLoadTimer): exponential gaps rescaled so they sum to
//     the stage's duration;
//   - poisson (PoissonLoadTimer): for each second a Poisson(rate) count (a
//     second with none is skipped), spread over that second by exponential
//     gaps rescaled to it;
//   - stage k+1 starts Interval after stage k ended (its duration, or its
//     last arrival if later). inference-perf also waits for a stage's
//     requests to drain before the interval, which a source cannot know.
//
// Each stage draws from its own RNG stream (stream + the stage's index).
type stageClock struct {
	spec   LoadSpec
	seed   int64
	stream string
	counts []int64

	stage      int
	stageI     int64 // requests released in this stage
	stageStart float64
	lastAt     float64 // seconds, latest arrival so far

	// constant stages
	cRNG  *rand.Rand
	cScl  float64
	cTime float64
	// poisson stages
	pRNG  *rand.Rand
	pWin  float64   // start of the current one-second window
	pBuf  []float64 // arrival times left in the window
	pHead int
}

// newStageClock returns the clock of a validated spec with stages.
func newStageClock(spec LoadSpec, seed int64, stream string) *stageClock {
	c := &stageClock{spec: spec.withDefaults(), seed: seed, stream: stream, counts: spec.StageRequests()}
	c.startStage(0, 0)
	return c
}

// startStage prepares stage k starting at t seconds.
func (c *stageClock) startStage(k int, t float64) {
	c.stage, c.stageI, c.stageStart = k, 0, t
	if k >= len(c.spec.Stages) {
		return
	}
	st := c.spec.Stages[k]
	name := c.stream + strconv.Itoa(k)
	if c.spec.Type == LoadConstant {
		// n exponential gaps scaled to sum to the duration: a first pass
		// learns the sum, a second replays them.
		pre := sim.RNG(c.seed, name)
		sum := 0.0
		for range c.counts[k] {
			sum += pre.ExpFloat64() / st.Rate
		}
		c.cScl, c.cTime = 0, t
		if sum > 0 {
			c.cScl = st.Duration / sum
		}
		c.cRNG = sim.RNG(c.seed, name)
	} else {
		c.pRNG = sim.RNG(c.seed, name)
		c.pWin, c.pBuf, c.pHead = t, c.pBuf[:0], 0
	}
}

// next returns the next request's release time, its stage, its position
// within the stage, and false when every stage is done.
func (c *stageClock) next() (at time.Duration, stage int, i int64, ok bool) {
	for c.stage < len(c.counts) && c.stageI >= c.counts[c.stage] {
		st := c.spec.Stages[c.stage]
		end := max(c.stageStart+st.Duration, c.lastAt)
		c.startStage(c.stage+1, end+c.spec.Interval)
	}
	if c.stage >= len(c.counts) {
		return 0, 0, 0, false
	}
	t := c.nextTime()
	c.lastAt = max(c.lastAt, t)
	i = c.stageI
	c.stageI++
	return secondsToDuration(t), c.stage, i, true
}

// nextTime returns the next arrival of the current stage, seconds.
func (c *stageClock) nextTime() float64 {
	st := c.spec.Stages[c.stage]
	if c.spec.Type == LoadConstant {
		c.cTime += c.cRNG.ExpFloat64() / st.Rate * c.cScl
		return c.cTime
	}
	for c.pHead >= len(c.pBuf) {
		k := 0
		for acc := c.pRNG.ExpFloat64(); acc <= st.Rate; acc += c.pRNG.ExpFloat64() {
			k++
		}
		if k == 0 {
			c.pWin++
			continue
		}
		c.pBuf, c.pHead = c.pBuf[:0], 0
		sum := 0.0
		for range k {
			g := c.pRNG.ExpFloat64() / float64(k)
			c.pBuf = append(c.pBuf, g)
			sum += g
		}
		t := c.pWin
		for i, g := range c.pBuf {
			t += g / sum
			c.pBuf[i] = t
		}
		c.pWin = t
	}
	t := c.pBuf[c.pHead]
	c.pHead++
	return t
}

// staged re-times a dataset's standalone requests onto a staged load: the
// dataset supplies prompts and lengths, the clock their release times.
type staged struct {
	src   Source
	clock *stageClock
}

func (s *staged) Next(r *Request) bool {
	at, _, _, ok := s.clock.next()
	if !ok || !s.src.Next(r) {
		return false
	}
	r.Arrival = at
	return true
}

func (s *staged) Err() error   { return Err(s.src) }
func (s *staged) Close() error { return Close(s.src) }
