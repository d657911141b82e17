package workload

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"blis/sim"
)

// Values of RandomSpec.RangeStyle (--random-range-style).
const (
	// RangeStyleCurrent mirrors `vllm bench serve --dataset-name random`
	// on vLLM main in 2026 (datasets.py @0056b87, serve.py @009e6d4):
	// vllm/benchmarks/datasets.py RandomDataset.sample / get_sampling_params
	// (since split out to vllm/benchmarks/datasets/random.py) and
	// vllm/benchmarks/serve.py get_request, default path (no ramp-up).
	RangeStyleCurrent = "current"
	// RangeStyleLegacy mirrors the old benchmarks/benchmark_serving.py
	// (sample_random_requests, get_request), as still run by InferenceX's
	// bench_serving fork.
	RangeStyleLegacy = "legacy"
)

// MaxTokens bounds every token count in a RandomSpec (2^28), so that sums of
// lengths stay exact in an int on every platform.
const MaxTokens = 1 << 28

// maxSpanSeconds bounds num-prompts/request-rate, the expected span of the
// arrivals, so that every arrival fits a time.Duration with room to spare.
const maxSpanSeconds = 1e9

// minBurstiness is the smallest finite --burstiness accepted: below it the
// gamma gaps are almost all zero and a few astronomically large.
const minBurstiness = 1e-3

// RandomSpec is `vllm bench serve --dataset-name random`, with vLLM's flag
// names. Start from DefaultRandomSpec: the zero value is not valid (zero
// prompts, zero rate).
type RandomSpec struct {
	// InputLen is --random-input-len (default 1024): the centre of the
	// sampled part of each prompt. The shared prefix comes on top of it.
	InputLen int
	// OutputLen is --random-output-len (default 128): the centre of the
	// output-length range. Output lengths are honoured exactly (ignore_eos).
	OutputLen int
	// RangeRatio is --random-range-ratio (default 0). Current style: lengths
	// are uniform over the integers in [⌊L·(1−r)⌋, ⌈L·(1+r)⌉], r in [0, 1),
	// so 0 means fixed lengths. Legacy style: uniform over [⌊L·r⌋, L],
	// r in [0, 1], so 1 means fixed lengths (the old client's default);
	// where that range starts at 0 BLIS starts it at 1, since the old
	// client's empty prompt or max_tokens=0 is a request vLLM rejects.
	RangeRatio float64
	// RangeStyle is --random-range-style (BLIS's own flag; vLLM has none):
	// which client to mirror, RangeStyleCurrent (default; "" means it too)
	// or RangeStyleLegacy. It decides the length ranges above and the
	// arrival process (see RequestRate).
	RangeStyle string
	// PrefixLen is --random-prefix-len (default 0): tokens shared by every
	// prompt, placed before the sampled part and added to its length (both
	// clients build prompt_len = prefix_len + sampled input length).
	PrefixLen int
	// NumPrompts is --num-prompts (default 1000).
	NumPrompts int
	// RequestRate is --request-rate in requests per second (default
	// math.Inf(1): every request at time 0; see ParseRate). Otherwise the
	// gaps are gamma(shape=Burstiness, scale=1/(RequestRate·Burstiness)),
	// mean 1/RequestRate. Current style draws num-prompts gaps, sends
	// request i at the cumulative sum of gaps 0..i, and rescales those sums
	// so the last request goes out at exactly NumPrompts/RequestRate (the
	// first one is therefore not at 0). Legacy style sends request 0 at 0
	// and each later one one fresh gap after the previous, unscaled.
	RequestRate float64
	// Burstiness is --burstiness (default 1: Poisson arrivals). Below 1 is
	// burstier, above 1 more regular; the squared coefficient of variation
	// of the gaps is 1/Burstiness. math.Inf(1) gives constant gaps of
	// 1/RequestRate (current style only, as vLLM does).
	Burstiness float64
	// NumSpecialTokens is the tokenizer's num_special_tokens_to_add() (1
	// for a tokenizer that prepends BOS, 0 for many; default 0). It is not a
	// flag. The completions endpoint adds these tokens to every prompt, so
	// they count in Request.InputLen, as a first segment shared by all
	// requests (the bench's own prompt_len leaves them out). Current style
	// subtracts them from --random-input-len before sampling, so with r = 0
	// the server sees exactly --random-input-len + --random-prefix-len
	// tokens; legacy style does not subtract them.
	NumSpecialTokens int
}

// DefaultRandomSpec returns vLLM's defaults for `vllm bench serve
// --dataset-name random`.
func DefaultRandomSpec() RandomSpec {
	return RandomSpec{
		InputLen:    1024,
		OutputLen:   128,
		RangeRatio:  0,
		RangeStyle:  RangeStyleCurrent,
		PrefixLen:   0,
		NumPrompts:  1000,
		RequestRate: math.Inf(1),
		Burstiness:  1,
	}
}

// NewRandom returns a Source of spec.NumPrompts requests, generated lazily
// from seed in O(1) memory. Each prompt is up to three segments: the
// tokenizer's special tokens (when NumSpecialTokens > 0), the shared prefix
// (when PrefixLen > 0; its ID depends on seed only) and the sampled part
// (when its length is > 0; its ID is unique to (seed, Index)). Two sources
// built with the same seed yield the same IDs: give each its own seed.
//
// Next reuses one backing array for Request.Prompt: a caller that keeps a
// prompt past the next call must copy it. Next allocates nothing.
//
// For current-style arrivals at a finite rate, NewRandom draws all
// NumPrompts gaps once to learn their sum (O(NumPrompts) time, O(1) memory)
// and Next draws them again from the same stream.
//
// Errors are *InputError (errors.Is(err, ErrBadInput)) naming the flag.
func NewRandom(spec RandomSpec, seed int64) (Source, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	s := &randomSource{
		n:      int64(spec.NumPrompts),
		legacy: spec.RangeStyle == RangeStyleLegacy,
	}
	s.inLo, s.inHi, s.outLo, s.outHi = spec.bounds()

	if spec.NumSpecialTokens > 0 {
		s.buf[s.nFixed] = Segment{ID: splitmix64(tagSpecial), Len: spec.NumSpecialTokens}
		s.nFixed++
	}
	seedMix := splitmix64(uint64(seed))
	if spec.PrefixLen > 0 {
		s.buf[s.nFixed] = Segment{ID: splitmix64(seedMix ^ tagPrefix), Len: spec.PrefixLen}
		s.nFixed++
	}
	s.fixedLen = spec.NumSpecialTokens + spec.PrefixLen
	s.uniqueBase = splitmix64(seedMix ^ tagUnique)

	s.inRNG = sim.RNG(seed, "workload.input-lens")
	s.outRNG = sim.RNG(seed, "workload.output-lens")

	if !math.IsInf(spec.RequestRate, 1) {
		s.timed = true
		s.shape = spec.Burstiness
		s.scale = 1 / (spec.RequestRate * spec.Burstiness)
		s.constGap = 1 / spec.RequestRate
		if !s.legacy {
			pre := sim.RNG(seed, "workload.arrivals")
			for range s.n {
				s.total += s.gap(pre)
			}
			s.target = float64(s.n) / spec.RequestRate
		}
		s.arrRNG = sim.RNG(seed, "workload.arrivals")
	}
	return s, nil
}

// Tags separating the ID families derived from one seed.
const (
	tagSpecial = 0x7370656369616c00 // "special"
	tagPrefix  = 0x7072656669780000 // "prefix"
	tagUnique  = 0x756e697175650000 // "unique"
)

type randomSource struct {
	n, next int64

	inLo, inHi   int // sampled part of the prompt, inclusive
	outLo, outHi int
	inRNG        *rand.Rand
	outRNG       *rand.Rand

	buf        [3]Segment // special tokens, prefix, sampled part; Request.Prompt aliases it
	nFixed     int        // segments shared by every request, at the front of buf
	fixedLen   int        // their total length
	uniqueBase uint64

	legacy bool
	timed  bool // finite --request-rate
	arrRNG *rand.Rand
	shape  float64 // --burstiness
	scale  float64 // 1/(rate·burstiness)
	// constGap is the gap when burstiness is inf.
	constGap float64
	cum      float64 // seconds: sum of the gaps drawn so far
	total    float64 // current style: sum of all n gaps
	target   float64 // current style: n/rate, the last arrival
}

func (s *randomSource) Next(r *Request) bool {
	if s.next >= s.n {
		return false
	}
	i := s.next
	s.next++

	in := s.inLo
	if s.inHi > s.inLo {
		in += s.inRNG.IntN(s.inHi - s.inLo + 1)
	}
	out := s.outLo
	if s.outHi > s.outLo {
		out += s.outRNG.IntN(s.outHi - s.outLo + 1)
	}
	np := s.nFixed
	if in > 0 {
		s.buf[np] = Segment{ID: splitmix64(s.uniqueBase ^ uint64(i)), Len: in}
		np++
	}

	r.Index = i
	r.Arrival = s.arrival()
	r.InputLen = s.fixedLen + in
	r.OutputLen = out
	r.Prompt = s.buf[:np]
	r.Unique = s.nFixed == 0
	return true
}

// arrival returns the send time of the request being emitted.
func (s *randomSource) arrival() time.Duration {
	if !s.timed {
		return 0
	}
	if s.legacy {
		// benchmark_serving.py get_request: yield, then sleep one gap.
		at := s.cum
		s.cum += s.gap(s.arrRNG)
		return secondsToDuration(at)
	}
	// serve.py get_request: cumulative gaps, rescaled so the last one is
	// n/rate; left as drawn when they sum to 0. target·(cum/total) rather
	// than cum·(target/total): cum/total is in [0, 1], so nothing overflows.
	s.cum += s.gap(s.arrRNG)
	if s.total > 0 {
		return secondsToDuration(s.target * (s.cum / s.total))
	}
	return secondsToDuration(s.cum)
}

func (s *randomSource) gap(r *rand.Rand) float64 {
	if math.IsInf(s.shape, 1) {
		return s.constGap
	}
	return gammaVariate(r, s.shape) * s.scale
}

// secondsToDuration rounds to the nanosecond, saturating at the largest Duration.
func secondsToDuration(sec float64) time.Duration {
	ns := math.Round(sec * 1e9)
	if ns >= 1<<63 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// bounds returns the inclusive ranges of the sampled prompt part and of the
// output length, as the mirrored client computes them (floats and floor/ceil
// in Python's order, so the edges agree to the token).
func (spec RandomSpec) bounds() (inLo, inHi, outLo, outHi int) {
	r := spec.RangeRatio
	if spec.RangeStyle == RangeStyleLegacy {
		// sample_random_requests: np.random.randint(int(L*r), L+1).
		inLo = int(math.Floor(float64(spec.InputLen) * r))
		if spec.PrefixLen+inLo < 1 {
			// The old client would send an empty prompt, which the server
			// rejects; BLIS samples at least one token.
			inLo = 1
		}
		inHi = spec.InputLen
		// The old client could draw 0 output tokens (max_tokens=0, which
		// vLLM rejects); BLIS starts the range at 1.
		outLo = max(int(math.Floor(float64(spec.OutputLen)*r)), 1)
		outHi = spec.OutputLen
		return
	}
	// get_sampling_params: special tokens come off the input length first.
	realLen := max(0, spec.InputLen-spec.NumSpecialTokens)
	inLo = int(math.Floor(float64(realLen) * (1 - r)))
	inHi = int(math.Ceil(float64(realLen) * (1 + r)))
	outLo = max(int(math.Floor(float64(spec.OutputLen)*(1-r))), 1)
	outHi = max(int(math.Ceil(float64(spec.OutputLen)*(1+r))), 1)
	return
}

func (spec RandomSpec) validate() error {
	switch spec.RangeStyle {
	case "", RangeStyleCurrent, RangeStyleLegacy:
	default:
		return badInput("--random-range-style", quoteIfOdd(spec.RangeStyle), "must be current or legacy")
	}
	legacy := spec.RangeStyle == RangeStyleLegacy
	tokens := func(flag string, v, lo int) error {
		if v < lo || v > MaxTokens {
			return badInput(flag, strconv.Itoa(v), fmt.Sprintf("must be an integer in [%d, %d]", lo, MaxTokens))
		}
		return nil
	}
	if err := tokens("--random-input-len", spec.InputLen, 0); err != nil {
		return err
	}
	if err := tokens("--random-output-len", spec.OutputLen, 1); err != nil {
		return err
	}
	if err := tokens("--random-prefix-len", spec.PrefixLen, 0); err != nil {
		return err
	}
	if spec.NumSpecialTokens < 0 || spec.NumSpecialTokens > MaxTokens {
		return badInput("num_special_tokens (tokenizer)", strconv.Itoa(spec.NumSpecialTokens),
			fmt.Sprintf("must be an integer in [0, %d]", MaxTokens))
	}

	r := spec.RangeRatio
	if legacy {
		if !(r >= 0 && r <= 1) { // written so NaN fails
			return badInput("--random-range-ratio", fmtFloat(r), "must be in [0, 1] for --random-range-style legacy")
		}
	} else if !(r >= 0 && r < 1) {
		return badInput("--random-range-ratio", fmtFloat(r), "must be in [0, 1) for --random-range-style current")
	}

	// Every prompt needs a token. Current style: vLLM's own check in
	// RandomDataset.sample. Legacy style: NewRandom lifts a zero lower edge
	// to 1, so only an input length of 0 with no prefix is left to refuse.
	inLo, inHi, _, _ := spec.bounds()
	if !legacy && spec.PrefixLen+inLo < 1 {
		return badInput("--random-input-len", strconv.Itoa(spec.InputLen), fmt.Sprintf(
			"too small: with --random-prefix-len %d, --random-range-ratio %s and %d tokenizer special tokens "+
				"the shortest prompt would have %d tokens; need --random-prefix-len + "+
				"⌊(--random-input-len − special tokens)·(1 − ratio)⌋ ≥ 1",
			spec.PrefixLen, fmtFloat(r), spec.NumSpecialTokens, spec.PrefixLen+inLo))
	}
	if legacy && spec.PrefixLen+inHi < 1 {
		return badInput("--random-input-len", strconv.Itoa(spec.InputLen),
			"too small: with --random-prefix-len 0 every prompt would be empty; must be ≥ 1")
	}

	if spec.NumPrompts < 1 {
		return badInput("--num-prompts", strconv.Itoa(spec.NumPrompts), "must be an integer ≥ 1")
	}

	rate := spec.RequestRate
	if !(rate > 0) { // NaN too
		return badInput("--request-rate", fmtFloat(rate), "must be a number > 0 (requests per second), or inf")
	}
	if span := float64(spec.NumPrompts) / rate; span > maxSpanSeconds {
		return badInput("--request-rate", fmtFloat(rate), fmt.Sprintf(
			"too low: %d prompts would span %s s; must be at least --num-prompts/%g",
			spec.NumPrompts, fmtFloat(span), maxSpanSeconds))
	}

	b := spec.Burstiness
	if !(b >= minBurstiness) { // NaN too
		return badInput("--burstiness", fmtFloat(b), fmt.Sprintf("must be ≥ %g, or inf", minBurstiness))
	}
	if math.IsInf(b, 1) && legacy && !math.IsInf(rate, 1) {
		return badInput("--burstiness", "inf", fmt.Sprintf(
			"must be finite (≥ %g) for --random-range-style legacy: the old client has no constant-gap case",
			minBurstiness))
	}
	return nil
}
