package lmbench

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"blis/metrics"
)

func TestReadShareGPT(t *testing.T) {
	run, err := Read("testdata/sharegpt_small.csv")
	if err != nil {
		t.Fatal(err)
	}
	if run.Format != Name || run.Path != "testdata/sharegpt_small.csv" || len(run.Requests) != 3 || len(run.Metrics) != 0 {
		t.Fatalf("run %+v", run)
	}
	q := run.Requests[0]
	genTime, gaps := 8.834476232528687, 274.0
	want := metrics.MeasuredRequest{ID: "0", Start: 1746734126947483000, End: 1746734135873341300, Success: true,
		InputTokens: 689, OutputTokens: 275, TTFT: 91381788 * time.Nanosecond, TPOTms: genTime / gaps * 1000}
	if q.ID != want.ID || q.Start != want.Start || q.End != want.End || !q.Success || q.InputTokens != want.InputTokens ||
		q.OutputTokens != want.OutputTokens || q.TTFT != want.TTFT || q.TPOTms != want.TPOTms || q.Conversation != "" {
		t.Errorf("request 0:\n got %+v\nwant %+v", q, want)
	}
	if q := run.Requests[2]; q.TPOTms != 0 || q.OutputTokens != 1 {
		t.Errorf("one output token: %+v", q)
	}
}

func TestReadMultiRound(t *testing.T) {
	f, err := ReadFile("testdata/multiround_small.csv")
	if err != nil {
		t.Fatal(err)
	}
	if f.Scenario != MultiRound || f.Scenario.String() != "multi-round-qa" || len(f.Rows) != 3 {
		t.Fatalf("%+v", f)
	}
	if r := f.Rows[1]; r.Line != 3 || r.PromptTokens != 125 || r.UserID != 1203 || r.QuestionID != 2 {
		t.Errorf("row 1: %+v", r)
	}
	run := measured(f)
	// IDs rank rows by launch: user 1204's question 1 went out before
	// user 1203's question 2.
	for i, want := range []struct {
		id, conv string
		turn     int
	}{{"0", "1203", 0}, {"2", "1203", 1}, {"1", "1204", 0}} {
		q := run.Requests[i]
		if q.ID != want.id || q.Conversation != want.conv || q.Turn != want.turn {
			t.Errorf("request %d: id %s conversation %s turn %d, want %+v", i, q.ID, q.Conversation, q.Turn, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const sg = "prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time\n"
	const mr = "prompt_tokens,generation_tokens,ttft,generation_time,user_id,question_id,launch_time,finish_time\n"
	const good = "10,5,0.1,0.4,100.0,100.5\n"
	for _, c := range []struct {
		name, data string
		want       []string
	}{
		{"empty", "", []string{"f.csv: empty file: expected the header prompt_tokens,"}},
		{"missing column", "prompt_tokens,ttft\n", []string{"f.csv:1:", "missing column generation_tokens"}},
		{"unknown column", strings.TrimSuffix(sg, "\n") + ",extra\n" + good, []string{"f.csv:1:", `"extra"`, "unknown column"}},
		{"repeated column", "ttft," + sg + good, []string{"f.csv:1:", `"ttft"`, "column repeats"}},
		{"field count", sg + "10,5,0.1\n", []string{"f.csv:2:", "wrong number of fields"}},
		{"bad quote", sg + "10,5,\"0.1,0.4,100,100.5\n", []string{"f.csv:2:", "not valid CSV"}},
		{"prompt not a number", sg + "x,5,0.1,0.4,100,100.5\n", []string{"f.csv:2: prompt_tokens:", `"x"`, "whole number in [1, 268435456]"}},
		{"prompt zero", sg + "0,5,0.1,0.4,100,100.5\n", []string{"f.csv:2: prompt_tokens:", `"0"`}},
		{"prompt fraction", sg + "1.5,5,0.1,0.4,100,100.5\n", []string{"f.csv:2: prompt_tokens:", `"1.5"`}},
		{"prompt plus sign", sg + "+3,5,0.1,0.4,100,100.5\n", []string{"f.csv:2: prompt_tokens:", `"+3"`}},
		{"generation negative", sg + good + "10,-1,0.1,0.4,100,100.5\n", []string{"f.csv:3: generation_tokens:", `"-1"`, "[0, 268435456]"}},
		{"generation huge", sg + "10,999999999999,0.1,0.4,100,100.5\n", []string{"f.csv:2: generation_tokens:"}},
		{"ttft nan", sg + "10,5,nan,0.4,100,100.5\n", []string{"f.csv:2: ttft:", `"nan"`, "number of seconds"}},
		{"ttft negative", sg + "10,5,-0.1,0.4,100,100.5\n", []string{"f.csv:2: ttft:", `"-0.1"`}},
		{"generation_time text", sg + "10,5,0.1,abc,100,100.5\n", []string{"f.csv:2: generation_time:", `"abc"`}},
		{"launch empty", sg + "10,5,0.1,0.4,,100.5\n", []string{"f.csv:2: launch_time:", "number of seconds"}},
		{"finish inf", sg + "10,5,0.1,0.4,100,inf\n", []string{"f.csv:2: finish_time:", `"inf"`}},
		{"finish before launch", sg + "10,5,0.1,0.4,100,99\n", []string{"f.csv:2: finish_time:", `"99"`, "before launch_time 100"}},
		{"ttft after finish", sg + "10,5,0.7,0.4,100,100.5\n", []string{"f.csv:2: ttft:", `"0.7"`, "must not exceed finish_time"}},
		{"user zero", mr + "10,5,0.1,0.4,0,1,100,100.5\n", []string{"f.csv:2: user_id:", `"0"`}},
		{"question text", mr + "10,5,0.1,0.4,3,q,100,100.5\n", []string{"f.csv:2: question_id:", `"q"`}},
		{"question repeats", mr + "10,5,0.1,0.4,3,1,100,100.5\n10,5,0.1,0.4,3,1,101,101.5\n", []string{"f.csv:3: question_id:", "user 3's question 1 repeats line 2"}},
		{"question gap", mr + "10,5,0.1,0.4,3,1,100,100.5\n10,5,0.1,0.4,3,3,101,101.5\n", []string{"f.csv:3: question_id:", "user 3 has 2 rows but a question 3"}},
		{"multi-round column missing", "prompt_tokens,generation_tokens,ttft,generation_time,user_id,launch_time,finish_time\n", []string{"missing column question_id"}},
	} {
		_, err := Parse("f.csv", []byte(c.data))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", c.name, err, w)
			}
		}
	}
	// Good edge cases: a header alone, a BOM, CRLF, pandas' 76.0, blank lines.
	for _, data := range []string{sg, "\xef\xbb\xbf" + sg + good, strings.ReplaceAll(sg+good, "\n", "\r\n"), sg + "\n" + "10.0,5.00,0,0,100,100\n", mr + "76.0,20.0,0.0,0.0,1,1,5,5\n"} {
		if _, err := Parse("f.csv", []byte(data)); err != nil {
			t.Errorf("%q: %v", data, err)
		}
	}
	if _, err := Read("testdata/nope.csv"); err == nil {
		t.Error("a missing file reads")
	}
}

// layoutRows builds the rows of a sharegpt run at qps from the layout:
// every entry, launched on schedule plus jitter, each generating its
// max_tokens except where short says.
func layoutRows(qps float64, short map[int]bool) []Row {
	rows := make([]Row, ShareGPTRequests)
	for i, l := range shareGPTLayout {
		jitter := float64(i%7) * 0.04 / qps // under half an interval
		gen := l.maxTokens
		if short[i] {
			gen = l.maxTokens / 2
		}
		t := 1000 + float64(i)/qps + jitter
		rows[i] = Row{Line: i + 2, PromptTokens: 100 + i, GenerationTokens: gen, LaunchTime: t, FinishTime: t + 5}
	}
	return rows
}

func TestAlignShareGPT(t *testing.T) {
	full := layoutRows(4, map[int]bool{3: true, 60: true})
	slots, ok := AlignShareGPT(full)
	if !ok {
		t.Fatal("a full run does not fit")
	}
	// Entry 55 is conversation 0's second request in the run.
	if s := slots[55]; s.Entry != 55 || s.User != 0 || s.Round != 1 || s.MaxTokens != shareGPTLayout[55].maxTokens {
		t.Errorf("slot 55: %+v", s)
	}
	if s := slots[0]; s.User != 0 || s.Round != 0 {
		t.Errorf("slot 0: %+v", s)
	}

	// Drop rows (the first ones too) as a run with failures does: the rest
	// keep their entries.
	for _, drop := range [][]int{{0, 1, 2, 100, 101}, {5, 6, 7, 8, 200, 251}, {0}} {
		var rows []Row
		var entries []int
		for i, r := range full {
			if !slices.Contains(drop, i) {
				rows = append(rows, r)
				entries = append(entries, i)
			}
		}
		got, ok := AlignShareGPT(rows)
		if !ok {
			t.Errorf("drop %v: does not fit", drop)
			continue
		}
		for k := range got {
			if got[k].Entry != entries[k] {
				t.Errorf("drop %v: row %d placed at entry %d, want %d", drop, k, got[k].Entry, entries[k])
				break
			}
		}
	}

	bad := layoutRows(4, nil)
	bad[10].GenerationTokens = shareGPTLayout[10].maxTokens + 1
	long := append(layoutRows(4, nil), Row{LaunchTime: 2000})
	same := layoutRows(4, nil)[:10]
	for i := range same {
		same[i].LaunchTime = 1000
	}
	for name, rows := range map[string][]Row{"over max_tokens": bad, "too many rows": long, "no rows": nil,
		"partial over max_tokens": bad[:200], "no launch gap": same} {
		if _, ok := AlignShareGPT(rows); ok {
			t.Errorf("%s: fits", name)
		}
	}
}

// TestLlmdExp3 checks the alignment on llm-d's measured files: the
// router arm lost rows; placed by AlignShareGPT, each remaining row's
// prompt_tokens is the plain-vLLM arm's at the same entry (same prompts,
// same qps prefix).
func TestLlmdExp3(t *testing.T) {
	dir := "../../../data/llm-d/measured-2025/exp-3/H100"
	for _, qps := range []string{"4", "8", "12", "20", "24", "28", "32", "36", "40"} {
		name := "LMBench_sharegpt_output_" + qps + ".csv"
		ref, err := ReadFile(filepath.Join(dir, "vllm-standalone-llama-3-70b-2replicas-H100", name))
		if err != nil {
			t.Fatal(err)
		}
		if len(ref.Rows) != ShareGPTRequests {
			t.Fatalf("%s: %d rows", name, len(ref.Rows))
		}
		for _, arm := range []string{"llm-d-70b-2replicas-H100", "llm-d-70b-2replicas-H100-no-router"} {
			f, err := ReadFile(filepath.Join(dir, arm, name))
			if err != nil {
				t.Fatal(err)
			}
			slots, ok := AlignShareGPT(f.Rows)
			if !ok {
				t.Errorf("%s/%s: does not fit", arm, name)
				continue
			}
			for k, s := range slots {
				if got, want := f.Rows[k].PromptTokens, ref.Rows[s.Entry].PromptTokens; got != want {
					t.Errorf("%s/%s: row %d at entry %d: prompt_tokens %d, vLLM arm's %d", arm, name, k, s.Entry, got, want)
					break
				}
			}
		}
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// Launch and finish times whose nanoseconds would not fit an int64 are
// refused, not wrapped to negative times.
func TestParseUnixTimeBound(t *testing.T) {
	head := "prompt_tokens,generation_tokens,ttft,generation_time,launch_time,finish_time\n"
	_, err := Parse("far.csv", []byte(head+"10,5,0.1,0.2,99999999999.0,99999999999.5\n"))
	var le *Error
	if !errors.As(err, &le) || le.Column != "launch_time" || le.Line != 2 || !strings.Contains(le.Allowed, "9e+09") {
		t.Fatalf("far-future launch_time: %v", err)
	}
	f, err := Parse("ok.csv", []byte(head+"10,5,0.1,0.2,8999999999.25,8999999999.5\n"))
	if err != nil || f.Rows[0].LaunchNS != 8999999999_250000000 || f.Rows[0].FinishNS <= f.Rows[0].LaunchNS {
		t.Fatalf("latest allowed times: %v %+v", err, f)
	}
}
