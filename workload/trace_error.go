package workload

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TraceError says which line of which input held which bad value and what is
// allowed, e.g.
//
//	trace.jsonl:17: "input_length": -5: must be an integer in [1, 268435456]
//
// It matches ErrBadInput under errors.Is (a CLI exits 2); use errors.As to
// get the fields.
type TraceError struct {
	File    string // the path as given, or the name passed to a reader
	Line    int64  // 1-based line; 0 when the format has no useful line (a JSON array: see Entry)
	Entry   int64  // 1-based entry of a JSON array (sharegpt); 0 otherwise
	Field   string // the key or column, JSON keys quoted: `"input_length"`, `ContextTokens`, `turns[3].delay`
	Value   string // the value as written (shortened when long)
	Allowed string // what would have been accepted, or what went wrong
}

func (e *TraceError) Error() string {
	var b strings.Builder
	if e.File == "" {
		b.WriteString("input")
	} else {
		b.WriteString(e.File)
	}
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(e.Line, 10))
	}
	if e.Entry > 0 {
		b.WriteString(": entry ")
		b.WriteString(strconv.FormatInt(e.Entry, 10))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	if e.Value != "" {
		v := e.Value
		if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
			v = strconv.Quote(v) // a binary value reads as escapes
		}
		b.WriteString(v)
		b.WriteString(": ")
	}
	b.WriteString(e.Allowed)
	return clean(b.String())
}

// Is reports whether target is ErrBadInput.
func (e *TraceError) Is(target error) bool { return target == ErrBadInput }

// shorten keeps error messages readable when a value is a long string or a
// whole line.
func shorten(s string) string {
	const max = 60
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// clean escapes what a terminal must not receive raw from a message: bytes
// that are not UTF-8 become \xNN and control characters their Go escape, so
// a binary file's bytes quoted in an error cannot garble the screen.
func clean(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
