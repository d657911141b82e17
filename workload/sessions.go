package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// SessionRecord is one line of BLIS's sessions format (README.md): a
// multi-turn conversation or agent run, with optional sub-agent branches.
// WriteAgentic writes it; the "sessions" reader reads it.
type SessionRecord struct {
	// SessionID labels the session in error messages; optional. Sessions
	// get numeric IDs in file order whatever their labels.
	SessionID string `json:"session_id,omitempty"`
	// Timestamp is the session's start, ms (top-level sessions only). Give
	// it on every line or on none: with it, sessions start on that schedule
	// (as aiperf's --fixed-schedule); without, by --request-rate.
	Timestamp *float64 `json:"timestamp,omitempty"`
	// SystemPrompt is a prompt prefix shared by every session naming the
	// same ID (tool definitions, instructions): it comes before turn 0's
	// input_tokens and is counted apart from them.
	SystemPrompt *SystemPrompt `json:"system_prompt,omitempty"`
	// Context is for branches only: "fork" (default) starts the branch from
	// the parent turn's whole context, "fresh" from nothing (then it may
	// have its own SystemPrompt).
	Context string `json:"context,omitempty"`
	// Turns are the requests of the session, in order; at least one.
	Turns []SessionTurn `json:"turns"`
}

// SystemPrompt is a shared prompt prefix.
type SystemPrompt struct {
	ID     string `json:"id"`
	Tokens int    `json:"tokens"`
}

// SessionTurn is one request of a session.
type SessionTurn struct {
	// Delay, ms: for turn k ≥ 1, the think or tool time after turn k−1's
	// response (and its branches) before this turn is sent; for a branch's
	// turn 0, the time after the parent turn's response; must be 0 on a
	// top-level session's turn 0 (it starts at its timestamp).
	Delay float64 `json:"delay,omitempty"`
	// InputTokens are the new prompt tokens of this turn (the user message
	// or tool results), after everything that came before (≥ 1).
	InputTokens int `json:"input_tokens"`
	// OutputTokens is the length of this turn's response (≥ 1).
	OutputTokens int `json:"output_tokens"`
	// Branches are sub-agent sessions spawned after this turn's response;
	// the session's next turn waits for all of them to finish. Not allowed
	// on the last turn (nothing would wait for them).
	Branches []SessionRecord `json:"branches,omitempty"`
}

// maxBranchDepth bounds branch nesting (sub-agents of sub-agents).
const maxBranchDepth = 16

// Context values of a branch.
const (
	ContextFork  = "fork"
	ContextFresh = "fresh"
)

// sessionsSource flattens session records into requests: a session's turns
// in order, each turn's branches (depth first) right after it. Memory: one
// session (one line) at a time.
type sessionsSource struct {
	lr   *lineReader
	file closer
	name string
	gen  *agenticGen // instead of lr: generated sessions

	limit  int64
	sched  schedule
	fixed  bool
	decide bool // fixed decided
	rate   *arrivals
	lastTS float64
	haveTS bool

	nextSess   uint64
	segCounter uint64
	uniqueBase uint64

	pend []pendReq
	segs []Segment
	head int

	n    int64
	line int64
	err  error
	done bool
}

type pendReq struct {
	r    Request
	a, b int // r.Prompt = segs[a:b]
}

// NewSessions reads BLIS's sessions JSONL (one SessionRecord per line) from
// r; name labels errors. The source implements StreamSource; it does not
// close r.
func NewSessions(r io.Reader, name string, spec TraceSpec) (Source, error) {
	src, err := newSessions(r, nil, name, spec)
	if err != nil {
		return nil, err // a nil Source, not a typed nil
	}
	return src, nil
}

func newSessions(r io.Reader, c io.Closer, name string, spec TraceSpec) (*sessionsSource, error) {
	s, err := newSessionsCommon(name, spec)
	if err != nil {
		return nil, err
	}
	s.lr, s.file = newLineReader(r, name), closer{c}
	return s, nil
}

func newSessionsCommon(name string, spec TraceSpec) (*sessionsSource, error) {
	sched, err := newSchedule(spec)
	if err != nil {
		return nil, err
	}
	if spec.NumPrompts < 0 {
		return nil, badInput("--num-prompts", strconv.Itoa(spec.NumPrompts), "must be ≥ 0 (0: every request)")
	}
	rate, err := newArrivals(spec.RequestRate, spec.Burstiness, 0, spec.Seed, "workload.arrivals")
	if err != nil {
		return nil, err
	}
	return &sessionsSource{
		name: name, limit: int64(spec.NumPrompts), sched: sched, rate: rate, fixed: spec.FixedSchedule,
		uniqueBase: splitmix64(splitmix64(uint64(spec.Seed)) ^ tagSessUnique),
	}, nil
}

const (
	tagSessUnique = 0x7365737375000000 // "sessu"
	tagSysPrompt  = 0x7379737000000000 // "sysp"
)

func (s *sessionsSource) Err() error   { return s.err }
func (s *sessionsSource) Close() error { return s.file.close() }

func (s *sessionsSource) stop(err error) bool {
	if s.err == nil {
		s.err = err
	}
	s.done = true
	s.file.close()
	return false
}

func (s *sessionsSource) Next(r *Request) bool {
	for {
		if s.done {
			return false
		}
		if s.limit > 0 && s.n >= s.limit {
			return s.stop(nil)
		}
		if s.head < len(s.pend) {
			p := &s.pend[s.head]
			s.head++
			*r = p.r
			r.Index = s.n
			r.Prompt = s.segs[p.a:p.b]
			s.n++
			return true
		}
		rec, ok, err := s.record()
		if err != nil {
			return s.stop(err)
		}
		if !ok {
			return s.stop(nil)
		}
		if err := s.flatten(rec); err != nil {
			return s.stop(err)
		}
	}
}

// record returns the next session record.
func (s *sessionsSource) record() (*SessionRecord, bool, error) {
	if s.gen != nil {
		rec, ok := s.gen.next()
		s.line++
		return rec, ok, nil
	}
	for {
		line, ok := s.lr.next()
		if !ok {
			return nil, false, s.lr.err
		}
		if blank(line) {
			continue
		}
		s.line = s.lr.line
		rec := new(SessionRecord)
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(rec); err != nil {
			return nil, false, s.jsonErr(err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, false, s.errf("", "", "unexpected text after the session object")
		}
		return rec, true, nil
	}
}

func (s *sessionsSource) errf(field, value, allowed string) error {
	return &TraceError{File: s.name, Line: s.line, Field: field, Value: shorten(value), Allowed: allowed}
}

func (s *sessionsSource) jsonErr(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return s.errf("", "", fmt.Sprintf("invalid JSON at column %d: %s", se.Offset, se.Error()))
	case errors.As(err, &te):
		want := te.Type.String()
		switch want {
		case "int":
			want = "an integer"
		case "float64":
			want = "a number"
		case "string":
			want = "a string"
		case "workload.SessionRecord":
			want = "an object"
		default:
			if strings.HasPrefix(want, "[]") {
				want = "a list"
			} else if strings.HasPrefix(want, "*") || strings.HasPrefix(want, "workload.") {
				want = "an object"
			}
		}
		field := te.Field
		if field == "" {
			field = "(line)"
		}
		if num, ok := strings.CutPrefix(te.Value, "number "); ok && want == "an integer" && !strings.ContainsAny(num, ".eE") {
			// An integer literal too large for int, not a fraction.
			return s.errf(field, num, fmt.Sprintf("out of range: at most %d", math.MaxInt))
		}
		return s.errf(field, te.Value, "must be "+want)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return s.errf("", "", "invalid JSON: the object is cut short")
	}
	msg := err.Error()
	if k, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return s.errf(k, "", "unknown key; allowed: session_id, timestamp, system_prompt, context, turns; "+
			"in a turn: delay, input_tokens, output_tokens, branches; in system_prompt: id, tokens")
	}
	return s.errf("", "", "invalid JSON: "+strings.TrimPrefix(msg, "json: "))
}

// flatten validates one session record and queues its requests.
func (s *sessionsSource) flatten(rec *SessionRecord) error {
	s.pend, s.segs, s.head = s.pend[:0], s.segs[:0], 0

	// Start time.
	if !s.decide {
		s.decide = true
		s.fixed = s.fixed || rec.Timestamp != nil
	}
	var start time.Duration
	if s.fixed {
		if rec.Timestamp == nil {
			return s.errf(`"timestamp"`, "", "missing: the first session has one, so every session needs one (a fixed schedule)")
		}
		ts := *rec.Timestamp
		if !(ts >= 0 && ts <= 1e15) {
			return s.errf(`"timestamp"`, fmtFloat(ts), "must be in [0, 1e15] ms")
		}
		if s.haveTS && ts < s.lastTS {
			return s.errf(`"timestamp"`, fmtFloat(ts), fmt.Sprintf("goes back in time from the previous session (%s ms)", fmtFloat(s.lastTS)))
		}
		s.lastTS, s.haveTS = ts, true
		if !s.sched.inWindow(ts) {
			return nil
		}
		var ok bool
		if start, ok = s.sched.at(ts); !ok {
			return s.errf(`"timestamp"`, fmtFloat(ts), "too far after the schedule's zero; try --fixed-schedule-auto-offset")
		}
	} else {
		if rec.Timestamp != nil {
			return s.errf(`"timestamp"`, fmtFloat(*rec.Timestamp), "the first session has no timestamp, so sessions start by --request-rate; give one on every line or on none")
		}
		start = s.rate.next()
	}
	if rec.Context != "" {
		return s.errf(`"context"`, strconv.Quote(rec.Context), "only branches have a context")
	}
	return s.walk(rec, "", 0, start, 0, 0, 0)
}

// walk queues the turns of rec (and its branches). path prefixes field
// names in errors; parent/parentTurn/parentCtx describe the spawning turn
// of a branch (parent 0: a top-level session).
func (s *sessionsSource) walk(rec *SessionRecord, path string, depth int, start time.Duration,
	parent uint64, parentTurn, parentCtx int) error {
	if depth > maxBranchDepth {
		return s.errf(path+`"branches"`, "", fmt.Sprintf("nested more than %d deep", maxBranchDepth))
	}
	if len(rec.Turns) == 0 {
		return s.errf(path+`"turns"`, "", "must hold at least one turn")
	}
	fork := false
	if parent != 0 {
		switch rec.Context {
		case "", ContextFork:
			fork = true
		case ContextFresh:
		default:
			return s.errf(path+`"context"`, strconv.Quote(rec.Context), `must be "fork" or "fresh"`)
		}
		if rec.Timestamp != nil {
			return s.errf(path+`"timestamp"`, fmtFloat(*rec.Timestamp), "a branch starts after its parent turn: use its first turn's delay")
		}
	}
	sys := 0
	var sysID uint64
	if sp := rec.SystemPrompt; sp != nil {
		if fork {
			return s.errf(path+`"system_prompt"`, "", `a "fork" branch continues its parent's context; a system prompt needs "context": "fresh"`)
		}
		if sp.ID == "" {
			return s.errf(path+`"system_prompt".id`, `""`, "must name the shared prompt")
		}
		if !checkTokens(int64(sp.Tokens), 1) {
			return s.errf(path+`"system_prompt".tokens`, strconv.Itoa(sp.Tokens), tokenRange(1))
		}
		sys, sysID = sp.Tokens, splitmix64(fnv64(sp.ID)^tagSysPrompt)
	}
	s.nextSess++
	id := s.nextSess
	ctx := 0
	for k := range rec.Turns {
		t := &rec.Turns[k]
		tp := turnPath(path, k)
		if !checkTokens(int64(t.InputTokens), 1) {
			return s.errf(tp+"input_tokens", strconv.Itoa(t.InputTokens), tokenRange(1)+" (missing counts as 0)")
		}
		if !checkTokens(int64(t.OutputTokens), 1) {
			return s.errf(tp+"output_tokens", strconv.Itoa(t.OutputTokens), tokenRange(1)+" (missing counts as 0)")
		}
		if !(t.Delay >= 0 && t.Delay <= maxScheduleMs) {
			return s.errf(tp+"delay", fmtFloat(t.Delay), fmt.Sprintf("must be in [0, %g] ms", float64(maxScheduleMs)))
		}
		if k == 0 && parent == 0 && t.Delay != 0 {
			return s.errf(tp+"delay", fmtFloat(t.Delay), "must be 0: a session's first turn starts at the session's start")
		}
		if k == len(rec.Turns)-1 && len(t.Branches) > 0 {
			return s.errf(tp+"branches", "", "not allowed on the last turn: the session's next turn is what waits for its branches")
		}
		p := pendReq{r: Request{
			Arrival:   start,
			OutputLen: t.OutputTokens,
			SessionID: id,
			Turn:      k,
			Final:     k == len(rec.Turns)-1,
		}}
		if k > 0 || parent != 0 {
			p.r.Delay = s.delay(t.Delay)
		}
		p.a = len(s.segs)
		switch {
		case k > 0:
			p.r.PrevContext, p.r.ContextLen = true, ctx
			p.r.WaitBranches = len(rec.Turns[k-1].Branches)
		case parent != 0:
			p.r.ParentSession, p.r.ParentTurn = parent, parentTurn
			if fork {
				p.r.PrevContext, p.r.ContextLen = true, parentCtx
			}
		}
		if k == 0 && sys > 0 {
			s.segs = append(s.segs, Segment{ID: sysID, Len: sys})
			p.r.InputLen += sys
			p.r.SystemSegments = 1
		}
		s.segCounter++
		s.segs = append(s.segs, Segment{ID: splitmix64(s.uniqueBase ^ s.segCounter), Len: t.InputTokens})
		p.r.InputLen += t.InputTokens
		p.b = len(s.segs)
		// A line is at most 64 MiB, so a few million turns of ≤ 2^28 tokens
		// each: the context fits an int with room to spare.
		ctx = p.r.ContextLen + p.r.InputLen + p.r.OutputLen
		s.pend = append(s.pend, p)
		for b := range t.Branches {
			bp := tp + "branches[" + strconv.Itoa(b) + "]."
			if err := s.walk(&t.Branches[b], bp, depth+1, start, id, k, ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// turnPath names turn k in error messages. Built for every turn, so it
// avoids fmt: top-level sessions (path "") share precomputed names.
func turnPath(path string, k int) string {
	if path == "" && k < len(topTurnPaths) {
		return topTurnPaths[k]
	}
	return path + `"turns"[` + strconv.Itoa(k) + "]."
}

var topTurnPaths = func() []string {
	p := make([]string, 256)
	for k := range p {
		p[k] = `"turns"[` + strconv.Itoa(k) + "]."
	}
	return p
}()

func (s *sessionsSource) delay(ms float64) time.Duration {
	if s.fixed {
		return s.sched.delay(ms)
	}
	return msToDuration(ms)
}
