package catalog

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
)

// The embedded Hugging Face configs, byte-for-byte copies; origins and
// licences in models/PROVENANCE.md.
//
//go:embed models
var modelFS embed.FS

// Repositories the configs were copied from (models/PROVENANCE.md).
const (
	originAIC  = "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce"
	originISim = "inference-sim/inference-sim@f90a1e3a6787da17c2cd463dab6fb2660b1b1760"
	// The Llama-3.3-70B-Instruct config, which later aiconfigurator commits dropped.
	originAIC33 = "ai-dynamo/aiconfigurator@f577ab8432dfc9970fea27853a24861a6d3076cf"
	// Read for numbers only, not copied: SmolLM2-360M-Instruct's shape.
	originEntropix = "JXL884/Entropy-aware-branching@1681a7fefc01e089298a24fd23f8e622d765179c"
)

// modelEntry is one model the catalog offers: which embedded folder holds
// its config, the Hugging Face id it is known by, and short aliases. The
// lower-cased id and the lower-cased name after the slash are aliases too.
type modelEntry struct {
	dir    string // folder under models/, "<org>--<name>"
	id     string // Hugging Face id; "" = dir with "--" read as "/"
	origin string // repository@commit the file was copied from ("" for a written config)
	path   string // its path there ("" = aiconfigurator's naming)
	twin   string // set when the config is another model's of the same architecture
	// written is set when no source held the whole file: the config was
	// written from the numbers of the sources it names (repo@commit), and
	// models/PROVENANCE.md says which field came from where.
	written string
	aliases []string
}

var modelTable = []modelEntry{
	// Llama 3.1 base configs: aiconfigurator stores them under the names the
	// repositories had at release (Meta-Llama-3.1-*); Hugging Face renamed
	// them to Llama-3.1-*, which is the id used here. Both spellings resolve.
	{dir: "meta-llama--Meta-Llama-3.1-8B", id: "meta-llama/Llama-3.1-8B", origin: originAIC,
		aliases: []string{"meta-llama/meta-llama-3.1-8b", "meta-llama-3.1-8b", "llama3.1-8b", "llama3-8b"}},
	{dir: "meta-llama--Meta-Llama-3.1-70B", id: "meta-llama/Llama-3.1-70B", origin: originAIC,
		aliases: []string{"meta-llama/meta-llama-3.1-70b", "meta-llama-3.1-70b", "llama3.1-70b", "llama3-70b"}},
	{dir: "meta-llama--Meta-Llama-3.1-405B", id: "meta-llama/Llama-3.1-405B", origin: originAIC,
		aliases: []string{"meta-llama/meta-llama-3.1-405b", "meta-llama-3.1-405b", "llama3.1-405b", "llama3-405b"}},
	{dir: "meta-llama--Llama-3.1-8B-Instruct", origin: originISim, path: "model_configs/llama-3.1-8b-instruct/config.json",
		aliases: []string{"meta-llama/meta-llama-3.1-8b-instruct", "meta-llama-3.1-8b-instruct", "llama3.1-8b-instruct", "llama3-8b-instruct"}},
	{dir: "meta-llama--Llama-3.1-70B-Instruct", origin: originISim, path: "model_configs/llama-3.1-70b-instruct/config.json",
		aliases: []string{"meta-llama/meta-llama-3.1-70b-instruct", "meta-llama-3.1-70b-instruct", "llama3.1-70b-instruct", "llama3-70b-instruct"}},
	{dir: "meta-llama--Llama-3.1-70B-Instruct", id: "meta-llama/Llama-3.3-70B-Instruct", origin: originISim,
		path: "model_configs/llama-3.1-70b-instruct/config.json", twin: "meta-llama/Llama-3.1-70B-Instruct",
		aliases: []string{"llama-3.3-70b", "llama3.3-70b", "llama3.3-70b-instruct"}},
	{dir: "nvidia--Llama-3.1-70B-Instruct-FP8", origin: originAIC,
		aliases: []string{"llama-3.1-70b-instruct-fp8", "llama-3.1-70b-fp8", "llama3.1-70b-fp8"}},
	{dir: "nvidia--Llama-3.1-70B-Instruct-FP8", id: "nvidia/Llama-3.3-70B-Instruct-FP8", origin: originAIC,
		twin:    "nvidia/Llama-3.1-70B-Instruct-FP8",
		aliases: []string{"llama-3.3-70b-instruct-fp8", "llama-3.3-70b-fp8", "llama3.3-70b-fp8"}},
	// AMD's Quark export of Llama-3.3-70B-Instruct in vLLM's "fp8" format:
	// per-tensor FP8 weights and static activation scales, plus calibrated
	// k/v scales (kv_cache_scheme static) that vLLM applies only when served
	// with --kv-cache-dtype fp8; with auto the cache stays bf16, as here.
	{dir: "amd--Llama-3.3-70B-Instruct-FP8-KV",
		written: "the Llama-3.3-70B-Instruct config (" + originAIC33 + " src/aiconfigurator/model_configs/meta-llama--Llama-3.3-70B-Instruct_config.json) and the fp8 quantization_config AMD's checkpoint carries",
		aliases: []string{"llama-3.3-70b-fp8-kv", "llama3.3-70b-fp8-kv"}},
	{dir: "meta-llama--Llama-2-7b-hf", origin: originISim, path: "model_configs/llama-2-7b-hf/config.json",
		aliases: []string{"llama-2-7b", "llama2-7b"}},
	{dir: "codellama--CodeLlama-34b-Instruct-hf", origin: originISim, path: "model_configs/codellama-34b-instruct-hf/config.json",
		aliases: []string{"codellama-34b-instruct", "codellama-34b"}},
	{dir: "01-ai--Yi-34B", origin: originISim, path: "model_configs/yi-34b/config.json"},
	{dir: "HuggingFaceTB--SmolLM2-360M-Instruct",
		written: originEntropix + " entropix/models/smollm.py (its SmolLM2-360M-Instruct shape numbers), checked against the published 361,821,120 parameters",
		aliases: []string{"smollm2-360m"}},

	// Llama-shaped with Granite's four scalar multipliers (granite.py).
	{dir: "ibm-granite--granite-3.3-2b-instruct",
		written: "public GraniteForCausalLM configs and code found by the project's source search (index ids 67169310196, 54502112063, 53141176458; repositories not named there), checked against the published 2.53 B parameters",
		aliases: []string{"granite-3.3-2b"}},
	// OPT (opt.py): learned positions, LayerNorm, fc1/ReLU/fc2; vLLM's
	// default model in its examples and tests.
	{dir: "facebook--opt-125m",
		written: "public copies of facebook/opt-125m's config.json found by the project's source search (index ids 59461262682, 35126208054, 67322646830; repositories not named there), checked against its 125,239,296 parameters",
		aliases: []string{"opt-125m"}},
	{dir: "Qwen--Qwen3-0.6B", origin: originAIC},
	{dir: "Qwen--Qwen3-8B", origin: originAIC},
	{dir: "Qwen--Qwen3-32B", origin: originAIC},
	{dir: "Qwen--Qwen3-32B-FP8", origin: originAIC},
	{dir: "Qwen--Qwen3-32B-FP8-Static-PerTensor", origin: originAIC},
	{dir: "Qwen--Qwen3-30B-A3B", origin: originAIC, aliases: []string{"qwen3-30b"}},
	{dir: "Qwen--Qwen3-235B-A22B", origin: originAIC, aliases: []string{"qwen3-235b"}},
	{dir: "Qwen--Qwen3-235B-A22B-FP8", origin: originAIC, aliases: []string{"qwen3-235b-fp8"}},
	{dir: "Qwen--Qwen3-Coder-480B-A35B-Instruct", origin: originAIC, aliases: []string{"qwen3-coder-480b"}},
	{dir: "Qwen--Qwen3-Coder-480B-A35B-Instruct-FP8",
		written: "the bf16 config (" + originAIC + " aic-core/src/aiconfigurator_core/model_configs/Qwen--Qwen3-Coder-480B-A35B-Instruct_config.json) and the fp8 quantization_config of Qwen/Qwen3-235B-A22B-FP8 (same repo)",
		aliases: []string{"qwen3-coder-480b-fp8"}},
	{dir: "Qwen--Qwen2.5-7B-Instruct", origin: originISim, path: "model_configs/qwen2.5-7b-instruct/config.json",
		aliases: []string{"qwen2.5-7b"}},

	{dir: "deepseek-ai--DeepSeek-V3", origin: originAIC},
	{dir: "deepseek-ai--DeepSeek-R1", origin: originAIC},
	// R1-0528 is a retrained R1 with the same DeepseekV3ForCausalLM
	// architecture (671B, MLA, 256 routed experts, one MTP layer).
	{dir: "deepseek-ai--DeepSeek-R1", id: "deepseek-ai/DeepSeek-R1-0528", origin: originAIC,
		twin: "deepseek-ai/DeepSeek-R1"},
	{dir: "deepseek-ai--DeepSeek-V2-Lite", origin: originISim, path: "model_configs/deepseek-v2-lite/config.json"},
	// The chat-tuned V2-Lite: the same DeepseekV2ForCausalLM shape (15.7 B,
	// MLA without q_lora, 64 routed experts, top-6, 2 shared).
	{dir: "deepseek-ai--DeepSeek-V2-Lite", id: "deepseek-ai/DeepSeek-V2-Lite-Chat", origin: originISim,
		path: "model_configs/deepseek-v2-lite/config.json", twin: "deepseek-ai/DeepSeek-V2-Lite",
		aliases: []string{"deepseek-v2-lite-chat"}},
	// MLA with DeepSeek sparse attention (the lightning indexer's top-k).
	{dir: "deepseek-ai--DeepSeek-V3.2", origin: originAIC},
	// DeepSeek-V4: compressed attention (sliding-window, CSA and HCA
	// layers), mHC and hash-routed MoE layers (graph_dsv4.go). SGLang's
	// FP8 conversion keeps fp8 experts (no expert_dtype, model_type
	// deepseek_ref).
	{dir: "deepseek-ai--DeepSeek-V4-Flash", origin: originAIC, aliases: []string{"deepseek-v4-flash"}},
	{dir: "deepseek-ai--DeepSeek-V4-Pro", origin: originAIC, aliases: []string{"deepseek-v4-pro"}},
	{dir: "sgl-project--DeepSeek-V4-Flash-FP8", origin: originAIC, aliases: []string{"deepseek-v4-flash-fp8"}},
	// DeepSeek-V4.1-Flash as the issue-tracked approximation: no public
	// config.json holds it whole, so it is V4-Flash's backbone with V4.1's
	// published Engram block (models/PROVENANCE.md, "Written configs").
	{dir: "deepseek-ai--DeepSeek-V4.1-Flash", aliases: []string{"deepseek-v4.1-flash", "dsv41-flash"},
		written: "deepseek-ai/DeepSeek-V4-Flash's config.json (" + originAIC + ") and the engram_* keys of DeepSeek-V4.1-Flash's text_config as public code quotes them (ROCm/ATOM's Engram tests, vLLM's Engram docs): V4-Flash's backbone, not V4.1's"},
	// NVIDIA's ModelOpt re-quantization of V4-Flash: the decoder layers'
	// routed experts NVFP4, everything else as in V4-Flash (fp8 blocks,
	// MXFP4 MTP experts); vLLM serves it with DeepseekV4FP8Config.
	{dir: "nvidia--DeepSeek-V4-Flash-NVFP4", origin: originAIC, aliases: []string{"deepseek-v4-flash-nvfp4"}},
	// zhipuai/ is the organisation's former Hugging Face name, which
	// benchmark dumps still use (InferenceX's GLM-5 rows).
	{dir: "zai-org--GLM-5", origin: originAIC, aliases: []string{"zhipuai/glm-5"}},
	{dir: "zai-org--GLM-5-FP8", origin: originAIC, aliases: []string{"zhipuai/glm-5-fp8"}},

	{dir: "openai--gpt-oss-120b", origin: originAIC},
	{dir: "openai--gpt-oss-20b", origin: originAIC},

	{dir: "mistralai--Mixtral-8x7B-v0.1", origin: originAIC, aliases: []string{"mixtral-8x7b"}},
	{dir: "mistralai--Mixtral-8x22B-v0.1", origin: originAIC, aliases: []string{"mixtral-8x22b"}},
	{dir: "mistralai--Mistral-Nemo-Instruct-2407", origin: originISim, path: "model_configs/mistral-nemo-instruct-2407/config.json",
		aliases: []string{"mistral-nemo", "mistral-nemo-instruct"}},

	{dir: "MiniMaxAI--MiniMax-M2.5", origin: originAIC},
	// The DeepSeek-V3-architecture decoder of a vision-language wrapper,
	// read from text_config (the vision tower is not modelled).
	{dir: "moonshotai--Kimi-K2.5", origin: originAIC, aliases: []string{"kimi-k2.5"}},
	// Qwen3's dense decoder in Qwen3-VL's wrapper, read from text_config;
	// the vision tower's weights are counted, its compute is not priced.
	{dir: "Qwen--Qwen3-VL-32B-Instruct", origin: originAIC, aliases: []string{"qwen3-vl-32b"}},
	// Qwen3.5's hybrid decoder (Gated DeltaNet and gated full attention,
	// 512-expert MoE) in its vision wrapper, read from text_config; the
	// vision tower's weights are counted as for Qwen3-VL.
	{dir: "Qwen--Qwen3.5-397B-A17B", origin: originAIC, aliases: []string{"qwen3.5-397b"}},
	// Llama 4's text decoder in its vision wrapper (the vision tower is not
	// counted: see textWrappers).
	{dir: "meta-llama--Llama-4-Scout-17B-16E-Instruct", origin: originAIC, aliases: []string{"llama-4-scout"}},
	{dir: "RedHatAI--Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", origin: originISim, path: "model_configs/llama-4-scout-17b-16e-instruct-fp8-dynamic/config.json",
		aliases: []string{"llama-4-scout-fp8"}},
}

type modelRegistry struct {
	byID  []*Model          // sorted by ID
	index map[string]*Model // lower-cased id or alias → model
	err   error
}

var (
	registryOnce sync.Once
	registry     modelRegistry
)

func models() *modelRegistry {
	registryOnce.Do(func() { registry = loadModels(modelFS, modelTable) })
	return &registry
}

func (e modelEntry) hfID() string {
	if e.id != "" {
		return e.id
	}
	return strings.Replace(e.dir, "--", "/", 1)
}

func loadModels(fsys fs.FS, table []modelEntry) modelRegistry {
	r := modelRegistry{index: map[string]*Model{}}
	fail := func(err error) modelRegistry { return modelRegistry{err: err} }
	for _, e := range table {
		file := path.Join("models", e.dir, "config.json")
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return fail(fmt.Errorf("catalog: %v", err))
		}
		m, err := ParseConfig("catalog/"+file, data)
		if err != nil {
			return fail(err)
		}
		qfile := path.Join("models", e.dir, "hf_quant_config.json")
		if q, err := fs.ReadFile(fsys, qfile); err == nil {
			if err := ParseHFQuantConfig(m, "catalog/"+qfile, q); err != nil {
				return fail(err)
			}
		}
		m.ID = e.hfID()
		orig := e.path
		if orig == "" {
			orig = "aic-core/src/aiconfigurator_core/model_configs/" + e.dir + "_config.json"
		}
		m.Source = fmt.Sprintf("catalog/%s, copied from %s %s", file, e.origin, orig)
		if e.written != "" {
			m.Source = fmt.Sprintf("catalog/%s, written from %s (no public copy of the whole file; see models/PROVENANCE.md)", file, e.written)
		}
		if e.twin != "" {
			m.Source += fmt.Sprintf(" (the config of %s, which has the same architecture; see models/PROVENANCE.md)", e.twin)
		}
		lower := strings.ToLower(m.ID)
		seen := map[string]bool{}
		for _, a := range append([]string{lower, lower[strings.Index(lower, "/")+1:]}, e.aliases...) {
			if a != strings.ToLower(a) || strings.TrimSpace(a) != a || a == "" {
				return fail(fmt.Errorf("catalog: alias %q of %s must be lower case and trimmed", a, m.ID))
			}
			if seen[a] {
				continue
			}
			seen[a] = true
			if other, dup := r.index[a]; dup {
				return fail(fmt.Errorf("catalog: alias %q names both %s and %s", a, other.ID, m.ID))
			}
			r.index[a] = m
			if a != lower {
				m.Aliases = append(m.Aliases, a)
			}
		}
		r.byID = append(r.byID, m)
	}
	sort.Slice(r.byID, func(i, j int) bool { return r.byID[i].ID < r.byID[j].ID })
	return r
}

func (m *Model) clone() *Model {
	c := *m
	c.Aliases = append([]string(nil), m.Aliases...)
	c.MoELayers = append([]bool(nil), m.MoELayers...)
	c.SlidingLayers = append([]bool(nil), m.SlidingLayers...)
	return &c
}

// Models returns every embedded model, sorted by ID. Each call returns
// fresh copies.
func Models() []*Model {
	r := models()
	out := make([]*Model, 0, len(r.byID))
	for _, m := range r.byID {
		out = append(out, m.clone())
	}
	return out
}

// LookupModel finds a model by Hugging Face id (any case; the pre-rename
// Meta-Llama-3.1-* ids too) or by a short alias such as "llama-3.1-8b",
// "qwen3-32b" or "gpt-oss-120b". An unknown name is an error that lists the
// closest known ids; a model the project knows but cannot represent
// (UnsupportedModels) is an *UnsupportedModelError saying what is missing.
// The result is a fresh copy.
func LookupModel(name string) (*Model, error) {
	r := models()
	if r.err != nil {
		return nil, r.err
	}
	key := strings.ToLower(strings.TrimSpace(name))
	if m, ok := r.index[key]; ok {
		return m.clone(), nil
	}
	if !strings.Contains(key, "/") && strings.Contains(key, "--") { // catalog folder spelling
		if m, ok := r.index[strings.Replace(key, "--", "/", 1)]; ok {
			return m.clone(), nil
		}
	}
	if u, ok := lookupUnsupported(key); ok {
		return nil, &UnsupportedModelError{Model: u}
	}
	keys := make([]string, 0, len(r.index))
	for k := range r.index {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cands []candidate
	for _, k := range keys {
		cands = append(cands, candidate{Key: k, Name: r.index[k].ID})
	}
	if close := closeMatches(key, cands, 5); len(close) > 0 {
		return nil, fmt.Errorf("unknown model %q; did you mean: %s", name, strings.Join(close, ", "))
	}
	ids := make([]string, len(r.byID))
	for i, m := range r.byID {
		ids[i] = m.ID
	}
	return nil, fmt.Errorf("unknown model %q; known models: %s", name, strings.Join(ids, ", "))
}
