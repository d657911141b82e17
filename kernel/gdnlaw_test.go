package kernel

import (
	"math"
	"testing"

	"blis/catalog"
)

// GDN traffic by hand for Qwen3.5-397B at TP 8 (2 key and 8 value heads
// of 128 per rank, conv width 4, bf16 activations, fp32 state):
//   - conv: channels 2·2·128 + 8·128 = 1536; 10 tokens of 2 sequences move
//     2·10·1536·2 + 2·2·3·1536·2 = 61440 + 36864 bytes;
//   - rule: 10 tokens × (2·256 + 2·1024 + 16)·2 = 51520 bytes plus
//     2·2·(8·128·128·4) = 2097152 state bytes; the chunked rule adds
//     10·8·(4·128·128 + 2·64·256) = 7864320 FLOPs.
func TestGDNTrafficByHand(t *testing.T) {
	sh := GDNShape{KeyHeads: 2, ValueHeads: 8, KeyHeadDim: 128, ValueDim: 128, ConvKernel: 4, ActBytes: 2, SSMStateByte: 4}
	for _, tc := range []struct {
		kernel       string
		bytes, flops float64
	}{
		{catalog.GDNConvPrefill, 61440 + 36864, 0},
		{catalog.GDNConvDecode, 61440 + 36864, 0},
		{catalog.GDNRuleDecode, 51520 + 2097152, 0},
		{catalog.GDNRulePrefill, 51520 + 2097152, 7864320},
	} {
		b, f := GDNTraffic(tc.kernel, sh, 2, 10)
		if b != tc.bytes || f != tc.flops {
			t.Errorf("%s: %v bytes %v FLOPs, want %v and %v", tc.kernel, b, f, tc.bytes, tc.flops)
		}
	}
	l := &catalog.GDNLaw{Kernel: catalog.GDNRulePrefill, MemBW: 4e12, PeakFLOPS: 1e15, T0: 1e-5, BWEff: 0.5, FLOPEff: 0.5, PerSeq: 1e-6, PerChunk: 2e-6}
	// 10 tokens over 2 rows: one chunk each on the mean.
	want := 1e-5 + 2e-6 + (51520+2097152)/(0.5*4e12) + 7864320/(0.5*1e15) + 2e-6
	if got := GDNTime(l, sh, 2, 10); math.Abs(got/want-1) > 1e-12 {
		t.Errorf("GDNTime = %v, want %v", got, want)
	}
}

// A Qwen3.5 decode step prices its GDN kernels from the fitted laws, and
// more decode rows cost more (each reads and writes its state).
func TestQwen35StepPricesGDN(t *testing.T) {
	d := deploy(t, "qwen3.5-397b", "h200", 8)
	d.BlockSize = HybridBlockSize(d)
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	ex, ok := p.(Explainer)
	if !ok {
		t.Fatal("fitted pricer does not explain")
	}
	gdn := func(rows int) float64 {
		b := Batch{NumDecode: rows, DecodeTokens: rows, DecodeContext: int64(rows) * 1024, Sampled: rows}
		s := 0.0
		for _, o := range ex.Explain(&b) {
			if o.Name == "gated_delta_rule" || o.Name == "conv1d" {
				s += o.Time.Seconds()
			}
		}
		return s
	}
	if a, b := gdn(8), gdn(256); !(a > 0 && b > 4*a) {
		t.Errorf("GDN decode time %v s at 8 rows, %v s at 256", a, b)
	}
}
