package router

import (
	"errors"
	"fmt"
	"strings"
)

// ErrBadInput marks every error this package returns for input a user can
// fix (a bad config file, an unknown router name). Test with
// errors.Is(err, ErrBadInput); the CLI maps it to exit status 2.
var ErrBadInput = errors.New("bad input")

// ConfigError says where in which file which key had which bad value, and
// what is allowed. It matches ErrBadInput under errors.Is.
type ConfigError struct {
	File  string
	Line  int
	Key   string
	Value string
	Msg   string
}

func (e *ConfigError) Error() string {
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
			fmt.Fprintf(&b, " %q", e.Value)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is reports whether target is ErrBadInput.
func (e *ConfigError) Is(target error) bool { return target == ErrBadInput }
