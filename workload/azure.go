package workload

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// Azure LLM inference trace CSV (Azure/AzurePublicDataset,
// AzureLLMInferenceTrace_{code,conv}.csv, 2023; the 2024 week-long traces
// share the layout):
//
//	TIMESTAMP,ContextTokens,GeneratedTokens
//	2023-11-16 18:17:03.9799600,4808,10
//
// TIMESTAMP is a wall-clock arrival (UTC, up to 9 fractional digits),
// ContextTokens the prompt length, GeneratedTokens the output length. Rows
// carry no prompt content, so each prompt is one unique segment: no prefix
// sharing. Arrivals count from the first row's timestamp (divided by
// --fixed-schedule-speedup); the start/end offsets, in ms after the first
// row, select a window and, as in aiperf, the start offset becomes time 0. Columns may come in any order; others are refused.
// Timestamps must not go backwards. Memory: O(1) per row.
type azureSource struct {
	lr     *lineReader
	file   closer
	name   string
	limit  int64
	strict bool
	sched  schedule

	col       [3]int // field index of TIMESTAMP, ContextTokens, GeneratedTokens
	nCols     int
	header    bool
	t0        int64 // ns since epoch of the first row
	last      int64
	haveFirst bool

	uniqueBase uint64
	n          int64
	skipped    int64
	err        error
	done       bool
	seg        [1]Segment
	fields     [][]byte
}

// NewAzure reads an Azure LLM inference trace CSV stream. name labels
// errors. The source implements StreamSource; it does not close r.
func NewAzure(r io.Reader, name string, spec TraceSpec) (Source, error) {
	src, err := newAzure(r, nil, name, spec)
	if err != nil {
		return nil, err // a nil Source, not a typed nil
	}
	return src, nil
}

func newAzure(r io.Reader, c io.Closer, name string, spec TraceSpec) (*azureSource, error) {
	// Timestamps are wall-clock times: the reader turns them into ms after
	// the first row, which the schedule then treats as aiperf treats trace
	// timestamps (zero at 0, or at the start offset).
	sched, err := newSchedule(spec)
	if err != nil {
		return nil, err
	}
	if spec.NumPrompts < 0 {
		return nil, badInput("--num-prompts", strconv.Itoa(spec.NumPrompts), "must be ≥ 0 (0: the whole file)")
	}
	return &azureSource{
		lr: newLineReader(r, name), file: closer{c}, name: name,
		limit: int64(spec.NumPrompts), strict: !spec.Lenient, sched: sched,
		uniqueBase: splitmix64(splitmix64(uint64(spec.Seed)) ^ tagTraceUnique),
	}, nil
}

func (a *azureSource) Err() error     { return a.err }
func (a *azureSource) Close() error   { return a.file.close() }
func (a *azureSource) Skipped() int64 { return a.skipped }

func (a *azureSource) stop(err error) bool {
	if a.err == nil {
		a.err = err
	}
	a.done = true
	a.file.close()
	return false
}

var azureColumns = [3]string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}

func (a *azureSource) errf(field, value, allowed string) error {
	return &TraceError{File: a.name, Line: a.lr.line, Field: field, Value: shorten(value), Allowed: allowed}
}

func (a *azureSource) split(line []byte) [][]byte {
	a.fields = a.fields[:0]
	for {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			a.fields = append(a.fields, line)
			return a.fields
		}
		a.fields = append(a.fields, line[:i])
		line = line[i+1:]
	}
}

func (a *azureSource) readHeader(line []byte) error {
	line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	f := a.split(line)
	a.col = [3]int{-1, -1, -1}
	for i, name := range f {
		name = bytes.TrimSpace(name)
		found := false
		for k, want := range azureColumns {
			if string(name) == want {
				if a.col[k] >= 0 {
					return a.errf("", string(name), "duplicate column")
				}
				a.col[k], found = i, true
			}
		}
		if !found {
			return a.errf("", string(line), "unknown column "+strconv.Quote(shorten(string(name)))+
				"; the header must be TIMESTAMP,ContextTokens,GeneratedTokens")
		}
	}
	for k, c := range a.col {
		if c < 0 {
			return a.errf("", string(line), "missing column "+azureColumns[k]+
				"; the header must be TIMESTAMP,ContextTokens,GeneratedTokens")
		}
	}
	a.nCols = len(f)
	return nil
}

func (a *azureSource) Next(r *Request) bool {
	for {
		if a.done {
			return false
		}
		if a.limit > 0 && a.n >= a.limit {
			return a.stop(nil)
		}
		line, ok := a.lr.next()
		if !ok {
			if a.lr.err == nil && !a.header {
				return a.stop(&TraceError{File: a.name, Allowed: "empty file: expected the header TIMESTAMP,ContextTokens,GeneratedTokens"})
			}
			return a.stop(a.lr.err)
		}
		if blank(line) {
			continue
		}
		if !a.header {
			a.header = true
			if err := a.readHeader(line); err != nil {
				return a.stop(err)
			}
			continue
		}
		keep, skippable, err := a.row(line, r)
		if err != nil {
			if skippable && !a.strict {
				a.skipped++
				continue
			}
			return a.stop(err)
		}
		if keep {
			a.n++
			return true
		}
	}
}

func (a *azureSource) row(line []byte, r *Request) (keep, skippable bool, err error) {
	f := a.split(line)
	if len(f) != a.nCols {
		return false, false, a.errf("", string(line), fmt.Sprintf("%d fields, the header has %d", len(f), a.nCols))
	}
	tsRaw := bytes.TrimSpace(f[a.col[0]])
	ns, ok := parseAzureTime(tsRaw)
	if !ok {
		return false, false, a.errf("TIMESTAMP", string(tsRaw), "must be a time like 2023-11-16 18:17:03.9799600")
	}
	var lens [2]int64
	for k := 1; k <= 2; k++ {
		raw := bytes.TrimSpace(f[a.col[k]])
		v, ok := parseInt(raw)
		if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || !allDigits(raw) {
			return false, false, a.errf(azureColumns[k], string(raw), "must be an integer")
		}
		if !ok {
			v = math.MaxInt64 // out of range: reported as such below
		}
		if !checkTokens(v, 1) {
			return false, true, a.errf(azureColumns[k], string(raw), tokenRange(1))
		}
		lens[k-1] = v
	}
	if a.haveFirst && ns < a.last {
		return false, true, a.errf("TIMESTAMP", string(tsRaw), "goes back in time from the previous row")
	}
	if !a.haveFirst {
		a.t0, a.haveFirst = ns, true
	}
	a.last = ns
	ms := float64(ns-a.t0) / 1e6
	if !a.sched.inWindow(ms) {
		return false, false, nil
	}
	arrival, ok := a.sched.at(ms)
	if !ok {
		return false, false, a.errf("TIMESTAMP", string(tsRaw), "too far after the first row")
	}
	a.seg[0] = Segment{ID: splitmix64(a.uniqueBase ^ uint64(a.lr.line)), Len: int(lens[0])}
	*r = Request{Index: a.n, Arrival: arrival, InputLen: int(lens[0]), OutputLen: int(lens[1]), Prompt: a.seg[:]}
	return true, false, nil
}

func allDigits(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseAzureTime reads "YYYY-MM-DD HH:MM:SS[.fffffffff]" (also with 'T')
// as UTC nanoseconds since the epoch, without allocating.
func parseAzureTime(b []byte) (int64, bool) {
	if len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != ' ' && b[10] != 'T') || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	num := func(s []byte) (int, bool) {
		v := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	y, ok1 := num(b[0:4])
	mo, ok2 := num(b[5:7])
	d, ok3 := num(b[8:10])
	h, ok4 := num(b[11:13])
	mi, ok5 := num(b[14:16])
	s, ok6 := num(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || y < 1900 || y > 2200 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59 {
		return 0, false
	}
	if d > time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return 0, false
	}
	ns := 0
	if rest := b[19:]; len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return 0, false
		}
		frac, ok := num(rest[1:])
		if !ok {
			return 0, false
		}
		for k := len(rest) - 1; k < 9; k++ {
			frac *= 10
		}
		ns = frac
	}
	return time.Date(y, time.Month(mo), d, h, mi, s, ns, time.UTC).UnixNano(), true
}
