package catalog

import (
	"bytes"
	"io/fs"
	"math"
	"path"
	"strings"
	"testing"
)

// graphParams counts the weights a graph's linear layers, experts and
// embedding hold (norm weights and biases aside: under 0.1% of any model
// here), to hand-check a config against the model's published size.
func graphParams(g *Graph) float64 {
	gemms := func(ops []Op) float64 {
		var n float64
		for _, op := range ops {
			switch {
			case op.Kind == OpGEMM && op.Name == "lm_head" && g.TiedEmbeddings:
			case op.Kind == OpGEMM && op.Phase == PhaseDecode: // MLA's absorbed views of kv_b_proj's weights
			case op.Kind == OpGEMM:
				n += float64(op.N) * float64(op.K) * float64(max(op.Batch, 1))
			case op.Kind == OpMoE:
				n += float64(op.MoE.Experts) * 3 * float64(op.MoE.Hidden) * float64(op.MoE.Inter)
			case op.Kind == OpEmbedding:
				n += float64(op.N) * float64(op.K)
			}
		}
		return n
	}
	total := gemms(g.Embed) + gemms(g.Head)
	for _, k := range g.Layers {
		total += float64(k.Count) * gemms(k.Ops)
	}
	return total
}

// The models a validation page names as missing: each resolves, has the
// architecture numbers of its published checkpoint, and its stored graph
// holds the published parameter count.
func TestSeedPageModels(t *testing.T) {
	tests := []struct {
		name, id     string
		layers       int
		kvHeads      int
		weightDtype  string
		weightBlock  int
		params       float64 // published total, 0 = not checked here
		tol          float64
		sameConfigAs string // a twin: the same embedded config and graph
	}{
		// 361,821,120 parameters (tied embeddings; the bf16 model.safetensors
		// is 723.67 MB); the graph leaves out the 65 RMSNorm vectors (62,400).
		{name: "smollm2-360m", id: "HuggingFaceTB/SmolLM2-360M-Instruct", layers: 32, kvHeads: 5,
			weightDtype: "bfloat16", params: 361_821_120, tol: 0.0002},
		// 70.6 B parameters, the Llama-3.3-70B-Instruct shape; per-tensor FP8.
		{name: "amd/llama-3.3-70b-instruct-fp8-kv", id: "amd/Llama-3.3-70B-Instruct-FP8-KV", layers: 80, kvHeads: 8,
			weightDtype: "fp8", params: 70.55e9, tol: 0.002},
		// 480 B parameters, 35 B active; FP8 with 128×128 block scales.
		{name: "qwen3-coder-480b-fp8", id: "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", layers: 62, kvHeads: 8,
			weightDtype: "fp8", weightBlock: 128, params: 480e9, tol: 0.005},
		// 15.7 B parameters (DeepSeek's model card for V2-Lite and its Chat
		// model); bf16 with MLA's latent KV (one "KV head").
		{name: "deepseek-v2-lite-chat", id: "deepseek-ai/DeepSeek-V2-Lite-Chat", layers: 27, kvHeads: 1,
			weightDtype: "bfloat16", params: 15.7e9, tol: 0.001, sameConfigAs: "deepseek-ai/DeepSeek-V2-Lite"},
		{name: "deepseek-ai/deepseek-r1-0528", id: "deepseek-ai/DeepSeek-R1-0528", layers: 61, kvHeads: 1,
			weightDtype: "fp8", weightBlock: 128, sameConfigAs: "deepseek-ai/DeepSeek-R1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := LookupModel(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if m.ID != tt.id || m.NumLayers != tt.layers || m.NumKVHeads != tt.kvHeads || m.WeightDtype != tt.weightDtype || m.WeightBlock != tt.weightBlock {
				t.Errorf("%s: %d layers, %d KV heads, weights %s block %d", m.ID, m.NumLayers, m.NumKVHeads, m.WeightDtype, m.WeightBlock)
			}
			g, err := LookupGraph(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if g.Model != tt.id {
				t.Errorf("graph model %s, want %s", g.Model, tt.id)
			}
			if tt.params > 0 {
				if got := graphParams(g); math.Abs(got/tt.params-1) > tt.tol {
					t.Errorf("graph holds %.6g parameters, published %.6g (±%.2g%%)", got, tt.params, 100*tt.tol)
				}
			}
			if tt.sameConfigAs != "" {
				twin, err := LookupGraph(tt.sameConfigAs)
				if err != nil {
					t.Fatal(err)
				}
				a, _ := EncodeGraph(twin)
				g.Model = twin.Model
				b, _ := EncodeGraph(g)
				if !bytes.Equal(a, b) {
					t.Errorf("%s's graph differs from %s's", tt.id, tt.sameConfigAs)
				}
			}
		})
	}
}

// The FP8 Qwen3-Coder config is the bf16 one plus a quantization_config:
// every other key is the same.
func TestQwen3CoderFP8MatchesBF16(t *testing.T) {
	read := func(dir string) map[string]any {
		data, err := fs.ReadFile(modelFS, path.Join("models", dir, "config.json"))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := decodeObject(dir, data)
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	bf16, fp8 := read("Qwen--Qwen3-Coder-480B-A35B-Instruct"), read("Qwen--Qwen3-Coder-480B-A35B-Instruct-FP8")
	if _, ok := fp8["quantization_config"]; !ok || len(fp8) != len(bf16)+1 {
		t.Fatalf("fp8 config has %d keys, bf16 %d", len(fp8), len(bf16))
	}
	for k, v := range bf16 {
		if !equalJSON(v, fp8[k]) {
			t.Errorf("key %s: bf16 %v, fp8 %v", k, v, fp8[k])
		}
	}
}

func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k := range a {
			if !equalJSON(a[k], b[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// graniteConfig is a small GraniteForCausalLM config with extra keys
// spliced in.
func graniteConfig(extra string) []byte {
	return []byte(`{"architectures": ["GraniteForCausalLM"], "model_type": "granite", "hidden_size": 256,
		"intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		"vocab_size": 1000, "max_position_embeddings": 4096, "tie_word_embeddings": true` + extra + `}`)
}

// The granite family: Llama's GEMMs, plain norms with a separate scaled
// residual add per block, the embedding multiplier and, when
// logits_scaling is not 1, the logits scale (vLLM's granite.py).
func TestGraniteGraph(t *testing.T) {
	layerOps := "input_layernorm,qkv_proj,rotary_emb,attn,o_proj,o_proj.all_reduce,attn_residual_add," +
		"post_attention_layernorm,gate_up_proj,silu_and_mul,down_proj,down_proj.all_reduce,mlp_residual_add"
	tests := []struct {
		name      string
		model     *Model
		head      string
		params    float64 // published total, 0 = not checked
		normBytes float64 // input_layernorm bytes per token
	}{
		{name: "granite-3.3-2b", model: func() *Model { m, _ := LookupModel("granite-3.3-2b"); return m }(),
			head: "norm,lm_head,logits.all_gather,logits_scale", params: 2.53e9, normBytes: 2 * 2048 * 2},
		{name: "logits_scaling absent", model: func() *Model {
			m, _ := ParseConfig("granite.json", graniteConfig(`, "embedding_multiplier": 12.0`))
			return m
		}(), head: "norm,lm_head,logits.all_gather", normBytes: 2 * 256 * 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.model == nil {
				t.Fatal("model did not load")
			}
			g, err := DeriveGraph(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if g.Family != "granite" || len(g.Layers) != 1 {
				t.Fatalf("family %s, %d layer kinds", g.Family, len(g.Layers))
			}
			k := &g.Layers[0]
			if got := opNames(k.Ops); got != layerOps {
				t.Errorf("layer ops %q, want %q", got, layerOps)
			}
			if got := opNames(g.Head); got != tt.head {
				t.Errorf("head ops %q, want %q", got, tt.head)
			}
			if got := opNames(g.Embed); got != "embed_tokens,embed_tokens.all_reduce,embedding_multiplier" {
				t.Errorf("embed ops %q", got)
			}
			if n := mustOp(t, k, "input_layernorm"); n.BytesPerToken != tt.normBytes {
				t.Errorf("input_layernorm %g B/token, want %g", n.BytesPerToken, tt.normBytes)
			}
			if tt.params > 0 {
				if got := graphParams(g); math.Abs(got/tt.params-1) > 0.005 {
					t.Errorf("graph holds %.4g parameters, published %.4g", got, tt.params)
				}
			}
		})
	}
}

func TestGraniteMultipliers(t *testing.T) {
	tests := []struct {
		extra      string
		emb, logit float64
		err        string
	}{
		{extra: "", emb: 1, logit: 1},
		{extra: `, "embedding_multiplier": 12, "logits_scaling": 8.0`, emb: 12, logit: 8},
		{extra: `, "residual_multiplier": 0`, err: "residual_multiplier"},
		{extra: `, "logits_scaling": "8"`, err: "logits_scaling"},
		{extra: `, "attention_multiplier": -0.5`, err: "attention_multiplier"},
	}
	for _, tt := range tests {
		m, err := ParseConfig("granite.json", graniteConfig(tt.extra))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one naming %s", tt.extra, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.extra, err)
		}
		if m.EmbeddingMultiplier != tt.emb || m.LogitsScaling != tt.logit || m.ResidualMultiplier <= 0 || m.AttentionMultiplier <= 0 {
			t.Errorf("%s: multipliers %g %g %g %g", tt.extra, m.EmbeddingMultiplier, m.ResidualMultiplier, m.AttentionMultiplier, m.LogitsScaling)
		}
	}
}
