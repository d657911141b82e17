package workload

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestApproxTokens(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{"What is the capital of France?", 8}, // 30 bytes
		{"长城", 2},                             // 6 bytes
		{"héllo", 2},                          // 6 bytes
	} {
		if got := ApproxTokens(c.text); got != c.want {
			t.Errorf("ApproxTokens(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

func sharegpt(t testing.TB, spec TraceSpec) []Request {
	t.Helper()
	spec.DatasetName, spec.DatasetPath = DatasetShareGPT, "testdata/sharegpt_small.json"
	src, err := Open(spec)
	return mustDrain(t, src, err)
}

func TestShareGPTRules(t *testing.T) {
	// In file order: a1 (sky), a4 (French), a5 (CJK), a6 (sky again, reply
	// too short but kept with --sharegpt-output-len). a2's prompt "hi" is
	// 1 token (< 4), a3 has one turn, a7 none.
	sky := "Explain in two sentences why the sky looks blue during the day and red at sunset."
	skyReply := "Sunlight scatters off air molecules, and shorter blue wavelengths scatter far more than red ones, " +
		"so blue light reaches your eyes from every direction. At sunset the light crosses much more air, the blue is " +
		"scattered away before it arrives, and the remaining reds and oranges dominate."
	french := "Translate to French: the cat sleeps on the warm windowsill all afternoon."
	frenchReply := "Le chat dort sur le rebord chaud de la fenêtre tout l'après-midi."
	cjk := "用三句话介绍一下长城的历史。"
	cjkReply := "长城始建于春秋战国时期，各国为防御而修筑城墙。秦始皇统一六国后将其连接起来。明朝对长城进行了大规模重修，形成了今天看到的样子。"

	reqs := sharegpt(t, TraceSpec{DisableShuffle: true, NumPrompts: 3})
	want := [][2]int{{ApproxTokens(sky), ApproxTokens(skyReply)}, {ApproxTokens(french), ApproxTokens(frenchReply)},
		{ApproxTokens(cjk), ApproxTokens(cjkReply)}}
	for i, r := range reqs {
		if [2]int{r.InputLen, r.OutputLen} != want[i] {
			t.Errorf("request %d: %d/%d tokens, want %v", i, r.InputLen, r.OutputLen, want[i])
		}
	}
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}

	// a6's reply "Rayleigh scattering." is 5 tokens: kept. With an output
	// override every usable prompt gets that length, and the repeated
	// prompt (a1, a6) shares its segment.
	reqs = sharegpt(t, TraceSpec{DisableShuffle: true, NumPrompts: 4, ShareGPTOutputLen: 64})
	if len(reqs) != 4 || reqs[3].Prompt[0] != reqs[0].Prompt[0] || reqs[3].OutputLen != 64 {
		t.Errorf("a6 should repeat a1's prompt with 64 output tokens: %+v", reqs)
	}
}

func TestShareGPTOversampleAndShuffle(t *testing.T) {
	reqs := sharegpt(t, TraceSpec{NumPrompts: 50, Seed: 3})
	if len(reqs) != 50 {
		t.Fatalf("%d requests, want 50 (oversampled from 4 usable)", len(reqs))
	}
	ids := map[uint64]int{}
	for _, r := range reqs {
		ids[r.Prompt[0].ID]++
	}
	if len(ids) != 3 { // four usable entries, two with the same prompt
		t.Errorf("%d distinct prompts, want 3", len(ids))
	}
	again := sharegpt(t, TraceSpec{NumPrompts: 50, Seed: 3})
	other := sharegpt(t, TraceSpec{NumPrompts: 50, Seed: 4})
	if fmt.Sprint(again) != fmt.Sprint(reqs) {
		t.Error("same seed, different requests")
	}
	if fmt.Sprint(other) == fmt.Sprint(reqs) {
		t.Error("seeds 3 and 4 gave the same order")
	}
}

func TestShareGPTArrivals(t *testing.T) {
	// vllm bench serve: n gaps rescaled so the last request goes at n/rate.
	reqs := sharegpt(t, TraceSpec{NumPrompts: 40, RequestRate: 8})
	if last := reqs[len(reqs)-1].Arrival; last != 5*time.Second {
		t.Errorf("last arrival %v, want 5s", last)
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Arrival < reqs[i-1].Arrival {
			t.Fatal("arrivals go back in time")
		}
	}
}

func TestShareGPTErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"not an array", `{"conversations": []}`, "sg.json: expected a JSON array of conversations"},
		{"bad json", `[{"conversations": [}]`, "sg.json: entry 1: invalid JSON"},
		{"cut short", `[{"conversations": [{"value": "a"}, {"value": "b"}]}`, "sg.json: entry 1: invalid JSON: unexpected end of file"},
		{"entry not an object", `[3]`, `sg.json: entry 1: expected an object with "conversations"`},
		{"value not a string", `[{"conversations": [{"value": 3}, {"value": "b"}]}]`, `sg.json: entry 1: "conversations"[0]: must be an object with a string "value"`},
		{"conversations not a list", `[{"conversations": 3}]`, `sg.json: entry 1: "conversations": must be a list of turns`},
		{"nothing usable", `[{"conversations": [{"value": "hi"}, {"value": "hello there"}]}]`, "sg.json: no usable conversation"},
		{"trailing data", `[] []`, "sg.json: unexpected data after the JSON array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewShareGPT(strings.NewReader(c.text), "sg.json", TraceSpec{})
			wantBadInput(t, err, c.want)
		})
	}
	_, err := NewShareGPT(strings.NewReader(`[]`), "sg.json", TraceSpec{ShareGPTOutputLen: -1})
	wantBadInput(t, err, "--sharegpt-output-len -1")
	_, err = NewShareGPT(strings.NewReader(`[]`), "sg.json", TraceSpec{RequestRate: math.NaN()})
	wantBadInput(t, err, "--request-rate nan")
}
