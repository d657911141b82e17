package kernel

import (
	"math"

	"blis/catalog"
)

// The operator laws: pure functions of one fitted law (catalog/coeffs) and
// one operator shape, returning seconds on one GPU. They allocate nothing
// and are what `blis calibrate ops` fits, so a law here and its numbers in
// catalog/coeffs/<chip>.yaml always agree. docs/calibration.md has the
// fitted error of each.
//
// Two choices run through all of them, both forced by the measured tables
// (data/ops, aiconfigurator's vLLM 0.24.0 collections):
//
//   - Compute time C and memory time M combine in quadrature,
//     sqrt(C² + M²), not as max(C, M) or C + M. Real kernels overlap the two
//     only partly near the ridge point. While choosing the forms, on the
//     H100 bf16 GEMM table the quadrature sum fitted at 10.8 % MAPE, the
//     plain sum at 13.2 % and a max (with a token ramp) at 12.5 %.
//   - Efficiency ramps are in the amount of independent work a kernel can
//     spread over the SMs (GEMM: output elements m·n; attention: query rows
//     × heads), of the form eff · w/(w + w½): at w = w½ a kernel reaches half
//     of its large-problem efficiency. A ramp in the token count m alone
//     (the classic ε(m) = ε·m/(m + m½)) fitted m½ → 0 on every GEMM table
//     once the output-size ramp was there: small-m GEMMs are memory-bound,
//     and what limits mid-size ones is tile parallelism, which small n
//     limits as much as small m.

// GEMMTime prices y[m×n] = x[m×k]·W[k×n] for m tokens (vLLM's linear
// layers, vllm/model_executor/layers/linear.py, with the quantization
// method of the law's dtype), as the table measured it:
//
//	C = 2mnk / (P · EffMax · mn/(mn + OutHalf))
//	M = (n·k·WeightBytes + m·k·ActBytes + m·n·2) / (BW · BWEff)
//	Q = m·QuantPerRow + m·k·(2 + ActBytes) / (BW · QuantBWEff)   (quantized activations)
//	t = max(HostFloor, T0 + sqrt(C² + M²) + Q)
//
// Q is the separate kernel that quantizes the bf16 input (fp8, nvfp4);
// HostFloor is non-zero only for dtypes timed without CUDA graphs
// (fp8_block), where the host's launch overhead floors every call. Use
// GEMMDeviceTime for the device time alone, e.g. inside a CUDA graph.
func GEMMTime(l *catalog.GEMMLaw, m, n, k float64) float64 {
	return math.Max(l.HostFloor, GEMMDeviceTime(l, m, n, k))
}

// GEMMDeviceTime is GEMMTime without the host floor.
func GEMMDeviceTime(l *catalog.GEMMLaw, m, n, k float64) float64 {
	if m <= 0 || n <= 0 || k <= 0 {
		return 0
	}
	// 2mnk / (P·EffMax·mn/(mn+OutHalf)) = 2k(mn + OutHalf) / (P·EffMax).
	c := 2 * k * (m*n + l.OutHalf) / (l.PeakFLOPS * l.EffMax)
	mem := (n*k*l.WeightBytes + m*k*l.ActBytes + m*n*2) / (l.MemBW * l.BWEff)
	t := l.T0 + math.Sqrt(c*c+mem*mem) + m*l.QuantPerRow
	if l.QuantBWEff > 0 {
		t += m * k * (2 + l.ActBytes) / (l.MemBW * l.QuantBWEff)
	}
	return t
}

// AttnShape is one GQA/MHA attention layer on one rank.
type AttnShape struct {
	Heads   float64 // query heads on this rank
	KVHeads float64 // KV heads on this rank
	HeadDim float64
}

// AttnDecodeTime prices one decode attention call (vLLM's FlashAttention 3
// on Hopper, FlashInfer TRT-LLM decode on Blackwell) for seqs sequences
// that together read kvTokens cached tokens (Σ per sequence of its context,
// capped at the window on sliding-window layers: the tables show windowed
// reads stop growing at the window):
//
//	t = T0 + kvTokens·2·KVHeads·HeadDim·KVBytes / (BW · BWEff) + PerSeqHead · seqs·KVHeads
//
// The per-(sequence, KV head) cost is the work item the kernel launches
// for each; it, not a per-sequence or per-query-head cost, is what the
// tables' batch dependence follows. The tables stop at 8 KV heads per
// GPU: MHA layers (Llama-2-7B's 32 at TP1) are the law's extrapolation in
// KVHeads (tools/gpu/attn_decode_mha.py times them).
func AttnDecodeTime(l *catalog.AttnDecodeLaw, a AttnShape, seqs, kvTokens float64) float64 {
	if seqs <= 0 {
		return 0
	}
	bytes := kvTokens * 2 * a.KVHeads * a.HeadDim * l.KVBytes
	return l.T0 + bytes/(l.MemBW*l.BWEff) + l.PerSeqHead*seqs*a.KVHeads
}

// AttnPrefillTime prices one prefill (context) attention call over tokens
// new query rows that attend to pairs (query, key) pairs in all (see
// CausalPairs), with cachedTokens previously cached tokens read back:
//
//	C = 4·Heads·(HeadDim + SoftmaxDim)·pairs / (P_bf16 · EffMax · w/(w + WorkHalf)),  w = tokens·Heads
//	M = (tokens·(2·Heads + 2·KVHeads)·HeadDim·2 + cachedTokens·2·KVHeads·HeadDim·KVBytes) / (BW · BWEff)
//	t = T0 + sqrt(C² + M²)
//
// SoftmaxDim is the per-pair cost that does not scale with the head
// dimension (the exponentials and rescaling of the online softmax, which
// run on the special-function units, not the tensor cores), in head-dim
// equivalents: it is why the tables' head_dim 64 rows run well below the
// tensor-core rate of the head_dim 128–256 ones. The tables have no cached
// context; the cached-token bytes are the law's extrapolation.
func AttnPrefillTime(l *catalog.AttnPrefillLaw, a AttnShape, tokens, pairs, cachedTokens float64) float64 {
	if tokens <= 0 {
		return 0
	}
	w := tokens * a.Heads
	c := 4 * a.Heads * (a.HeadDim + l.SoftmaxDim) * pairs * (w + l.WorkHalf) / (l.PeakFLOPS * l.EffMax * w)
	bytes := tokens*(2*a.Heads+2*a.KVHeads)*a.HeadDim*2 + cachedTokens*2*a.KVHeads*a.HeadDim*l.KVBytes
	mem := bytes / (l.MemBW * l.BWEff)
	return l.T0 + math.Sqrt(c*c+mem*mem)
}

// CausalPairs is the number of (query, key) pairs causal attention computes
// for one sequence adding newTokens after cached tokens, each query seeing
// at most window keys (window ≤ 0: no window):
//
//	Σ_{i=1..newTokens} min(cached + i, window)
func CausalPairs(newTokens, cached, window float64) float64 {
	if newTokens <= 0 {
		return 0
	}
	c0, s := math.Max(cached, 0), newTokens
	full := c0*s + s*(s+1)/2 // Σ (c0 + i)
	if window <= 0 || c0+s <= window {
		return full
	}
	// Rows i with c0 + i ≤ window count c0 + i, the rest window.
	under := math.Max(0, math.Min(s, window-c0))
	return c0*under + under*(under+1)/2 + (s-under)*window
}

// MLAShape is one DeepSeek-style multi-head latent attention layer on one
// rank (config.json names; Heads are this rank's query heads).
type MLAShape struct {
	Hidden     float64
	Heads      float64
	QLoraRank  float64 // 0: q is projected from the hidden state directly
	KVLoraRank float64
	RopeDim    float64 // qk_rope_head_dim
	NopeDim    float64 // qk_nope_head_dim
	VDim       float64 // v_head_dim
}

// Params is the layer's projection weights on this rank: q_a and
// kv_a_proj_with_mqa (replicated), q_b, kv_b and o_proj (split by heads).
func (s MLAShape) Params() float64 {
	qk := s.NopeDim + s.RopeDim
	q := s.Hidden * s.Heads * qk
	if s.QLoraRank > 0 {
		q = s.Hidden*s.QLoraRank + s.QLoraRank*s.Heads*qk
	}
	return q + s.Hidden*(s.KVLoraRank+s.RopeDim) + s.KVLoraRank*s.Heads*(s.NopeDim+s.VDim) + s.Heads*s.VDim*s.Hidden
}

// MLADecodeTime prices the whole MLA attention module (projections, RoPE,
// absorbed attention over the latent cache, o_proj; vLLM's
// DeepseekV2MLAAttention with its MLA decode backend) for seqs decode
// tokens reading kvTokens cached tokens in all:
//
//	F = 2·seqs·Params + kvTokens·Heads·(4·KVLoraRank + 2·RopeDim)
//	B = Params·WeightBytes + kvTokens·(KVLoraRank + RopeDim)·KVBytes + seqs·Hidden·4
//	t = T0 + sqrt(C² + M²) + PerSeqHead·seqs·Heads,  C = F/(P·EffMax·w/(w+WorkHalf)), w = seqs·Heads
//
// It prices the projections too: do not add GEMM laws for them.
func MLADecodeTime(l *catalog.MLALaw, s MLAShape, seqs, kvTokens float64) float64 {
	if seqs <= 0 {
		return 0
	}
	p := s.Params()
	f := 2*seqs*p + kvTokens*s.Heads*(4*s.KVLoraRank+2*s.RopeDim)
	b := p*l.WeightBytes + kvTokens*(s.KVLoraRank+s.RopeDim)*l.KVBytes + seqs*s.Hidden*4
	w := seqs * s.Heads
	c := f * (w + l.WorkHalf) / (l.PeakFLOPS * l.EffMax * w)
	mem := b / (l.MemBW * l.BWEff)
	return l.T0 + math.Sqrt(c*c+mem*mem) + l.PerSeqHead*w
}

// MLAPrefillTime prices the whole MLA module for tokens prefill tokens
// attending to pairs (query, key) pairs (CausalPairs), with vLLM's
// expanded (non-absorbed) prefill attention:
//
//	F = 2·tokens·Params + pairs·Heads·2·(NopeDim + RopeDim + VDim)
//	B = Params·WeightBytes + tokens·(2·Hidden + Heads·(2·(NopeDim+RopeDim) + 2·VDim) + KVLoraRank + RopeDim)·2
//	t = T0 + sqrt(C² + M²),  C = F/(P·EffMax·w/(w+WorkHalf)), w = tokens·Heads
func MLAPrefillTime(l *catalog.MLALaw, s MLAShape, tokens, pairs float64) float64 {
	if tokens <= 0 {
		return 0
	}
	p := s.Params()
	f := 2*tokens*p + pairs*s.Heads*2*(s.NopeDim+s.RopeDim+s.VDim)
	b := p*l.WeightBytes + tokens*(2*s.Hidden+s.Heads*(2*(s.NopeDim+s.RopeDim)+2*s.VDim)+s.KVLoraRank+s.RopeDim)*2
	w := tokens * s.Heads
	c := f * (w + l.WorkHalf) / (l.PeakFLOPS * l.EffMax * w)
	mem := b / (l.MemBW * l.BWEff)
	return l.T0 + math.Sqrt(c*c+mem*mem)
}

// MoEShape is one routed-expert MoE layer call on one rank.
type MoEShape struct {
	Tokens  float64 // tokens in the batch
	Hidden  float64
	Inter   float64 // one expert's intermediate size (before TP)
	TopK    float64
	Experts float64 // routed experts in the layer
	TP      float64 // each expert's intermediate split TP ways (≥ 1)
	EP      float64 // experts split EP ways (≥ 1)
	// Distinct is how many of this rank's experts the batch touches; 0
	// means the expectation under uniform routing
	// (ExpectedDistinctExperts).
	Distinct float64
}

// ExpectedDistinctExperts is how many of localExperts a batch of tokens
// touches when each token picks topK of experts uniformly:
// local · (1 − (1 − k/E)^T).
func ExpectedDistinctExperts(tokens, topK, experts, localExperts float64) float64 {
	if tokens <= 0 || experts <= 0 {
		return 0
	}
	return localExperts * (1 - math.Pow(1-math.Min(topK/experts, 1), tokens))
}

// MoETime prices vLLM's fused MoE (FusedMoE with the dtype's expert
// kernel: gate/up GEMM, activation, down GEMM, routing and permutation)
// on one rank. With E_l = Experts/EP local experts, R = Tokens·TopK/EP
// routed rows, n = Inter/TP and W = 3·Hidden·n weights per expert:
//
//	C = 2·R·W / (P · EffMax · x/(x + TokHalf) · n/(n + WidthHalf)),  x = R/E_l
//	M = (Distinct·W·WeightBytes + Tokens·Hidden·4 + R·(Hidden + 2n)·2) / (BW · BWEff · n/(n + BWWidthHalf))
//	t = T0 + sqrt(C² + M²) + PerRoutedElem·Tokens·TopK·Hidden
//
// Few tokens per expert and narrow per-rank experts both starve the
// grouped GEMM. The last term is the permutation, un-permutation and
// top-k reduction of every token's hidden vector for each of its top-k
// experts, outside the grouped GEMM and not divided by EP: the tables show
// it (bf16 H100, 4096×1536, 128 experts: 16384 tokens take 10.2 ms at EP 1
// but still 1.7 ms at EP 128, where the one local expert's GEMM needs
// 0.05 ms). Scaling it by Hidden fits better than a flat per-token cost
// (H100 bf16 MAPE 16.4 % against 18.1 %).
func MoETime(l *catalog.MoELaw, s MoEShape) float64 {
	if s.Tokens <= 0 || s.Experts <= 0 {
		return 0
	}
	tp, ep := math.Max(s.TP, 1), math.Max(s.EP, 1)
	local := s.Experts / ep
	routed := s.Tokens * s.TopK / ep
	n := s.Inter / tp
	w := 3 * s.Hidden * n
	distinct := s.Distinct
	if distinct <= 0 {
		distinct = ExpectedDistinctExperts(s.Tokens, s.TopK, s.Experts, local)
	}
	x := routed / local
	eff := l.EffMax * x / (x + l.TokHalf) * n / (n + l.WidthHalf)
	c := 2 * routed * w / (l.PeakFLOPS * eff)
	bw := l.MemBW * l.BWEff * n / (n + l.BWWidthHalf)
	mem := (distinct*w*l.WeightBytes + s.Tokens*s.Hidden*4 + routed*(s.Hidden+2*n)*2) / bw
	return l.T0 + math.Sqrt(c*c+mem*mem) + l.PerRoutedElem*s.Tokens*s.TopK*s.Hidden
}

// CommTime prices one collective of bytes (the message each rank
// contributes, as nccl-tests and vLLM's custom all-reduce size it) over a
// group of gpus, at the nearest group size the tables measured (the larger
// on a tie; one GPU costs nothing): between measured message sizes,
// log-log interpolation of the measured times; below the smallest, its
// time; beyond the largest, that time plus the extra bytes at the law's
// bandwidth. A point without measurements is the affine law Alpha + bytes/BW.
func CommTime(l *catalog.CommLaw, gpus int, bytes float64) float64 {
	p := nearestCommPoint(l, gpus)
	if p == nil {
		return 0
	}
	bytes = math.Max(bytes, 0)
	ms := p.Measured
	n := len(ms)
	switch {
	case n == 0:
		return p.Alpha + bytes/p.BW
	case bytes <= ms[0].Bytes:
		return ms[0].Seconds
	case bytes >= ms[n-1].Bytes:
		return ms[n-1].Seconds + (bytes-ms[n-1].Bytes)/p.BW
	}
	lo, hi := 0, n-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ms[mid].Bytes <= bytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	a, b := &ms[lo], &ms[hi]
	w := math.Log(bytes/a.Bytes) / math.Log(b.Bytes/a.Bytes)
	return a.Seconds * math.Pow(b.Seconds/a.Seconds, w)
}

// nearestCommPoint is the group size CommTime prices gpus at: the nearest
// measured one, the larger on a tie; nil when one GPU or no points.
func nearestCommPoint(l *catalog.CommLaw, gpus int) *catalog.CommPoint {
	if l == nil || gpus <= 1 || len(l.Points) == 0 {
		return nil
	}
	best := 0
	for i := 1; i < len(l.Points); i++ {
		d, bd := absInt(l.Points[i].GPUs-gpus), absInt(l.Points[best].GPUs-gpus)
		if d < bd || (d == bd && l.Points[i].GPUs > l.Points[best].GPUs) {
			best = i
		}
	}
	return &l.Points[best]
}

// commCurve is CommTime for one law and group size, prepared once per
// deployment: the chosen group's measured samples in log-log form with
// each segment's slope, so that a step prices a collective from the log
// of its message size (which the pricer already has) with one exp
// instead of three logs and a pow. The values equal CommTime's.
type commCurve struct {
	none      bool // one GPU or no law: free
	affine    bool // a point without measurements: Alpha + bytes/BW
	alpha, bw float64
	lnB, lnS  []float64
	slope     []float64 // slope[i] of segment (i, i+1) in log-log
	// the smallest sample's time, the largest sample's size and time
	firstS, lastB, lastS float64
	// Cross-node groups (crossNode): each message also pays xAlpha plus
	// xPerByte per byte for its inter-node hops; 0 within a node.
	xAlpha, xPerByte float64
	// overlap (kernelCrossNode): an all-to-all kernel's NVLink and NIC
	// traffic run at once, the slower sets the time; intraFrac of the
	// message (lnIntra its log) goes over the node's measured curve.
	// forward: the NIC hop feeds the NVLink hop (DeepEP's RDMA-then-NVLink
	// forwarding), a pipeline whose network latency adds to the time.
	overlap, forward   bool
	intraFrac, lnIntra float64
}

// kernelCrossNode extends the measured single-node all-to-all curve c of
// an all-to-all kernel (pplx, DeepEP, FlashInfer) to a group spanning
// nodes: intraFrac of each GPU's message goes to peers over NVLink (priced
// on c), netFrac through its NIC at interBW after one latency, concurrently
// — or, when forward, as a pipeline (NIC then NVLink) whose time is the
// slower hop's plus the network latency.
func (c commCurve) kernelCrossNode(intraFrac, netFrac, interBW, latency float64, forward bool) commCurve {
	if c.none || !(netFrac > 0) || !(interBW > 0) || !(intraFrac > 0) {
		return c
	}
	c.xAlpha, c.xPerByte = latency, netFrac/interBW
	c.overlap, c.forward, c.intraFrac, c.lnIntra = true, forward, intraFrac, math.Log(intraFrac)
	return c
}

// crossNode extends c to a group of gpus spanning nodes of perNode GPUs:
// the measured curve is the largest single-node group's, and a ring over
// several nodes also pushes every byte through each GPU's NIC, (n−1)/n of
// the message per GPU for a gather or scatter and twice that for an
// all-reduce (NCCL's ring algorithm), at the chip's inter-node bandwidth,
// plus one inter-node latency. No measured cross-node collective exists in
// the data, so this is the NIC's bandwidth law, not a fit.
func (c commCurve) crossNode(gpus, perNode int, allReduce bool, interBW, latency float64) commCurve {
	if c.none || gpus <= perNode || perNode < 1 || !(interBW > 0) {
		return c
	}
	n := float64(gpus)
	f := (n - 1) / n
	if allReduce {
		f *= 2
	}
	c.xAlpha, c.xPerByte = latency, f/interBW
	return c
}

func newCommCurve(l *catalog.CommLaw, gpus int) commCurve {
	p := nearestCommPoint(l, gpus)
	if p == nil {
		return commCurve{none: true}
	}
	c := commCurve{alpha: p.Alpha, bw: p.BW, affine: len(p.Measured) == 0}
	if n := len(p.Measured); n > 0 {
		c.firstS, c.lastB, c.lastS = p.Measured[0].Seconds, p.Measured[n-1].Bytes, p.Measured[n-1].Seconds
	}
	for i, s := range p.Measured {
		c.lnB = append(c.lnB, math.Log(s.Bytes))
		c.lnS = append(c.lnS, math.Log(s.Seconds))
		if i > 0 {
			c.slope = append(c.slope, (c.lnS[i]-c.lnS[i-1])/(c.lnB[i]-c.lnB[i-1]))
		}
	}
	return c
}

// at prices a message of bytes whose natural log is lnBytes.
func (c *commCurve) at(bytes, lnBytes float64) float64 {
	if c.xPerByte > 0 {
		if c.overlap {
			in := c.intra(bytes*c.intraFrac, lnBytes+c.lnIntra)
			if c.forward {
				return c.xAlpha + math.Max(in, c.xPerByte*bytes)
			}
			return math.Max(in, c.xAlpha+c.xPerByte*bytes)
		}
		return c.intra(bytes, lnBytes) + c.xAlpha + c.xPerByte*bytes
	}
	return c.intra(bytes, lnBytes)
}

// intra is the measured single-node price.
func (c *commCurve) intra(bytes, lnBytes float64) float64 {
	switch {
	case c.none:
		return 0
	case c.affine:
		return c.alpha + bytes/c.bw
	}
	n := len(c.lnB)
	switch {
	case !(lnBytes > c.lnB[0]): // at or below the smallest sample, or NaN
		return c.firstS
	case lnBytes >= c.lnB[n-1]:
		return c.lastS + (bytes-c.lastB)/c.bw
	}
	lo, hi := 0, n-1
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if c.lnB[mid] <= lnBytes {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp(c.lnS[lo] + c.slope[lo]*(lnBytes-c.lnB[lo]))
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// DSAShape is one DeepSeek-sparse-attention layer on one rank (DeepSeek-V3.2,
// GLM-5): the MLA module plus the lightning indexer, replicated on every
// rank, that keeps TopK cached tokens per query.
type DSAShape struct {
	MLAShape
	IndexHeads, IndexHeadDim, TopK float64
}

// Params is the module's weights on this rank: MLA's plus the indexer's
// wq_b (q_lora latent to index heads), wk and weights_proj.
func (s DSAShape) Params() float64 {
	return s.MLAShape.Params() + s.QLoraRank*s.IndexHeads*s.IndexHeadDim + s.Hidden*(s.IndexHeadDim+s.IndexHeads)
}

// paddedHeads is how many query heads the sparse kernel computes: vLLM's
// FlashMLA sparse kernels pad a rank's heads to 64 (SM90) or 128 (SM100).
func paddedHeads(l *catalog.MLALaw, heads float64) float64 { return math.Max(heads, l.PadHeads) }

// dsaWork is the DSA module's compute and memory time, sqrt(C² + M²), for
// tokens rows whose queries attend sparse (query, key) pairs over the
// latent, and w = tokens × padded heads, the work items of the ramp:
//
//	F = 2·tokens·Params + sparse·Hp·(4·KVLoraRank + 2·RopeDim)
//	B = Params·WeightBytes + sparse·(KVLoraRank + RopeDim)·KVBytes + tokens·Hidden·4
//	C = F/(P·EffMax·w/(w+WorkHalf)),  M = B/(BW·BWEff)
func dsaWork(l *catalog.MLALaw, s DSAShape, tokens, sparse float64) (t, w float64) {
	p, hp := s.Params(), paddedHeads(l, s.Heads)
	f := 2*tokens*p + sparse*hp*(4*s.KVLoraRank+2*s.RopeDim)
	b := p*l.WeightBytes + sparse*(s.KVLoraRank+s.RopeDim)*l.KVBytes + tokens*s.Hidden*4
	w = tokens * hp
	c := f * (w + l.WorkHalf) / (l.PeakFLOPS * l.EffMax * w)
	mem := b / (l.MemBW * l.BWEff)
	return math.Sqrt(c*c + mem*mem), w
}

// DSADecodeTime prices the whole DSA module for seqs decode tokens whose
// cached contexts hold kvTokens tokens in all, of which the attention reads
// sparseTokens (Σ min(context, TopK)); the indexer scores all kvTokens:
//
//	t = T0 + dsaWork(seqs, sparseTokens) + PerSeqHead·seqs·Hp + IndexerPerToken·kvTokens
func DSADecodeTime(l *catalog.MLALaw, s DSAShape, seqs, kvTokens, sparseTokens float64) float64 {
	if seqs <= 0 {
		return 0
	}
	work, w := dsaWork(l, s, seqs, sparseTokens)
	return l.T0 + work + l.PerSeqHead*w + l.IndexerPerToken*kvTokens
}

// DSAPrefillTime prices the whole DSA module for tokens prefill tokens:
// the sparse backends attend as MQA over the latent (absorbed, as decode)
// for sparsePairs (query, key) pairs (Σ min(position, TopK)), and the
// indexer scores allPairs (every causal pair):
//
//	t = max(T0, dsaWork(tokens, sparsePairs) + IndexerPerPair·allPairs)
//
// The fixed cost is a floor, not an addend: aiconfigurator times the DSA
// prefill module eagerly (collector/vllm/collect_mla_module_v3.py runs it
// without a CUDA graph), so the CPU's launch time of the module's kernels
// and the GPU's work overlap, and the tables are flat at ~1–1.5 ms per call
// up to about 1k tokens, then grow from near zero (H100, 16 heads: 1.55 ms
// at 1 token, 1.73 at 1024, then ≈ 0.28 ms + 1.22 µs per token).
func DSAPrefillTime(l *catalog.MLALaw, s DSAShape, tokens, sparsePairs, allPairs float64) float64 {
	if tokens <= 0 {
		return 0
	}
	work, _ := dsaWork(l, s, tokens, sparsePairs)
	return math.Max(l.T0, work+l.IndexerPerPair*allPairs)
}
