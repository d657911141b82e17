package catalog

import "strings"

// archDSV4 is DeepSeek-V4's architectures[0].
const archDSV4 = "DeepseekV4ForCausalLM"

// parseDSV4 reads the keys DeepSeek-V4's decoder adds (vLLM
// vllm/model_executor/models/deepseek_v4.py and
// vllm/model_executor/layers/deepseek_v4_attention.py @0a291a2e), strictly:
// every key vLLM reads without a default is required. The common parser has
// read the shared keys already; the config's sliding_window is the raw
// window every DeepSeek-V4 layer keeps inside its attention module, not a
// per-layer sliding-attention choice, so the generic sliding tables are
// cleared.
func (c cfg) parseDSV4(m *Model) error {
	var err error
	if m.NumKVHeads != 1 {
		return c.errf("num_key_value_heads", "is %d, want 1 (DeepSeek-V4 attention keeps one shared KV head)", m.NumKVHeads)
	}
	if _, ok := c.get("head_dim"); !ok {
		return c.errf("head_dim", "missing (DeepSeek-V4's KV head width)")
	}
	if m.QLoraRank, err = c.posInt("q_lora_rank"); err != nil {
		return err
	}
	if m.QKRopeHeadDim, err = c.posInt("qk_rope_head_dim"); err != nil {
		return err
	}
	if m.QKRopeHeadDim >= m.HeadDim || m.QKRopeHeadDim%2 != 0 {
		return c.errf("qk_rope_head_dim", "is %d, want an even number below head_dim %d", m.QKRopeHeadDim, m.HeadDim)
	}
	m.RotaryDim = m.QKRopeHeadDim
	if m.OLoraRank, err = c.posInt("o_lora_rank"); err != nil {
		return err
	}
	if m.OGroups, err = c.posInt("o_groups"); err != nil {
		return err
	}
	if m.NumHeads%m.OGroups != 0 {
		return c.errf("o_groups", "%d does not divide num_attention_heads %d", m.OGroups, m.NumHeads)
	}
	if m.HCMult, err = c.posInt("hc_mult"); err != nil {
		return err
	}
	if m.HCSinkhornIters, err = c.posInt("hc_sinkhorn_iters"); err != nil {
		return err
	}
	if m.HCEps, err = c.reqPosFloat("hc_eps"); err != nil {
		return err
	}
	if m.CompressRopeTheta, err = c.reqPosFloat("compress_rope_theta"); err != nil {
		return err
	}
	if m.SwigluLimit, err = c.optPosFloat("swiglu_limit", 0); err != nil {
		return err
	}
	win, err := c.posInt("sliding_window")
	if err != nil {
		return err
	}
	m.SlidingWindow, m.SlidingWindowLayers, m.SlidingLayers = win, 0, nil
	if m.IndexTopK, err = c.posInt("index_topk"); err != nil {
		return err
	}
	if m.IndexHeads, err = c.posInt("index_n_heads"); err != nil {
		return err
	}
	if m.IndexHeadDim, err = c.posInt("index_head_dim"); err != nil {
		return err
	}
	if m.IndexHeadDim <= m.QKRopeHeadDim {
		return c.errf("index_head_dim", "is %d, want more than qk_rope_head_dim %d", m.IndexHeadDim, m.QKRopeHeadDim)
	}
	if !m.IsMoE() {
		return c.errf("n_routed_experts", "missing: every DeepSeek-V4 layer routes to experts")
	}
	hash, _, err := c.int("num_hash_layers")
	if err != nil {
		return err
	}
	if hash > m.NumLayers {
		return c.errf("num_hash_layers", "%d exceeds num_hidden_layers %d", hash, m.NumLayers)
	}
	m.NumHashLayers = hash
	if m.NumNextNLayers > 1 {
		return c.errf("num_nextn_predict_layers", "is %d; DeepSeek-V4's compress_ratios name one MTP layer", m.NumNextNLayers)
	}
	ratios, ok, err := c.intList("compress_ratios")
	if err != nil {
		return err
	}
	if !ok || len(ratios) != m.NumLayers+1 {
		return c.errf("compress_ratios", "has %d entries, want num_hidden_layers + 1 = %d (the last is the MTP layer's)", len(ratios), m.NumLayers+1)
	}
	for i, r := range ratios {
		if r != 0 && r != 4 && r != 128 {
			return c.errf("compress_ratios", "entry %d is %d; vLLM's DeepSeek-V4 attention supports 0 (sliding window only), 4 (CSA) and 128 (HCA)", i, r)
		}
	}
	m.CompressRatios = append([]int(nil), ratios[:m.NumLayers]...)
	m.MTPCompressRatio = ratios[m.NumLayers]
	return nil
}

// applyDSV4ExpertDtype applies expert_dtype after the quantization_config:
// vLLM's DeepseekV4FP8Config keeps the fp8 128×128-block linears and, with
// expert_dtype fp4, loads the routed experts as MXFP4 (packed E2M1 with one
// ue8m0 scale per 32 values), or, when the quantization_config's
// moe_quant_algo is NVFP4 (NVIDIA's DeepSeek-V4-Flash-NVFP4), the decoder
// layers' routed experts as ModelOpt NVFP4 (E2M1 with one E4M3 scale per
// 16, run by ModelOptNvFp4FusedMoE) while the MTP layer's stay MXFP4
// (vllm/models/deepseek_v4/quant_config.py@e95bf0df _uses_nvfp4_experts).
// Without the key the experts are in the linears' format.
func (c cfg) applyDSV4ExpertDtype(m *Model) error {
	dt, ok, err := c.str("expert_dtype")
	if err != nil {
		return err
	}
	if !ok && m.ModelType == "deepseek_v4" && m.QuantMethod == "fp8" {
		// DeepseekV4FP8Config (selected for model_type deepseek_v4)
		// defaults a missing expert_dtype to fp4; other model types (SGLang's
		// FP8 conversion, deepseek_ref) get plain Fp8Config: fp8 experts.
		dt, ok = "fp4", true
	}
	switch {
	case !ok:
		m.ExpertDtype = shortDtype(m.WeightDtype)
	case dt == "fp4":
		if m.QuantMethod != "fp8" {
			return c.errf("expert_dtype", "fp4 needs the fp8 quantization_config DeepSeek-V4 checkpoints carry (quant_method is %q)", m.QuantMethod)
		}
		m.ExpertDtype, m.WeightBytesPerParam = "fp4", bytesMXFP4
		if m.WeightBlock > 0 {
			// FP4 checkpoints store the fp8 linears' block scales as
			// e8m0 (one byte), not float32 (is_scale_e8m0).
			bpp := bytesFP8 + 1/float64(m.WeightBlock*m.WeightBlock)
			m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam = bpp, bpp
		}
		algo, err := c.dsv4MoEQuantAlgo()
		if err != nil {
			return err
		}
		if algo == "NVFP4" {
			m.ExpertDtype, m.WeightBytesPerParam = "nvfp4", bytesNVFP4
			m.QuantScheme += ", routed experts W4A4 nvfp4 g16 (ModelOpt; MTP experts mxfp4)"
		}
	case dt == "fp8":
		if m.QuantMethod != "fp8" {
			return c.errf("expert_dtype", "fp8 needs an fp8 quantization_config (quant_method is %q)", m.QuantMethod)
		}
		m.ExpertDtype = "fp8"
	default:
		return c.errf("expert_dtype", "unsupported %q (supported: fp4, fp8)", dt)
	}
	return nil
}

// dsv4MoEQuantAlgo is the quantization_config's moe_quant_algo, upper
// case ("" when absent). DeepseekV4FP8Config only tests it for NVFP4;
// any other value leaves the fp4 experts MXFP4.
func (c cfg) dsv4MoEQuantAlgo() (string, error) {
	q, ok, err := c.object("quantization_config")
	if err != nil || !ok {
		return "", err
	}
	algo, _, err := q.str("moe_quant_algo")
	return strings.ToUpper(algo), err
}
