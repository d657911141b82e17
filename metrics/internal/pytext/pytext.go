// Package pytext writes numbers, strings and times as the Python benchmark
// tools print them, so that BLIS's copies of their files match byte for
// byte: Python 3's float repr, format(v, ".2f"), naive
// datetime.isoformat(), and JSON string escapes (json.dumps with
// ensure_ascii, or orjson's UTF-8 strings).
package pytext

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
)

// Float is Python's repr of a finite float: the shortest digits that
// round-trip, positional when the decimal exponent is in [-4, 16), else
// scientific with a signed two-digit exponent ("1e-05", "1.5e+16").
func Float(x float64) string {
	e := strconv.FormatFloat(x, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.LastIndexByte(e, 'e')+1:])
	if decpt := exp + 1; decpt <= -4 || decpt > 16 {
		return e
	}
	f := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsRune(f, '.') {
		f += ".0"
	}
	return f
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

// WriteJSONString writes s as a JSON string with the short escapes for
// " \ \b \f \n \r \t and \u00XX for other control characters; with ascii
// every rune outside ' '..'~' is \uXXXX-escaped (surrogate pairs above
// U+FFFF), as Python's ensure_ascii does, otherwise it is written as UTF-8,
// as orjson does. Invalid UTF-8 becomes U+FFFD either way.
func WriteJSONString(b *bytes.Buffer, s string, ascii bool) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		b.WriteByte(hex[r>>12&0xf])
		b.WriteByte(hex[r>>8&0xf])
		b.WriteByte(hex[r>>4&0xf])
		b.WriteByte(hex[r&0xf])
	}
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case r >= ' ' && r <= '~':
				b.WriteByte(byte(r))
			case r < ' ' || (ascii && r < 0x10000):
				u4(r)
			case ascii:
				r -= 0x10000
				u4(0xd800 | (r>>10)&0x3ff)
				u4(0xdc00 | r&0x3ff)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
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
