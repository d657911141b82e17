package catalog

import (
	"slices"
	"strings"
	"testing"
)

func TestDeriveEagleDraft(t *testing.T) {
	for _, tc := range []struct {
		model, method string
		vocab         int
		// Expected shapes: qkv_proj's K, the LM head's N, gate_up_proj's N,
		// Combine's fc K (0: none), the layer's own fc K (0: none).
		qkvK, headN, gateUpN, combineK, fcK int
		want                                string // error substring; "" = ok
	}{
		// yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: hidden 4096, intermediate
		// 14336, 32/8 heads, draft_vocab_size 32000.
		{"meta-llama/Llama-3.1-8B-Instruct", "eagle3", 32000, 8192, 32000, 2 * 14336, 3 * 4096, 0, ""},
		{"meta-llama/Llama-3.1-8B-Instruct", "eagle3", 0, 8192, 128256, 2 * 14336, 3 * 4096, 0, ""},
		{"meta-llama/Llama-3.1-8B-Instruct", "eagle", 0, 4096, 128256, 2 * 14336, 0, 2 * 4096, ""},
		// gpt-oss-120b has no dense layer: top_k 4 × 2880.
		{"openai/gpt-oss-120b", "eagle3", 32000, 2 * 2880, 32000, 2 * 4 * 2880, 3 * 2880, 0, ""},
		{"deepseek-ai/DeepSeek-V3", "eagle3", 32000, 0, 0, 0, 0, 0, "use method mtp"},
		{"meta-llama/Llama-3.1-8B-Instruct", "medusa", 0, 0, 0, 0, 0, 0, "allowed eagle, eagle3"},
		{"meta-llama/Llama-3.1-8B-Instruct", "eagle3", -1, 0, 0, 0, 0, 0, "must be ≥ 0"},
	} {
		g, err := LookupGraph(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		dr, err := DeriveEagleDraft(g, tc.method, tc.vocab)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: error %v, want %q", tc.model, tc.method, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v", tc.model, tc.method, err)
		}
		if len(dr.Layers) != 1 || dr.Layers[0].Count != 1 || dr.Method != tc.method {
			t.Fatalf("%s %s: want one layer, got %+v", tc.model, tc.method, dr)
		}
		k := &dr.Layers[0]
		got := func(name string, field func(*Op) int) int {
			if op := k.Op(name); op != nil {
				return field(op)
			}
			return 0
		}
		n := func(o *Op) int { return o.N }
		kk := func(o *Op) int { return o.K }
		if q := got("qkv_proj", kk); q != tc.qkvK {
			t.Errorf("%s %s: qkv_proj K %d, want %d", tc.model, tc.method, q, tc.qkvK)
		}
		if h := got("lm_head", n); h != tc.headN {
			t.Errorf("%s %s: lm_head N %d, want %d", tc.model, tc.method, h, tc.headN)
		}
		if gu := got("gate_up_proj", n); gu != tc.gateUpN {
			t.Errorf("%s %s: gate_up_proj N %d, want %d", tc.model, tc.method, gu, tc.gateUpN)
		}
		if fc := got("fc", kk); fc != tc.fcK {
			t.Errorf("%s %s: layer fc K %d, want %d", tc.model, tc.method, fc, tc.fcK)
		}
		ck := 0
		if len(dr.Combine) == 1 {
			ck = dr.Combine[0].K
		}
		if ck != tc.combineK {
			t.Errorf("%s %s: combine fc K %d, want %d", tc.model, tc.method, ck, tc.combineK)
		}
		a := k.Attention()
		ta := g.Layers[0].Attention()
		if a == nil || a.Heads != ta.Heads || a.KVHeads != ta.KVHeads || a.HeadDim != ta.HeadDim || a.Window != 0 {
			t.Errorf("%s %s: attention %+v does not match the target's %+v at full context", tc.model, tc.method, a, ta)
		}
		if k.KVCacheElems != 2*ta.KVHeads*ta.HeadDim {
			t.Errorf("%s %s: kv cache elems %d", tc.model, tc.method, k.KVCacheElems)
		}
	}
}

func TestMTPModels(t *testing.T) {
	got := MTPModels()
	for _, want := range []string{"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1"} {
		if !slices.Contains(got, want) {
			t.Errorf("MTPModels() = %v lacks %s", got, want)
		}
	}
	if slices.Contains(got, "meta-llama/Llama-3.1-8B-Instruct") {
		t.Errorf("MTPModels() = %v lists a model without MTP layers", got)
	}
	if !slices.IsSorted(got) {
		t.Errorf("MTPModels() = %v is not sorted", got)
	}
}

func TestDeriveDSparkDraft(t *testing.T) {
	for _, tc := range []struct {
		model string
		// Expected: the stage's first and last op, the context K/V
		// projection's N, the head's LM-head N; want an error substring.
		first, last string
		kvN, headN  int
		want        string
	}{
		// DeepSeek-R1's MTP layer: MLA (kv_lora 512 + rope 64), MoE.
		{"deepseek-ai/DeepSeek-R1", "input_layernorm", "experts.all_reduce", 576, 129280, ""},
		{"deepseek-ai/DeepSeek-V3.2", "input_layernorm", "", 576, 129280, ""},
		// DeepSeek-V4's MTP layer: a sliding-window layer with mHC; the
		// single 512-wide KV head comes out of fused_wqa_wkv.
		{"deepseek-ai/DeepSeek-V4.1-Flash", "hc_attn_post_pre", "experts.all_reduce", 512, 129280, ""},
		{"meta-llama/Llama-3.1-8B-Instruct", "", "", 0, 0, "no MTP layers to size a DSpark stack on; models that have: [Qwen/Qwen3.5-397B-A17B deepseek-ai/DeepSeek-R1 "},
	} {
		g, err := LookupGraph(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		dr, err := DeriveDSparkDraft(g)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: error %v, want %q", tc.model, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		st := dr.Stage
		if st.Count != DSparkStages || st.Ops[0].Name != tc.first || (tc.last != "" && st.Ops[len(st.Ops)-1].Name != tc.last) {
			t.Errorf("%s: stage ×%d from %q to %q", tc.model, st.Count, st.Ops[0].Name, st.Ops[len(st.Ops)-1].Name)
		}
		for _, name := range []string{"eh_proj", "e_proj", "h_proj", "eh_add", "hc_post", "hc_head", "enorm", "hnorm", "embed_tokens", "shared_head.head", "residual_add"} {
			if st.Op(name) != nil {
				t.Errorf("%s: stage carries the MTP layer's %s", tc.model, name)
			}
		}
		if st.Attention() == nil || st.MoE() == nil || st.KVCacheElems != g.Draft.Layers[0].KVCacheElems {
			t.Errorf("%s: stage lacks attention or MoE, or its KV (%d)", tc.model, st.KVCacheElems)
		}
		if dr.Embed[0].Kind != OpEmbedding {
			t.Errorf("%s: embed %+v", tc.model, dr.Embed)
		}
		head := findOp(dr.Head, "shared_head.head")
		if head == nil || head.N != tc.headN || head.Rows != RowsSampled {
			t.Errorf("%s: head %+v", tc.model, dr.Head)
		}
		mp, kv := findOp(dr.Context, "main_proj"), findOp(dr.Context, "context_kv_proj")
		if mp == nil || mp.K != DSparkTargetLayers*g.Hidden || mp.N != g.Hidden || kv == nil || kv.N != tc.kvN || kv.K != g.Hidden {
			t.Errorf("%s: context %+v", tc.model, dr.Context)
		}
		n := 0
		for _, op := range dr.Context {
			if op.Name == "context_kv_proj" {
				n++
			}
		}
		if n != DSparkStages {
			t.Errorf("%s: %d context K/V projections, want one per stage (%d)", tc.model, n, DSparkStages)
		}
		// Each stage stores every context token's K/V entry: MLA's latent
		// in the model dtype, DeepSeek-V4's 584-byte fp8_ds_mla entry.
		wantWrite := float64(st.KVCacheElems) * 2
		if a := st.Attention(); a != nil && a.EntryBytes > 0 {
			wantWrite = float64(a.EntryBytes)
		}
		if w := findOp(dr.Context, "context_kv_write"); w == nil || w.BytesPerToken != wantWrite || w.BytesPerToken <= 0 {
			t.Errorf("%s: context write %+v, want %g bytes a token", tc.model, w, wantWrite)
		}
		mb := findOp(dr.Markov, "markov_bias")
		if mb == nil || mb.K != DSparkMarkovRank || mb.N != g.Vocab || mb.Rows != RowsSampled || mb.Shard != ShardColumn {
			t.Errorf("%s: markov %+v", tc.model, dr.Markov)
		}
	}
	if _, err := DeriveDSparkDraft(nil); err == nil {
		t.Error("DeriveDSparkDraft(nil): no error")
	}
}
