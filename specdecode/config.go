package specdecode

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// Config is vLLM's --speculative-config: the user-settable fields of
// SpeculativeConfig (vllm/config/speculative.py on vLLM main, commit
// 002e77c1), with the same JSON names. Pointer fields are vLLM's
// Optional ones (nil: unset). The fields vLLM fills itself
// (target_model_config, draft_model_config, …) are refused, as are keys
// vLLM does not have.
type Config struct {
	EnforceEager              *bool    `json:"enforce_eager,omitempty"`
	NumSpeculativeTokens      *int     `json:"num_speculative_tokens,omitempty"`
	Model                     *string  `json:"model,omitempty"`
	Method                    *string  `json:"method,omitempty"`
	DraftTensorParallelSize   *int     `json:"draft_tensor_parallel_size,omitempty"`
	TensorParallelSize        *int     `json:"tensor_parallel_size,omitempty"`
	Quantization              *string  `json:"quantization,omitempty"`
	MoEBackend                *string  `json:"moe_backend,omitempty"`
	AttentionBackend          *string  `json:"attention_backend,omitempty"`
	KVCacheDtype              *string  `json:"kv_cache_dtype,omitempty"`
	MaxModelLen               *int     `json:"max_model_len,omitempty"`
	Revision                  *string  `json:"revision,omitempty"`
	CodeRevision              *string  `json:"code_revision,omitempty"`
	IndexShareForMTPIteration *bool    `json:"index_share_for_mtp_iteration,omitempty"`
	DisablePaddedDrafterBatch bool     `json:"disable_padded_drafter_batch,omitempty"`
	DisableEagleBlockDrop     bool     `json:"disable_eagle_block_drop,omitempty"`
	UseLocalArgmaxReduction   bool     `json:"use_local_argmax_reduction,omitempty"`
	UseHeterogeneousVocab     bool     `json:"use_heterogeneous_vocab,omitempty"`
	PromptLookupMax           *int     `json:"prompt_lookup_max,omitempty"`
	PromptLookupMin           *int     `json:"prompt_lookup_min,omitempty"`
	ParallelDrafting          bool     `json:"parallel_drafting,omitempty"`
	NumSpecTokensPerBatchSize [][3]int `json:"num_speculative_tokens_per_batch_size,omitempty"`
	// Suffix decoding (Arctic Inference), with vLLM's defaults.
	SuffixDecodingMaxTreeDepth      int     `json:"suffix_decoding_max_tree_depth"`
	SuffixDecodingMaxCachedRequests int     `json:"suffix_decoding_max_cached_requests"`
	SuffixDecodingMaxSpecFactor     float64 `json:"suffix_decoding_max_spec_factor"`
	SuffixDecodingMinTokenProb      float64 `json:"suffix_decoding_min_token_prob"`
	// DraftLoadConfig is vLLM's LoadConfig for the draft, kept verbatim.
	DraftLoadConfig            json.RawMessage `json:"draft_load_config,omitempty"`
	RejectionSampleMethod      string          `json:"rejection_sample_method"`
	SyntheticAcceptanceRates   []float64       `json:"synthetic_acceptance_rates,omitempty"`
	SyntheticAcceptanceLength  *float64        `json:"synthetic_acceptance_length,omitempty"`
	EnableAdaptiveVerification bool            `json:"enable_adaptive_verification,omitempty"`
	DraftSampleMethod          string          `json:"draft_sample_method"`
	DSparkDraftTopK            *int            `json:"dspark_draft_topk,omitempty"`
	// Fields of vLLM v0.11's SpeculativeConfig that later versions
	// dropped; accepted so a v0.11 config still parses. BLIS ignores them.
	DisableByBatchSize   *int    `json:"disable_by_batch_size,omitempty"`
	DisableLogprobs      *bool   `json:"disable_logprobs,omitempty"`
	SpeculativeTokenTree *string `json:"speculative_token_tree,omitempty"`
}

// Methods are the proposers BLIS simulates, by vLLM's method name after
// its aliasing.
func Methods() []string {
	return []string{"mtp", "eagle", "eagle3", "ngram", "draft_model", "suffix", "dspark"}
}

// mtpAliases are vLLM's MTPModelTypes: each is accepted as method and
// replaced by "mtp", as SpeculativeConfig.__post_init__ does.
var mtpAliases = []string{
	"deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp", "glm4_moe_lite_mtp",
	"glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp", "exaone4_5_mtp", "qwen3_next_mtp",
	"qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp", "bailing_hybrid_v3_mtp", "minimax_m3_mtp",
	"bailing_hybrid_mtp", "kimi_k3_mtp", "pangu_ultra_moe_mtp", "step3p5_mtp", "hy_v3_mtp", "hy_v4_mtp",
	"gemma4_mtp", "inkling_mtp", "glm5_next_mtp",
}

// vllmOnly are methods vLLM accepts that BLIS does not simulate.
var vllmOnly = []string{"medusa", "mlp_speculator", "custom_class", "extract_hidden_states", "ngram_gpu", "dflash"}

// LookaheadSlots reports whether vLLM's scheduler allocates KV slots for
// num_speculative_tokens lookahead tokens with method: its
// num_lookahead_tokens is k when speculative_config.use_eagle() (eagle,
// eagle3, mtp, dspark: vllm/config/speculative.py@002e77c1) or
// uses_draft_model(), else 0 (ngram, suffix), in
// vllm/v1/core/sched/scheduler.py Scheduler.__init__.
func LookaheadSlots(method string) bool {
	switch method {
	case "eagle", "eagle3", "mtp", "draft_model", "dspark":
		return true
	}
	return false
}

// ParseConfig decodes a --speculative-config JSON object strictly (an
// unknown key is an error), applies vLLM's defaults and method inference
// (no method: "ngram" when model is "ngram", eagle/eagle3/dflash/dspark
// when the draft model's name says so, else draft_model; MTP model types
// alias to mtp; "[ngram]" to ngram), and checks what vLLM checks without
// loading models.
//
// DSpark (method "dspark", vllm/config/speculative.py@002e77c1): its draft
// is the DSpark stages the target's checkpoint ships (model unset means
// the target). dspark_draft_topk is only for Qwen3 DSpark checkpoints,
// which BLIS does not hold, so it is refused as vLLM refuses it on a
// DeepSeek target; enable_adaptive_verification (confidence-sized
// verification budgets) is not simulated and refused when true.
// rejection_sample_method "block" (block verification) is accepted and
// modelled as the standard per-position acceptance schedule.
// num_speculative_tokens is required (vLLM could read an MTP head's
// n_predict from the checkpoint; BLIS has none) except for suffix
// decoding, where it defaults to suffix_decoding_max_tree_depth.
func ParseConfig(s string) (Config, error) {
	c := Config{
		SuffixDecodingMaxTreeDepth: 24, SuffixDecodingMaxCachedRequests: 10000,
		SuffixDecodingMaxSpecFactor: 1.0, SuffixDecodingMinTokenProb: 0.1,
		RejectionSampleMethod: "standard", DraftSampleMethod: "greedy",
	}
	fail := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("--speculative-config: "+format, args...)
	}
	if t := strings.TrimSpace(s); t == "" || t[0] != '{' {
		return fail("want a JSON object such as {\"method\": \"eagle3\", \"model\": \"…\", \"num_speculative_tokens\": 3}, got %q", s)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return fail("unknown key %s; vLLM's SpeculativeConfig has: %s", strings.TrimPrefix(err.Error(), "json: unknown field "), strings.Join(configKeys(), ", "))
		}
		return fail("%v (want a JSON object such as {\"method\": \"eagle3\", \"model\": \"…\", \"num_speculative_tokens\": 3})", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fail("trailing data after the JSON object")
	}

	// Method inference and aliasing (SpeculativeConfig.__post_init__).
	method := ""
	if c.Method != nil {
		method = *c.Method
	}
	model := ""
	if c.Model != nil {
		model = *c.Model
	}
	if c.Method == nil {
		switch m := strings.ToLower(model); {
		case model == "ngram" || model == "[ngram]":
			method = "ngram"
		case strings.Contains(m, "eagle-"):
			method = "eagle"
		case strings.Contains(m, "eagle3"):
			method = "eagle3"
		case strings.Contains(m, "dflash"):
			method = "dflash"
		case strings.Contains(m, "dspark"):
			method = "dspark"
		default:
			method = "draft_model"
		}
	}
	if slices.Contains(mtpAliases, method) {
		method = "mtp"
	}
	if method == "[ngram]" {
		method = "ngram"
	}
	switch {
	case slices.Contains(Methods(), method):
	case slices.Contains(vllmOnly, method):
		return fail("method %q: vLLM has it but BLIS does not simulate it; use one of %s (or an MTP alias such as deepseek_mtp, qwen3_next_mtp)",
			method, strings.Join(Methods(), ", "))
	default:
		return fail("unknown method %q; use one of %s, or one of vLLM's MTP aliases (%s), which mean mtp",
			method, strings.Join(Methods(), ", "), strings.Join(mtpAliases, ", "))
	}
	c.Method = &method

	if c.NumSpeculativeTokens == nil && method == "suffix" {
		n := c.SuffixDecodingMaxTreeDepth
		c.NumSpeculativeTokens = &n
	}
	if c.NumSpeculativeTokens == nil {
		return fail("num_speculative_tokens is required (a positive integer)")
	}
	if *c.NumSpeculativeTokens < 1 {
		return fail("num_speculative_tokens %d: must be > 0", *c.NumSpeculativeTokens)
	}
	if model == "" && (method == "draft_model" || method == "eagle" || method == "eagle3") {
		return fail("method %q needs model (the draft model or EAGLE head)", method)
	}
	if c.DraftTensorParallelSize != nil && *c.DraftTensorParallelSize < 1 {
		return fail("draft_tensor_parallel_size %d: must be ≥ 1", *c.DraftTensorParallelSize)
	}
	if c.TensorParallelSize != nil {
		return fail("tensor_parallel_size is not a speculative-config key; use draft_tensor_parallel_size")
	}
	if c.MaxModelLen != nil && *c.MaxModelLen < 1 {
		return fail("max_model_len %d: must be ≥ 1", *c.MaxModelLen)
	}
	if method == "ngram" {
		// vLLM's defaults: both 5 when neither is set, else the missing one
		// copies the other.
		switch {
		case c.PromptLookupMin == nil && c.PromptLookupMax == nil:
			lo, hi := 5, 5
			c.PromptLookupMin, c.PromptLookupMax = &lo, &hi
		case c.PromptLookupMin == nil:
			v := *c.PromptLookupMax
			c.PromptLookupMin = &v
		case c.PromptLookupMax == nil:
			v := *c.PromptLookupMin
			c.PromptLookupMax = &v
		}
		if *c.PromptLookupMin < 1 || *c.PromptLookupMax < 1 {
			return fail("prompt_lookup_min %d / prompt_lookup_max %d: must be ≥ 1", *c.PromptLookupMin, *c.PromptLookupMax)
		}
		if *c.PromptLookupMin > *c.PromptLookupMax {
			return fail("prompt_lookup_min=%d must be <= prompt_lookup_max=%d", *c.PromptLookupMin, *c.PromptLookupMax)
		}
	}
	if method == "suffix" && c.SuffixDecodingMaxTreeDepth < 1 {
		return fail("suffix_decoding_max_tree_depth=%d must be >= 1", c.SuffixDecodingMaxTreeDepth)
	}
	switch c.RejectionSampleMethod {
	case "standard", "synthetic", "block":
	default:
		return fail("rejection_sample_method %q: use standard, synthetic or block", c.RejectionSampleMethod)
	}
	switch c.DraftSampleMethod {
	case "greedy", "probabilistic":
	default:
		return fail("draft_sample_method %q: use greedy or probabilistic", c.DraftSampleMethod)
	}
	k := *c.NumSpeculativeTokens
	if c.RejectionSampleMethod == "synthetic" {
		if (c.SyntheticAcceptanceRates == nil) == (c.SyntheticAcceptanceLength == nil) {
			return fail("rejection_sample_method 'synthetic' requires exactly one of synthetic_acceptance_rates or synthetic_acceptance_length")
		}
		if c.SyntheticAcceptanceRates != nil {
			if len(c.SyntheticAcceptanceRates) != k {
				return fail("synthetic_acceptance_rates must have length %d, got %d", k, len(c.SyntheticAcceptanceRates))
			}
			if _, err := FromRates(c.SyntheticAcceptanceRates); err != nil {
				return fail("synthetic_acceptance_rates: %v", err)
			}
		} else if l := *c.SyntheticAcceptanceLength; !(l >= 1 && l <= float64(k+1)) {
			return fail("synthetic_acceptance_length must be in [1, %d], got %v", k+1, l)
		}
	} else if c.SyntheticAcceptanceRates != nil || c.SyntheticAcceptanceLength != nil {
		return fail("synthetic_acceptance_rates / synthetic_acceptance_length need rejection_sample_method 'synthetic'")
	}
	if c.DSparkDraftTopK != nil {
		switch {
		case method != "dspark":
			return fail("dspark_draft_topk is only supported by DSpark")
		case *c.DSparkDraftTopK < 1:
			return fail("dspark_draft_topk %d: must be ≥ 1", *c.DSparkDraftTopK)
		default:
			return fail("dspark_draft_topk is only supported by Qwen3DSparkModel and Qwen3OmniDSparkModel drafts; BLIS simulates the DeepSeek DSpark stages, which have none")
		}
	}
	if c.IndexShareForMTPIteration != nil && method != "mtp" {
		return fail("index_share_for_mtp_iteration is only supported with method='mtp'")
	}
	if c.EnableAdaptiveVerification {
		if method != "dspark" {
			return fail("Adaptive verification only supported with DSpark")
		}
		return fail("enable_adaptive_verification true: BLIS does not simulate DSpark's confidence-sized verification budgets; set it false (every request verifies its num_speculative_tokens drafts)")
	}
	for i, e := range c.NumSpecTokensPerBatchSize {
		if e[0] > e[1] || e[2] < 0 {
			return fail("num_speculative_tokens_per_batch_size entry %d %v: want [range_start ≤ range_end, num_speculative_tokens ≥ 0]", i, e)
		}
	}
	return c, nil
}

// DraftSlots is vLLM's max_num_new_slots_for_drafting
// (vllm/config/speculative.py@002e77c1): the drafter's input positions a
// scheduled request takes beyond its scheduled tokens, which vLLM's
// scheduler charges to its input budget. Parallel drafters reuse the
// existing query and add the masked ones (k − 1: DSpark, which always
// drafts in parallel, and P-EAGLE); a parallel draft model (PARD) adds k;
// an autoregressive draft model keeps one unsliced token (1); EAGLE, MTP,
// n-gram and suffix add none.
func (c Config) DraftSlots() int {
	if c.Method == nil || c.NumSpeculativeTokens == nil {
		return 0
	}
	k, m := *c.NumSpeculativeTokens, *c.Method
	parallel := c.ParallelDrafting || m == "dspark"
	switch {
	case parallel && m == "draft_model":
		return k
	case parallel:
		return k - 1
	case m == "draft_model":
		return 1
	}
	return 0
}

// SyntheticSchedule is the acceptance schedule of vLLM's synthetic
// rejection sampler when the config asks for one (ok false otherwise):
// the rates as given, or a mean length resolved to vLLM's minimum-variance
// schedule (1, …, 1, frac, 0, …: SpeculativeConfig._acceptance_length_to_rates).
func (c Config) SyntheticSchedule() (s Schedule, ok bool) {
	if c.RejectionSampleMethod != "synthetic" || c.NumSpeculativeTokens == nil {
		return Schedule{}, false
	}
	if c.SyntheticAcceptanceRates != nil {
		s, err := FromRates(c.SyntheticAcceptanceRates)
		return s, err == nil
	}
	if c.SyntheticAcceptanceLength == nil {
		return Schedule{}, false
	}
	k := min(*c.NumSpeculativeTokens, MaxPositions)
	d := *c.SyntheticAcceptanceLength - 1
	u := make([]float64, k)
	full := int(d)
	for j := range u {
		switch {
		case j < full:
			u[j] = 1
		case j == full:
			u[j] = d - float64(full)
		}
	}
	s, err := FromRates(u)
	return s, err == nil
}

// configKeys lists the JSON keys Config accepts, in field order.
func configKeys() []string {
	t := reflect.TypeOf(Config{})
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}
