package workload

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

type mooncakeSource struct {
	lr     *lineReader
	file   closer
	name   string
	bs     int
	limit  int64
	strict bool

	sched      schedule
	fixed      bool // timestamps drive arrivals
	decided    bool // fixed decided (first record seen)
	forceFixed bool // --fixed-schedule given
	lastFirst  float64
	haveFirst  bool
	rate       *arrivals

	sessions map[string]*mcSession
	nextSess uint64

	uniqueBase uint64
	n          int64
	line       int64 // current line, for unique tails
	skipped    int64
	skippable  bool // the last build error was a value Lenient may skip
	err        error
	done       bool

	sc     jscan
	row    mcRow
	segs   []Segment
	hashes []int64
}

type mcSession struct {
	id      uint64
	turns   int
	ctx     int // context after the last turn, if it ran in full
	arrival time.Duration
}

type mcRow struct {
	hasTS, hasIn, hasOut, hasHash, hasSess, hasDelay, hasText bool
	ts, delay                                                 float64
	in, out                                                   int64
	sess, text                                                []byte
	sessEsc, textEsc                                          bool
	tsRaw, inRaw, outRaw, delayRaw                            []byte
}

// NewMooncake reads an aiperf / Mooncake mooncake_trace JSONL stream, one
// request per line; name labels errors. The source implements StreamSource;
// it does not close r.
//
//	{"timestamp": 27482, "input_length": 655, "output_length": 52, "hash_ids": [46, 47]}
//	{"session_id": "abc", "delay": 2000, "input_length": 150, "output_length": 20}
//
// Mirrors aiperf (ai-dynamo/aiperf @0308411, 2026): dataset/loader/models.py
// MooncakeTrace, loader/mooncake_trace.py, base_trace_loader.py, the block
// layout of generator/prompt.py _build_token_sequence, and
// timing/strategies/fixed_schedule.py. Fields:
//
//   - timestamp (ms, int or float): arrival. A trace whose first record has
//     one is replayed on its schedule (aiperf turns --fixed-schedule on by
//     itself); then every first turn needs one, in non-decreasing order.
//   - input_length (tokens) and hash_ids: one id per --isl-block-size
//     (512) token block. When len(hash_ids)·512 > input_length the last block
//     is partial, input_length − 512·(len−1) tokens, which must be in
//     [1, 512]; otherwise every block is whole and the rest of the prompt is
//     unique tokens. Each hash id becomes a Segment whose ID is a bijection
//     of the id, so requests that share leading hash ids share a prefix.
//   - text_input instead of input_length: tokens by ApproxTokens, one
//     segment named by the text (equal texts share it).
//   - output_length (tokens): required (BLIS cannot sample a reply length).
//   - session_id (string) and delay (ms): aiperf's multi-turn form. Rows
//     with the same session_id are the turns of one conversation in file
//     order; a later turn's input_length is its new tokens, sent after the
//     previous turns and their replies (aiperf's default context mode,
//     deltas_without_responses), so it is a PrevContext follow-up. A
//     follow-up with a timestamp is sent at it (not before the previous
//     turn finished); with a delay, that long after; with neither, at once.
//   - type ("mooncake_trace") and extra (request-body fields) are accepted
//     and ignored; messages, payload and tools need a tokenizer and are
//     refused, as is any other key.
//
// Memory: O(1) per line plus the line's hash ids, and, only when rows carry
// session_id, a small record per distinct session (their rows may be
// anywhere in the file).
func NewMooncake(r io.Reader, name string, spec TraceSpec) (Source, error) {
	src, err := newMooncake(r, nil, name, spec)
	if err != nil {
		return nil, err // a nil Source, not a typed nil
	}
	return src, nil
}

func newMooncake(r io.Reader, c io.Closer, name string, spec TraceSpec) (*mooncakeSource, error) {
	sched, err := newSchedule(spec)
	if err != nil {
		return nil, err
	}
	bs := spec.ISLBlockSize
	if bs == 0 {
		bs = DefaultISLBlockSize
	}
	if bs < 1 || bs > MaxTokens {
		return nil, badInput("--isl-block-size", strconv.Itoa(bs), tokenRange(1))
	}
	if spec.NumPrompts < 0 {
		return nil, badInput("--num-prompts", strconv.Itoa(spec.NumPrompts), "must be ≥ 0 (0: the whole file)")
	}
	rate, err := newArrivals(spec.RequestRate, spec.Burstiness, 0, spec.Seed, "workload.arrivals")
	if err != nil {
		return nil, err
	}
	return &mooncakeSource{
		lr: newLineReader(r, name), file: closer{c}, name: name, bs: bs,
		limit: int64(spec.NumPrompts), strict: !spec.Lenient,
		sched: sched, forceFixed: spec.FixedSchedule, rate: rate,
		uniqueBase: splitmix64(splitmix64(uint64(spec.Seed)) ^ tagTraceUnique),
	}, nil
}

// Tags separating ID families of trace readers.
const (
	tagTraceUnique = 0x7472756e69710000 // "truniq"
	tagHashID      = 0x6861736869640000 // "hashid"
	tagText        = 0x7465787400000000 // "text"
)

func (m *mooncakeSource) Err() error     { return m.err }
func (m *mooncakeSource) Close() error   { return m.file.close() }
func (m *mooncakeSource) Skipped() int64 { return m.skipped }

func (m *mooncakeSource) stop(err error) bool {
	if m.err == nil {
		m.err = err
	}
	m.done = true
	m.file.close()
	return false
}

func (m *mooncakeSource) Next(r *Request) bool {
	for {
		if m.done {
			return false
		}
		if m.limit > 0 && m.n >= m.limit {
			return m.stop(nil)
		}
		line, ok := m.lr.next()
		if !ok {
			return m.stop(m.lr.err)
		}
		if blank(line) {
			continue
		}
		m.line = m.lr.line
		if err := m.parse(line); err != nil {
			return m.stop(err)
		}
		m.skippable = false
		keep, err := m.build(r)
		if err != nil {
			if m.skippable && !m.strict {
				m.skipped++
				continue
			}
			return m.stop(err)
		}
		if keep {
			m.n++
			return true
		}
	}
}

func (m *mooncakeSource) errf(field, value, allowed string) error {
	return &TraceError{File: m.name, Line: m.line, Field: field, Value: shorten(value), Allowed: allowed}
}

// errv is errf for an impossible value, which Lenient skips.
func (m *mooncakeSource) errv(field, value, allowed string) error {
	m.skippable = true
	return m.errf(field, value, allowed)
}

// parse reads one line into m.row, checking syntax and types.
func (m *mooncakeSource) parse(line []byte) error {
	m.sc = jscan{b: line}
	s := &m.sc
	m.row = mcRow{}
	m.hashes = m.hashes[:0]
	syntax := func(err error) error { return &TraceError{File: m.name, Line: m.line, Allowed: err.Error()} }
	if err := s.expect('{', "'{' (one JSON object per line)"); err != nil {
		return syntax(err)
	}
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			kraw, kesc, err := s.str()
			if err != nil {
				return syntax(err)
			}
			key := kraw
			if kesc {
				k, err := strValue(kraw, true)
				if err != nil {
					return syntax(err)
				}
				key = []byte(k)
			}
			if err := s.expect(':', "':'"); err != nil {
				return syntax(err)
			}
			if err := m.field(key); err != nil {
				return err
			}
			s.ws()
			if s.peek() == ',' {
				s.i++
				continue
			}
			if s.peek() == '}' {
				s.i++
				break
			}
			return syntax(s.errAt("expected ',' or '}'"))
		}
	}
	if err := s.end(); err != nil {
		return syntax(err)
	}
	return nil
}

// field reads the value of key.
func (m *mooncakeSource) field(key []byte) error {
	s := &m.sc
	row := &m.row
	syntax := func(err error) error { return &TraceError{File: m.name, Line: m.line, Allowed: err.Error()} }
	dup := func(seen bool) error {
		if seen {
			return m.errf(strconv.Quote(string(key)), "", "duplicate key")
		}
		return nil
	}
	number := func(dst *float64, raw *[]byte, has *bool) error {
		if err := dup(*has); err != nil {
			return err
		}
		if s.isNull() {
			return nil
		}
		b, isInt, err := s.num()
		if err != nil {
			s.ws()
			return m.errf(strconv.Quote(string(key)), "", "must be a number (ms)")
		}
		v, ok := parseNum(b, isInt)
		if !ok {
			return m.errf(strconv.Quote(string(key)), string(b), "must be a finite number (ms)")
		}
		*dst, *raw, *has = v, b, true
		return nil
	}
	integer := func(dst *int64, raw *[]byte, has *bool) error {
		if err := dup(*has); err != nil {
			return err
		}
		if s.isNull() {
			return nil
		}
		b, isInt, err := s.num()
		if err != nil || !isInt {
			if err == nil {
				return m.errf(strconv.Quote(string(key)), string(b), "must be an integer")
			}
			return m.errf(strconv.Quote(string(key)), "", "must be an integer")
		}
		v, ok := parseInt(b)
		if !ok {
			v = math.MaxInt64 // out of range; build reports it
		}
		*dst, *raw, *has = v, b, true
		return nil
	}
	switch string(key) {
	case "timestamp":
		return number(&row.ts, &row.tsRaw, &row.hasTS)
	case "delay":
		return number(&row.delay, &row.delayRaw, &row.hasDelay)
	case "input_length":
		return integer(&row.in, &row.inRaw, &row.hasIn)
	case "output_length":
		return integer(&row.out, &row.outRaw, &row.hasOut)
	case "hash_ids":
		if err := dup(row.hasHash); err != nil {
			return err
		}
		if s.isNull() {
			return nil
		}
		row.hasHash = true
		if err := s.expect('[', "'['"); err != nil {
			return m.errf(`"hash_ids"`, "", "must be a list of integers")
		}
		s.ws()
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			b, isInt, err := s.num()
			if err != nil || !isInt {
				return m.errf(`"hash_ids"`, "", "must be a list of integers")
			}
			v, ok := parseInt(b)
			if !ok {
				return m.errf(`"hash_ids"`, string(b), "must fit a 64-bit integer")
			}
			m.hashes = append(m.hashes, v)
			s.ws()
			if s.peek() == ',' {
				s.i++
				continue
			}
			if s.peek() == ']' {
				s.i++
				return nil
			}
			return syntax(s.errAt("expected ',' or ']'"))
		}
	case "session_id", "text_input", "type":
		switch string(key) {
		case "session_id":
			if err := dup(row.hasSess); err != nil {
				return err
			}
		case "text_input":
			if err := dup(row.hasText); err != nil {
				return err
			}
		}
		if s.isNull() {
			return nil
		}
		raw, esc, err := s.str()
		if err != nil {
			s.ws()
			if s.peek() != '"' {
				return m.errf(strconv.Quote(string(key)), "", "must be a string")
			}
			return syntax(err)
		}
		switch string(key) {
		case "session_id":
			row.sess, row.sessEsc, row.hasSess = raw, esc, true
		case "text_input":
			row.text, row.textEsc, row.hasText = raw, esc, true
		default:
			if esc || string(raw) != DatasetMooncake {
				return m.errf(`"type"`, strconv.Quote(string(raw)), `must be "mooncake_trace"`)
			}
		}
		return nil
	case "extra":
		if err := s.skip(0); err != nil {
			return syntax(err)
		}
		return nil
	case "messages", "payload", "tools", "message_mode", "context_mode":
		return m.errf(strconv.Quote(string(key)), "", "not supported: BLIS has no tokenizer; give input_length (and hash_ids) or text_input")
	}
	return m.errf(strconv.Quote(string(key)), "", "unknown key; allowed: timestamp, input_length, output_length, hash_ids, "+
		"text_input, session_id, delay, type, extra")
}

// build validates m.row and fills r; keep is false for a row outside the
// fixed-schedule window.
func (m *mooncakeSource) build(r *Request) (keep bool, err error) {
	row := &m.row
	// Input.
	var in int64
	switch {
	case row.hasText && row.hasIn:
		return false, m.errf(`"text_input"`, "", "give input_length or text_input, not both")
	case row.hasText:
		if row.hasHash {
			return false, m.errf(`"hash_ids"`, "", "only allowed with input_length, not text_input")
		}
		text, err := strValue(row.text, row.textEsc)
		if err != nil {
			return false, m.errf(`"text_input"`, "", err.Error())
		}
		in = int64(ApproxTokens(text))
		if !checkTokens(in, 1) {
			return false, m.errv(`"text_input"`, strconv.Quote(text), fmt.Sprintf("holds %d tokens by ApproxTokens; %s", in, tokenRange(1)))
		}
		m.segs = append(m.segs[:0], Segment{ID: splitmix64(fnv64(text) ^ tagText), Len: int(in)})
	case row.hasIn:
		in = row.in
		if !checkTokens(in, 1) {
			return false, m.errv(`"input_length"`, string(row.inRaw), tokenRange(1))
		}
		if err := m.blocks(int(in)); err != nil {
			return false, err
		}
	default:
		return false, m.errf(`"input_length"`, "", "missing: each line needs input_length (or text_input)")
	}
	if !row.hasOut {
		return false, m.errf(`"output_length"`, "", "missing: BLIS needs each request's output length")
	}
	if !checkTokens(row.out, 1) {
		return false, m.errv(`"output_length"`, string(row.outRaw), tokenRange(1))
	}
	if row.hasDelay && !(row.delay >= 0 && row.delay <= maxScheduleMs) {
		return false, m.errv(`"delay"`, string(row.delayRaw), fmt.Sprintf("must be in [0, %g] ms", float64(maxScheduleMs)))
	}
	if row.hasTS && !(row.ts >= 0 && row.ts <= 1e15) {
		return false, m.errv(`"timestamp"`, string(row.tsRaw), "must be in [0, 1e15] ms")
	}

	// Schedule: decided by the first record, as aiperf does.
	if !m.decided {
		m.decided = true
		m.fixed = row.hasTS || m.forceFixed
	}

	// Session.
	var sess *mcSession
	var sessKey []byte
	if row.hasSess {
		if row.sessEsc || !utf8.Valid(row.sess) {
			k, err := strValue(row.sess, row.sessEsc)
			if err != nil {
				return false, m.errf(`"session_id"`, "", err.Error())
			}
			sessKey = []byte(k)
		} else {
			sessKey = row.sess
		}
		sess = m.sessions[string(sessKey)] // no allocation for the lookup
	}
	first := sess == nil

	// Window (fixed schedule only): aiperf drops rows outside it before
	// grouping sessions.
	if m.fixed && row.hasTS && !m.sched.inWindow(row.ts) {
		return false, nil
	}

	var arrival, delay time.Duration
	if m.fixed {
		if first && !row.hasTS {
			what := "missing: every request needs a timestamp when the trace is replayed on its schedule"
			if row.hasSess {
				what = "missing: a session's first turn needs a timestamp when the trace is replayed on its schedule"
			}
			if m.forceFixed && m.n == 0 {
				what += " (--fixed-schedule)"
			}
			return false, m.errf(`"timestamp"`, "", what)
		}
		if row.hasTS {
			if first {
				if m.haveFirst && row.ts < m.lastFirst {
					return false, m.errv(`"timestamp"`, string(row.tsRaw), fmt.Sprintf(
						"goes back in time: a first turn must not come before the previous one (%s ms)", fmtFloat(m.lastFirst)))
				}
				m.lastFirst, m.haveFirst = row.ts, true
			}
			var ok bool
			if arrival, ok = m.sched.at(row.ts); !ok {
				return false, m.errf(`"timestamp"`, string(row.tsRaw), fmt.Sprintf(
					"more than %g ms after the schedule's zero; try --fixed-schedule-auto-offset", float64(maxScheduleMs)))
			}
		} else {
			arrival = sess.arrival
			if row.hasDelay {
				delay = m.sched.delay(row.delay)
			}
		}
	} else {
		if row.hasTS {
			return false, m.errf(`"timestamp"`, string(row.tsRaw),
				"the first record has no timestamp, so the trace is paced by --request-rate; give timestamps on every first turn or on none")
		}
		if first {
			arrival = m.rate.next()
		} else {
			arrival = sess.arrival
		}
		if !first && row.hasDelay {
			delay = msToDuration(row.delay)
		}
	}
	*r = Request{
		Index:     m.n,
		Arrival:   arrival,
		InputLen:  int(in),
		OutputLen: int(row.out),
		Prompt:    m.segs,
	}
	if row.hasSess {
		if first {
			if m.sessions == nil {
				m.sessions = make(map[string]*mcSession)
			}
			m.nextSess++
			sess = &mcSession{id: m.nextSess}
			m.sessions[string(sessKey)] = sess
			sess.arrival = arrival
		} else {
			r.PrevContext = true
			r.ContextLen = sess.ctx
			r.Delay = delay
		}
		r.SessionID = sess.id
		r.Turn = sess.turns
		sess.turns++
		sess.ctx = r.ContextLen + r.InputLen + r.OutputLen
	}
	return true, nil
}

// blocks fills m.segs from m.hashes for a prompt of in tokens (aiperf
// PromptGenerator._build_token_sequence layouts).
func (m *mooncakeSource) blocks(in int) error {
	m.segs = m.segs[:0]
	nh := len(m.hashes)
	bs := m.bs
	if nh == 0 {
		m.segs = append(m.segs, Segment{ID: splitmix64(m.uniqueBase ^ uint64(m.line)), Len: in})
		return nil
	}
	last := bs
	if int64(nh)*int64(bs) > int64(in) {
		last = in - (nh-1)*bs
		if last <= 0 || last > bs {
			return m.errv(`"hash_ids"`, fmt.Sprintf("%d ids", nh), fmt.Sprintf(
				"too many for input_length %d: with %d-token blocks the last block would hold %d tokens; need 1..%d (at most %d ids)",
				in, bs, last, bs, (in+bs-1)/bs))
		}
	}
	for i, h := range m.hashes {
		l := bs
		if i == nh-1 {
			l = last
		}
		m.segs = append(m.segs, Segment{ID: splitmix64(uint64(h) ^ tagHashID), Len: l})
	}
	if tail := in - nh*bs; tail > 0 {
		// Prefix-only layout: the hashed blocks cover the cached prefix; the
		// rest of the prompt is unique to this line.
		m.segs = append(m.segs, Segment{ID: splitmix64(m.uniqueBase ^ uint64(m.line)), Len: tail})
	}
	return nil
}

// fnv64 is FNV-1a over s: names derived from text (shared texts, system
// prompts) without allocating.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
