package cluster

import (
	"blis/engine"
)

// Data parallelism (vLLM --data-parallel-size), mirrored from vLLM v0.11+:
//
//   - Each DP rank is an engine core of its own (vllm/v1/engine/core.py
//     DPEngineCoreProc): its own scheduler, its own KV cache of the size one
//     TP group holds (the same plan on every rank).
//   - The API server sends each request to the rank with the lowest
//     4 × waiting + running (vllm/v1/engine/core_client.py
//     DPLBAsyncMPClient.get_core_engine_for_request), ties to the lowest
//     rank. vLLM reads those counts from the DP coordinator's stats,
//     published every 100 ms, and adds the requests it sent since; BLIS
//     reads the engines' live counts, which is what that bookkeeping
//     approximates.
//   - A MoE model's ranks step in lockstep (Config.Lockstep): every rank
//     runs a forward while any has work, an idle one a dummy batch
//     (execute_dummy_batch), because the experts' collectives span the
//     group; the step is priced by kernel.GroupStepTime and ends for every
//     rank at once. A dense model's ranks are independent engines, each
//     stepping on its own clock.

// pickRank is the global index of the rank of e that a new request goes
// to: its only rank, or the one its DP balancer picks (dpRoute).
func (e *endpoint) pickRank() int {
	if len(e.engs) > 1 {
		return e.first + dpRoute(e.engs)
	}
	return e.first
}

// dpRoute picks the rank a new request goes to.
func dpRoute(engs []*engine.Engine) int {
	best, bestScore := 0, -1
	for i, e := range engs {
		if s := 4*e.Waiting() + e.Running(); bestScore < 0 || s < bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// sumStats adds the ranks' counters; maxima are the largest rank's.
func sumStats(engs []*engine.Engine) engine.Stats {
	var out engine.Stats
	for _, e := range engs {
		out.Add(e.Stats())
	}
	return out
}

// anyBusy reports whether some rank has a step in flight.
func anyBusy(engs []*engine.Engine) bool {
	for _, e := range engs {
		if e.Busy() {
			return true
		}
	}
	return false
}

// anyWork reports whether some rank has requests running or waiting.
func anyWork(engs []*engine.Engine) bool {
	for _, e := range engs {
		if e.HasWork() {
			return true
		}
	}
	return false
}

// counts sums waiting, running and free blocks over the ranks, for errors.
func counts(engs []*engine.Engine) (waiting, running, free int) {
	for _, e := range engs {
		waiting += e.Waiting()
		running += e.Running()
		free += e.FreeBlocks()
	}
	return waiting, running, free
}
