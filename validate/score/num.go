package score

import (
	"math"
	"strconv"
	"strings"
)

// Num is a float64 that encodes NaN and ±Inf as JSON null: a page's JSON
// holds every number on the page, and "--" on the page (a statistic that
// cannot be computed) is null there.
type Num float64

// MarshalJSON writes the shortest decimal that reads back exactly, or null.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// F is n as a float64.
func (n Num) F() float64 { return float64(n) }

// NaN is Num's NaN: a number that cannot be computed.
func NaN() Num { return Num(math.NaN()) }

// Fixed is n with d decimals, "--" when not computable (the page's text
// of a NaN, as null is its JSON).
func (n Num) Fixed(d int) string {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "--"
	}
	s := strconv.FormatFloat(f, 'f', d, 64)
	if strings.TrimLeft(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-")
	}
	return s
}
