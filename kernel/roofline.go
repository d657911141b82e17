package kernel

import (
	"math"
	"time"

	"blis/catalog"
)

// RooflineAssumptions are the roofline's constants that are neither in the
// model config nor in the chip file. Each says where its value comes from;
// the Host* values are assumptions to be replaced by fitted host laws.
type RooflineAssumptions struct {
	// GEMMEfficiency is the fraction of the tensor-core peak that linear
	// layers reach. 0.8: an 8192³ BF16 matmul through PyTorch ran at
	// 769–798 TFLOP/s on an H200 (989 peak), measured on this workplace's
	// device (.library/device/KINDS.md, 2026-10/11). A large-GEMM ceiling:
	// the skinny GEMMs of small batches do worse, but those are memory-bound.
	GEMMEfficiency float64
	// AttnEfficiency is the same for attention FLOPs. 0.75: FlashAttention-3
	// reaches 740 TFLOP/s of 989 in BF16 forward on H100 SXM5 (Shah et al.,
	// "FlashAttention-3", arXiv:2407.08608).
	AttnEfficiency float64
	// HostStepGraphed is the CPU time of a step replayed as one full CUDA
	// graph (a pure-decode batch of at most MaxCUDAGraphTokens tokens):
	// scheduling, input preparation, one graph launch.
	HostStepGraphed time.Duration
	// HostStepEager is the CPU time of any other step (prefill or mixed
	// batches run piecewise graphs with eager attention; --enforce-eager
	// launches every kernel).
	HostStepEager time.Duration
	// HostPerSampledToken is sampling and output processing per row that
	// produces a token.
	HostPerSampledToken time.Duration
	// MaxCUDAGraphTokens is the largest batch captured as a CUDA graph;
	// 0 means vLLM's default min(2 × max_num_seqs × (1 + k), 512), k the
	// speculative tokens (vllm/config/vllm.py, max_cudagraph_capture_size,
	// v0.11+).
	MaxCUDAGraphTokens int
	// The speculative proposer's host side (catalog.Stack): a draft pass's
	// CPU launch is HostPiecewisePerLayer per draft layer plus
	// HostDraftPass, its GPU idle at least PiecewiseGapPerLayer per draft
	// layer; an n-gram or suffix lookup costs HostNgramPerRow per sampled
	// row.
	HostPiecewisePerLayer, PiecewiseGapPerLayer, HostDraftPass, HostNgramPerRow time.Duration
}

// DefaultRooflineAssumptions are the values NewRoofline uses; the host
// times are vLLM's serving stack as the catalog describes it
// (catalog/stacks/vllm.yaml).
func DefaultRooflineAssumptions() (RooflineAssumptions, error) {
	s, err := catalog.LookupStack("vllm")
	if err != nil {
		return RooflineAssumptions{}, err
	}
	return RooflineAssumptions{
		GEMMEfficiency:      0.8,
		AttnEfficiency:      0.75,
		HostStepGraphed:     s.HostStepGraphed,
		HostStepEager:       s.HostStepEager,
		HostPerSampledToken: s.HostPerSampledToken,

		HostPiecewisePerLayer: s.HostPiecewisePerLayer,
		PiecewiseGapPerLayer:  s.PiecewiseGapPerLayer,
		HostDraftPass:         s.HostDraftPass,
		HostNgramPerRow:       s.HostNgramPerRow,
	}, nil
}

// roofline prices a step from the batch's aggregates with per-deployment
// coefficients, all per TP rank (every rank does the same work).
type roofline struct {
	engram engramCost // Engram lookups (engram.go)
	// Compute seconds.
	secGEMMPerToken     float64 // linear layers (attention, MLP, experts, router)
	secLMHeadPerSampled float64
	secPairFull         float64 // attention per query×key pair, full-attention layers
	secPairSW           float64 // the same for sliding-window layers
	secDecodeCtxFull    float64 // per decode context token, full layers
	secDecodeCtxSW      float64
	secPrefillCtxUp     float64 // MLA: up-projecting a cached context token (kv_b_proj)

	// Memory bytes.
	bytesAlways      float64 // weights read by every step that runs a token
	bytesPerExpert   float64 // one routed expert over all MoE layers
	numExperts, topK float64
	bytesLMHead      float64 // read when some row samples
	bytesKVFull      float64 // per context token read, full layers
	bytesKVSW        float64 // per context token read, sliding-window layers
	bytesKVWrite     float64 // per new token, all layers
	// bytesStatePerRow is the Gated DeltaNet state every scheduled row
	// reads and writes once a step, all GDN layers (mamba.go).
	bytesStatePerRow float64
	bytesActPerToken float64
	secPerByte       float64
	window           float64 // sliding window, tokens (0: none)
	arSecFixed       float64 // per step: 2·layers all-reduce latencies
	arSecPerToken    float64 // per token of the step
	// MoE token movement between DP ranks (DP > 1): per step, and per
	// token of the DP group (Batch.GroupTokens; dp × the step's tokens
	// when the engine prices a rank alone).
	a2aSecFixed, a2aSecPerGroupToken float64
	dp                               float64
	// DeepSeek-V4: the attention kernels' work (dsv4.go), priced at
	// dsv4Rate FLOP/s; nil for other models.
	dsv4               *dsv4Attn
	dsv4Rate           float64
	graphMaxTokens     int
	enforceEager       bool
	hostGraphed, hostE time.Duration
	hostPerSampled     time.Duration
	spec               *rooflineDraft // nil: no speculative decoding (or not the last stage)
}

// NewRoofline builds the "roofline-v1" pricer for d with the default
// assumptions.
func NewRoofline(d Deployment) (Pricer, error) {
	a, err := DefaultRooflineAssumptions()
	if err != nil {
		return nil, err
	}
	return NewRooflineWith(d, a)
}

// NewRooflineWith builds the roofline pricer with explicit assumptions.
//
// Per step, with T new tokens:
//
//	GEMM FLOPs   = 2 × T × active linear parameters per rank (MoE: top-k
//	               experts plus shared experts; leading dense layers dense)
//	attention    = prefill 2(d_qk + d_v) × heads/rank × PrefillAttnPairs per layer,
//	               decode the same × DecodeContext (GQA: d_qk = d_v = head_dim;
//	               MLA decode uses the absorbed dims kv_lora+rope and kv_lora,
//	               MLA prefill the expanded nope+rope and v_head_dim plus the
//	               kv_b_proj up-projection of the cached context, as vLLM runs it)
//	LM head      = 2 × Sampled × hidden × vocab/TP
//	weight bytes = non-expert weights once + E·(1 − (1 − k/E)^T) distinct experts
//	               + the LM head when a row samples (embedding rows are gathered, not read)
//	KV bytes     = (DecodeContext + PrefillContext) × KV bytes/token/rank read
//	               + T × KV bytes/token/rank written
//	activations  = T × (per-layer reads and writes of the hidden state and MLP intermediates)
//
// Sliding-window layers read at most window tokens per row, bounded from the
// aggregates as min(context, rows × window) and min(pairs, tokens × window).
//
// Compute = FLOPs / (peak × efficiency), with the peak of the GEMM's dtype
// (FP8 or FP4 units when the chip has them, else BF16); Memory = bytes /
// (HBM bandwidth × the chip's efficiency). The step is a roofline over the
// whole step, max(Compute, Memory): one bound for the step rather than a sum
// over operators, which is simple and optimistic where some operators are
// compute-bound and others memory-bound in the same step. Collectives and
// host time do not overlap it:
//
//	Total = max(Compute, Memory) + Comm + Host
//
// Comm is TP's two all-reduces per layer (after attention and after the
// MLP), each a ring of T × hidden × dtype bytes: 2(n−1)/n × bytes / link
// bandwidth + the chip's p2p latency (aiconfigurator's p2p_latency); the
// link is NVLink within a node and the inter-node network beyond (the
// fabric's network link when the deployment names a fabric). A MoE model
// with DP > 1 adds each MoE layer's dispatch and combine under
// --all2all-backend (rooflineA2A).
func NewRooflineWith(d Deployment, a RooflineAssumptions) (Pricer, error) {
	if err := Validate(d); err != nil {
		return nil, err
	}
	s := newShape(d)
	m, c := d.Model, d.Chip
	r := &roofline{enforceEager: d.EnforceEager || d.a2aDisablesGraphs(), hostGraphed: a.HostStepGraphed, hostE: a.HostStepEager, hostPerSampled: a.HostPerSampledToken,
		engram: newEngramCost(d)}

	gemmRate := func(dtype string) float64 { return peakFLOPS(c, dtype) * a.GEMMEfficiency }
	attnRate := c.BF16FLOPS * a.AttnEfficiency
	bf16 := gemmRate("bfloat16")

	// Linear layers, seconds per token.
	k := float64(m.ExpertsPerToken)
	r.secGEMMPerToken = 2 * (s.L*s.attnLinear/gemmRate(s.attnDtype) +
		s.Ldense*s.denseMLP/gemmRate(s.mlpDtype) +
		s.Lmoe*(k*s.expert+s.sharedExpert)/gemmRate(s.mlpDtype) +
		s.Lmoe*s.router/bf16)
	r.secLMHeadPerSampled = 2 * s.lmHeadGEMM / bf16

	// Attention FLOPs per pair (prefill) and per context token (decode).
	hr := s.headsR
	var prefillPer, decodePer float64
	if m.IsMLA() {
		kvl, rope := float64(m.KVLoraRank), float64(m.QKRopeHeadDim)
		decodePer = 2 * ((kvl + rope) + kvl) * hr
		prefillPer = 2 * (float64(m.QKNopeHeadDim+m.QKRopeHeadDim) + float64(m.VHeadDim)) * hr
		r.secPrefillCtxUp = s.L * 2 * kvl * hr * float64(m.QKNopeHeadDim+m.VHeadDim) / gemmRate(s.attnDtype)
	} else {
		decodePer = 4 * float64(m.HeadDim) * hr
		prefillPer = decodePer
	}
	r.secPairFull = s.Lfull * prefillPer / attnRate
	r.secPairSW = s.Lsw * prefillPer / attnRate
	r.secDecodeCtxFull = s.Lfull * decodePer / attnRate
	r.secDecodeCtxSW = s.Lsw * decodePer / attnRate
	r.window = float64(m.SlidingWindow)

	// Bytes.
	r.bytesAlways = s.L*s.attnLinear*s.attnBpp +
		s.Ldense*s.denseMLP*s.denseBpp +
		s.Lmoe*(s.sharedExpert*s.denseBpp+s.router*s.dtypeB) +
		(s.L*s.normsLayer+s.finalNorm)*s.dtypeB
	r.bytesPerExpert = s.Lmoe * s.expert * s.expertBpp
	r.numExperts, r.topK = float64(m.NumExperts), k
	r.bytesLMHead = s.lmHeadGEMM * s.dtypeB
	r.bytesKVFull = s.Lfull * s.kvBytesLayer
	r.bytesKVSW = s.Lsw * s.kvBytesLayer
	r.bytesKVWrite = s.kvBytesPerToken() // Gated DeltaNet layers write no KV
	r.bytesStatePerRow = 2 * s.Llin * s.linStateLayer
	// Per layer and token: two fused add+RMSNorms read and write the hidden
	// state and the residual (8·H); each GEMM reads its input and writes its
	// output once (qkv, o_proj, gate/up, down); attention reads q and writes
	// its output; the activation reads 2I and writes I.
	mlpIO := s.mlpWidth * 2 // gate/up write 2I + act read 2I, act write I + down read I
	r.bytesActPerToken = s.L * s.dtypeB * (8*s.H + s.H + s.qkvOut + 2*s.attnOut + s.attnOut + s.H + s.H + mlpIO + s.H)
	r.secPerByte = 1 / (c.MemBW * c.MemBWEfficiency)

	// Tensor-parallel all-reduce; a TP group larger than a node rides the
	// network link (the fabric's when the deployment names one).
	if d.TP > 1 {
		n := float64(d.TP)
		bw, lat := d.ringLink(d.TP)
		ops := 2 * s.L
		r.arSecFixed = ops * lat
		r.arSecPerToken = ops * 2 * (n - 1) / n * s.H * s.dtypeB / bw
	}
	if m.IsDSV4() {
		dsv4Roofline(d, s, r, attnRate, bf16)
	}
	r.dp = float64(d.dpSize())
	if m.IsMoE() && d.dpSize() > 1 {
		fixed, perTok := rooflineA2A(d, s)
		r.a2aSecFixed, r.a2aSecPerGroupToken = s.Lmoe*fixed, s.Lmoe*perTok
	}

	r.graphMaxTokens = a.MaxCUDAGraphTokens
	if r.graphMaxTokens <= 0 {
		r.graphMaxTokens = min(2*d.MaxNumSeqs*(1+d.specK()), 512)
	}
	if d.lastStage() {
		var err error
		if r.spec, err = newRooflineDraft(d, a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *roofline) Name() string { return "roofline-v1" }

func seconds(x float64) time.Duration { return time.Duration(math.Round(x * 1e9)) }

// StepTime prices one step. It does no allocation. An empty batch costs
// nothing.
func (r *roofline) StepTime(b *Batch) Breakdown {
	tokens := b.Tokens()
	if tokens <= 0 {
		return Breakdown{}
	}
	T := float64(tokens)
	sampled := float64(max(b.Sampled, 0))
	// The LM head also runs at every draft a row verifies (the rejection
	// sampler's target logits).
	logits := sampled + float64(max(b.SpecTokens, 0))
	decodeCtx := float64(max(b.DecodeContext, 0))
	prefillCtx := float64(max(b.PrefillContext, 0))
	pairs := math.Max(b.PrefillAttnPairs, 0)

	// Sliding-window layers see at most `window` keys per query.
	pairsSW, decodeSW, prefillSW := pairs, decodeCtx, prefillCtx
	if r.window > 0 {
		pairsSW = math.Min(pairs, float64(max(b.PrefillTokens, 0))*r.window)
		decodeSW = math.Min(decodeCtx, float64(max(b.NumDecode, 0))*r.window)
		prefillSW = math.Min(prefillCtx, float64(max(b.NumPrefill, 0))*r.window)
	}

	compute := T*r.secGEMMPerToken +
		logits*r.secLMHeadPerSampled +
		pairs*r.secPairFull + pairsSW*r.secPairSW +
		decodeCtx*r.secDecodeCtxFull + decodeSW*r.secDecodeCtxSW +
		prefillCtx*r.secPrefillCtxUp

	bytes := r.bytesAlways +
		(decodeCtx+prefillCtx)*r.bytesKVFull + (decodeSW+prefillSW)*r.bytesKVSW +
		T*(r.bytesKVWrite+r.bytesActPerToken) +
		float64(max(b.NumDecode, 0)+max(b.NumPrefill, 0))*r.bytesStatePerRow
	if r.dsv4 != nil {
		f, by := r.dsv4.work(float64(max(b.NumDecode, 0)), decodeCtx, float64(max(b.PrefillTokens, 0)), pairs,
			float64(max(b.NumPrefill, 0)), prefillCtx)
		compute += f / r.dsv4Rate
		bytes += by
	}
	if r.numExperts > 0 {
		// Expected distinct experts hit by T tokens choosing top-k of E
		// uniformly: E·(1 − (1 − k/E)^T).
		distinct := r.numExperts * (1 - math.Pow(1-r.topK/r.numExperts, T))
		bytes += math.Min(distinct, r.numExperts) * r.bytesPerExpert
	}
	if logits > 0 {
		bytes += r.bytesLMHead
	}
	memory := bytes * r.secPerByte

	comm := r.arSecFixed + T*r.arSecPerToken
	if r.a2aSecPerGroupToken > 0 {
		G := float64(b.GroupTokens)
		if G <= 0 {
			G = r.dp * T
		}
		comm += r.a2aSecFixed + G*r.a2aSecPerGroupToken
	}

	host := r.hostE
	if !r.enforceEager && b.NumPrefill == 0 && tokens <= r.graphMaxTokens {
		host = r.hostGraphed
	}
	host += time.Duration(sampled) * r.hostPerSampled

	out := Breakdown{
		Compute: seconds(compute),
		Memory:  seconds(memory),
		Comm:    seconds(comm),
		Host:    host,
	}
	gpu := max(out.Compute, out.Memory) + out.Comm
	// Engram rows not back from the side stream when their layer starts
	// (shown under Memory: the host link's reads).
	st := r.engram.stall(b.Tokens(), b.GroupTokens, gpu)
	out.Memory += st
	out.Total = gpu + st + out.Host
	if r.spec != nil {
		// The proposer's passes follow the verification pass, each its
		// own roofline (rooflineDraft).
		out.Total += r.spec.add(b, &out)
	}
	return out
}

// rooflineA2A is one MoE layer's dispatch + combine under the deployment's
// --all2all-backend as a bandwidth law: seconds per layer, fixed and per
// token of the DP group. Ring collectives (allgather_reducescatter, naive)
// move (n−1)/n of the gathered buffer per GPU (twice for an all-reduce)
// over the bottleneck link — NVLink when the DP group's span fits a node,
// else the network; all-to-all kernels send their copies' off-GPU share
// over NVLink and their off-node share over the network at once (the
// slower sets the time). Each collective pays one link latency.
func rooflineA2A(d Deployment, s shape) (fixed, perToken float64) {
	c, nl := d.Chip, d.nodeLink()
	dp, tp := d.dpSize(), d.TP
	m := d.Model
	H, E, a := s.H, float64(m.NumExperts), s.dtypeB
	if d.usesA2AKernels() {
		dt := "bf16"
		switch s.mlpDtype {
		case "fp8":
			dt = "fp8"
		case "fp4":
			dt = m.WeightDtype
		}
		// The config's routed-expert shape (the fitted pricer reads the
		// graph's MoE operator instead).
		for _, leg := range a2aKernelLegs(d, m.HiddenSize, m.NumExperts, m.ExpertsPerToken, dt) {
			n := float64(leg.gpus)
			if leg.netFrac > 0 && nl.bandwidth > 0 {
				per := float64(nl.perNode)
				fixed += nl.latency
				if leg.forward {
					fixed += c.P2PLatency // the NVLink hop after the network's
				}
				perToken += math.Max(leg.bytes*leg.intraFrac*(per-1)/per/c.NVLinkBW, leg.bytes*leg.netFrac/nl.bandwidth)
				continue
			}
			fixed += c.P2PLatency
			perToken += leg.bytes * (n - 1) / n / c.NVLinkBW
		}
		return fixed, perToken
	}
	n := float64(dp)
	bw, lat := d.ringLink(dp * tp)
	dispatch, combine := H*a+E*a, H*a // hidden states + router logits; outputs
	if d.all2allBackend() == a2aNaive {
		// dp broadcasts of each rank's share; an all-reduce of the buffer.
		return (n + 1) * lat, (dispatch + 2*(n-1)/n*combine) / bw
	}
	return 2 * lat, (n - 1) / n * (dispatch + combine) / bw
}
