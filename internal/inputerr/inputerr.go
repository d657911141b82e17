// Package inputerr is the one form of a bad-input error every parser of
// BLIS reports in (scenario keys and flags, router configs): the file and
// line, the key, the bad value and what is allowed. It matches ErrBadInput,
// on which the CLI exits with status 2.
package inputerr

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadInput marks input a user can fix.
var ErrBadInput = errors.New("bad input")

// Error is bad user input: which file and line (if any), which key, the
// value, and what is allowed.
type Error struct {
	File  string
	Line  int
	Key   string
	Value string
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		if e.Value != "" {
			b.WriteString(" " + Quote(e.Value))
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is makes every Error match ErrBadInput.
func (e *Error) Is(target error) bool { return target == ErrBadInput }

// Quote writes a value a user gave into a message: escaped as Go's %q does
// (no raw control or binary bytes reach the terminal) and cut after 60
// characters.
func Quote(s string) string {
	const max = 60
	if r := []rune(s); len(r) > max {
		return strconv.Quote(string(r[:max])) + "…"
	}
	return strconv.Quote(s)
}
