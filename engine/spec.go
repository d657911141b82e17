package engine

import (
	"fmt"

	"blis/specdecode"
)

// Speculation is speculative decoding in the scheduler, mirroring vLLM v1
// (main after v0.11: vllm/v1/core/sched/scheduler.py schedule and
// update_from_output, vllm/v1/core/kv_cache_manager.py allocate_slots'
// num_lookahead_tokens, vllm/v1/spec_decode/eagle.py, metrics.py
// SpecDecodingStats). The zero value is off.
//
// Every request that samples in a step carries NumTokens draft tokens for
// its next step (vLLM: spec_token_ids from the proposer). The ngram and
// suffix proposers may propose fewer when the context has no match; BLIS
// models every proposer as always proposing NumTokens, the acceptance
// schedule absorbing the empty proposals (a measured ngram schedule
// counts them as rejections). A decode row then schedules 1 + its drafts
// new tokens under the token budget and max_model_len; the target
// verifies them, Acceptance decides how many are accepted, the row emits
// 1 + accepted tokens in one chunk, and the rejected tokens' computed
// count rolls back (their slots stay allocated).
type Speculation struct {
	// NumTokens is num_speculative_tokens, k (0: off; at most
	// specdecode.MaxPositions).
	NumTokens int
	// Lookahead allocates KV slots for NumTokens lookahead tokens beyond
	// each running request's scheduled tokens, as vLLM's scheduler does
	// for proposers that run on the target's hidden states or a draft
	// model (specdecode.LookaheadSlots: eagle, eagle3, mtp, draft_model),
	// whose drafts of the next step need the slots.
	Lookahead bool
	// Acceptance is the per-position schedule, resolved for NumTokens
	// (specdecode.Acceptance.ForK); Mode how it is sampled.
	Acceptance specdecode.Schedule
	Mode       specdecode.Mode
	// Seed and Stream name the engine's own acceptance stream: the caller
	// gives every engine (every data-parallel rank) a distinct Stream, so
	// ranks draw independently and a run is reproducible.
	Seed, Stream uint64
}

func (s Speculation) validate() error {
	switch {
	case s.NumTokens < 0 || s.NumTokens > specdecode.MaxPositions:
		return fmt.Errorf("num_speculative_tokens %d (--speculative-config): BLIS simulates 0 to %d", s.NumTokens, specdecode.MaxPositions)
	case s.NumTokens > 0 && s.Acceptance.K() != s.NumTokens:
		return fmt.Errorf("acceptance schedule of %d positions for num_speculative_tokens %d (--spec-acceptance): resolve it for k with specdecode.Acceptance.ForK",
			s.Acceptance.K(), s.NumTokens)
	}
	return nil
}

// specState is the engine's speculative-decoding state: k, the lookahead
// slots allocated for running requests, and the acceptance sampler.
type specState struct {
	k       int
	look    int // lookahead slots for running requests (0 without Lookahead)
	sampler specdecode.Sampler
}

func newSpecState(c Speculation) specState {
	s := specState{k: c.NumTokens}
	if c.NumTokens > 0 {
		if c.Lookahead {
			s.look = c.NumTokens
		}
		s.sampler = specdecode.NewSampler(c.Acceptance, c.Mode, c.Seed, c.Stream)
	}
	return s
}

// reqSpec is a request's speculative-decoding state.
type reqSpec struct {
	drafts int // draft tokens it carries for its next step (vLLM: len(spec_token_ids))
	step   int // drafts scheduled for verification in its step in flight
}

// verify ends the verification of r's s drafts (vLLM's update_from_output
// for a row in scheduled_spec_decode_tokens): it draws how many are
// accepted, rolls back the rejected ones' computed tokens (their KV slots
// stay allocated, and were never registered in the prefix cache), counts
// vLLM's spec-decode metrics and returns the accepted count.
func (e *Engine) verify(r *Request, s int) int {
	a := e.spec.sampler.Accept(s)
	r.NumComputed -= s - a
	r.spec.step = 0
	st := &e.stats
	st.SpecDrafts++
	st.SpecDraftTokens += int64(s)
	st.SpecAccepted += int64(a)
	for j := range a {
		st.SpecAcceptedPerPos[j]++
	}
	return a
}

// Add adds o's counters to s: sums, and maxima for the peaks. A cluster
// sums its ranks' Stats with it.
func (s *Stats) Add(o Stats) {
	s.Steps += o.Steps
	s.Preemptions += o.Preemptions
	s.Rejected += o.Rejected
	s.Aborted += o.Aborted
	s.PrefixQueries += o.PrefixQueries
	s.PrefixHits += o.PrefixHits
	s.Evictions += o.Evictions
	s.ScheduledRows += o.ScheduledRows
	s.MaxRunning = max(s.MaxRunning, o.MaxRunning)
	s.PeakUsedBlocks = max(s.PeakUsedBlocks, o.PeakUsedBlocks)
	s.RemoteKVLoads += o.RemoteKVLoads
	s.SpecDrafts += o.SpecDrafts
	s.SpecDraftTokens += o.SpecDraftTokens
	s.SpecAccepted += o.SpecAccepted
	for j := range s.SpecAcceptedPerPos {
		s.SpecAcceptedPerPos[j] += o.SpecAcceptedPerPos[j]
	}
}

// peakSlots is the most KV slots a request of promptLen prompt tokens and
// maxTokens outputs holds at once: its last step's tokens, with the drafts
// it verifies and the lookahead slots beyond them, capped at max_model_len.
func (e *Engine) peakSlots(promptLen, maxTokens int) int {
	n := promptLen + maxTokens - 1
	if e.spec.k > 0 {
		n = min(n+e.spec.k+e.spec.look, e.cfg.MaxModelLen)
	}
	return n
}
