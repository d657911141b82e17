package cluster

import (
	"testing"
	"time"

	"blis/engine"
	"blis/kernel"
)

// Hand-computed DP runs with a fixed step price: two independent ranks
// serve two requests side by side in the time one rank serves one; a
// lockstep group ends every rank's step together, an idle rank waiting
// with the busy one; the load balancer spreads equal requests evenly.
func TestDataParallelHandComputed(t *testing.T) {
	p := constPricer{step: 10 * time.Millisecond}
	cases := []struct {
		name      string
		dp        int
		lockstep  bool
		n, conc   int
		wantDur   time.Duration
		wantSteps int64
	}{
		// One rank, two requests batched: 5 steps of both.
		{"one rank", 1, false, 2, 2, 50 * time.Millisecond, 5},
		// Two independent ranks, one request each: 5 steps each, in parallel.
		{"two ranks", 2, false, 2, 2, 50 * time.Millisecond, 10},
		// Lockstep: the same, counted as 5 group steps.
		{"two ranks lockstep", 2, true, 2, 2, 50 * time.Millisecond, 5},
		// Four requests one at a time (concurrency 1): the second rank never works.
		{"closed loop of one", 2, false, 4, 1, 200 * time.Millisecond, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			perRank := map[*engine.Engine]int{}
			ends := map[time.Duration]int{}
			cfg := Config{Engine: engCfg(), Pricer: p, DataParallel: c.dp, Lockstep: c.lockstep, MaxConcurrency: c.conc,
				AfterStep: func(now time.Duration, e *engine.Engine) { perRank[e]++; ends[now]++ }}
			res, err := Run(cfg, fixed(c.n, 100, 5), newRec(t, false))
			if err != nil {
				t.Fatal(err)
			}
			if res.Duration != c.wantDur || res.TimedSteps != c.wantSteps || res.Completed != int64(c.n) {
				t.Fatalf("duration %v steps %d completed %d, want %v %d %d", res.Duration, res.TimedSteps, res.Completed,
					c.wantDur, c.wantSteps, c.n)
			}
			if c.dp == 2 && c.conc == 2 {
				if len(perRank) != 2 {
					t.Errorf("%d ranks stepped, want 2 (requests not spread)", len(perRank))
				}
				for at, n := range ends {
					if n != 2 {
						t.Errorf("at %v %d rank(s) ended a step, want both (equal work, same start)", at, n)
					}
				}
			}
			if res.Engine.Steps != int64(sumSteps(perRank)) {
				t.Errorf("engine stats count %d steps, hooks saw %d", res.Engine.Steps, sumSteps(perRank))
			}
		})
	}
}

func sumSteps(m map[*engine.Engine]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// In a lockstep group an idle rank does not step, but the busy rank's step
// is the group's: the group pricer sees both ranks' batches.
func TestDataParallelLockstepPricesTheGroup(t *testing.T) {
	var seen [][]int
	p := groupSpy{constPricer{step: time.Millisecond}, &seen}
	cfg := Config{Engine: engCfg(), Pricer: p, DataParallel: 3, Lockstep: true, MaxConcurrency: 1}
	if _, err := Run(cfg, fixed(2, 64, 3), newRec(t, false)); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 6 {
		t.Fatalf("%d group steps, want 6 (two requests of 3 steps, one after the other)", len(seen))
	}
	for _, toks := range seen {
		busy := 0
		for _, n := range toks {
			if n > 0 {
				busy++
			}
		}
		if len(toks) != 3 || busy != 1 {
			t.Fatalf("group step batches %v: want 3 ranks, one busy", toks)
		}
	}
}

type groupSpy struct {
	constPricer
	seen *[][]int
}

func (g groupSpy) GroupStepTime(bs []kernel.Batch) kernel.Breakdown {
	toks := make([]int, len(bs))
	for i := range bs {
		toks[i] = bs[i].Tokens()
	}
	*g.seen = append(*g.seen, toks)
	return kernel.GroupStepTime(g.constPricer, bs)
}

func TestDPRouteLeastLoaded(t *testing.T) {
	engs := make([]*engine.Engine, 3)
	for i := range engs {
		var err error
		if engs[i], err = engine.New(engCfg()); err != nil {
			t.Fatal(err)
		}
	}
	add := func(rank int) {
		r := &engine.Request{ID: int64(rank*100 + engs[rank].Waiting()), PromptLen: 10, MaxTokens: 2}
		if !engs[rank].Add(r, 0) {
			t.Fatal("rejected")
		}
	}
	if got := dpRoute(engs); got != 0 {
		t.Fatalf("empty ranks: got %d, want the lowest, 0", got)
	}
	add(0)
	add(1)
	if got := dpRoute(engs); got != 2 {
		t.Fatalf("got %d, want the empty rank 2", got)
	}
	add(2)
	add(2)
	if got := dpRoute(engs); got != 0 {
		t.Fatalf("got %d, want 0 (tie with 1, lowest first)", got)
	}
}
