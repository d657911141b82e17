package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"blis/kernel"
	"blis/specdecode"
	"blis/workload"
)

// mirrorSink rebuilds the prefix index a router would keep from the events.
type mirrorSink struct {
	set     map[uint64]bool
	t       *testing.T
	stored  int
	removed int
}

func (m *mirrorSink) BlockStored(h uint64) {
	if m.set[h] {
		m.t.Fatalf("BlockStored %x twice without a BlockRemoved", h)
	}
	m.set[h] = true
	m.stored++
}

func (m *mirrorSink) BlockRemoved(h uint64) {
	if !m.set[h] {
		m.t.Fatalf("BlockRemoved %x never stored", h)
	}
	delete(m.set, h)
	m.removed++
}

// cachedHashes is every hash the engine's prefix cache can find now.
func cachedHashes(e *Engine) map[uint64]bool {
	out := map[uint64]bool{}
	for b := range e.pool.blk {
		if h := e.pool.blk[b].hash; h != 0 {
			out[h] = true
		}
	}
	return out
}

// TestKVEventsMirrorThePrefixCache runs shared-prefix requests, private ones
// among them, through a small pool (evictions, preemptions) and checks
// after every step that the index built from the events is exactly what
// the prefix cache holds, that the prompt hashes a router computes with
// PromptBlockHashes are the ones reported, and that reporting events
// changes no request's outcome.
func TestKVEventsMirrorThePrefixCache(t *testing.T) {
	for trial := 0; trial < 40; trial++ {
		type outcome struct {
			first, fin time.Duration
			cached     int
		}
		run := func(withSink bool) ([]outcome, *mirrorSink) {
			rng := rand.New(rand.NewPCG(uint64(trial), 11))
			bs := []int{4, 16}[rng.IntN(2)]
			c := cfg(64+rng.IntN(256), 1+rng.IntN(8), 8+rng.IntN(600/bs), bs)
			c.AsyncScheduling = trial%2 == 0
			if trial%3 == 1 {
				// Speculative decoding: accepted drafts fill blocks that
				// are registered a step later, off the block boundary.
				sched, _ := specdecode.FromRates([]float64{0.8, 0.5, 0.3})
				c.Spec = Speculation{NumTokens: 3, Lookahead: trial%2 == 1, Acceptance: sched, Seed: uint64(trial)}
			}
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			var sink *mirrorSink
			if withSink {
				sink = &mirrorSink{set: map[uint64]bool{}, t: t}
				e.SetKVEvents(sink)
			}
			n := 30 + rng.IntN(40)
			reqs := make([]*Request, n)
			for i := range reqs {
				// A private request shares nothing (Request.Private's
				// contract); the others share one of three prefixes.
				private := rng.IntN(3) == 0
				segs := []workload.Segment{seg(uint64(1000+i), 1+rng.IntN(80))}
				if !private {
					segs = append([]workload.Segment{seg(uint64(1+rng.IntN(3)), 1+rng.IntN(120))}, segs...)
				}
				reqs[i] = req(int64(i), 1+rng.IntN(40), segs...)
				reqs[i].Private = private
			}
			var now time.Duration
			next := 0
			var b kernel.Batch
			for steps := 0; next < n || e.HasWork(); steps++ {
				if steps > 100000 {
					t.Fatalf("trial %d: no progress", trial)
				}
				for k := rng.IntN(3); k > 0 && next < n; k-- {
					e.Add(reqs[next], now)
					next++
				}
				if !e.HasWork() {
					now += time.Millisecond
					continue
				}
				if e.Schedule(now, &b) == 0 {
					t.Fatalf("trial %d: nothing scheduled", trial)
				}
				now += time.Millisecond
				e.Complete(now)
				if sink != nil {
					got, want := sink.set, cachedHashes(e)
					if len(got) != len(want) {
						t.Fatalf("trial %d step %d: events index %d hashes, cache holds %d", trial, steps, len(got), len(want))
					}
					for h := range want {
						if !got[h] {
							t.Fatalf("trial %d step %d: cached hash %x never reported", trial, steps, h)
						}
					}
				}
			}
			out := make([]outcome, n)
			for i, r := range reqs {
				out[i] = outcome{r.FirstToken, r.Finished, r.CachedTokens}
				if sink != nil && r.Status == StatusFinished && r.Preemptions == 0 {
					// The router's names for the prompt's blocks are the
					// engine's: a block of a finished request is reported
					// unless it was evicted since (then it was removed).
					for _, h := range PromptBlockHashes(nil, r.Prompt, bs) {
						if _, ok := e.pool.lookup(h); ok && !sink.set[h] {
							t.Fatalf("trial %d: prompt block %x cached but not reported", trial, h)
						}
					}
				}
			}
			return out, sink
		}
		plain, _ := run(false)
		withEvents, sink := run(true)
		for i := range plain {
			if plain[i] != withEvents[i] {
				t.Fatalf("trial %d: request %d ends %+v with events, %+v without", trial, i, withEvents[i], plain[i])
			}
		}
		if sink.stored == 0 {
			t.Fatalf("trial %d: no BlockStored", trial)
		}
	}
}
