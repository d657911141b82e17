// Package score is the scoring core of BLIS's validation: how a
// prediction's error is measured (signed error, MAPE, population
// statistics), each metric computed the same way from both sides'
// records or read from a format's aggregates, requests paired one to one
// by load, measured records bound to the numbers their tool published,
// the provenance rules that say how faithfully a replay matches the
// measured run, and the vLLM server log's start-up lines. It knows no
// page and no file format of its own; packages inferencex and page build
// on it.
package score

import (
	"math"
	"slices"
)

// SignedError is the relative error of a prediction in percent,
// 100·(predicted/measured − 1): positive when BLIS is slower (predicts a
// larger latency) than the hardware. It is NaN when measured is not > 0.
func SignedError(predicted, measured float64) float64 {
	if !(measured > 0) || math.IsInf(measured, 0) {
		return math.NaN()
	}
	return 100 * (predicted/measured - 1)
}

// ErrorStats summarises signed errors in percent.
type ErrorStats struct {
	N int `json:"n"`
	// MAPE is the mean absolute percentage error, mean(|e|).
	MAPE float64 `json:"mape_pct"`
	// MedianAPE is the median of |e| (numpy's median: the mean of the two
	// middle values when N is even).
	MedianAPE float64 `json:"median_ape_pct"`
	// SignedMean is mean(e): its sign says whether BLIS is mostly slow (+)
	// or fast (−).
	SignedMean float64 `json:"signed_mean_pct"`
}

// Summarize computes the statistics of errs (signed errors in percent).
// NaN entries are left out; with none left every statistic is 0.
func Summarize(errs []float64) ErrorStats {
	abs := make([]float64, 0, len(errs))
	var sumAbs, sum float64
	for _, e := range errs {
		if math.IsNaN(e) {
			continue
		}
		abs = append(abs, math.Abs(e))
		sumAbs += math.Abs(e)
		sum += e
	}
	st := ErrorStats{N: len(abs)}
	if st.N == 0 {
		return st
	}
	st.MAPE = sumAbs / float64(st.N)
	st.SignedMean = sum / float64(st.N)
	slices.Sort(abs)
	if st.N%2 == 1 {
		st.MedianAPE = abs[st.N/2]
	} else {
		st.MedianAPE = (abs[st.N/2-1] + abs[st.N/2]) / 2
	}
	return st
}
