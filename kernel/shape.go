package kernel

import (
	"math"

	"blis/catalog"
)

// vocabPadding is vLLM's DEFAULT_VOCAB_PADDING_SIZE: embedding and LM-head
// rows are padded to a multiple of 64 before being split across TP ranks
// (vllm/model_executor/layers/vocab_parallel_embedding.py).
const vocabPadding = 64

// shape is one TP rank's view of a deployment: parameter counts, bytes per
// parameter and per-token sizes, all per rank. Both the memory plan and the
// roofline read it, so they agree on what a rank holds.
//
// Sharding follows vLLM's tensor-parallel layers: QKV and gate/up
// projections are column-parallel and o/down projections row-parallel
// (split by TP); KV heads are split when there are at least TP of them and
// replicated otherwise; embeddings and the LM head are vocab-parallel; MoE
// experts are each split by TP (no expert parallelism); routers, norms and
// MLA's q_a/kv_a down-projections are replicated.
type shape struct {
	m  *catalog.Model
	c  *catalog.Chip
	tp float64

	L, Lmoe, Ldense, Lsw, Lfull float64
	H                           float64
	vocabPadded                 float64
	headsR, kvHeadsR            float64 // per rank
	dtypeB                      float64 // activations, embeddings, norms, LM head

	// Bytes per parameter after --quantization.
	attnBpp, denseBpp, expertBpp float64
	attnDtype, mlpDtype          string // what the GEMMs run in: "bfloat16", "fp8", "fp4", "int4"

	// Parameters per rank.
	attnLinear   float64 // one layer's attention projections
	denseMLP     float64 // one dense layer's MLP
	expert       float64 // one routed expert in one layer
	sharedExpert float64 // all shared experts of one layer
	router       float64 // one MoE layer's router (replicated)
	normsLayer   float64 // one layer's norm weights
	embed        float64
	lmHead       float64 // 0 when tied to the embedding
	lmHeadGEMM   float64 // the LM head's GEMM parameters (counted even when tied)
	finalNorm    float64
	ropeCache    float64 // bytes of the cos/sin cache buffer
	positions    float64 // a learned position table's parameters (OPT; replicated)
	vision       float64 // a multimodal wrapper's vision-tower parameters on this rank

	// Per token.
	kvBytesLayer float64 // KV bytes one token adds to one attention layer on this rank (a hybrid-linear model's GDN layers add none)
	// Hybrid linear attention (mamba.go): the GDN layers and one GDN
	// layer's per-request state, on this rank.
	Llin, linStateLayer float64
	qkvOut              float64 // attention input projection width per rank
	attnOut             float64 // attention output width per rank (input of o_proj)
	mlpWidth            float64 // intermediate activations per token per MoE/dense layer (widest)
}

func newShape(d Deployment) shape {
	m, c := d.Model, d.Chip
	s := shape{m: m, c: c, tp: float64(d.TP)}
	tp := s.tp
	s.L = float64(m.NumLayers)
	s.Lmoe = float64(m.NumMoELayers)
	s.Ldense = s.L - s.Lmoe
	s.Lsw = float64(m.SlidingWindowLayers)
	s.Lfull = s.L - s.Lsw
	s.H = float64(m.HiddenSize)
	s.vocabPadded = math.Ceil(float64(m.VocabSize)/vocabPadding) * vocabPadding
	s.dtypeB = m.DtypeBytes
	if s.dtypeB <= 0 {
		s.dtypeB = 2
	}
	s.headsR = float64(m.NumHeads) / tp
	s.kvHeadsR = math.Max(1, float64(m.NumKVHeads)/tp)

	s.attnBpp, s.denseBpp, s.expertBpp = m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam, m.WeightBytesPerParam
	s.attnDtype, s.mlpDtype = gemmDtype(m.AttnWeightBytesPerParam, m.DtypeBytes, m.WeightDtype), gemmDtype(m.WeightBytesPerParam, m.DtypeBytes, m.WeightDtype)
	if m.QuantMethod != "" && c != nil {
		// The quantized GEMMs' math runs in what vLLM's kernel for the
		// format on this chip runs it in (ResolveQuant): weight-only
		// kernels (Marlin, Machete, mxfp4×bf16) at the BF16 rate, W4A4
		// nvfp4 on FP4 units only on SM100. Validate reports the formats
		// a chip cannot run.
		if qk, err := ResolveQuant(m, c); err == nil {
			if s.mlpDtype != "bfloat16" {
				s.mlpDtype = qk.Compute
				if label := expertLabel(m); label != "" {
					// DeepSeek-V4's 4-bit experts run their own kernel.
					if ek, err := ExpertKernel(m, c, label); err == nil {
						s.mlpDtype = ek.Compute
					}
				}
			}
			if s.attnDtype != "bfloat16" && m.AttnWeightBytesPerParam == m.WeightBytesPerParam {
				s.attnDtype = qk.Compute
			}
		}
	}
	if d.Quantization == "fp8" && m.QuantMethod == "" {
		// vLLM's online FP8 (Fp8Config without a checkpoint scheme) casts
		// every linear layer and MoE expert to FP8 with one scale per
		// tensor; the LM head and embeddings stay in the model dtype.
		s.attnBpp, s.denseBpp, s.expertBpp = 1, 1, 1
		s.attnDtype, s.mlpDtype = "fp8", "fp8"
	}

	H, d0 := s.H, float64(m.HeadDim)
	if m.IsMLA() {
		hr := s.headsR
		qk := float64(m.QKNopeHeadDim + m.QKRopeHeadDim)
		kvl, rope, v := float64(m.KVLoraRank), float64(m.QKRopeHeadDim), float64(m.VHeadDim)
		var q float64
		if m.QLoraRank > 0 {
			ql := float64(m.QLoraRank)
			q = H*ql + ql*hr*qk // q_a (replicated) + q_b (column-parallel)
			s.normsLayer += ql  // q_a_layernorm
		} else {
			q = H * hr * qk
		}
		kvA := H * (kvl + rope)                          // kv_a_proj_with_mqa (replicated)
		kvB := kvl * hr * (float64(m.QKNopeHeadDim) + v) // kv_b_proj (column-parallel)
		o := hr * v * H
		s.attnLinear = q + kvA + kvB + o
		s.normsLayer += kvl // kv_a_layernorm
		s.kvBytesLayer = (kvl + rope)
		s.qkvOut = hr*qk + kvl + rope
		s.attnOut = hr * v
		if m.IsDSA() {
			// The indexer, replicated: wq_b and wk in the attention
			// dtype; weights_proj (unquantized) and k_norm's weight and
			// bias with the norms, which are in the model dtype.
			ih, id := float64(m.IndexHeads), float64(m.IndexHeadDim)
			s.attnLinear += float64(m.QLoraRank)*ih*id + H*id
			s.normsLayer += H*ih + 2*id
		}
	} else {
		s.qkvOut = (s.headsR + 2*s.kvHeadsR) * d0
		s.attnOut = s.headsR * d0
		s.attnLinear = H*s.qkvOut + s.attnOut*H
		s.kvBytesLayer = 2 * s.kvHeadsR * d0
	}
	kvB, _ := kvDtypeBytes(d.KVCacheDtype, s.dtypeB)
	s.kvBytesLayer *= kvB
	if m.IsDSA() {
		s.kvBytesLayer = dsaKVBytesLayer(m, kvB, c.FP4FLOPS > 0)
	}
	s.normsLayer += 2 * H // input and post-attention RMSNorm
	s.finalNorm = H
	if m.LearnedPositions > 0 { // OPT: LayerNorms, weight and bias each (or none)
		s.normsLayer, s.finalNorm = 0, 0
		if m.LayerNormAffine {
			s.normsLayer = 4 * H
			if m.FinalLayerNorm {
				s.finalNorm = 2 * H
			}
		}
	}
	if m.IsHybridLinear() {
		hybridLinearShape(d, &s)
	}

	// Gated MLPs (SwiGLU): gate, up and down, 3·H·I parameters; OPT's
	// fc1 and fc2 hold 2·H·I. The activations per token are as wide: gate/up
	// 2I and the activation's I, or fc1's I and the activation's I.
	mats := 3.0
	if m.UngatedMLP {
		mats = 2
	}
	s.denseMLP = mats * H * float64(m.IntermediateSize) / tp
	dense := mats * float64(m.IntermediateSize) / tp
	s.mlpWidth = dense
	if m.IsMoE() {
		// Routed experts are split over every GPU of the DP group
		// (Deployment.DP); shared experts are a dense MLP of each TP group.
		s.expert = 3 * H * float64(m.MoEIntermediateSize) / (tp * float64(d.dpSize()))
		s.sharedExpert = float64(m.NumSharedExperts) * 3 * H * float64(m.SharedExpertIntermediateSize) / tp
		s.router = H * float64(m.NumExperts)
		k := float64(m.ExpertsPerToken)
		// fused_moe holds [M, k, 2I'], [M, k, I'] and [M, k, H] for the M
		// tokens the layer sees, I' each expert's intermediate on this GPU:
		// I/(TP·DP) when experts are TP-split, I with expert parallelism
		// (whole experts). With DP the layer sees every rank's tokens
		// (M = DP × the rank's), so the width per rank token scales by DP.
		dp := float64(d.dpSize())
		inter := float64(m.MoEIntermediateSize) / (tp * dp)
		if d.ExpertParallel {
			inter = float64(m.MoEIntermediateSize)
		}
		moe := dp*k*(3*inter+H) + 3*float64(m.NumSharedExperts*m.SharedExpertIntermediateSize)/tp
		if s.Ldense == 0 || moe > dense {
			s.mlpWidth = moe
		}
	}
	s.embed = s.vocabPadded / tp * H
	s.lmHeadGEMM = s.embed
	if !m.TieEmbeddings {
		s.lmHead = s.embed
	}
	// vLLM's rotary embedding keeps a cos/sin cache of max_position_embeddings
	// × rotary dim in the model dtype (one per model: get_rope caches it).
	rot := d0
	if m.IsMLA() {
		rot = float64(m.QKRopeHeadDim)
	}
	s.ropeCache = float64(m.MaxPositions) * rot * s.dtypeB
	if m.LearnedPositions > 0 {
		// OPT has no RoPE; its learned position table (opt.py's
		// OPTLearnedPositionalEmbedding, an nn.Embedding) is replicated
		// on every rank.
		s.ropeCache = 0
		s.positions = float64(m.LearnedPositions) * H
	}
	// vLLM shards the vision tower over the TP group like the decoder
	// (mm_encoder_tp_mode "weights", its default) and keeps it in the
	// model dtype.
	s.vision = m.VisionParams / tp
	if m.IsDSV4() {
		dsv4Shape(d, &s)
	}
	restrictShape(d, &s)
	return s
}

// gemmDtype names what a GEMM with bpp bytes per parameter runs in.
func gemmDtype(bpp, dtypeBytes float64, weightDtype string) string {
	switch {
	case bpp >= dtypeBytes:
		return "bfloat16"
	case bpp >= 1:
		return "fp8"
	case weightDtype == "int4":
		return "int4"
	}
	return "fp4"
}

// peakFLOPS is the tensor-core rate a GEMM in dtype runs at on c. Formats
// the chip has no units for run as weight-only kernels (vLLM's Marlin and
// friends dequantize to BF16), so at the BF16 rate.
func peakFLOPS(c *catalog.Chip, dtype string) float64 {
	switch dtype {
	case "fp8":
		if c.FP8FLOPS > 0 {
			return c.FP8FLOPS
		}
	case "fp4":
		if c.FP4FLOPS > 0 {
			return c.FP4FLOPS
		}
	case "int8":
		// Hopper's dense INT8 tensor-core rate equals its FP8 rate (H100
		// datasheet: 1,979 TOPS / TFLOPS); Ampere's is twice its BF16 rate
		// (A100 datasheet: 624 TOPS vs 312 TFLOPS). The catalog's chips
		// carry no INT8 peak of their own.
		if c.FP8FLOPS > 0 {
			return c.FP8FLOPS
		}
		return 2 * c.BF16FLOPS
	}
	return c.BF16FLOPS
}

// weightBytes is what one rank holds after loading: vLLM's "Model loading
// took X GiB". Biases (gpt-oss, Qwen2 QKV) and MoE/quantization padding are
// not counted.
func (s shape) weightBytes() float64 {
	b := s.L*s.attnLinear*s.attnBpp +
		s.Ldense*s.denseMLP*s.denseBpp +
		s.Lmoe*(float64(s.m.NumExperts)*s.expert*s.expertBpp+s.sharedExpert*s.denseBpp+s.router*s.dtypeB) +
		(s.L*s.normsLayer+s.finalNorm+s.embed+s.lmHead+s.positions+s.vision)*s.dtypeB +
		s.ropeCache
	return b
}

// dsaKVBytesLayer is what one token adds to one DSA layer's cache on every
// rank (vllm/v1/kv_cache_interface.py MLAAttentionSpec, deepseek_v2.py
// DeepseekV32IndexerCache), the latent and the indexer's keys in one block:
//   - the latent: (kv_lora_rank + rope) × dtype bytes; with an fp8 cache on
//     Hopper, FlashMLA sparse's fp8_ds_mla layout: the latent in fp8, one
//     fp32 scale per 128 values and the rope part in bf16 (656 bytes for
//     DeepSeek-V3.2); Blackwell's FlashInfer sparse MLA keeps plain fp8;
//   - the indexer's keys (catalog.Model.IndexerCacheBytes: 132 bytes).
func dsaKVBytesLayer(m *catalog.Model, kvB float64, blackwell bool) float64 {
	kvl, rope := float64(m.KVLoraRank), float64(m.QKRopeHeadDim)
	latent := (kvl + rope) * kvB
	if kvB == 1 && !blackwell {
		latent = kvl + math.Ceil(kvl/128)*4 + rope*2
	}
	return latent + float64(m.IndexerCacheBytes())
}

// kvBytesPerToken is the KV cache one token takes on one rank, all layers
// (sliding-window layers counted as full; kvLayout sizes the pool by KV
// cache group).
func (s shape) kvBytesPerToken() float64 { return (s.L - s.Llin) * s.kvBytesLayer }

// WeightBytes is the weight memory of one tensor-parallel rank.
func WeightBytes(d Deployment) (float64, error) {
	if err := Validate(d); err != nil {
		return 0, err
	}
	return newShape(d).weightBytes(), nil
}

// KVBytesPerToken is the KV-cache bytes one token takes on one rank over all
// layers: 2 × layers × KV heads per rank × head_dim × dtype bytes for
// GQA/MHA (KV heads replicated when TP exceeds them), (kv_lora_rank +
// qk_rope_head_dim) × layers × dtype bytes for MLA, which is not split by TP.
func KVBytesPerToken(d Deployment) (float64, error) {
	if err := Validate(d); err != nil {
		return 0, err
	}
	return newShape(d).kvBytesPerToken(), nil
}
