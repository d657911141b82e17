// Package lmbench reads the per-request CSV that LMBenchmark
// (LMCache/LMBenchmark, the lmcache/lmcache-benchmark image; read at
// c82da35, the code llm-d's 2025 experiments ran) writes for one run. Two
// scripts write it, with two headers:
//
//	sharegpt/sharegpt-qa.py (scenario sharegpt):
//	  prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time
//	synthetic-multi-round-qa/multi-round-qa.py (short-input, long-input, long-long):
//	  prompt_tokens,generation_tokens,ttft,generation_time,user_id,question_id,launch_time,finish_time
//
// One row per request that completed. launch_time is time.time() (Unix
// seconds) when the request's coroutine started, just before the streamed
// chat-completions call; ttft is the first non-empty content chunk minus
// launch_time; generation_time is the end of the stream minus that first
// chunk (so ttft + generation_time = finish_time − launch_time to within
// the microseconds between the two clock reads); prompt_tokens and
// generation_tokens are the server's usage counts (the prompt counted
// after the chat template). multi-round-qa.py writes 0 for ttft and
// generation_time when no content arrived; pandas writes its integer
// columns as 76.0 there, since the per-user frames are concatenated.
//
// What the file does not hold: a request that raised (an HTTP error, a
// timeout) is logged and dropped, never written; in sharegpt-qa.py the
// first such error while waiting for the last requests also ends the wait,
// so the requests still in flight then are missing too. multi-round-qa.py
// keeps only requests that finished within its --time window. Neither
// writes any aggregate (the scripts print their summaries to the log), so a
// run read here has records and no Metrics.
package lmbench

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Name is the format's name, as validation manifests give it.
const Name = "lmbench"

// Scenario says which script wrote a file.
type Scenario int

const (
	// ShareGPT is sharegpt-qa.py: one request per entry of its run.json,
	// sent at a fixed rate without waiting for earlier ones; rows sorted by
	// launch_time.
	ShareGPT Scenario = iota
	// MultiRound is multi-round-qa.py: users holding a chat history, each
	// sending its next question when the previous answer has come and its
	// gap has passed; rows grouped by user.
	MultiRound
)

func (s Scenario) String() string {
	if s == MultiRound {
		return "multi-round-qa"
	}
	return "sharegpt"
}

// Row is one request as the file states it; times in seconds.
type Row struct {
	Line             int // 1-based line in the file
	PromptTokens     int
	GenerationTokens int
	TTFT             float64
	GenerationTime   float64
	LaunchTime       float64 // Unix seconds
	FinishTime       float64 // Unix seconds
	// LaunchNS and FinishNS are the same times in Unix nanoseconds, read
	// from the decimal text (a float64 of Unix seconds keeps only about
	// 0.2 µs).
	LaunchNS, FinishNS int64
	// UserID and QuestionID are multi-round-qa.py's: the user and the
	// 1-based number of the request among that user's written rows; 0 in a
	// sharegpt file.
	UserID, QuestionID int
}

// File is a parsed LMBenchmark CSV.
type File struct {
	Name     string
	Scenario Scenario
	Rows     []Row // in file order
}

// Error is a bad value in a file: the line, the column, the value as
// written and what is allowed.
type Error struct {
	File    string
	Line    int // 0: the file as a whole
	Column  string
	Value   string
	Allowed string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Column != "" {
		b.WriteString(e.Column + ": ")
	}
	if e.Value != "" {
		v := e.Value
		if len(v) > 60 {
			v = v[:60] + "…"
		}
		b.WriteString(strconv.Quote(v) + ": ")
	}
	b.WriteString(e.Allowed)
	return b.String()
}

// Columns of each scenario, in the order the scripts write them.
var (
	shareGPTColumns   = []string{"prompt_tokens", "generation_tokens", "ttft", "generation_time", "launch_time", "finish_time"}
	multiRoundColumns = []string{"prompt_tokens", "generation_tokens", "ttft", "generation_time", "user_id", "question_id", "launch_time", "finish_time"}
)

// maxTokens bounds a token count (a prompt of 2^28 tokens is far beyond
// any model's context).
const maxTokens = 1 << 28

// maxUnixS bounds launch_time and finish_time: Unix seconds whose
// nanoseconds (Row.LaunchNS, FinishNS) fit an int64 (until 2255).
const maxUnixS = 9e9

// slackS is how far ttft may exceed finish_time − launch_time: the two
// Unix-second timestamps are printed to about 0.1 µs, and the scripts read
// the clock separately for each column.
const slackS = 1e-3

// Parse reads an LMBenchmark CSV. name labels errors. Columns may come in
// any order; the header must hold exactly one scenario's columns.
func Parse(name string, data []byte) (*File, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = true
	errf := func(line int, col, val, allowed string) error {
		return &Error{File: name, Line: line, Column: col, Value: val, Allowed: allowed}
	}
	head, err := r.Read()
	if err == io.EOF {
		return nil, errf(0, "", "", "empty file: expected the header "+strings.Join(shareGPTColumns, ","))
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	f := &File{Name: name}
	col := map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(h)
		if _, dup := col[h]; dup {
			return nil, errf(1, "", h, "column repeats")
		}
		col[h] = i
	}
	want := shareGPTColumns
	if _, ok := col["user_id"]; ok {
		want, f.Scenario = multiRoundColumns, MultiRound
	}
	for _, c := range want {
		if _, ok := col[c]; !ok {
			return nil, errf(1, "", strings.Join(head, ","), fmt.Sprintf("missing column %s: the header must hold %s", c, strings.Join(want, ",")))
		}
	}
	if len(col) != len(want) {
		for _, h := range head {
			if !slices.Contains(want, strings.TrimSpace(h)) {
				return nil, errf(1, "", h, "unknown column: the header must hold "+strings.Join(want, ","))
			}
		}
	}
	r.FieldsPerRecord = len(head)
	type key struct{ user, q int }
	seen := map[key]int{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		line, _ := r.FieldPos(0)
		row := Row{Line: line}
		get := func(c string) string { return strings.TrimSpace(rec[col[c]]) }
		var bad error
		count := func(c string, lo int) int {
			if bad != nil {
				return 0
			}
			v, ok := parseCount(get(c))
			if !ok || v < lo || v > maxTokens {
				bad = errf(line, c, get(c), fmt.Sprintf("must be a whole number in [%d, %d]", lo, maxTokens))
			}
			return v
		}
		secs := func(c string, lo, hi float64) float64 {
			if bad != nil {
				return 0
			}
			v, err := strconv.ParseFloat(get(c), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
				bad = errf(line, c, get(c), fmt.Sprintf("must be a number of seconds in [%g, %g]", lo, hi))
			}
			return v
		}
		row.PromptTokens = count("prompt_tokens", 1)
		row.GenerationTokens = count("generation_tokens", 0)
		row.TTFT = secs("ttft", 0, 1e11)
		row.GenerationTime = secs("generation_time", 0, 1e11)
		row.LaunchTime = secs("launch_time", 0, maxUnixS)
		row.FinishTime = secs("finish_time", 0, maxUnixS)
		if f.Scenario == MultiRound {
			row.UserID = count("user_id", 1)
			row.QuestionID = count("question_id", 1)
		}
		if bad != nil {
			return nil, bad
		}
		row.LaunchNS, row.FinishNS = unixNanos(get("launch_time"), row.LaunchTime), unixNanos(get("finish_time"), row.FinishTime)
		if row.FinishTime < row.LaunchTime {
			return nil, errf(line, "finish_time", get("finish_time"), "must not be before launch_time "+get("launch_time"))
		}
		if row.TTFT > row.FinishTime-row.LaunchTime+slackS {
			return nil, errf(line, "ttft", get("ttft"), fmt.Sprintf("must not exceed finish_time − launch_time (%.6g s)", row.FinishTime-row.LaunchTime))
		}
		if f.Scenario == MultiRound {
			k := key{row.UserID, row.QuestionID}
			if prev, dup := seen[k]; dup {
				return nil, errf(line, "question_id", get("question_id"), fmt.Sprintf("user %d's question %d repeats line %d", row.UserID, row.QuestionID, prev))
			}
			seen[k] = line
		}
		f.Rows = append(f.Rows, row)
	}
	if f.Scenario == MultiRound {
		if err := checkQuestions(f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// checkQuestions checks that each user's questions are 1, 2, … n, as
// multi-round-qa.py numbers the rows it writes.
func checkQuestions(f *File) error {
	n := map[int]int{}
	for _, r := range f.Rows {
		n[r.UserID] = max(n[r.UserID], r.QuestionID)
	}
	count := map[int]int{}
	for _, r := range f.Rows {
		count[r.UserID]++
	}
	for _, r := range f.Rows {
		if r.QuestionID == n[r.UserID] && count[r.UserID] != n[r.UserID] {
			return &Error{File: f.Name, Line: r.Line, Column: "question_id", Value: strconv.Itoa(r.QuestionID),
				Allowed: fmt.Sprintf("user %d has %d rows but a question %d: questions must be numbered 1 to %d", r.UserID, count[r.UserID], r.QuestionID, count[r.UserID])}
		}
	}
	return nil
}

// parseCount reads a whole number written as an integer or, as pandas
// writes integer columns it has concatenated, with a zero fraction (76.0).
func parseCount(s string) (int, bool) {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if strings.Trim(s[i+1:], "0") != "" {
			return 0, false
		}
		s = s[:i]
	}
	if s == "" || s[0] == '+' {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// unixNanos converts a decimal number of seconds, as Python prints a
// float, to nanoseconds exactly (digits past the ninth rounded); v is the
// same value parsed, used for other spellings (an exponent). Parse has
// bounded the value to [0, maxUnixS] s.
func unixNanos(s string, v float64) int64 {
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w < 0 || strings.ContainsAny(frac, "eE+-") {
		return int64(math.Round(v * 1e9))
	}
	var ns int64
	for i := range 9 {
		ns *= 10
		if i < len(frac) {
			ns += int64(frac[i] - '0')
		}
	}
	if len(frac) > 9 && frac[9] >= '5' {
		ns++
	}
	return w*1e9 + ns
}

func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		allowed := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			allowed = "wrong number of fields: each row needs one per header column"
		}
		return &Error{File: name, Line: pe.Line, Allowed: "not valid CSV: " + allowed}
	}
	return &Error{File: name, Allowed: err.Error()}
}
