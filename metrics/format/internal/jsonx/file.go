package jsonx

import (
	"bufio"
	"os"
)

// File is a result file written record by record as a run goes: each
// record is encoded into Enc and written out by Write, so a per-request
// file never sits in memory.
type File struct {
	Enc *Enc
	f   *os.File
	bw  *bufio.Writer
	err error
}

// CreateFile creates path for records in style st at nesting depth.
func CreateFile(path string, st Style, depth int) (*File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &File{Enc: NewEnc(st, depth), f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Write writes what Enc holds and empties it. After an error every call
// returns it.
func (w *File) Write() error {
	if w.err == nil {
		_, w.err = w.bw.Write(w.Enc.B)
	}
	w.Enc.Reset()
	return w.err
}

// Close writes tail and closes the file.
func (w *File) Close(tail string) error {
	err := w.err
	if err == nil {
		_, err = w.bw.WriteString(tail)
	}
	if err == nil {
		err = w.bw.Flush()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort closes the file unfinished.
func (w *File) Abort() { w.f.Close() }
