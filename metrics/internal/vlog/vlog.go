// Package vlog is a compact append-only log of integers and floats: what
// the streaming writers keep of each request for the statistics they
// compute at the end (exact percentiles need every value; numpy's sums
// need them in order). Integers are stored as varints, a few bytes each;
// storage grows in fixed 64 KiB chunks, never by copying.
package vlog

import (
	"encoding/binary"
	"math"
)

const chunkSize = 64 << 10

// Log is an append-only sequence of values read back in order by a
// Reader. The zero Log is empty and ready.
type Log struct {
	chunks [][]byte
	n      int64 // values appended
	size   int64 // bytes
}

func (l *Log) room(k int) []byte {
	if c := len(l.chunks); c > 0 && cap(l.chunks[c-1])-len(l.chunks[c-1]) >= k {
		return l.chunks[c-1]
	}
	l.chunks = append(l.chunks, make([]byte, 0, chunkSize))
	return l.chunks[len(l.chunks)-1]
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

// Bytes is the memory the values take (chunks are allocated 64 KiB at a
// time).
func (l *Log) Bytes() int64 { return l.size }

// Reader reads a Log from its start; it sees the values appended before
// it was made, and reading never changes the Log. Reading past the end or
// with the wrong type is a bug in the caller; the values returned are
// then meaningless.
type Reader struct {
	chunks [][]byte
	c, off int
}

// Reader starts reading l from its first value.
func (l *Log) Reader() Reader { return Reader{chunks: l.chunks} }

func (r *Reader) cur() []byte {
	for r.c < len(r.chunks) && r.off >= len(r.chunks[r.c]) {
		r.c, r.off = r.c+1, 0
	}
	if r.c >= len(r.chunks) {
		return nil
	}
	return r.chunks[r.c][r.off:]
}

// Int reads a value appended by Log.Int.
func (r *Reader) Int() int64 {
	v, n := binary.Varint(r.cur())
	r.off += max(n, 1)
	return v
}

// Uint reads a value appended by Log.Uint.
func (r *Reader) Uint() uint64 {
	v, n := binary.Uvarint(r.cur())
	r.off += max(n, 1)
	return v
}

// Float reads a value appended by Log.Float.
func (r *Reader) Float() float64 {
	b := r.cur()
	if len(b) < 8 {
		r.off++
		return 0
	}
	r.off += 8
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}
