package workload

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestPrefixRepetition(t *testing.T) {
	spec := TraceSpec{DatasetName: DatasetPrefixRepetition, NumPrompts: 103, Seed: 5,
		PrefixRepetition: PrefixRepetitionSpec{PrefixLen: 300, SuffixLen: 20, NumPrefixes: 4, OutputLen: 7}}
	src, err := Open(spec)
	reqs := mustDrain(t, src, err)
	// vLLM: num_prefixes × ⌊num_prompts / num_prefixes⌋ = 4 × 25.
	if len(reqs) != 100 {
		t.Fatalf("%d requests, want 100", len(reqs))
	}
	perPrefix := map[Segment]int{}
	suffixes := map[uint64]bool{}
	firstRun := 0
	for i, r := range reqs {
		if r.InputLen != 320 || r.OutputLen != 7 || len(r.Prompt) != 2 || r.Prompt[0].Len != 300 {
			t.Fatalf("request %d: %+v", i, r)
		}
		perPrefix[r.Prompt[0]]++
		suffixes[r.Prompt[1].ID] = true
		if r.Prompt[0] == reqs[0].Prompt[0] && i == firstRun {
			firstRun++
		}
	}
	if len(perPrefix) != 4 || len(suffixes) != 100 {
		t.Errorf("%d prefixes, %d suffixes; want 4 and 100", len(perPrefix), len(suffixes))
	}
	for p, n := range perPrefix {
		if n != 25 {
			t.Errorf("prefix %#x used %d times, want 25", p.ID, n)
		}
	}
	if firstRun == 25 {
		t.Error("requests are grouped by prefix: the order was not shuffled")
	}
	// Same seed, same order; --disable-shuffle: grouped.
	src, err = Open(spec)
	if again := mustDrain(t, src, err); fmt.Sprint(again) != fmt.Sprint(reqs) {
		t.Error("same seed, different requests")
	}
	spec.DisableShuffle = true
	src, err = Open(spec)
	grouped := mustDrain(t, src, err)
	for i, r := range grouped {
		if r.Prompt[0] != grouped[i/25*25].Prompt[0] {
			t.Fatalf("--disable-shuffle: request %d is not with its prefix group", i)
		}
	}

	// Defaults, and vLLM's own check.
	src, err = Open(TraceSpec{DatasetName: DatasetPrefixRepetition})
	if d := mustDrain(t, src, err); len(d) != 1000 || d[0].InputLen != 512 || d[0].OutputLen != 128 {
		t.Errorf("defaults: %d requests, first %+v", len(d), d[0])
	}
	_, err = Open(TraceSpec{DatasetName: DatasetPrefixRepetition, NumPrompts: 3})
	wantBadInput(t, err, "--num-prompts 3: must be ≥ --prefix-repetition-num-prefixes (10), as vLLM requires")
}

func TestFenwickTakesEachItemOnce(t *testing.T) {
	f := newFenwick(7, 3)
	counts := make([]int, 7)
	for left := int64(21); left > 0; left-- {
		counts[f.take(left-1)]++ // always the last remaining item
	}
	for g, n := range counts {
		if n != 3 {
			t.Errorf("group %d taken %d times, want 3", g, n)
		}
	}
}

func TestSharedPrefixPrompts(t *testing.T) {
	spec := TraceSpec{DatasetName: DatasetSharedPrefix, Seed: 2, NumPrompts: 24,
		SharedPrefix: SharedPrefixSpec{NumGroups: 3, NumPromptsPerGroup: 4, SystemPromptLen: 200, QuestionLen: 30, OutputLen: 9}}
	src, err := Open(spec)
	reqs := mustDrain(t, src, err)
	if len(reqs) != 24 {
		t.Fatalf("%d requests, want 24", len(reqs))
	}
	groups := map[Segment]int{}
	for i, r := range reqs {
		if r.InputLen != 230 || r.OutputLen != 9 || len(r.Prompt) != 2 {
			t.Fatalf("request %d: %+v", i, r)
		}
		groups[r.Prompt[0]]++
		if i >= 12 && fmt.Sprint(r.Prompt) != fmt.Sprint(reqs[i-12].Prompt) {
			t.Errorf("request %d should repeat prompt %d (the list is cycled)", i, i-12)
		}
	}
	if len(groups) != 3 {
		t.Errorf("%d system prompts, want 3", len(groups))
	}
	src, err = Open(spec)
	if again := mustDrain(t, src, err); fmt.Sprint(again) != fmt.Sprint(reqs) {
		t.Error("same seed, different requests")
	}
	spec.Seed = 3
	src, err = Open(spec)
	if other := mustDrain(t, src, err); fmt.Sprint(other) == fmt.Sprint(reqs) {
		t.Error("seeds 2 and 3 gave the same requests")
	}
	for g, n := range groups {
		if n != 8 {
			t.Errorf("system prompt %#x used %d times, want 8", g.ID, n)
		}
	}
}

func TestSharedPrefixStages(t *testing.T) {
	for _, lt := range []string{"constant", "poisson"} {
		t.Run(lt, func(t *testing.T) {
			spec := TraceSpec{DatasetName: DatasetSharedPrefix, Seed: 9, Load: LoadSpec{
				Type: lt, Interval: 2, Stages: []LoadStage{{Rate: 10, Duration: 20}, {Rate: 50, Duration: 4}}}}
			src, err := Open(spec)
			reqs := mustDrain(t, src, err)
			if len(reqs) != 400 {
				t.Fatalf("%d requests, want 200 + 200", len(reqs))
			}
			s1, s2 := reqs[:200], reqs[200:]
			for i := 1; i < len(reqs); i++ {
				if reqs[i].Arrival < reqs[i-1].Arrival {
					t.Fatalf("request %d goes back in time", i)
				}
			}
			end1 := s1[199].Arrival
			if lt == "constant" {
				// Exponential gaps rescaled to the duration: the last
				// request lands on the stage's end.
				if d := end1 - 20*time.Second; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("stage 1 ends at %v, want 20s", end1)
				}
			}
			start2 := max(20*time.Second, end1) + 2*time.Second
			if s2[0].Arrival <= start2 || s2[0].Arrival > start2+time.Second {
				t.Errorf("stage 2 starts at %v, want just after %v", s2[0].Arrival, start2)
			}
			// Prompts restart at the first one in each stage.
			if fmt.Sprint(s2[0].Prompt) != fmt.Sprint(s1[0].Prompt) {
				t.Error("stage 2 does not start at prompt 0")
			}
		})
	}
}

func TestSharedPrefixPoissonSeconds(t *testing.T) {
	// inference-perf's poisson timer: each second holds a Poisson(rate)
	// count, spread over that second; the count's mean and variance are the
	// rate.
	const rate, dur = 20.0, 2000.0
	src, err := NewSharedPrefix(TraceSpec{Seed: 1, Load: LoadSpec{Type: "poisson",
		Stages: []LoadStage{{Rate: rate, Duration: dur}}}})
	reqs := mustDrain(t, src, err)
	perSecond := map[int64]int{}
	for _, r := range reqs {
		perSecond[int64(r.Arrival/time.Second)]++
	}
	secs := int64(reqs[len(reqs)-1].Arrival/time.Second) + 1
	mean, m2 := 0.0, 0.0
	for s := int64(0); s < secs; s++ {
		n := float64(perSecond[s])
		mean += n
		m2 += n * n
	}
	mean /= float64(secs)
	v := m2/float64(secs) - mean*mean
	// Arrivals land on window edges, so per-second bins match windows but
	// for a boundary; allow 5 standard errors.
	if se := math.Sqrt(rate / float64(secs)); math.Abs(mean-rate) > 5*se {
		t.Errorf("mean %.2f per second, want %v ± %.2f", mean, rate, 5*se)
	}
	if math.Abs(v-rate) > 0.25*rate {
		t.Errorf("variance %.2f per second, want ≈ %v", v, rate)
	}
}

func TestSharedPrefixMultiTurn(t *testing.T) {
	src, err := NewSharedPrefix(TraceSpec{NumPrompts: 10, SharedPrefix: SharedPrefixSpec{NumGroups: 2, NumPromptsPerGroup: 2,
		SystemPromptLen: 100, QuestionLen: 10, OutputLen: 5, EnableMultiTurnChat: true}})
	reqs := mustDrain(t, src, err)
	// 4 sessions; request i is turn i/4 of session i%4 + 1.
	for i, r := range reqs {
		turn := i / 4
		if r.SessionID != uint64(i%4+1) || r.Turn != turn {
			t.Fatalf("request %d: session %d turn %d", i, r.SessionID, r.Turn)
		}
		if turn == 0 && (r.PrevContext || r.InputLen != 110) {
			t.Errorf("request %d: first turn %+v", i, r)
		}
		if turn > 0 && (!r.PrevContext || r.ContextLen != 100+turn*15 || r.InputLen != 10 || r.Prompt[0] != reqs[i%4].Prompt[1]) {
			t.Errorf("request %d: turn %d %+v, want the same question after a context of %d", i, turn, r, 100+turn*15)
		}
		if r.Final != (i >= 6) {
			t.Errorf("request %d: Final %v", i, r.Final)
		}
	}
}

func TestSharedPrefixValidation(t *testing.T) {
	for _, c := range []struct {
		sp   SharedPrefixSpec
		load LoadSpec
		want string
	}{
		{SharedPrefixSpec{NumGroups: -1}, LoadSpec{}, "--shared-prefix-num-groups -1"},
		{SharedPrefixSpec{}, LoadSpec{Type: "burst"}, "--load-type burst: must be constant or poisson"},
		{SharedPrefixSpec{}, LoadSpec{Stages: []LoadStage{{Rate: 0, Duration: 1}}}, "--stages: stage 1 rate 0"},
		{SharedPrefixSpec{}, LoadSpec{Stages: []LoadStage{{Rate: 1, Duration: -1}}}, "--stages: stage 1 duration -1"},
	} {
		_, err := NewSharedPrefix(TraceSpec{SharedPrefix: c.sp, Load: c.load})
		wantBadInput(t, err, c.want)
	}
}
