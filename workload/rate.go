package workload

import (
	"math"
	"strconv"
	"strings"
)

// ParseRate parses a `--request-rate` value: a number > 0 in requests per
// second, or "inf" (any case, also "+inf" and "infinity", as Python's float()
// reads them) for math.Inf(1), which sends every request at time 0.
// Surrounding spaces are ignored, as Python does. Errors are *InputError
// (errors.Is(err, ErrBadInput)).
func ParseRate(s string) (float64, error) {
	const flag, allowed = "--request-rate", "must be a number > 0 (requests per second), or inf"
	t := strings.TrimSpace(s)
	switch strings.ToLower(t) {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1), nil
	}
	// strconv accepts hex floats and inf spellings Python's float() does not;
	// refuse them rather than guess.
	if t == "" || strings.ContainsAny(t, "xXnN_") {
		return 0, badInput(flag, quoteIfOdd(s), allowed)
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, badInput(flag, quoteIfOdd(s), allowed)
	}
	return v, nil
}
