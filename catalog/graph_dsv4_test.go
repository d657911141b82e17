package catalog

import (
	"math"
	"strings"
	"testing"
)

// TestDSV4Params checks the DeepSeek-V4 parameter counts against the
// published sizes: V4-Flash ≈284 B total / 13 B active, V4-Pro ≈1.6 T /
// 49 B active (sglang-jax#1678; huggingface/blog#3363).
func TestDSV4Params(t *testing.T) {
	for _, c := range []struct {
		id                  string
		total, active, tolT float64 // billions; relative tolerance
	}{
		{"deepseek-ai/DeepSeek-V4-Flash", 284, 13, 0.01},
		{"deepseek-ai/DeepSeek-V4-Pro", 1600, 49, 0.02},
	} {
		m, err := LookupModel(c.id)
		if err != nil {
			t.Fatal(err)
		}
		total, active := m.DSV4Params()
		t.Logf("%s: %.2f B total, %.2f B active", c.id, total/1e9, active/1e9)
		if math.Abs(total/1e9-c.total)/c.total > c.tolT {
			t.Errorf("%s: %.2f B total, want %.0f B ± %.0f%%", c.id, total/1e9, c.total, 100*c.tolT)
		}
		if math.Abs(active/1e9-c.active)/c.active > 0.08 {
			t.Errorf("%s: %.2f B active, want %.0f B ± 8%%", c.id, active/1e9, c.active)
		}
	}
}

// V4-Flash's stack as vLLM builds it: two sliding-window-only and one CSA
// layer routed by hash, then HCA and CSA alternating; the module's
// operators belong to the attention module, the mHC, norms, MoE and
// collectives do not; the MTP draft is one sliding-window-only layer.
func TestDSV4Graph(t *testing.T) {
	g, err := LookupGraph("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"swa_hash": 2, "csa_hash": 1, "hca": 20, "csa": 20}
	for _, k := range g.Layers {
		if want[k.Name] != k.Count {
			t.Errorf("kind %s × %d, want × %d", k.Name, k.Count, want[k.Name])
		}
		if m := k.MoE(); m == nil || m.Hash != strings.HasSuffix(k.Name, "_hash") || m.Dtype != "mxfp4" {
			t.Errorf("kind %s: MoE %+v", k.Name, m)
		}
	}
	csa := g.Kind("csa")
	a := csa.Attention()
	if a.Kind != AttnDSV4CSA || a.CompressRatio != 4 || a.EntryBytes != 584 || a.IndexerCacheBytes != 132 || a.Window != 128 ||
		a.StateTokens != 8 || a.StateBytes != 8192 || a.IndexerStateTokens != 8 || a.IndexerStateBytes != 2048 {
		t.Errorf("CSA attention %+v", a)
	}
	for name, in := range map[string]bool{"fused_wqa_wkv": true, "wq_b": true, "indexer.wq_b": true, "compressor.compress": true,
		"wo_a": true, "wo_b": true, "wo_b.all_reduce": false, "hc_attn_post_pre": false, "gate": false, "attn_norm": false} {
		if got := csa.InAttentionModule(csa.Op(name)); got != in {
			t.Errorf("InAttentionModule(%s) = %v, want %v", name, got, in)
		}
	}
	if b, n, k := csa.Op("wo_a").RankShape(4); b != 2 || n != 1024 || k != 4096 {
		t.Errorf("wo_a at TP4: batch %d n %d k %d, want 2 groups of 4096 → 1024", b, n, k)
	}
	if g.Draft == nil || g.Draft.Method != "mtp" || len(g.Draft.Layers) != 1 || g.Draft.Layers[0].Attention().Kind != AttnDSV4SWA {
		t.Errorf("draft %+v", g.Draft)
	}
}
