package catalog

// optPositionOffset is OPTLearnedPositionalEmbedding's offset: the table
// has max_position_embeddings + 2 rows and position p reads row p + 2
// (vllm/model_executor/models/opt.py).
const optPositionOffset = 2

// parseOPT reads the keys OPTConfig (transformers) has in place of the
// Llama-style ones, with OPTConfig's defaults where a key is absent, and
// refuses what vLLM's opt.py would build but BLIS does not model.
func (c cfg) parseOPT(m *Model) error {
	var err error
	if m.IntermediateSize, err = c.posInt("ffn_dim"); err != nil {
		return err
	}
	boolOr := func(key string, def bool) (bool, error) {
		v, ok, err := c.bool(key)
		if !ok {
			v = def
		}
		return v, err
	}
	if m.PreLayerNorm, err = boolOr("do_layer_norm_before", true); err != nil {
		return err
	}
	remove, err := boolOr("_remove_final_layer_norm", false)
	if err != nil {
		return err
	}
	// OPTDecoder builds the final LayerNorm only for pre-norm checkpoints.
	m.FinalLayerNorm = m.PreLayerNorm && !remove
	if m.LayerNormAffine, err = boolOr("layer_norm_elementwise_affine", true); err != nil {
		return err
	}
	bias, err := boolOr("enable_bias", true)
	if err != nil {
		return err
	}
	// opt.py passes enable_bias to qkv_proj, out_proj, fc1 and fc2 alike.
	m.AttentionBias, m.MLPBias = bias, bias
	if act, ok, err := c.str("activation_function"); err != nil {
		return err
	} else if ok && act != "relu" {
		return c.errf("activation_function", "%q is not modelled for OPTForCausalLM (allowed: relu, OPTConfig's default)", act)
	}
	if p, ok, err := c.int("word_embed_proj_dim"); err != nil {
		return err
	} else if ok && p != m.HiddenSize {
		return c.errf("word_embed_proj_dim", "is %d, hidden_size %d: opt.py's project_in/project_out layers are not modelled (allowed: word_embed_proj_dim = hidden_size)", p, m.HiddenSize)
	}
	// OPTForCausalLM ties lm_head to embed_tokens whatever the config says.
	m.TieEmbeddings = true
	m.UngatedMLP = true
	m.LearnedPositions = m.MaxPositions + optPositionOffset
	return nil
}
