package catalog

import (
	"strings"
	"testing"
)

// optParams counts an opt graph's parameters the way Hugging Face counts
// the checkpoint's: linear weights and their biases, the token embedding
// at its unpadded vocabulary, the position table, and each LayerNorm's
// weight and bias; the tied LM head is the embedding.
func optParams(g *Graph, m *Model) int {
	count := func(ops []Op) int {
		n := 0
		for _, op := range ops {
			switch {
			case op.Kind == OpGEMM && op.Name == "lm_head" && g.TiedEmbeddings:
			case op.Kind == OpGEMM:
				n += op.N * op.K
				if op.Bias {
					n += op.N
				}
			case op.Kind == OpEmbedding && op.Name == "embed_tokens":
				n += m.VocabSize * op.K
			case op.Kind == OpEmbedding:
				n += op.N * op.K
			case op.Kind == OpElementwise && strings.HasSuffix(op.Name, "layer_norm") && m.LayerNormAffine:
				n += 2 * g.Hidden
			}
		}
		return n
	}
	n := count(g.Embed) + count(g.Head)
	for _, k := range g.Layers {
		n += k.Count * count(k.Ops)
	}
	return n
}

// The opt family against opt.py's layer order and the checkpoints' sizes.
func TestOPTGraph(t *testing.T) {
	// An OPT config with the given extra keys (opt-125m's shape).
	optJSON := func(extra string) []byte {
		return []byte(`{"architectures": ["OPTForCausalLM"], "model_type": "opt", "num_hidden_layers": 12, "hidden_size": 768,
			"num_attention_heads": 12, "ffn_dim": 3072, "vocab_size": 50272, "max_position_embeddings": 2048, "torch_dtype": "float16"` + extra + `}`)
	}
	preLN := []string{"self_attn_layer_norm", "qkv_proj", "attn", "out_proj", "out_proj.all_reduce", "attn_residual_add",
		"final_layer_norm", "fc1", "relu", "fc2", "fc2.all_reduce", "mlp_residual_add"}
	postLN := []string{"qkv_proj", "attn", "out_proj", "out_proj.all_reduce", "attn_residual_add", "self_attn_layer_norm",
		"fc1", "relu", "fc2", "fc2.all_reduce", "mlp_residual_add", "final_layer_norm"}
	tests := []struct {
		name   string
		data   []byte // nil: the catalog's facebook/opt-125m
		layer  []string
		head   []string
		bias   bool
		params int
	}{
		// Hugging Face's count for facebook/opt-125m: embeddings 50272×768,
		// positions 2050×768, 12 layers of 7,087,872 (weights, biases and two
		// LayerNorms), the final LayerNorm 1,536; the LM head is tied.
		{name: "facebook/opt-125m", layer: preLN, head: []string{"final_layer_norm", "lm_head", "logits.all_gather"}, bias: true, params: 125_239_296},
		// OPTConfig's defaults fill the keys the catalog file spells out.
		{name: "defaults", data: optJSON(""), layer: preLN, head: []string{"final_layer_norm", "lm_head", "logits.all_gather"}, bias: true, params: 125_239_296},
		// OPT-350m's order: LayerNorm after each residual add, no final LayerNorm.
		{name: "post-norm", data: optJSON(`, "do_layer_norm_before": false`), layer: postLN, head: []string{"lm_head", "logits.all_gather"}, bias: true,
			params: 125_239_296 - 1536},
		// Without biases: 12 × (3·768 + 768 + 3072 + 768) fewer.
		{name: "no bias", data: optJSON(`, "enable_bias": false`), layer: preLN, head: []string{"final_layer_norm", "lm_head", "logits.all_gather"},
			params: 125_239_296 - 12*(3*768+768+3072+768)},
		{name: "no final norm", data: optJSON(`, "_remove_final_layer_norm": true`), layer: preLN, head: []string{"lm_head", "logits.all_gather"}, bias: true,
			params: 125_239_296 - 1536},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m *Model
			var g *Graph
			var err error
			if tt.data == nil {
				if m, err = LookupModel("opt-125m"); err != nil {
					t.Fatal(err)
				}
				g, err = LookupGraph("opt-125m")
			} else {
				if m, err = ParseConfig("opt.json", tt.data); err != nil {
					t.Fatal(err)
				}
				m.ID = "test/opt"
				g, err = DeriveGraph(m)
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Family != "opt" || !g.TiedEmbeddings || len(g.Layers) != 1 || g.Layers[0].Count != 12 {
				t.Fatalf("family %s, tied %v, %d kinds", g.Family, g.TiedEmbeddings, len(g.Layers))
			}
			k := g.Layers[0]
			if got := opNames(k.Ops); got != strings.Join(tt.layer, ",") {
				t.Errorf("layer ops %v, want %v", got, tt.layer)
			}
			if got := opNames(g.Head); got != strings.Join(tt.head, ",") {
				t.Errorf("head ops %v, want %v", got, tt.head)
			}
			if got, want := opNames(g.Embed), "embed_tokens,embed_tokens.all_reduce,embed_positions,embed_add"; got != want {
				t.Errorf("embed ops %v, want %v", got, want)
			}
			if pos := g.Embed[2]; pos.N != 2050 || pos.K != 768 || pos.Shard != ShardReplicated {
				t.Errorf("position table %d×%d %s, want 2050×768 replicated", pos.N, pos.K, pos.Shard)
			}
			for _, name := range []string{"qkv_proj", "out_proj", "fc1", "fc2"} {
				if op := k.Op(name); op == nil || op.Bias != tt.bias {
					t.Errorf("%s: %+v, want bias %v", name, op, tt.bias)
				}
			}
			if a := k.Attention(); a == nil || a.Kind != "mha" || a.KVHeads != 12 || a.HeadDim != 64 || a.KVCacheElems != 2*768 {
				t.Errorf("attention %+v", a)
			}
			// LayerNorm reads and writes the hidden state (2·H); ReLU the
			// intermediate (2·I); each residual add reads two and writes one.
			for name, want := range map[string]float64{"self_attn_layer_norm": 2 * 768 * 2, "relu": 2 * 3072 * 2, "mlp_residual_add": 3 * 768 * 2} {
				if op := k.Op(name); op == nil || op.BytesPerToken != want {
					t.Errorf("%s: %+v, want %g bytes per token", name, op, want)
				}
			}
			if got := optParams(g, m); got != tt.params {
				t.Errorf("%d parameters, want %d", got, tt.params)
			}
		})
	}
}

// OPT configs BLIS does not model, or with mistyped keys, are one clear error.
func TestParseOPTErrors(t *testing.T) {
	optJSON := func(extra string) string {
		return `{"architectures": ["OPTForCausalLM"], "model_type": "opt", "num_hidden_layers": 24, "hidden_size": 1024,
			"num_attention_heads": 16, "vocab_size": 50272, "max_position_embeddings": 2048` + extra + `}`
	}
	tests := []struct {
		name, data string
		want       []string
	}{
		{"no ffn_dim", optJSON(``), []string{`"ffn_dim"`, "missing"}},
		{"intermediate_size instead", optJSON(`, "intermediate_size": 4096`), []string{`"ffn_dim"`, "missing"}},
		{"projection", optJSON(`, "ffn_dim": 4096, "word_embed_proj_dim": 512`),
			[]string{`"word_embed_proj_dim"`, "512", "project_in/project_out", "not modelled"}},
		{"gelu", optJSON(`, "ffn_dim": 4096, "activation_function": "gelu"`), []string{`"activation_function"`, `"gelu"`, "relu"}},
		{"bias type", optJSON(`, "ffn_dim": 4096, "enable_bias": "yes"`), []string{`"enable_bias"`}},
		{"norm type", optJSON(`, "ffn_dim": 4096, "do_layer_norm_before": 1`), []string{`"do_layer_norm_before"`}},
		{"affine type", optJSON(`, "ffn_dim": 4096, "layer_norm_elementwise_affine": null, "_remove_final_layer_norm": "no"`), []string{`"_remove_final_layer_norm"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseConfig("opt.json", []byte(tt.data))
			if err == nil {
				t.Fatalf("no error; got %+v", m)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
