// Package spool holds bytes written once and read back once, at the end:
// the parts of a result file that come after data not yet known (a vLLM
// result's per-request columns come before its percentiles; a GuideLLM
// report lists requests after the metrics they give). A Spool keeps up to
// a limit in memory and moves to a temporary file beyond it, so a long
// run's output costs disk, not memory.
package spool

import (
	"bufio"
	"bytes"
	"io"
	"os"
)

// DefaultLimit is the memory a Spool holds before it moves to a file.
const DefaultLimit = 1 << 20

// Spool is an append-only byte store read back by WriteTo. Not safe for
// concurrent use.
type Spool struct {
	dir   string
	limit int
	mem   []byte
	f     *os.File
	fw    *bufio.Writer
	name  string // set while the file still has a name to remove
	n     int64
	err   error
}

// New returns a Spool that moves to a temporary file in dir ("" for the
// system's) once it holds more than limit bytes (≤ 0: DefaultLimit).
func New(dir string, limit int) *Spool {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Spool{dir: dir, limit: limit}
}

// Len is the number of bytes written.
func (s *Spool) Len() int64 { return s.n }

// Write appends p. After an error every call returns it.
func (s *Spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.f == nil && len(s.mem)+len(p) > s.limit {
		if s.err = s.spill(); s.err != nil {
			return 0, s.err
		}
	}
	s.n += int64(len(p))
	if s.f == nil {
		s.mem = append(s.mem, p...)
		return len(p), nil
	}
	var n int
	n, s.err = s.fw.Write(p)
	return n, s.err
}

func (s *Spool) spill() error {
	f, err := os.CreateTemp(s.dir, ".blis-spool-*")
	if err != nil {
		return err
	}
	s.f, s.name = f, f.Name()
	// Unlinked at once where the system allows it, so nothing is left
	// behind even if BLIS is killed; Close removes it otherwise.
	if os.Remove(s.name) == nil {
		s.name = ""
	}
	s.fw = bufio.NewWriterSize(f, 256<<10)
	_, err = s.fw.Write(s.mem)
	s.mem = nil
	return err
}

// WriteTo writes everything written so far to w, each sentinel byte
// replaced by repl when repl is not nil (a value known only at the end,
// left as a placeholder in the spooled text).
func (s *Spool) WriteTo(w io.Writer, sentinel byte, repl []byte) error {
	if s.err != nil {
		return s.err
	}
	if s.f == nil {
		return copyReplacing(w, s.mem, sentinel, repl)
	}
	if err := s.fw.Flush(); err != nil {
		return err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	buf := make([]byte, 256<<10)
	for {
		n, err := s.f.Read(buf)
		if n > 0 {
			if werr := copyReplacing(w, buf[:n], sentinel, repl); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	_, err := s.f.Seek(0, io.SeekEnd)
	return err
}

func copyReplacing(w io.Writer, p []byte, sentinel byte, repl []byte) error {
	if repl == nil {
		_, err := w.Write(p)
		return err
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, sentinel)
		if i < 0 {
			_, err := w.Write(p)
			return err
		}
		if _, err := w.Write(p[:i]); err != nil {
			return err
		}
		if _, err := w.Write(repl); err != nil {
			return err
		}
		p = p[i+1:]
	}
	return nil
}

// Close releases the memory and removes the file.
func (s *Spool) Close() error {
	s.mem = nil
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if s.name != "" {
		if rerr := os.Remove(s.name); err == nil {
			err = rerr
		}
	}
	s.f, s.fw = nil, nil
	return err
}
