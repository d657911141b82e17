package workload

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxLineBytes bounds one line of a line-based trace, so a file without
// newlines cannot take unbounded memory.
const maxLineBytes = 64 << 20

// lineReader yields the lines of a stream without copying them when they fit
// its buffer: a line is valid until the next call. It counts lines from 1.
type lineReader struct {
	r    *bufio.Reader
	name string
	line int64
	long []byte // assembles lines longer than the buffer
	err  error  // first error (not io.EOF): a *TraceError for an overlong line, else the I/O error
	eof  bool
}

func newLineReader(r io.Reader, name string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), name: name}
}

// next returns the next line without its line ending ("\n" or "\r\n"), and
// false at the end of the stream or on an error (then lr.err is set).
func (lr *lineReader) next() ([]byte, bool) {
	if lr.eof || lr.err != nil {
		return nil, false
	}
	lr.long = lr.long[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		switch {
		case err == nil:
			lr.line++
			if len(lr.long) == 0 {
				return trimEOL(chunk), true
			}
			lr.long = append(lr.long, chunk...)
			return trimEOL(lr.long), true
		case errors.Is(err, bufio.ErrBufferFull):
			lr.long = append(lr.long, chunk...)
			if len(lr.long) > maxLineBytes {
				lr.err = &TraceError{File: lr.name, Line: lr.line + 1,
					Allowed: "line longer than " + strconv.Itoa(maxLineBytes>>20) + " MiB"}
				return nil, false
			}
		case errors.Is(err, io.EOF):
			lr.eof = true
			lr.long = append(lr.long, chunk...)
			if len(lr.long) == 0 {
				return nil, false
			}
			lr.line++ // a last line without a newline
			return trimEOL(lr.long), true
		default:
			// An I/O failure, not bad input: it does not match ErrBadInput.
			lr.err = fmt.Errorf("%s:%d: %w", lr.name, lr.line+1, err)
			return nil, false
		}
	}
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// blank reports whether b holds only white space.
func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}
