package workload

import (
	"math"
	"testing"
	"time"
)

// A staged load over a dataset of standalone requests: each stage sends
// ⌊rate × duration⌋ requests inside its window, the next stage starts
// load.interval after it, and the dataset's own prompts and lengths are
// kept.
func TestStagedRandom(t *testing.T) {
	load := LoadSpec{Stages: []LoadStage{{Rate: 5, Duration: 10}, {Rate: 20, Duration: 5.5}}, Interval: 3}
	for _, lt := range []string{LoadConstant, LoadPoisson} {
		t.Run(lt, func(t *testing.T) {
			load.Type = lt
			spec := TraceSpec{Seed: 4, Random: RandomSpec{InputLen: 100, OutputLen: 10, Burstiness: 1}, Load: load}
			src, err := Open(spec)
			reqs := mustDrain(t, src, err)
			if len(reqs) != 50+110 {
				t.Fatalf("%d requests, want 50 + 110", len(reqs))
			}
			for i := 1; i < len(reqs); i++ {
				if reqs[i].Arrival < reqs[i-1].Arrival {
					t.Fatalf("request %d goes back in time", i)
				}
				if reqs[i].Index != int64(i) {
					t.Fatalf("request %d has index %d", i, reqs[i].Index)
				}
			}
			end1 := reqs[49].Arrival
			if lt == LoadConstant && (end1 < 10*time.Second-time.Microsecond || end1 > 10*time.Second+time.Microsecond) {
				t.Errorf("stage 1 ends at %v, want 10s", end1)
			}
			start2 := max(10*time.Second, end1) + 3*time.Second
			if reqs[50].Arrival <= start2 || reqs[50].Arrival > start2+2*time.Second {
				t.Errorf("stage 2 starts at %v, want just after %v", reqs[50].Arrival, start2)
			}
			// The same requests as the dataset alone, re-timed.
			plain, err := Open(TraceSpec{Seed: 4, Random: RandomSpec{InputLen: 100, OutputLen: 10, NumPrompts: 160, Burstiness: 1, RequestRate: math.Inf(1)}})
			want := mustDrain(t, plain, err)
			for i := range want {
				if want[i].InputLen != reqs[i].InputLen || want[i].OutputLen != reqs[i].OutputLen {
					t.Fatalf("request %d: %+v, want the dataset's %+v", i, reqs[i], want[i])
				}
			}
			again, err := Open(spec)
			if b := mustDrain(t, again, err); b[159].Arrival != reqs[159].Arrival {
				t.Error("the same seed gave another schedule")
			}
		})
	}
}

func TestStagedConflicts(t *testing.T) {
	stages := LoadSpec{Stages: []LoadStage{{Rate: 2, Duration: 5}}}
	for _, c := range []struct {
		name string
		spec TraceSpec
		want string
	}{
		{"num-prompts", TraceSpec{Random: RandomSpec{NumPrompts: 7}, Load: stages}, "--num-prompts 7: conflicts with --stages"},
		{"same num-prompts is fine", TraceSpec{Random: RandomSpec{NumPrompts: 10, InputLen: 8, OutputLen: 8, Burstiness: 1}, Load: stages}, ""},
		{"finite rate", TraceSpec{DatasetName: DatasetPrefixRepetition, RequestRate: 3, Load: stages}, "--request-rate 3: conflicts with --stages"},
		{"trace", TraceSpec{DatasetName: DatasetMooncake, DatasetPath: "testdata/mooncake_conversation_head200.jsonl", Load: stages}, "has its own schedule"},
		{"no request", TraceSpec{Load: LoadSpec{Stages: []LoadStage{{Rate: 0.1, Duration: 5}}}}, "send no request"},
		{"too many", TraceSpec{Load: LoadSpec{Stages: []LoadStage{{Rate: 1e6, Duration: 2000}}}}, "at most 1000000000"},
		{"interval", TraceSpec{Load: LoadSpec{Stages: stages.Stages, Interval: math.Inf(1)}}, "--load-interval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(c.spec)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantBadInput(t, err, c.want)
		})
	}
}
