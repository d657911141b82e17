package engine

import (
	"fmt"

	"blis/kernel"
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
	// DropLastHitBlock drops the last block of every prefix-cache hit, so
	// the drafter recomputes the hidden state of the hit's last tokens,
	// which an EAGLE-style head needs and the cache does not hold. vLLM
	// passes use_eagle to the KV cache manager (kv_cache_manager.py
	// get_computed_blocks → find_longest_cache_hit in
	// single_type_kv_cache_manager.py): FullAttentionManager pops the last
	// matched block, SlidingWindowManager asks for one more contiguous
	// block and pops it. The caller sets it as vLLM's scheduler sets
	// use_eagle, from SpeculativeConfig.use_eagle_block_drop() (vllm#53388):
	// an EAGLE-style method (use_eagle(): eagle, eagle3, mtp of those BLIS
	// simulates) without disable_eagle_block_drop. It needs NumTokens > 0.
	DropLastHitBlock bool
	// DraftSlots is vLLM's max_num_new_slots_for_drafting
	// (specdecode.Config.DraftSlots: k − 1 for DSpark, 1 for a draft
	// model, 0 for EAGLE, MTP and n-gram): the drafter's input positions
	// each scheduled request takes beyond its scheduled tokens, charged
	// to an input budget of --max-num-batched-tokens beside the token
	// budget (vllm/v1/core/sched/scheduler.py schedule: input_budget,
	// draft_slots). It needs NumTokens > 0.
	DraftSlots int
	// Seed and Stream name the engine's own acceptance stream: the caller
	// gives every engine (every data-parallel rank) a distinct Stream, so
	// ranks draw independently and a run is reproducible.
	Seed, Stream uint64
}

func (s Speculation) validate() error {
	switch {
	case s.NumTokens < 0 || s.NumTokens > specdecode.MaxPositions:
		return fmt.Errorf("num_speculative_tokens %d (--speculative-config): BLIS simulates 0 to %d", s.NumTokens, specdecode.MaxPositions)
	case s.DraftSlots < 0 || s.DraftSlots > s.NumTokens:
		return fmt.Errorf("drafter input slots %d per request (max_num_new_slots_for_drafting) must be in 0..num_speculative_tokens %d", s.DraftSlots, s.NumTokens)
	case s.DropLastHitBlock && s.NumTokens == 0:
		return fmt.Errorf("the EAGLE prefix-hit block drop (disable_eagle_block_drop false in --speculative-config) needs num_speculative_tokens ≥ 1")
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
	look    int  // lookahead slots for running requests (0 without Lookahead)
	drop    bool // Speculation.DropLastHitBlock
	slots   int  // Speculation.DraftSlots
	sampler specdecode.Sampler
}

func newSpecState(c Speculation) specState {
	s := specState{k: c.NumTokens, drop: c.DropLastHitBlock, slots: c.DraftSlots}
	if c.NumTokens > 0 {
		if c.Lookahead {
			s.look = c.NumTokens
		}
		s.sampler = specdecode.NewSampler(c.Acceptance, c.Mode, c.Seed, c.Stream)
	}
	return s
}

// reqSpec is a request's speculative-decoding state.
// Both fit a byte (k ≤ specdecode.MaxPositions), so the Request keeps its
// size: 320 bytes, five cache lines, which the engine's hot loops feel.
type reqSpec struct {
	drafts uint8 // draft tokens it carries for its next step (vLLM: len(spec_token_ids))
	step   uint8 // drafts scheduled for verification in its step in flight
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

// inputCap is the most tokens the next request may be scheduled within
// budget tokens left: vLLM's min(token_budget, input_budget −
// draft_slots), where the input budget started at
// --max-num-batched-tokens as the token budget did and every request
// scheduled so far took its tokens plus draft_slots from it. Without
// draft slots it is budget; at 0 or below vLLM schedules no more
// requests this step (input_budget ≤ draft_slots).
func (e *Engine) inputCap(budget int) int {
	if e.spec.slots == 0 {
		return budget
	}
	return budget - e.spec.slots*(len(e.scheduled)+1)
}

// scheduleRunningSpec is Schedule's running-request loop with speculative
// decoding (vLLM's Scheduler.schedule, RUNNING part): a decode row asks for
// 1 + its drafts new tokens (num_tokens_with_spec − num_computed_tokens),
// capped by the long-prefill threshold, the token budget (drafts count
// against --max-num-batched-tokens) and max_model_len − 1 − computed; the
// drafts that did not fit are dropped. KV slots cover the new tokens plus
// the lookahead (allocate_slots' num_lookahead_tokens), preempting from
// the tail of the running list when the pool is short, as the plain loop
// does. It returns the budget left and whether it preempted.
func (e *Engine) scheduleRunningSpec(b *kernel.Batch, budget int) (int, bool) {
	thr := e.cfg.LongPrefillTokenThreshold
	preempted := false
	e.look = e.spec.look
	for i := 0; i < len(e.running) && budget > 0 && e.inputCap(budget) > 0; {
		r := e.running[i]
		d := int(r.spec.drafts)
		n := r.NumTokens() + d - r.NumComputed
		if thr > 0 && n > thr {
			n = thr
		}
		n = min(n, e.inputCap(budget), e.cfg.MaxModelLen-1-r.NumComputed)
		if n <= 0 {
			i++
			continue
		}
		if n <= 1+d && r.NumComputed+n+e.look <= len(r.kv.blocks)*e.cfg.BlockSize {
			// Fast path: a decode row whose slots (drafts and lookahead
			// included) are already allocated takes no block. It registers
			// the blocks its known tokens fill — accepted drafts may have
			// filled one without ending on its boundary, so every row
			// checks — and, in a sliding-window group, frees the block
			// leaving the window.
			if e.hybrid {
				e.removeSkipped(r, r.NumComputed)
			}
			if e.cfg.EnablePrefixCaching && r.NumComputed+1 <= r.NumTokens() {
				e.cacheFullAny(r, r.NumComputed+1)
			}
			e.addSpec(r, n, b)
			budget -= n
			i++
			continue
		}
		ok, pre := e.allocateOrPreempt(r, n)
		preempted = preempted || pre
		if !ok {
			break
		}
		e.addSpec(r, n, b)
		budget -= n
		i++
	}
	e.look = 0
	return budget, preempted
}

// addSpec is add for a row that may verify drafts: a decode row with n − 1
// drafts scheduled (vLLM's scheduled_spec_decode_tokens, the list trimmed
// to what fit) counts them in the batch and computes them; they wait in
// r.spec.step for the step's end (verify).
func (e *Engine) addSpec(r *Request, n int, b *kernel.Batch) {
	r.spec.drafts = 0 // consumed: the proposer drafts anew when r samples
	if n == 1 || r.NumOutput == 0 || r.NumComputed != r.NumTokens()-1 {
		e.add(r, n, b)
		return
	}
	s := n - 1
	e.add(r, 1, b) // the decode row's own token
	r.NumComputed += s
	r.stepTokens += s
	r.spec.step = uint8(s)
	b.DecodeTokens += s
	b.SpecTokens += s
	b.SpecRows++
}

// SpecMeanAcceptanceLength is vLLM's "Mean acceptance length" over the
// engine's life: 1 + accepted drafts per verifying row (0 with no drafts
// verified).
func (s Stats) SpecMeanAcceptanceLength() float64 {
	if s.SpecDrafts == 0 {
		return 0
	}
	return 1 + float64(s.SpecAccepted)/float64(s.SpecDrafts)
}
