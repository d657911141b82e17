package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// maxConfigInt bounds every integer read from a config.json, so that the
// products the kernel forms from them stay exact in float64.
const maxConfigInt = 1<<31 - 1

// ParseConfig reads a Hugging Face config.json into a Model. name is the
// file's path, used in every error together with the offending key. The
// identity fields (ID, Aliases, Source) are left for the caller.
//
// Only architectures the kernel can price honestly are accepted: dense
// GQA/MHA, mixture of experts (Mixtral, Qwen-MoE, DeepSeek, gpt-oss,
// MiniMax key conventions), multi-head latent attention and sliding-window
// layers. Multimodal wrappers (a nested text_config) and layer types other
// than full and sliding attention (linear attention, ...) are errors.
func ParseConfig(name string, data []byte) (*Model, error) {
	obj, err := decodeObject(name, data)
	if err != nil {
		return nil, err
	}
	c := cfg{file: name, m: obj}
	m := &Model{}
	if err := c.parse(m); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseHFQuantConfig applies a ModelOpt hf_quant_config.json (the file
// NVIDIA's checkpoints carry beside config.json) to m. A quantization_config
// inside config.json takes precedence; then this file is ignored.
func ParseHFQuantConfig(m *Model, name string, data []byte) error {
	obj, err := decodeObject(name, data)
	if err != nil {
		return err
	}
	c := cfg{file: name, m: obj}
	if m.QuantMethod != "" {
		return nil
	}
	q, ok, err := c.object("quantization")
	if err != nil {
		return err
	}
	if !ok {
		return c.errf("quantization", "missing: a ModelOpt hf_quant_config.json has a quantization object")
	}
	// vLLM's ModelOptNvFp4Config._from_config (modelopt.py@00155cde)
	// refuses an NVFP4 hf_quant_config.json that lacks any of these keys.
	if algo, _, _ := q.str("quant_algo"); strings.Contains(strings.ToUpper(algo), "NVFP4") {
		for _, k := range []string{"group_size", "kv_cache_quant_algo", "exclude_modules"} {
			if _, present := q.m[k]; !present {
				return q.errf(k, "missing: vLLM requires it in an NVFP4 hf_quant_config.json (null allowed for kv_cache_quant_algo)")
			}
		}
	}
	return q.applyModelOpt(m, "exclude_modules")
}

func decodeObject(name string, data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %v", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the JSON object", name)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: top level is %s, want a JSON object", name, jsonKind(v))
	}
	return obj, nil
}

// cfg is one JSON object of a config file with typed, strict accessors.
// A key whose value is null counts as absent.
type cfg struct {
	file   string
	prefix string // "quantization_config." for nested objects
	m      map[string]any
}

func (c cfg) errf(key, format string, args ...any) error {
	return fmt.Errorf("%s: key %q: %s", c.file, c.prefix+key, fmt.Sprintf(format, args...))
}

func (c cfg) get(key string) (any, bool) {
	v, ok := c.m[key]
	if !ok || v == nil {
		return nil, false
	}
	return v, true
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func (c cfg) asInt(key string, v any) (int, error) {
	i, err := c.asIntUpTo(key, v, maxConfigInt)
	return int(i), err
}

// asIntUpTo reads an integer in [0, limit]; asInt's limit is maxConfigInt,
// Engram's row counts take a larger one.
func (c cfg) asIntUpTo(key string, v any, limit int64) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, c.errf(key, "is %s, want an integer", jsonKind(v))
	}
	i, err := n.Int64()
	if err != nil {
		return 0, c.errf(key, "%s is not an integer", n.String())
	}
	if i < 0 || i > limit {
		return 0, c.errf(key, "%d is out of range [0, %d]", i, limit)
	}
	return i, nil
}

// optPosFloat returns the key's value, a finite number above zero, or def
// when the key is absent or null.
func (c cfg) optPosFloat(key string, def float64) (float64, error) {
	v, ok := c.get(key)
	if !ok {
		return def, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, c.errf(key, "is %s, want a number", jsonKind(v))
	}
	f, err := n.Float64()
	if err != nil || f <= 0 || math.IsInf(f, 0) {
		return 0, c.errf(key, "%s is not a finite number above zero", n.String())
	}
	return f, nil
}

// reqPosFloat requires the key and a finite number above zero.
func (c cfg) reqPosFloat(key string) (float64, error) {
	if _, ok := c.get(key); !ok {
		return 0, c.errf(key, "missing")
	}
	return c.optPosFloat(key, 0)
}

// int returns the key's integer value; ok is false when absent or null.
func (c cfg) int(key string) (v int, ok bool, err error) {
	raw, ok := c.get(key)
	if !ok {
		return 0, false, nil
	}
	v, err = c.asInt(key, raw)
	return v, err == nil, err
}

// posInt requires the key and a value ≥ 1.
func (c cfg) posInt(key string) (int, error) {
	v, ok, err := c.optPosInt(key)
	if err == nil && !ok {
		err = c.errf(key, "missing")
	}
	return v, err
}

// optPosInt reads an optional integer that must be ≥ 1 when present.
func (c cfg) optPosInt(key string) (v int, ok bool, err error) {
	if v, ok, err = c.int(key); err != nil || !ok {
		return 0, false, err
	}
	if v < 1 {
		return 0, false, c.errf(key, "is %d, want ≥ 1", v)
	}
	return v, true, nil
}

func (c cfg) str(key string) (string, bool, error) {
	raw, ok := c.get(key)
	if !ok {
		return "", false, nil
	}
	s, isStr := raw.(string)
	if !isStr {
		return "", false, c.errf(key, "is %s, want a string", jsonKind(raw))
	}
	return s, true, nil
}

func (c cfg) bool(key string) (bool, bool, error) {
	raw, ok := c.get(key)
	if !ok {
		return false, false, nil
	}
	b, isBool := raw.(bool)
	if !isBool {
		return false, false, c.errf(key, "is %s, want true or false", jsonKind(raw))
	}
	return b, true, nil
}

func (c cfg) list(key string) ([]any, bool, error) {
	raw, ok := c.get(key)
	if !ok {
		return nil, false, nil
	}
	l, isList := raw.([]any)
	if !isList {
		return nil, false, c.errf(key, "is %s, want a list", jsonKind(raw))
	}
	return l, true, nil
}

func (c cfg) strList(key string) ([]string, bool, error) {
	l, ok, err := c.list(key)
	if !ok || err != nil {
		return nil, ok, err
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, isStr := v.(string)
		if !isStr {
			return nil, false, c.errf(key, "item %d is %s, want a string", i, jsonKind(v))
		}
		out[i] = s
	}
	return out, true, nil
}

func (c cfg) intList(key string) ([]int, bool, error) {
	l, ok, err := c.list(key)
	if !ok || err != nil {
		return nil, ok, err
	}
	out := make([]int, len(l))
	for i, v := range l {
		n, err := c.asInt(fmt.Sprintf("%s[%d]", key, i), v)
		if err != nil {
			return nil, false, err
		}
		out[i] = n
	}
	return out, true, nil
}

func (c cfg) object(key string) (cfg, bool, error) {
	raw, ok := c.get(key)
	if !ok {
		return cfg{}, false, nil
	}
	o, isObj := raw.(map[string]any)
	if !isObj {
		return cfg{}, false, c.errf(key, "is %s, want an object", jsonKind(raw))
	}
	return cfg{file: c.file, prefix: c.prefix + key + ".", m: o}, true, nil
}

// firstInt reads the first present key of an alias group; keys that are all
// present must agree (gpt-oss spells top-k two ways).
func (c cfg) firstInt(keys ...string) (v int, key string, ok bool, err error) {
	for _, k := range keys {
		x, present, err := c.int(k)
		if err != nil {
			return 0, "", false, err
		}
		if !present {
			continue
		}
		if ok && x != v {
			return 0, "", false, c.errf(k, "is %d but %q is %d", x, c.prefix+key, v)
		}
		if !ok {
			v, key, ok = x, k, true
		}
	}
	return v, key, ok, nil
}

// dtypeBytes maps the dtypes a config may name to their size. vLLM's
// --dtype auto serves float32 checkpoints in bfloat16 (vllm/config/model.py
// _resolve_auto_dtype), so they are recorded as bfloat16.
func normDtype(s string) (string, float64, bool) {
	switch s {
	case "bfloat16":
		return "bfloat16", 2, true
	case "float16", "half":
		return "float16", 2, true
	case "float32", "float":
		return "bfloat16", 2, true
	}
	return "", 0, false
}

// textWrappers are multimodal wrappers whose text decoder the catalog reads
// from text_config, for text-only serving. Their vision tower is neither
// counted in the weights nor priced: Kimi-K2.5's MoonViT (27 layers of
// width 1152, about 0.4 B parameters, against the decoder's 1 T) is under
// 0.2 % of a GPU's weights at TP 8, and text prompts never run it.
//
// The value is the decoder architecture vLLM builds when the text_config
// names none ("" when it must name its own): Qwen3-VL's text model is
// Qwen3's decoder (vllm/model_executor/models/qwen3_vl.py Qwen3LLMForCausalLM)
// with interleaved M-RoPE, which for text-only prompts rotates every section
// by the same position, so it prices as Qwen3's RoPE. Qwen3-VL's vision
// tower is counted in the weights (VisionParams): 1.8 % of the 32B model's,
// too much to leave out of the KV pool at small TP.
var textWrappers = map[string]string{"KimiK25ForConditionalGeneration": "", "Qwen3VLForConditionalGeneration": "Qwen3ForCausalLM",
	// Llama 4's text model (llama4.py Llama4ForCausalLM); its vision tower
	// (about 0.9 B parameters for Scout, under 1 % of the weights) is not
	// counted: the meta-llama config in the catalog does not describe it.
	"Llama4ForConditionalGeneration": "Llama4ForCausalLM",
	// Qwen3.5's hybrid decoder (qwen3_5.py Qwen3_5ForCausalLM and
	// Qwen3_5MoeForCausalLM); its vision tower is Qwen3-VL's and is counted
	// in the weights as Qwen3-VL's is.
	"Qwen3_5ForConditionalGeneration": "Qwen3_5ForCausalLM", "Qwen3_5MoeForConditionalGeneration": "Qwen3_5MoeForCausalLM"}

// qwen3VisionParams counts the parameters of Qwen3-VL's vision tower as
// vLLM builds it (qwen3_vl.py Qwen3_VisionTransformer): a Conv3d patch
// embedding, learned position embeddings, depth blocks of LayerNorm ×2,
// qkv and proj linears and a two-layer MLP (all with biases), then one
// patch merger and one per deepstack index, each a LayerNorm and two
// linears from spatial_merge_size² × hidden to out_hidden_size.
func (c cfg) qwen3VisionParams() (float64, error) {
	get := func(k string) (float64, error) {
		v, err := c.posInt(k)
		return float64(v), err
	}
	var depth, h, inter, out, merge, patch, tpatch, inCh, npos float64
	var err error
	for _, f := range []struct {
		key string
		dst *float64
	}{{"depth", &depth}, {"hidden_size", &h}, {"intermediate_size", &inter}, {"out_hidden_size", &out},
		{"spatial_merge_size", &merge}, {"patch_size", &patch}, {"temporal_patch_size", &tpatch},
		{"in_channels", &inCh}, {"num_position_embeddings", &npos}} {
		if *f.dst, err = get(f.key); err != nil {
			return 0, err
		}
	}
	deep, _, err := c.intList("deepstack_visual_indexes")
	if err != nil {
		return 0, err
	}
	block := 4*h + (h*3*h + 3*h) + (h*h + h) + (h*inter + inter) + (inter*h + h)
	mh := h * merge * merge
	merger := func(normWidth float64) float64 { return 2*normWidth + (mh*mh + mh) + (mh*out + out) }
	p := inCh*tpatch*patch*patch*h + h + npos*h + depth*block + merger(h) + float64(len(deep))*merger(mh)
	return p, nil
}

func (c cfg) parse(m *Model) error {
	if _, nested := c.get("text_config"); nested {
		if _, top := c.get("num_hidden_layers"); !top {
			archs, _, err := c.strList("architectures")
			if err != nil {
				return err
			}
			textArch, known := "", false
			if len(archs) > 0 {
				textArch, known = textWrappers[archs[0]]
			}
			if !known {
				return c.errf("text_config", "nested text_config (a multimodal wrapper) is not supported; only text-only decoder configs and the wrappers %s are",
					strings.Join(slices.Sorted(maps.Keys(textWrappers)), ", "))
			}
			text, _, err := c.object("text_config")
			if err != nil {
				return err
			}
			if _, named := text.get("architectures"); !named && textArch != "" {
				text.m["architectures"] = []any{textArch}
			}
			if _, tied := text.get("tie_word_embeddings"); !tied {
				if v, ok := c.get("tie_word_embeddings"); ok {
					text.m["tie_word_embeddings"] = v
				}
			}
			if err := text.parse(m); err != nil {
				return err
			}
			m.Wrapper = archs[0]
			// A wrapper may carry the checkpoint's quantization itself
			// (RedHat's Llama 4 FP8); the text_config's own wins.
			if _, own := text.get("quantization_config"); !own {
				if q, ok, err := c.object("quantization_config"); err != nil {
					return err
				} else if ok {
					if err := q.applyQuantization(m); err != nil {
						return err
					}
				}
			}
			if archs[0] == "Qwen3VLForConditionalGeneration" || hybridLinearArchs[textArch] {
				vision, ok, err := c.object("vision_config")
				if err != nil {
					return err
				}
				if !ok {
					return c.errf("vision_config", "missing")
				}
				if m.VisionParams, err = vision.qwen3VisionParams(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	archs, ok, err := c.strList("architectures")
	if err != nil {
		return err
	}
	if !ok || len(archs) == 0 {
		return c.errf("architectures", "missing or empty")
	}
	m.Architecture = archs[0]
	if m.ModelType, ok, err = c.str("model_type"); err != nil {
		return err
	} else if !ok || m.ModelType == "" {
		return c.errf("model_type", "missing")
	}

	if m.NumLayers, err = c.posInt("num_hidden_layers"); err != nil {
		return err
	}
	if m.HiddenSize, err = c.posInt("hidden_size"); err != nil {
		return err
	}
	if m.NumHeads, err = c.posInt("num_attention_heads"); err != nil {
		return err
	}
	if m.VocabSize, err = c.posInt("vocab_size"); err != nil {
		return err
	}
	if m.MaxPositions, err = c.posInt("max_position_embeddings"); err != nil {
		return err
	}
	switch m.Architecture {
	case "OPTForCausalLM": // ties its head itself
		if err := c.parseOPT(m); err != nil { // config_opt.go
			return err
		}
	case "Qwen3_5MoeForCausalLM", archDSV4:
		// Every Qwen3.5-MoE and DeepSeek-V4 layer routes to experts: no
		// dense size (DeepSeek-V4's config has no intermediate_size).
		if m.IntermediateSize, _, err = c.optPosInt("intermediate_size"); err != nil {
			return err
		}
		if m.TieEmbeddings, _, err = c.bool("tie_word_embeddings"); err != nil {
			return err
		}
	default:
		if m.IntermediateSize, err = c.posInt("intermediate_size"); err != nil {
			return err
		}
		if m.TieEmbeddings, _, err = c.bool("tie_word_embeddings"); err != nil {
			return err
		}
	}

	// Dtype: torch_dtype (transformers < 4.56) or dtype; absent means
	// float32 to transformers, which vLLM serves as bfloat16.
	m.Dtype, m.DtypeBytes = "bfloat16", 2
	for _, k := range []string{"torch_dtype", "dtype"} {
		s, ok, err := c.str(k)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		d, b, known := normDtype(s)
		if !known {
			return c.errf(k, "unsupported dtype %q (allowed: bfloat16, float16, float32)", s)
		}
		m.Dtype, m.DtypeBytes = d, b
		break
	}
	m.WeightDtype = m.Dtype
	m.WeightBytesPerParam = m.DtypeBytes
	m.AttnWeightBytesPerParam = m.DtypeBytes
	m.DenseWeightBytesPerParam = m.DtypeBytes
	m.AttnWeightDtype, m.DenseWeightDtype = m.Dtype, m.Dtype

	if err := c.parseAttention(m); err != nil {
		return err
	}
	if err := c.parseMoE(m); err != nil {
		return err
	}
	if err := c.parseLinearAttention(m); err != nil {
		return err
	}
	if err := c.parseSliding(m); err != nil {
		return err
	}
	if err := c.parseGraphKeys(m); err != nil {
		return err
	}
	if err := c.parseEngram(m); err != nil {
		return err
	}
	if m.IsHybridLinear() {
		if err := c.parsePartialRotary(m); err != nil {
			return err
		}
	}
	if m.Architecture == archDSV4 {
		if err := c.parseDSV4(m); err != nil {
			return err
		}
	}
	if m.Architecture == "Llama4ForCausalLM" {
		if err := c.parseLlama4(m); err != nil {
			return err
		}
	}
	if q, ok, err := c.object("quantization_config"); err != nil {
		return err
	} else if ok {
		if err := q.applyQuantization(m); err != nil {
			return err
		}
	}
	if m.Architecture == archDSV4 {
		return c.applyDSV4ExpertDtype(m)
	}
	return nil
}

func (c cfg) parseAttention(m *Model) error {
	kvLora, mla, err := c.int("kv_lora_rank")
	if err != nil {
		return err
	}
	if mla && kvLora > 0 {
		m.KVLoraRank = kvLora
		if m.QLoraRank, _, err = c.int("q_lora_rank"); err != nil { // null for V2-Lite
			return err
		}
		if m.QKRopeHeadDim, err = c.posInt("qk_rope_head_dim"); err != nil {
			return err
		}
		if m.QKNopeHeadDim, err = c.posInt("qk_nope_head_dim"); err != nil {
			return err
		}
		if m.VHeadDim, err = c.posInt("v_head_dim"); err != nil {
			return err
		}
		// DeepSeek sparse attention: vLLM's deepseek_v2.py builds the
		// indexer when the config sets index_topk.
		topk, dsa, err := c.optPosInt("index_topk")
		if err != nil {
			return err
		}
		if dsa {
			m.IndexTopK = topk
			if m.IndexHeads, err = c.posInt("index_n_heads"); err != nil {
				return err
			}
			if m.IndexHeadDim, err = c.posInt("index_head_dim"); err != nil {
				return err
			}
			if m.QLoraRank <= 0 {
				return c.errf("q_lora_rank", "missing: the DSA indexer projects its queries from the q_lora_rank latent")
			}
		}
		// The cache holds one latent vector per token shared by all heads.
		m.NumKVHeads = 1
		m.HeadDim = m.QKNopeHeadDim + m.QKRopeHeadDim
		return nil
	}
	kv, ok, err := c.int("num_key_value_heads")
	if err != nil {
		return err
	}
	if !ok {
		kv = m.NumHeads // MHA (Llama-2-7b style configs omit it)
	}
	if kv < 1 {
		return c.errf("num_key_value_heads", "is %d, want ≥ 1", kv)
	}
	if m.NumHeads%kv != 0 {
		return c.errf("num_key_value_heads", "%d does not divide num_attention_heads %d", kv, m.NumHeads)
	}
	m.NumKVHeads = kv
	hd, ok, err := c.optPosInt("head_dim")
	if err != nil {
		return err
	}
	if ok {
		m.HeadDim = hd
		return nil
	}
	if m.HiddenSize%m.NumHeads != 0 {
		return c.errf("head_dim", "missing, and hidden_size %d is not a multiple of num_attention_heads %d", m.HiddenSize, m.NumHeads)
	}
	m.HeadDim = m.HiddenSize / m.NumHeads
	return nil
}

func (c cfg) parseMoE(m *Model) error {
	experts, ekey, ok, err := c.firstInt("n_routed_experts", "num_local_experts", "num_experts")
	if err != nil {
		return err
	}
	if !ok || experts == 0 {
		return nil // dense
	}
	m.NumExperts = experts
	topk, tkey, ok, err := c.firstInt("num_experts_per_tok", "experts_per_token")
	if err != nil {
		return err
	}
	if !ok {
		return c.errf("num_experts_per_tok", "missing for a model with %s = %d", ekey, experts)
	}
	if topk < 1 || topk > experts {
		return c.errf(tkey, "is %d, want 1..%d (%s)", topk, experts, ekey)
	}
	m.ExpertsPerToken = topk
	// Per-expert size: moe_intermediate_size where the family has a dense
	// intermediate_size too (DeepSeek, Qwen-MoE); else intermediate_size is
	// the expert's (Mixtral, gpt-oss, MiniMax).
	if v, ok, err := c.optPosInt("moe_intermediate_size"); err != nil {
		return err
	} else if ok {
		m.MoEIntermediateSize = v
	} else {
		m.MoEIntermediateSize = m.IntermediateSize
	}

	// Shared experts.
	if n, ok, err := c.int("n_shared_experts"); err != nil {
		return err
	} else if ok && n > 0 {
		m.NumSharedExperts, m.SharedExpertIntermediateSize = n, m.MoEIntermediateSize
	}
	for _, k := range []string{"shared_expert_intermediate_size", "shared_intermediate_size"} {
		v, ok, err := c.int(k)
		if err != nil {
			return err
		}
		if ok && v > 0 {
			if m.NumSharedExperts > 0 {
				return c.errf(k, "given together with n_shared_experts")
			}
			m.NumSharedExperts, m.SharedExpertIntermediateSize = 1, v
		}
	}

	// Which layers are MoE.
	L := m.NumLayers
	fk, hasFK, err := c.int("first_k_dense_replace")
	if err != nil {
		return err
	}
	freq, hasFreq, err := c.int("moe_layer_freq")
	if err != nil {
		return err
	}
	step, hasStep, err := c.int("decoder_sparse_step")
	if err != nil {
		return err
	}
	stepKey := "decoder_sparse_step"
	if !hasStep { // Llama 4: layer i is MoE when (i+1) % interleave_moe_layer_step == 0
		stepKey = "interleave_moe_layer_step"
		if step, hasStep, err = c.int(stepKey); err != nil {
			return err
		}
	}
	switch {
	case hasFK || hasFreq: // DeepSeek-V2/V3 rule
		if !hasFreq {
			freq = 1
		}
		if freq < 1 {
			return c.errf("moe_layer_freq", "is %d, want ≥ 1", freq)
		}
		if fk > L {
			return c.errf("first_k_dense_replace", "%d exceeds num_hidden_layers %d", fk, L)
		}
		m.FirstDenseLayers, m.MoELayerFreq = fk, freq
		m.MoELayers = make([]bool, L)
		for i := fk; i < L; i++ {
			if i%freq == 0 {
				m.NumMoELayers++
				m.MoELayers[i] = true
			}
		}
	case hasStep: // Qwen2/3-MoE and Llama 4 rule
		if step < 1 {
			return c.errf(stepKey, "is %d, want ≥ 1", step)
		}
		only, _, err := c.intList("mlp_only_layers")
		if err != nil {
			return err
		}
		dense := make(map[int]bool, len(only))
		for _, i := range only {
			if i >= L {
				return c.errf("mlp_only_layers", "layer %d ≥ num_hidden_layers %d", i, L)
			}
			dense[i] = true
		}
		m.MoELayerFreq = step
		m.MoELayers = make([]bool, L)
		for i := 0; i < L; i++ {
			if !dense[i] && (i+1)%step == 0 {
				m.NumMoELayers++
				m.MoELayers[i] = true
			}
		}
	default: // Mixtral, gpt-oss, MiniMax: every layer
		m.MoELayerFreq = 1
		m.NumMoELayers = L
		m.MoELayers = make([]bool, L)
		for i := range m.MoELayers {
			m.MoELayers[i] = true
		}
	}
	if m.NumMoELayers == 0 {
		return c.errf(ekey, "is %d but no layer is a MoE layer", experts)
	}
	return nil
}

// parseLlama4 reads what Llama 4's decoder (vllm/model_executor/models/
// llama4.py) adds to the common keys: dense layers of intermediate_size_mlp
// between MoE layers (interleave_moe_layer_step, read by parseMoE), one
// shared expert of intermediate_size beside the routed ones, top-k then
// sigmoid routing, and RoPE layers that attend within chunks of
// attention_chunk_size tokens (no_rope_layers[i] = 1; when the list is
// absent or empty, transformers' Llama4TextConfig makes every 4th layer a
// global NoPE layer).
func (c cfg) parseLlama4(m *Model) error {
	if v, ok, err := c.optPosInt("intermediate_size_mlp"); err != nil {
		return err
	} else if ok {
		m.IntermediateSize = v
	}
	if m.IsMoE() {
		m.NumSharedExperts, m.SharedExpertIntermediateSize = 1, m.MoEIntermediateSize
		m.ScoringFunc = "sigmoid" // Llama4MoE.custom_routing_function: top-k, then sigmoid
	}
	rope, _, err := c.intList("no_rope_layers")
	if err != nil {
		return err
	}
	if len(rope) == 0 {
		rope = make([]int, m.NumLayers)
		for i := range rope {
			if (i+1)%4 != 0 {
				rope[i] = 1
			}
		}
	}
	if len(rope) != m.NumLayers {
		return c.errf("no_rope_layers", "has %d entries for num_hidden_layers %d", len(rope), m.NumLayers)
	}
	m.NoPELayers = make([]bool, m.NumLayers)
	for i, r := range rope {
		m.NoPELayers[i] = r == 0
	}
	chunk, ok, err := c.optPosInt("attention_chunk_size")
	if err != nil || !ok {
		return err
	}
	if m.SlidingWindowLayers > 0 {
		return c.errf("attention_chunk_size", "given together with sliding-window layers")
	}
	m.AttentionChunk, m.SlidingWindow = chunk, chunk
	m.SlidingLayers = make([]bool, m.NumLayers)
	for i := range rope {
		if !m.NoPELayers[i] {
			m.SlidingLayers[i] = true
			m.SlidingWindowLayers++
		}
	}
	return nil
}

func (c cfg) parseSliding(m *Model) error {
	win, hasWin, err := c.int("sliding_window")
	if err != nil {
		return err
	}
	types, hasTypes, err := c.strList("layer_types")
	if err != nil {
		return err
	}
	n := 0
	sliding := make([]bool, m.NumLayers)
	switch {
	case hasTypes:
		if len(types) != m.NumLayers {
			return c.errf("layer_types", "has %d entries for num_hidden_layers %d", len(types), m.NumLayers)
		}
		for i, t := range types {
			switch t {
			case "full_attention":
			case "linear_attention": // the Qwen3.5 families (parseLinearAttention)
				if !m.IsHybridLinear() {
					return c.errf("layer_types", "layer %d is %q: linear attention is modelled for %s only", i, t, "Qwen3.5 (Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM)")
				}
			case "sliding_attention":
				n++
				sliding[i] = true
			default:
				return c.errf("layer_types", "layer %d is %q: only full_attention and sliding_attention are modelled", i, t)
			}
		}
	case hasWin && win > 0:
		use, hasUse, err := c.bool("use_sliding_window")
		if err != nil {
			return err
		}
		switch {
		case hasUse && !use: // Qwen2/3: window given but switched off
		case hasUse: // Qwen2/3: layers from max_window_layers on slide
			mwl, ok, err := c.int("max_window_layers")
			if err != nil {
				return err
			}
			if !ok || mwl > m.NumLayers {
				return c.errf("max_window_layers", "want 0..%d with use_sliding_window true", m.NumLayers)
			}
			n = m.NumLayers - mwl
			for i := mwl; i < m.NumLayers; i++ {
				sliding[i] = true
			}
		default: // Mistral family: every layer
			n = m.NumLayers
			for i := range sliding {
				sliding[i] = true
			}
		}
	}
	if n > 0 {
		if !hasWin || win < 1 {
			return c.errf("sliding_window", "missing or 0 while %d layers use sliding attention", n)
		}
		m.SlidingWindow, m.SlidingWindowLayers = win, n
		m.SlidingLayers = sliding
	}
	return nil
}

// parseGraphKeys reads the keys only the operator graph needs: biases,
// q/k norms, the rotary width, the router's scoring and grouping, and the
// multi-token-prediction draft layers a checkpoint ships.
func (c cfg) parseGraphKeys(m *Model) error {
	var err error
	for _, k := range []string{"attention_bias", "bias"} { // vLLM llama.py reads either
		b, _, err := c.bool(k)
		if err != nil {
			return err
		}
		m.AttentionBias = m.AttentionBias || b
	}
	if b, ok, err := c.bool("mlp_bias"); err != nil {
		return err
	} else if ok {
		m.MLPBias = b
	}
	if m.QKNorm, _, err = c.bool("use_qk_norm"); err != nil {
		return err
	}
	if m.Architecture == "GraniteForCausalLM" {
		for _, f := range []struct {
			key string
			v   *float64
		}{
			{"embedding_multiplier", &m.EmbeddingMultiplier}, {"residual_multiplier", &m.ResidualMultiplier},
			{"attention_multiplier", &m.AttentionMultiplier}, {"logits_scaling", &m.LogitsScaling},
		} {
			if *f.v, err = c.optPosFloat(f.key, 1); err != nil {
				return err
			}
		}
	}
	m.RotaryDim = m.HeadDim
	if m.IsMLA() {
		m.RotaryDim = m.QKRopeHeadDim
	}
	if rd, ok, err := c.int("rotary_dim"); err != nil {
		return err
	} else if ok {
		if rd < 1 || rd > m.HeadDim {
			return c.errf("rotary_dim", "is %d, want 1..%d (head_dim)", rd, m.HeadDim)
		}
		m.RotaryDim = rd
	}
	if m.IsMoE() {
		m.ScoringFunc = "softmax"
		if s, ok, err := c.str("scoring_func"); err != nil {
			return err
		} else if ok {
			if s != "softmax" && s != "sigmoid" && !(s == "sqrtsoftplus" && m.Architecture == archDSV4) {
				return c.errf("scoring_func", "unsupported %q (supported: softmax, sigmoid; sqrtsoftplus for %s)", s, archDSV4)
			}
			m.ScoringFunc = s
		}
		g, _, err := c.int("n_group")
		if err != nil {
			return err
		}
		tg, _, err := c.int("topk_group")
		if err != nil {
			return err
		}
		if g > 1 {
			if tg < 1 || tg > g {
				return c.errf("topk_group", "is %d, want 1..%d (n_group)", tg, g)
			}
			if m.NumExperts%g != 0 {
				return c.errf("n_group", "%d does not divide the %d experts", g, m.NumExperts)
			}
			m.NumExpertGroups, m.TopKGroups = g, tg
		}
		method, _, err := c.str("topk_method")
		if err != nil {
			return err
		}
		bias, _, err := c.bool("use_routing_bias")
		if err != nil {
			return err
		}
		m.RoutingBias = method == "noaux_tc" || bias
	}
	if m.NumNextNLayers, _, err = c.int("num_nextn_predict_layers"); err != nil {
		return err
	}
	if use, _, err := c.bool("use_mtp"); err != nil {
		return err
	} else if use {
		if m.NumMTPModules, _, err = c.int("num_mtp_modules"); err != nil {
			return err
		}
	}
	return nil
}

// Bytes per parameter of the quantized formats, scales included.
const (
	bytesFP8        = 1.0
	bytesMXFP4      = 0.5 + 1.0/32 // 4-bit E2M1 + one E8M0 scale per 32 (OCP MX spec)
	bytesNVFP4      = 0.5 + 1.0/16 // 4-bit E2M1 + one FP8 E4M3 scale per 16
	bytesBlockScale = 4.0          // one float32 scale per weight block
	bytesGroupScale = 2.0          // one fp16/bf16 scale per group (AWQ, GPTQ, compressed-tensors pack-quantized)
)

// notModelled are quantization methods vLLM serves that BLIS has no kernel
// law for: their kernels dequantize on the fly with costs unlike any fitted
// GEMM, so pricing them would be a guess.
var notModelled = []string{"bitsandbytes", "gguf", "hqq", "aqlm", "exl2", "eetq", "deepspeedfp", "experts_int8", "fbgemm_fp8", "torchao", "quark", "petit_nvfp4", "auto-round", "inc", "rtn"}

// supportedQuant lists the quant_method values the catalog models.
const supportedQuant = "fp8, mxfp4, compressed-tensors, modelopt, awq, gptq"

func (q cfg) applyQuantization(m *Model) error {
	method, hasMethod, err := q.str("quant_method")
	if err != nil {
		return err
	}
	// ModelOpt writes its hf_quant_config fields into config.json, some
	// exports without a quant_method; quant_algo then identifies it. Under
	// another quant_method the ModelOpt fields do not decide: vLLM's
	// ModelOpt configs claim a checkpoint only when quant_method starts
	// with "modelopt" (vllm/model_executor/layers/quantization/modelopt.py
	// _extract_modelopt_quant_algo), so NVIDIA's DeepSeek-V4-Flash-NVFP4,
	// whose config.json carries them under quant_method fp8, is served by
	// the fp8 method's DeepSeek-V4 override (applyDSV4ExpertDtype).
	if _, algo := q.get("quant_algo"); algo && !hasMethod {
		return q.applyModelOpt(m, "ignore", "exclude_modules")
	}
	if !hasMethod {
		return q.errf("quant_method", "missing (supported: %s)", supportedQuant)
	}
	method = strings.ToLower(method)
	switch method {
	case "fp8":
		bpp := bytesFP8
		if blk, ok, err := q.intList("weight_block_size"); err != nil {
			return err
		} else if ok {
			if len(blk) != 2 || blk[0] < 1 || blk[1] < 1 {
				return q.errf("weight_block_size", "want two positive integers, got %v", blk)
			}
			bpp += bytesBlockScale / float64(blk[0]*blk[1])
			m.WeightBlock = blk[0]
		}
		excl, err := q.exclusions("modules_to_not_convert", "ignored_layers")
		if err != nil {
			return err
		}
		m.setQuant("fp8", "fp8", bpp, excl)
		m.ActDtype = "fp8"
		m.QuantScheme = "W8A8 fp8 per-tensor"
		if m.WeightBlock > 0 {
			m.QuantScheme = fmt.Sprintf("W8A8 fp8 %d×%d blocks", m.WeightBlock, m.WeightBlock)
		}
	case "mxfp4":
		// vLLM's Mxfp4Config quantizes only the fused MoE experts
		// (vllm/model_executor/layers/quantization/mxfp4.py); every other
		// linear layer stays in the model dtype.
		if m.NumExperts == 0 {
			return q.errf("quant_method", "mxfp4 is applied to MoE experts only, and this model has none")
		}
		m.setQuant("mxfp4", "mxfp4", bytesMXFP4, exclusions{attn: true, dense: true})
		m.WeightGroup, m.QuantScheme = 32, "W4A16 mxfp4 experts g32"
	case "compressed-tensors":
		return q.applyCompressedTensors(m)
	case "modelopt":
		return q.applyModelOpt(m, "exclude_modules", "ignore")
	case "awq":
		return q.applyAWQ(m)
	case "gptq":
		return q.applyGPTQ(m)
	default:
		if slices.Contains(notModelled, method) {
			return q.errf("quant_method", "%q is not modelled: BLIS has no kernel law for vLLM's %s kernels (supported: %s)", method, method, supportedQuant)
		}
		return q.errf("quant_method", "unsupported %q (supported: %s)", method, supportedQuant)
	}
	return nil
}

// groupSize reads a group_size where -1 (or absent) means one scale per
// output channel, returned as 0.
func (q cfg) groupSize(key string) (int, error) {
	raw, ok := q.get(key)
	if !ok {
		return 0, nil
	}
	if n, isNum := raw.(json.Number); isNum && n.String() == "-1" {
		return 0, nil
	}
	g, err := q.asInt(key, raw)
	if err != nil {
		return 0, err
	}
	if g == 0 {
		return 0, q.errf(key, "is 0, want a positive group size or -1 for per-channel scales")
	}
	return g, nil
}

// intWeightBytes is the bytes per parameter of a bits-wide integer weight
// with one 16-bit scale per group, plus a bits-wide zero point per group
// when the scheme is asymmetric. Per-channel scales (group 0) are one per
// output row and left out.
func intWeightBytes(bits, group int, zeros bool) float64 {
	bpp := float64(bits) / 8
	if group > 0 {
		bpp += bytesGroupScale / float64(group)
		if zeros {
			bpp += float64(bits) / 8 / float64(group)
		}
	}
	return bpp
}

func groupWord(g int) string {
	if g == 0 {
		return "per-channel"
	}
	return fmt.Sprintf("g%d", g)
}

// applyAWQ reads an AutoAWQ quantization_config. vLLM serves it with
// awq_marlin on SM80+ (vllm/model_executor/layers/quantization/awq_marlin.py
// AWQMarlinConfig.override_quantization_method); AWQ is 4-bit, asymmetric by
// default (zero_point), with packed 4-bit zeros and fp16 scales per group.
func (q cfg) applyAWQ(m *Model) error {
	bits, ok, err := q.int("bits")
	if err != nil {
		return err
	}
	if !ok {
		if bits, ok, err = q.int("w_bit"); err != nil {
			return err
		}
	}
	if ok && bits != 4 {
		return q.errf("bits", "%d-bit AWQ is not supported (vLLM's AWQ kernels take 4-bit weights)", bits)
	}
	g, err := q.groupSize("group_size")
	if err != nil {
		return err
	}
	if _, has := q.get("group_size"); !has {
		if g, err = q.groupSize("q_group_size"); err != nil {
			return err
		}
	}
	zp, hasZP, err := q.bool("zero_point")
	if err != nil {
		return err
	}
	if !hasZP {
		zp = true // AutoAWQ's default GEMM version
	}
	excl, err := q.exclusions("modules_to_not_convert")
	if err != nil {
		return err
	}
	m.setQuant("awq", "int4", intWeightBytes(4, g, zp), excl)
	m.WeightGroup = g
	m.QuantScheme = fmt.Sprintf("W4A16 int4 %s (AWQ%s)", groupWord(g), map[bool]string{true: ", zero points", false: ""}[zp])
	return nil
}

// applyGPTQ reads a GPTQ quantization_config (AutoGPTQ / GPTQModel / optimum).
// vLLM serves 4- and 8-bit GPTQ with gptq_marlin on SM80+
// (vllm/model_executor/layers/quantization/gptq_marlin.py); symmetric
// checkpoints drop their zero points when repacked for Marlin.
func (q cfg) applyGPTQ(m *Model) error {
	bits, ok, err := q.int("bits")
	if err != nil {
		return err
	}
	if !ok {
		return q.errf("bits", "missing (GPTQ: 4 or 8)")
	}
	if bits != 4 && bits != 8 {
		return q.errf("bits", "%d-bit GPTQ is not modelled (vLLM's Marlin kernels take 4 or 8 bits)", bits)
	}
	g, err := q.groupSize("group_size")
	if err != nil {
		return err
	}
	sym, hasSym, err := q.bool("sym")
	if err != nil {
		return err
	}
	if !hasSym {
		sym = true
	}
	desc, _, err := q.bool("desc_act")
	if err != nil {
		return err
	}
	excl, err := q.exclusions("modules_to_not_convert")
	if err != nil {
		return err
	}
	dt := "int4"
	if bits == 8 {
		dt = "int8"
	}
	m.setQuant("gptq", dt, intWeightBytes(bits, g, !sym), excl)
	m.WeightGroup, m.ActOrder = g, desc
	extra := ""
	if desc {
		extra += ", act-order"
	}
	if !sym {
		extra += ", zero points"
	}
	m.QuantScheme = fmt.Sprintf("W%dA16 %s %s (GPTQ%s)", bits, dt, groupWord(g), extra)
	return nil
}

// applyModelOpt reads ModelOpt's quantization block (hf_quant_config.json's
// "quantization", or the same keys in config.json). vLLM mirrors:
// vllm/model_executor/layers/quantization/modelopt.py ModelOptFp8Config,
// ModelOptNvFp4Config and ModelOptMixedPrecisionConfig (quant_algo
// MIXED_PRECISION: per-module-prefix quant_algo in quantized_layers).
func (q cfg) applyModelOpt(m *Model, excludeKeys ...string) error {
	algo, ok, err := q.str("quant_algo")
	if err != nil {
		return err
	}
	if !ok {
		return q.errf("quant_algo", "missing")
	}
	excl, err := q.exclusions(excludeKeys...)
	if err != nil {
		return err
	}
	switch strings.ToUpper(algo) {
	case "FP8", "FP8_PER_CHANNEL_PER_TOKEN":
		// ModelOptFp8Config.get_min_capability is 89: vLLM refuses it on
		// Ampere, unlike its own fp8 method (Marlin there).
		m.setQuant("modelopt", "fp8", bytesFP8, excl)
		m.ActDtype, m.QuantMinCapability = "fp8", 89
		m.QuantScheme = "W8A8 fp8 per-tensor (ModelOpt)"
		if strings.ToUpper(algo) != "FP8" {
			m.QuantScheme = "W8A8 fp8 per-channel (ModelOpt)"
		}
	case "FP8_PB_WO":
		// ModelOptFp8PbWoLinearMethod: 128×128 fp32 block scales, run as
		// vLLM's block-fp8 GEMM with dynamic per-token-group activations.
		m.setQuant("modelopt", "fp8", bytesFP8+bytesBlockScale/(128*128), excl)
		m.ActDtype, m.WeightBlock, m.QuantMinCapability = "fp8", 128, 89
		m.QuantScheme = "W8A8 fp8 128×128 blocks (ModelOpt FP8_PB_WO)"
	case "NVFP4":
		m.setQuant("modelopt", "nvfp4", bytesNVFP4, excl)
		m.ActDtype, m.WeightGroup, m.QuantScheme = "nvfp4", 16, "W4A4 nvfp4 g16 (ModelOpt)"
	case "W4A16_NVFP4":
		m.setQuant("modelopt", "nvfp4", bytesNVFP4, excl)
		m.WeightGroup, m.QuantScheme = 16, "W4A16 nvfp4 g16 (ModelOpt)"
	case "MIXED_PRECISION":
		return q.applyModelOptMixed(m, excl)
	default:
		return q.errf("quant_algo", "unsupported %q (supported: FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4, W4A16_NVFP4, MIXED_PRECISION)", algo)
	}
	return nil
}

// modelOptAlgo is one quant_algo of a MIXED_PRECISION checkpoint.
type modelOptAlgo struct {
	dtype, act string
	bpp        float64
	group      int
}

func modelOptAlgoOf(algo string) (modelOptAlgo, bool) {
	switch strings.ToUpper(algo) {
	case "FP8":
		return modelOptAlgo{"fp8", "fp8", bytesFP8, 0}, true
	case "NVFP4":
		return modelOptAlgo{"nvfp4", "nvfp4", bytesNVFP4, 16}, true
	case "W4A16_NVFP4":
		return modelOptAlgo{"nvfp4", "", bytesNVFP4, 16}, true
	}
	return modelOptAlgo{}, false
}

// applyModelOptMixed resolves quantized_layers into the three weight
// classes the kernel prices: routed experts (prefixes naming "experts" but
// not shared experts), attention, and dense MLP / shared experts. A class no
// prefix names stays in the model dtype, as vLLM leaves a layer whose prefix
// quantized_layers lacks unquantized.
func (q cfg) applyModelOptMixed(m *Model, excl exclusions) error {
	layers, ok, err := q.object("quantized_layers")
	if err != nil {
		return err
	}
	if !ok || len(layers.m) == 0 {
		return q.errf("quantized_layers", "missing or empty: MIXED_PRECISION names each quantized module prefix's quant_algo")
	}
	var experts, attn, dense *modelOptAlgo
	assign := func(slot **modelOptAlgo, a modelOptAlgo, prefix string) error {
		if *slot != nil && (**slot != a) {
			return layers.errf(prefix, "quant_algo differs from other modules of its class (%s vs %s): one format per class is modelled", a.dtype, (*slot).dtype)
		}
		*slot = &a
		return nil
	}
	for _, prefix := range slices.Sorted(maps.Keys(layers.m)) {
		l, _, err := layers.object(prefix)
		if err != nil {
			return err
		}
		name, ok, err := l.str("quant_algo")
		if err != nil {
			return err
		}
		if !ok {
			return l.errf("quant_algo", "missing")
		}
		a, known := modelOptAlgoOf(name)
		if !known {
			return l.errf("quant_algo", "unsupported %q (supported: FP8, NVFP4, W4A16_NVFP4)", name)
		}
		if g, ok, err := l.optPosInt("group_size"); err != nil {
			return err
		} else if ok && a.group > 0 && g != a.group {
			return l.errf("group_size", "%d for %s: vLLM's kernels take group size %d", g, name, a.group)
		}
		base := strings.TrimRight(prefix, ".*")
		switch {
		case base == "lm_head" || hasAnySuffix(base, ".lm_head", "embed_tokens"):
			// The LM head and embeddings are priced in the model dtype.
		case strings.Contains(base, "shared_expert"):
			err = assign(&dense, a, prefix)
		case strings.Contains(base, "experts"):
			err = assign(&experts, a, prefix)
		case strings.Contains(base, "attn") || hasAnySuffix(base, "q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "wq_a", "wq_b", "wkv_a", "wkv_b", "wo"):
			err = assign(&attn, a, prefix)
		default:
			err = assign(&dense, a, prefix)
		}
		if err != nil {
			return err
		}
	}
	// The routed experts (or, in a dense model, the MLPs) set the model's
	// weight format; the other classes keep their own bytes.
	main := experts
	if main == nil {
		main = dense
	}
	if main == nil {
		main = attn
	}
	if main == nil {
		return q.errf("quantized_layers", "quantizes none of the attention, MLP or expert modules (only the LM head or embeddings, which are priced in %s)", m.Dtype)
	}
	m.setQuant("modelopt", main.dtype, main.bpp, excl)
	m.ActDtype, m.WeightGroup = main.act, main.group
	m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam = m.DtypeBytes, m.DtypeBytes
	m.AttnWeightDtype, m.DenseWeightDtype = m.Dtype, m.Dtype
	if attn != nil && !excl.attn {
		m.AttnWeightBytesPerParam, m.AttnWeightDtype = attn.bpp, attn.dtype
	}
	if dense != nil && !excl.dense && !excl.shared {
		m.DenseWeightBytesPerParam, m.DenseWeightDtype = dense.bpp, dense.dtype
	}
	if m.NumExperts > 0 && experts == nil || m.NumExperts == 0 && dense == nil {
		// The routed experts (a dense model's MLPs) are unlisted: unquantized.
		m.WeightBytesPerParam = m.DtypeBytes
	}
	m.QuantScheme = fmt.Sprintf("mixed (ModelOpt): %s", mixedWord(experts, attn, dense))
	return nil
}

func mixedWord(experts, attn, dense *modelOptAlgo) string {
	var parts []string
	for _, c := range []struct {
		name string
		a    *modelOptAlgo
	}{{"experts", experts}, {"attention", attn}, {"dense/shared", dense}} {
		w := "unquantized"
		if c.a != nil {
			w = c.a.dtype
			if c.a.act == "" {
				w += " weight-only"
			}
		}
		parts = append(parts, c.name+" "+w)
	}
	return strings.Join(parts, ", ")
}

// applyCompressedTensors reads llm-compressor's config_groups. vLLM's
// schemes (vllm/model_executor/layers/quantization/compressed_tensors/
// compressed_tensors.py _get_scheme_from_parts): W8A8 fp8, W8A16 fp8,
// W4A4 nvfp4, W4A16 nvfp4, W4A16/W8A16 int (CompressedTensorsWNA16), W8A8 int8.
func (q cfg) applyCompressedTensors(m *Model) error {
	groups, ok, err := q.object("config_groups")
	if err != nil {
		return err
	}
	if !ok || len(groups.m) == 0 {
		return q.errf("config_groups", "missing or empty")
	}
	if len(groups.m) > 1 {
		return q.errf("config_groups", "%d groups: only single-scheme checkpoints are modelled", len(groups.m))
	}
	var gname string
	for k := range groups.m {
		gname = k
	}
	g, _, err := groups.object(gname)
	if err != nil {
		return err
	}
	w, ok, err := g.object("weights")
	if err != nil {
		return err
	}
	if !ok {
		return g.errf("weights", "missing")
	}
	bits, err := w.posInt("num_bits")
	if err != nil {
		return err
	}
	typ, _, err := w.str("type")
	if err != nil {
		return err
	}
	group, err := w.groupSize("group_size")
	if err != nil {
		return err
	}
	strategy, _, err := w.str("strategy")
	if err != nil {
		return err
	}
	sym, hasSym, err := w.bool("symmetric")
	if err != nil {
		return err
	}
	if !hasSym {
		sym = true
	}
	actBits, actType := 0, ""
	if a, ok, err := g.object("input_activations"); err != nil {
		return err
	} else if ok {
		if actBits, err = a.posInt("num_bits"); err != nil {
			return err
		}
		if actType, _, err = a.str("type"); err != nil {
			return err
		}
	}
	excl, err := q.exclusions("ignore")
	if err != nil {
		return err
	}
	ct := func(dtype, act string, bpp float64, scheme string) {
		m.setQuant("compressed-tensors", dtype, bpp, excl)
		m.ActDtype, m.QuantScheme = act, scheme+" (compressed-tensors)"
	}
	switch {
	case bits == 8 && typ == "float" && (actBits == 8 || actBits == 0):
		bpp, act, scheme := bytesFP8, "fp8", "W8A8 fp8"
		if actBits == 0 {
			act, scheme = "", "W8A16 fp8"
		}
		if strategy == "block" {
			blk, ok, err := w.intList("block_structure")
			if err != nil {
				return err
			}
			if !ok || len(blk) != 2 || blk[0] < 1 || blk[1] < 1 {
				return w.errf("block_structure", "want two positive integers for strategy block, got %v", blk)
			}
			bpp += bytesBlockScale / float64(blk[0]*blk[1])
			m.WeightBlock = blk[0]
			scheme += fmt.Sprintf(" %d×%d blocks", blk[0], blk[1])
		} else if strategy != "" {
			scheme += " per-" + strategy
		}
		ct("fp8", act, bpp, scheme)
	case bits == 4 && typ == "float" && group == 32 && actBits == 0:
		// MXFP4 weights (E8M0 scale per 32): CompressedTensorsW4A16Mxfp4,
		// Marlin on every chip.
		ct("mxfp4", "", bytesMXFP4, "W4A16 mxfp4 g32")
		m.WeightGroup = 32
	case bits == 4 && typ == "float" && (actBits == 4 || actBits == 0):
		if group != 16 && group != 0 {
			return w.errf("group_size", "%d for 4-bit float weights: NVFP4 groups 16 weights, MXFP4 32 (weight-only)", group)
		}
		act, scheme := "nvfp4", "W4A4 nvfp4 g16"
		if actBits == 0 {
			act, scheme = "", "W4A16 nvfp4 g16"
		}
		ct("nvfp4", act, bytesNVFP4, scheme)
		m.WeightGroup = 16
	case (bits == 4 || bits == 8) && typ == "int" && actBits == 0:
		dt := "int4"
		if bits == 8 {
			dt = "int8"
		}
		zp := ""
		if !sym {
			zp = ", zero points"
		}
		// actorder: "group" or "weight" (llm-compressor), true in older
		// exports; null or absent when the weights keep their order.
		actOrder := false
		if v, ok := w.get("actorder"); ok {
			switch x := v.(type) {
			case bool:
				actOrder = x
			case string:
				actOrder = x != "" && x != "static"
			default:
				return w.errf("actorder", "is %s, want \"group\", \"weight\", \"static\" or null", jsonKind(v))
			}
		}
		if actOrder {
			zp += ", act-order"
		}
		ct(dt, "", intWeightBytes(bits, group, !sym), fmt.Sprintf("W%dA16 %s %s%s", bits, dt, groupWord(group), zp))
		m.WeightGroup, m.ActOrder = group, actOrder
	case bits == 8 && typ == "int" && actBits == 8 && actType == "int":
		ct("int8", "int8", intWeightBytes(8, group, !sym), "W8A8 int8")
	default:
		act := "weight-only"
		if actBits > 0 {
			act = fmt.Sprintf("%d-bit %q activations", actBits, actType)
		}
		return w.errf("num_bits", "unsupported %d-bit %q weights with %s (supported: W8A8/W8A16 fp8, W4A4/W4A16 nvfp4, W4A16/W8A16 int, W8A8 int8)", bits, typ, act)
	}
	return nil
}

// exclusions says which module classes a quantization config leaves in the
// model dtype.
type exclusions struct{ attn, dense, shared bool }

func (q cfg) exclusions(keys ...string) (exclusions, error) {
	var e exclusions
	for _, k := range keys {
		pats, _, err := q.strList(k)
		if err != nil {
			return e, err
		}
		for _, p := range pats {
			p = strings.TrimPrefix(p, "re:")
			base := strings.TrimRight(p, ".*")
			switch {
			case strings.HasSuffix(base, "self_attn"), strings.HasSuffix(base, ".attn"):
				e.attn = true
			case strings.Contains(base, "self_attn.") && hasAnySuffix(base, ".q_proj", ".k_proj", ".v_proj", ".o_proj", ".qkv_proj"):
				// compressed-tensors lists the projections one by one
				// (RedHat's Llama 4 FP8: every layer's q/k/v/o_proj).
				e.attn = true
			case strings.HasSuffix(base, "shared_experts"):
				e.shared = true
			case strings.Contains(p, `mlp\.(gate|up`), strings.HasSuffix(base, "mlp.gate_up_proj"):
				e.dense = true
			}
		}
	}
	return e, nil
}

func (m *Model) setQuant(method, dtype string, bpp float64, e exclusions) {
	m.QuantMethod, m.WeightDtype, m.WeightBytesPerParam = method, dtype, bpp
	m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam = bpp, bpp
	m.AttnWeightDtype, m.DenseWeightDtype = dtype, dtype
	if e.attn {
		m.AttnWeightBytesPerParam, m.AttnWeightDtype = m.DtypeBytes, m.Dtype
	}
	if e.dense || e.shared {
		m.DenseWeightBytesPerParam, m.DenseWeightDtype = m.DtypeBytes, m.Dtype
	}
}

func hasAnySuffix(s string, suffixes ...string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}
