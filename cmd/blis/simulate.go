package main

import (
	"cmp"
	"time"

	"blis/cluster"
	"blis/metrics"
	"blis/scenario"
)

// simOptions are what a caller of simulate adds to a bare run.
type simOptions struct {
	// Sinks receive every finished request as it finishes: the output
	// files (exports, the --save-result JSON).
	Sinks []metrics.Sink
	// Detailed keeps every inter-token gap per request (aiperf's and
	// inference-perf's exports, --save-detailed). A staged run keeps them
	// whatever this says: its per-stage ITL needs every gap.
	Detailed bool
	// SpillDir is where the recorder spills its compact per-request
	// values beyond 4 MiB; "" is the system's temporary directory.
	SpillDir string
	// Progress, when non-nil, follows the requests sent and the
	// simulated clock.
	Progress func(sent int64, sim time.Duration)
}

// simRun is one finished simulated benchmark run.
type simRun struct {
	// Summary is what vllm bench serve prints and saves, with the resolved
	// deployment in its Deployment field.
	Summary *metrics.Result
	// Deployment is Summary.Deployment, typed.
	Deployment deployment
	// Out is the serving loop's own account: requests sent, failed and
	// unfinished, engine counters, step-time shares.
	Out cluster.Result
}

// simulate runs a resolved scenario to its end: the benchmark client against
// the deployment, every finished request streamed to the sinks. It is what
// `blis run` does between its start-up lines and its table, and nothing
// else (no printing, no files of its own), so that a sweep point, a plan's
// probe and `blis run` of the same scenario give the same summary. A run
// that served nothing is not an error here; checkServed says what it is.
func simulate(s scenario.Scenario, res *scenario.Resolved, opt simOptions) (simRun, error) {
	stages := res.Stages()
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{
		Percentiles: s.MetricPercentiles, Metrics: commaList(s.PercentileMetrics), Detailed: opt.Detailed || len(stages) > 0,
		// The result files stream through sinks: nothing is kept per
		// request but the statistics' compact values, on disk beyond 4 MiB.
		OmitRequests: true, TempDir: opt.SpillDir,
	})
	if err != nil {
		return simRun{}, &scenario.InputError{Msg: err.Error()}
	}
	defer rec.Close()
	for _, sink := range opt.Sinks {
		rec.AddSink(sink)
	}
	var perStage *metrics.StageStats
	if len(stages) > 0 {
		perStage = metrics.NewStageStats(stages, 0)
		rec.AddSink(perStage)
	}
	cfg := res.ClientConfig()
	cfg.Progress = opt.Progress
	out, err := cluster.Run(cfg, res.Source, rec)
	if err == nil {
		err = rec.Err()
	}
	if err != nil {
		return simRun{}, err
	}
	hit := 0.0
	if out.Engine.PrefixQueries > 0 {
		hit = float64(out.Engine.PrefixHits) / float64(out.Engine.PrefixQueries)
	}
	dep := deploymentOf(res, out)
	summary := rec.Summarize(metrics.SummaryInput{
		Duration: out.Duration, Backend: s.Backend, Label: s.Label, Metadata: s.Metadata,
		ModelID: res.Model.ID, TokenizerID: cmp.Or(s.Tokenizer, res.Model.ID), Goodput: s.Goodput,
		// vLLM writes --num-prompts; left at 0 (the dataset's own count) it
		// is the number of requests the timed run sent.
		NumPrompts: cmp.Or(s.NumPrompts, int(out.Sent)), RequestRate: s.RequestRate, Burstiness: s.Burstiness,
		MaxConcurrency:     s.MaxConcurrency,
		GPUKVCacheTokens:   res.Memory.KVTokens,
		NumPreemptions:     int(out.Engine.Preemptions),
		PrefixCacheHitRate: hit,
		Deployment:         dep,
	})
	if perStage != nil {
		summary.Stages = perStage.Results(summary.Percentiles)
	}
	return simRun{Summary: summary, Deployment: dep, Out: out}, nil
}

// gpuCount is a deployment's GPUs: TP × PP × DP per replica, over every
// replica of every pool, in all and per chip.
type gpuCount struct {
	total  int
	byChip map[string]int
}

func gpusOf(r *scenario.Resolved) gpuCount {
	c := gpuCount{byChip: map[string]int{}}
	for _, p := range r.Pools {
		n := p.Spec.Replicas * max(p.Deployment.DP, 1) * max(p.Deployment.TP, 1) * max(p.Deployment.PP, 1)
		c.total += n
		c.byChip[p.Chip.Name] += n
	}
	return c
}
