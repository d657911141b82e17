package kernel

import "testing"

// Qwen3.5-397B at TP 8 on H200, by hand: one full-attention layer's page
// per token is 2 (K, V) × 1 KV head (2 heads replicated to one per rank) ×
// 256 × 2 B = 1024 B; one GDN layer's state is 9216 B conv + 524288 B fp32
// ssm = 533504 B; so the block size is 16 × cdiv(533504, 16 × 1024) = 528
// tokens (a 540672-byte page, the state padded by 1.3 %). 15 attention and
// 45 GDN layers make groups of 15: one attention group and three mamba
// groups, each block 15 pages.
func TestQwen35HybridLayout(t *testing.T) {
	for _, tc := range []struct {
		chip       string
		tp, bs     int
		attn1, st  float64
		groupBlock float64
	}{
		{"h200", 8, 528, 1024, 533504, 528 * 1024 * 15},
		{"h200", 16, 272, 1024, 4608 + 262144, 272 * 1024 * 15},
		{"b200", 8, 544, 1024, 533504, 544 * 1024 * 15}, // align 32 at head_dim 256 on Blackwell
	} {
		d := deploy(t, "qwen3.5-397b", tc.chip, tc.tp)
		d.BlockSize = 16
		if a, s := mambaPages(d); a != tc.attn1 || s != tc.st {
			t.Errorf("%s TP%d: pages %v/%v, want %v/%v", tc.chip, tc.tp, a, s, tc.attn1, tc.st)
		}
		d.BlockSize = HybridBlockSize(d)
		if d.BlockSize != tc.bs {
			t.Fatalf("%s TP%d: block size %d, want %d", tc.chip, tc.tp, d.BlockSize, tc.bs)
		}
		kv := mambaKVLayout(d, newShape(d))
		l := kv.layout
		if l.Groups != 4 || l.GroupSize != 15 || l.Mamba != 0b0111 || kv.blockBytes != tc.groupBlock {
			t.Errorf("%s TP%d: layout %+v, block %v bytes", tc.chip, tc.tp, l, kv.blockBytes)
		}
		if got := l.RequestBlocks(1000); got != (1000+tc.bs-1)/tc.bs+3 {
			t.Errorf("request blocks %d", got)
		}
		p, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		if p.KVBytesPerToken != 15*1024 || p.KVTokens != p.NumBlocks/4*tc.bs {
			t.Errorf("%s TP%d: %v KV bytes per token, %d tokens of %d blocks", tc.chip, tc.tp, p.KVBytesPerToken, p.KVTokens, p.NumBlocks)
		}
	}
	// A larger requested block size is kept.
	d := deploy(t, "qwen3.5-397b", "h200", 8)
	d.BlockSize = 1024
	if got := HybridBlockSize(d); got != 1024 {
		t.Errorf("block size %d, want the requested 1024", got)
	}
	d.TP = 32
	if err := Validate(d); err == nil {
		t.Error("TP 32 does not divide 16 key heads: want an error")
	}
}

// The roofline writes each new token's KV into the full-attention layers
// only: Gated DeltaNet layers keep no per-token KV (their state is
// bytesStatePerRow). Qwen3.5-397B at TP 8 on H200: 15 attention layers ×
// 1024 B.
func TestQwen35RooflineKVWrite(t *testing.T) {
	d := deploy(t, "qwen3.5-397b", "h200", 8)
	d.BlockSize = HybridBlockSize(d)
	p, err := NewRoofline(d)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := p.(*roofline)
	if !ok {
		t.Fatalf("pricer %T, want *roofline", p)
	}
	if r.bytesKVWrite != 15*1024 {
		t.Errorf("KV bytes written per token %v, want %v (15 full-attention layers × 1024 B)", r.bytesKVWrite, 15*1024)
	}
	if r.bytesStatePerRow != 2*45*533504 {
		t.Errorf("state bytes per row %v, want %v", r.bytesStatePerRow, 2*45*533504)
	}
}
