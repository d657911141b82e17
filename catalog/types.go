// Package catalog holds BLIS's embedded, versioned data: Hugging Face model
// configs and the operator graphs derived from them, chip descriptions,
// fitted kernel coefficients and serving-stack facts (catalog/stacks), each
// with its provenance, behind strict loaders. It knows nothing of simulation.
package catalog

// Model is one embedded model: its identity plus the architecture numbers the
// kernel prices steps from, read from the model's config.json.
type Model struct {
	ID      string   // Hugging Face id, e.g. "meta-llama/Llama-3.1-8B-Instruct"
	Aliases []string // short names accepted by --model, lower case
	Source  string   // provenance of the embedded config.json

	Architecture string // architectures[0], e.g. "LlamaForCausalLM"
	ModelType    string // model_type
	// Wrapper is the multimodal wrapper (its architectures[0]) when the
	// decoder was read from its text_config; the vision tower is not priced
	// (text prompts never run it). VisionParams are its parameters where
	// the catalog counts them in the weights (Qwen3-VL; 0 otherwise).
	Wrapper      string
	VisionParams float64

	NumLayers        int // num_hidden_layers
	HiddenSize       int
	NumHeads         int // num_attention_heads
	NumKVHeads       int // num_key_value_heads (== NumHeads for MHA; 1 latent "head" for MLA)
	HeadDim          int // head_dim, or hidden_size/num_attention_heads
	IntermediateSize int // dense MLP intermediate size
	VocabSize        int
	TieEmbeddings    bool
	MaxPositions     int // max_position_embeddings (vLLM's default max-model-len)

	// Weight dtype of the checkpoint: "bfloat16", "float16", "fp8", "mxfp4", "nvfp4", "int4", "int8".
	WeightDtype string
	// WeightBytesPerParam for the checkpoint's GEMM weights (2 for bf16, 1 for fp8, 0.5 for fp4/int4).
	// It is the routed experts' value for MoE models; see the next two fields
	// for the layers a quantization config leaves in Dtype. Block and group
	// scales are included (fp8 with 128×128 blocks: 1 + 4/16384).
	WeightBytesPerParam float64
	// AttnWeightBytesPerParam is for the attention projections (Dtype's size
	// when the quantization config excludes them, as gpt-oss's mxfp4 does).
	AttnWeightBytesPerParam float64
	// DenseWeightBytesPerParam is for dense-MLP layers and shared experts.
	DenseWeightBytesPerParam float64
	// AttnWeightDtype and DenseWeightDtype name the formats of those two
	// parts in WeightDtype's vocabulary (Dtype where the part is left
	// unquantized). A mixed-precision checkpoint stores each part in its
	// own format (NVIDIA's DeepSeek-V4-Flash-NVFP4: fp8 blocks for both,
	// nvfp4 routed experts), which its graph's GEMM labels must carry.
	AttnWeightDtype, DenseWeightDtype string
	// QuantMethod is the checkpoint's quantization scheme ("" when none):
	// "fp8", "mxfp4", "modelopt", "compressed-tensors", "awq", "gptq".
	QuantMethod string
	// WeightBlock is the fp8 weight_block_size (e.g. 128 for 128×128 block
	// scales, vLLM's block-quantized path); 0 for per-tensor/channel scales.
	WeightBlock int
	// ActDtype is what the quantized GEMMs' activations enter the kernel
	// in: "fp8" (W8A8 fp8), "nvfp4" (W4A4), "int8" (W8A8 int8), or ""
	// for weight-only schemes (AWQ, GPTQ, W4A16/W8A16, gpt-oss mxfp4), whose
	// activations stay in Dtype. The kernel package picks vLLM's kernel per
	// chip from it, WeightDtype and WeightBlock.
	ActDtype string
	// WeightGroup is the number of weights sharing one scale in group-wise
	// formats (AWQ/GPTQ/compressed-tensors group_size, 16 for NVFP4, 32 for
	// MXFP4); 0 for per-tensor, per-channel and block scales.
	WeightGroup int
	// ActOrder is GPTQ's desc_act / compressed-tensors' actorder: weights
	// reordered by activation magnitude, with a g_idx per input channel
	// (Machete cannot run it where K is split across ranks).
	ActOrder bool
	// QuantMinCapability is the lowest CUDA compute capability (×10) the
	// checkpoint's vLLM quantization config accepts (its
	// get_min_capability; 89 for ModelOpt FP8), or 0 when no config-level
	// floor applies above the chips in the catalog.
	QuantMinCapability int
	// QuantScheme names the resolved checkpoint format for display, e.g.
	// "W4A16 int4 g128 (AWQ, zero points)".
	QuantScheme string
	// Dtype is the unquantized tensors' dtype (torch_dtype / dtype:
	// "bfloat16", "float16"): embeddings, norms, LM head, activations, and
	// the KV cache with --kv-cache-dtype auto. DtypeBytes is its size.
	Dtype      string
	DtypeBytes float64

	// Mixture of experts (zero values for dense models).
	NumExperts          int // routed experts
	ExpertsPerToken     int // top-k
	MoEIntermediateSize int // per-expert intermediate size
	NumSharedExperts    int
	FirstDenseLayers    int // first_k_dense_replace: leading layers with a dense MLP
	MoELayerFreq        int // every Nth layer is MoE (1 = all, after FirstDenseLayers)
	// SharedExpertIntermediateSize is one shared expert's intermediate size
	// (moe_intermediate_size for DeepSeek, shared_expert_intermediate_size
	// for Qwen-MoE).
	SharedExpertIntermediateSize int
	// NumMoELayers is how many layers route to experts, counted with the
	// family's own rule (DeepSeek: i ≥ first_k_dense_replace and
	// i % moe_layer_freq == 0; Qwen-MoE: (i+1) % decoder_sparse_step == 0
	// and i not in mlp_only_layers; Mixtral, gpt-oss, MiniMax: every layer).
	NumMoELayers int

	// Multi-head latent attention (DeepSeek-style); KVLoraRank > 0 means MLA.
	KVLoraRank    int
	QLoraRank     int
	QKRopeHeadDim int
	QKNopeHeadDim int
	VHeadDim      int

	// DeepSeek sparse attention (DSA: DeepSeek-V3.2, GLM-5): a lightning
	// indexer of IndexHeads heads of IndexHeadDim scores every cached token
	// and the MLA attention reads only the IndexTopK best per query.
	// IndexTopK > 0 means DSA (vLLM switches it on when index_topk is set).
	IndexTopK    int
	IndexHeads   int
	IndexHeadDim int

	// Sliding-window attention: window in tokens and how many layers use it
	// (0 when every layer attends to the full context).
	SlidingWindow       int
	SlidingWindowLayers int

	// Chunked local attention (Llama 4): the RoPE layers attend only
	// within chunks of AttentionChunk tokens; the catalog marks them as
	// sliding layers with a window of one chunk, which holds and reads the
	// same tokens while a request is within its first chunk and at most
	// twice the chunk's after. NoPELayers[i] is true for the global layers
	// that skip RoPE (nil when every layer rotates).
	AttentionChunk int
	NoPELayers     []bool

	// Per-layer structure, indexed by layer: MoELayers[i] is true where
	// layer i routes to experts (nil for dense models), SlidingLayers[i]
	// where it attends through the sliding window (nil when none does).
	MoELayers     []bool
	SlidingLayers []bool

	// Details the operator graph (graph.go) needs.
	AttentionBias bool // attention_bias (or bias): QKV and o_proj carry biases
	MLPBias       bool // mlp_bias: the dense MLP's projections carry biases
	QKNorm        bool // use_qk_norm (MiniMax-M2); Qwen3's per-head q/k norm comes with the architecture
	// Granite's scalars (GraniteForCausalLM; 1 when the config omits one,
	// transformers' GraniteConfig default; 0 for other architectures):
	// the embedding output, each block's output before its residual add
	// and the logits are multiplied (logits divided) by them, and the
	// attention softmax scale is AttentionMultiplier instead of 1/√head_dim.
	EmbeddingMultiplier, ResidualMultiplier, AttentionMultiplier, LogitsScaling float64
	// OPT (OPTForCausalLM, vLLM opt.py): a non-gated MLP (fc1, the
	// activation, fc2: 2·H·I weights, not gate/up/down's 3·H·I), a learned
	// absolute-position table of LearnedPositions rows instead of RoPE
	// (max_position_embeddings + opt.py's offset of 2; 0 = RoPE), LayerNorm
	// instead of RMSNorm (with weight and bias when LayerNormAffine),
	// before (PreLayerNorm) or after each block, and a final LayerNorm
	// only when FinalLayerNorm.
	UngatedMLP                                    bool
	LearnedPositions                              int
	PreLayerNorm, FinalLayerNorm, LayerNormAffine bool
	// RotaryDim is how many dimensions of each head RoPE rotates:
	// rotary_dim when given, else head_dim (qk_rope_head_dim for MLA).
	RotaryDim int
	// MoE routing: scoring_func ("softmax" or "sigmoid"), grouped top-k
	// (n_group and topk_group; 0 when plain top-k) and whether the router
	// adds an e_score_correction_bias (topk_method noaux_tc, use_routing_bias).
	ScoringFunc     string
	NumExpertGroups int
	TopKGroups      int
	RoutingBias     bool
	// NumNextNLayers is num_nextn_predict_layers: the multi-token-prediction
	// layers a DeepSeek-style checkpoint ships for speculative decoding.
	NumNextNLayers int
	// NumMTPModules is num_mtp_modules when use_mtp is set (MiniMax-M2).
	NumMTPModules int
	// Engram is the model's conditional memory (engram.go); nil when it
	// has none.
	Engram *Engram

	// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5: layer_types
	// "linear_attention"). LinearLayers[i] is true where layer i is a GDN
	// layer (nil when none is); such a layer keeps a fixed-size recurrent
	// state per request instead of a per-token KV cache. The state is a
	// causal-conv window of LinearConvKernel−1 tokens over the q, k and v
	// channels (in Dtype) and one LinearKeyHeadDim × LinearValueHeadDim
	// matrix per value head (in SSMStateDtype).
	LinearLayers       []bool
	NumLinearLayers    int
	LinearKeyHeads     int    // linear_num_key_heads
	LinearValueHeads   int    // linear_num_value_heads
	LinearKeyHeadDim   int    // linear_key_head_dim
	LinearValueHeadDim int    // linear_value_head_dim
	LinearConvKernel   int    // linear_conv_kernel_dim
	SSMStateDtype      string // mamba_ssm_dtype ("float32", or Dtype when absent)
	SSMStateDtypeBytes float64
	AttnOutputGate     bool // attn_output_gate: q_proj also emits a sigmoid gate per head (Qwen3-Next, Qwen3.5)
	MTPHiddenLayers    int  // mtp_num_hidden_layers: the MTP draft layers a Qwen3-Next/3.5 checkpoint ships

	// DeepSeek-V4 (DeepseekV4ForCausalLM; zero values otherwise). Its
	// attention keeps one 512-wide KV head (NumKVHeads 1, HeadDim 512, the
	// last QKRopeHeadDim dims rotated), queries through the QLoraRank
	// latent, and a raw window of SlidingWindow tokens in every layer.
	// CompressRatios[i] is layer i's kind: 0 sliding-window only, 4 CSA
	// (compressed sparse attention: one compressed entry per 4 tokens, of
	// which a lightning indexer of IndexHeads × IndexHeadDim keeps
	// IndexTopK per query), 128 HCA (heavily compressed: one entry per 128
	// tokens, all read). MTPCompressRatio is the MTP layer's (the config
	// list's last entry).
	CompressRatios   []int
	MTPCompressRatio int
	// mHC (manifold-constrained hyper-connections): HCMult copies of the
	// hidden state replace the residual stream; each block reads and
	// writes them through mixing weights made doubly stochastic by
	// HCSinkhornIters Sinkhorn-Knopp iterations (HCEps the epsilon).
	HCMult          int
	HCSinkhornIters int
	HCEps           float64
	// OLoraRank and OGroups: the grouped low-rank output projection
	// (wo_a maps each of OGroups groups of heads to OLoraRank, wo_b the
	// concatenation back to the hidden size).
	OLoraRank, OGroups int
	// NumHashLayers: the first MoE layers route each token by a fixed
	// token-id → experts table instead of a learned top-k.
	NumHashLayers int
	// ExpertDtype is the routed experts' checkpoint format: "fp4"
	// (expert_dtype fp4: MXFP4-like, one ue8m0 scale per 32 values),
	// "nvfp4" (expert_dtype fp4 with moe_quant_algo NVFP4: the decoder
	// layers' experts ModelOpt NVFP4, the MTP layer's MXFP4) or the linear
	// layers' ("fp8").
	ExpertDtype string
	// SwigluLimit clamps the experts' SwiGLU (swiglu_limit; 0 when absent).
	SwigluLimit float64
	// CompressRopeTheta is the RoPE base of the compressed layers.
	CompressRopeTheta float64
}

// IsHybridLinear reports whether some layers are Gated DeltaNet layers.
func (m *Model) IsHybridLinear() bool { return m.NumLinearLayers > 0 }

// LinearConvDim is the channels the GDN causal conv runs over, all ranks:
// q and k (key heads × key dim each) and v (value heads × value dim).
func (m *Model) LinearConvDim() int {
	return 2*m.LinearKeyHeads*m.LinearKeyHeadDim + m.LinearValueHeads*m.LinearValueHeadDim
}

// LinearStateBytes is one GDN layer's per-request state on one of tp
// ranks, as vLLM sizes it (vllm/model_executor/layers/mamba/mamba_utils.py
// MambaStateShapeCalculator.gated_delta_net_state_shape @1936cf38): the
// conv state (conv_kernel − 1) × conv_dim/tp in the model dtype and the
// temporal state value_heads/tp × key_dim × value_dim in the ssm dtype.
func (m *Model) LinearStateBytes(tp int) (conv, ssm float64) {
	tp = max(tp, 1)
	conv = float64((m.LinearConvKernel-1)*(m.LinearConvDim()/tp)) * m.DtypeBytes
	ssm = float64(m.LinearValueHeads/tp*m.LinearKeyHeadDim*m.LinearValueHeadDim) * m.SSMStateDtypeBytes
	return conv, ssm
}

// IsDSV4 reports whether the model is DeepSeek-V4 (compressed attention,
// mHC, hash-routed layers).
func (m *Model) IsDSV4() bool { return m.Architecture == archDSV4 }

// IsMoE reports whether the model routes tokens to experts.
func (m *Model) IsMoE() bool { return m.NumExperts > 0 }

// IsDSA reports whether the model uses DeepSeek sparse attention (MLA
// with a lightning indexer's top-k selection).
func (m *Model) IsDSA() bool { return m.IndexTopK > 0 && m.IsMLA() }

// IndexerCacheBytes is what one token adds to a DSA layer's indexer key
// cache on every rank, whatever the KV dtype: index_head_dim fp8 values
// and one fp32 scale per 128 (deepseek_v2.py DeepseekV32IndexerCache,
// uint8, head_dim + head_dim/128·4); 0 without DSA.
func (m *Model) IndexerCacheBytes() int {
	if !m.IsDSA() {
		return 0
	}
	return m.IndexHeadDim + (m.IndexHeadDim+127)/128*4
}

// IsMLA reports whether the model uses multi-head latent attention.
func (m *Model) IsMLA() bool { return m.KVLoraRank > 0 }

// NumDenseLayers is the number of layers with a dense MLP.
func (m *Model) NumDenseLayers() int { return m.NumLayers - m.NumMoELayers }

// Chip is one accelerator with the numbers the roofline needs. Every number
// has its source in the embedded YAML file it is read from.
type Chip struct {
	Name    string   // canonical name, e.g. "h100"
	Aliases []string // accepted spellings, lower case, e.g. "h100_sxm"
	Vendor  string

	MemBytes    float64 // HBM capacity, bytes
	MemBW       float64 // HBM bandwidth, bytes/s
	BF16FLOPS   float64 // dense BF16 tensor-core peak, FLOP/s
	FP8FLOPS    float64 // dense FP8 peak (0 if unsupported)
	FP4FLOPS    float64 // dense FP4 peak (0 if unsupported)
	SMs         int
	NVLinkBW    float64 // per GPU, one direction, bytes/s
	InterNode   float64 // per GPU, one direction, bytes/s
	PCIeBW      float64 // bytes/s one direction
	GPUsPerNode int

	// HostLinkBW is the bandwidth in bytes/s, per GPU and per direction,
	// between the GPU and host memory: what KV offload copies (vLLM's
	// OffloadingConnector, LMCache) move over. It is PCIeBW unless the
	// host is reached another way (GB200: NVLink-C2C to the Grace CPU).
	// Its latency is left to the caller (the fabric's PCIe link).
	HostLinkBW float64

	// VisibleMemBytes is the total the CUDA driver reports
	// (torch.cuda.mem_get_info()[1]), which vLLM multiplies by
	// --gpu-memory-utilization. It is a little under MemBytes.
	VisibleMemBytes float64
	// MemBWEfficiency is the fraction of MemBW that streaming kernels reach.
	MemBWEfficiency float64
	// P2PLatency is the fixed cost of one collective step, seconds.
	P2PLatency float64
	// NCCLMemBytes is the memory NCCL and custom all-reduce buffers take
	// per GPU, by tensor-parallel size (use NCCLBytes to look it up).
	NCCLMemBytes map[int]float64
	Description  string

	Sources map[string]string // field name → where the number comes from

	// CoefficientsFrom names a chip of the same architecture whose fitted
	// kernel laws price this one where it has no measured tables of its
	// own: the laws are efficiencies against the chip's peaks and
	// bandwidths, so they are resolved against this chip's numbers. ""
	// when the chip has its own coefficients or no sibling.
	CoefficientsFrom string
}

// NCCLBytes is the communication-buffer memory per GPU for a tensor-parallel
// group of tp GPUs: the entry for tp, else the one for the largest smaller
// size listed, 0 for tp ≤ 1.
func (c *Chip) NCCLBytes(tp int) float64 {
	if tp <= 1 {
		return 0
	}
	if v, ok := c.NCCLMemBytes[tp]; ok {
		return v
	}
	best, bestTP := 0.0, 0
	for k, v := range c.NCCLMemBytes {
		if k <= tp && k > bestTP {
			best, bestTP = v, k
		}
	}
	return best
}
