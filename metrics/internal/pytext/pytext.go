// Package pytext writes numbers, strings and times as the Python benchmark
// tools print them, so that BLIS's copies of their files match byte for
// byte: Python 3's float repr, format(v, ".2f"), naive
// datetime.isoformat(), and JSON string escapes (json.dumps with
// ensure_ascii, or orjson's UTF-8 strings).
package pytext

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// Float is Python's repr of a finite float: the shortest digits that
// round-trip, positional when the decimal exponent is in [-4, 16), else
// scientific with a signed two-digit exponent ("1e-05", "1.5e+16").
func Float(x float64) string {
	var buf [32]byte
	return string(AppendFloat(buf[:0], x))
}

// AppendFloat appends Float(x) to dst without allocating: the per-token
// writers call it for every number.
func AppendFloat(dst []byte, x float64) []byte {
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], x, 'e', -1, 64) // [-]d[.ddd]e±XX
	if decpt := exponent(e) + 1; decpt <= -4 || decpt > 16 {
		return append(dst, e...) // Go's 'e' form is Python's: "1e-05", "1.5e+16"
	}
	neg, digits, exp := SplitE(e)
	if neg {
		dst = append(dst, '-')
	}
	return AppendPositional(dst, digits, exp+1, true)
}

// exponent is the decimal exponent of strconv's 'e' form.
func exponent(e []byte) int {
	i := len(e) - 1
	for e[i] != 'e' {
		i--
	}
	exp := 0
	for _, c := range e[i+2:] {
		exp = exp*10 + int(c-'0')
	}
	if e[i+1] == '-' {
		return -exp
	}
	return exp
}

// SplitE splits strconv's shortest 'e' form of a float into its sign, its
// significant digits and its decimal exponent. It drops the point in place,
// so e is spent.
func SplitE(e []byte) (neg bool, digits []byte, exp int) {
	exp = exponent(e)
	if e[0] == '-' {
		neg, e = true, e[1:]
	}
	i := 0
	for e[i] != 'e' {
		i++
	}
	mant := e[:i]
	if len(mant) > 1 { // "d.ddd"
		copy(mant[1:], mant[2:])
		mant = mant[:len(mant)-1]
	}
	return neg, mant, exp
}

// AppendPositional appends digits with the decimal point after decpt of
// them (decpt ≤ 0: "0.000ddd"); dotZero keeps ".0" on an integral value.
func AppendPositional(dst, digits []byte, decpt int, dotZero bool) []byte {
	switch n := len(digits); {
	case decpt <= 0:
		dst = append(dst, '0', '.')
		for range -decpt {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	case decpt >= n:
		dst = append(dst, digits...)
		for range decpt - n {
			dst = append(dst, '0')
		}
		if dotZero {
			dst = append(dst, '.', '0')
		}
		return dst
	default:
		dst = append(dst, digits[:decpt]...)
		dst = append(dst, '.')
		return append(dst, digits[decpt:]...)
	}
}

// Fixed2 is Python's format(v, ".2f"), including nan and inf.
func Fixed2(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// AppendJSONString appends s as a JSON string with the short escapes for
// " \ \b \f \n \r \t and \u00XX for other control characters; with ascii
// every rune outside ' '..'~' is \uXXXX-escaped (surrogate pairs above
// U+FFFF), as Python's ensure_ascii does, otherwise it is written as UTF-8,
// as orjson does. Invalid UTF-8 becomes U+FFFD either way.
func AppendJSONString(dst []byte, s string, ascii bool) []byte {
	const hex = "0123456789abcdef"
	u4 := func(dst []byte, r rune) []byte {
		return append(dst, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	dst = append(dst, '"')
	// Runs of plain ASCII are copied whole.
	plain := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			break
		}
		plain++
	}
	if plain == len(s) {
		dst = append(dst, s...)
		return append(dst, '"')
	}
	dst = append(dst, s[:plain]...)
	for _, r := range s[plain:] {
		switch r {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			switch {
			case r >= ' ' && r <= '~':
				dst = append(dst, byte(r))
			case r < ' ' || (ascii && r < 0x10000):
				dst = u4(dst, r)
			case ascii:
				r -= 0x10000
				dst = u4(dst, 0xd800|(r>>10)&0x3ff)
				dst = u4(dst, 0xdc00|r&0x3ff)
			default:
				dst = utf8.AppendRune(dst, r)
			}
		}
	}
	return append(dst, '"')
}

// ISOFormat is Python's naive datetime.isoformat() of a UTC Unix time in
// nanoseconds: microseconds (rounded half to even, as fromtimestamp does)
// shown only when non-zero.
func ISOFormat(ns int64) string {
	us := ns / 1000
	rem := ns % 1000
	if rem < 0 {
		us, rem = us-1, rem+1000
	}
	if rem > 500 || (rem == 500 && us%2 != 0) {
		us++
	}
	t := time.UnixMicro(us).UTC()
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05")
	}
	return t.Format("2006-01-02T15:04:05.000000")
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// ShortDecimal is the shortest round-trip digits of x when x is the float
// nearest n/10^scale (n ≥ 1, as float64(n)/1e9 converts nanoseconds to
// seconds) and that ratio has at most 15 significant digits: then the
// ratio's own digits are the shortest that round-trip (no other decimal
// of 15 digits or fewer rounds to x), found without a float-to-decimal
// conversion. decpt is where the point falls (the digits are 0.d₁d₂… ×
// 10^decpt). ok is false otherwise; the caller formats x itself.
func ShortDecimal(buf *[20]byte, x float64, n int64, scale int) (digits []byte, decpt int, ok bool) {
	if n <= 0 || n >= 1<<53 || scale < 0 || scale >= len(pow10) || x != float64(n)/pow10[scale] {
		return nil, 0, false
	}
	d := strconv.AppendInt(buf[:0], n, 10)
	decpt = len(d) - scale
	for len(d) > 1 && d[len(d)-1] == '0' {
		d = d[:len(d)-1]
	}
	if len(d) > 15 {
		return nil, 0, false
	}
	return d, decpt, true
}

// AppendFloatRatio appends Float(x) for x the float nearest n/10^scale,
// taking ShortDecimal's path when it applies: the writers' times in
// seconds (nanoseconds / 1e9) are formatted several times faster.
func AppendFloatRatio(dst []byte, x float64, n int64, scale int) []byte {
	var buf [20]byte
	if d, decpt, ok := ShortDecimal(&buf, x, n, scale); ok && decpt > -4 && decpt <= 16 {
		return AppendPositional(dst, d, decpt, true)
	}
	return AppendFloat(dst, x)
}
