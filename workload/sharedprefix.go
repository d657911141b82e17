package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"blis/sim"
)

// SharedPrefixSpec is inference-perf's `data: {type: shared_prefix,
// shared_prefix: {...}}` with its `load:` section, field for field
// (kubernetes-sigs/inference-perf config/datagen/config.py SharedPrefix and
// config/loadgen/config.py, 2026). Each zero field takes inference-perf's
// default.
type SharedPrefixSpec struct {
	NumGroups           int  // num_groups (alias num_unique_system_prompts), default 10
	NumPromptsPerGroup  int  // num_prompts_per_group (alias num_users_per_system_prompt), default 10
	SystemPromptLen     int  // system_prompt_len, default 100
	QuestionLen         int  // question_len, default 50
	OutputLen           int  // output_len, default 50
	EnableMultiTurnChat bool // enable_multi_turn_chat

	// LoadType is load.type: "constant" (default) or "poisson".
	LoadType string
	// Stages is load.stages: run one after the other. Without stages BLIS
	// sends --num-prompts requests (0: one per prompt) with vllm bench's
	// request process (TraceSpec.RequestRate, Burstiness).
	Stages []LoadStage
	// Interval is load.interval, seconds between stages (0 means 1).
	Interval float64
}

// LoadStage is one inference-perf standard load stage.
type LoadStage struct {
	Rate     float64 // requests per second, > 0
	Duration float64 // seconds, > 0
}

// DefaultSharedPrefixSpec returns inference-perf's defaults.
func DefaultSharedPrefixSpec() SharedPrefixSpec {
	return SharedPrefixSpec{NumGroups: 10, NumPromptsPerGroup: 10, SystemPromptLen: 100, QuestionLen: 50, OutputLen: 50,
		LoadType: "constant", Interval: 1}
}

// NewSharedPrefix returns inference-perf's shared_prefix workload, mirroring
// datagen/synthetic/shared_prefix_datagen.py and loadgen/load_timer.py:
//
//   - NumGroups system prompts of SystemPromptLen tokens; each group has
//     NumPromptsPerGroup prompts = its system prompt + a unique question of
//     QuestionLen tokens; the prompt list is shuffled once (seeded);
//   - request i of a stage uses prompt i mod (groups × prompts per group),
//     so prompts repeat, whole, once the list is used up; every stage starts
//     again at prompt 0;
//   - with EnableMultiTurnChat, prompt slot s is a user session: its k-th
//     use in a stage is turn k, whose prompt is the session's whole history
//     (system prompt, earlier questions and replies) plus the question
//     again — PrevContext follow-ups; sessions start afresh each stage;
//   - a stage sends ⌊rate × duration⌋ requests. constant: exponential gaps
//     rescaled to sum to the duration; poisson: for each second a
//     Poisson(rate) count (a second with none is skipped), spread by
//     exponential gaps rescaled to that second. Stage k+1 starts Interval
//     after stage k ended (its duration, or its last arrival if later).
//     inference-perf also waits for a stage's requests to drain before the
//     interval, which a source cannot know.
//
// Lengths are fixed (inference-perf's distribution forms are not
// supported). Memory: O(groups × prompts per group) for the shuffle.
func NewSharedPrefix(spec TraceSpec) (Source, error) {
	p := spec.SharedPrefix
	d := DefaultSharedPrefixSpec()
	for _, f := range []struct {
		v   *int
		def int
	}{{&p.NumGroups, d.NumGroups}, {&p.NumPromptsPerGroup, d.NumPromptsPerGroup}, {&p.SystemPromptLen, d.SystemPromptLen},
		{&p.QuestionLen, d.QuestionLen}, {&p.OutputLen, d.OutputLen}} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if p.LoadType == "" {
		p.LoadType = d.LoadType
	}
	if p.Interval == 0 {
		p.Interval = d.Interval
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	nSlots := p.NumGroups * p.NumPromptsPerGroup
	s := &sharedPrefixSource{spec: p, nSlots: int64(nSlots), seed: spec.Seed}
	seedMix := splitmix64(uint64(spec.Seed))
	s.prefixBase = splitmix64(seedMix ^ tagSPPrefix)
	s.questionBase = splitmix64(seedMix ^ tagSPQuestion)
	rng := sim.RNG(spec.Seed, "workload.shared-prefix")
	s.perm = make([]int32, nSlots)
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	rng.Shuffle(nSlots, func(i, j int) { s.perm[i], s.perm[j] = s.perm[j], s.perm[i] })

	if len(p.Stages) == 0 {
		n := spec.NumPrompts
		if n == 0 {
			n = nSlots
		}
		if n < 0 {
			return nil, badInput("--num-prompts", strconv.Itoa(n), "must be ≥ 0 (0: one request per prompt)")
		}
		arr, err := newArrivals(spec.RequestRate, spec.Burstiness, int64(n), spec.Seed, "workload.arrivals")
		if err != nil {
			return nil, err
		}
		s.flat, s.stageN = arr, int64(n)
	} else {
		s.startStage(0, 0)
	}
	return s, nil
}

const (
	tagSPPrefix   = 0x7370707265660000 // "sppref"
	tagSPQuestion = 0x7370717565730000 // "spques"
)

func (p SharedPrefixSpec) validate() error {
	pos := func(key string, v, lo int) error {
		if v < lo || v > MaxTokens {
			return badInput(key, strconv.Itoa(v), fmt.Sprintf("must be an integer in [%d, %d]", lo, MaxTokens))
		}
		return nil
	}
	for _, c := range []struct {
		key string
		v   int
	}{{"--shared-prefix-num-groups", p.NumGroups}, {"--shared-prefix-num-prompts-per-group", p.NumPromptsPerGroup},
		{"--shared-prefix-system-prompt-len", p.SystemPromptLen}, {"--shared-prefix-question-len", p.QuestionLen},
		{"--shared-prefix-output-len", p.OutputLen}} {
		if err := pos(c.key, c.v, 1); err != nil {
			return err
		}
	}
	if int64(p.NumGroups)*int64(p.NumPromptsPerGroup) > 1<<24 {
		return badInput("--shared-prefix-num-prompts-per-group", strconv.Itoa(p.NumPromptsPerGroup),
			"--shared-prefix-num-groups × --shared-prefix-num-prompts-per-group must be ≤ 16777216")
	}
	switch p.LoadType {
	case "constant", "poisson":
	default:
		return badInput("load.type", quoteIfOdd(p.LoadType), "must be constant or poisson")
	}
	if !(p.Interval >= 0) || math.IsInf(p.Interval, 1) {
		return badInput("load.interval", fmtFloat(p.Interval), "must be a finite number ≥ 0 (seconds)")
	}
	total := 0.0
	for i, st := range p.Stages {
		key := fmt.Sprintf("load.stages[%d]", i)
		if !(st.Rate > 0) || math.IsInf(st.Rate, 1) || st.Rate > 1e6 {
			return badInput(key+".rate", fmtFloat(st.Rate), "must be a number in (0, 1e6] (requests per second)")
		}
		if !(st.Duration > 0) || st.Duration > maxSpanSeconds {
			return badInput(key+".duration", fmtFloat(st.Duration), fmt.Sprintf("must be a number in (0, %g] (seconds)", float64(maxSpanSeconds)))
		}
		total += st.Duration + p.Interval
	}
	if total > maxSpanSeconds {
		return badInput("load.stages", strconv.Itoa(len(p.Stages))+" stages", "span too long")
	}
	return nil
}

type sharedPrefixSource struct {
	spec         SharedPrefixSpec
	seed         int64
	nSlots       int64
	perm         []int32
	prefixBase   uint64
	questionBase uint64

	index int64 // across stages
	flat  *arrivals

	stage      int
	stageN     int64 // requests in this stage
	stageI     int64 // requests sent in this stage
	stageStart float64
	lastAt     float64 // seconds, latest arrival so far

	// constant stages
	cRNG  *rand.Rand
	cSum  float64
	cScl  float64
	cTime float64
	// poisson stages
	pRNG  *rand.Rand
	pWin  float64   // start of the current one-second window
	pBuf  []float64 // arrival times left in the window
	pHead int

	buf [2]Segment
}

// startStage prepares stage k starting at t seconds.
func (s *sharedPrefixSource) startStage(k int, t float64) {
	s.stage, s.stageI, s.stageStart = k, 0, t
	if k >= len(s.spec.Stages) {
		s.stageN = 0 // done
		return
	}
	st := s.spec.Stages[k]
	s.stageN = int64(st.Rate * st.Duration)
	name := "workload.shared-prefix.stage" + strconv.Itoa(k)
	if s.spec.LoadType == "constant" {
		// ConstantLoadTimer: n exponential gaps scaled to sum to the
		// duration; a first pass learns the sum, a second replays them.
		pre := sim.RNG(s.seed, name)
		sum := 0.0
		for range s.stageN {
			sum += pre.ExpFloat64() / st.Rate
		}
		s.cSum, s.cScl, s.cTime = sum, 0, t
		if sum > 0 {
			s.cScl = st.Duration / sum
		}
		s.cRNG = sim.RNG(s.seed, name)
	} else {
		s.pRNG = sim.RNG(s.seed, name)
		s.pWin, s.pBuf, s.pHead = t, s.pBuf[:0], 0
	}
}

// nextTime returns the next arrival of the current stage, seconds.
func (s *sharedPrefixSource) nextTime() float64 {
	st := s.spec.Stages[s.stage]
	if s.spec.LoadType == "constant" {
		s.cTime += s.cRNG.ExpFloat64() / st.Rate * s.cScl
		return s.cTime
	}
	for s.pHead >= len(s.pBuf) {
		// PoissonLoadTimer: a Poisson(rate) count for the next second
		// (counted as exponential arrivals within it), spread over that
		// second by ConstantLoadTimer(count, 1).
		k := 0
		for acc := s.pRNG.ExpFloat64(); acc <= st.Rate; acc += s.pRNG.ExpFloat64() {
			k++
		}
		if k == 0 {
			s.pWin++
			continue
		}
		s.pBuf, s.pHead = s.pBuf[:0], 0
		sum := 0.0
		for range k {
			g := s.pRNG.ExpFloat64() / float64(k)
			s.pBuf = append(s.pBuf, g)
			sum += g
		}
		t := s.pWin
		for i, g := range s.pBuf {
			t += g / sum
			s.pBuf[i] = t
		}
		s.pWin = t
	}
	t := s.pBuf[s.pHead]
	s.pHead++
	return t
}

func (s *sharedPrefixSource) Next(r *Request) bool {
	var at time.Duration
	if s.flat != nil {
		if s.stageI >= s.stageN {
			return false
		}
		at = s.flat.next()
	} else {
		for s.stageI >= s.stageN {
			if s.stage >= len(s.spec.Stages) {
				return false
			}
			st := s.spec.Stages[s.stage]
			end := max(s.stageStart+st.Duration, s.lastAt)
			s.startStage(s.stage+1, end+s.spec.Interval)
		}
		t := s.nextTime()
		s.lastAt = max(s.lastAt, t)
		at = secondsToDuration(t)
	}
	i := s.stageI
	s.stageI++
	slot := i % s.nSlots
	round := i / s.nSlots
	orig := int64(s.perm[slot])
	group := orig / int64(s.spec.NumPromptsPerGroup)
	q := Segment{ID: splitmix64(s.questionBase ^ uint64(orig)), Len: s.spec.QuestionLen}
	*r = Request{Index: s.index, Arrival: at, OutputLen: s.spec.OutputLen}
	s.index++
	if s.spec.EnableMultiTurnChat {
		r.SessionID = uint64(int64(s.stage)*s.nSlots+slot) + 1
		r.Turn = int(round)
		r.Final = i+s.nSlots >= s.stageN
		if round > 0 {
			r.PrevContext = true
			r.ContextLen = s.spec.SystemPromptLen + int(round)*(s.spec.QuestionLen+s.spec.OutputLen)
			s.buf[0] = q
			r.Prompt, r.InputLen = s.buf[:1], q.Len
			return true
		}
	}
	s.buf[0] = Segment{ID: splitmix64(s.prefixBase + uint64(group)), Len: s.spec.SystemPromptLen}
	s.buf[1] = q
	r.Prompt, r.InputLen = s.buf[:2], s.spec.SystemPromptLen+q.Len
	return true
}
