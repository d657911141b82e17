package workload

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"blis/metrics/format/lmbench"
)

// lmbenchSource replays an LMBenchmark per-request CSV (LMCache/LMBenchmark
// @ c82da35; the file and its columns: package metrics/format/lmbench): one
// request per row, sent at its launch_time's offset from the first row's
// (divided by --fixed-schedule-speedup), with the row's prompt_tokens and
// generation_tokens (honoured exactly). Rows are sent in launch order;
// request i is the row the lmbench reader gives ID i.
//
// multi-round-qa.py files (short-input, long-input, long-long: the user_id
// and question_id columns) are sessions, as the script runs them: one
// session per user (SessionID = user_id), question k its turn k−1. A user
// sends question k+1 only after answer k came back, with the whole chat
// history (every earlier question and answer) before the new question, so
// turn k ≥ 1 is a PrevContext follow-up whose new tokens are
// prompt_tokens − (the previous row's prompt_tokens + generation_tokens)
// (29 on every follow-up of llm-d's short-input files), released at its
// launch offset or when the previous turn is done, whichever is later: the
// script's own rule (its gap from the previous launch, and never two
// questions of a user in flight). A follow-up whose prompt_tokens leave no
// new token is an error naming the row.
//
// sharegpt-qa.py files (scenario sharegpt) are independent requests: the
// script sends run.json's entries at i/qps without waiting for any answer,
// so no request is a follow-up. Their prompts share prefixes all the same:
// run.json sends round 3 of 55 ShareGPT conversations, then round 4 of
// each, and so on, and each prompt is the conversation's text up to that
// human turn (ShareGPT's own replies included, not the model's), so a
// user's later prompt starts with its earlier one. When the rows fit that
// layout (lmbench.AlignShareGPT: every file in llm-d's 2025 experiments
// does) each row's prompt is its user's previous row's prompt up to its
// last 6 tokens (Llama 3's chat template ends a user turn with 5 tokens,
// and the text's last token can merge with the newline that follows it),
// then a new segment for the rest; a user's first row is one unique
// segment. Rows that do not fit are replayed as unique prompts
// (Reconstructed says which happened).
//
// What the replay does not have: requests that failed (the CSV never holds
// them) and, in a sharegpt file, those still in flight when a failure ended
// the run, so a file with missing rows replays less load than the server
// saw; the warm-up passes the scripts send before each run (sharegpt: round
// 2 of every conversation at the same qps, whose prompts prefix round 3's;
// multi-round: 10 short requests and one user's 2 questions), which leave
// those prefixes in the server's cache; the chat template's header (about
// 27 tokens for Llama 3.1) and sharegpt-qa.py's qps prefix, shared by every
// request of a run, and multi-round-qa.py's "system prompt" text shared by
// every user's first question, all replayed as unique tokens; and which
// server each request went to. Memory: the file is read whole (LMBenchmark
// files are one row per request of one run).
type lmbenchSource struct {
	reqs          []Request
	next          int
	reconstructed bool
}

// Reconstructed reports whether the requests carry the file's prefix
// structure: always for multi-round-qa.py files, and for sharegpt files
// whose rows fit LMBenchmark's run.json layout.
func (s *lmbenchSource) Reconstructed() bool { return s.reconstructed }

func (s *lmbenchSource) Next(r *Request) bool {
	if s.next >= len(s.reqs) {
		return false
	}
	*r = s.reqs[s.next]
	s.next++
	return true
}

func (s *lmbenchSource) Err() error   { return nil }
func (s *lmbenchSource) Close() error { return nil }

// shareGPTTemplateTail is how many tokens of a sharegpt prompt a later
// round of the same conversation does not repeat (see lmbenchSource).
const shareGPTTemplateTail = 6

// maxLMBenchBytes bounds the file read whole.
const maxLMBenchBytes = 256 << 20

// NewLMBench reads an LMBenchmark per-request CSV stream whole. name labels
// errors. The source implements StreamSource and has a Reconstructed()
// bool method; it does not close r.
func NewLMBench(r io.Reader, name string, spec TraceSpec) (Source, error) {
	src, err := newLMBench(r, name, spec)
	if err != nil {
		return nil, err // a nil Source, not a typed nil
	}
	return src, nil
}

func newLMBench(r io.Reader, name string, spec TraceSpec) (*lmbenchSource, error) {
	if spec.NumPrompts < 0 {
		return nil, badInput("--num-prompts", strconv.Itoa(spec.NumPrompts), "must be ≥ 0 (0: the whole file)")
	}
	if spec.FixedScheduleStartOffset != 0 || spec.FixedScheduleEndOffset != 0 {
		v := spec.FixedScheduleStartOffset
		flag := "--fixed-schedule-start-offset"
		if v == 0 {
			v, flag = spec.FixedScheduleEndOffset, "--fixed-schedule-end-offset"
		}
		return nil, badInput(flag, strconv.FormatInt(v, 10), "not supported for --dataset-name lmbench: a window would cut sessions; replay the whole file")
	}
	sched, err := newSchedule(TraceSpec{FixedScheduleSpeedup: spec.FixedScheduleSpeedup})
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(r, maxLMBenchBytes+1))
	if err != nil {
		return nil, &TraceError{File: name, Allowed: "cannot read: " + err.Error()}
	}
	if len(data) > maxLMBenchBytes {
		return nil, &TraceError{File: name, Allowed: fmt.Sprintf("larger than %d bytes: an LMBenchmark file holds one run", maxLMBenchBytes)}
	}
	f, err := lmbench.Parse(name, data)
	if err != nil {
		var le *lmbench.Error
		if errors.As(err, &le) {
			return nil, &TraceError{File: le.File, Line: int64(le.Line), Field: le.Column, Value: shorten(le.Value), Allowed: le.Allowed}
		}
		return nil, &TraceError{File: name, Allowed: err.Error()}
	}
	all := lmbench.LaunchOrder(f.Rows)
	order := all
	if spec.NumPrompts > 0 && spec.NumPrompts < len(order) {
		order = order[:spec.NumPrompts]
	}
	s := &lmbenchSource{reqs: make([]Request, len(order))}
	uniqueBase := splitmix64(splitmix64(uint64(spec.Seed)) ^ tagTraceUnique)
	var t0 int64
	if len(f.Rows) > 0 {
		t0 = f.Rows[order[0]].LaunchNS
	}
	for k, i := range order {
		row := f.Rows[i]
		if row.GenerationTokens < 1 {
			return nil, &TraceError{File: name, Line: int64(row.Line), Field: "generation_tokens", Value: "0",
				Allowed: "a replayed request needs at least 1 output token"}
		}
		at, ok := sched.at(float64(row.LaunchNS-t0) / 1e6)
		if !ok {
			return nil, &TraceError{File: name, Line: int64(row.Line), Field: "launch_time",
				Value: strconv.FormatFloat(row.LaunchTime, 'f', -1, 64), Allowed: "too far after the first row"}
		}
		s.reqs[k] = Request{Index: int64(k), Arrival: at, InputLen: row.PromptTokens, OutputLen: row.GenerationTokens,
			Prompt: []Segment{{ID: splitmix64(uniqueBase ^ uint64(row.Line)), Len: row.PromptTokens}}}
	}
	switch f.Scenario {
	case lmbench.MultiRound:
		if err := s.sessions(f, order, name); err != nil {
			return nil, err
		}
		s.reconstructed = true
	case lmbench.ShareGPT:
		s.reconstructed = s.shareGPTPrefixes(f, all, len(order))
	}
	return s, nil
}

// sessions makes each user's rows one session of PrevContext turns.
func (s *lmbenchSource) sessions(f *lmbench.File, order []int, name string) error {
	type turn struct{ k, prompt, gen int }
	prev := map[int]turn{} // user → its latest row so far
	for k, i := range order {
		row := f.Rows[i]
		q := &s.reqs[k]
		q.SessionID, q.Turn = uint64(row.UserID), row.QuestionID-1
		if q.Turn > 0 {
			p, ok := prev[row.UserID]
			if !ok || s.reqs[p.k].Turn != q.Turn-1 {
				return &TraceError{File: name, Line: int64(row.Line), Field: "launch_time", Value: strconv.FormatFloat(row.LaunchTime, 'f', -1, 64),
					Allowed: fmt.Sprintf("user %d's question %d must be launched after question %d", row.UserID, row.QuestionID, row.QuestionID-1)}
			}
			ctx := p.prompt + p.gen
			if row.PromptTokens <= ctx {
				return &TraceError{File: name, Line: int64(row.Line), Field: "prompt_tokens", Value: strconv.Itoa(row.PromptTokens),
					Allowed: fmt.Sprintf("must exceed the chat history it carries: the previous question's %d prompt + %d generated tokens", p.prompt, p.gen)}
			}
			q.PrevContext, q.ContextLen = true, ctx
			q.InputLen = row.PromptTokens - ctx
			q.Prompt[0].Len = q.InputLen
		}
		prev[row.UserID] = turn{k, row.PromptTokens, row.GenerationTokens}
	}
	for _, p := range prev {
		s.reqs[p.k].Final = true
	}
	return nil
}

// shareGPTPrefixes gives each of the first n sharegpt rows in launch
// order (all, every row) its conversation's earlier prompt as a prefix,
// when the rows fit run.json's layout.
func (s *lmbenchSource) shareGPTPrefixes(f *lmbench.File, all []int, n int) bool {
	rows := make([]lmbench.Row, len(all))
	for k, i := range all {
		rows[k] = f.Rows[i]
	}
	slots, ok := lmbench.AlignShareGPT(rows)
	if !ok {
		return false
	}
	prev := map[int][]Segment{} // user → prompt of its latest row so far
	for k := range n {
		q := &s.reqs[k]
		user := slots[k].User
		own := q.Prompt[0]
		if p, ok := prev[user]; ok {
			n := 0
			for _, sg := range p {
				n += sg.Len
			}
			shared := max(min(n-shareGPTTemplateTail, q.InputLen-1), 0)
			own.Len = q.InputLen - shared
			var segs []Segment
			for _, sg := range p {
				if shared <= 0 {
					break
				}
				sg.Len = min(sg.Len, shared)
				shared -= sg.Len
				segs = append(segs, sg)
			}
			q.Prompt = append(segs, own)
		}
		prev[user] = q.Prompt
	}
	return true
}
