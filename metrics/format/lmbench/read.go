package lmbench

import (
	"cmp"
	"slices"
	"strconv"

	"blis/metrics"
)

// ReadFile reads and parses an LMBenchmark CSV.
func ReadFile(path string) (*File, error) {
	data, err := metrics.ReadResultFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Read reads an LMBenchmark CSV as a measured run: one successful request
// per row, in file order, with Start and End on the Unix clock (launch_time
// and finish_time), TTFT, the server's token counts and TPOTms =
// generation_time / (generation_tokens − 1). A request's ID is its rank by
// launch time (ties in file order): the index a replay of the file
// (workload dataset lmbench) gives it. Rows of multi-round-qa.py carry
// their user as Conversation and question_id − 1 as Turn.
func Read(path string) (*metrics.MeasuredRun, error) {
	f, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return measured(f), nil
}

func measured(f *File) *metrics.MeasuredRun {
	run := &metrics.MeasuredRun{Format: Name, Path: f.Name, Requests: make([]metrics.MeasuredRequest, len(f.Rows))}
	rank := make([]int, len(f.Rows))
	for r, i := range LaunchOrder(f.Rows) {
		rank[i] = r
	}
	for i, row := range f.Rows {
		q := metrics.MeasuredRequest{
			ID:           strconv.Itoa(rank[i]),
			Start:        row.LaunchNS,
			End:          row.FinishNS,
			Success:      true,
			InputTokens:  row.PromptTokens,
			OutputTokens: row.GenerationTokens,
			TTFT:         metrics.FromSeconds(row.TTFT),
		}
		if row.GenerationTokens > 1 {
			q.TPOTms = row.GenerationTime / float64(row.GenerationTokens-1) * 1000
		}
		if f.Scenario == MultiRound {
			q.Conversation, q.Turn = strconv.Itoa(row.UserID), row.QuestionID-1
		}
		run.Requests[i] = q
	}
	return run
}

// LaunchOrder returns the rows' indices sorted by launch time, ties in
// file order: the order the client sent them in.
func LaunchOrder(rows []Row) []int {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(rows[a].LaunchNS, rows[b].LaunchNS) })
	return idx
}
