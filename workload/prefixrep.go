package workload

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"blis/sim"
)

// PrefixRepetitionSpec is `vllm bench serve --dataset-name
// prefix_repetition`, with vLLM's flag names. The zero value stands for
// vLLM's defaults (DefaultPrefixRepetitionSpec); any other value is taken
// as given.
type PrefixRepetitionSpec struct {
	PrefixLen   int // --prefix-repetition-prefix-len (default 256)
	SuffixLen   int // --prefix-repetition-suffix-len (default 256)
	NumPrefixes int // --prefix-repetition-num-prefixes (default 10)
	OutputLen   int // --prefix-repetition-output-len (default 128)
}

// DefaultPrefixRepetitionSpec returns vLLM's defaults
// (PrefixRepetitionRandomDataset.DEFAULT_*).
func DefaultPrefixRepetitionSpec() PrefixRepetitionSpec {
	return PrefixRepetitionSpec{PrefixLen: 256, SuffixLen: 256, NumPrefixes: 10, OutputLen: 128}
}

// withDefaults is p, or vLLM's defaults for the zero value.
func (p PrefixRepetitionSpec) withDefaults() PrefixRepetitionSpec {
	if p == (PrefixRepetitionSpec{}) {
		return DefaultPrefixRepetitionSpec()
	}
	return p
}

// NewPrefixRepetition returns vllm bench's prefix_repetition requests,
// mirroring vllm/benchmarks/datasets/prefix_repetition.py (@237145e, 2026):
// NumPrefixes random prefixes of PrefixLen tokens, each followed by
// ⌊NumPrompts / NumPrefixes⌋ unique suffixes of SuffixLen tokens (so
// NumPrefixes·⌊NumPrompts/NumPrefixes⌋ requests, fewer than NumPrompts
// when it does not divide), all with OutputLen output tokens, in a seeded
// random order (vLLM's random.shuffle; --disable-shuffle keeps them grouped
// by prefix), released by vllm bench serve's request process
// (RequestRate, Burstiness). NumPrompts 0 means vLLM's 1000.
//
// The order is drawn lazily — each request picks its prefix with
// probability proportional to the prefix's remaining requests, which is
// exactly a uniform shuffle — so memory is O(NumPrefixes), not
// O(requests).
func NewPrefixRepetition(spec TraceSpec) (Source, error) {
	p := spec.PrefixRepetition.withDefaults()
	n := spec.NumPrompts
	if n == 0 {
		n = 1000
	}
	if err := p.validate(n); err != nil {
		return nil, err
	}
	per := n / p.NumPrefixes
	total := int64(per) * int64(p.NumPrefixes)
	arr, err := newArrivals(spec.RequestRate, spec.Burstiness, total, spec.Seed, "workload.arrivals")
	if err != nil {
		return nil, err
	}
	seedMix := splitmix64(uint64(spec.Seed))
	s := &prefixRepSource{
		spec: p, per: per, total: total, arr: arr, shuffle: !spec.DisableShuffle,
		prefixBase: splitmix64(seedMix ^ tagRepPrefix),
		uniqueBase: splitmix64(seedMix ^ tagUnique),
		rng:        sim.RNG(spec.Seed, "workload.prefix-repetition"),
	}
	if s.shuffle {
		s.left = newFenwick(p.NumPrefixes, int64(per))
	}
	return s, nil
}

const tagRepPrefix = 0x7265707072656600 // "repref"

func (p PrefixRepetitionSpec) validate(numPrompts int) error {
	tok := func(flag string, v, lo int) error {
		if v < lo || v > MaxTokens {
			return badInput(flag, strconv.Itoa(v), fmt.Sprintf("must be an integer in [%d, %d]", lo, MaxTokens))
		}
		return nil
	}
	if err := tok("--prefix-repetition-prefix-len", p.PrefixLen, 0); err != nil {
		return err
	}
	if err := tok("--prefix-repetition-suffix-len", p.SuffixLen, 0); err != nil {
		return err
	}
	if p.PrefixLen+p.SuffixLen < 1 {
		return badInput("--prefix-repetition-suffix-len", strconv.Itoa(p.SuffixLen),
			"prefix and suffix are both 0: every prompt would be empty")
	}
	if err := tok("--prefix-repetition-output-len", p.OutputLen, 1); err != nil {
		return err
	}
	if p.NumPrefixes < 1 || p.NumPrefixes > 1<<24 {
		return badInput("--prefix-repetition-num-prefixes", strconv.Itoa(p.NumPrefixes), "must be an integer in [1, 16777216]")
	}
	if numPrompts < p.NumPrefixes {
		return badInput("--num-prompts", strconv.Itoa(numPrompts), fmt.Sprintf(
			"must be ≥ --prefix-repetition-num-prefixes (%d), as vLLM requires", p.NumPrefixes))
	}
	return nil
}

type prefixRepSource struct {
	spec       PrefixRepetitionSpec
	per        int
	total      int64
	next       int64
	shuffle    bool
	left       fenwick
	rng        *rand.Rand
	arr        *arrivals
	prefixBase uint64
	uniqueBase uint64
	buf        [2]Segment
}

func (s *prefixRepSource) Next(r *Request) bool {
	if s.next >= s.total {
		return false
	}
	i := s.next
	s.next++
	var k int
	if s.shuffle {
		k = s.left.take(s.rng.Int64N(s.total - i))
	} else {
		k = int(i / int64(s.per))
	}
	np := 0
	if s.spec.PrefixLen > 0 {
		s.buf[np] = Segment{ID: splitmix64(s.prefixBase + uint64(k)), Len: s.spec.PrefixLen}
		np++
	}
	if s.spec.SuffixLen > 0 {
		s.buf[np] = Segment{ID: splitmix64(s.uniqueBase ^ uint64(i)), Len: s.spec.SuffixLen}
		np++
	}
	*r = Request{Index: i, Arrival: s.arr.next(), InputLen: s.spec.PrefixLen + s.spec.SuffixLen,
		OutputLen: s.spec.OutputLen, Prompt: s.buf[:np]}
	return true
}

// fenwick holds remaining counts per group and finds the group holding the
// k-th remaining item in O(log groups).
type fenwick struct {
	t    []int64 // 1-based
	mask int
}

func newFenwick(groups int, each int64) fenwick {
	f := fenwick{t: make([]int64, groups+1)}
	for i := 1; i <= groups; i++ {
		f.t[i] += each
		if j := i + i&-i; j <= groups {
			f.t[j] += f.t[i]
		}
	}
	f.mask = 1
	for f.mask*2 <= groups {
		f.mask *= 2
	}
	return f
}

// take finds the group of the k-th remaining item (0-based), removes one
// item from it and returns the group (0-based).
func (f *fenwick) take(k int64) int {
	pos := 0
	for step := f.mask; step > 0; step /= 2 {
		if next := pos + step; next < len(f.t) && f.t[next] <= k {
			pos = next
			k -= f.t[next]
		}
	}
	g := pos + 1 // 1-based group
	for i := g; i < len(f.t); i += i & -i {
		f.t[i]--
	}
	return g - 1
}
