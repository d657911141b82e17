package catalog

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Every embedded config has a stored graph, and it is what the deriver
// produces now.
func TestStoredGraphsAreFresh(t *testing.T) {
	files, err := DeriveGraphs()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no graphs derived")
	}
	for _, f := range files {
		if f.Stored == nil {
			t.Errorf("catalog/%s is missing; run `go run ./cmd/blis catalog derive --write`", f.Path)
			continue
		}
		if f.Stale() {
			t.Errorf("catalog/%s differs from a fresh derivation of %s; run `go run ./cmd/blis catalog derive --write` and review the diff", f.Path, f.Model)
		}
	}
}

func mustGraph(t *testing.T, name string) *Graph {
	t.Helper()
	g, err := LookupGraph(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustKind(t *testing.T, g *Graph, name string) *LayerKind {
	t.Helper()
	k := g.Kind(name)
	if k == nil {
		t.Fatalf("%s has no layer kind %q", g.Model, name)
	}
	return k
}

func mustOp(t *testing.T, k *LayerKind, name string) *Op {
	t.Helper()
	o := k.Op(name)
	if o == nil {
		t.Fatalf("layer kind %q has no op %q", k.Name, name)
	}
	return o
}

// gemmWant is a GEMM's expected shape, dtype and sharding.
type gemmWant struct {
	name      string
	n, k      int
	dtype     string
	shard     string
	bias      bool
	parts     []int
	batch     int
	phase     string
	rowsSampl bool
}

func checkGEMM(t *testing.T, k *LayerKind, w gemmWant) {
	t.Helper()
	o := mustOp(t, k, w.name)
	if o.Kind != OpGEMM || o.N != w.n || o.K != w.k || o.Dtype != w.dtype || o.Shard != w.shard || o.Bias != w.bias ||
		o.Batch != w.batch || o.Phase != w.phase || (o.Rows == RowsSampled) != w.rowsSampl {
		t.Errorf("%s/%s = %s, want n=%d k=%d batch=%d %s %s bias=%v phase=%q sampled=%v",
			k.Name, w.name, o, w.n, w.k, w.batch, w.dtype, w.shard, w.bias, w.phase, w.rowsSampl)
	}
	if w.parts != nil && !equalInts(o.Parts, w.parts) {
		t.Errorf("%s/%s parts = %v, want %v", k.Name, w.name, o.Parts, w.parts)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func opNames(ops []Op) string {
	n := make([]string, len(ops))
	for i := range ops {
		n[i] = ops[i].Name
	}
	return strings.Join(n, ",")
}

// Hand-checked shapes, family by family (numbers from each config.json).
func TestGraphLlama(t *testing.T) {
	g := mustGraph(t, "meta-llama/Llama-3.1-8B-Instruct")
	if g.Family != "llama" || g.NumLayers() != 32 || len(g.Layers) != 1 || g.Draft != nil {
		t.Fatalf("family %s, %d layers, %d kinds, draft %v", g.Family, g.NumLayers(), len(g.Layers), g.Draft)
	}
	k := mustKind(t, g, "dense")
	want := "input_layernorm,qkv_proj,rotary_emb,attn,o_proj,o_proj.all_reduce,post_attention_layernorm,gate_up_proj,silu_and_mul,down_proj,down_proj.all_reduce"
	if got := opNames(k.Ops); got != want {
		t.Errorf("op order\n got %s\nwant %s", got, want)
	}
	checkGEMM(t, k, gemmWant{name: "qkv_proj", n: 6144, k: 4096, dtype: "bf16", shard: ShardColumn, parts: []int{4096, 1024, 1024}})
	checkGEMM(t, k, gemmWant{name: "o_proj", n: 4096, k: 4096, dtype: "bf16", shard: ShardRow})
	checkGEMM(t, k, gemmWant{name: "gate_up_proj", n: 28672, k: 4096, dtype: "bf16", shard: ShardColumn, parts: []int{14336, 14336}})
	checkGEMM(t, k, gemmWant{name: "down_proj", n: 4096, k: 14336, dtype: "bf16", shard: ShardRow})
	a := k.Attention()
	if a.Kind != "gqa" || a.Heads != 32 || a.KVHeads != 8 || a.HeadDim != 128 || a.Window != 0 || a.Sinks || k.KVCacheElems != 2048 {
		t.Errorf("attention %+v, kv %d", a, k.KVCacheElems)
	}
	if ar := mustOp(t, k, "o_proj.all_reduce"); ar.Group != GroupTP || ar.Collective != "all_reduce" || ar.BytesPerToken != 4096*2 {
		t.Errorf("o_proj.all_reduce = %s", ar)
	}
	if h := g.LMHead(); h == nil || h.N != 128256 || h.K != 4096 || h.Dtype != "bf16" || h.Rows != RowsSampled {
		t.Errorf("lm_head = %v", h)
	}
	if len(g.Stack) != 1 || g.Stack[0].Repeat != 32 {
		t.Errorf("stack %+v", g.Stack)
	}

	// Llama-2-7b: MHA in fp16.
	g2 := mustGraph(t, "llama-2-7b")
	k2 := mustKind(t, g2, "dense")
	if a := k2.Attention(); a.Kind != "mha" || a.KVHeads != 32 || g2.Dtype != "fp16" {
		t.Errorf("Llama-2-7b attention %+v dtype %s", a, g2.Dtype)
	}
	// Mistral-Nemo: head_dim 128 with hidden 5120 and 32 heads.
	k3 := mustKind(t, mustGraph(t, "mistral-nemo"), "dense")
	checkGEMM(t, k3, gemmWant{name: "qkv_proj", n: (32 + 16) * 128, k: 5120, dtype: "bf16", shard: ShardColumn})
	checkGEMM(t, k3, gemmWant{name: "o_proj", n: 5120, k: 4096, dtype: "bf16", shard: ShardRow})
	// ModelOpt FP8 checkpoint: every linear layer in FP8, LM head kept.
	g4 := mustGraph(t, "nvidia/Llama-3.1-70B-Instruct-FP8")
	k4 := mustKind(t, g4, "dense")
	checkGEMM(t, k4, gemmWant{name: "qkv_proj", n: 10240, k: 8192, dtype: "fp8", shard: ShardColumn})
	checkGEMM(t, k4, gemmWant{name: "down_proj", n: 8192, k: 28672, dtype: "fp8", shard: ShardRow})
	if g4.LMHead().Dtype != "bf16" {
		t.Errorf("FP8 Llama lm_head dtype %s", g4.LMHead().Dtype)
	}
}

func TestGraphQwen(t *testing.T) {
	k := mustKind(t, mustGraph(t, "qwen2.5-7b"), "dense")
	checkGEMM(t, k, gemmWant{name: "qkv_proj", n: (28 + 8) * 128, k: 3584, dtype: "bf16", shard: ShardColumn, bias: true})
	checkGEMM(t, k, gemmWant{name: "o_proj", n: 3584, k: 3584, dtype: "bf16", shard: ShardRow})
	if k.Op("qk_norm") != nil {
		t.Error("Qwen2 has no q/k norm")
	}

	g := mustGraph(t, "qwen3-32b")
	k = mustKind(t, g, "dense")
	if qk := mustOp(t, k, "qk_norm"); qk.Kind != OpElementwise || qk.BytesPerToken != float64(2*(64+8)*128*2) {
		t.Errorf("qk_norm = %s", qk)
	}
	if want := "qkv_proj,qk_norm,rotary_emb,attn"; !strings.Contains(opNames(k.Ops), want) {
		t.Errorf("Qwen3 ops %s lack %s", opNames(k.Ops), want)
	}

	g = mustGraph(t, "qwen3-30b-a3b")
	k = mustKind(t, g, "moe")
	if g.NumLayers() != 48 || k.Count != 48 {
		t.Fatalf("Qwen3-30B-A3B layers %d", g.NumLayers())
	}
	checkGEMM(t, k, gemmWant{name: "gate", n: 128, k: 2048, dtype: "bf16", shard: ShardReplicated})
	if e := k.MoE(); e.Experts != 128 || e.TopK != 8 || e.Inter != 768 || e.Hidden != 2048 || e.SharedExperts != 0 || e.Scoring != "softmax" {
		t.Errorf("moe %+v", e)
	}

	k = mustKind(t, mustGraph(t, "qwen3-235b-fp8"), "moe")
	checkGEMM(t, k, gemmWant{name: "qkv_proj", n: (64 + 8) * 128, k: 4096, dtype: "fp8", shard: ShardColumn})
	checkGEMM(t, k, gemmWant{name: "gate", n: 128, k: 4096, dtype: "bf16", shard: ShardReplicated})
	if e := k.MoE(); e.Dtype != "fp8" || e.Inter != 1536 {
		t.Errorf("moe %+v", e)
	}
}

func TestGraphMixtral(t *testing.T) {
	g := mustGraph(t, "mixtral-8x7b")
	k := mustKind(t, g, "moe")
	if g.NumLayers() != 32 || len(g.Layers) != 1 {
		t.Fatalf("layers %d kinds %d", g.NumLayers(), len(g.Layers))
	}
	want := "input_layernorm,qkv_proj,rotary_emb,attn,o_proj,o_proj.all_reduce,post_attention_layernorm,gate,experts.dispatch,experts,experts.combine,experts.all_reduce"
	if got := opNames(k.Ops); got != want {
		t.Errorf("op order\n got %s\nwant %s", got, want)
	}
	checkGEMM(t, k, gemmWant{name: "gate", n: 8, k: 4096, dtype: "bf16", shard: ShardReplicated})
	e := k.MoE()
	if e.Experts != 8 || e.TopK != 2 || e.Inter != 14336 || e.Hidden != 4096 || e.Activation != "silu" || e.Dtype != "bf16" {
		t.Errorf("moe %+v", e)
	}
	d := mustOp(t, k, "experts.dispatch")
	c := mustOp(t, k, "experts.combine")
	if d.Group != GroupDP || d.Collective != "all_gather" || d.BytesPerToken != 4096*2+8*2 ||
		c.Group != GroupDP || c.Collective != "reduce_scatter" || c.BytesPerToken != 4096*2 {
		t.Errorf("dispatch %s, combine %s", d, c)
	}
}

func TestGraphDeepSeek(t *testing.T) {
	for _, name := range []string{"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1"} {
		t.Run(name, func(t *testing.T) {
			g := mustGraph(t, name)
			dense, moe := mustKind(t, g, "dense"), mustKind(t, g, "moe")
			if dense.Count != 3 || moe.Count != 58 || g.NumLayers() != 61 || g.Layers[0].Name != "dense" {
				t.Fatalf("kinds %d dense + %d moe", dense.Count, moe.Count)
			}
			if len(g.Stack) != 2 || g.Stack[0].Repeat != 3 || g.Stack[1].Repeat != 58 {
				t.Errorf("stack %+v", g.Stack)
			}
			for _, k := range []*LayerKind{dense, moe} {
				// q_a_proj (1536) and kv_a_proj_with_mqa (512 + 64) fused, as vLLM's fused_qkv_a_proj.
				checkGEMM(t, k, gemmWant{name: "fused_qkv_a_proj", n: 2112, k: 7168, dtype: "fp8", shard: ShardReplicated, parts: []int{1536, 576}})
				checkGEMM(t, k, gemmWant{name: "q_b_proj", n: 128 * 192, k: 1536, dtype: "fp8", shard: ShardColumn})
				checkGEMM(t, k, gemmWant{name: "kv_b_proj", n: 128 * 256, k: 512, dtype: "fp8", shard: ShardColumn, phase: PhasePrefill})
				checkGEMM(t, k, gemmWant{name: "q_nope_absorb", batch: 128, n: 512, k: 128, dtype: "bf16", shard: ShardSplit, phase: PhaseDecode})
				checkGEMM(t, k, gemmWant{name: "v_up_proj", batch: 128, n: 128, k: 512, dtype: "bf16", shard: ShardSplit, phase: PhaseDecode})
				checkGEMM(t, k, gemmWant{name: "o_proj", n: 7168, k: 128 * 128, dtype: "fp8", shard: ShardRow})
				// The MLA module's own operators, not its all-reduce nor the MLP.
				for _, op := range k.Ops {
					want := mlaModuleOps[op.Name]
					if got := k.InAttentionModule(&op); got != want {
						t.Errorf("%s: InAttentionModule = %v, want %v", op.Name, got, want)
					}
				}
				a := k.Attention()
				if a.Kind != "mla" || a.Heads != 128 || a.KVLoraRank != 512 || a.QKRopeHeadDim != 64 || a.KVCacheElems != 576 || a.KVCacheShard != "replicated" {
					t.Errorf("attention %+v", a)
				}
			}
			checkGEMM(t, dense, gemmWant{name: "gate_up_proj", n: 2 * 18432, k: 7168, dtype: "fp8", shard: ShardColumn})
			checkGEMM(t, moe, gemmWant{name: "gate", n: 256, k: 7168, dtype: "bf16", shard: ShardReplicated})
			checkGEMM(t, moe, gemmWant{name: "shared_experts.gate_up_proj", n: 4096, k: 7168, dtype: "fp8", shard: ShardColumn})
			checkGEMM(t, moe, gemmWant{name: "shared_experts.down_proj", n: 7168, k: 2048, dtype: "fp8", shard: ShardRow})
			if moe.Op("shared_experts.down_proj.all_reduce") != nil {
				t.Error("shared experts reduce together with the routed ones (reduce_results=False)")
			}
			e := moe.MoE()
			if e.Experts != 256 || e.TopK != 8 || e.Inter != 2048 || e.SharedExperts != 1 || e.SharedInter != 2048 ||
				e.Scoring != "sigmoid" || e.Groups != 8 || e.TopKGroups != 4 || !e.CorrectionBias || e.Dtype != "fp8" {
				t.Errorf("moe %+v", e)
			}
			if g.LMHead().Dtype != "bf16" || g.LMHead().N != 129280 {
				t.Errorf("lm_head %s", g.LMHead())
			}
			// One MTP draft layer: layer index 61 is a MoE layer.
			if g.Draft == nil || g.Draft.Method != "mtp" || len(g.Draft.Layers) != 1 || g.Draft.Layers[0].Count != 1 {
				t.Fatalf("draft %+v", g.Draft)
			}
			mtp := &g.Draft.Layers[0]
			checkGEMM(t, mtp, gemmWant{name: "eh_proj", n: 7168, k: 2 * 7168, dtype: "bf16", shard: ShardReplicated})
			checkGEMM(t, mtp, gemmWant{name: "shared_head.head", n: 129280, k: 7168, dtype: "bf16", shard: ShardColumn, rowsSampl: true})
			if mtp.MoE() == nil || mtp.Attention() == nil || mtp.KVCacheElems != 576 {
				t.Errorf("MTP layer lacks MoE or attention: %s", opNames(mtp.Ops))
			}
			if !strings.Contains(g.Summary(), "3 dense + 58 moe, MLA, MTP×1") {
				t.Errorf("summary %q", g.Summary())
			}
		})
	}

	g := mustGraph(t, "deepseek-v2-lite")
	dense, moe := mustKind(t, g, "dense"), mustKind(t, g, "moe")
	if dense.Count != 1 || moe.Count != 26 || g.Draft != nil {
		t.Fatalf("V2-Lite: %d dense + %d moe, draft %v", dense.Count, moe.Count, g.Draft)
	}
	// No q_lora_rank: a column-parallel q_proj and a separate kv_a_proj_with_mqa.
	checkGEMM(t, moe, gemmWant{name: "q_proj", n: 16 * 192, k: 2048, dtype: "bf16", shard: ShardColumn})
	checkGEMM(t, moe, gemmWant{name: "kv_a_proj_with_mqa", n: 576, k: 2048, dtype: "bf16", shard: ShardReplicated})
	// Two shared experts merged into one MLP of 2 × 1408.
	checkGEMM(t, moe, gemmWant{name: "shared_experts.gate_up_proj", n: 2 * 2816, k: 2048, dtype: "bf16", shard: ShardColumn})
	if e := moe.MoE(); e.Experts != 64 || e.TopK != 6 || e.Groups != 0 || e.Scoring != "softmax" || e.CorrectionBias {
		t.Errorf("V2-Lite moe %+v", e)
	}
}

// DeepSeek-V3.2 and GLM-5: MLA with DSA's indexer, replicated on every TP
// rank and inside the attention module; its key cache adds 132 bytes per
// token per layer beside the latent.
func TestGraphDSA(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		layers, idxHeads, qlr int
		routerDtype, wqDtype  string
	}{
		{"deepseek-ai/DeepSeek-V3.2", 61, 64, 1536, "bf16", "fp8"},
		{"zai-org/GLM-5", 78, 32, 2048, "fp32", "bf16"},
		{"zai-org/GLM-5-FP8", 78, 32, 2048, "fp32", "fp8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGraph(t, tc.name)
			if g.NumLayers() != tc.layers || !strings.Contains(g.Summary(), "DSA, top-2048, MTP×1") {
				t.Fatalf("summary %q", g.Summary())
			}
			moe := mustKind(t, g, "moe")
			a := moe.Attention()
			if a.Kind != "dsa" || a.IndexTopK != 2048 || a.IndexHeads != tc.idxHeads || a.IndexHeadDim != 128 || a.IndexerCacheBytes != 132 ||
				a.KVCacheElems != 576 || a.KVCacheShard != "replicated" {
				t.Errorf("attention %+v", a)
			}
			checkGEMM(t, moe, gemmWant{name: "indexer.wq_b", n: tc.idxHeads * 128, k: tc.qlr, dtype: tc.wqDtype, shard: ShardReplicated})
			checkGEMM(t, moe, gemmWant{name: "indexer.weights_proj", n: tc.idxHeads, k: g.Hidden, dtype: "bf16", shard: ShardReplicated})
			checkGEMM(t, moe, gemmWant{name: "gate", n: 256, k: g.Hidden, dtype: tc.routerDtype, shard: ShardReplicated})
			for _, name := range []string{"indexer.wq_b", "indexer.wk", "indexer.k_norm", "indexer.weights_proj", "q_b_proj", "o_proj"} {
				if op := moe.Op(name); op == nil || !moe.InAttentionModule(op) {
					t.Errorf("%s not in the DSA attention module", name)
				}
			}
			if op := moe.Op("o_proj.all_reduce"); moe.InAttentionModule(op) {
				t.Error("o_proj.all_reduce counted in the module")
			}
			if g.Draft == nil || g.Draft.Layers[0].Attention().Kind != "dsa" {
				t.Error("the MTP draft layer lacks the indexer")
			}
		})
	}
}

// Llama 4 Scout: 36 RoPE layers attending in 8192-token chunks (with a
// weightless q/k norm) and every 4th layer a global NoPE layer (queries
// temperature-scaled, no RoPE); every layer MoE, 16 experts top-1 with
// sigmoid routing and one shared expert; RedHat's FP8 keeps attention and
// the router in bf16.
func TestGraphLlama4(t *testing.T) {
	for _, tc := range []struct{ name, expertDt string }{
		{"meta-llama/Llama-4-Scout-17B-16E-Instruct", "bf16"},
		{"RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", "fp8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustGraph(t, tc.name)
			chunked, nope := mustKind(t, g, "moe_chunked"), mustKind(t, g, "moe_nope")
			if chunked.Count != 36 || nope.Count != 12 || len(g.Stack) != 1 || g.Stack[0].Repeat != 12 ||
				!strings.Contains(g.Summary(), "36 moe_chunked + 12 moe_nope, GQA, chunk 8192") {
				t.Fatalf("summary %q, stack %+v", g.Summary(), g.Stack)
			}
			if a := chunked.Attention(); a.Window != 8192 || !a.Chunked || a.Heads != 40 || a.KVHeads != 8 {
				t.Errorf("chunked attention %+v", a)
			}
			if a := nope.Attention(); a.Window != 0 || a.Chunked {
				t.Errorf("global attention %+v", a)
			}
			for _, c := range []struct {
				k    *LayerKind
				op   string
				want bool
			}{
				{chunked, "qk_norm", true}, {chunked, "rotary_emb", true}, {chunked, "attn_temperature", false},
				{nope, "qk_norm", false}, {nope, "rotary_emb", false}, {nope, "attn_temperature", true},
			} {
				if got := c.k.Op(c.op) != nil; got != c.want {
					t.Errorf("%s has %s: %v, want %v", c.k.Name, c.op, got, c.want)
				}
			}
			checkGEMM(t, chunked, gemmWant{name: "qkv_proj", n: (40 + 16) * 128, k: 5120, dtype: "bf16", shard: ShardColumn, parts: []int{5120, 1024, 1024}})
			checkGEMM(t, chunked, gemmWant{name: "router", n: 16, k: 5120, dtype: "bf16", shard: ShardReplicated})
			checkGEMM(t, chunked, gemmWant{name: "shared_experts.gate_up_proj", n: 2 * 8192, k: 5120, dtype: tc.expertDt, shard: ShardColumn, parts: []int{8192, 8192}})
			if e := chunked.MoE(); e.Experts != 16 || e.TopK != 1 || e.Inter != 8192 || e.Scoring != "sigmoid" || e.SharedExperts != 1 || e.Dtype != tc.expertDt {
				t.Errorf("moe %+v", e)
			}
		})
	}
}

// Outside MLA no operator belongs to an attention module: GQA layers price
// their projections and RoPE on their own.
func TestNoAttentionModuleOutsideMLA(t *testing.T) {
	for _, name := range []string{"meta-llama/Llama-3.1-8B", "openai/gpt-oss-120b", "MiniMaxAI/MiniMax-M2.5"} {
		g := mustGraph(t, name)
		for i := range g.Layers {
			k := &g.Layers[i]
			for j := range k.Ops {
				if k.InAttentionModule(&k.Ops[j]) {
					t.Errorf("%s: %s %s counted in an attention module", name, k.Name, k.Ops[j].Name)
				}
			}
		}
	}
}

func TestGraphGptOss(t *testing.T) {
	g := mustGraph(t, "gpt-oss-120b")
	sl, full := mustKind(t, g, "moe_sliding"), mustKind(t, g, "moe")
	if g.NumLayers() != 36 || sl.Count != 18 || full.Count != 18 || g.Layers[0].Name != "moe_sliding" {
		t.Fatalf("gpt-oss-120b: %d layers, %d sliding, %d full", g.NumLayers(), sl.Count, full.Count)
	}
	if len(g.Stack) != 1 || g.Stack[0].Repeat != 18 || strings.Join(g.Stack[0].Kinds, ",") != "moe_sliding,moe" {
		t.Errorf("stack %+v: want alternating sliding/full from layer 0", g.Stack)
	}
	if a := sl.Attention(); a.Window != 128 || !a.Sinks || a.Kind != "gqa" || a.Heads != 64 || a.KVHeads != 8 || a.HeadDim != 64 {
		t.Errorf("sliding attention %+v", a)
	}
	if a := full.Attention(); a.Window != 0 || !a.Sinks {
		t.Errorf("full attention %+v", a)
	}
	for _, k := range []*LayerKind{sl, full} {
		checkGEMM(t, k, gemmWant{name: "qkv_proj", n: (64 + 16) * 64, k: 2880, dtype: "bf16", shard: ShardColumn, bias: true})
		checkGEMM(t, k, gemmWant{name: "o_proj", n: 2880, k: 64 * 64, dtype: "bf16", shard: ShardRow, bias: true})
		checkGEMM(t, k, gemmWant{name: "router", n: 128, k: 2880, dtype: "bf16", shard: ShardReplicated, bias: true})
		e := k.MoE()
		if e.Experts != 128 || e.TopK != 4 || e.Inter != 2880 || e.Dtype != "mxfp4" || e.Activation != "swigluoai" || !e.Bias {
			t.Errorf("moe %+v", e)
		}
	}
	g20 := mustGraph(t, "gpt-oss-20b")
	if g20.NumLayers() != 24 || mustKind(t, g20, "moe").MoE().Experts != 32 {
		t.Errorf("gpt-oss-20b: %s", g20.Summary())
	}
}

func TestGraphMiniMax(t *testing.T) {
	g := mustGraph(t, "MiniMaxAI/MiniMax-M2.5")
	k := mustKind(t, g, "moe")
	if g.NumLayers() != 62 || g.Draft != nil {
		t.Fatalf("layers %d draft %v", g.NumLayers(), g.Draft)
	}
	if ar := mustOp(t, k, "qk_norm.all_reduce"); ar.Group != GroupTP || ar.BytesPerToken != 8 {
		t.Errorf("qk_norm.all_reduce = %s", ar)
	}
	if r := mustOp(t, k, "rotary_emb"); r.BytesPerToken != float64(2*(48+8)*64*2) { // rotary_dim 64 of head_dim 128
		t.Errorf("rotary_emb = %s", r)
	}
	checkGEMM(t, k, gemmWant{name: "gate", n: 256, k: 3072, dtype: "fp32", shard: ShardReplicated})
	checkGEMM(t, k, gemmWant{name: "qkv_proj", n: (48 + 16) * 128, k: 3072, dtype: "fp8", shard: ShardColumn})
	if e := k.MoE(); e.Experts != 256 || e.TopK != 8 || e.Inter != 1536 || e.Scoring != "sigmoid" || !e.CorrectionBias || e.Dtype != "fp8" {
		t.Errorf("moe %+v", e)
	}
	if len(g.Notes) == 0 || !strings.Contains(strings.Join(g.Notes, " "), "3 MTP modules") {
		t.Errorf("notes %q should say the MTP modules are not represented", g.Notes)
	}
}

func TestRankShapesAndKV(t *testing.T) {
	g := mustGraph(t, "llama-3.1-70b")
	k := mustKind(t, g, "dense")
	qkv := mustOp(t, k, "qkv_proj")
	for _, tc := range []struct{ tp, n int }{{1, 10240}, {2, 5120}, {8, 1280}, {16, 64/16*128*1 /*q*/ + 2*128 /*one KV head each*/}} {
		if _, n, kk := qkv.RankShape(tc.tp); n != tc.n || kk != 8192 {
			t.Errorf("qkv_proj TP=%d: n=%d k=%d, want n=%d k=8192", tc.tp, n, kk, tc.n)
		}
	}
	if _, n, kk := mustOp(t, k, "o_proj").RankShape(8); n != 8192 || kk != 1024 {
		t.Errorf("o_proj TP=8: n=%d k=%d", n, kk)
	}
	if _, n, _ := g.LMHead().RankShape(8); n != 128256/8 {
		t.Errorf("lm_head TP=8: n=%d", n)
	}
	if got := g.KVCacheElemsPerToken(8); got != 80*2*1*128 {
		t.Errorf("Llama-70B KV per token at TP=8 = %d", got)
	}
	if got := g.KVCacheElemsPerToken(16); got != 80*2*1*128 { // KV heads replicated beyond 8
		t.Errorf("Llama-70B KV per token at TP=16 = %d", got)
	}
	ds := mustGraph(t, "deepseek-v3")
	if got := ds.KVCacheElemsPerToken(8); got != 61*576 {
		t.Errorf("DeepSeek-V3 KV per token at TP=8 = %d, want %d (MLA latent replicated)", got, 61*576)
	}
	if b, n, kk := mustOp(t, mustKind(t, ds, "moe"), "q_nope_absorb").RankShape(8); b != 16 || n != 512 || kk != 128 {
		t.Errorf("q_nope_absorb TP=8: batch %d n %d k %d", b, n, kk)
	}
}

// The graph's KV cache agrees with the config numbers for every model.
func TestGraphKVMatchesConfig(t *testing.T) {
	for _, m := range Models() {
		g := mustGraph(t, m.ID)
		per := 2 * m.NumKVHeads * m.HeadDim
		if m.IsMLA() {
			per = m.KVLoraRank + m.QKRopeHeadDim
		}
		if m.IsDSV4() {
			per = 0 // byte layouts per layer kind (TestDSV4KVBytes)
		}
		// Gated DeltaNet layers keep a recurrent state, not a KV cache.
		if got, attn := g.KVCacheElemsPerToken(1), m.NumLayers-m.NumLinearLayers; got != attn*per {
			t.Errorf("%s: KV elems per token %d, want %d", m.ID, got, attn*per)
		}
		if g.NumLayers() != m.NumLayers {
			t.Errorf("%s: %d layers in the graph, %d in the config", m.ID, g.NumLayers(), m.NumLayers)
		}
		moe := 0
		for _, k := range g.Layers {
			if k.MoE() != nil {
				moe += k.Count
			}
		}
		if moe != m.NumMoELayers {
			t.Errorf("%s: %d MoE layers in the graph, %d in the config", m.ID, moe, m.NumMoELayers)
		}
		if g.Vocab%64 != 0 || g.Vocab < m.VocabSize {
			t.Errorf("%s: padded vocab %d", m.ID, g.Vocab)
		}
	}
}

func TestLookupGraphTwinAndUnsupported(t *testing.T) {
	g := mustGraph(t, "llama-3.3-70b")
	if g.Model != "meta-llama/Llama-3.3-70B-Instruct" || g.NumLayers() != 80 {
		t.Errorf("Llama-3.3 twin graph: model %s, %d layers", g.Model, g.NumLayers())
	}
	// The list is empty today; the lookups are tested on a stand-in entry.
	saved := unsupportedModels
	t.Cleanup(func() { unsupportedModels = saved })
	unsupportedModels = append(saved, UnsupportedModel{ID: "example/Unparsed-Model", Aliases: []string{"unparsed-alias"},
		Short: "an unparsed quantization", Missing: "an example quantization format the catalog does not parse"})
	for _, tc := range []struct{ name, want string }{
		{"example/Unparsed-Model", "example quantization format"},
		{"unparsed-alias", "does not parse"},
		{"EXAMPLE--Unparsed-Model", "example quantization"},
	} {
		for _, lookup := range []func(string) error{
			func(n string) error { _, err := LookupModel(n); return err },
			func(n string) error { _, err := LookupGraph(n); return err },
		} {
			err := lookup(tc.name)
			var ue *UnsupportedModelError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "known but not supported") {
				t.Errorf("lookup %q: %v, want an *UnsupportedModelError mentioning %q", tc.name, err, tc.want)
			}
		}
	}
	// No unsupported id or alias shadows a catalog model.
	for _, u := range UnsupportedModels() {
		for _, a := range append([]string{u.ID}, u.Aliases...) {
			if m, err := LookupModel(a); err == nil {
				t.Errorf("unsupported %s (%q) resolves to catalog model %s", u.ID, a, m.ID)
			}
		}
		if u.Short == "" || u.Missing == "" {
			t.Errorf("%s: empty reason", u.ID)
		}
	}
}

func TestStackRuns(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"d d d m m m m", "[d]x3 [m]x4"},
		{"s f s f s f", "[s f]x3"},
		{"d s f s f m", "[d]x1 [s f]x2 [m]x1"},
		{"a b c a b c a b c", "[a b c]x3"},
		{"a b a", "[a]x1 [b]x1 [a]x1"},
		{"x", "[x]x1"},
	}
	for _, tt := range tests {
		runs := stackRuns(strings.Fields(tt.in))
		var got []string
		for _, r := range runs {
			got = append(got, "["+strings.Join(r.Kinds, " ")+"]x"+string(rune('0'+r.Repeat)))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("stackRuns(%s) = %s, want %s", tt.in, strings.Join(got, " "), tt.want)
		}
	}
}

func TestGraphEncodingRoundTrip(t *testing.T) {
	files, err := DeriveGraphs()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		g, err := DecodeGraph(f.Path, f.Derived)
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		again, err := EncodeGraph(g)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, f.Derived) {
			t.Errorf("%s: decode+encode changes the bytes", f.Path)
		}
	}
}

func TestDecodeGraphStrict(t *testing.T) {
	valid, err := EncodeGraph(mustGraph(t, "qwen3-0.6b"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(valid)
	tests := []struct {
		name, data, want string
	}{
		{"unknown key", strings.Replace(s, `"hidden":`, `"hiden": 1, "hidden":`, 1), "unknown field"},
		{"version", strings.Replace(s, `"version": 1`, `"version": 9`, 1), "version 9"},
		{"count", strings.Replace(s, `"count": 28`, `"count": 27`, 1), "stack holds 28"},
		{"stack kind", strings.Replace(s, `"kinds":["dense"]`, `"kinds":["moe"]`, 1), `"moe"`},
		{"trailing", s + "{}", "trailing data"},
		{"not json", "{", "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeGraph("g.json", []byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "g.json") {
				t.Errorf("err = %v, want one naming g.json and %q", err, tt.want)
			}
		})
	}
}

func FuzzDecodeGraph(f *testing.F) {
	if files, err := DeriveGraphs(); err == nil && len(files) > 0 {
		f.Add(files[0].Derived)
	}
	f.Add([]byte(`{"version":1,"layers":[{"name":"a","count":1}],"stack":[{"kinds":["a"],"repeat":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := DecodeGraph("fuzz.json", data)
		if err != nil {
			return
		}
		g.Summary()
		g.KVCacheElemsPerToken(8)
		if _, err := EncodeGraph(g); err != nil {
			t.Fatal(err)
		}
	})
}

func TestDeriveGraphErrors(t *testing.T) {
	m, err := ParseConfig("x.json", cfgJSON(""))
	if err != nil {
		t.Fatal(err)
	}
	m.ID = "test/llama"
	if _, err := DeriveGraph(m); err != nil {
		t.Fatalf("small Llama: %v", err)
	}
	m.Architecture = "FalconForCausalLM"
	if _, err := DeriveGraph(m); err == nil || !strings.Contains(err.Error(), `"FalconForCausalLM"`) {
		t.Errorf("unknown architecture: %v", err)
	}
	moe, err := ParseConfig("x.json", cfgJSON(`"num_local_experts": 4, "num_experts_per_tok": 2`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DeriveGraph(moe); err == nil || !strings.Contains(err.Error(), "experts") {
		t.Errorf("Llama architecture with experts: %v", err)
	}
}

func TestParseGraphKeys(t *testing.T) {
	m, err := ParseConfig("x.json", cfgJSON(`"layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"], "sliding_window": 64, "rotary_dim": 16, "attention_bias": true`))
	if err != nil {
		t.Fatal(err)
	}
	if !equalBools(m.SlidingLayers, []bool{true, false, true, false}) || m.RotaryDim != 16 || !m.AttentionBias {
		t.Errorf("sliding %v rotary %d bias %v", m.SlidingLayers, m.RotaryDim, m.AttentionBias)
	}
	m, err = ParseConfig("x.json", cfgJSON(`"n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 64, "first_k_dense_replace": 1,
		"n_group": 4, "topk_group": 2, "topk_method": "noaux_tc", "scoring_func": "sigmoid", "num_nextn_predict_layers": 1`))
	if err != nil {
		t.Fatal(err)
	}
	if !equalBools(m.MoELayers, []bool{false, true, true, true}) || m.NumExpertGroups != 4 || m.TopKGroups != 2 || !m.RoutingBias ||
		m.ScoringFunc != "sigmoid" || m.NumNextNLayers != 1 {
		t.Errorf("moe layers %v groups %d/%d bias %v scoring %s nextn %d", m.MoELayers, m.NumExpertGroups, m.TopKGroups, m.RoutingBias, m.ScoringFunc, m.NumNextNLayers)
	}
	for _, tc := range []struct{ extra, want string }{
		{`"rotary_dim": 64`, `"rotary_dim"`},
		{`"num_local_experts": 4, "num_experts_per_tok": 2, "scoring_func": "relu"`, `"scoring_func"`},
		{`"num_local_experts": 6, "num_experts_per_tok": 2, "n_group": 4, "topk_group": 2`, `"n_group"`},
		{`"num_local_experts": 8, "num_experts_per_tok": 2, "n_group": 4, "topk_group": 5`, `"topk_group"`},
	} {
		if _, err := ParseConfig("x.json", cfgJSON(tc.extra)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %s", tc.extra, err, tc.want)
		}
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
