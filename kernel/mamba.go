package kernel

import (
	"fmt"
	"math"
	"strings"

	"blis/catalog"
)

// Hybrid linear attention (Qwen3.5: Gated DeltaNet layers between gated
// full-attention layers), as vLLM sizes and lays out its KV cache,
// mirrored from vllm-project/vllm @1936cf38:
//
//   - every GDN layer keeps one constant-size state per request
//     (MambaSpec; catalog.Model.LinearStateBytes), the full-attention
//     layers a per-token KV cache (FullAttentionSpec);
//   - vllm/model_executor/models/config.py
//     HybridAttentionMambaModelConfig.verify_and_update_config raises the
//     attention block size until one attention page holds a mamba page:
//     block_size = align × cdiv(mamba_page, align × attn_page_1_token),
//     align 16 (32 on Blackwell for head_dim 256, FlashInfer), and pads
//     the mamba page up to the attention page;
//   - kv_cache_utils.py _get_kv_cache_groups_uniform_page_size then groups
//     the layers of each spec into groups of group_size layers (as for
//     sliding windows: the smallest type's count, or the largest's under
//     1.5× the smallest), all drawing one-page-per-layer blocks from one
//     pool; a request holds cdiv(tokens, block_size) blocks in an
//     attention group and one block in a mamba group (MambaSpec with
//     mamba_block_size = max_model_len: MambaManager allocates one block);
//   - MambaModelConfig turns prefix caching off for a model without
//     mamba prefix-caching support ("Hybrid or mamba-based model detected
//     without support for prefix caching: disabling."), which the
//     scenario applies (HybridPrefixCaching).

// hybridLinearShape fills the shape's GDN numbers and folds the GDN
// layers' projections into the per-layer attention parameters, so that
// the weight and roofline sums over all layers stay right: attnLinear
// becomes the mean over full-attention and GDN layers.
func hybridLinearShape(d Deployment, s *shape) {
	m := d.Model
	tp := s.tp
	H, d0 := s.H, float64(m.HeadDim)
	// Gated attention: q_proj emits the query and its gate.
	qHeads := s.headsR
	if m.AttnOutputGate {
		qHeads *= 2
	}
	s.qkvOut = (qHeads + 2*s.kvHeadsR) * d0
	attn := H*s.qkvOut + s.attnOut*H
	nk, nv := float64(m.LinearKeyHeads), float64(m.LinearValueHeads)
	kd, vd := float64(m.LinearKeyHeadDim), float64(m.LinearValueHeadDim)
	convDim := float64(m.LinearConvDim())
	// in_proj_qkvz, in_proj_ba, conv1d weights, out_proj; per rank.
	gdn := (H*(2*nk*kd+2*nv*vd+2*nv) + convDim*float64(m.LinearConvKernel) + nv*vd*H) / tp
	s.Llin = float64(m.NumLinearLayers)
	s.attnLinear = ((s.L-s.Llin)*attn + s.Llin*gdn) / s.L
	s.Lfull -= s.Llin
	conv, ssm := m.LinearStateBytes(d.TP)
	s.linStateLayer = conv + ssm
	s.normsLayer += vd * s.Llin / s.L // RMSNormGated's weight (head_v_dim), averaged over the layers
}

// mambaAlignment is kernel_block_alignment_size: attention block sizes
// must be a multiple of it.
func mambaAlignment(d Deployment) int {
	if strings.HasPrefix(d.Chip.Name, "b") || strings.HasPrefix(d.Chip.Name, "gb") {
		if d.Model.HeadDim == 256 {
			return 32 // flashinfer-ai/flashinfer#1993: no block size 16 at head_dim 256 on Blackwell
		}
	}
	return 16
}

// mambaPages is one rank's attention page for one token and one GDN
// layer's state page, in bytes.
func mambaPages(d Deployment) (attn1, state float64) {
	s := newShape(d)
	conv, ssm := d.Model.LinearStateBytes(d.TP)
	if k := d.specK(); k > 0 {
		// The conv state keeps num_speculative_tokens more columns
		// (gated_delta_net_state_shape's num_spec).
		conv *= float64(d.Model.LinearConvKernel-1+k) / float64(d.Model.LinearConvKernel-1)
	}
	return s.kvBytesLayer, conv + ssm
}

// HybridBlockSize is the attention block size vLLM runs a hybrid-linear
// model with: the requested size, raised until one attention page holds
// one GDN layer's state (0 for other models).
func HybridBlockSize(d Deployment) int {
	if d.Model == nil || d.Chip == nil || !d.Model.IsHybridLinear() {
		return 0
	}
	attn1, state := mambaPages(d)
	align := float64(mambaAlignment(d))
	bs := int(align * math.Ceil(state/(align*attn1)))
	return max(bs, d.BlockSize)
}

// HybridPrefixCaching says whether vLLM keeps prefix caching on for d's
// model: off for a hybrid-linear model (MambaModelConfig at 1936cf38:
// Qwen3.5 does not declare mamba prefix-caching support), with the note
// vLLM logs.
func HybridPrefixCaching(d Deployment) (bool, string) {
	if d.Model == nil || !d.Model.IsHybridLinear() {
		return true, ""
	}
	return false, "Hybrid or mamba-based model detected without support for prefix caching: disabling."
}

// mambaKVLayout is kvLayout for a hybrid-linear model: attention and GDN
// layers grouped by spec with one page size (the attention block's), the
// GDN groups flagged Mamba.
func mambaKVLayout(d Deployment, s shape) kvLayout {
	bs := d.BlockSize
	attnLayers := int(s.L - s.Llin)
	linLayers := int(s.Llin)
	size := kvGroupSize(attnLayers, linLayers)
	l := KVCacheLayout{GroupSize: size, BlockSize: bs, MaxNumBatchedTokens: d.MaxNumBatchedTokens, MambaSpecBlocks: d.specK()}
	// Types in order of first appearance: layer 0's first.
	linFirst := len(d.Model.LinearLayers) > 0 && d.Model.LinearLayers[0]
	add := func(n int, mamba bool) {
		for k := (n + size - 1) / size; k > 0; k-- {
			if mamba {
				l.Mamba |= 1 << uint(l.Groups)
			}
			l.Groups++
		}
	}
	if linFirst {
		add(linLayers, true)
		add(attnLayers, false)
	} else {
		add(attnLayers, false)
		add(linLayers, true)
	}
	page := float64(bs) * s.kvBytesLayer // the mamba page is padded up to it
	return kvLayout{layout: l, blockBytes: page * float64(size)}
}

// validateHybridLinear refuses what is not modelled for hybrid-linear
// models.
func validateHybridLinear(d Deployment) error {
	m := d.Model
	if !m.IsHybridLinear() {
		return nil
	}
	if d.ppSize() > 1 {
		return fmt.Errorf("--pipeline-parallel-size %d: pipeline stages are not modelled for %s's Gated DeltaNet layers; use 1", d.PP, m.ID)
	}
	if d.TP > 0 && (m.LinearValueHeads%d.TP != 0 || m.LinearKeyHeads%d.TP != 0) {
		return fmt.Errorf("--tensor-parallel-size %d: must divide %s's %d linear key heads and %d value heads (vLLM splits the GDN heads evenly)",
			d.TP, m.ID, m.LinearKeyHeads, m.LinearValueHeads)
	}
	return nil
}

// IsMamba reports whether group g holds Gated DeltaNet state.
func (l KVCacheLayout) IsMamba(g int) bool { return g < 64 && l.Mamba>>uint(g)&1 == 1 }

// gdnTerm is a GDN kernel resolved against the chip's laws: the prefill
// (chunked) and decode (recurrent or update) kernels of its stage and the
// layer's shape on one rank.
type gdnTerm struct {
	pre, dec *catalog.GDNLaw
	sh       GDNShape
}

// newGDNTerm finds the laws of op's stage (catalog.GDNConv: the conv
// kernels; catalog.GDNRule: the gated delta rule's).
func newGDNTerm(d Deployment, co *catalog.Coefficients, g *catalog.GDN) (gdnTerm, error) {
	preK, decK := catalog.GDNRulePrefill, catalog.GDNRuleDecode
	if g.Stage == catalog.GDNConv {
		preK, decK = catalog.GDNConvPrefill, catalog.GDNConvDecode
	}
	var t gdnTerm
	var err error
	if t.pre, err = co.GDNFor(preK); err != nil {
		return t, err
	}
	if t.dec, err = co.GDNFor(decK); err != nil {
		return t, err
	}
	tp := float64(max(d.TP, 1))
	t.sh = GDNShape{KeyHeads: float64(g.KeyHeads) / tp, ValueHeads: float64(g.ValueHeads) / tp,
		KeyHeadDim: float64(g.KeyHeadDim), ValueDim: float64(g.ValueHeadDim), ConvKernel: float64(max(d.Model.LinearConvKernel, 2)),
		ActBytes: d.Model.DtypeBytes, SSMStateByte: d.Model.SSMStateDtypeBytes}
	return t, nil
}

// time is the kernels' seconds for a step of nPre prefill rows (pre
// tokens) and nDec decode rows (dec tokens): vLLM runs the prefill and
// decode parts of a mixed batch as separate kernel calls.
func (t gdnTerm) time(nPre, pre, nDec, dec float64) float64 {
	s := 0.0
	if nPre > 0 {
		s += GDNTime(t.pre, t.sh, nPre, pre)
	}
	if nDec > 0 {
		s += GDNTime(t.dec, t.sh, nDec, dec)
	}
	return s
}
