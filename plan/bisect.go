package plan

import (
	"errors"
	"fmt"
	"math"
)

// Search is a bisection for the highest load that passes. It assumes
// attainment is monotone in the load (every load below a passing one
// passes, every load above a failing one fails): true of a serving
// system's queueing delay to first order, not guaranteed for every
// scenario (a batch-size threshold can make a higher load pass again);
// the command says so.
type Search struct {
	// Lo is the first load probed; if it fails, no load meets the SLOs.
	Lo float64
	// Hi, when > Lo, is the upper end of the bracket; 0 brackets by
	// doubling Lo until a load fails or Max is reached.
	Hi float64
	// Max caps the bracketing (and the given Hi).
	Max float64
	// Tolerance is relative: the search stops when the first failing load
	// is within Best × (1 + Tolerance).
	Tolerance float64
	// Integer loads (max concurrency) are whole numbers; the search also
	// stops when the failing load is Best + 1.
	Integer bool
}

// Outcome is where a search ended.
type Outcome struct {
	// Found: Best passed and FirstFail failed with FirstFail ≤
	// Best × (1 + Tolerance) (or Best + 1 for integers).
	Found bool
	// Best is the highest load that passed (0 when none did).
	Best float64
	// FirstFail is the lowest load that failed (0 when none did).
	FirstFail float64
	// NoneMeets: even Lo failed.
	NoneMeets bool
	// AtCap: no load up to the cap (Max, or the given Hi) failed.
	AtCap bool
	// Probes is every load probed, in order.
	Probes []float64
}

// Run bisects with eval, which reports whether a load passes. eval's error
// stops the search.
func (s Search) Run(eval func(load float64) (bool, error)) (Outcome, error) {
	if err := s.check(); err != nil {
		return Outcome{}, err
	}
	var o Outcome
	probe := func(x float64) (bool, error) {
		o.Probes = append(o.Probes, x)
		return eval(x)
	}
	ok, err := probe(s.Lo)
	if err != nil {
		return o, err
	}
	if !ok {
		o.NoneMeets, o.FirstFail = true, s.Lo
		return o, nil
	}
	if s.Lo == s.Max { // the cap is Lo itself: nothing above it to probe
		o.Best, o.AtCap = s.Lo, true
		return o, nil
	}
	pass, fail := s.Lo, 0.0
	if s.Hi > s.Lo {
		hi := math.Min(s.Hi, s.Max)
		if ok, err = probe(hi); err != nil {
			return o, err
		}
		if ok {
			o.Best, o.AtCap = hi, true
			return o, nil
		}
		fail = hi
	} else {
		for fail == 0 {
			next := s.round(pass * 2)
			if next >= s.Max {
				next = s.Max
			}
			if ok, err = probe(next); err != nil {
				return o, err
			}
			if ok {
				pass = next
				if next == s.Max {
					o.Best, o.AtCap = pass, true
					return o, nil
				}
			} else {
				fail = next
			}
		}
	}
	for !s.close(pass, fail) {
		mid := s.round((pass + fail) / 2)
		if ok, err = probe(mid); err != nil {
			return o, err
		}
		if ok {
			pass = mid
		} else {
			fail = mid
		}
	}
	o.Found, o.Best, o.FirstFail = true, pass, fail
	return o, nil
}

func (s Search) check() error {
	switch {
	case !(s.Lo > 0) || math.IsInf(s.Lo, 0):
		return fmt.Errorf("the lowest load must be a positive number, got %g", s.Lo)
	case s.Hi != 0 && !(s.Hi > s.Lo):
		return fmt.Errorf("the highest load (%g) must be above the lowest (%g)", s.Hi, s.Lo)
	case !(s.Max >= s.Lo) || math.IsInf(s.Max, 0):
		return fmt.Errorf("the cap (%g) must be a finite number at least the lowest load (%g)", s.Max, s.Lo)
	case !(s.Tolerance > 0) || s.Tolerance >= 1:
		return errors.New("the tolerance must be above 0 and below 1 (100%)")
	case s.Integer && (s.Lo != math.Floor(s.Lo) || s.Hi != math.Floor(s.Hi) || s.Max != math.Floor(s.Max)):
		return errors.New("an integer search needs whole-number bounds")
	}
	return nil
}

// close reports whether the bracket is within the tolerance.
func (s Search) close(pass, fail float64) bool {
	if s.Integer && fail-pass <= 1 {
		return true
	}
	return fail <= pass*(1+s.Tolerance)
}

// round makes a load a whole number for an integer search, never below 1.
func (s Search) round(x float64) float64 {
	if !s.Integer {
		return x
	}
	return math.Max(1, math.Floor(x))
}

// MinPassing finds the smallest n in [lo, hi] that passes, assuming that
// passing is monotone in n (more replicas never serve a load worse): it
// probes hi, then bisects. found is false when even hi fails. probes lists
// every n probed, in order.
func MinPassing(lo, hi int, eval func(n int) (bool, error)) (best int, found bool, probes []int, err error) {
	if lo < 1 || hi < lo {
		return 0, false, nil, fmt.Errorf("the range [%d, %d] must hold whole numbers from 1 up", lo, hi)
	}
	probe := func(n int) (bool, error) {
		probes = append(probes, n)
		return eval(n)
	}
	ok, err := probe(hi)
	if err != nil || !ok {
		return 0, false, probes, err
	}
	pass, fail := hi, lo-1 // fail: the highest n known to fail (lo-1: none yet)
	for pass-fail > 1 {
		mid := fail + (pass-fail)/2
		if mid < lo {
			mid = lo
		}
		if ok, err = probe(mid); err != nil {
			return 0, false, probes, err
		}
		if ok {
			pass = mid
		} else {
			fail = mid
		}
	}
	return pass, true, probes, nil
}
