package lmbench

import (
	"math"
	"slices"
)

type layoutEntry struct{ user, maxTokens int }

// ShareGPTRequests is the number of requests sharegpt-qa.py sends in one
// run: the entries of LMBenchmark's sharegpt/run.json.
const ShareGPTRequests = len(shareGPTLayout)

// ShareGPTUsers is the number of ShareGPT conversations those requests
// come from.
const ShareGPTUsers = 55

// Slot is a sharegpt row's place in LMBenchmark's sharegpt scenario.
type Slot struct {
	// Entry is the 0-based entry of run.json the row sent: its launch
	// order in the run, failed requests counted.
	Entry int
	// User numbers the ShareGPT conversation (0 to ShareGPTUsers−1);
	// Round counts that conversation's earlier entries (0 for its first
	// request in the run, which is its third human turn).
	User, Round int
	// MaxTokens is the request's max_tokens.
	MaxTokens int
}

// AlignShareGPT places each row of a sharegpt file (rows sorted by launch
// time, as sharegpt-qa.py writes them) in the scenario's request list, or
// returns ok false when the rows do not fit it.
//
// A file with every request has one row per entry, in order. A file with
// rows missing (requests that failed, or were in flight when a failure
// ended the run) is placed by launch time: sharegpt-qa.py launches entry i
// at i/qps after its start, so a row's entry is its launch offset from the
// previous row divided by the send interval, rounded, added to the
// previous row's entry (the interval starts as the median gap between
// consecutive launches and becomes the span so far over the entries so
// far); the first row's own entry is the shift,
// among those that keep every row's generation_tokens within its entry's
// max_tokens, under which most rows' generation_tokens equal their
// entry's max_tokens (the model ran to the limit on about 84 % of the
// requests in llm-d's files). Rows fit when every entry is distinct and in
// range and no row generated more than its entry allows.
func AlignShareGPT(rows []Row) (slots []Slot, ok bool) {
	n := len(rows)
	if n == 0 || n > ShareGPTRequests {
		return nil, false
	}
	entry := make([]int, n)
	if n == ShareGPTRequests {
		for i := range entry {
			entry[i] = i
		}
	} else {
		gaps := make([]float64, 0, n-1)
		for i := 1; i < n; i++ {
			if d := rows[i].LaunchTime - rows[i-1].LaunchTime; d > 0 {
				gaps = append(gaps, d)
			}
		}
		if len(gaps) == 0 {
			return nil, false
		}
		slices.Sort(gaps)
		gap := gaps[len(gaps)/2]
		for i := 1; i < n; i++ {
			k := math.Round((rows[i].LaunchTime - rows[i-1].LaunchTime) / gap)
			if k < 1 || float64(entry[i-1])+k >= float64(ShareGPTRequests) {
				return nil, false
			}
			entry[i] = entry[i-1] + int(k)
			// Launches do not drift from start + i/qps: the span so far
			// over the entries so far is a better interval than any gap.
			gap = (rows[i].LaunchTime - rows[0].LaunchTime) / float64(entry[i])
		}
		best, bestMatch := -1, -1
		for shift := 0; entry[n-1]+shift < ShareGPTRequests; shift++ {
			match, fits := 0, true
			for i, e := range entry {
				lim := shareGPTLayout[e+shift].maxTokens
				if rows[i].GenerationTokens > lim {
					fits = false
					break
				}
				if rows[i].GenerationTokens == lim {
					match++
				}
			}
			if fits && match > bestMatch {
				best, bestMatch = shift, match
			}
		}
		if best < 0 {
			return nil, false
		}
		for i := range entry {
			entry[i] += best
		}
	}
	slots = make([]Slot, n)
	var round [ShareGPTUsers]int
	next := 0 // the next entry whose user's round to count
	for i, e := range entry {
		l := shareGPTLayout[e]
		if rows[i].GenerationTokens > l.maxTokens {
			return nil, false
		}
		for ; next < e; next++ {
			round[shareGPTLayout[next].user]++
		}
		slots[i] = Slot{Entry: e, User: l.user, Round: round[l.user], MaxTokens: l.maxTokens}
	}
	return slots, true
}
