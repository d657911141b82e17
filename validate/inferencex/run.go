// Package inferencex replays InferenceX's benchmark sweeps in BLIS: it
// reads aiconfigurator's InferenceX calibration CSV, maps each row onto a
// BLIS scenario with the client InferenceX ran and the vllm serve
// arguments of its launch recipe (each setting read from InferenceX's
// scripts or marked assumed), simulates the simulable rows
// and reports every prediction's TTFT and TPOT error per group (`blis
// validate inferencex`). Validation pages select rows of the same CSV
// through Select and Provenance.
package inferencex

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"maps"
	"slices"

	"blis/cluster"
	"blis/internal/parallel"
	"blis/metrics"
	"blis/validate/score"
)

// Statistics a measured value may be compared against.
const (
	StatMedian = "median"
	StatMean   = "mean"
)

// Options configure Validate.
type Options struct {
	Filter
	MapOptions
	// Statistic is the BLIS statistic compared with silicon_ttft_ms and
	// silicon_tpot_ms: median (the default) or mean.
	Statistic string
	// Limit simulates only the first Limit simulable rows (0 = all).
	Limit int
	// Jobs is the number of rows simulated at once (0 = GOMAXPROCS). The
	// report does not depend on it.
	Jobs int
	// Progress, when set, is called after each simulated row with the rows
	// done and the rows to simulate, one call at a time.
	Progress func(done, total int) `json:"-"`
}

// Prediction is what BLIS predicts for one row, in milliseconds.
type Prediction struct {
	TTFTMeanMs   float64 `json:"ttft_mean_ms"`
	TTFTMedianMs float64 `json:"ttft_median_ms"`
	TPOTMeanMs   float64 `json:"tpot_mean_ms"`
	TPOTMedianMs float64 `json:"tpot_median_ms"`
	// Completed and Failed count the timed requests.
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// GPUKVCacheTokens is the KV pool BLIS sized; Preemptions how often
	// the scheduler preempted.
	GPUKVCacheTokens int     `json:"gpu_kv_cache_tokens"`
	Preemptions      int     `json:"num_preemptions"`
	MeanBatchSize    float64 `json:"mean_batch_size"`
	DurationS        float64 `json:"duration_s"`
	StepModel        string  `json:"step_model"`
}

// RowResult is one simulated row: the plan, BLIS's prediction, and the
// signed errors (percent) of the compared statistic.
type RowResult struct {
	Plan      *Plan
	BLIS      Prediction
	TTFTms    float64 // BLIS's value of the compared statistic
	TPOTms    float64
	TTFTError float64 // 100·(BLIS/measured − 1)
	TPOTError float64
}

// GroupStats are the error statistics of one (model, precision, chip,
// backend) group.
type GroupStats struct {
	Model     string           `json:"model"`
	Precision string           `json:"precision"`
	Chip      string           `json:"chip"`
	Backend   string           `json:"backend"`
	TTFT      score.ErrorStats `json:"ttft"`
	TPOT      score.ErrorStats `json:"tpot"`
}

// Report is the outcome of validating BLIS against an InferenceX file.
type Report struct {
	File      string
	Statistic string
	Options   Options
	Total     int // rows in the file
	Filtered  int // left out by --model / --hardware
	Rows      []RowResult
	Groups    []GroupStats
	// Regimes are the same statistics per (model, precision, ISL bucket,
	// concurrency bucket), every chip and backend together, so that a
	// reader sees where BLIS is weak (regimeStats).
	Regimes   []RegimeStats
	Overall   GroupStats // every simulated row
	Skipped   []Skip     // in file order
	Recipes   []*Recipe
	StepModel string
}

// Validate maps every row of an InferenceX file, simulates the
// simulable ones on Jobs workers, and scores the predictions. The report
// is the same whatever Jobs is.
func Validate(file string, rows []Row, opts Options) (*Report, error) {
	switch opts.Statistic {
	case "":
		opts.Statistic = StatMedian
	case StatMedian, StatMean:
	default:
		return nil, fmt.Errorf("validate: statistic %q: allowed: median, mean", opts.Statistic)
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("validate: limit %d: must be ≥ 0", opts.Limit)
	}
	sel := Select(rows, opts.Filter, opts.MapOptions)
	plans := sel.Plans
	skipped := sel.Skipped
	if opts.Limit > 0 && len(plans) > opts.Limit {
		for _, p := range plans[opts.Limit:] {
			skipped = append(skipped, Skip{Row: p.Row, Reason: ReasonLimit, Detail: fmt.Sprintf("--limit %d", opts.Limit)})
		}
		plans = plans[:opts.Limit]
	}

	preds := make([]Prediction, len(plans))
	errs := make([]*Skip, len(plans))
	var mu sync.Mutex
	done := 0
	parallel.Each(opts.Jobs, len(plans), func(i int) {
		preds[i], errs[i] = Simulate(plans[i])
		if opts.Progress != nil {
			mu.Lock()
			done++
			opts.Progress(done, len(plans))
			mu.Unlock()
		}
	})

	rep := &Report{File: file, Statistic: opts.Statistic, Options: opts, Total: sel.Total, Filtered: sel.Filtered}
	var ok []*Plan
	for i, p := range plans {
		if errs[i] != nil {
			skipped = append(skipped, *errs[i])
			continue
		}
		r := RowResult{Plan: p, BLIS: preds[i]}
		if opts.Statistic == StatMean {
			r.TTFTms, r.TPOTms = preds[i].TTFTMeanMs, preds[i].TPOTMeanMs
		} else {
			r.TTFTms, r.TPOTms = preds[i].TTFTMedianMs, preds[i].TPOTMedianMs
		}
		r.TTFTError = score.SignedError(r.TTFTms, p.Row.TTFTms)
		r.TPOTError = score.SignedError(r.TPOTms, p.Row.TPOTms)
		rep.Rows = append(rep.Rows, r)
		ok = append(ok, p)
		if rep.StepModel == "" {
			rep.StepModel = preds[i].StepModel
		} else if rep.StepModel != preds[i].StepModel {
			rep.StepModel = "mixed"
		}
	}
	sort.SliceStable(skipped, func(a, b int) bool { return skipped[a].Row.Line < skipped[b].Row.Line })
	rep.Skipped = skipped
	rep.Recipes = usedRecipes(ok)
	rep.Groups, rep.Overall = groupStats(rep.Rows)
	rep.Regimes = regimeStats(rep.Rows)
	return rep, nil
}

// Simulate runs one plan and returns BLIS's prediction, or why it could
// not. A panic inside the simulator (a bug) fails the row, not the run.
func Simulate(p *Plan) (pred Prediction, skip *Skip) {
	fail := func(reason string, err error) (Prediction, *Skip) {
		return Prediction{}, &Skip{Row: p.Row, Reason: reason, Detail: err.Error()}
	}
	defer func() {
		if v := recover(); v != nil {
			pred, skip = fail(ReasonFailed, fmt.Errorf("internal error: %v", v))
		}
	}()
	res, err := p.Scenario.Resolve()
	if err != nil {
		return fail(ReasonRejected, err)
	}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{
		Percentiles: p.Scenario.MetricPercentiles,
		Metrics:     []string{metrics.MetricTTFT, metrics.MetricTPOT},
	})
	if err != nil {
		return fail(ReasonFailed, err)
	}
	out, err := cluster.Run(res.ClientConfig(), res.Source, rec)
	if err != nil {
		return fail(ReasonFailed, err)
	}
	sum := rec.Summarize(metrics.SummaryInput{
		Duration: out.Duration, Backend: "vllm", ModelID: res.Model.ID,
		NumPrompts: p.Scenario.NumPrompts, RequestRate: p.Scenario.RequestRate, Burstiness: p.Scenario.Burstiness,
		MaxConcurrency: p.Scenario.MaxConcurrency, GPUKVCacheTokens: res.Memory.KVTokens,
		NumPreemptions: int(out.Engine.Preemptions),
	})
	if sum.Completed == 0 {
		return fail(ReasonFailed, fmt.Errorf("no request completed (%d failed)", sum.Failed))
	}
	return Prediction{
		TTFTMeanMs: sum.TTFT.Mean, TTFTMedianMs: sum.TTFT.Median,
		TPOTMeanMs: sum.TPOT.Mean, TPOTMedianMs: sum.TPOT.Median,
		Completed: sum.Completed, Failed: sum.Failed,
		GPUKVCacheTokens: res.Memory.KVTokens, Preemptions: int(out.Engine.Preemptions),
		MeanBatchSize: sum.MeanBatchSize, DurationS: sum.DurationS, StepModel: res.Pricer.Name(),
	}, nil
}

// RegimeStats is one regime's errors: a model and precision at an input
// length bucket and a concurrency bucket.
type RegimeStats struct {
	Model       string           `json:"model"`
	Precision   string           `json:"precision"`
	ISL         string           `json:"isl"`         // "1k", "8k", ...: the bucket's upper bound
	Concurrency string           `json:"concurrency"` // "1-4", "5-16", "17-64", "65+"
	TTFT        score.ErrorStats `json:"ttft"`
	TPOT        score.ErrorStats `json:"tpot"`
}

// islBucket and concBucket name a row's regime: input lengths up to 1k,
// 2k, 4k, 8k or longer (InferenceX's 1k/8k workloads fall in the first and
// fourth), concurrency 1–4 (latency-bound), 5–16, 17–64, above 64
// (throughput-bound).
func islBucket(isl int) string {
	for _, b := range []int{1024, 2048, 4096, 8192} {
		if isl <= b {
			return fmt.Sprintf("%dk", b/1024)
		}
	}
	return ">8k"
}

func concBucket(c int) string {
	switch {
	case c <= 4:
		return "1-4"
	case c <= 16:
		return "5-16"
	case c <= 64:
		return "17-64"
	}
	return "65+"
}

// regimeStats computes the statistics per (model, precision, ISL bucket,
// concurrency bucket), in that order.
func regimeStats(rows []RowResult) []RegimeStats {
	type acc struct {
		g          RegimeStats
		key        [4]string
		ttft, tpot []float64
	}
	groups := map[[4]string]*acc{}
	for i := range rows {
		r := &rows[i]
		g := RegimeStats{Model: r.Plan.Row.ModelPath, Precision: r.Plan.Row.Precision, ISL: islBucket(r.Plan.Row.ISL), Concurrency: concBucket(r.Plan.Concurrency)}
		k := [4]string{strings.ToLower(g.Model), g.Precision, g.ISL, g.Concurrency}
		a := groups[k]
		if a == nil {
			a = &acc{g: g, key: k}
			groups[k] = a
		}
		a.ttft = append(a.ttft, r.TTFTError)
		a.tpot = append(a.tpot, r.TPOTError)
	}
	rank := map[string]int{"1k": 0, "2k": 1, "4k": 2, "8k": 3, ">8k": 4, "1-4": 0, "5-16": 1, "17-64": 2, "65+": 3}
	accs := slices.Collect(maps.Values(groups))
	sort.Slice(accs, func(i, j int) bool {
		a, b := accs[i].key, accs[j].key
		if a[0] != b[0] || a[1] != b[1] {
			return a[0]+"\x00"+a[1] < b[0]+"\x00"+b[1]
		}
		if a[2] != b[2] {
			return rank[a[2]] < rank[b[2]]
		}
		return rank[a[3]] < rank[b[3]]
	})
	out := make([]RegimeStats, len(accs))
	for i, a := range accs {
		a.g.TTFT, a.g.TPOT = score.Summarize(a.ttft), score.Summarize(a.tpot)
		out[i] = a.g
	}
	return out
}

// groupStats computes the statistics per (model, precision, chip, backend),
// sorted by model (ignoring case), precision, chip and backend, and over
// every row.
func groupStats(rows []RowResult) ([]GroupStats, GroupStats) {
	type acc struct {
		g          GroupStats
		ttft, tpot []float64
	}
	groups := map[string]*acc{}
	var allTTFT, allTPOT []float64
	for i := range rows {
		r := &rows[i]
		g := GroupStats{Model: r.Plan.Row.ModelPath, Precision: r.Plan.Row.Precision, Chip: r.Plan.Chip, Backend: r.Plan.Backend()}
		k := g.Model + "\x00" + g.Precision + "\x00" + g.Chip + "\x00" + g.Backend
		a := groups[k]
		if a == nil {
			a = &acc{g: g}
			groups[k] = a
		}
		a.ttft = append(a.ttft, r.TTFTError)
		a.tpot = append(a.tpot, r.TPOTError)
		allTTFT = append(allTTFT, r.TTFTError)
		allTPOT = append(allTPOT, r.TPOTError)
	}
	keys := slices.Sorted(maps.Keys(groups))
	sort.SliceStable(keys, func(i, j int) bool { return strings.ToLower(keys[i]) < strings.ToLower(keys[j]) })
	out := make([]GroupStats, 0, len(groups))
	for _, k := range keys {
		a := groups[k]
		a.g.TTFT, a.g.TPOT = score.Summarize(a.ttft), score.Summarize(a.tpot)
		out = append(out, a.g)
	}
	all := GroupStats{Model: "all", Chip: "all", Backend: "all", TTFT: score.Summarize(allTTFT), TPOT: score.Summarize(allTPOT)}
	return out, all
}
