// Package specdecode models how many of a speculative proposer's draft
// tokens the target model accepts: per-position acceptance schedules (from
// rates, a mean acceptance length, measured counts or a named preset), the
// per-row sampler the engine draws from, and the parsers of BLIS's
// --spec-acceptance flag and vLLM's --speculative-config JSON.
//
// It is a leaf package: the engine draws acceptances from it, the command
// line parses into it, and nothing here knows about requests or batches.
package specdecode

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxPositions is the most draft positions a Schedule holds (and the most
// num_speculative_tokens BLIS simulates): enough for every published
// proposer setting, and small enough that per-position counters fit in a
// fixed array (engine.Stats stays cheap to copy and sum).
const MaxPositions = 16

// Schedule is a proposer's acceptance profile: u[j] is the UNCONDITIONAL
// probability that the draft at position j+1 is accepted, i.e. that the
// first j+1 drafts all are (rejection sampling stops at the first
// rejection). This is what vLLM's spec-decode metrics report as
// num_accepted_tokens_per_pos[j] / num_drafts
// (vllm/v1/spec_decode/metrics.py). The rates are non-increasing.
//
// The zero Schedule has no positions: every draft is rejected. Schedules
// are values (comparable, no shared storage), so configs holding one stay
// comparable and cheap to copy.
type Schedule struct {
	u [MaxPositions]float64
	k int
}

// mk builds a schedule from at most MaxPositions validated rates.
func mk(u []float64) Schedule {
	s := Schedule{k: len(u)}
	copy(s.u[:], u)
	return s
}

// FromRates builds a schedule from per-position unconditional rates, each
// in [0, 1] and non-increasing (a later position can never be accepted
// more often than an earlier one).
func FromRates(u []float64) (Schedule, error) {
	if len(u) > MaxPositions {
		return Schedule{}, fmt.Errorf("%d acceptance rates: at most %d positions", len(u), MaxPositions)
	}
	for j, x := range u {
		if math.IsNaN(x) || x < 0 || x > 1 {
			return Schedule{}, fmt.Errorf("acceptance rate %v at position %d: must be in [0, 1]", x, j+1)
		}
		if j > 0 && x > u[j-1] {
			return Schedule{}, fmt.Errorf("acceptance rate %v at position %d exceeds %v at position %d: "+
				"rates must be non-increasing (rejection sampling stops at the first rejection)", x, j+1, u[j-1], j)
		}
	}
	return mk(u), nil
}

// FromMean builds the k-position schedule of i.i.d. acceptance: every draft
// is accepted with the same conditional probability α, so u_j = α^j, with
// α solved (bisection) so that the mean acceptance length 1 + Σ_{j≤k} α^j
// equals a. a must lie in [1, k+1].
func FromMean(a float64, k int) (Schedule, error) {
	if k < 0 || k > MaxPositions {
		return Schedule{}, fmt.Errorf("%d speculative tokens: must be in [0, %d]", k, MaxPositions)
	}
	if math.IsNaN(a) || a < 1 || a > float64(k+1) {
		return Schedule{}, fmt.Errorf("mean acceptance length %v with %d speculative tokens: must be in [1, %d]", a, k, k+1)
	}
	target := a - 1
	sum := func(al float64) float64 {
		s, p := 0.0, 1.0
		for j := 0; j < k; j++ {
			p *= al
			s += p
		}
		return s
	}
	lo, hi := 0.0, 1.0
	for range 100 { // Σ α^j is increasing in α on [0, 1]
		mid := (lo + hi) / 2
		if sum(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	al := (lo + hi) / 2
	u := make([]float64, k)
	p := 1.0
	for j := range u {
		p *= al
		u[j] = min(p, 1)
	}
	return mk(u), nil
}

// FromCounts builds a schedule from measured counters (vLLM's
// SpecDecodingStats): numDrafts drafts proposed, accepted[j] of them
// accepted at position j+1.
func FromCounts(numDrafts int64, accepted []int64) (Schedule, error) {
	if numDrafts < 1 {
		return Schedule{}, fmt.Errorf("num_drafts %d: must be ≥ 1", numDrafts)
	}
	if len(accepted) > MaxPositions {
		return Schedule{}, fmt.Errorf("%d positions of accepted counts: at most %d", len(accepted), MaxPositions)
	}
	u := make([]float64, len(accepted))
	for j, c := range accepted {
		if c < 0 || c > numDrafts {
			return Schedule{}, fmt.Errorf("accepted count %d at position %d: must be in [0, num_drafts %d]", c, j+1, numDrafts)
		}
		if j > 0 && c > accepted[j-1] {
			return Schedule{}, fmt.Errorf("accepted count %d at position %d exceeds %d at position %d: "+
				"counts must be non-increasing (a draft is accepted only after every earlier one)", c, j+1, accepted[j-1], j)
		}
		u[j] = float64(c) / float64(numDrafts)
	}
	return mk(u), nil
}

// K is the number of positions the schedule describes.
func (s Schedule) K() int { return s.k }

// Rate is u_j for position j (1-based); 0 beyond the schedule.
func (s Schedule) Rate(j int) float64 {
	if j < 1 || j > s.k {
		return 0
	}
	return s.u[j-1]
}

// Rates returns a copy of the per-position rates.
func (s Schedule) Rates() []float64 { return append([]float64(nil), s.u[:s.k]...) }

// MeanLength is the mean acceptance length 1 + Σ u_j: tokens a row emits
// per verification step when it carries all K drafts (vLLM's
// "Mean acceptance length").
func (s Schedule) MeanLength() float64 {
	m := 1.0
	for _, x := range s.u[:s.k] {
		m += x
	}
	return m
}

// Resize returns the schedule for k drafts. Fewer positions truncate
// (the first k rates are what a shorter proposer sees, the chain being the
// same). More positions extend by continuing the last conditional ratio
// ρ = u_K / u_{K−1} (u_1 itself when K = 1), so u_{j+1} = ρ·u_j: the
// proposer's latest measured per-step acceptance is assumed to hold
// further out. An empty schedule stays all-zero. k is clamped to
// [0, MaxPositions].
func (s Schedule) Resize(k int) Schedule {
	k = max(0, min(k, MaxPositions))
	if k <= s.k {
		return mk(s.u[:k])
	}
	u := make([]float64, k)
	copy(u, s.u[:s.k])
	n := s.k
	if n == 0 {
		return mk(u)
	}
	rho := s.u[0]
	if n >= 2 {
		rho = 0
		if s.u[n-2] > 0 {
			rho = s.u[n-1] / s.u[n-2]
		}
	}
	for j := n; j < k; j++ {
		u[j] = u[j-1] * rho
	}
	return mk(u)
}

// String lists the rates as the rates: form of --spec-acceptance.
func (s Schedule) String() string {
	var b strings.Builder
	b.WriteString("rates:")
	for j, x := range s.u[:s.k] {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(x, 'g', 6, 64))
	}
	return b.String()
}
