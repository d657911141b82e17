package catalog

// Qwen3.5's hybrid decoder (vllm/model_executor/models/qwen3_5.py, built on
// qwen3_next.py; vllm-project/vllm @36c110bd): layer_types names every layer
// "linear_attention" (a Gated DeltaNet layer) or "full_attention" (gated
// attention with q/k norms and partial RoPE), every layer routes to experts
// (Qwen3_5Moe) or runs a dense MLP (Qwen3_5), and mtp_num_hidden_layers MTP
// layers ship for speculative decoding.

// hybridLinearArchs are the decoder architectures whose layer_types may
// name linear_attention layers.
var hybridLinearArchs = map[string]bool{"Qwen3_5MoeForCausalLM": true, "Qwen3_5ForCausalLM": true}

// parseLinearAttention reads the Gated DeltaNet keys strictly: they are
// required for a hybrid-linear architecture and every linear_attention
// layer must come with them.
func (c cfg) parseLinearAttention(m *Model) error {
	if !hybridLinearArchs[m.Architecture] {
		return nil
	}
	types, ok, err := c.strList("layer_types")
	if err != nil {
		return err
	}
	if !ok {
		return c.errf("layer_types", "missing: %s names each layer linear_attention or full_attention", m.Architecture)
	}
	if len(types) != m.NumLayers {
		return c.errf("layer_types", "has %d entries for num_hidden_layers %d", len(types), m.NumLayers)
	}
	m.LinearLayers = make([]bool, m.NumLayers)
	for i, t := range types {
		switch t {
		case "linear_attention":
			m.LinearLayers[i] = true
			m.NumLinearLayers++
		case "full_attention":
		default:
			return c.errf("layer_types", "layer %d is %q: %s layers are linear_attention or full_attention", i, t, m.Architecture)
		}
	}
	if m.NumLinearLayers == m.NumLayers {
		return c.errf("layer_types", "every layer is linear_attention: a hybrid model needs full_attention layers for its KV cache")
	}
	for _, f := range []struct {
		key string
		dst *int
	}{
		{"linear_num_key_heads", &m.LinearKeyHeads}, {"linear_num_value_heads", &m.LinearValueHeads},
		{"linear_key_head_dim", &m.LinearKeyHeadDim}, {"linear_value_head_dim", &m.LinearValueHeadDim},
		{"linear_conv_kernel_dim", &m.LinearConvKernel},
	} {
		if *f.dst, err = c.posInt(f.key); err != nil {
			return err
		}
	}
	if m.LinearValueHeads%m.LinearKeyHeads != 0 {
		return c.errf("linear_num_value_heads", "%d is not a multiple of linear_num_key_heads %d", m.LinearValueHeads, m.LinearKeyHeads)
	}
	if m.LinearConvKernel < 2 {
		return c.errf("linear_conv_kernel_dim", "is %d, want ≥ 2 (the conv state keeps kernel − 1 tokens)", m.LinearConvKernel)
	}
	m.SSMStateDtype, m.SSMStateDtypeBytes = m.Dtype, m.DtypeBytes
	if s, ok, err := c.str("mamba_ssm_dtype"); err != nil {
		return err
	} else if ok {
		switch s {
		case "float32":
			m.SSMStateDtype, m.SSMStateDtypeBytes = "float32", 4
		case "bfloat16", "float16":
			m.SSMStateDtype, m.SSMStateDtypeBytes = s, 2
		default:
			return c.errf("mamba_ssm_dtype", "unsupported %q (supported: float32, bfloat16, float16)", s)
		}
	}
	gate, ok, err := c.bool("attn_output_gate")
	if err != nil {
		return err
	}
	m.AttnOutputGate = !ok || gate // Qwen3NextAttention: attn_output_gate defaults to true
	if m.MTPHiddenLayers, _, err = c.int("mtp_num_hidden_layers"); err != nil {
		return err
	}
	return nil
}

// parsePartialRotary reads partial_rotary_factor from rope_parameters (or
// the top level): RoPE rotates that fraction of head_dim (Qwen3-Next and
// Qwen3.5 rotate a quarter: 64 of 256).
func (c cfg) parsePartialRotary(m *Model) error {
	src := c
	if rp, ok, err := c.object("rope_parameters"); err != nil {
		return err
	} else if ok {
		if _, has := rp.get("partial_rotary_factor"); has {
			src = rp
		}
	}
	f, err := src.optPosFloat("partial_rotary_factor", 1)
	if err != nil {
		return err
	}
	if f > 1 {
		return src.errf("partial_rotary_factor", "is %g, want a number in (0, 1]", f)
	}
	m.RotaryDim = int(float64(m.HeadDim) * f)
	if m.RotaryDim < 1 {
		return src.errf("partial_rotary_factor", "%g of head_dim %d rotates no dimension", f, m.HeadDim)
	}
	return nil
}
