package kernel

import (
	"math"

	"blis/catalog"
)

// DSV4Shape is one DeepSeek-V4 attention layer on one rank (config.json
// names; vLLM 0.24.0 vllm/models/deepseek_v4/attention.py). Every layer
// attends with one 512-dim KV head (MQA) to a sliding window of its last
// Window tokens plus compressed KV entries, one per CompressRatio tokens:
// CSA layers (ratio 4) to the TopK entries the lightning indexer picks,
// HCA layers (ratio 128) to all of them; ratio 0 is a sliding-window-only
// layer (DeepSeek-V4-Flash's first two).
type DSV4Shape struct {
	Hidden    float64
	Heads     float64 // query heads on this rank: num_attention_heads / TP
	HeadDim   float64 // head_dim (512): the KV entry and each query head
	QLoraRank float64
	OLoraRank float64
	// OGroups are the output projection's groups on this rank: o_groups /
	// TP (wo_a maps each group's heads to OLoraRank, wo_b all groups to
	// Hidden; both split by heads under TP).
	OGroups                        float64
	IndexHeads, IndexHeadDim, TopK float64 // the CSA indexer (replicated)
	Window                         float64 // sliding_window
	CompressRatio                  float64 // 4 (CSA), 128 (HCA), 0 (window only)
}

// csa reports whether the layer has the indexer: compress ratio 4 is
// DeepSeek-V4's compressed sparse attention, the one ratio with top-k.
func (s DSV4Shape) csa() bool { return s.CompressRatio == 4 }

// Params is the module's weights on this rank: wq_a and wkv (replicated),
// wq_b and wo_a (split by heads), wo_b (split by groups), the KV
// compressor's wkv and wgate (replicated; overlapping windows at ratio 4
// double their width), and on CSA layers the indexer's wq_b, weights_proj
// and its own compressor.
func (s DSV4Shape) Params() float64 {
	p := s.Hidden*s.QLoraRank + s.Hidden*s.HeadDim + s.QLoraRank*s.Heads*s.HeadDim +
		s.Heads*s.HeadDim*s.OLoraRank + s.OGroups*s.OLoraRank*s.Hidden
	if s.CompressRatio > 0 {
		coff := 1.0
		if s.csa() {
			coff = 2
		}
		p += 2 * s.Hidden * coff * s.HeadDim
	}
	if s.csa() {
		p += s.QLoraRank*s.IndexHeads*s.IndexHeadDim + s.Hidden*s.IndexHeads + 2*s.Hidden*2*s.IndexHeadDim
	}
	return p
}

// DecodeReads are what rows decode rows whose contexts (each counting its
// new token) sum to ctxSum read: attnKeys the KV entries the sparse
// attention reads (window plus compressed, top-k capped on CSA), indexKeys
// the compressed index keys the CSA indexer scores. The window and top-k
// caps apply to the totals, exact when every row is on the same side of
// each cap (as windows are priced in the graph walk).
func (s DSV4Shape) DecodeReads(rows, ctxSum float64) (attnKeys, indexKeys float64) {
	if rows <= 0 || ctxSum <= 0 {
		return 0, 0
	}
	attnKeys = math.Min(ctxSum, rows*s.Window)
	if s.CompressRatio > 0 {
		comp := ctxSum / s.CompressRatio
		if s.csa() {
			indexKeys = comp
			comp = math.Min(comp, rows*s.TopK)
		}
		attnKeys += comp
	}
	return attnKeys, indexKeys
}

// PrefillReads are what one sequence adding newTokens after cached tokens
// reads: attnPairs the (query, KV entry) pairs of the sparse attention
// (window pairs, CausalPairs with the window, plus per query its
// compressed entries, top-k capped on CSA), indexPairs the (query,
// compressed key) pairs the CSA indexer scores, and entries the compressed
// entries of the whole sequence, (cached + newTokens)/CompressRatio. Sum
// each over the chunk's sequences.
func (s DSV4Shape) PrefillReads(newTokens, cached float64) (attnPairs, indexPairs, entries float64) {
	if newTokens <= 0 {
		return 0, 0, 0
	}
	attnPairs = CausalPairs(newTokens, cached, s.Window)
	if s.CompressRatio > 0 {
		entries = (math.Max(cached, 0) + newTokens) / s.CompressRatio
		if s.csa() {
			// Σ min(ℓ/4, TopK) = Σ min(ℓ, 4·TopK)/4.
			attnPairs += CausalPairs(newTokens, cached, s.CompressRatio*s.TopK) / s.CompressRatio
			indexPairs = CausalPairs(newTokens, cached, 0) / s.CompressRatio
		} else {
			attnPairs += CausalPairs(newTokens, cached, 0) / s.CompressRatio
		}
	}
	return attnPairs, indexPairs, entries
}

// PrefillReadsFromPairs is PrefillReads from a batch's totals — tokens
// new tokens whose causal pairs (CausalPairs without a window) sum to
// pairs, in sequences whose lengths (cached + new) sum to ctxSum — with
// the window and top-k caps applied to the totals (exact when every query
// is on the same side of each cap).
func (s DSV4Shape) PrefillReadsFromPairs(tokens, pairs, ctxSum float64) (attnPairs, indexPairs, entries float64) {
	if tokens <= 0 || pairs <= 0 {
		return 0, 0, 0
	}
	attnPairs = math.Min(pairs, tokens*s.Window)
	if s.CompressRatio > 0 {
		entries = math.Max(ctxSum, 0) / s.CompressRatio
		comp := pairs / s.CompressRatio
		if s.csa() {
			indexPairs = comp
			comp = math.Min(comp, tokens*s.TopK)
		}
		attnPairs += comp
	}
	return attnPairs, indexPairs, entries
}

// dsv4Work is the module's compute and memory time, sqrt(C² + M²), for
// rows query rows attending keys (query, KV entry) pairs, and w = rows ×
// padded heads Hp, the work items of the ramp. The projections (fp8 block
// GEMMs) and the sparse attention (bf16 FlashMLA) reach different fractions
// of the peak, EffMax and AttnEff:
//
//	C = (2·rows·Params/EffMax + keys·Hp·4·HeadDim/AttnEff) / (P · w/(w+WorkHalf))
//	M = (Params·WeightBytes + keys·HeadDim·KVBytes + rows·Hidden·4) / (BW · BWEff)
//
// The indexer is priced apart, per pair scored: its fp8 logits GEMM and
// top-k over every compressed key are not the module's ramp (the tables
// fitted worse with its FLOPs and bytes inside C and M: H200 CSA prefill
// 24 % MAPE against 17 %).
func dsv4Work(l *catalog.DSV4AttnLaw, s DSV4Shape, rows, keys float64) (t, w float64) {
	p, hp := s.Params(), math.Max(s.Heads, l.PadHeads)
	f := 2*rows*p/l.EffMax + keys*hp*4*s.HeadDim/l.AttnEff
	b := p*l.WeightBytes + keys*s.HeadDim*l.KVBytes + rows*s.Hidden*4
	w = rows * hp
	c := f * (w + l.WorkHalf) / (l.PeakFLOPS * w)
	mem := b / (l.MemBW * l.BWEff)
	return math.Sqrt(c*c + mem*mem), w
}

// DSV4DecodeTime prices one DeepSeek-V4 attention module call (one layer)
// for rows decode rows reading attnKeys KV entries, the CSA indexer
// scoring indexKeys compressed keys, in all (DecodeReads):
//
//	t = T0 + dsv4Work(rows, attnKeys) + PerSeqHead·rows·Hp + IndexerPerToken·indexKeys
//
// It prices the projections, the compressor and the indexer too: add no
// GEMM laws for them. Sliding-window-only layers are priced with the HCA
// law and CompressRatio 0 (docs/calibration.md says why).
func DSV4DecodeTime(l *catalog.DSV4AttnLaw, s DSV4Shape, rows, attnKeys, indexKeys float64) float64 {
	if rows <= 0 {
		return 0
	}
	work, w := dsv4Work(l, s, rows, attnKeys)
	return l.T0 + work + l.PerSeqHead*w + l.IndexerPerToken*indexKeys
}

// DSV4PrefillTime prices one DeepSeek-V4 attention module call (one layer)
// for tokens prefill tokens attending attnPairs pairs, the CSA indexer
// scoring indexPairs pairs, over sequences holding entries compressed
// entries in all (PrefillReads summed over the chunk's sequences, or
// PrefillReadsFromPairs):
//
//	t = T0 + dsv4Work(tokens, attnPairs) + PerToken·tokens + IndexerPerPair·indexPairs + PerCachedEntry·entries
//
// PerToken is the per-token work outside the GEMMs and attention (norms,
// RoPE, activation quantization, the compressor's state update), which
// does not shrink with the rank's heads; PerCachedEntry the per-sequence
// pass over its compressed cache a chunk with a cached prefix makes. A
// sequence scheduling one new token is a decode row to vLLM's DSV4 backend
// (the tables' one-token context rows equal their decode rows): price it
// with DSV4DecodeTime, not here. T0
// adds rather than floors: aiconfigurator times the module inside a CUDA
// graph (collector/vllm/collect_dsv4_attn.py), as vLLM runs it.
func DSV4PrefillTime(l *catalog.DSV4AttnLaw, s DSV4Shape, tokens, attnPairs, indexPairs, entries float64) float64 {
	if tokens <= 0 {
		return 0
	}
	work, _ := dsv4Work(l, s, tokens, attnPairs)
	return l.T0 + work + l.PerToken*tokens + l.IndexerPerPair*indexPairs + l.PerCachedEntry*entries
}

// MHCBytes is what one mHC call moves for tokens tokens of hidden size
// hidden with hcMult residual streams (bf16): pre reads the streams and
// writes the sub-layer input; post reads the sub-layer output and the
// streams and writes the new streams.
func MHCBytes(op string, tokens, hidden, hcMult float64) float64 {
	if op == "pre" {
		return tokens * hidden * (hcMult + 1) * 2
	}
	return tokens * hidden * (2*hcMult + 1) * 2
}

// MHCTime prices one DeepSeek-V4 mHC call (one site: DeepSeek-V4 has two
// per layer, around attention and around the MoE/FFN; vLLM 0.24.0
// mhc_pre_tilelang / mhc_post_tilelang) of tokens tokens:
//
//	t = sqrt(T0² + M²) + PerToken·tokens,  M = MHCBytes/(BW·BWEff)
//
// The launch floor and the memory time combine in quadrature, as compute
// and memory do in the other laws: the tables are flat at T0 up to ~100
// tokens, then bend smoothly into the bandwidth line (H200 post, hidden
// 4096: 3.1 µs at 1 token, 3.7 µs at 128, 4.2 TB/s from 1k tokens up).
func MHCTime(l *catalog.MHCLaw, tokens, hidden, hcMult float64) float64 {
	if tokens <= 0 {
		return 0
	}
	m := MHCBytes(l.Op, tokens, hidden, hcMult) / (l.MemBW * l.BWEff)
	return math.Sqrt(l.T0*l.T0+m*m) + l.PerToken*tokens
}
