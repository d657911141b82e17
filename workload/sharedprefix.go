package workload

import (
	"fmt"
	"strconv"
	"time"

	"blis/sim"
)

// SharedPrefixSpec is inference-perf's `data: {type: shared_prefix,
// shared_prefix: {...}}`, field for field (kubernetes-sigs/inference-perf
// config/datagen/config.py SharedPrefix, 2026); its `load:` section is
// TraceSpec.Load. Each zero field takes inference-perf's default.
type SharedPrefixSpec struct {
	NumGroups           int  // num_groups (alias num_unique_system_prompts), default 10
	NumPromptsPerGroup  int  // num_prompts_per_group (alias num_users_per_system_prompt), default 10
	SystemPromptLen     int  // system_prompt_len, default 100
	QuestionLen         int  // question_len, default 50
	OutputLen           int  // output_len, default 50
	EnableMultiTurnChat bool // enable_multi_turn_chat
}

// DefaultSharedPrefixSpec returns inference-perf's defaults.
func DefaultSharedPrefixSpec() SharedPrefixSpec {
	return SharedPrefixSpec{NumGroups: 10, NumPromptsPerGroup: 10, SystemPromptLen: 100, QuestionLen: 50, OutputLen: 50}
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
//   - with load stages (TraceSpec.Load) the requests are released by
//     inference-perf's load timers (stageClock); without, --num-prompts
//     requests (0: one per prompt) by vllm bench's request process
//     (TraceSpec.RequestRate, Burstiness).
//
// Lengths are fixed (inference-perf's distribution forms are not
// supported). Memory: O(groups × prompts per group) for the shuffle.
func NewSharedPrefix(spec TraceSpec) (Source, error) {
	p := spec.SharedPrefix.withDefaults()
	if err := p.validate(); err != nil {
		return nil, err
	}
	if err := spec.Load.Validate(); err != nil {
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

	if len(spec.Load.Stages) == 0 {
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
		s.flat, s.flatN = arr, int64(n)
	} else {
		s.clock = newStageClock(spec.Load, spec.Seed, "workload.shared-prefix.stage")
		s.stageN = spec.Load.StageRequests()
	}
	return s, nil
}

// withDefaults is p with inference-perf's default in each zero field.
func (p SharedPrefixSpec) withDefaults() SharedPrefixSpec {
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
	return p
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

	// without stages: vllm bench's process, flatN requests
	flat  *arrivals
	flatN int64
	flatI int64
	// with stages
	clock  *stageClock
	stageN []int64 // requests per stage

	buf [2]Segment
}

func (s *sharedPrefixSource) Next(r *Request) bool {
	var at time.Duration
	var i, stageN int64 // the request's place in its stage, the stage's size
	stage := 0
	if s.flat != nil {
		if s.flatI >= s.flatN {
			return false
		}
		at, i, stageN = s.flat.next(), s.flatI, s.flatN
		s.flatI++
	} else {
		var ok bool
		if at, stage, i, ok = s.clock.next(); !ok {
			return false
		}
		stageN = s.stageN[stage]
	}
	slot := i % s.nSlots
	round := i / s.nSlots
	orig := int64(s.perm[slot])
	group := orig / int64(s.spec.NumPromptsPerGroup)
	q := Segment{ID: splitmix64(s.questionBase ^ uint64(orig)), Len: s.spec.QuestionLen}
	*r = Request{Index: s.index, Arrival: at, OutputLen: s.spec.OutputLen}
	s.index++
	if s.spec.EnableMultiTurnChat {
		r.SessionID = uint64(int64(stage)*s.nSlots+slot) + 1
		r.Turn = int(round)
		r.Final = i+s.nSlots >= stageN
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
