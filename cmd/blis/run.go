package main

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"blis/cluster"
	"blis/engine"
	"blis/internal/progress"
	"blis/kernel"
	"blis/metrics"
	"blis/metrics/format"
	"blis/scenario"
	"blis/workload"
)

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	s := scenario.Defaults()
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "run [scenario.yaml]",
		Short: "Simulate a vllm bench serve run against one vLLM replica",
		Long: `Simulate what ` + "`vllm bench serve`" + ` would measure against a vLLM deployment.

Flags use the names of vllm serve and vllm bench serve; a scenario file
holds the same keys, and flags override it. Every key left out takes one
default, the same with or without a file: vLLM's own where vLLM has one.
With no flags BLIS simulates ` + defaultRunText() + `.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &usageError{fmt.Errorf("run takes at most one scenario file, got %d arguments: %s", len(args), strings.Join(args, " "))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				file := args[0]
				data, err := os.ReadFile(file)
				if err != nil {
					return &scenario.InputError{File: file, Msg: "cannot read the scenario: " + errors.Unwrap(err).Error()}
				}
				fs := cmd.Flags()
				changed := func(name string) bool { return fs.Changed(name) || fs.Changed("no-"+name) }
				if err := s.ApplyYAML(file, data, changed); err != nil {
					return err
				}
			}
			return runScenario(s, dryRun, quiet(cmd), stdout, stderr)
		},
	}
	cmd.Flags().SortFlags = false // keep the settings table's order: serve, bench, trace, client, output
	bindSettings(cmd.Flags(), &s)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "resolve the deployment and print the memory plan without simulating")
	cmd.SetUsageFunc(runUsage)
	return cmd
}

// defaultRunText describes what `blis run` simulates with no flags, from
// scenario.Defaults().
func defaultRunText() string {
	d := scenario.Defaults()
	rate := "all at once (--request-rate inf)"
	if !math.IsInf(d.RequestRate, 1) {
		rate = fmt.Sprintf("at %g requests/s", d.RequestRate)
	}
	cc := "no concurrency cap"
	if d.MaxConcurrency > 0 {
		cc = fmt.Sprintf("at most %d in flight", d.MaxConcurrency)
	}
	return fmt.Sprintf("%s on %d× %s, serving %d random prompts of %d tokens in and %d out, sent %s with %s, seed %d",
		d.Model, d.TensorParallelSize, strings.ToUpper(d.Hardware), scenario.DefaultNumPrompts, d.RandomInputLen, d.RandomOutputLen, rate, cc, d.Seed)
}

func runScenario(s scenario.Scenario, dryRun, quiet bool, stdout, stderr io.Writer) error {
	res, err := s.Resolve()
	if err != nil {
		return err
	}
	formats := commaList(s.Export)
	for _, f := range formats {
		if !slices.Contains(format.Names(), f) {
			return &scenario.InputError{Key: "--export", Value: f, Msg: "allowed: " + strings.Join(format.Names(), ", ")}
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintln(stderr, n)
	}
	printStartup(stderr, res)
	if dryRun {
		return printPlan(stdout, res)
	}
	// aiperf's and inference-perf's per-request exports list every chunk,
	// and a staged run's per-stage ITL needs every gap.
	stages := res.Stages()
	detailed := s.SaveDetailed || slices.Contains(formats, "aiperf") || slices.Contains(formats, "inference-perf") || len(stages) > 0
	outs, err := openOutputs(s, res, formats, stages, detailed)
	if err != nil {
		return err
	}
	total := s.NumPrompts // 0: the dataset's own count, unknown until read
	if s.Dataset() == workload.DatasetRandom {
		total = res.Random.NumPrompts
	}
	if len(stages) > 0 {
		total = int(s.Load.Requests())
	}
	bar := progress.New(stderr, "blis run", "requests", int64(total), quiet)
	var follow func(int64, time.Duration)
	if bar != nil {
		follow = bar.Update
	}
	run, err := simulate(s, res, simOptions{Sinks: outs.sinks(), Detailed: detailed, SpillDir: spillDir(s, res.Model.ID), Progress: follow})
	bar.Done()
	if err != nil {
		outs.abort()
		return err
	}
	printClient(stderr, s, run.Out)
	if err := checkServed(stderr, s, run.Out); err != nil {
		outs.abort()
		return err
	}
	summary, dep := run.Summary, run.Deployment
	w := bufio.NewWriter(stdout)
	if err := metrics.WriteTable(w, summary); err != nil {
		outs.abort()
		return err
	}
	printReplicas(w, dep)
	printSpec(w, dep.Spec)
	printOffload(w, dep.Offload)
	if err := w.Flush(); err != nil {
		outs.abort()
		return err
	}
	return outs.close(summary, stderr)
}

// checkServed reports requests that failed: a run that sent nothing is an
// input mistake (exit 2: an empty trace, or filters that left no record),
// one where no request succeeded is a failure (exit 1) rather than a table
// of zeros, and otherwise stderr says how many failed and why (vLLM's
// server answers each with an error the client counts as failed).
func checkServed(w io.Writer, s scenario.Scenario, out cluster.Result) error {
	if out.Sent == 0 {
		what := "the workload"
		if p := cmp.Or(s.DatasetPath, s.InputFile); p != "" {
			what = p
		}
		return &scenario.InputError{Msg: what + " gave no request to send: an empty trace, or --num-prompts, --fixed-schedule-start-offset or --fixed-schedule-end-offset left none"}
	}
	failed := out.Rejected + out.TimedOut
	var why []string
	for _, f := range out.Failures {
		_, detail, _ := strings.Cut(f.Example, ":")
		why = append(why, fmt.Sprintf("%s (%d)%s", f.Kind, f.Count, strings.TrimSpace(":"+detail+" ")))
	}
	msg := fmt.Sprintf("%d of %d requests failed: %s", failed, out.Sent, strings.Join(why, "; "))
	if out.Completed == 0 {
		if failed == 0 {
			return fmt.Errorf("no request completed: %d sent, %d still in flight when the grace period ended (--benchmark-grace-period)", out.Sent, out.Unfinished)
		}
		return fmt.Errorf("no request succeeded: %s", msg)
	}
	if failed > 0 {
		fmt.Fprintln(w, "WARNING", msg)
	}
	return nil
}

// printClient reports on stderr what the client did besides the requests
// it recorded, when there is something to say.
func printClient(w io.Writer, s scenario.Scenario, out cluster.Result) {
	if !s.Lanes() && out.TimedOut == 0 && out.Unfinished == 0 && out.SystemIdle.Jumps == 0 && out.TraceIdle.Jumps == 0 {
		return
	}
	mode := "per-request cap"
	if s.Lanes() {
		mode = fmt.Sprintf("%d lanes, %d trajectories, %d warm-up requests", s.MaxConcurrency, out.Trajectories, out.WarmupRequests)
	}
	fmt.Fprintf(w, "INFO client: %s; %d timed out, %d unfinished when the grace period ended; idle skipped: %.1f s system-wide, %.1f s in trajectory trees\n",
		mode, out.TimedOut, out.Unfinished, out.SystemIdle.Skipped.Seconds(), out.TraceIdle.Skipped.Seconds())
}

func resultPath(s scenario.Scenario, model string) string {
	name := s.ResultFilename
	if name == "" {
		base := model[strings.LastIndex(model, "/")+1:]
		name = fmt.Sprintf("blis-%s-%s-tp%d.json", base, s.Hardware, s.TensorParallelSize)
	}
	if s.ResultDir != "" && !filepath.IsAbs(name) {
		name = filepath.Join(s.ResultDir, name)
	}
	return name
}

// spillDir is where the recorder spills: next to the run's first output,
// else the system's temporary directory.
func spillDir(s scenario.Scenario, model string) string {
	switch {
	case strings.TrimSpace(s.Export) != "" && s.ExportDir != "":
		return s.ExportDir
	case strings.TrimSpace(s.Export) != "":
		return "."
	case s.SaveResult || s.SaveDetailed:
		return filepath.Dir(resultPath(s, model))
	}
	return os.TempDir()
}

// outputs are a run's result files, open before the simulation starts so
// that each request streams to them as it finishes: the --export formats
// and the --save-result JSON.
type outputs struct {
	exporter *format.Exporter
	result   *resultFile
}

// commaList splits a comma-separated flag value (--export,
// --percentile-metrics) into its items, spaces trimmed, empty items
// dropped.
func commaList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// openOutputs creates the files the scenario asks for: the --export
// formats and the result JSON. With vLLM's --append-result the result JSON
// is one more line of an existing file.
func openOutputs(s scenario.Scenario, res *scenario.Resolved, formats []string, stages []metrics.Stage, detailed bool) (*outputs, error) {
	o := &outputs{}
	if len(formats) > 0 {
		multi, err := multiTurn(s, res)
		if err != nil {
			return nil, err
		}
		info := metrics.RunInfo{
			Model: res.Model.ID, Chip: strings.ToUpper(res.Chip.Name), Precision: res.Model.WeightDtype,
			TP: res.Deployment.TP, ISL: s.RandomInputLen, OSL: s.RandomOutputLen, RangeRatio: s.RandomRangeRatio,
			Seed: s.Seed, Version: buildVersion(), MultiTurn: multi, Stages: stages,
		}
		dir := s.ExportDir
		if dir == "" {
			dir = "."
		}
		if o.exporter, err = format.NewExporter(dir, formats, info, detailed); err != nil {
			return nil, err
		}
	}
	if s.SaveResult || s.SaveDetailed || s.AppendResult {
		rf, err := openResult(resultPath(s, res.Model.ID), s.SaveDetailed, s.AppendResult)
		if err != nil {
			o.abort()
			return nil, err
		}
		o.result = rf
	}
	return o, nil
}

func (o *outputs) sinks() []metrics.Sink {
	var out []metrics.Sink
	if o.exporter != nil {
		out = append(out, o.exporter)
	}
	if o.result != nil {
		out = append(out, o.result.json)
	}
	return out
}

// close finishes every file with the run's summary and names them on
// stderr.
func (o *outputs) close(summary *metrics.Result, stderr io.Writer) error {
	if o.exporter != nil {
		paths, err := o.exporter.Close(summary)
		for _, p := range paths {
			fmt.Fprintf(stderr, "Exported %s\n", p)
		}
		if err != nil {
			if o.result != nil {
				o.result.abort()
			}
			return err
		}
	}
	if o.result != nil {
		if err := o.result.close(summary); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Result written to %s\n", o.result.path)
	}
	return nil
}

// abort closes every file unfinished.
func (o *outputs) abort() {
	if o.exporter != nil {
		o.exporter.Abort()
	}
	if o.result != nil {
		o.result.abort()
	}
}

// multiTurn reports whether the workload has multi-turn sessions (the
// exports then name every request's conversation): it reads the workload
// from its start to its first session request, or to its end when it has
// none. The datasets that never have sessions are not read.
func multiTurn(s scenario.Scenario, res *scenario.Resolved) (bool, error) {
	switch s.Dataset() {
	case workload.DatasetMooncake, workload.DatasetSessions, workload.DatasetSharedPrefix:
	case workload.DatasetAgentic:
		return true, nil
	default:
		return false, nil
	}
	src, err := res.Reopen()
	if err != nil {
		return false, err
	}
	defer workload.Close(src)
	var r workload.Request
	for src.Next(&r) {
		if r.SessionID != 0 {
			return true, nil
		}
	}
	if err := workload.Err(src); err != nil {
		return false, &scenario.InputError{Msg: err.Error()}
	}
	return false, nil
}

// resultFile is the --save-result JSON, streamed as requests finish.
type resultFile struct {
	path string
	f    *os.File
	json *metrics.JSONWriter
}

func openResult(path string, detailed, appendMode bool) (*resultFile, error) {
	f, err := metrics.CreateResultFile(path, appendMode)
	if err != nil {
		return nil, err
	}
	return &resultFile{path: path, f: f, json: metrics.NewJSONWriter(f, metrics.JSONOptions{
		Detailed: detailed, TempDir: filepath.Dir(path)})}, nil
}

func (rf *resultFile) close(summary *metrics.Result) error {
	err := rf.json.Close(summary)
	if cerr := rf.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (rf *resultFile) abort() { rf.f.Close() }

// deployment is the resolved deployment as the result file reports it:
// every vLLM default filled in, so a reader sees what was simulated.
type deployment struct {
	Model                     string  `json:"model"`
	Hardware                  string  `json:"hardware"`
	TensorParallelSize        int     `json:"tensor_parallel_size"`
	DataParallelSize          int     `json:"data_parallel_size"`
	PipelineParallelSize      int     `json:"pipeline_parallel_size,omitempty"` // absent: 1
	MaxNumSeqs                int     `json:"max_num_seqs"`
	MaxNumBatchedTokens       int     `json:"max_num_batched_tokens"`
	MaxModelLen               int     `json:"max_model_len"`
	BlockSize                 int     `json:"block_size"`
	GPUMemoryUtilization      float64 `json:"gpu_memory_utilization"`
	KVCacheDtype              string  `json:"kv_cache_dtype"`
	Quantization              string  `json:"quantization"`
	EnablePrefixCaching       bool    `json:"enable_prefix_caching"`
	EnableChunkedPrefill      bool    `json:"enable_chunked_prefill"`
	LongPrefillTokenThreshold int     `json:"long_prefill_token_threshold"`
	EnforceEager              bool    `json:"enforce_eager"`
	NumGPUBlocks              int     `json:"num_gpu_blocks"`
	NumGPUBlocksOverridden    bool    `json:"num_gpu_blocks_overridden"`
	StepModel                 string  `json:"step_model"`
	NumWarmups                int     `json:"num_warmups"`
	Seed                      int64   `json:"seed"`
	RandomRangeStyle          string  `json:"random_range_style"`
	RandomRangeRatio          float64 `json:"random_range_ratio"`
	RandomPrefixLen           int     `json:"random_prefix_len"`
	Steps                     int64   `json:"engine_steps"`
	MeanStepMs                float64 `json:"mean_step_ms"`
	StepComputeShare          float64 `json:"step_compute_share"`
	StepMemoryShare           float64 `json:"step_memory_share"`
	StepCommShare             float64 `json:"step_comm_share"`
	StepLaunchShare           float64 `json:"step_launch_share"`
	StepHostShare             float64 `json:"step_host_share"`
	// PipelineBubbleShare is, with --pipeline-parallel-size > 1, the part
	// of the steps' time (each batch's, entry to exit of the pipeline)
	// spent waiting for a stage busy with an earlier batch.
	PipelineBubbleShare float64 `json:"pipeline_bubble_share,omitempty"`
	Rejected            int64   `json:"rejected"`
	// A cluster (more than one endpoint, or a router asked for): the
	// router, the pools and each replica's share.
	Router   string          `json:"router,omitempty"`
	Fabric   string          `json:"fabric,omitempty"` // the KV transfers' network, for a run with a prefill pool
	Pools    []poolJSON      `json:"pools,omitempty"`
	Replicas []replicaResult `json:"replica_results,omitempty"`
	// Speculative decoding and KV offload, when they ran (features.go).
	Spec    *specJSON    `json:"speculative_decoding,omitempty"`
	Offload *offloadJSON `json:"kv_offload,omitempty"`
}

type poolJSON struct {
	Name               string `json:"name"`
	Role               string `json:"role"`
	Replicas           int    `json:"replicas"`
	Hardware           string `json:"hardware"`
	TensorParallelSize int    `json:"tensor_parallel_size"`
	DataParallelSize   int    `json:"data_parallel_size"`
	MaxNumSeqs         int    `json:"max_num_seqs"`
	NumGPUBlocks       int    `json:"num_gpu_blocks"`
	KVTransferConfig   string `json:"kv_transfer_config,omitempty"` // --kv-transfer-config as given
	// Disaggregation: timed requests prefilled and decoded (after a KV
	// transfer) by the pool's replicas, the KV bytes they sent and
	// received, and the transfers into the pool (count, mean, p99).
	Prefilled        int64   `json:"requests_prefilled,omitempty"`
	Decoded          int64   `json:"requests_decoded,omitempty"`
	KVBytesSent      int64   `json:"kv_bytes_sent,omitempty"`
	KVBytesReceived  int64   `json:"kv_bytes_received,omitempty"`
	KVTransfers      int64   `json:"kv_transfers,omitempty"`
	MeanKVTransferMs float64 `json:"mean_kv_transfer_ms,omitempty"`
	P99KVTransferMs  float64 `json:"p99_kv_transfer_ms,omitempty"`
}

// replicaResult is one endpoint's share of the timed run.
type replicaResult struct {
	Name            string  `json:"name"`
	Pool            string  `json:"pool"`
	Routed          int64   `json:"routed"`
	Completed       int64   `json:"completed"`
	Steps           int64   `json:"engine_steps"`
	MeanStepMs      float64 `json:"mean_step_ms"`
	Preemptions     int64   `json:"preemptions"`
	PrefixHitRate   float64 `json:"prefix_cache_hit_rate"`
	PeakUsedBlocks  int     `json:"peak_used_blocks"`
	PeakUsedKVShare float64 `json:"peak_kv_usage"`
	Prefilled       int64   `json:"requests_prefilled,omitempty"`
	Decoded         int64   `json:"requests_decoded,omitempty"`
	KVBytesSent     int64   `json:"kv_bytes_sent,omitempty"`
	KVBytesReceived int64   `json:"kv_bytes_received,omitempty"`
	// The replica's speculative decoding and KV offload, when they ran.
	Spec    *specJSON    `json:"speculative_decoding,omitempty"`
	Offload *offloadJSON `json:"kv_offload,omitempty"`
}

// clusterOf fills the cluster part of the result's deployment.
func clusterOf(d *deployment, r *scenario.Resolved, out cluster.Result) {
	if r.RouterName() == "" { // one replica, no router asked for
		return
	}
	d.Router = r.RouterName()
	if hasPrefillPool(r) && r.TransferFabric != nil {
		d.Fabric = r.TransferFabric.Name
	}
	blocks := map[string]int{}
	specKs := map[string]int{}
	offloads := map[string]*engine.OffloadConfig{}
	for i, p := range r.Pools {
		specKs[p.Spec.Name], offloads[p.Spec.Name] = p.Engine.Spec.NumTokens, p.Engine.Offload
		pj := poolJSON{
			Name: p.Spec.Name, Role: p.Spec.Role, Replicas: p.Spec.Replicas, Hardware: p.Chip.Name,
			TensorParallelSize: p.Deployment.TP, DataParallelSize: max(p.Deployment.DP, 1),
			MaxNumSeqs: p.Engine.MaxNumSeqs, NumGPUBlocks: p.Memory.NumBlocks,
			KVTransferConfig: p.Scenario.KVTransferConfig,
		}
		if i < len(out.Pools) {
			op := out.Pools[i]
			pj.Prefilled, pj.Decoded, pj.KVBytesSent, pj.KVBytesReceived = op.Prefilled, op.Decoded, op.KVBytesSent, op.KVBytesReceived
			pj.KVTransfers = op.Transfers
			pj.MeanKVTransferMs, pj.P99KVTransferMs = float64(op.TransferMean)/1e6, float64(op.TransferP99)/1e6
		}
		d.Pools = append(d.Pools, pj)
		blocks[p.Spec.Name] = p.Memory.NumBlocks * max(p.Deployment.DP, 1)
	}
	for _, rr := range out.Replicas {
		x := replicaResult{Name: rr.Name, Pool: rr.Pool, Routed: rr.Routed, Completed: rr.Completed,
			Steps: rr.TimedSteps, Preemptions: rr.Engine.Preemptions, PeakUsedBlocks: rr.Engine.PeakUsedBlocks,
			Prefilled: rr.Prefilled, Decoded: rr.Decoded, KVBytesSent: rr.KVBytesSent, KVBytesReceived: rr.KVBytesReceived}
		if rr.TimedSteps > 0 {
			x.MeanStepMs = float64(rr.StepTime.Total) / float64(rr.TimedSteps) / 1e6
		}
		if rr.Engine.PrefixQueries > 0 {
			x.PrefixHitRate = float64(rr.Engine.PrefixHits) / float64(rr.Engine.PrefixQueries)
		}
		if b := blocks[rr.Pool]; b > 0 {
			x.PeakUsedKVShare = float64(rr.Engine.PeakUsedBlocks) / float64(b)
		}
		x.Spec = specOf(rr.Engine, specKs[rr.Pool], rr.StepTime, 0)
		x.Offload = offloadOf(rr.Engine, offloads[rr.Pool])
		d.Replicas = append(d.Replicas, x)
	}
}

// printReplicas writes the per-replica table under vllm bench's, for a
// cluster run.
func printReplicas(w io.Writer, d deployment) {
	if len(d.Replicas) == 0 {
		return
	}
	fmt.Fprintf(w, "%s\n", centre(" Replicas (router: "+d.Router+") ", 78))
	pd := false
	for _, p := range d.Pools {
		pd = pd || p.Prefilled > 0 || p.Decoded > 0
	}
	if pd {
		// Disaggregated: who prefilled and decoded what, and the KV moved.
		fmt.Fprintf(w, "%-22s %-10s %9s %9s %9s %9s %9s %7s %7s\n", "replica", "pool", "routed", "completed", "prefilled", "decoded", "KV GB", "step ms", "peak KV")
		for _, x := range d.Replicas {
			fmt.Fprintf(w, "%-22s %-10s %9d %9d %9d %9d %9.2f %7.2f %6.1f%%\n", x.Name, x.Pool, x.Routed, x.Completed, x.Prefilled, x.Decoded,
				float64(x.KVBytesSent+x.KVBytesReceived)/1e9, x.MeanStepMs, 100*x.PeakUsedKVShare)
		}
		for _, p := range d.Pools {
			if p.KVTransfers > 0 {
				fmt.Fprintf(w, "KV transfers into %s: %d, %.2f GB, mean %.3f ms, p99 %.3f ms\n", p.Name, p.KVTransfers, float64(p.KVBytesReceived)/1e9, p.MeanKVTransferMs, p.P99KVTransferMs)
			}
		}
		fmt.Fprintln(w, strings.Repeat("=", 78))
		return
	}
	fmt.Fprintf(w, "%-22s %-12s %9s %9s %9s %9s %7s %8s\n", "replica", "pool", "routed", "completed", "steps", "step ms", "hit %", "peak KV")
	for _, x := range d.Replicas {
		fmt.Fprintf(w, "%-22s %-12s %9d %9d %9d %9.2f %7.1f %7.1f%%\n", x.Name, x.Pool, x.Routed, x.Completed, x.Steps, x.MeanStepMs, 100*x.PrefixHitRate, 100*x.PeakUsedKVShare)
	}
	fmt.Fprintln(w, strings.Repeat("=", 78))
}

// centre pads s with '=' to width, as vllm bench's section headers are.
func centre(s string, width int) string {
	if len(s) >= width {
		return s
	}
	left := (width - len(s)) / 2
	return strings.Repeat("=", left) + s + strings.Repeat("=", width-len(s)-left)
}

func deploymentOf(r *scenario.Resolved, out cluster.Result) deployment {
	d := deployment{
		Model: r.Model.ID, Hardware: r.Chip.Name, TensorParallelSize: r.Deployment.TP,
		DataParallelSize: max(r.Deployment.DP, 1), PipelineParallelSize: ppField(r.Deployment.PP),
		MaxNumSeqs: r.Engine.MaxNumSeqs, MaxNumBatchedTokens: r.Engine.MaxNumBatchedTokens,
		MaxModelLen: r.Engine.MaxModelLen, BlockSize: r.Engine.BlockSize,
		GPUMemoryUtilization: r.Deployment.GPUMemoryUtilization, KVCacheDtype: r.Deployment.KVCacheDtype,
		Quantization: r.Deployment.Quantization, EnablePrefixCaching: r.Engine.EnablePrefixCaching,
		EnableChunkedPrefill: r.Engine.EnableChunkedPrefill, LongPrefillTokenThreshold: r.Engine.LongPrefillTokenThreshold,
		EnforceEager: r.Deployment.EnforceEager, NumGPUBlocks: r.Memory.NumBlocks,
		NumGPUBlocksOverridden: r.Memory.Overridden, StepModel: r.Pricer.Name(),
		NumWarmups: r.Scenario.NumWarmups, Seed: r.Scenario.Seed,
		RandomRangeStyle: r.Scenario.RandomRangeStyle, RandomRangeRatio: r.Scenario.RandomRangeRatio,
		RandomPrefixLen: r.Scenario.RandomPrefixLen, Steps: out.TimedSteps, Rejected: out.Rejected,
	}
	clusterOf(&d, r, out)
	if out.TimedSteps > 0 && out.StepTime.Total > 0 {
		tot := float64(out.StepTime.Total)
		d.MeanStepMs = tot / float64(out.TimedSteps) / 1e6
		d.StepComputeShare = float64(out.StepTime.Compute) / tot
		d.StepMemoryShare = float64(out.StepTime.Memory) / tot
		d.StepCommShare = float64(out.StepTime.Comm) / tot
		d.StepLaunchShare = float64(out.StepTime.Launch) / tot
		d.StepHostShare = float64(out.StepTime.Host) / tot
		d.PipelineBubbleShare = float64(out.PipelineBubble) / tot
	}
	// The engine counters span the whole run, warm-ups included, and so
	// does the time their throughputs divide by.
	d.Spec = specOf(out.Engine, specK(r), out.StepTime, out.WarmupDuration+out.Duration)
	d.Offload = offloadOf(out.Engine, offloadConfig(r))
	return d
}

const gib = float64(1 << 30)

// printStartup writes vLLM's own start-up lines (vllm/v1/core/kv_cache_utils.py
// logs these two) so a user can compare them with a server log.
func printStartup(w io.Writer, r *scenario.Resolved) {
	m := r.Memory
	d := r.Deployment
	layout := fmt.Sprintf("TP%d", d.TP)
	if d.DP > 1 {
		layout = fmt.Sprintf("DP%d × TP%d", d.DP, d.TP)
	}
	if d.PP > 1 {
		layout = fmt.Sprintf("PP%d × TP%d", d.PP, d.TP)
	}
	fmt.Fprintf(w, "INFO blis %s: %s on %d× %s (%s), step model %s\n", buildVersion(), r.Model.ID,
		d.TP*max(d.DP, 1)*max(d.PP, 1), strings.ToUpper(r.Chip.Name), layout, r.Pricer.Name())
	// With DP every engine core logs its own pool; they are all this size.
	ranks := 1
	if d.DP > 1 {
		ranks = d.DP
	}
	for i := 0; i < ranks; i++ {
		prefix := ""
		if d.DP > 1 {
			prefix = fmt.Sprintf("(EngineCore_DP%d) ", i)
		}
		fmt.Fprintf(w, "INFO %sGPU KV cache size: %s tokens\n", prefix, commas(m.KVTokens))
		fmt.Fprintf(w, "INFO %sMaximum concurrency for %s tokens per request: %.2fx\n", prefix,
			commas(r.Engine.MaxModelLen), m.MaxConcurrency(r.Engine.MaxModelLen))
	}
	printCluster(w, r, "INFO ")
}

// printCluster names the pools and the router of a cluster run (nothing
// for one replica with no router).
func printCluster(w io.Writer, r *scenario.Resolved, prefix string) {
	if r.RouterName() == "" { // one replica, no router asked for
		return
	}
	fmt.Fprintf(w, "%scluster: %d replicas in %d pools behind router %s\n", prefix, r.Endpoints(), len(r.Pools), r.RouterName())
	for _, p := range r.Pools {
		fmt.Fprintf(w, "%s  pool %s (%s): %d × %s TP%d DP%d, max-num-seqs %d, %s KV tokens per replica\n", prefix,
			p.Spec.Name, p.Spec.Role, p.Spec.Replicas, strings.ToUpper(p.Chip.Name), p.Deployment.TP, max(p.Deployment.DP, 1),
			p.Engine.MaxNumSeqs, commas(p.Memory.KVTokens*max(p.Deployment.DP, 1)))
	}
	if f := r.TransferFabric; f != nil && hasPrefillPool(r) {
		fmt.Fprintf(w, "%s  KV transfers over fabric %s: %d GPUs per node, %s %.0f GB/s per GPU inside a node, %s %.1f GB/s per NIC between nodes\n", prefix,
			f.Name, f.GPUsPerNode, f.NVLink.Kind, f.NVLink.Bandwidth/1e9, f.Network.Kind, f.Network.Bandwidth/1e9)
	}
}

// hasPrefillPool reports whether the run disaggregates prefill.
func hasPrefillPool(r *scenario.Resolved) bool {
	for _, p := range r.Pools {
		if p.Spec.Role == "prefill" {
			return true
		}
	}
	return false
}

func printPlan(w io.Writer, r *scenario.Resolved) error {
	m := r.Memory
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Deployment: %s on %s, TP %d, DP %d, block size %d, max-model-len %d, max-num-seqs %d, max-num-batched-tokens %d\n",
		r.Model.ID, r.Chip.Name, r.Deployment.TP, max(r.Deployment.DP, 1), r.Engine.BlockSize, r.Engine.MaxModelLen, r.Engine.MaxNumSeqs, r.Engine.MaxNumBatchedTokens)
	if pp := r.Deployment.PP; pp > 1 {
		parts := kernel.PPLayerPartition(r.Model.NumLayers, pp)
		fmt.Fprintf(bw, "Pipeline: %d stages of %d GPUs, decoder layers %v; memory below is stage %d's, the one with room for the fewest KV blocks\n",
			pp, r.Deployment.TP, parts, m.PPStage+1)
	}
	fmt.Fprintf(bw, "Memory per GPU (GiB):\n")
	rows := []struct {
		k string
		v float64
	}{
		{"total", m.TotalBytes}, {"budget (gpu-memory-utilization)", m.BudgetBytes},
		{"weights", m.WeightBytes}, {"activation peak", m.ActivationBytes},
		{"CUDA graphs", m.CUDAGraphBytes}, {"non-torch", m.NonTorchBytes},
		{"NCCL buffers", m.NCCLBytes}, {"KV cache", m.KVBytes},
	}
	for _, row := range rows {
		fmt.Fprintf(bw, "  %-34s %8.2f\n", row.k, row.v/gib)
	}
	fmt.Fprintf(bw, "KV bytes per token (per GPU): %.0f\n", m.KVBytesPerToken)
	over := ""
	if m.Overridden {
		over = " (--num-gpu-blocks-override)"
	}
	fmt.Fprintf(bw, "KV pool: %d blocks, %s tokens%s\n", m.NumBlocks, commas(m.KVTokens), over)
	if m.KVNote != "" {
		fmt.Fprintf(bw, "KV cache groups: %s\n", m.KVNote)
	} else if l := m.KVCache; l.Groups > 1 {
		count := func(is func(g int) bool) (n int) {
			for g := range l.Groups {
				if is(g) {
					n++
				}
			}
			return n
		}
		if l.Mamba != 0 {
			fmt.Fprintf(bw, "KV cache groups: %d of %d layers sharing the pool (%d of them Gated DeltaNet state groups, where a request holds one block; blocks of %d tokens); tokens = blocks / groups × block size, as vLLM reports them\n",
				l.Groups, l.GroupSize, count(l.IsMamba), l.BlockSize)
		} else {
			fmt.Fprintf(bw, "KV cache groups: %d of %d layers sharing the pool (%d sliding-window of %d tokens); tokens = blocks / groups × block size, as vLLM reports them\n",
				l.Groups, l.GroupSize, count(l.IsSliding), l.Window)
		}
	}
	if e := kernel.EngramPlan(r.Deployment); e != "" {
		fmt.Fprintf(bw, "Engram: %s\n", e)
	}
	fmt.Fprintf(bw, "Step model: %s\n", r.Pricer.Name())
	if s, ok := r.Pricer.(interface{ Substitutions() []string }); ok {
		for _, x := range s.Substitutions() {
			fmt.Fprintf(bw, "  law substitution: %s\n", x)
		}
	}
	fmt.Fprintf(bw, "Maximum concurrency for %s tokens per request: %.2fx\n",
		commas(r.Engine.MaxModelLen), m.MaxConcurrency(r.Engine.MaxModelLen))
	printStepPrice(bw, r)
	printCluster(bw, r, "")
	return bw.Flush()
}

// printStepPrice breaks two typical steps down by operator: a decode step
// of max-num-seqs rows (at most 256) at a 1,024-token context (capped by
// max-model-len), and one request's prefill of max-num-batched-tokens
// tokens (capped by max-model-len) from an empty cache.
func printStepPrice(w io.Writer, r *scenario.Resolved) {
	if pl, ok := r.Pricer.(*kernel.Pipeline); ok {
		for i, st := range pl.Stages {
			sampled := i == len(pl.Stages)-1
			printStagePrice(w, r, st, fmt.Sprintf("pipeline stage %d of %d", i+1, len(pl.Stages)), sampled)
			if !sampled {
				n, s := sampleSteps(r)
				fmt.Fprintf(w, "  %-42s %7s %-8s %9.3f %9.3f\n", "send to the next stage (hidden + residual)", "", "comm", ms(pl.SendTime(i, n)), ms(pl.SendTime(i, s)))
			}
		}
		return
	}
	printStagePrice(w, r, r.Pricer, "", true)
}

// sampleSteps are printStepPrice's two steps' sizes: the decode step's rows
// and the prefill's prompt tokens.
func sampleSteps(r *scenario.Resolved) (rows, prompt int) {
	return min(r.Engine.MaxNumSeqs, 256), min(r.Engine.MaxNumBatchedTokens, r.Engine.MaxModelLen-1)
}

// printStagePrice is printStepPrice for one pricer (one pipeline stage when
// stage names it; a stage before the last samples nothing).
func printStagePrice(w io.Writer, r *scenario.Resolved, pr kernel.Pricer, stage string, sampled bool) {
	ex, ok := pr.(kernel.Explainer)
	if !ok {
		return
	}
	n, s := sampleSteps(r)
	ctx := min(1024, r.Engine.MaxModelLen-1)
	dec := kernel.Batch{NumDecode: n, DecodeTokens: n, DecodeContext: int64(n * ctx), Sampled: n}
	pre := kernel.Batch{NumPrefill: 1, PrefillTokens: s, PrefillAttnPairs: float64(s) * float64(s+1) / 2, Sampled: 1}
	group := ""
	if dp := r.Deployment.DP; dp > 1 && r.Model.IsMoE() {
		// Every rank of the lockstep group with the same batch: the experts
		// and the DP collectives see all ranks' tokens.
		dec.GroupTokens, pre.GroupTokens = dp*n, dp*s
		group = fmt.Sprintf("; on each of %d DP ranks at once", dp)
	}
	if stage != "" {
		group += "; " + stage
	}
	if !sampled {
		dec.Sampled, pre.Sampled = 0, 0
	}
	d, p := ex.Explain(&dec), ex.Explain(&pre)
	fmt.Fprintf(w, "Step price per operator, ms (decode: %d rows at %s-token context; prefill: one %s-token prompt%s):\n",
		n, commas(ctx), commas(s), group)
	fmt.Fprintf(w, "  %-42s %7s %-8s %9s %9s\n", "operator", "layers", "resource", "decode", "prefill")
	for i := range d {
		fmt.Fprintf(w, "  %-42s %7g %-8s %9.3f %9.3f\n", d[i].Name, d[i].Count, d[i].Resource, ms(d[i].Time), ms(p[i].Time))
	}
	bd, bp := pr.StepTime(&dec), pr.StepTime(&pre)
	if bd.Launch > 0 || bp.Launch > 0 {
		fmt.Fprintf(w, "  %-42s %7s %-8s %9.3f %9.3f\n", "launch gaps (no full CUDA graph)", "", "launch", ms(bd.Launch), ms(bp.Launch))
	}
	fmt.Fprintf(w, "  %-42s %7s %-8s %9.3f %9.3f\n", "host (CPU side of the step)", "", "host", ms(bd.Host), ms(bp.Host))
	fmt.Fprintf(w, "  %-42s %7s %-8s %9.3f %9.3f\n", "step total", "", "", ms(bd.Total), ms(bp.Total))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ppField is --pipeline-parallel-size for the result file: 0 (left out)
// without pipeline parallelism.
func ppField(pp int) int {
	if pp > 1 {
		return pp
	}
	return 0
}
