package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"blis/metrics/format/lmbench"
)

const lmbMultiRound = "prompt_tokens,generation_tokens,ttft,generation_time,user_id,question_id,launch_time,finish_time\n"

func openLMBench(t *testing.T, data string, spec TraceSpec) ([]Request, bool) {
	t.Helper()
	src, err := NewLMBench(strings.NewReader(data), "t.csv", spec)
	reqs := mustDrain(t, src, err)
	return reqs, src.(*lmbenchSource).Reconstructed()
}

// TestLMBenchMultiRound: users are sessions whose turns carry the chat
// history; the file's rows (grouped by user) go out in launch order.
func TestLMBenchMultiRound(t *testing.T) {
	data := lmbMultiRound +
		"76.0,20.0,0.04,0.5,7,1,100.0,100.6\n" +
		"125.0,20.0,0.05,0.5,7,2,110.25,110.9\n" +
		"174.0,15.0,0.05,0.4,7,3,120.5,121.0\n" +
		"75.0,20.0,0.04,0.5,8,1,105.5,106.1\n"
	reqs, rec := openLMBench(t, data, TraceSpec{})
	if !rec || len(reqs) != 4 {
		t.Fatalf("reconstructed %v, %d requests", rec, len(reqs))
	}
	type want struct {
		session          uint64
		turn, in, out    int
		ctx              int
		arrival          time.Duration
		prevCtx, isFinal bool
	}
	for i, w := range []want{
		{7, 0, 76, 20, 0, 0, false, false},
		{8, 0, 75, 20, 0, 5500 * time.Millisecond, false, true},
		{7, 1, 29, 20, 96, 10250 * time.Millisecond, true, false},
		{7, 2, 29, 15, 145, 20500 * time.Millisecond, true, true},
	} {
		q := reqs[i]
		if q.SessionID != w.session || q.Turn != w.turn || q.InputLen != w.in || q.OutputLen != w.out || q.ContextLen != w.ctx ||
			q.Arrival != w.arrival || q.PrevContext != w.prevCtx || q.Final != w.isFinal || q.Delay != 0 {
			t.Errorf("request %d: %+v, want %+v", i, q, w)
		}
	}
	// Request i is the row the lmbench reader names i, and its whole
	// prompt is the row's prompt_tokens.
	p := filepath.Join(t.TempDir(), "m.csv")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := lmbench.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range run.Requests {
		i, _ := strconv.Atoi(m.ID)
		q := reqs[i]
		if q.ContextLen+q.InputLen != m.InputTokens || q.OutputLen != m.OutputTokens || strconv.FormatUint(q.SessionID, 10) != m.Conversation || q.Turn != m.Turn {
			t.Errorf("measured %+v, replayed %+v", m, q)
		}
	}

	// Speedup and --num-prompts.
	reqs, _ = openLMBench(t, data, TraceSpec{FixedScheduleSpeedup: 2, NumPrompts: 3})
	if len(reqs) != 3 || reqs[2].Arrival != 5125*time.Millisecond {
		t.Errorf("speedup 2, 3 prompts: %+v", reqs)
	}
}

// shareGPTFile writes a full sharegpt run from LMBenchmark's layout: each
// conversation's prompts grow by its previous reply and a question.
func shareGPTFile(t *testing.T, drop map[int]bool) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time\n")
	last := map[int][2]int{} // user → prompt, max_tokens
	rows := make([]lmbench.Row, lmbench.ShareGPTRequests)
	for i := range rows {
		rows[i] = lmbench.Row{GenerationTokens: 1, LaunchTime: float64(i)}
	}
	slots, _ := lmbench.AlignShareGPT(rows)
	for i, s := range slots {
		p := 300 + i%17
		if l, ok := last[s.User]; ok {
			p = l[0] + l[1] + 10 + i%5
		}
		last[s.User] = [2]int{p, s.MaxTokens}
		if drop[i] {
			continue
		}
		launch := 1746734126.5 + float64(i)*0.25 + float64(i%3)*0.01
		fmt.Fprintf(&b, "%d,%d,0.1,2.0,%.6f,%.6f\n", p, s.MaxTokens, launch, launch+2.1)
	}
	return b.String()
}

// TestLMBenchShareGPT: a conversation's later prompt starts with its
// earlier one, up to the chat template's tail; nothing is a session.
func TestLMBenchShareGPT(t *testing.T) {
	for _, drop := range []map[int]bool{nil, {0: true, 55: true, 56: true, 200: true}} {
		data := shareGPTFile(t, drop)
		reqs, rec := openLMBench(t, data, TraceSpec{})
		if !rec || len(reqs) != lmbench.ShareGPTRequests-len(drop) {
			t.Fatalf("drop %v: reconstructed %v, %d requests", drop, rec, len(reqs))
		}
		run, err := lmbench.Parse("t.csv", []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		slots, _ := lmbench.AlignShareGPT(run.Rows)
		prev := map[int]int{} // user → request
		shared := 0
		for k, q := range reqs {
			if q.SessionID != 0 || q.PrevContext || q.InputLen != run.Rows[k].PromptTokens {
				t.Fatalf("request %d: %+v", k, q)
			}
			u := slots[k].User
			if j, ok := prev[u]; ok {
				p := reqs[j]
				n := 0
				for i, s := range q.Prompt[:len(q.Prompt)-1] {
					if s.ID != p.Prompt[i].ID || s.Len > p.Prompt[i].Len {
						t.Fatalf("request %d: segment %d %+v is not request %d's %+v", k, i, s, j, p.Prompt[i])
					}
					n += s.Len
				}
				if n != p.InputLen-6 {
					t.Errorf("request %d shares %d tokens with request %d of %d", k, n, j, p.InputLen)
				}
				shared++
			} else if len(q.Prompt) != 1 {
				t.Errorf("a first prompt of %d segments", len(q.Prompt))
			}
			prev[u] = k
		}
		if shared != len(reqs)-lmbench.ShareGPTUsers {
			t.Errorf("drop %v: %d prompts extend an earlier one", drop, shared)
		}
	}

	// Rows that do not fit the layout: unique prompts.
	data := "prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time\n10,5000,0.1,1,100,102\n20,3,0.1,1,100.5,101.5\n"
	reqs, rec := openLMBench(t, data, TraceSpec{})
	if rec || len(reqs) != 2 || reqs[1].Arrival != 500*time.Millisecond || reqs[0].Prompt[0].ID == reqs[1].Prompt[0].ID {
		t.Errorf("unfit rows: reconstructed %v, %+v", rec, reqs)
	}
}

// TestLMBenchLlmdFiles replays every measured file in data/llm-d.
func TestLMBenchLlmdFiles(t *testing.T) {
	files, _ := filepath.Glob("../data/llm-d/measured-2025/*/*/*.csv")
	more, _ := filepath.Glob("../data/llm-d/measured-2025/*/*/*/*.csv")
	files = append(files, more...)
	if len(files) < 80 {
		t.Fatalf("%d files", len(files))
	}
	for _, p := range files {
		src, err := Open(TraceSpec{DatasetName: DatasetLMBench, DatasetPath: p})
		reqs := mustDrain(t, src, err)
		if !src.(*lmbenchSource).Reconstructed() || len(reqs) == 0 {
			t.Errorf("%s: %d requests, reconstructed %v", p, len(reqs), src.(*lmbenchSource).Reconstructed())
		}
		sessions := strings.Contains(p, "short_input")
		if slices.ContainsFunc(reqs, func(q Request) bool { return (q.SessionID != 0) != sessions }) {
			t.Errorf("%s: sessions should be %v", p, sessions)
		}
	}
}

func TestLMBenchErrors(t *testing.T) {
	const sg = "prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time\n"
	for _, c := range []struct {
		data string
		spec TraceSpec
		want string
	}{
		{sg + "10,x,0.1,1,100,102\n", TraceSpec{}, `t.csv:2: generation_tokens: x: must be a whole number in [0, 268435456]`},
		{sg + "10,0,0.1,1,100,102\n", TraceSpec{}, `t.csv:2: generation_tokens: 0: a replayed request needs at least 1 output token`},
		{"a,b\n", TraceSpec{}, `t.csv:1: a,b: missing column prompt_tokens`},
		{"", TraceSpec{}, `t.csv: empty file`},
		{lmbMultiRound + "76,20,0.1,0.5,7,1,100,101\n90,20,0.1,0.5,7,2,110,111\n", TraceSpec{},
			`t.csv:3: prompt_tokens: 90: must exceed the chat history it carries: the previous question's 76 prompt + 20 generated tokens`},
		{lmbMultiRound + "76,20,0.1,0.5,7,2,100,101\n130,20,0.1,0.5,7,1,110,111\n", TraceSpec{},
			`t.csv:2: launch_time: 100: user 7's question 2 must be launched after question 1`},
		{sg, TraceSpec{NumPrompts: -1}, `--num-prompts -1: must be ≥ 0`},
		{sg, TraceSpec{FixedScheduleSpeedup: -2}, `--fixed-schedule-speedup -2`},
		{sg, TraceSpec{FixedScheduleStartOffset: 5}, `--fixed-schedule-start-offset 5: not supported for --dataset-name lmbench`},
		{sg, TraceSpec{FixedScheduleEndOffset: 9}, `--fixed-schedule-end-offset 9: not supported`},
	} {
		src, err := NewLMBench(strings.NewReader(c.data), "t.csv", c.spec)
		if src != nil {
			t.Errorf("%q: a source and an error", c.data)
		}
		wantBadInput(t, err, c.want)
	}
	_, err := Open(TraceSpec{DatasetName: DatasetLMBench})
	wantBadInput(t, err, `--dataset-path "": a file is needed for --dataset-name lmbench`)
	src, err := Open(TraceSpec{DatasetName: DatasetLMBench, DatasetPath: "testdata/sessions_example.jsonl"})
	if src != nil {
		t.Error("a source from a bad file")
	}
	wantBadInput(t, err, "testdata/sessions_example.jsonl:1:")
}
