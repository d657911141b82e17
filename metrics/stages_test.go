package metrics

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestStageOf(t *testing.T) {
	stages := []Stage{{Requests: 3}, {Requests: 0}, {Requests: 2}}
	for _, c := range []struct {
		index int64
		want  int
	}{{0, 0}, {2, 0}, {3, 2}, {4, 2}, {5, 2}, {99, 2}} {
		if got := StageOf(stages, c.index); got != c.want {
			t.Errorf("StageOf(%d) = %d, want %d", c.index, got, c.want)
		}
	}
	if StageOf(nil, 0) != -1 {
		t.Error("no stages: want -1")
	}
}

// Each stage's statistics cover its own requests: counts and means exact,
// percentiles within the sketch's relative accuracy of numpy's.
func TestStageStats(t *testing.T) {
	stages := []Stage{{Rate: 10, Duration: 5, Requests: 50}, {Rate: 20, Duration: 5, Requests: 100}}
	s := NewStageStats(stages, 0)
	var ttft [2][]float64
	for i := int64(0); i < 150; i++ {
		k := StageOf(stages, i)
		q := RequestResult{Index: i, Success: i%25 != 7, InputTokens: 100, OutputTokens: 4,
			Start: time.Duration(i) * 100 * time.Millisecond}
		q.TTFT = time.Duration(10+i%13) * time.Millisecond
		q.ITLs = []time.Duration{5 * time.Millisecond, 6 * time.Millisecond, time.Duration(7+k) * time.Millisecond}
		q.Latency = q.TTFT + 18*time.Millisecond + time.Duration(k)*time.Millisecond
		q.End = q.Start + q.Latency
		if q.Success {
			ttft[k] = append(ttft[k], float64(q.TTFT)/1e6)
		}
		if err := s.Request(&q); err != nil {
			t.Fatal(err)
		}
	}
	res := s.Results([]float64{50, 99})
	for k, r := range res {
		if r.Completed+r.Failed != stages[k].Requests || r.Completed != int64(len(ttft[k])) {
			t.Errorf("stage %d: %d completed, %d failed", k, r.Completed, r.Failed)
		}
		mean := 0.0
		for _, v := range ttft[k] {
			mean += v
		}
		mean /= float64(len(ttft[k]))
		if math.Abs(r.TTFT.Mean-mean) > 1e-9 {
			t.Errorf("stage %d: mean TTFT %v, want %v", k, r.TTFT.Mean, mean)
		}
		sorted := slices.Sorted(slices.Values(ttft[k]))
		if p := r.TTFT.Percentiles[1]; math.Abs(p-sorted[len(sorted)-1])/sorted[len(sorted)-1] > 2*DefaultRelativeAccuracy {
			t.Errorf("stage %d: p99 TTFT %v, want ≈ %v", k, p, sorted[len(sorted)-1])
		}
		if want := 6.0 + float64(k)/3; math.Abs(r.TPOT.Mean-want) > 1e-9 {
			t.Errorf("stage %d: mean TPOT %v, want %v", k, r.TPOT.Mean, want)
		}
		if !r.HasITL || math.Abs(r.ITL.Mean-(18+float64(k))/3) > 1e-9 {
			t.Errorf("stage %d: ITL %+v", k, r.ITL)
		}
		if r.DurationS <= 0 || r.RequestThroughput != float64(r.Completed)/r.DurationS {
			t.Errorf("stage %d: duration %v, throughput %v", k, r.DurationS, r.RequestThroughput)
		}
	}
	// The table and the result file carry every stage.
	var tb bytes.Buffer
	if err := WriteTable(&tb, &Result{Stages: res}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Per load stage (inference-perf)", "Stage 1: 20 req/s for 5 s", "P99 ITL (ms):"} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	js := string(stagesJSON(res))
	for _, want := range []string{`"stage": 1`, `"requested_rate": 20.0`, `"num_prompts": 100`, `"p99_ttft_ms"`, `"mean_itl_ms"`} {
		if !strings.Contains(js, want) {
			t.Errorf("stages JSON lacks %s: %s", want, js)
		}
	}
}
