package workload

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

func sessions(t testing.TB, text string, spec TraceSpec) ([]Request, error) {
	t.Helper()
	src, err := NewSessions(strings.NewReader(text), "s.jsonl", spec)
	if err != nil {
		return nil, err
	}
	return drain(t, src)
}

func TestSessionsExample(t *testing.T) {
	src, err := Open(TraceSpec{DatasetName: DatasetSessions, DatasetPath: "testdata/sessions_example.jsonl"})
	reqs := mustDrain(t, src, err)
	type row struct {
		sess        uint64
		turn        int
		final, prev bool
		ctx, in     int
		delay, at   time.Duration
		parent      uint64
		parentTurn  int
		wait        int
		segs        string
	}
	var got []row
	for _, r := range reqs {
		got = append(got, row{r.SessionID, r.Turn, r.Final, r.PrevContext, r.ContextLen, r.InputLen, r.Delay, r.Arrival,
			r.ParentSession, r.ParentTurn, r.WaitBranches, fmt.Sprint(lens(r.Prompt))})
	}
	ms := time.Millisecond
	want := []row{
		// chat-1: system prompt + message, then two follow-ups.
		{1, 0, false, false, 0, 920, 0, 0, 0, 0, 0, "[800 120]"},
		{1, 1, false, true, 1220, 40, 15000 * ms, 0, 0, 0, 0, "[40]"},
		{1, 2, true, true, 1510, 60, 9000 * ms, 0, 0, 0, 0, "[60]"},
		// agent-1, its turn 1 spawning a fresh and a forked sub-agent, joined by turn 2.
		{2, 0, false, false, 0, 12400, 0, 1500 * ms, 0, 0, 0, "[12000 400]"},
		{2, 1, false, true, 12490, 3500, 1200 * ms, 1500 * ms, 0, 0, 0, "[3500]"},
		{3, 0, false, false, 0, 3250, 300 * ms, 1500 * ms, 2, 1, 0, "[3000 250]"},
		{3, 1, true, true, 3330, 6000, 900 * ms, 1500 * ms, 0, 0, 0, "[6000]"},
		{4, 0, true, true, 16050, 200, 250 * ms, 1500 * ms, 2, 1, 0, "[200]"},
		{2, 2, false, true, 16050, 700, 500 * ms, 1500 * ms, 0, 0, 2, "[700]"},
		{2, 3, true, true, 17950, 2200, 42000 * ms, 1500 * ms, 0, 0, 0, "[2200]"},
		// chat-2 shares chat-1's system prompt.
		{5, 0, true, false, 0, 2800, 0, 2000 * ms, 0, 0, 0, "[800 2000]"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if reqs[0].Prompt[0] != reqs[10].Prompt[0] || reqs[3].Prompt[0] == reqs[0].Prompt[0] {
		t.Error("system prompts: same id must share a segment, different ids must not")
	}
	if reqs[0].Prompt[1].ID == reqs[10].Prompt[1].ID {
		t.Error("new tokens of different turns share a segment")
	}

	// Speedup scales start times and delays; without timestamps, sessions
	// start by the request rate and delays stay as written.
	src, err = Open(TraceSpec{DatasetName: DatasetSessions, DatasetPath: "testdata/sessions_example.jsonl", FixedScheduleSpeedup: 2})
	fast := mustDrain(t, src, err)
	if fast[3].Arrival != 750*ms || fast[1].Delay != 7500*ms {
		t.Errorf("speedup 2: arrival %v, delay %v", fast[3].Arrival, fast[1].Delay)
	}
	paced, err := sessions(t, `{"turns": [{"input_tokens": 5, "output_tokens": 5}, {"delay": 100, "input_tokens": 5, "output_tokens": 5}]}
{"turns": [{"input_tokens": 5, "output_tokens": 5}]}`, TraceSpec{RequestRate: 4, Burstiness: 1e300, FixedScheduleSpeedup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if paced[1].Delay != 100*ms || paced[2].Arrival != 250*ms || paced[1].Arrival != 0 {
		t.Errorf("rate-paced: %+v", paced)
	}
}

func TestSessionsErrors(t *testing.T) {
	ok := `{"timestamp": 0, "turns": [{"input_tokens": 5, "output_tokens": 5}]}` + "\n"
	for _, c := range []struct{ name, line, want string }{
		{"negative tokens", `{"timestamp": 1, "turns": [{"input_tokens": -5, "output_tokens": 5}]}`,
			`s.jsonl:2: "turns"[0].input_tokens: -5: must be an integer in [1, 268435456] (missing counts as 0)`},
		{"missing output", `{"timestamp": 1, "turns": [{"input_tokens": 5}]}`,
			`s.jsonl:2: "turns"[0].output_tokens: 0: must be an integer in [1, 268435456] (missing counts as 0)`},
		{"no turns", `{"timestamp": 1, "turns": []}`, `s.jsonl:2: "turns": must hold at least one turn`},
		{"fractional tokens", `{"timestamp": 1, "turns": [{"input_tokens": 1.5, "output_tokens": 5}]}`,
			`s.jsonl:2: turns.input_tokens: number 1.5: must be an integer`},
		{"unknown key", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5, "tools": 3}]}`,
			`s.jsonl:2: "tools": unknown key`},
		{"first turn delay", `{"timestamp": 1, "turns": [{"delay": 5, "input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "turns"[0].delay: 5: must be 0: a session's first turn starts at the session's start`},
		{"negative delay", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5}, {"delay": -1, "input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "turns"[1].delay: -1: must be in [0, 1e+12] ms`},
		{"branch on the last turn", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5, "branches": [{"turns": [{"input_tokens": 5, "output_tokens": 5}]}]}]}`,
			`s.jsonl:2: "turns"[0].branches: not allowed on the last turn`},
		{"bad context", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5, "branches": [{"context": "copy", "turns": [{"input_tokens": 5, "output_tokens": 5}]}]}, {"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "turns"[0].branches[0]."context": "copy": must be "fork" or "fresh"`},
		{"fork with a system prompt", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5, "branches": [{"system_prompt": {"id": "x", "tokens": 5}, "turns": [{"input_tokens": 5, "output_tokens": 5}]}]}, {"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "turns"[0].branches[0]."system_prompt": a "fork" branch continues its parent's context`},
		{"branch timestamp", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5, "branches": [{"timestamp": 3, "turns": [{"input_tokens": 5, "output_tokens": 5}]}]}, {"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "turns"[0].branches[0]."timestamp": 3: a branch starts after its parent turn`},
		{"top-level context", `{"timestamp": 1, "context": "fork", "turns": [{"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "context": "fork": only branches have a context`},
		{"empty system prompt id", `{"timestamp": 1, "system_prompt": {"id": "", "tokens": 5}, "turns": [{"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "system_prompt".id: "": must name the shared prompt`},
		{"time goes back", `{"timestamp": -1, "turns": [{"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "timestamp": -1: must be in [0, 1e15] ms`},
		{"missing timestamp", `{"turns": [{"input_tokens": 5, "output_tokens": 5}]}`,
			`s.jsonl:2: "timestamp": missing: the first session has one`},
		{"bad json", `{"timestamp": 1, "turns": [}`, `s.jsonl:2: invalid JSON`},
		{"trailing text", `{"timestamp": 1, "turns": [{"input_tokens": 5, "output_tokens": 5}]} 3`, `s.jsonl:2: unexpected text after the session object`},
		{"not an object", `[1]`, `s.jsonl:2: (line): array: must be an object`},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs, err := sessions(t, ok+c.line+"\n"+ok, TraceSpec{})
			wantBadInput(t, err, c.want)
			if len(reqs) != 1 {
				t.Errorf("%d requests before the error, want 1", len(reqs))
			}
		})
	}
	_, err := sessions(t, `{"turns": [{"input_tokens": 5, "output_tokens": 5}]}
{"timestamp": 4, "turns": [{"input_tokens": 5, "output_tokens": 5}]}`, TraceSpec{})
	wantBadInput(t, err, `s.jsonl:2: "timestamp": 4: the first session has no timestamp`)
	_, err = sessions(t, `{"timestamp": 4, "turns": [{"input_tokens": 5, "output_tokens": 5}]}
{"timestamp": 3, "turns": [{"input_tokens": 5, "output_tokens": 5}]}`, TraceSpec{})
	wantBadInput(t, err, `s.jsonl:2: "timestamp": 3: goes back in time from the previous session (4 ms)`)
	// Deep nesting is refused, not recursed into without bound.
	deep := `{"turns": [{"input_tokens": 5, "output_tokens": 5}]}`
	for range 20 {
		deep = `{"turns": [{"input_tokens": 5, "output_tokens": 5, "branches": [` + deep + `]}, {"input_tokens": 5, "output_tokens": 5}]}`
	}
	_, err = sessions(t, deep, TraceSpec{})
	wantBadInput(t, err, "nested more than 16 deep")
}

func agentic(t testing.TB, a AgenticSpec, seed int64) []Request {
	t.Helper()
	src, err := Open(TraceSpec{DatasetName: DatasetAgentic, Agentic: a, Seed: seed})
	return mustDrain(t, src, err)
}

func TestAgenticDeterministicAndRoundTrips(t *testing.T) {
	a := AgenticSpec{NumSessions: 30, SessionRate: 0.5, SystemPromptTokens: 8000, MeanTurns: 20, MaxContextTokens: 150000,
		SubagentProb: 0.1, ForkProb: 0.5, SubagentSystemPromptTokens: 2000}
	reqs := agentic(t, a, 11)
	if again := agentic(t, a, 11); fmt.Sprint(again) != fmt.Sprint(reqs) {
		t.Error("same seed, different sessions")
	}
	if other := agentic(t, a, 12); fmt.Sprint(other) == fmt.Sprint(reqs) {
		t.Error("seeds 11 and 12 gave the same sessions")
	}
	var buf, buf2 bytes.Buffer
	if err := WriteAgentic(&buf, a, 11); err != nil {
		t.Fatal(err)
	}
	if err := WriteAgentic(&buf2, a, 11); err != nil || !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Fatal("WriteAgentic is not deterministic")
	}
	if n := bytes.Count(buf.Bytes(), []byte("\n")); n != 30 {
		t.Errorf("%d lines, want one per session (30)", n)
	}
	read, err := sessions(t, buf.String(), TraceSpec{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(read) != fmt.Sprint(reqs) {
		t.Error("reading WriteAgentic's file differs from NewAgentic")
	}
}

func TestAgenticShape(t *testing.T) {
	reqs := agentic(t, AgenticSpec{}, 1) // the defaults
	var maxCtx, turns []int
	var maxDelay time.Duration
	branches, joins := 0, 0
	perSession := map[uint64]int{}
	top := map[uint64]bool{}
	for _, r := range reqs {
		perSession[r.SessionID]++
		if r.Turn == 0 && r.ParentSession == 0 {
			top[r.SessionID] = true
		}
		if r.Turn == 0 && r.ParentSession != 0 {
			branches++
		}
		joins += r.WaitBranches
		maxDelay = max(maxDelay, r.Delay)
		if r.Final && r.ParentSession == 0 && r.Turn > 0 && top[r.SessionID] {
			maxCtx = append(maxCtx, r.ContextLen+r.InputLen+r.OutputLen)
		}
	}
	for id := range top {
		turns = append(turns, perSession[id])
	}
	sort.Ints(maxCtx)
	sort.Ints(turns)
	t.Logf("%d requests, %d sessions, %d sub-agents; turns p50 %d max %d; final context p50 %d p90 %d max %d; longest gap %v",
		len(reqs), len(top), branches, turns[len(turns)/2], turns[len(turns)-1],
		maxCtx[len(maxCtx)/2], maxCtx[len(maxCtx)*9/10], maxCtx[len(maxCtx)-1], maxDelay)
	if len(top) != 100 {
		t.Errorf("%d sessions, want 100", len(top))
	}
	if med := turns[len(turns)/2]; med < 10 || med > 60 {
		t.Errorf("median %d turns per session, want tens", med)
	}
	if p90 := maxCtx[len(maxCtx)*9/10]; p90 < 100000 {
		t.Errorf("p90 final context %d tokens, want 100k+", p90)
	}
	if maxCtx[len(maxCtx)-1] > 200000+16000 {
		t.Errorf("a session reached %d tokens, beyond the 200k cap", maxCtx[len(maxCtx)-1])
	}
	if maxDelay < time.Minute {
		t.Errorf("longest gap %v: the tail should reach minutes", maxDelay)
	}
	if branches == 0 || joins != branches {
		t.Errorf("%d sub-agents, %d joins: every sub-agent must be joined", branches, joins)
	}
}

func TestAgenticValidation(t *testing.T) {
	_, err := Open(TraceSpec{DatasetName: DatasetAgentic, Agentic: AgenticSpec{NumSessions: 1, MeanTurns: 0.5, MaxContextTokens: 5000}})
	wantBadInput(t, err, "agentic mean_turns 0.5")
	err = WriteAgentic(&bytes.Buffer{}, AgenticSpec{NumSessions: -1}, 1)
	wantBadInput(t, err, "--agentic-num-sessions -1")
}
