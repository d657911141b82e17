package cluster

import (
	"testing"
	"time"

	"blis/metrics"
	"blis/workload"
)

func seg(id uint64, n int) []workload.Segment { return []workload.Segment{{ID: id, Len: n}} }

// A three-turn session on an idle replica with 10 ms steps: each turn is sent
// its Delay after the previous one finished, and its prompt carries the
// whole previous context, which the prefix cache serves.
func TestSessionTurnsWaitForPredecessorAndReuseContext(t *testing.T) {
	src := &listSource{reqs: []workload.Request{
		{Index: 0, InputLen: 100, OutputLen: 2, Prompt: seg(1, 100), SessionID: 7, Turn: 0},
		{Index: 1, InputLen: 50, OutputLen: 2, Prompt: seg(2, 50), SessionID: 7, Turn: 1, PrevContext: true, ContextLen: 102, Delay: time.Second},
		{Index: 2, InputLen: 10, OutputLen: 3, Prompt: seg(3, 10), SessionID: 7, Turn: 2, PrevContext: true, Delay: 500 * time.Millisecond, Final: true},
	}}
	rec := newRec(t, true)
	res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: 10 * time.Millisecond}}, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	ms := time.Millisecond
	want := []struct {
		start  time.Duration
		input  int
		cached int
	}{
		{0, 100, 0},
		{20*ms + time.Second, 152, 96}, // 100 prompt + 2 output + 50 new; 6 full blocks cached
		{20*ms + time.Second + 20*ms + 500*ms, 152 + 2 + 10, 144}, // its own 152 + 2 output + 10
	}
	if len(sum.Requests) != 3 || res.Sessions.FollowUps != 2 {
		t.Fatalf("requests %d, follow-ups %d", len(sum.Requests), res.Sessions.FollowUps)
	}
	for i, w := range want {
		r := sum.Requests[i]
		if r.Start != w.start || r.InputTokens != w.input || r.CachedTokens != w.cached {
			t.Errorf("turn %d: start %v input %d cached %d, want %+v", i, r.Start, r.InputTokens, r.CachedTokens, w)
		}
	}
	if res.Duration != 20*ms+time.Second+20*ms+500*ms+30*ms {
		t.Errorf("duration %v", res.Duration)
	}
}

// A sub-agent branch starts from its parent turn's context when that turn
// finishes; the parent's next turn waits for the branch's final turn.
func TestBranchJoin(t *testing.T) {
	src := &listSource{reqs: []workload.Request{
		{Index: 0, InputLen: 64, OutputLen: 2, Prompt: seg(1, 64), SessionID: 1, Turn: 0},
		{Index: 1, InputLen: 32, OutputLen: 2, Prompt: seg(2, 32), SessionID: 2, Turn: 0, ParentSession: 1, ParentTurn: 0, PrevContext: true, Final: true},
		{Index: 2, InputLen: 16, OutputLen: 2, Prompt: seg(3, 16), SessionID: 1, Turn: 1, PrevContext: true, WaitBranches: 1, Delay: 100 * time.Millisecond, Final: true},
	}}
	rec := newRec(t, true)
	res, err := Run(Config{Engine: engCfg(), Pricer: constPricer{step: 10 * time.Millisecond}}, src, rec)
	if err != nil {
		t.Fatal(err)
	}
	sum := rec.Summarize(metrics.SummaryInput{Duration: res.Duration})
	ms := time.Millisecond
	if got := sum.Requests[1]; got.Start != 20*ms || got.InputTokens != 64+2+32 || got.CachedTokens != 64 {
		t.Errorf("branch: start %v input %d cached %d", got.Start, got.InputTokens, got.CachedTokens)
	}
	if got := sum.Requests[2]; got.Start != 40*ms+100*ms || got.InputTokens != 64+2+16 {
		t.Errorf("joined turn: start %v input %d (want 140ms, 82)", got.Start, got.InputTokens)
	}
}
