package specdecode

import "fmt"

// Mode is how a Sampler draws its uniforms.
type Mode uint8

const (
	// Random draws each row's uniform from a seeded splitmix64 stream:
	// acceptance lengths vary from step to step as they do in a real
	// engine, with exactly the schedule's distribution.
	Random Mode = iota
	// Replay draws from the golden-ratio additive (Weyl) sequence, a
	// low-discrepancy sequence: after N draws of s drafts the count of
	// acceptances at every position is within O(log N) of N·u_j, so a
	// short run reproduces the measured per-position counts closely.
	Replay
)

func (m Mode) String() string {
	if m == Replay {
		return "replay"
	}
	return "random"
}

// ParseMode reads "random" or "replay".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "random":
		return Random, nil
	case "replay":
		return Replay, nil
	}
	return Random, fmt.Errorf("acceptance mode %q: use random or replay", s)
}

// golden is 2^64/φ, the increment of the golden-ratio Weyl sequence (and
// of splitmix64's state).
const golden = 0x9e3779b97f4a7c15

// Sampler draws, per verified row, how many of its drafts are accepted.
// It holds no pointers to shared state: each engine (each DP rank) owns
// its own, so ranks draw from independent streams whatever order they
// step in.
type Sampler struct {
	u     [MaxPositions]float64
	k     int
	mode  Mode
	state uint64
}

// NewSampler returns a sampler for sched in mode. Streams are independent
// for different (seed, stream) pairs and identical for equal ones.
func NewSampler(sched Schedule, mode Mode, seed, stream uint64) Sampler {
	s := Sampler{u: sched.u, k: sched.k, mode: mode}
	s.state = mix(mix(seed) ^ mix(stream+golden))
	return s
}

// K is the number of positions the sampler's schedule has.
func (s *Sampler) K() int { return s.k }

// Accept draws how many of a row's drafts are accepted (0..drafts): one
// uniform U per row, accepting positions j = 1, 2, … while U < u_j. As the
// rates are non-increasing this gives P(accepted ≥ j) = u_j exactly, and
// stops at the first rejection like vLLM's rejection sampler. Drafts
// beyond the schedule are never accepted.
func (s *Sampler) Accept(drafts int) int {
	if drafts <= 0 {
		return 0
	}
	s.state += golden
	x := s.state
	if s.mode == Random {
		x = mix(x)
	}
	u := float64(x>>11) * (1.0 / (1 << 53))
	n := min(drafts, s.k)
	a := 0
	for a < n && u < s.u[a] {
		a++
	}
	return a
}

// mix is splitmix64's output function (Steele, Lea & Flood 2014).
func mix(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
