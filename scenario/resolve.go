package scenario

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"blis/catalog"
	"blis/engine"
	"blis/kernel"
	"blis/metrics"
	"blis/router"
	"blis/workload"
)

// Resolved is a scenario bound to the catalog, with every vLLM default
// filled in: what the simulator runs, and what the result file reports.
type Resolved struct {
	Scenario   Scenario
	Model      *catalog.Model
	Chip       *catalog.Chip
	Deployment kernel.Deployment
	Memory     kernel.MemoryPlan
	Engine     engine.Config
	Random     workload.RandomSpec
	Pricer     kernel.Pricer
	// Source yields the scenario's requests; it is single-use.
	Source workload.Source
	// Notes are INFO lines for stderr: settings accepted that change
	// nothing in a simulation, fallbacks taken.
	Notes []string
	// Pools are the model-server pools behind the router (one, of this
	// deployment, when the scenario has none).
	Pools     []Pool
	routerCfg *router.Config
	// TransferFabric is the network disaggregated requests' KV crosses
	// (--fabric, else the chip's own: catalog.DefaultFabric).
	TransferFabric *catalog.Fabric
	connector      connectorInfo // --kv-transfer-config
	pdRouter       bool          // the router is llm-d's P/D default
}

// vLLM's batch defaults for `vllm serve` (OPENAI_API_SERVER usage context),
// vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (v0.10–v0.11): GPUs
// with ≥ 70 GiB that are not A100s get the larger values.
const (
	bigGPUBytes           = 70 << 30
	bigDefaultBatchTokens = 8192
	bigDefaultMaxSeqs     = 1024
	smallDefaultBatchTok  = 2048
	smallDefaultMaxSeqs   = 256
)

// Bounds BLIS itself needs (vLLM has none): the number of data-parallel
// ranks it simulates, and of aiperf lanes it keeps.
const (
	MaxDataParallel = 4096
	MaxLanes        = 1 << 20
)

// DefaultNumPrompts is vllm bench serve's --num-prompts (1000), which the
// datasets it samples (random, sharegpt, prefix_repetition) take when
// --num-prompts is left at 0; traces replay every record.
const DefaultNumPrompts = 1000

func bad(key, value, msg string) error { return &InputError{Key: "--" + key, Value: value, Msg: msg} }

// Resolve checks s and binds it to the catalog. Every error is an
// *InputError naming the flag.
func (s Scenario) Resolve() (*Resolved, error) {
	if err := s.applyGenericLengths(); err != nil {
		return nil, err
	}
	r := &Resolved{Scenario: s, Notes: s.benchNotes()}
	// With pools, each pool resolves its own deployment and the first
	// stands for the run in reports (model, chip, KV size).
	if len(s.Pools) == 0 {
		if err := s.resolveServe(r); err != nil {
			return nil, err
		}
	}
	if err := r.resolveCluster(); err != nil {
		return nil, err
	}

	r.Random = workload.RandomSpec{
		InputLen: s.RandomInputLen, OutputLen: s.RandomOutputLen,
		RangeRatio: s.RandomRangeRatio, RangeStyle: s.RandomRangeStyle,
		PrefixLen: s.RandomPrefixLen, NumPrompts: cmp.Or(s.NumPrompts, DefaultNumPrompts),
		RequestRate: s.RequestRate, Burstiness: s.Burstiness,
	}
	if len(s.Load.Stages) > 0 {
		// The stages set the count; vllm bench's default does not apply.
		r.Random.NumPrompts = s.NumPrompts
		if s.NumPrompts == 0 {
			r.Random.NumPrompts = int(min(s.Load.Requests(), math.MaxInt32))
		}
	}
	var err error
	if r.Source, err = workload.Open(s.traceSpec(r.Random)); err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	if err := r.checkServesSomething(); err != nil {
		workload.Close(r.Source)
		return nil, err
	}
	return r, nil
}

// resolveServe binds s's `vllm serve` settings to the catalog: model, chip,
// memory plan, step pricer and engine configuration, into r.
func (s Scenario) resolveServe(r *Resolved) error {
	var err error
	if r.Model, err = catalog.LookupModel(s.Model); err != nil {
		return bad("model", s.Model, err.Error())
	}
	if r.Chip, err = catalog.LookupChip(s.Hardware); err != nil {
		return bad("hardware", s.Hardware, err.Error())
	}
	if err := s.checkRanges(); err != nil {
		return err
	}
	if err := s.checkBackend(); err != nil {
		return err
	}

	big := r.Chip.MemBytes >= bigGPUBytes && !strings.HasPrefix(r.Chip.Name, "a100")
	mnbt, mns := s.MaxNumBatchedTokens, s.MaxNumSeqs
	maxLen := s.MaxModelLen
	if maxLen == 0 {
		maxLen = r.Model.MaxPositions
	}
	if maxLen > r.Model.MaxPositions && r.Model.MaxPositions > 0 {
		return bad("max-model-len", fmt.Sprint(maxLen), fmt.Sprintf(
			"larger than the model's max_position_embeddings %d", r.Model.MaxPositions))
	}
	if mnbt == 0 {
		mnbt = smallDefaultBatchTok
		if big {
			mnbt = bigDefaultBatchTokens
		}
		if !s.EnableChunkedPrefill {
			mnbt = max(mnbt, maxLen) // vLLM: without chunking a whole prompt must fit one step
		}
	}
	if mns == 0 {
		mns = smallDefaultMaxSeqs
		if big {
			mns = bigDefaultMaxSeqs
		}
		mns = min(mns, mnbt)
	}

	// vLLM's SchedulerConfig.verify_max_model_len (vllm/config/scheduler.py,
	// main @ 01230b40128e), with its messages.
	if mnbt < mns {
		key, v := "max-num-batched-tokens", mnbt
		if s.MaxNumBatchedTokens == 0 {
			key, v = "max-num-seqs", mns // the token budget is vLLM's default
		}
		return bad(key, fmt.Sprint(v), fmt.Sprintf("max_num_batched_tokens (%d) must be greater than or equal to max_num_seqs (%d)", mnbt, mns))
	}
	if !s.EnableChunkedPrefill && mnbt < maxLen {
		return bad("max-num-batched-tokens", fmt.Sprint(mnbt), fmt.Sprintf("max_num_batched_tokens (%d) is smaller than max_model_len (%d). "+
			"This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences. "+
			"Please increase max_num_batched_tokens or decrease max_model_len (or enable chunked prefill).", mnbt, maxLen))
	}

	blockSize := s.BlockSize
	if r.Model.IsDSA() {
		// DeepSeek sparse attention runs with 64-token blocks whatever
		// --block-size says: vLLM's CUDA platform forces block_size=64 when
		// the config has index_topk (vllm/platforms/cuda.py, v0.11–0.14),
		// and later the sparse MLA and indexer backends support only 64.
		blockSize = 64
	}

	cc, err := parseCompilationConfig(s.CompilationConfig)
	if err != nil {
		return err
	}
	capSize := s.MaxCUDAGraphCaptureSize
	if cc.MaxCaptureSize > 0 {
		capSize = cc.MaxCaptureSize
	}
	r.Deployment = kernel.Deployment{
		Model: r.Model, Chip: r.Chip, TP: s.TensorParallelSize, DP: s.DataParallelSize, PP: s.PipelineParallelSize,
		Quantization: s.Quantization, KVCacheDtype: s.KVCacheDtype,
		MaxNumBatchedTokens: mnbt, MaxNumSeqs: mns, MaxModelLen: maxLen,
		BlockSize: blockSize, GPUMemoryUtilization: s.GPUMemoryUtilization,
		NumGPUBlocksOverride: s.NumGPUBlocksOverride, EnforceEager: s.EnforceEager,
		CUDAGraphMode: cc.Mode, MaxCUDAGraphCaptureSize: capSize, CaptureSizes: cc.CaptureSizes,
		AsyncScheduling: s.AsyncScheduling, ExpertParallel: s.EnableExpertParallel,
		MoEBackend: s.MoEBackend, All2AllBackend: s.All2AllBackend,
	}
	if r.Deployment.Engram, err = parseEngramConfig(s.EngramConfig); err != nil {
		return err
	}
	prefixCaching := s.EnablePrefixCaching
	if bs := kernel.HybridBlockSize(r.Deployment); bs > 0 {
		// Hybrid linear attention (kernel/mamba.go): vLLM raises the
		// attention block size to hold a GDN state page, and turns prefix
		// caching off.
		if bs != blockSize {
			r.Notes = append(r.Notes, fmt.Sprintf("INFO Setting attention block size to %d tokens to ensure that attention page size is >= mamba page size.", bs))
		}
		blockSize, r.Deployment.BlockSize = bs, bs
		if on, note := kernel.HybridPrefixCaching(r.Deployment); !on && prefixCaching {
			prefixCaching = false
			r.Notes = append(r.Notes, "INFO "+note)
		}
	}
	async := s.AsyncScheduling
	if pp := s.PipelineParallelSize; pp > 1 {
		if s.DataParallelSize > 1 {
			return bad("pipeline-parallel-size", fmt.Sprint(pp), "must be 1 when --data-parallel-size > 1: BLIS does not model pipeline stages inside data-parallel ranks")
		}
		if pp > r.Model.NumLayers {
			return bad("pipeline-parallel-size", fmt.Sprint(pp), fmt.Sprintf("at most the %d decoder layers of %s", r.Model.NumLayers, r.Model.ID))
		}
		if async {
			// vLLM (vllm/engine/arg_utils.py, v0.11) refuses
			// --async-scheduling with pipeline-parallel-size > 1, and does
			// not turn it on by default then: the batch queue is what
			// overlaps steps.
			async = false
			r.Deployment.AsyncScheduling = false
			r.Notes = append(r.Notes, fmt.Sprintf("INFO --pipeline-parallel-size %d: async scheduling off, as vLLM has it with pipeline parallelism (its batch queue overlaps the steps)", pp))
		}
	}
	if s.All2AllBackend != "" && !slices.Contains(kernel.All2AllBackends(), s.All2AllBackend) {
		return bad("all2all-backend", s.All2AllBackend, "one of "+strings.Join(kernel.All2AllBackends(), ", "))
	}
	if s.Fabric != "" {
		if r.Deployment.Fabric, err = catalog.LookupFabric(s.Fabric); err != nil {
			return bad("fabric", s.Fabric, err.Error())
		}
	}
	if r.connector, err = parseKVTransfer(s.KVTransferConfig); err != nil {
		return err
	}
	spec, err := s.resolveSpec()
	if err != nil {
		return err
	}
	if r.Deployment.Spec, err = spec.kernelSpec(); err != nil {
		return err
	}
	if err := kernel.Validate(r.Deployment); err != nil && r.Deployment.Spec.NumTokens > 0 {
		return bad("speculative-config", s.SpeculativeConfig, err.Error())
	}
	specNotes, err := spec.acceptance(s, r.Model)
	if err != nil {
		return err
	}
	r.Notes = append(r.Notes, specNotes...)
	if r.Memory, err = kernel.PlanMemory(r.Deployment); err != nil {
		return &InputError{Msg: err.Error()}
	}
	var note string
	if r.Pricer, note, err = newPricer(s.StepModel, r.Deployment); err != nil {
		return err
	}
	if r.Deployment.PP > 1 {
		name := s.StepModel
		p, err := kernel.NewPipeline(r.Deployment, func(d kernel.Deployment) (kernel.Pricer, error) {
			p, _, err := newPricer(name, d)
			return p, err
		})
		if err != nil {
			return &InputError{Msg: err.Error()}
		}
		r.Pricer = p
	}
	if note != "" {
		r.Notes = append(r.Notes, note)
	}
	r.Engine = engine.Config{
		MaxNumSeqs: mns, MaxNumBatchedTokens: mnbt,
		LongPrefillTokenThreshold: s.LongPrefillTokenThreshold,
		EnableChunkedPrefill:      s.EnableChunkedPrefill,
		EnablePrefixCaching:       prefixCaching,
		BlockSize:                 blockSize,
		NumGPUBlocks:              r.Memory.NumBlocks,
		MaxModelLen:               maxLen,
		KVCache:                   r.Memory.KVCache,
		AsyncScheduling:           async,
		MaxConcurrentBatches:      max(s.PipelineParallelSize, 1),
		Spec:                      spec.engineSpec(s.Seed),
	}
	if r.Engine.Offload, err = r.resolveOffload(); err != nil {
		return err
	}
	if err := r.Engine.Validate(); err != nil {
		return &InputError{Msg: err.Error()}
	}

	return nil
}

// checkServesSomething fails at start-up when the engine would refuse even
// the shortest request the workload can send: every request would fail
// (vLLM answers each with HTTP 400, or, for a KV pool smaller than one
// request, never schedules it), and a run that serves nothing is an input
// mistake, not a result. Traces are checked request by request instead.
func (r *Resolved) checkServesSomething() error {
	prompt, output, ok := workload.Shortest(r.Scenario.traceSpec(r.Random))
	if !ok {
		return nil
	}
	eng, err := engine.New(r.Engine)
	if err != nil {
		return &InputError{Msg: err.Error()}
	}
	why := eng.Refusal(prompt, output)
	if why == "" {
		return nil
	}
	key, val := "max-model-len", fmt.Sprint(r.Engine.MaxModelLen)
	if strings.HasPrefix(why, "kv_capacity") {
		key, val = "num-gpu-blocks-override", fmt.Sprint(r.Memory.NumBlocks)
	}
	return bad(key, val, fmt.Sprintf("every request would fail: the shortest %s request (%d prompt + %d output tokens) is refused with %q",
		r.Scenario.Dataset(), prompt, output, why))
}

// checkRanges rejects values no deployment could have, naming the flag.
func (s Scenario) checkRanges() error {
	pos := []struct {
		key string
		v   int
	}{
		{"tensor-parallel-size", s.TensorParallelSize},
		{"data-parallel-size", s.DataParallelSize},
		{"pipeline-parallel-size", s.PipelineParallelSize},
		{"block-size", s.BlockSize},
	}
	if s.Dataset() == workload.DatasetRandom {
		pos = append(pos, []struct {
			key string
			v   int
		}{{"random-input-len", s.RandomInputLen}, {"random-output-len", s.RandomOutputLen}}...)
	}
	for _, p := range pos {
		if p.v < 1 {
			return bad(p.key, fmt.Sprint(p.v), "must be ≥ 1")
		}
	}
	if s.DataParallelSize > MaxDataParallel {
		return bad("data-parallel-size", fmt.Sprint(s.DataParallelSize), fmt.Sprintf("at most %d ranks: BLIS simulates every rank's engine and routes each request over all of them, so a run's time grows with ranks × requests", MaxDataParallel))
	}
	nonNeg := []struct {
		key string
		v   int
	}{
		{"max-num-seqs", s.MaxNumSeqs},
		{"max-num-batched-tokens", s.MaxNumBatchedTokens},
		{"max-model-len", s.MaxModelLen},
		{"num-gpu-blocks-override", s.NumGPUBlocksOverride},
		{"long-prefill-token-threshold", s.LongPrefillTokenThreshold},
		{"random-prefix-len", s.RandomPrefixLen},
		{"max-concurrency", s.MaxConcurrency},
		{"num-warmups", s.NumWarmups},
		{"num-prompts", s.NumPrompts},
	}
	for _, p := range nonNeg {
		if p.v < 0 {
			return bad(p.key, fmt.Sprint(p.v), "must be ≥ 0 (0 means vLLM's default or off)")
		}
	}
	if !(s.GPUMemoryUtilization > 0 && s.GPUMemoryUtilization <= 1) {
		return bad("gpu-memory-utilization", fmt.Sprint(s.GPUMemoryUtilization), "must be in (0, 1]")
	}
	if !(s.RequestRate > 0) {
		return bad("request-rate", fmt.Sprint(s.RequestRate), "must be > 0 requests/s, or inf")
	}
	if !(s.FixedScheduleSpeedup > 0) || math.IsInf(s.FixedScheduleSpeedup, 0) {
		return bad("fixed-schedule-speedup", fmt.Sprint(s.FixedScheduleSpeedup), "must be a finite number > 0 (1: the trace's own pace)")
	}
	if !(s.Burstiness > 0) {
		return bad("burstiness", fmt.Sprint(s.Burstiness), "must be > 0")
	}
	switch s.BlockSize {
	case 1, 8, 16, 32, 64, 128, 256:
	default:
		return bad("block-size", fmt.Sprint(s.BlockSize), "vLLM allows 1, 8, 16, 32, 64, 128 or 256")
	}
	for _, p := range s.MetricPercentiles {
		if !(p > 0 && p < 100) && p != 100 {
			return bad("metric-percentiles", fmt.Sprint(p), "each percentile must be in (0, 100]")
		}
	}
	for _, m := range strings.Split(s.PercentileMetrics, ",") {
		switch strings.TrimSpace(m) {
		case "ttft", "tpot", "itl", "e2el", "":
		default:
			return bad("percentile-metrics", m, "allowed: ttft, tpot, itl, e2el")
		}
	}
	return s.checkClient()
}

// maxSeconds bounds every client time setting (about 31 years), so it
// converts to a time.Duration.
const maxSeconds = 1e9

// checkClient checks the client group's settings.
func (s Scenario) checkClient() error {
	switch s.ConcurrencyMode {
	case "auto", "requests", "lanes":
	default:
		return bad("concurrency-mode", s.ConcurrencyMode, "allowed: auto, requests, lanes")
	}
	switch s.CacheBust {
	case "none", "first_turn_prefix", "system_prefix":
	default:
		return bad("cache-bust", s.CacheBust, "allowed: none, first_turn_prefix, system_prefix")
	}
	if s.WarmupRequestsPerLane < 0 {
		return bad("warmup-requests-per-lane", fmt.Sprint(s.WarmupRequestsPerLane), "must be ≥ 0 (0: none beyond the primers)")
	}
	for _, r := range []struct {
		key string
		v   float64
	}{{"trajectory-start-min-ratio", s.TrajectoryStartMinRatio}, {"trajectory-start-max-ratio", s.TrajectoryStartMaxRatio}} {
		if !(r.v >= 0 && r.v <= 1) {
			return bad(r.key, fmt.Sprint(r.v), "must be in [0, 1]")
		}
	}
	if s.TrajectoryStartMinRatio > s.TrajectoryStartMaxRatio {
		return bad("trajectory-start-min-ratio", fmt.Sprint(s.TrajectoryStartMinRatio),
			fmt.Sprintf("must be ≤ --trajectory-start-max-ratio (%v)", s.TrajectoryStartMaxRatio))
	}
	for _, r := range []struct {
		key string
		v   float64
	}{
		{"trace-idle-gap-cap-seconds", s.TraceIdleGapCapSeconds},
		{"system-idle-gap-cap-seconds", s.SystemIdleGapCapSeconds},
		{"benchmark-duration", s.BenchmarkDuration},
		{"request-timeout-seconds", s.RequestTimeoutSeconds},
	} {
		if !(r.v >= 0 && r.v <= maxSeconds) {
			return bad(r.key, fmt.Sprint(r.v), fmt.Sprintf("must be in [0, %g] seconds (0: off)", maxSeconds))
		}
	}
	if !slices.Contains(kernel.MoEBackends(), s.MoEBackend) {
		return bad("moe-backend", s.MoEBackend, "allowed: "+strings.Join(kernel.MoEBackends(), ", "))
	}
	if _, err := catalog.LookupStack("vllm"); err != nil {
		return err
	}
	if f := s.FrontendLatencyMs; !(f >= 0 && f <= 60000) {
		return bad("frontend-latency-ms", fmt.Sprint(f), "must be in [0, 60000] ms (0: the engine's time only)")
	}
	if g := s.BenchmarkGracePeriod; !(g >= 0 && (g <= maxSeconds || math.IsInf(g, 1))) {
		return bad("benchmark-grace-period", fmt.Sprint(g), fmt.Sprintf("must be in [0, %g] seconds, or inf", maxSeconds))
	}
	if s.Lanes() {
		switch {
		case s.MaxConcurrency < 1:
			return bad("max-concurrency", fmt.Sprint(s.MaxConcurrency), "lanes need ≥ 1: it is the number of lanes")
		case s.MaxConcurrency > MaxLanes:
			return bad("max-concurrency", fmt.Sprint(s.MaxConcurrency), fmt.Sprintf("at most %d lanes: BLIS keeps each lane (an aiperf worker replaying one trajectory) in memory", MaxLanes))
		case s.NumWarmups > 0:
			return bad("num-warmups", fmt.Sprint(s.NumWarmups), "is vllm bench's warm-up; with lanes use --warmup-requests-per-lane")
		case !math.IsInf(s.RequestRate, 1):
			return bad("request-rate", fmt.Sprint(s.RequestRate), "lanes are closed loops: each sends its next trajectory when one ends; leave --request-rate at inf")
		}
	}
	return nil
}

// Lanes reports whether the client runs lanes (aiperf's agentic replay)
// rather than vllm bench's per-request cap: --concurrency-mode lanes, or
// auto with a setting only agentic replay has.
func (s Scenario) Lanes() bool {
	switch s.ConcurrencyMode {
	case "lanes":
		return true
	case "auto":
		return s.WarmupRequestsPerLane > 0 || s.TrajectoryStartMaxRatio > 0
	}
	return false
}

// Seconds converts a client setting in seconds to a duration; +Inf
// becomes −1 (no limit).
func Seconds(x float64) time.Duration {
	if math.IsInf(x, 1) {
		return -1
	}
	return time.Duration(math.Round(x * float64(time.Second)))
}

// Stages are the scenario's inference-perf load stages as metrics reports
// them (nil without --stages).
func (r *Resolved) Stages() []metrics.Stage {
	n := r.Scenario.Load.StageRequests()
	var out []metrics.Stage
	for i, st := range r.Scenario.Load.Stages {
		out = append(out, metrics.Stage{Rate: st.Rate, Duration: st.Duration, Requests: n[i]})
	}
	return out
}

// Reopen opens the scenario's workload again from its start (the same
// requests: sources are deterministic), for clients that replay a corpus
// more than once.
func (r *Resolved) Reopen() (workload.Source, error) {
	src, err := workload.Open(r.Scenario.traceSpec(r.Random))
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	return src, nil
}

// newPricer builds the step pricer --step-model names. auto takes the
// fitted pricer, and falls back to the roofline only where the chip has no
// fitted kernel coefficients (kernel.ErrNoCoefficients), with a note for
// stderr saying so; any other error of the fitted pricer is an error.
func newPricer(name string, d kernel.Deployment) (kernel.Pricer, string, error) {
	switch name {
	case "roofline":
		p, err := kernel.NewRoofline(d)
		if err != nil {
			return nil, "", &InputError{Msg: err.Error()}
		}
		return p, "", nil
	case "fitted", "auto", "":
		p, err := kernel.NewFitted(d)
		if err == nil {
			return p, "", nil
		}
		if name != "fitted" && errors.Is(err, kernel.ErrNoCoefficients) {
			p, _, err := newPricer("roofline", d)
			return p, "INFO step model roofline-v1: no fitted kernel coefficients for " + d.Chip.Name, err
		}
		return nil, "", bad("step-model", cmp.Or(name, "auto"), err.Error())
	}
	return nil, "", bad("step-model", name, "allowed: auto, fitted, roofline")
}

// traceSpec is the workload the scenario names.
func (s Scenario) traceSpec(random workload.RandomSpec) workload.TraceSpec {
	return workload.TraceSpec{
		DatasetName: s.DatasetName, DatasetPath: s.DatasetPath, InputFile: s.InputFile,
		CustomDatasetType: s.CustomDatasetType, NumPrompts: s.NumPrompts,
		RequestRate: s.RequestRate, Burstiness: s.Burstiness, Seed: s.Seed,
		FixedSchedule: s.FixedSchedule, FixedScheduleAutoOffset: s.FixedScheduleAutoOffset,
		FixedScheduleStartOffset: s.FixedScheduleStartOffset, FixedScheduleEndOffset: s.FixedScheduleEndOffset,
		FixedScheduleSpeedup: s.FixedScheduleSpeedup, ISLBlockSize: s.ISLBlockSize, Lenient: s.TraceSkipInvalid,
		Random: random, ShareGPTOutputLen: s.ShareGPTOutputLen, DisableShuffle: s.DisableShuffle,
		PrefixRepetition: s.PrefixRepetition, SharedPrefix: s.SharedPrefix, Agentic: s.Agentic, Load: s.Load,
	}
}

// Dataset is the workload's effective name: --dataset-name, else aiperf's
// --custom-dataset-type, else random.
func (s Scenario) Dataset() string {
	return cmp.Or(s.DatasetName, s.CustomDatasetType, workload.DatasetRandom)
}

// compilationConfig is what BLIS models of vllm serve --compilation-config.
type compilationConfig struct {
	Mode           string
	MaxCaptureSize int
	CaptureSizes   []int
}

// Keys of vLLM's CompilationConfig (vllm/config/compilation.py) that BLIS
// accepts but does not model: they change kernels and fusions, not when
// CUDA graphs replay.
var unmodelledCompilationKeys = []string{"level", "mode", "debug_dump_path", "cache_dir", "backend", "custom_ops",
	"splitting_ops", "use_inductor", "compile_sizes", "inductor_compile_config", "inductor_passes", "cudagraph_num_of_warmups",
	"cudagraph_copy_inputs", "full_cuda_graph", "use_inductor_graph_partition", "pass_config", "max_capture_size",
	"local_cache_dir", "compile_mm_encoder", "fast_moe_cold_start", "dynamic_shapes_config", "use_cudagraph"}

// parseCompilationConfig reads the JSON of --compilation-config strictly:
// unknown keys and wrong types are errors naming the key.
func parseCompilationConfig(js string) (compilationConfig, error) {
	var cc compilationConfig
	if strings.TrimSpace(js) == "" {
		return cc, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &raw); err != nil {
		return cc, bad("compilation-config", js, "not a JSON object: "+err.Error())
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := raw[k]
		switch k {
		case "cudagraph_mode":
			if err := json.Unmarshal(v, &cc.Mode); err != nil || !slices.Contains(kernel.CUDAGraphModes(), cc.Mode) {
				return cc, bad("compilation-config", string(v), "cudagraph_mode: allowed "+strings.Join(kernel.CUDAGraphModes(), ", "))
			}
		case "max_cudagraph_capture_size":
			if err := json.Unmarshal(v, &cc.MaxCaptureSize); err != nil || cc.MaxCaptureSize < 1 {
				return cc, bad("compilation-config", string(v), "max_cudagraph_capture_size: a positive integer")
			}
		case "cudagraph_capture_sizes":
			if err := json.Unmarshal(v, &cc.CaptureSizes); err != nil || len(cc.CaptureSizes) == 0 || slices.Min(cc.CaptureSizes) < 1 {
				return cc, bad("compilation-config", string(v), "cudagraph_capture_sizes: a list of positive integers")
			}
		default:
			if !slices.Contains(unmodelledCompilationKeys, k) {
				return cc, bad("compilation-config", k, "unknown key; BLIS models cudagraph_mode, max_cudagraph_capture_size, cudagraph_capture_sizes and accepts vLLM's other CompilationConfig keys")
			}
		}
	}
	return cc, nil
}
