package inferencex

import (
	"fmt"
	"strconv"
	"strings"
)

// The `vllm serve` arguments InferenceX used, per model, chip, vLLM version
// and measurement date, transcribed from shared/data/README.md ("InferenceX
// settings for the calibration rows"), which read them from
// SemiAnalysisAI/InferenceX's benchmarks/ scripts at the commit current on
// each measurement date (repository snapshot @ 843c6254). Every value carries
// its source (the recipe's Source); a value the README marks unconfirmed is
// Assumed, and the report prints it as such.

// ServeArg is one `vllm serve` argument of a recipe. Value is literal or
// one of the row-dependent forms: CONC (the row's concurrency), 2*ISL,
// GEN (InferenceX's sweep generator: ISL+OSL+200, ISL+OSL+256 for runs
// from 2026-04-20), ISL+OSL+20/200 (+20 for 1k/1k, +200 when ISL or OSL
// is 8192, as the B200 docker scripts of 2025 set it).
type ServeArg struct {
	Flag    string `json:"flag"`
	Value   string `json:"value"`
	Assumed bool   `json:"assumed,omitempty"`
	Why     string `json:"why,omitempty"` // why it is assumed, or where a default comes from
}

// Recipe is one group of InferenceX runs that shared a launch script.
type Recipe struct {
	Key string `json:"key"`
	// Match: model_path, system, precision and backend_version as the CSV
	// writes them (a Version ending in "*" matches by prefix), and the
	// measured= date window, inclusive ("" = open).
	Model     string `json:"model,omitempty"`
	System    string `json:"system,omitempty"`
	Precision string `json:"precision,omitempty"`
	Version   string `json:"backend_version,omitempty"`
	From      string `json:"measured_from,omitempty"`
	To        string `json:"measured_to,omitempty"`
	// GapAnalysis matches only rows from aiconfigurator's gap-analysis
	// collections (not InferenceX runs).
	GapAnalysis bool `json:"gap_analysis,omitempty"`

	// Checkpoint is the Hugging Face id InferenceX served ("" = the
	// catalog's checkpoint of model_path for the row's precision).
	Checkpoint string     `json:"checkpoint,omitempty"`
	Image      string     `json:"image,omitempty"`
	Args       []ServeArg `json:"args"`
	// Unmodelled lists launch settings BLIS does not model (they change
	// kernels or scheduling overheads the roofline does not see).
	Unmodelled []string `json:"not_modelled,omitempty"`
	Source     string   `json:"source"`
	Note       string   `json:"note,omitempty"`
	// NoAttentionDP, when set, says why the recipe's script cannot start
	// attention DP, so that rows the dump labels attention_dp_size N with
	// moe_ep_size N × TP ran as TP with --enable-expert-parallel.
	NoAttentionDP string `json:"no_attention_dp,omitempty"`
	// DPAttention, when set, says the recipe's script launches a sweep
	// entry with dp-attn as InferenceX's MiniMax scripts do.
	DPAttention *DPLaunch `json:"dp_attention,omitempty"`
}

// DPLaunch is how an InferenceX script starts a dp-attn entry of TP GPUs:
// --tensor-parallel-size 1 --data-parallel-size TP --enable-expert-parallel
// (benchmarks/single_node/minimaxm2.5_fp4_b200.sh @ a52c31a2). The dump
// writes such a row as tp_size = attention_dp_size = TP, moe_ep_size = TP².
type DPLaunch struct {
	From    string `json:"measured_from"` // rows measured before it are not known to have run so
	Why     string `json:"why"`
	Assumed bool   `json:"assumed,omitempty"`
}

// dpFP8Assumed is why the MiniMax FP8 recipes of vLLM 0.19 get the DP path.
var dpFP8Assumed = &DPLaunch{From: "2026-04-08", Assumed: true,
	Why: "the FP8 script at these dates is unread; InferenceX's MiniMax FP4 script launches dp-attn entries so from 2026-04-08 " +
		"(minimaxm2.5_fp4_b200.sh @ 49db2008, a52c31a2); the FP8 script's 2026-04-03 version has no DP path"}

// Common to InferenceX's vLLM single-node scripts unless a recipe says
// otherwise (shared/data/README.md).
const (
	srcCommon = "common to InferenceX's vLLM single-node scripts (shared/data/README.md)"
	srcGen    = "$MAX_MODEL_LEN from InferenceX's sweep generator"
)

var noPrefix = ServeArg{Flag: "enable-prefix-caching", Value: "false", Why: srcCommon}

// kimiInt4Args are the serve settings of InferenceX's Kimi-K2.5 INT4 B200
// runs of 2026-03-24 (benchmarks/single_node/kimik2.5_int4_b200.sh @ 1cb92d21
// as shared/data/README.md transcribes it).
var kimiInt4Args = []ServeArg{
	{Flag: "gpu-memory-utilization", Value: "0.95"},
	{Flag: "max-num-seqs", Value: "CONC"},
	{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
	{Flag: "enable-prefix-caching", Value: "true", Why: "the script passes no prefix-caching flag, so vLLM's default (on) applies"},
	{Flag: "moe-backend", Value: "flashinfer", Why: "VLLM_USE_FLASHINFER_MOE_INT4=1 in the script's environment (no FlashInfer INT4 MoE timings: priced with the Marlin INT4 law, said as a substitution)"},
	{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
}

// allAssumed marks every argument assumed (for rows whose run is not
// documented but that copy a documented group's deployment).
func allAssumed(args []ServeArg) []ServeArg {
	out := append([]ServeArg(nil), args...)
	for i := range out {
		out[i].Assumed = true
	}
	return out
}

// inferenceXServe is the table. Kimi-K2.5 FP4 groups are not transcribed:
// the catalog has no FP4 checkpoint of Kimi-K2.5, so those rows are skipped.
var inferenceXServe = []Recipe{
	{
		Key: "llama70b-fp8-h100", Model: "meta-llama/Llama-3.1-70B", System: "h100_sxm", Precision: "fp8", Version: "",
		From: "2025-10-29", To: "2025-10-29",
		Checkpoint: "nvidia/Llama-3.3-70B-Instruct-FP8", Image: "vllm/vllm-openai:v0.10.2",
		Args: []ServeArg{
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "10240"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "CONC"},
			{Flag: "enable-prefix-caching", Value: "false"},
			{Flag: "async-scheduling", Value: "true"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"PIECEWISE"}`, Why: "vLLM 0.10 default (FULL_AND_PIECEWISE became the default in 0.11, vllm-project/vllm#25444)"},
		},
		Unmodelled: []string{"TORCH_CUDA_ARCH_LIST=9.0"},
		Source:     "benchmarks/70b_fp8_h100_slurm.sh (cw runner) / benchmarks/70b_fp8_h100_docker.sh (cr runner) @ 9596d23d",
	},
	{
		Key: "llama70b-fp8-b200", Model: "meta-llama/Llama-3.1-70B", System: "b200_sxm", Precision: "fp8", Version: "",
		From: "2025-10-29", To: "2025-10-29",
		Checkpoint: "nvidia/Llama-3.3-70B-Instruct-FP8", Image: "vllm/vllm-openai:v0.10.2",
		Args: []ServeArg{
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "10240", Why: "workflow input"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "512"},
			noPrefix,
			{Flag: "async-scheduling", Value: "true"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"FULL_DECODE_ONLY"}`},
		},
		Unmodelled: []string{"compilation config: FlashInfer all-reduce + attention fusion, noop elimination, custom ops +quant_fp8 +rms_norm",
			"VLLM_FLASHINFER_ALLREDUCE_FUSION_THRESHOLDS_MB"},
		Source: "benchmarks/70b_fp8_b200_docker.sh @ 9596d23d",
		Note:   "which B200 runner ran these rows is unconfirmed",
	},
	{
		Key: "llama70b-fp4-b200", Model: "meta-llama/Llama-3.1-70B", System: "b200_sxm", Precision: "fp4", Version: "",
		From: "2025-10-29", To: "2025-10-29",
		Checkpoint: "nvidia/Llama-3.3-70B-Instruct-FP4", Image: "vllm/vllm-openai:v0.10.2",
		Args: []ServeArg{
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "ISL+OSL+20/200"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "512"},
			noPrefix,
			{Flag: "async-scheduling", Value: "true"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"FULL_DECODE_ONLY"}`, Why: "as the FP8 B200 script"},
		},
		Unmodelled: []string{"compilation fusions as the FP8 B200 script", "TORCH_CUDA_ARCH_LIST=10.0"},
		Source:     "benchmarks/70b_fp4_b200_docker.sh @ 9596d23d",
	},
	{
		Key: "gptoss-h100-v0.10", Model: "openai/gpt-oss-120b", System: "h100_sxm", Precision: "fp4", Version: "",
		From: "2025-11-02", To: "2025-12-05",
		Image: "vllm/vllm-openai:v0.10.2 (2025-11-02; later rows' image unconfirmed)",
		Args: []ServeArg{
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "10240"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "CONC"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			{Flag: "enable-prefix-caching", Value: "false"},
			{Flag: "async-scheduling", Value: "true"},
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"PIECEWISE"}`, Why: "vLLM 0.10 default (FULL_AND_PIECEWISE became the default in 0.11, vllm-project/vllm#25444)"},
		},
		Unmodelled: []string{"TORCH_CUDA_ARCH_LIST=9.0"},
		Source:     "benchmarks/gptoss_fp4_h100_slurm.sh @ e06929c7 / 25506e87 (same-day change 2025-12-05)",
	},
	{
		Key: "gptoss-h100-0.11.2", Model: "openai/gpt-oss-120b", System: "h100_sxm", Precision: "fp4", Version: "0.11.2",
		Image: "vllm/vllm-openai:v0.11.2",
		Args: []ServeArg{
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "10240"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "CONC"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			{Flag: "enable-prefix-caching", Value: "false"},
			{Flag: "async-scheduling", Value: "true"},
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
		},
		Unmodelled: []string{"TORCH_CUDA_ARCH_LIST=9.0"},
		Source:     "benchmarks/gptoss_fp4_h100_slurm.sh @ 4e135fd3",
	},
	{
		Key: "gptoss-h100-0.18.0", Model: "openai/gpt-oss-120b", System: "h100_sxm", Precision: "fp4", Version: "0.18.0",
		Image: "vllm/vllm-openai:v0.18.0",
		Args: []ServeArg{
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "10240"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "CONC"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			{Flag: "enable-prefix-caching", Value: "false"},
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "moe-backend", Value: "marlin", Why: "VLLM_MXFP4_USE_MARLIN=1 in the script's environment"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Source: "benchmarks/single_node/gptoss_fp4_h100.sh @ 79a42e20 (same-day change)",
	},
	{
		Key: "gptoss-b200-v0.10", Model: "openai/gpt-oss-120b", System: "b200_sxm", Precision: "fp4", Version: "",
		From: "2025-11-02", To: "2025-11-02",
		Image: "vllm/vllm-openai:v0.10.2 (per template)",
		Args: []ServeArg{
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "ISL+OSL+20/200"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "512"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			noPrefix,
			{Flag: "async-scheduling", Value: "true"},
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"FULL_AND_PIECEWISE"}`},
			{Flag: "moe-backend", Value: "flashinfer-mxfp8", Why: "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 in the script's environment"},
		},
		Unmodelled: []string{
			"FlashInfer all-reduce + attention fusion", "all-reduce fusion thresholds"},
		Source: "benchmarks/gptoss_fp4_b200_docker.sh @ e06929c7",
	},
	{
		Key: "gptoss-b200-0.15.1", Model: "openai/gpt-oss-120b", System: "b200_sxm", Precision: "fp4", Version: "0.15.1",
		Image: "vllm/vllm-openai:v0.15.1",
		Args: []ServeArg{
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "8192"},
			{Flag: "max-model-len", Value: "ISL+OSL+20/200"},
			{Flag: "gpu-memory-utilization", Value: "0.9"},
			{Flag: "max-num-seqs", Value: "512"},
			noPrefix,
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "moe-backend", Value: "flashinfer-mxfp8", Why: "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 in the script's environment"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"compilation passes fuse_allreduce_rms + eliminate_noops"},
		Source:     "benchmarks/single_node/gptoss_fp4_b200.sh @ 8944a358 (same-day change)",
	},
	{
		Key: "minimax-fp8-b200-0.17.0-pc", Model: "MiniMaxAI/MiniMax-M2.5", System: "b200_sxm", Precision: "fp8", Version: "0.17.0",
		To:    "2026-03-26",
		Image: "vllm/vllm-openai:v0.17.0-cu130",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.95"},
			{Flag: "block-size", Value: "32"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			{Flag: "enable-prefix-caching", Value: "true", Why: "not set in the script (vLLM default on) until 2026-03-27"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			{Flag: "moe-backend", Value: "triton", Why: "VLLM_USE_FLASHINFER_MOE_FP8=0 and VLLM_MOE_USE_DEEP_GEMM=0 in the script's environment"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--enable-expert-parallel (always on: the script tests EP_SIZE ≥ 1)"},
		Source:     "benchmarks/single_node/minimaxm2.5_fp8_b200.sh @ 64c20b6b (same-day change 2026-03-11)",
	},
	{
		Key: "minimax-fp8-b200-0.17.0", Model: "MiniMaxAI/MiniMax-M2.5", System: "b200_sxm", Precision: "fp8", Version: "0.17.0",
		From:  "2026-03-27",
		Image: "vllm/vllm-openai:v0.17.0-cu130",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.95"},
			{Flag: "block-size", Value: "32"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			{Flag: "enable-prefix-caching", Value: "false"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			{Flag: "moe-backend", Value: "triton", Why: "VLLM_USE_FLASHINFER_MOE_FP8=0 and VLLM_MOE_USE_DEEP_GEMM=0 in the script's environment"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--enable-expert-parallel (always on: the script tests EP_SIZE ≥ 1)"},
		Source:     "benchmarks/single_node/minimaxm2.5_fp8_b200.sh @ 626932a1",
	},
	{
		Key: "minimax-fp8-b200-0.19.0", Model: "MiniMaxAI/MiniMax-M2.5", System: "b200_sxm", Precision: "fp8", Version: "0.19.0",
		From:  "2026-04-03",
		Image: "vllm/vllm-openai:v0.19.0-cu130",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.90"},
			{Flag: "block-size", Value: "32"},
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "2*ISL"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			noPrefix,
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--stream-interval 20",
			"VLLM_FLASHINFER_ALLREDUCE_BACKEND=mnnvl (04-03) / VLLM_FLOAT32_MATMUL_PRECISION=high (04-22)", "--enable-expert-parallel when ep > 1"},
		Source: "benchmarks/single_node/minimaxm2.5_fp8_b200.sh @ bddbf403 (2026-04-03, same-day change) / 8c3eb5b8 (2026-04-22)",
		NoAttentionDP: "the script's 2026-04-03 version (VLLM_FLASHINFER_ALLREDUCE_BACKEND=mnnvl, as this group's first day; read in the whn09/InferenceX copy @ 43ae41b7) " +
			"reads only TP and EP_SIZE, and that day's dp-labelled rows measure within 1.5 % TPOT and 6 % TTFT of its TP + EP rows at equal concurrency",
		DPAttention: dpFP8Assumed,
	},
	{
		Key: "minimax-fp8-b300-0.19.0", Model: "MiniMaxAI/MiniMax-M2.5", System: "b300_sxm", Precision: "fp8", Version: "0.19.0",
		From:  "2026-04-17",
		Image: "vllm/vllm-openai:v0.19.0-cu130",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.90"},
			{Flag: "block-size", Value: "32"},
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "2*ISL"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			noPrefix,
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--stream-interval 20",
			"VLLM_FLASHINFER_ALLREDUCE_BACKEND=mnnvl (04-17) / VLLM_FLOAT32_MATMUL_PRECISION=high (04-21)", "--enable-expert-parallel when ep > 1"},
		Source:      "benchmarks/single_node/minimaxm2.5_fp8_b300.sh @ dd9c285b (2026-04-17) / 77b259a5 (2026-04-21, same-day change)",
		DPAttention: dpFP8Assumed,
	},
	{
		Key: "minimax-fp4-b200-0.19.0", Model: "MiniMaxAI/MiniMax-M2.5", System: "b200_sxm", Precision: "fp4", Version: "0.19.0",
		Checkpoint: "nvidia/MiniMax-M2.5-NVFP4", Image: "vllm/vllm-openai:v0.19.0-cu130",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.90"},
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "2*ISL"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			noPrefix,
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--stream-interval 20", "VLLM_FLOAT32_MATMUL_PRECISION=high (04-22)", "--enable-expert-parallel when ep > 1"},
		Source:     "benchmarks/single_node/minimaxm2.5_fp4_b200.sh @ 49db2008 (2026-04-08) / 8c3eb5b8 (2026-04-22)",
	},
	{
		Key: "minimax-fp4-b300-0.19.0", Model: "MiniMaxAI/MiniMax-M2.5", System: "b300_sxm", Precision: "fp4", Version: "0.19.0",
		Checkpoint: "nvidia/MiniMax-M2.5-NVFP4", Image: "vllm/vllm-openai:v0.19.0-cu130",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.90"},
			{Flag: "kv-cache-dtype", Value: "fp8"},
			{Flag: "max-num-batched-tokens", Value: "2*ISL"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			noPrefix,
			{Flag: "max-cudagraph-capture-size", Value: "2048"},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--stream-interval 20", "VLLM_FLOAT32_MATMUL_PRECISION=high (04-21)", "--enable-expert-parallel when ep > 1"},
		Source:     "benchmarks/single_node/minimaxm2.5_fp4_b300.sh @ 77b259a5 (same-day change)",
	},
	{
		// The nightly rows are wip=True (an unmerged branch): every value is
		// reported as assumed; the 0.19.0 recipe of the same chip is reused.
		Key: "minimax-fp8-b300-nightly", Model: "MiniMaxAI/MiniMax-M2.5", System: "b300_sxm", Precision: "fp8", Version: "nightly-*",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.90", Assumed: true},
			{Flag: "block-size", Value: "32", Assumed: true},
			{Flag: "kv-cache-dtype", Value: "fp8", Assumed: true},
			{Flag: "max-num-batched-tokens", Value: "2*ISL", Assumed: true},
			{Flag: "max-model-len", Value: "GEN", Assumed: true},
			{Flag: "enable-prefix-caching", Value: "false", Assumed: true},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Source: "none in main (wip=True, unmerged PR branch); the 0.19.0 B300 FP8 recipe is reused",
	},
	{
		Key: "minimax-fp4-nightly", Model: "MiniMaxAI/MiniMax-M2.5", Precision: "fp4", Version: "nightly-*",
		Checkpoint: "nvidia/MiniMax-M2.5-NVFP4",
		Source:     "none in main (wip=True, unmerged PR branch)",
	},
	{
		Key: "minimax-fp8-h100-0.18.0", Model: "MiniMaxAI/MiniMax-M2.5", System: "h100_sxm", Precision: "fp8", Version: "0.18.0",
		Image: "vllm/vllm-openai:v0.18.0",
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.90"},
			{Flag: "max-num-seqs", Value: "256"},
			{Flag: "kv-cache-dtype", Value: "auto", Why: "not set in the script (vLLM default)"},
			{Flag: "max-model-len", Value: "GEN", Why: srcGen},
			{Flag: "enable-prefix-caching", Value: "true", Assumed: true,
				Why: "the script passes no prefix-caching flag (read at a later commit, 34bc7c40), so vLLM's default (on) applies; not confirmed at 626932a1"},
			{Flag: "compilation-config", Value: `{"cudagraph_mode":"PIECEWISE"}`},
			{Flag: "async-scheduling", Value: "true", Assumed: true, Why: asyncDefault},
		},
		Unmodelled: []string{"--enable-expert-parallel (EP_SIZE 4)"},
		Source:     "benchmarks/single_node/minimaxm2.5_fp8_h100.sh @ 626932a1",
		NoAttentionDP: "the script reads only TP and EP_SIZE and passes --tensor-parallel-size=$TP (no --data-parallel-size; read @ 7638a90e and 34bc7c40), " +
			"and 13 of the 15 rows so labelled (measured 2026-03-28) are within 1 % TPOT and 13 % TTFT of the 2026-03-27 TP4 EP4 rows at equal concurrency " +
			"(median 0.5 % / 3.7 %; 8192/1024 at concurrency 4 and 16 differ both ways, by up to 2.3×)",
	},
	{
		// Not an InferenceX run: aiconfigurator's gap-analysis collection
		// of vLLM 0.12.0 on H100. No launch script is available.
		Key: "qwen3-32b-h100-gap", Model: "Qwen/Qwen3-32B", System: "h100_sxm", Precision: "*", Version: "0.12.0",
		GapAnalysis: true,
		Args: []ServeArg{
			{Flag: "gpu-memory-utilization", Value: "0.9", Assumed: true, Why: "vLLM default"},
			{Flag: "kv-cache-dtype", Value: "auto", Assumed: true, Why: "vLLM default"},
			{Flag: "enable-prefix-caching", Value: "false", Assumed: true, Why: "as InferenceX; immaterial for random prompts"},
			{Flag: "async-scheduling", Value: "false", Assumed: true, Why: "vLLM 0.12 default (off until vllm#27614 turned it on, v0.14)"},
		},
		Source: "none: aiconfigurator gap-analysis collection (not an InferenceX run); vLLM 0.12.0 defaults for the rest",
	},
	{
		Key: "kimi-int4-b200-0.15.1", Model: "moonshotai/Kimi-K2.5", System: "b200_sxm", Precision: "int4", Version: "0.15.1",
		From: "2026-03-24", To: "2026-03-24",
		Image:      "vllm/vllm-openai:v0.15.1",
		Args:       kimiInt4Args,
		Unmodelled: []string{"compilation_config.pass_config.fuse_allreduce_rms", "--reasoning-parser kimi_k2 --tool-call-parser kimi_k2 (no effect on random prompts)"},
		Source:     "benchmarks/single_node/kimik2.5_int4_b200.sh @ 1cb92d21 (same-day change)",
	},
	{
		// aiconfigurator's gap analysis of the same deployment (same model,
		// chip, version, TP 8 and shapes as the 2026-03-24 runs); its own
		// launch is not documented, so InferenceX's settings are assumed.
		Key: "kimi-int4-b200-gap", Model: "moonshotai/Kimi-K2.5", System: "b200_sxm", Precision: "int4", Version: "0.15.1",
		GapAnalysis: true,
		Args:        allAssumed(kimiInt4Args),
		Unmodelled:  []string{"compilation_config.pass_config.fuse_allreduce_rms (if set as in InferenceX's run)"},
		Source:      "none: aiconfigurator gap-analysis collection (kimi-k2.5-gap-analysis.csv); InferenceX's kimik2.5_int4_b200.sh settings assumed",
	},
}

// genericRecipe serves rows no recipe matches (and, with --backend all,
// SGLang and TRT-LLM rows simulated as if vLLM): InferenceX's common vLLM
// settings, every one assumed.
var genericRecipe = Recipe{
	Key: "generic",
	Args: []ServeArg{
		{Flag: "gpu-memory-utilization", Value: "0.9", Assumed: true},
		{Flag: "max-num-seqs", Value: "CONC", Assumed: true},
		{Flag: "max-model-len", Value: "GEN", Assumed: true},
		{Flag: "enable-prefix-caching", Value: "false", Assumed: true},
	},
	Source: "no InferenceX vLLM script transcribed for this group: InferenceX's common vLLM settings, all assumed",
}

// matches reports whether recipe r covers row.
func (r *Recipe) matches(row *Row) bool {
	if r.GapAnalysis != row.GapAnalysis() {
		return false
	}
	if r.Model != row.ModelPath || (r.System != "" && r.System != row.System) {
		return false
	}
	if r.Precision != "*" && r.Precision != row.Precision {
		return false
	}
	if v, ok := strings.CutSuffix(r.Version, "*"); ok {
		if !strings.HasPrefix(row.BackendVersion, v) {
			return false
		}
	} else if r.Version != row.BackendVersion {
		return false
	}
	d := row.MeasuredDate()
	if (r.From != "" || r.To != "") && d == "" {
		return false
	}
	return (r.From == "" || d >= r.From) && (r.To == "" || d <= r.To)
}

// RecipeFor returns the recipe of a vLLM row, or nil.
func RecipeFor(row *Row) *Recipe {
	for i := range inferenceXServe {
		if inferenceXServe[i].matches(row) {
			return &inferenceXServe[i]
		}
	}
	return nil
}

// expandValue turns a recipe value into the flag value for one row.
func expandValue(v string, row *Row, conc int) (string, error) {
	switch v {
	case "CONC":
		return strconv.Itoa(conc), nil
	case "2*ISL":
		return strconv.Itoa(2 * row.ISL), nil
	case "GEN":
		return strconv.Itoa(row.ISL + row.OSL + genMargin(row.MeasuredDate())), nil
	case "ISL+OSL+20/200":
		m := 20
		if row.ISL == 8192 || row.OSL == 8192 {
			m = 200
		}
		return strconv.Itoa(row.ISL + row.OSL + m), nil
	}
	if strings.ContainsAny(v, "+*") || strings.Contains(v, "ISL") || strings.Contains(v, "OSL") || v == "" {
		return "", fmt.Errorf("validate: recipe value %q is not a known form", v)
	}
	return v, nil
}

// genMargin is the margin InferenceX's sweep generator adds to ISL+OSL for
// $MAX_MODEL_LEN: 200, and 256 from 2026-04-20 (shared/data/README.md).
func genMargin(date string) int {
	if date != "" && date >= "2026-04-20" {
		return 256
	}
	return 200
}

// asyncDefault is why recipes of vLLM ≥ 0.15 that do not pass
// --async-scheduling get it: vLLM turned async scheduling on by default in
// its Q4-2025 async-scheduling plan (vllm#27679, item vllm#27614), and
// vllm#31998 (2026-01-08) extended that default to speculative decoding;
// 0.21 and 0.24 are documented default-on. Assumed, not read from the runs.
const asyncDefault = "not passed by the script: vLLM's default since async scheduling became default-on (vllm#27614, before v0.15)"

// RecipeByKey is the recipe named key (the generic one included), or nil.
func RecipeByKey(key string) *Recipe {
	for i := range inferenceXServe {
		if inferenceXServe[i].Key == key {
			return &inferenceXServe[i]
		}
	}
	if key == genericRecipe.Key {
		return &genericRecipe
	}
	return nil
}

// RecipeKeys lists every recipe's key in table order, the generic one last.
func RecipeKeys() []string {
	var keys []string
	for i := range inferenceXServe {
		keys = append(keys, inferenceXServe[i].Key)
	}
	return append(keys, genericRecipe.Key)
}
