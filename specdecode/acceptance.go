package specdecode

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// AcceptanceSyntax is the grammar of --spec-acceptance, for help texts
// and error messages.
const AcceptanceSyntax = "PRESET | mean:LENGTH | rates:U1,U2,… | counts:NUM_DRAFTS,ACCEPTED1,ACCEPTED2,… " +
	"with an optional @random (default) or @replay suffix"

// Acceptance is a parsed --spec-acceptance value: where the schedule
// comes from and how it is sampled. The schedule for the deployment's k is
// resolved by ForK, since a mean length only fixes a schedule once k is
// known.
type Acceptance struct {
	Mode   Mode
	Preset string   // the preset's name, if one was named
	mean   float64  // mean: form (0 if not)
	sched  Schedule // preset, rates: and counts: forms
	text   string
}

// ParseAcceptance reads a --spec-acceptance value:
//
//	vllm-test-llama8b             a preset (Presets)
//	mean:3.51                     mean acceptance length, i.i.d. per position at the engine's k
//	rates:0.73,0.52,0.35          unconditional per-position rates, non-increasing, in [0, 1]
//	counts:4816,3500,2500,1800    num_drafts, then accepted drafts per position (vLLM's counters)
//	…@replay / …@random           sampling mode (default random)
func ParseAcceptance(s string) (Acceptance, error) {
	fail := func(format string, args ...any) (Acceptance, error) {
		return Acceptance{}, fmt.Errorf("--spec-acceptance %q: %s; allowed: %s", s, fmt.Sprintf(format, args...), AcceptanceSyntax)
	}
	a := Acceptance{text: s}
	body := s
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		m, err := ParseMode(s[i+1:])
		if err != nil {
			return fail("mode %q after @ is not random or replay", s[i+1:])
		}
		a.Mode, body = m, s[:i]
	}
	kind, arg, hasColon := strings.Cut(body, ":")
	if !hasColon {
		if body == "" {
			return fail("empty")
		}
		p, err := Preset(body)
		if err != nil {
			return fail("unknown preset %q (presets: %s)", body, strings.Join(PresetNames(), ", "))
		}
		a.Preset, a.sched = p.Name, p.Schedule
		return a, nil
	}
	switch kind {
	case "mean":
		x, err := strconv.ParseFloat(arg, 64)
		if err != nil || math.IsNaN(x) || x < 1 || x > MaxPositions+1 {
			return fail("mean acceptance length %q: want a number in [1, %d]", arg, MaxPositions+1)
		}
		a.mean = x
	case "rates":
		xs, err := floats(arg)
		if err != nil {
			return fail("rates: %v", err)
		}
		if a.sched, err = FromRates(xs); err != nil {
			return fail("%v", err)
		}
	case "counts":
		parts := strings.Split(arg, ",")
		if len(parts) < 2 {
			return fail("counts: want num_drafts then at least one per-position count")
		}
		ns := make([]int64, len(parts))
		for i, p := range parts {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil {
				return fail("counts: %q is not an integer", p)
			}
			ns[i] = n
		}
		var err error
		if a.sched, err = FromCounts(ns[0], ns[1:]); err != nil {
			return fail("%v", err)
		}
	default:
		return fail("unknown form %q", kind+":")
	}
	return a, nil
}

func floats(s string) ([]float64, error) {
	if s == "" {
		return nil, fmt.Errorf("no rates")
	}
	parts := strings.Split(s, ",")
	out := make([]float64, len(parts))
	for i, p := range parts {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", p)
		}
		out[i] = x
	}
	return out, nil
}

// ForK resolves the schedule for k speculative tokens: a mean length
// becomes the i.i.d. schedule of that mean at k (it must be at most k+1);
// rates, counts and presets are truncated or extended (Schedule.Resize).
func (a Acceptance) ForK(k int) (Schedule, error) {
	if k < 0 || k > MaxPositions {
		return Schedule{}, fmt.Errorf("num_speculative_tokens %d: BLIS simulates 0 to %d", k, MaxPositions)
	}
	if a.mean != 0 {
		s, err := FromMean(a.mean, k)
		if err != nil {
			return Schedule{}, fmt.Errorf("--spec-acceptance %q: %v", a.text, err)
		}
		return s, nil
	}
	return a.sched.Resize(k), nil
}

// String is the value as given.
func (a Acceptance) String() string { return a.text }
