// Package vlog is a compact append-only log of integers and floats: what
// the streaming writers keep of each request for the statistics they
// compute at the end (exact percentiles need every value; numpy's sums
// need them in order). Integers are stored as varints, a few bytes each;
// storage grows in fixed 64 KiB chunks, never by copying. A Log told to
// Spill keeps a bounded number of chunks in memory and moves the rest to
// a temporary file, so a long run costs disk, not memory.
package vlog

import (
	"bufio"
	"encoding/binary"
	"io"
	"math"
	"os"
)

const chunkSize = 64 << 10

// MemLimit is the memory a spilling Log of the writers keeps: 4 MiB.
const MemLimit = 64 * chunkSize

// Log is an append-only sequence of values read back in order by a
// Reader. The zero Log is empty, ready, and kept in memory.
type Log struct {
	chunks [][]byte
	n      int64 // values appended
	size   int64 // bytes

	// Spilling: full chunks beyond memLimit bytes go to f, each as a
	// 4-byte length and its bytes.
	dir      string
	memLimit int
	f        *os.File
	fw       *bufio.Writer
	name     string // the file's name while it still has one to remove
	fileSize int64
	spare    []byte // a chunk buffer kept from the last spill
	err      error
}

// Spill makes l move its values to a temporary file in dir once it holds
// more than memLimit bytes in memory (a multiple of 64 KiB, at least one
// chunk). Call it before the first value.
func (l *Log) Spill(dir string, memLimit int) {
	l.dir, l.memLimit = dir, max(memLimit, chunkSize)
}

// Err is the first error writing or reading the spill file; the values
// read after one are meaningless.
func (l *Log) Err() error { return l.err }

func (l *Log) room(k int) []byte {
	if c := len(l.chunks); c > 0 && cap(l.chunks[c-1])-len(l.chunks[c-1]) >= k {
		return l.chunks[c-1]
	}
	if l.memLimit > 0 && (len(l.chunks)+1)*chunkSize > l.memLimit && l.err == nil {
		l.spill()
	}
	if len(l.chunks) == 0 && l.spare != nil {
		l.chunks = append(l.chunks, l.spare[:0])
		l.spare = nil
		return l.chunks[0]
	}
	l.chunks = append(l.chunks, make([]byte, 0, chunkSize))
	return l.chunks[len(l.chunks)-1]
}

// spill writes every chunk in memory to the file and keeps one buffer.
func (l *Log) spill() {
	if l.f == nil {
		f, err := os.CreateTemp(l.dir, ".blis-log-*")
		if err != nil {
			l.err = err
			return
		}
		l.f, l.name = f, f.Name()
		if os.Remove(l.name) == nil { // unlinked: nothing is left behind
			l.name = ""
		}
		l.fw = bufio.NewWriterSize(f, 256<<10)
	}
	var hdr [4]byte
	for _, c := range l.chunks {
		binary.LittleEndian.PutUint32(hdr[:], uint32(len(c)))
		if _, err := l.fw.Write(hdr[:]); err != nil {
			l.err = err
			return
		}
		if _, err := l.fw.Write(c); err != nil {
			l.err = err
			return
		}
		l.fileSize += int64(4 + len(c))
	}
	l.spare = l.chunks[0]
	clear(l.chunks)
	l.chunks = l.chunks[:0]
}

func (l *Log) put(b []byte) {
	c := len(l.chunks) - 1
	l.chunks[c] = b
	l.n++
}

// Int appends a signed integer (zigzag varint: small magnitudes are short).
func (l *Log) Int(v int64) {
	b := l.room(binary.MaxVarintLen64)
	before := len(b)
	b = binary.AppendVarint(b, v)
	l.size += int64(len(b) - before)
	l.put(b)
}

// Uint appends an unsigned integer.
func (l *Log) Uint(v uint64) {
	b := l.room(binary.MaxVarintLen64)
	before := len(b)
	b = binary.AppendUvarint(b, v)
	l.size += int64(len(b) - before)
	l.put(b)
}

// Float appends a float64 (8 bytes, every bit kept).
func (l *Log) Float(v float64) {
	b := l.room(8)
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	l.size += 8
	l.put(b)
}

// Len is the number of values appended.
func (l *Log) Len() int64 { return l.n }

// Bytes is the size of the values, in memory and spilled.
func (l *Log) Bytes() int64 { return l.size }

// MemBytes is the memory the chunks held in memory take.
func (l *Log) MemBytes() int64 { return int64(len(l.chunks)) * chunkSize }

// Close releases the spill file.
func (l *Log) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	if l.name != "" {
		if rerr := os.Remove(l.name); err == nil {
			err = rerr
		}
	}
	l.f, l.fw = nil, nil
	return err
}

// Reader reads a Log from its start; it sees the values appended before
// it was made, and reading never changes the values (nothing may be
// appended while a reader is in use: the log may spill). Reading past the
// end or with the wrong type is a bug in the caller; the values returned
// are then meaningless.
type Reader struct {
	l      *Log
	off    int64 // next spilled chunk's offset
	end    int64 // the file's size when the reader was made
	buf    []byte
	cur    []byte
	mem    [][]byte
	c, pos int
}

// Reader starts reading l from its first value.
func (l *Log) Reader() Reader {
	r := Reader{l: l, mem: l.chunks, c: -1}
	if l.f != nil {
		if err := l.fw.Flush(); err != nil && l.err == nil {
			l.err = err
		}
		r.end = l.fileSize
	}
	return r
}

// next makes the next chunk current; false at the end.
func (r *Reader) next() bool {
	if r.off < r.end {
		var hdr [4]byte
		if _, err := r.l.f.ReadAt(hdr[:], r.off); err != nil {
			r.fail(err)
			return false
		}
		n := int(binary.LittleEndian.Uint32(hdr[:]))
		if cap(r.buf) < n {
			r.buf = make([]byte, chunkSize)
		}
		r.buf = r.buf[:n]
		if _, err := r.l.f.ReadAt(r.buf, r.off+4); err != nil && err != io.EOF {
			r.fail(err)
			return false
		}
		r.off += int64(4 + n)
		r.cur, r.pos = r.buf, 0
		return true
	}
	r.c++
	if r.c >= len(r.mem) {
		return false
	}
	r.cur, r.pos = r.mem[r.c], 0
	return true
}

func (r *Reader) fail(err error) {
	if r.l.err == nil {
		r.l.err = err
	}
	r.off, r.end, r.c = 0, 0, len(r.mem)
}

func (r *Reader) rest() []byte {
	for r.pos >= len(r.cur) {
		if !r.next() {
			return nil
		}
	}
	return r.cur[r.pos:]
}

// Int reads a value appended by Log.Int.
func (r *Reader) Int() int64 {
	v, n := binary.Varint(r.rest())
	r.pos += max(n, 1)
	return v
}

// Uint reads a value appended by Log.Uint.
func (r *Reader) Uint() uint64 {
	v, n := binary.Uvarint(r.rest())
	r.pos += max(n, 1)
	return v
}

// Float reads a value appended by Log.Float.
func (r *Reader) Float() float64 {
	b := r.rest()
	if len(b) < 8 {
		r.pos++
		return 0
	}
	r.pos += 8
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
