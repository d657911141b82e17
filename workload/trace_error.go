package workload

import (
	"strconv"
	"strings"
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
		b.WriteString(e.Value)
		b.WriteString(": ")
	}
	b.WriteString(e.Allowed)
	return b.String()
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
