package workload

import (
	"math"
	"strconv"
	"strings"
	"unicode"

	"blis/internal/inputerr"
)

// ErrBadInput marks every error this package returns for input a user can
// fix (a flag value out of range, an unknown name). Test with
// errors.Is(err, ErrBadInput); a CLI maps it to exit status 2.
var ErrBadInput = inputerr.ErrBadInput

// InputError says which flag had which bad value and what is allowed.
// It matches ErrBadInput under errors.Is; use errors.As to get the fields.
type InputError struct {
	Flag    string // the `vllm bench serve` flag, e.g. "--random-range-ratio"
	Value   string // the value as given, e.g. "1.5"
	Allowed string // what would have been accepted, e.g. "must be in [0, 1) for --random-range-style current"
}

func (e *InputError) Error() string { return clean(e.Flag + " " + e.Value + ": " + e.Allowed) }

// Is reports whether target is ErrBadInput.
func (e *InputError) Is(target error) bool { return target == ErrBadInput }

func badInput(flag, value, allowed string) error {
	return &InputError{Flag: flag, Value: value, Allowed: allowed}
}

// fmtFloat writes v the way a user would type it ("inf" rather than "+Inf").
func fmtFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// quoteIfOdd returns s unchanged when it reads cleanly in a message, and
// quoted when it is empty or holds spaces or unprintable characters.
func quoteIfOdd(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) {
		return strconv.Quote(s)
	}
	return s
}
