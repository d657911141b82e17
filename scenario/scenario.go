// Package scenario is one simulated experiment as a serving engineer states
// it: the `vllm serve` arguments of the deployment, the `vllm bench serve`
// arguments of the load, and where results go. The same keys work as
// command-line flags and as YAML keys, so a user pastes what they ran.
// Resolve turns a scenario into the catalog entries and the engine, kernel,
// workload and client settings the simulator needs.
package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"blis/catalog"
	"blis/internal/inputerr"
	suggestpkg "blis/internal/suggest"
	"blis/kernel"
	"blis/router"
	"blis/workload"
)

// Scenario holds every setting. Zero values of the "0 = vLLM's default"
// fields are resolved in Resolve, because vLLM's defaults depend on the chip
// and the model.
type Scenario struct {
	// vllm serve
	Model                     string
	Hardware                  string
	TensorParallelSize        int
	DataParallelSize          int
	PipelineParallelSize      int
	MaxNumSeqs                int // 0 = vLLM's default for the chip
	MaxNumBatchedTokens       int // 0 = vLLM's default for the chip
	GPUMemoryUtilization      float64
	MaxModelLen               int // 0 = the model's max_position_embeddings
	BlockSize                 int
	KVCacheDtype              string
	Quantization              string
	NumGPUBlocksOverride      int
	EnablePrefixCaching       bool
	EnableChunkedPrefill      bool
	LongPrefillTokenThreshold int
	EnforceEager              bool
	CompilationConfig         string // JSON, as vllm serve --compilation-config
	MaxCUDAGraphCaptureSize   int
	AsyncScheduling           bool
	EnableExpertParallel      bool
	MoEBackend                string // fused-MoE kernel family (kernel.MoEBackends())
	All2AllBackend            string // --all2all-backend: expert-parallel token dispatch (All2AllBackends())
	KVTransferConfig          string // --kv-transfer-config: vLLM's KVTransferConfig JSON (pd.go)
	// Speculative decoding (spec.go): vLLM's --speculative-config JSON, and
	// BLIS's acceptance schedule for it.
	SpeculativeConfig string
	SpecAcceptance    string
	// EngramConfig is vLLM's --engram-config JSON (engram.go): where a
	// model's Engram tables live.
	EngramConfig string
	// KV offload (offload.go): vLLM's shortcut flags, and LMCache's local
	// CPU size (LMCACHE_MAX_LOCAL_CPU_SIZE, GB per worker).
	KVOffloadingSize       float64 // GiB over the replica's GPUs (0 = off)
	KVOffloadingBackend    string  // native or lmcache
	LMCacheMaxLocalCPUSize float64 // GB per TP rank (0 = LMCache's default)
	// LMCacheMaxLocalDiskSize is LMCache's local disk tier
	// (LMCACHE_MAX_LOCAL_DISK_SIZE, GB per worker; 0 = none).
	LMCacheMaxLocalDiskSize float64
	// MooncakeConfig is mooncake_config.json's text (MOONCAKE_CONFIG_PATH)
	// for a MooncakeStoreConnector (mooncake.go).
	MooncakeConfig   string
	KVOffloadStorage string // a secondary tier's capacity, bandwidths and latency (offload.go)

	// vllm bench serve
	DatasetName       string
	RandomInputLen    int
	RandomOutputLen   int
	RandomRangeRatio  float64
	RandomRangeStyle  string
	RandomPrefixLen   int
	NumPrompts        int
	MaxConcurrency    int // 0 = no cap
	RequestRate       float64
	Burstiness        float64
	NumWarmups        int
	Seed              int64
	MetricPercentiles []float64
	PercentileMetrics string
	Backend           string // --backend: one of Backends(), written as the result's backend
	Endpoint          string // --endpoint: checked against Backend, else no effect
	InputLen          int    // --input-len: sets RandomInputLen (0: unset)
	OutputLen         int    // --output-len: sets the datasets' output lengths (0: unset)
	IgnoreEOS         bool   // --ignore-eos: BLIS always honours output lengths
	Goodput           []SLO  // --goodput objectives
	Tokenizer         string // --tokenizer: written as tokenizer_id (default: the model)
	// NoEffect holds the vllm bench serve flags given that a simulation
	// cannot honour (noEffectFlags), by name.
	NoEffect map[string]string

	// traces and other datasets (vllm bench / aiperf / inference-perf names)
	DatasetPath              string
	InputFile                string
	CustomDatasetType        string
	FixedSchedule            bool
	FixedScheduleAutoOffset  bool
	FixedScheduleStartOffset int64
	FixedScheduleEndOffset   int64
	FixedScheduleSpeedup     float64
	ISLBlockSize             int
	TraceSkipInvalid         bool
	ShareGPTOutputLen        int
	DisableShuffle           bool
	PrefixRepetition         workload.PrefixRepetitionSpec
	SharedPrefix             workload.SharedPrefixSpec
	Agentic                  workload.AgenticSpec
	Load                     workload.LoadSpec // --stages, --load-type, --load-interval (inference-perf's load section)

	// client (aiperf names; cluster/README.md describes each)
	ConcurrencyMode         string  // "auto", "requests" (vllm bench) or "lanes" (aiperf agentic replay)
	WarmupRequestsPerLane   int     // lanes: warm-up requests per lane, the primer included
	TrajectoryStartMinRatio float64 // lanes: initial start turn, as a share of the trajectory's turns
	TrajectoryStartMaxRatio float64
	TraceIdleGapCapSeconds  float64 // cap on every session delay; 0 = none
	SystemIdleGapCapSeconds float64 // cap on whole-system idle time; 0 = none
	CacheBust               string  // "none", "first_turn_prefix", "system_prefix"
	BenchmarkDuration       float64 // seconds of the timed phase that send requests; 0 = no limit
	BenchmarkGracePeriod    float64 // seconds in-flight requests get after it; +Inf: all
	RequestTimeoutSeconds   float64 // 0 = none

	// cluster (replicas behind a router; scenario/pools.go)
	Replicas     int        // model-server replicas of the deployment (--replicas)
	Router       string     // a built-in router (router.Names()); "" = none for one endpoint, k8s-service for more
	RouterConfig string     // llm-d EndpointPickerConfig (or a values file embedding one)
	Pools        []PoolSpec // model-server pools; replace Replicas
	// Prefill/decode disaggregation (pd.go): a prefill pool and a decode
	// pool of the top-level deployment, each with its own serve overrides.
	PrefillReplicas, DecodeReplicas int
	PrefillServe, DecodeServe       []KV
	Fabric                          string // catalog fabric ("" = derived from the chip)

	// BLIS
	StepModel string // "auto" (fitted where the chip has coefficients, else roofline), "fitted", "roofline"
	// FrontendLatencyMs is the client-observed latency the vLLM frontend
	// (HTTP, API server, engine-core IPC, streaming) adds to every request
	// beyond the engine's own time (cluster.Config.FrontendLatency).
	FrontendLatencyMs float64

	// output
	SaveResult     bool
	SaveDetailed   bool
	ResultDir      string
	ResultFilename string
	Export         string // comma list of export formats
	ExportDir      string
	Label          string // --label
	Metadata       []KV   // --metadata, in the order given
	AppendResult   bool   // --append-result
}

// Defaults is the one set of defaults: every key a command line or a
// scenario file leaves out keeps its value here, so `blis run`, `blis run
// empty.yaml` and `blis run --model X` simulate the same load, and --help and
// docs/flags.md print these values.
//
// They are vLLM's own where vLLM has one: `vllm serve`'s engine arguments
// (v0.11; async scheduling as of v0.14) and `vllm bench serve`'s
// (vllm-project/vllm main @ 009e6d4a1cd6, vllm/benchmarks/serve.py
// add_cli_args, and @ 0056b87fc1fd, datasets.py add_dataset_parser):
// --dataset-name random, --random-input-len 1024, --random-output-len 128,
// --random-range-ratio 0, --num-prompts 1000 (NumPrompts 0 here: the
// dataset's own count, 1000 for the datasets vllm bench samples, every record
// of a trace), no --max-concurrency, --request-rate inf, --burstiness 1,
// --num-warmups 0, --seed 0, --metric-percentiles 99, --percentile-metrics
// ttft,tpot,itl. BLIS's own apply only where vLLM has none: the model (vLLM
// requires one) and the chip, the step model, the frontend latency, and
// aiperf's client settings (aiperf's defaults).
func Defaults() Scenario {
	return Scenario{
		// vLLM ≥ 0.14 (vllm/config/vllm.py, SchedulerConfig.async_scheduling
		// None → True for a generation model with no incompatible option:
		// speculative methods outside EAGLE/MTP/n-gram/draft-model, an
		// executor without async support such as Ray). None of those is
		// modelled, so the default is simply on; --no-async-scheduling is
		// vLLM ≤ 0.13's behaviour.
		AsyncScheduling:      true,
		Model:                "meta-llama/Llama-3.1-8B",
		Hardware:             "h100",
		TensorParallelSize:   1,
		DataParallelSize:     1,
		PipelineParallelSize: 1,
		Replicas:             1,
		GPUMemoryUtilization: 0.9,
		BlockSize:            16,
		KVCacheDtype:         "auto",
		EnablePrefixCaching:  true,
		EnableChunkedPrefill: true,

		RandomInputLen:    1024,
		RandomOutputLen:   128,
		RandomRangeStyle:  "current",
		RequestRate:       math.Inf(1),
		Burstiness:        1,
		MetricPercentiles: []float64{99},
		PercentileMetrics: "ttft,tpot,itl",
		Backend:           "openai",          // vllm bench serve --backend
		Endpoint:          "/v1/completions", // vllm bench serve --endpoint
		StepModel:         "auto",
		MoEBackend:        "auto",
		// Measured, with its source, in catalog/stacks/vllm.yaml.
		FrontendLatencyMs: defaultFrontendLatencyMs(),

		FixedScheduleSpeedup: 1, // aiperf's --fixed-schedule-speedup

		ConcurrencyMode:       "auto",
		CacheBust:             "none",
		BenchmarkGracePeriod:  30,    // aiperf's default
		RequestTimeoutSeconds: 21600, // aiperf's default, and vllm bench's aiohttp timeout (6 h)

		PrefixRepetition: workload.DefaultPrefixRepetitionSpec(),
		SharedPrefix:     workload.DefaultSharedPrefixSpec(),
		Agentic:          workload.DefaultAgenticSpec(),
		Load:             workload.DefaultLoadSpec(),
	}
}

// defaultFrontendLatencyMs is what vLLM's frontend adds to each request
// (catalog/stacks/vllm.yaml). The embedded file is checked by the catalog's
// tests; were it unreadable, Resolve reports why.
func defaultFrontendLatencyMs() float64 {
	st, err := catalog.LookupStack("vllm")
	if err != nil {
		return 0
	}
	return float64(st.FrontendLatency) / float64(time.Millisecond)
}

// Value is a settable setting; it is github.com/spf13/pflag's Value.
type Value interface {
	String() string
	Set(string) error
	Type() string
}

// Setting is one key: its flag / YAML name, its help text, where it is stored.
type Setting struct {
	Name  string
	Usage string
	Group string // one of Groups()
	Value Value
	// Neg is the --no-<name> spelling of a boolean setting (nil if none).
	Neg Value
	// Zero says what the zero value (0, "" or an empty list) means where it
	// is not simply zero: "none" for an unset cap, vLLM's rule for a
	// chip-dependent default.
	Zero string
}

// Group is a heading of the settings table.
type Group struct{ Name, Title string }

// Groups lists the settings' groups in help order.
func Groups() []Group {
	return []Group{
		{"serve", "Deployment (vllm serve)"},
		{"bench", "Load (vllm bench serve)"},
		{"trace", "Traces and other datasets (vllm bench serve, aiperf, inference-perf)"},
		{"client", "Client (aiperf)"},
		{"cluster", "Cluster (replicas, pools, llm-d router)"},
		{"blis", "BLIS"},
		{"output", "Output"},
		{"noeffect", "vllm bench serve flags accepted with no effect in a simulation"},
	}
}

// DefaultText is the setting's value as a default to print: its value, or
// what its zero value means ("none" for an unset string).
func (st Setting) DefaultText() string {
	v := st.Value.String()
	if st.Zero != "" && (v == "" || v == "0") {
		return st.Zero
	}
	if v == "" {
		return "none"
	}
	return v
}

// DefaultSettings is the settings table bound to Defaults(): what --help and
// docs/flags.md print.
func DefaultSettings() []Setting {
	d := Defaults()
	return d.Settings()
}

// chipNames lists the catalog's chips, for help text.
func chipNames() string {
	var names []string
	for _, c := range catalog.Chips() {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// modelNames lists the catalog's model ids, for help text.
func modelNames() string {
	var names []string
	for _, m := range catalog.Models() {
		names = append(names, m.ID)
	}
	return strings.Join(names, ", ")
}

// Settings lists every key of s, bound to s's fields, in help order.
func (s *Scenario) Settings() []Setting {
	b := func(p *bool) (Value, Value) { return boolValue{p: p}, boolValue{p: p, neg: true} }
	pc, pcNeg := b(&s.EnablePrefixCaching)
	cp, cpNeg := b(&s.EnableChunkedPrefill)
	ee, eeNeg := b(&s.EnforceEager)
	as, asNeg := b(&s.AsyncScheduling)
	ep, epNeg := b(&s.EnableExpertParallel)
	sr, _ := b(&s.SaveResult)
	sd, _ := b(&s.SaveDetailed)
	fs, _ := b(&s.FixedSchedule)
	fsao, _ := b(&s.FixedScheduleAutoOffset)
	tsi, _ := b(&s.TraceSkipInvalid)
	ds, _ := b(&s.DisableShuffle)
	b1 := func(p *bool) Value { return boolValue{p: p} }
	out := []Setting{
		{Name: "model", Group: "serve", Value: stringValue{&s.Model}, Usage: "Hugging Face model id (any case) or a short alias such as llama-3.1-70b or qwen3-32b; `blis catalog list` lists them: " + modelNames()},
		{Name: "hardware", Group: "serve", Value: stringValue{&s.Hardware}, Usage: "GPU: " + chipNames() + " (any case; h100_sxm style accepted)"},
		{Name: "tensor-parallel-size", Group: "serve", Value: intValue{&s.TensorParallelSize}, Usage: "GPUs per replica (tensor parallelism); -tp works too"},
		{Name: "pipeline-parallel-size", Group: "serve", Value: intValue{&s.PipelineParallelSize}, Usage: "pipeline stages per replica, each tensor-parallel-size GPUs holding its share of the decoder layers (vLLM's get_pp_indices split); the engine keeps that many batches in flight; turns async scheduling off, as vLLM does; -pp works too"},
		{Name: "data-parallel-size", Group: "serve", Value: intValue{&s.DataParallelSize}, Usage: "engine ranks of tensor-parallel-size GPUs each, behind vLLM's DP load balancer; a MoE model's ranks step together and split the experts over all their GPUs; -dp works too; at most " + strconv.Itoa(MaxDataParallel)},
		{Name: "max-num-seqs", Group: "serve", Value: intValue{&s.MaxNumSeqs}, Usage: "max running requests per step", Zero: "vLLM's for the chip: 1024 on ≥ 70 GiB GPUs other than A100, else 256, at most --max-num-batched-tokens"},
		{Name: "max-num-batched-tokens", Group: "serve", Value: intValue{&s.MaxNumBatchedTokens}, Usage: "token budget per step; must be ≥ --max-num-seqs", Zero: "vLLM's for the chip: 8192 on ≥ 70 GiB GPUs other than A100, else 2048; at least --max-model-len without chunked prefill"},
		{Name: "gpu-memory-utilization", Group: "serve", Value: floatValue{&s.GPUMemoryUtilization}, Usage: "fraction of GPU memory vLLM may use"},
		{Name: "max-model-len", Group: "serve", Value: intValue{&s.MaxModelLen}, Usage: "max prompt + output tokens per request; longer prompts are rejected", Zero: "the model's max_position_embeddings"},
		{Name: "block-size", Group: "serve", Value: intValue{&s.BlockSize}, Usage: "KV cache block size in tokens: 1, 8, 16, 32, 64, 128 or 256"},
		{Name: "kv-cache-dtype", Group: "serve", Value: stringValue{&s.KVCacheDtype}, Usage: "auto (the model's dtype), bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2"},
		{Name: "quantization", Group: "serve", Value: stringValue{&s.Quantization}, Usage: "weight quantization: fp8, or none for the checkpoint's own", Zero: "the checkpoint's own"},
		{Name: "num-gpu-blocks-override", Group: "serve", Value: intValue{&s.NumGPUBlocksOverride}, Usage: "set the KV pool to exactly this many blocks; it must fit the GPU's memory", Zero: "none: sized from memory"},
		{Name: "enable-prefix-caching", Group: "serve", Value: pc, Neg: pcNeg, Usage: "automatic prefix caching"},
		{Name: "enable-chunked-prefill", Group: "serve", Value: cp, Neg: cpNeg, Usage: "chunked prefill"},
		{Name: "long-prefill-token-threshold", Group: "serve", Value: intValue{&s.LongPrefillTokenThreshold}, Usage: "cap on one request's prefill tokens per step", Zero: "off"},
		{Name: "enforce-eager", Group: "serve", Value: ee, Neg: eeNeg, Usage: "no CUDA graphs"},
		{Name: "compilation-config", Group: "serve", Value: stringValue{&s.CompilationConfig}, Usage: `vLLM's compilation config as JSON; BLIS models "cudagraph_mode" and "cudagraph_capture_sizes" / "max_cudagraph_capture_size" and accepts vLLM's other keys`},
		{Name: "max-cudagraph-capture-size", Group: "serve", Value: intValue{&s.MaxCUDAGraphCaptureSize}, Usage: "largest batch captured as a CUDA graph", Zero: "vLLM's: min(2 × max-num-seqs, 512)"},
		{Name: "async-scheduling", Group: "serve", Value: as, Neg: asNeg, Usage: "schedule the next step while the GPU runs this one (vLLM ≥ 0.14; off is vLLM ≤ 0.13's serial step)"},
		{Name: "enable-expert-parallel", Group: "serve", Value: ep, Neg: epNeg, Usage: "split MoE experts whole across the DP × TP GPUs instead of slicing every expert"},
		{Name: "all2all-backend", Group: "serve", Value: stringValue{&s.All2AllBackend}, Usage: "how expert-parallel MoE layers move tokens to their experts and back (prices MoE dispatch and combine): " + strings.Join(kernel.All2AllBackends(), ", "), Zero: "vLLM's default"},
		{Name: "kv-transfer-config", Group: "serve", Value: stringValue{&s.KVTransferConfig}, Usage: `vLLM's KV transfer config as JSON, e.g. '{"kv_connector":"NixlConnector","kv_role":"kv_both"}' (MultiConnector with a "connectors" list too); BLIS moves a disaggregated request's KV as NixlConnector does and notes what else it does not model`, Zero: "none (NixlConnector for prefill/decode pools)"},
		{Name: "speculative-config", Group: "serve", Value: stringValue{&s.SpeculativeConfig}, Usage: `vLLM's speculative decoding config as JSON, e.g. '{"method":"eagle3","model":"…","num_speculative_tokens":3}' or '{"method":"mtp","num_speculative_tokens":1}'; methods mtp, eagle, eagle3, draft_model, dspark, ngram, suffix; the draft passes are priced from the draft's layers, acceptance from --spec-acceptance`, Zero: "none"},
		{Name: "spec-acceptance", Group: "serve", Value: stringValue{&s.SpecAcceptance}, Usage: "BLIS: how often drafts are accepted: a measured preset (`blis spec presets`), mean:A (mean acceptance length A, i.i.d. per position), rates:u1,u2,… (per-position acceptance rates), or counts:drafts,acc1,acc2,… (measured counts); add ,replay to replay the schedule deterministically instead of sampling it", Zero: "the preset measured for the model and method when there is one, else required"},
		{Name: "kv-offloading-size", Group: "serve", Value: floatValue{&s.KVOffloadingSize}, Usage: "GiB of CPU memory for offloaded KV blocks over the replica's GPUs (vLLM's cpu_bytes_to_use), with --kv-offloading-backend", Zero: "no offload"},
		{Name: "engram-config", Group: "serve", Value: stringValue{&s.EngramConfig}, Usage: `vLLM's Engram table placement as JSON, for a model with Engram layers (DeepSeek-V4.1), e.g. '{"cpu_offload":false}': cpu_offload (tables in pinned host memory, rows gathered over the host link, overlapped with the layers before them), enable_engram_dp_sharding, enable_engram_dp_shared_memory`, Zero: `vLLM's: '{"cpu_offload":true,"enable_engram_dp_sharding":true}'`},
		{Name: "kv-offloading-backend", Group: "serve", Value: stringValue{&s.KVOffloadingBackend}, Usage: "native (vLLM's OffloadingConnector) or lmcache (LMCacheConnectorV1)", Zero: "native"},
		{Name: "lmcache-max-local-cpu-size", Group: "serve", Value: floatValue{&s.LMCacheMaxLocalCPUSize}, Usage: "LMCache's LMCACHE_MAX_LOCAL_CPU_SIZE: GB of CPU KV cache per GPU worker, for an LMCacheConnectorV1 in --kv-transfer-config", Zero: "LMCache's default, 5"},
		{Name: "lmcache-max-local-disk-size", Group: "serve", Value: floatValue{&s.LMCacheMaxLocalDiskSize}, Usage: "LMCache's LMCACHE_MAX_LOCAL_DISK_SIZE: GB of local disk KV cache per GPU worker behind its CPU cache (LMCACHE_LOCAL_DISK), its bandwidth from --kv-offload-storage", Zero: "no disk tier"},
		{Name: "mooncake-config", Group: "serve", Value: stringValue{&s.MooncakeConfig}, Usage: `the mooncake_config.json text (MOONCAKE_CONFIG_PATH) for a MooncakeStoreConnector in --kv-transfer-config, e.g. '{"mode":"embedded","global_segment_size":"80GB","local_buffer_size":"4GB","protocol":"rdma"}': every GPU worker adds global_segment_size to one store the pool's replicas share, over each GPU's NIC`, Zero: "required with MooncakeStoreConnector"},
		{Name: "kv-offload-storage", Group: "serve", Value: stringValue{&s.KVOffloadStorage}, Usage: "BLIS: the storage behind an OffloadingConnector's secondary_tiers (TieringOffloadingSpec) or LMCache's local disk, which no vLLM setting states: capacity_gib=…,read_gbps=…,write_gbps=…,latency_ms=… (GB/s between it and host memory; a secondary tier is one shared by the pool's replicas; LMCache's disk is each worker's, sized by --lmcache-max-local-disk-size, so no capacity_gib)", Zero: "required with secondary tiers or LMCache's disk"},
		{Name: "moe-backend", Group: "serve", Value: stringValue{&s.MoEBackend}, Usage: "fused-MoE kernels as vLLM's environment forces them: auto, triton (VLLM_USE_FLASHINFER_MOE_FP8=0 VLLM_MOE_USE_DEEP_GEMM=0), flashinfer (VLLM_USE_FLASHINFER_MOE_FP8=1 / _MXFP4_BF16=1), flashinfer-mxfp8 (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1), marlin (VLLM_MXFP4_USE_MARLIN=1)"},

		{Name: "dataset-name", Group: "bench", Value: stringValue{&s.DatasetName}, Usage: "workload: " + strings.Join(workload.DatasetNames(), ", "), Zero: "random, or --custom-dataset-type"},
		{Name: "random-input-len", Group: "bench", Value: intValue{&s.RandomInputLen}, Usage: "mean prompt tokens (random dataset)"},
		{Name: "random-output-len", Group: "bench", Value: intValue{&s.RandomOutputLen}, Usage: "mean output tokens (random dataset); output lengths are always honoured exactly, as with --ignore-eos"},
		{Name: "random-range-ratio", Group: "bench", Value: floatValue{&s.RandomRangeRatio}, Usage: "length spread: uniform in [L(1-r), L(1+r)] (current) or [L·r, L] (legacy)"},
		{Name: "random-range-style", Group: "bench", Value: stringValue{&s.RandomRangeStyle}, Usage: "current (vllm bench today) or legacy (old benchmark_serving.py, InferenceX's client)"},
		{Name: "random-prefix-len", Group: "bench", Value: intValue{&s.RandomPrefixLen}, Usage: "tokens of a prefix shared by every prompt"},
		{Name: "num-prompts", Group: "bench", Value: intValue{&s.NumPrompts}, Usage: "requests in the timed run", Zero: "1000 for random, sharegpt and prefix_repetition (vllm bench serve's), every record of a trace"},
		{Name: "max-concurrency", Group: "bench", Value: intValue{&s.MaxConcurrency}, Usage: "max requests in flight", Zero: "none"},
		{Name: "request-rate", Group: "bench", Value: rateValue{&s.RequestRate}, Usage: "requests per second, or inf to release all at once"},
		{Name: "burstiness", Group: "bench", Value: floatValue{&s.Burstiness}, Usage: "gamma shape of inter-arrival times (1 = Poisson)"},
		{Name: "num-warmups", Group: "bench", Value: intValue{&s.NumWarmups}, Usage: "warm-up requests (copies of the first prompt) before the timed run"},
		{Name: "seed", Group: "bench", Value: int64Value{&s.Seed}, Usage: "random seed: same seed, same output, byte for byte"},
		{Name: "metric-percentiles", Group: "bench", Value: floatListValue{&s.MetricPercentiles}, Usage: "comma-separated percentiles to report"},
		{Name: "percentile-metrics", Group: "bench", Value: stringValue{&s.PercentileMetrics}, Usage: "comma-separated metrics printed with percentiles: ttft, tpot, itl, e2el"},
		{Name: "goodput", Group: "bench", Value: goodputValue{&s.Goodput}, Usage: "service level objectives as KEY:MS pairs (ttft, tpot, e2el), several after one flag as in vLLM (--goodput ttft:200 tpot:50); adds request_goodput: completed requests meeting all of them per second", Zero: "none"},
		{Name: "backend", Group: "bench", Value: stringValue{&s.Backend}, Usage: "vLLM's request function: " + strings.Join(Backends(), ", ") + " (text generation; BLIS simulates one engine behind any of them); written as the result's backend and endpoint_type"},
		{Name: "endpoint", Group: "bench", Value: stringValue{&s.Endpoint}, Usage: "API path; checked against --backend as vLLM checks it, otherwise no effect"},
		{Name: "input-len", Group: "bench", Value: intValue{&s.InputLen}, Usage: "vLLM's generic prompt length: sets --random-input-len", Zero: "none"},
		{Name: "output-len", Group: "bench", Value: intValue{&s.OutputLen}, Usage: "vLLM's generic output length: sets --random-output-len, --sharegpt-output-len and --prefix-repetition-output-len", Zero: "none"},
		{Name: "ignore-eos", Group: "bench", Value: b1(&s.IgnoreEOS), Usage: "accepted; BLIS always generates exactly the requested output tokens, with or without it (vllm bench sets it itself for random prompts)"},
		{Name: "tokenizer", Group: "bench", Value: stringValue{&s.Tokenizer}, Usage: "written as the result's tokenizer_id; BLIS counts tokens and tokenizes no text", Zero: "the model"},

		{Name: "stages", Group: "trace", Value: stagesValue{&s.Load.Stages}, Usage: "inference-perf's load stages, one after the other in one run: a list of {rate: REQ/S, duration: S}, e.g. '[{rate: 10, duration: 60}, {rate: 20, duration: 60}]'; each sends ⌊rate × duration⌋ requests of the dataset (random, sharegpt, prefix_repetition, shared_prefix) in place of --num-prompts and --request-rate; results are also reported per stage", Zero: "none"},
		{Name: "load-type", Group: "trace", Value: stringValue{&s.Load.Type}, Usage: "inference-perf's load.type for --stages: constant (exponential gaps rescaled to each stage's duration) or poisson (a Poisson count per second)"},
		{Name: "load-interval", Group: "trace", Value: floatValue{&s.Load.Interval}, Usage: "inference-perf's load.interval: seconds between the end of a stage and the start of the next"},
		{Name: "dataset-path", Group: "trace", Value: stringValue{&s.DatasetPath}, Usage: "dataset or trace file (vllm bench)"},
		{Name: "input-file", Group: "trace", Value: stringValue{&s.InputFile}, Usage: "trace file (aiperf); same as --dataset-path"},
		{Name: "custom-dataset-type", Group: "trace", Value: stringValue{&s.CustomDatasetType}, Usage: "aiperf's trace type, e.g. mooncake_trace"},
		{Name: "fixed-schedule", Group: "trace", Value: fs, Usage: "send each request at its trace timestamp (aiperf)"},
		{Name: "fixed-schedule-auto-offset", Group: "trace", Value: fsao, Usage: "count timestamps from the first one"},
		{Name: "fixed-schedule-start-offset", Group: "trace", Value: int64Value{&s.FixedScheduleStartOffset}, Usage: "keep records from this timestamp on, ms"},
		{Name: "fixed-schedule-end-offset", Group: "trace", Value: int64Value{&s.FixedScheduleEndOffset}, Usage: "keep records up to this timestamp, ms", Zero: "none"},
		{Name: "fixed-schedule-speedup", Group: "trace", Value: floatValue{&s.FixedScheduleSpeedup}, Usage: "divide trace time offsets and delays by this"},
		{Name: "isl-block-size", Group: "trace", Value: intValue{&s.ISLBlockSize}, Usage: "tokens per mooncake hash id", Zero: "512 (aiperf's)"},
		{Name: "trace-skip-invalid", Group: "trace", Value: tsi, Usage: "skip (and count) trace records with impossible values instead of failing"},
		{Name: "sharegpt-output-len", Group: "trace", Value: intValue{&s.ShareGPTOutputLen}, Usage: "output length of every ShareGPT request", Zero: "the reply's length"},
		{Name: "disable-shuffle", Group: "trace", Value: ds, Usage: "take dataset entries in file order"},
		{Name: "prefix-repetition-prefix-len", Group: "trace", Value: intValue{&s.PrefixRepetition.PrefixLen}, Usage: "prefix_repetition: prefix tokens"},
		{Name: "prefix-repetition-suffix-len", Group: "trace", Value: intValue{&s.PrefixRepetition.SuffixLen}, Usage: "prefix_repetition: suffix tokens"},
		{Name: "prefix-repetition-num-prefixes", Group: "trace", Value: intValue{&s.PrefixRepetition.NumPrefixes}, Usage: "prefix_repetition: distinct prefixes"},
		{Name: "prefix-repetition-output-len", Group: "trace", Value: intValue{&s.PrefixRepetition.OutputLen}, Usage: "prefix_repetition: output tokens"},
		{Name: "shared-prefix-num-groups", Group: "trace", Value: intValue{&s.SharedPrefix.NumGroups}, Usage: "shared_prefix (inference-perf): system prompts"},
		{Name: "shared-prefix-num-prompts-per-group", Group: "trace", Value: intValue{&s.SharedPrefix.NumPromptsPerGroup}, Usage: "shared_prefix: questions per system prompt"},
		{Name: "shared-prefix-system-prompt-len", Group: "trace", Value: intValue{&s.SharedPrefix.SystemPromptLen}, Usage: "shared_prefix: system prompt tokens"},
		{Name: "shared-prefix-question-len", Group: "trace", Value: intValue{&s.SharedPrefix.QuestionLen}, Usage: "shared_prefix: question tokens"},
		{Name: "shared-prefix-output-len", Group: "trace", Value: intValue{&s.SharedPrefix.OutputLen}, Usage: "shared_prefix: output tokens"},
		{Name: "agentic-num-sessions", Group: "trace", Value: intValue{&s.Agentic.NumSessions}, Usage: "agentic: synthetic coding sessions"},
		{Name: "agentic-session-rate", Group: "trace", Value: floatValue{&s.Agentic.SessionRate}, Usage: "agentic: sessions started per second (0: no timestamps; sessions start by --request-rate)"},

		{Name: "concurrency-mode", Group: "client", Value: stringValue{&s.ConcurrencyMode}, Usage: "requests: --max-concurrency caps requests in flight (vllm bench); lanes: --max-concurrency lanes each replay one session tree at a time (aiperf agentic replay); auto: lanes when --warmup-requests-per-lane or --trajectory-start-max-ratio is set"},
		{Name: "warmup-requests-per-lane", Group: "client", Value: intValue{&s.WarmupRequestsPerLane}, Usage: "lanes: warm-up requests per lane, its trajectory primer included, each asking for one token; after the primers, lanes replay with no delays"},
		{Name: "trajectory-start-min-ratio", Group: "client", Value: floatValue{&s.TrajectoryStartMinRatio}, Usage: "lanes: each initial trajectory starts at a turn drawn in [min, max] of its turns, primed by a warm-up request carrying its history (aiperf's defaults: 0.25, 0.75)"},
		{Name: "trajectory-start-max-ratio", Group: "client", Value: floatValue{&s.TrajectoryStartMaxRatio}, Usage: "lanes: upper bound of the start turn, as a share of the trajectory's turns"},
		{Name: "trace-idle-gap-cap-seconds", Group: "client", Value: floatValue{&s.TraceIdleGapCapSeconds}, Usage: "cap every session delay (think, tool time) at this many seconds", Zero: "none"},
		{Name: "system-idle-gap-cap-seconds", Group: "client", Value: floatValue{&s.SystemIdleGapCapSeconds}, Usage: "when nothing is in flight, move pending releases earlier so the next comes within this many seconds", Zero: "off"},
		{Name: "cache-bust", Group: "client", Value: stringValue{&s.CacheBust}, Usage: "none, first_turn_prefix (a unique marker per trajectory play after the system prompt) or system_prefix (before it)"},
		{Name: "benchmark-duration", Group: "client", Value: floatValue{&s.BenchmarkDuration}, Usage: "send no request after this many seconds of the timed phase", Zero: "none"},
		{Name: "benchmark-grace-period", Group: "client", Value: secondsValue{&s.BenchmarkGracePeriod}, Usage: "seconds in-flight requests get after --benchmark-duration to be recorded, or inf"},
		{Name: "request-timeout-seconds", Group: "client", Value: floatValue{&s.RequestTimeoutSeconds}, Usage: "cancel a request not complete this many seconds after it was sent, counted failed (0: never)"},

		{Name: "replicas", Group: "cluster", Value: intValue{&s.Replicas}, Usage: "model-server replicas of the deployment (each its own vllm serve with tensor-parallel-size × data-parallel-size GPUs) behind the router; at most " + strconv.Itoa(MaxReplicas)},
		{Name: "router", Group: "cluster", Value: stringValue{&s.Router}, Usage: "how requests are spread over the replicas: " + strings.Join(router.Names(), ", "), Zero: "none with one replica, else k8s-service (kube-proxy's random pick per connection)"},
		{Name: "router-config", Group: "cluster", Value: stringValue{&s.RouterConfig}, Usage: "llm-d's EndpointPickerConfig file (llm-d.ai or inference.networking.x-k8s.io API), a v0.2-era plugins-v2.yaml, or a Helm values file embedding one; its plugins replace --router", Zero: "none"},
		{Name: "pools", Group: "cluster", Value: poolsValue{&s.Pools}, Usage: "model-server pools, each its own deployment behind the router: a list of {name, replicas, role (both, decode, prefill), labels, and any vllm serve key overriding the top level's}, e.g. '[{name: tp4, replicas: 2, tensor-parallel-size: 4}, {name: tp2, replicas: 4, tensor-parallel-size: 2}]'; replaces --replicas", Zero: "none: --replicas of the top-level deployment"},

		{Name: "prefill-replicas", Group: "cluster", Value: intValue{&s.PrefillReplicas}, Usage: "prefill/decode disaggregation as llm-d runs it: a pool of this many prefill replicas (role prefill) of the top-level deployment, with --decode-replicas; replaces --replicas", Zero: "none"},
		{Name: "decode-replicas", Group: "cluster", Value: intValue{&s.DecodeReplicas}, Usage: "the decode pool's replicas (role decode), with --prefill-replicas", Zero: "none"},
		{Name: "prefill-serve", Group: "cluster", Value: serveKVsValue{&s.PrefillServe}, Usage: "vllm serve settings of the prefill pool overriding the top level's, as KEY=VALUE pairs separated by commas, e.g. 'tensor-parallel-size=1,max-num-batched-tokens=16384'", Zero: "none"},
		{Name: "decode-serve", Group: "cluster", Value: serveKVsValue{&s.DecodeServe}, Usage: "vllm serve settings of the decode pool overriding the top level's, as --prefill-serve", Zero: "none"},
		{Name: "fabric", Group: "cluster", Value: stringValue{&s.Fabric}, Usage: "the network the replicas sit on, a fabric of the catalog (catalog/fabrics/): KV transfers between prefill and decode replicas and collectives that cross a node use it", Zero: "the chip's own: NVLink inside a node, its inter-node bandwidth between nodes"},
		{Name: "step-model", Group: "blis", Value: stringValue{&s.StepModel}, Usage: "step pricer: auto (fitted-v1 where the chip has fitted kernel coefficients, else roofline-v1), fitted, roofline"},
		{Name: "frontend-latency-ms", Group: "blis", Value: floatValue{&s.FrontendLatencyMs}, Usage: "latency the vLLM frontend (HTTP, API server, IPC, streaming) adds to each request's TTFT and E2E beyond the engine, measured in vllm#54628 (0: the engine alone)"},

		{Name: "save-result", Group: "output", Value: sr, Usage: "write the vLLM bench result JSON"},
		{Name: "save-detailed", Group: "output", Value: sd, Usage: "add per-request arrays to the result JSON"},
		{Name: "result-dir", Group: "output", Value: stringValue{&s.ResultDir}, Usage: "directory of the result JSON", Zero: "the current directory"},
		{Name: "result-filename", Group: "output", Value: stringValue{&s.ResultFilename}, Usage: "name of the result JSON", Zero: "blis-<model>-<hardware>-tp<N>.json"},
		{Name: "export", Group: "output", Value: stringValue{&s.Export}, Usage: "also write these benchmark-client formats (comma list): aiperf, guidellm, llmd, vllm, inferencex, inference-perf"},
		{Name: "export-dir", Group: "output", Value: stringValue{&s.ExportDir}, Usage: "directory of the --export files", Zero: "the current directory"},
		{Name: "label", Group: "output", Value: stringValue{&s.Label}, Usage: "the result's label", Zero: "none"},
		{Name: "metadata", Group: "output", Value: metadataValue{&s.Metadata}, Usage: "KEY=VALUE pairs written into the result JSON, several after one flag as in vLLM (--metadata version=1 tp=2)", Zero: "none"},
		{Name: "append-result", Group: "output", Value: b1(&s.AppendResult), Usage: "append the result to an existing result file (implies --save-result)"},
	}
	for _, f := range noEffectFlags {
		out = append(out, Setting{Name: f.name, Group: "noeffect", Value: noEffectValue{m: &s.NoEffect, f: f}, Usage: "accepted; no effect in a simulation: " + f.why, Zero: "none"})
	}
	return out
}

// secondsValue is a duration in seconds that may be "inf".
type secondsValue struct{ p *float64 }

func (v secondsValue) String() string {
	if math.IsInf(*v.p, 1) {
		return "inf"
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}
func (v secondsValue) Type() string { return "seconds" }
func (v secondsValue) Set(s string) error {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "inf" || t == "+inf" || t == "infinity" {
		*v.p = math.Inf(1)
		return nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%s is not a number of seconds or inf", quote(s))
	}
	*v.p = f
	return nil
}

// InputError is bad user input: which file and line (if any), which key,
// the value, and what is allowed. The CLI exits 2 on it. It matches
// workload.ErrBadInput, the one mark of input a user can fix (a flag, a
// scenario file, a trace or dataset file, a router config).
type InputError = inputerr.Error

// IsInputError reports whether err is (or wraps) bad input: an InputError
// or any workload error about a flag or a file's content. The CLI exits 2
// on it.
func IsInputError(err error) bool {
	return errors.Is(err, workload.ErrBadInput)
}

// ApplyYAML sets s from a scenario file's bytes. Keys are the flag names
// (underscores are accepted for dashes, as vLLM accepts them); skip reports
// keys to leave alone because the command line already set them. Unknown
// keys, non-scalar values and unparsable values are errors naming the file,
// the line and the key.
func (s *Scenario) ApplyYAML(file string, data []byte, skip func(name string) bool) error {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if err.Error() == "EOF" {
			return nil // empty file: all defaults
		}
		return &InputError{File: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil // a document with no keys ("---"): all defaults
	}
	if root.Kind != yaml.MappingNode {
		return &InputError{File: file, Line: root.Line, Msg: "a scenario is a mapping of keys to values (key: value lines)"}
	}
	settings := s.Settings()
	byName := make(map[string]Setting, len(settings))
	names := make([]string, 0, len(settings))
	for _, st := range settings {
		byName[st.Name] = st
		names = append(names, st.Name)
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := strings.ReplaceAll(k.Value, "_", "-")
		st, ok := byName[name]
		if !ok {
			return &InputError{File: file, Line: k.Line, Key: k.Value, Msg: "unknown key" + suggest(name, names)}
		}
		if prev, dup := seen[name]; dup {
			return &InputError{File: file, Line: k.Line, Key: k.Value, Msg: fmt.Sprintf("given twice (first on line %d)", prev)}
		}
		seen[name] = k.Line
		if skip != nil && skip(name) {
			continue
		}
		if v.Kind == yaml.SequenceNode && strings.HasSuffix(st.Value.Type(), "...") {
			// A list flag (--goodput, --metadata): one item per element.
			for _, c := range v.Content {
				if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
					return &InputError{File: file, Line: c.Line, Key: name, Msg: "a list may hold only plain values"}
				}
				if err := st.Value.Set(c.Value); err != nil {
					return &InputError{File: file, Line: c.Line, Key: name, Value: c.Value, Msg: err.Error()}
				}
			}
			continue
		}
		if nv, ok := st.Value.(interface{ setNode(*yaml.Node) error }); ok && v.Kind != yaml.ScalarNode {
			// A structured value (--stages): the node as written.
			if err := nv.setNode(v); err != nil {
				return &InputError{File: file, Line: v.Line, Key: name, Msg: err.Error()}
			}
			continue
		}
		raw, err := scalarText(v)
		if err != nil {
			return &InputError{File: file, Line: v.Line, Key: name, Msg: err.Error()}
		}
		if err := st.Value.Set(raw); err != nil {
			return &InputError{File: file, Line: v.Line, Key: name, Value: raw, Msg: err.Error()}
		}
	}
	return nil
}

// scalarText returns a scalar's text; a sequence of scalars becomes a comma
// list (for metric-percentiles: [50, 90, 99]).
func scalarText(v *yaml.Node) (string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Tag == "!!null" {
			return "", errors.New("has no value")
		}
		return v.Value, nil
	case yaml.SequenceNode:
		parts := make([]string, 0, len(v.Content))
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return "", errors.New("a list may hold only plain values")
			}
			parts = append(parts, c.Value)
		}
		return strings.Join(parts, ","), nil
	}
	return "", errors.New("must be a plain value, not a mapping")
}

// suggest names the closest known keys, or lists them all.
func suggest(name string, known []string) string {
	cands := make([]suggestpkg.Candidate, len(known))
	for i, k := range known {
		cands[i] = suggestpkg.Candidate{Key: k, Name: k}
	}
	if close := suggestpkg.CloseMatches(name, cands, 3); len(close) > 0 {
		return "; did you mean " + strings.Join(close, ", ") + "?"
	}
	return "; allowed keys: " + strings.Join(known, ", ")
}
