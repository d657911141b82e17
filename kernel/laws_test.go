package kernel

import (
	"math"
	"testing"

	"blis/catalog"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(math.Abs(want), 1e-30) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

// A hand law: 1 PFLOP/s at full efficiency, 1 TB/s at full bandwidth.
func handGEMM() catalog.GEMMLaw {
	return catalog.GEMMLaw{PeakFLOPS: 1e15, MemBW: 1e12, WeightBytes: 2, ActBytes: 2, EffMax: 1, BWEff: 1}
}

func TestGEMMPureBandwidth(t *testing.T) {
	l := handGEMM()
	l.PeakFLOPS = 1e30 // compute free
	// m = 1, n = k = 4096: bytes = n·k·2 + m·k·2 + m·n·2.
	want := (4096*4096*2.0 + 4096*2 + 4096*2) / 1e12
	near(t, "bandwidth-bound GEMM", GEMMTime(&l, 1, 4096, 4096), want)
	l.BWEff, l.T0 = 0.5, 3e-6
	near(t, "at half bandwidth plus t0", GEMMTime(&l, 1, 4096, 4096), 2*want+3e-6)
}

func TestGEMMPureCompute(t *testing.T) {
	l := handGEMM()
	l.MemBW = 1e30 // memory free
	m, n, k := 8192.0, 8192.0, 8192.0
	near(t, "compute-bound GEMM", GEMMTime(&l, m, n, k), 2*m*n*k/1e15)
	l.EffMax = 0.8
	near(t, "at EffMax 0.8", GEMMTime(&l, m, n, k), 2*m*n*k/(1e15*0.8))
}

func TestGEMMRampHalfAtOutHalf(t *testing.T) {
	l := handGEMM()
	l.MemBW, l.EffMax = 1e30, 0.8
	m, n, k := 64.0, 1024.0, 4096.0
	l.OutHalf = m * n // the reached efficiency is EffMax/2 at m·n = OutHalf
	near(t, "GEMM at the ramp's half point", GEMMTime(&l, m, n, k), 2*m*n*k/(1e15*0.8/2))
	// Far above the half point the ramp vanishes.
	l.OutHalf = 1e-9
	near(t, "GEMM far above the half point", GEMMTime(&l, m, n, k), 2*m*n*k/(1e15*0.8))
}

func TestGEMMQuadratureAndFloors(t *testing.T) {
	l := handGEMM()
	m, n, k := 1000.0, 1000.0, 1000.0
	c := 2 * m * n * k / 1e15
	l.MemBW = (n*k*2 + m*k*2 + m*n*2) / c // memory time equals compute time
	near(t, "balanced GEMM", GEMMTime(&l, m, n, k), math.Sqrt2*c)
	l.QuantPerRow = 1e-9
	near(t, "with a quantization cost per row", GEMMTime(&l, m, n, k), math.Sqrt2*c+m*1e-9)
	l.QuantBWEff = 1
	near(t, "with quantization bytes", GEMMTime(&l, m, n, k), math.Sqrt2*c+m*1e-9+m*k*4/l.MemBW)
	l.HostFloor = 1
	near(t, "host floor", GEMMTime(&l, m, n, k), 1)
	near(t, "device time ignores the host floor", GEMMDeviceTime(&l, m, n, k), math.Sqrt2*c+m*1e-9+m*k*4/l.MemBW)
	if GEMMDeviceTime(&l, 0, n, k) != 0 {
		t.Error("an empty GEMM costs time")
	}
}

func TestAttnDecodeHand(t *testing.T) {
	l := catalog.AttnDecodeLaw{KVBytes: 2, MemBW: 1e12, BWEff: 0.5, T0: 1e-5, PerSeqHead: 2e-8}
	a := AttnShape{Heads: 32, KVHeads: 8, HeadDim: 128}
	// 4 sequences reading 1000 tokens each: K and V, 8 heads × 128 × 2 bytes.
	bytes := 4000 * 2 * 8 * 128 * 2.0
	near(t, "decode attention", AttnDecodeTime(&l, a, 4, 4000), 1e-5+bytes/(1e12*0.5)+2e-8*4*8)
	if AttnDecodeTime(&l, a, 0, 0) != 0 {
		t.Error("an empty decode costs time")
	}
}

func TestAttnPrefillHand(t *testing.T) {
	l := catalog.AttnPrefillLaw{KVBytes: 2, PeakFLOPS: 1e15, MemBW: 1e30, EffMax: 0.5, BWEff: 1}
	a := AttnShape{Heads: 32, KVHeads: 8, HeadDim: 128}
	pairs := CausalPairs(1024, 0, 0)
	near(t, "pairs", pairs, 1024*1025/2)
	near(t, "compute-bound prefill", AttnPrefillTime(&l, a, 1024, pairs, 0), 4*32*128*pairs/(1e15*0.5))
	l.WorkHalf = 1024 * 32
	near(t, "prefill at the ramp's half point", AttnPrefillTime(&l, a, 1024, pairs, 0), 4*32*128*pairs/(1e15*0.25))
	l.WorkHalf, l.SoftmaxDim = 0, 128
	near(t, "softmax cost of one head dim", AttnPrefillTime(&l, a, 1024, pairs, 0), 2*4*32*128*pairs/(1e15*0.5))
	// Bandwidth-bound: bytes of q, k, v, o plus a cached prefix.
	l = catalog.AttnPrefillLaw{KVBytes: 1, PeakFLOPS: 1e30, MemBW: 1e12, EffMax: 1, BWEff: 1}
	want := (10*(2*32+2*8)*128*2.0 + 500*2*8*128*1) / 1e12
	near(t, "bandwidth-bound prefill", AttnPrefillTime(&l, a, 10, CausalPairs(10, 500, 0), 500), want)
}

func TestCausalPairs(t *testing.T) {
	for _, c := range []struct{ s, cached, window, want float64 }{
		{4, 0, 0, 10},        // 1+2+3+4
		{4, 0, 2, 7},         // 1+2+2+2
		{2, 3, 0, 9},         // 4+5
		{2, 3, 4, 8},         // 4+4
		{3, 10, 4, 12},       // 4+4+4
		{1, 0, 0, 1},         // decode-like
		{0, 5, 0, 0},         // nothing new
		{4, 0, 1000, 10},     // window wider than the sequence
		{16384, 0, 128, 0.0}, // computed below
	} {
		want := c.want
		if c.s == 16384 {
			want = 0
			for i := 1.0; i <= c.s; i++ {
				want += math.Min(c.cached+i, c.window)
			}
		}
		near(t, "CausalPairs", CausalPairs(c.s, c.cached, c.window), want)
	}
}

// DeepSeek-V3's MLA on one rank with all 128 heads.
var dsv3 = MLAShape{Hidden: 7168, Heads: 128, QLoraRank: 1536, KVLoraRank: 512, RopeDim: 64, NopeDim: 128, VDim: 128}

func TestMLAParams(t *testing.T) {
	want := 7168*1536 + 1536*128*192 + 7168*576 + 512*128*256 + 128*128*7168.0
	near(t, "DeepSeek-V3 MLA projection weights", dsv3.Params(), want)
	s := dsv3
	s.QLoraRank = 0
	near(t, "without q_lora", s.Params(), 7168*128*192+7168*576+512*128*256+128*128*7168.0)
}

func TestMLABandwidthBound(t *testing.T) {
	l := catalog.MLALaw{PeakFLOPS: 1e30, MemBW: 1e12, WeightBytes: 1, KVBytes: 2, EffMax: 1, BWEff: 1}
	want := (dsv3.Params() + 1000*576*2 + 1*7168*4) / 1e12
	near(t, "MLA decode, one sequence", MLADecodeTime(&l, dsv3, 1, 1000), want)
}

func TestMoEExpectedDistinct(t *testing.T) {
	near(t, "one token", ExpectedDistinctExperts(1, 8, 256, 256), 8)
	near(t, "one token, EP 8", ExpectedDistinctExperts(1, 8, 256, 32), 1)
	if got := ExpectedDistinctExperts(1e6, 8, 256, 256); math.Abs(got-256) > 1e-9 {
		t.Errorf("a huge batch touches %g of 256 experts", got)
	}
	near(t, "top-k = all", ExpectedDistinctExperts(3, 8, 8, 8), 8)
}

func TestMoEBandwidthBoundOneToken(t *testing.T) {
	l := catalog.MoELaw{PeakFLOPS: 1e30, MemBW: 1e12, WeightBytes: 2, EffMax: 1, BWEff: 1}
	s := MoEShape{Tokens: 1, Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1}
	w := 3 * 4096 * 1536.0
	want := (8*w*2 + 4096*4 + 8*(4096+2*1536)*2) / 1e12
	near(t, "one token reads its 8 experts", MoETime(&l, s), want)
}

func TestCommTime(t *testing.T) {
	l := catalog.CommLaw{Points: []catalog.CommPoint{{GPUs: 2, Alpha: 5e-6, BW: 1e11}, {GPUs: 4, Alpha: 8e-6, BW: 2e11}, {GPUs: 8, Alpha: 1e-5, BW: 3e11}}}
	near(t, "2 GPUs", CommTime(&l, 2, 1e6), 5e-6+1e6/1e11)
	near(t, "8 GPUs", CommTime(&l, 8, 1e6), 1e-5+1e6/3e11)
	near(t, "6 GPUs takes 8 (nearest, larger on a tie)", CommTime(&l, 6, 1e6), 1e-5+1e6/3e11)
	near(t, "16 GPUs takes 8", CommTime(&l, 16, 0), 1e-5)
	if CommTime(&l, 1, 1e9) != 0 {
		t.Error("one GPU communicates")
	}
	// With measured times: exact at a measured size, log-log between two,
	// the smallest's time below, the law's bandwidth beyond the largest.
	l.Points[0].Measured = []catalog.CommSample{{Bytes: 1e3, Seconds: 4e-6}, {Bytes: 1e5, Seconds: 1.6e-5}, {Bytes: 1e7, Seconds: 1e-4}}
	near(t, "measured", CommTime(&l, 2, 1e5), 1.6e-5)
	near(t, "between, log-log", CommTime(&l, 2, 1e4), 8e-6)
	near(t, "below the smallest", CommTime(&l, 2, 10), 4e-6)
	near(t, "beyond the largest", CommTime(&l, 2, 2e7), 1e-4+1e7/1e11)
}

// The prepared curve the pricer uses per step prices every collective of
// the embedded laws as CommTime does, at every group size and message size.
func TestCommCurveMatchesCommTime(t *testing.T) {
	for _, chip := range catalog.CoefficientChips() {
		co, err := catalog.LookupCoefficients(chip)
		if err != nil {
			t.Fatal(err)
		}
		for i := range co.Comm {
			l := &co.Comm[i]
			for _, gpus := range []int{1, 2, 3, 4, 6, 8, 16} {
				c := newCommCurve(l, gpus)
				for b := 0.5; b < 1e10; b *= 1.7 {
					want, got := CommTime(l, gpus, b), c.at(b, math.Log(b))
					if math.Abs(got-want) > 1e-12*want+1e-18 {
						t.Fatalf("%s %s/%s %d GPUs %g B: curve %g, CommTime %g", chip, l.Op, l.Impl, gpus, b, got, want)
					}
				}
			}
		}
	}
	affine := catalog.CommLaw{Points: []catalog.CommPoint{{GPUs: 2, Alpha: 5e-6, BW: 1e11}}}
	c := newCommCurve(&affine, 2)
	near(t, "affine curve", c.at(1e6, math.Log(1e6)), 5e-6+1e6/1e11)
	if c := newCommCurve(&affine, 1); c.at(1e6, math.Log(1e6)) != 0 {
		t.Error("one GPU communicates")
	}
	// One measured sample, and a NaN size: the sample's time, no panic.
	one := catalog.CommLaw{Points: []catalog.CommPoint{{GPUs: 2, BW: 1e11, Measured: []catalog.CommSample{{Bytes: 1e3, Seconds: 4e-6}}}}}
	c1 := newCommCurve(&one, 2)
	near(t, "one sample, NaN size", c1.at(math.NaN(), math.NaN()), 4e-6)
	near(t, "one sample, beyond", c1.at(2e3, math.Log(2e3)), 4e-6+1e3/1e11)
}

// The embedded coefficients' laws are monotone: more work never costs less.
func TestLawsMonotone(t *testing.T) {
	for _, chip := range catalog.CoefficientChips() {
		co, err := catalog.LookupCoefficients(chip)
		if err != nil {
			t.Fatal(err)
		}
		grid := []float64{1, 2, 7, 16, 64, 129, 512, 2048, 8192, 32768}
		for i := range co.GEMM {
			l := &co.GEMM[i]
			for _, n := range grid {
				for _, k := range grid {
					prev := 0.0
					for _, m := range grid {
						v := GEMMTime(l, m, n, k)
						if v < prev || !(v > 0) || math.IsInf(v, 0) {
							t.Fatalf("%s gemm %s: t(m=%g,n=%g,k=%g) = %g after %g", chip, l.Dtype, m, n, k, v, prev)
						}
						prev = v
					}
				}
			}
		}
		a := AttnShape{Heads: 8, KVHeads: 1, HeadDim: 128}
		for i := range co.AttnDecode {
			l := &co.AttnDecode[i]
			for _, b := range grid {
				prev := 0.0
				for _, ctx := range grid {
					v := AttnDecodeTime(l, a, b, b*ctx)
					if v < prev {
						t.Fatalf("%s decode %s: not monotone in context", chip, l.KVDtype)
					}
					prev = v
				}
			}
		}
		for i := range co.AttnPrefill {
			l := &co.AttnPrefill[i]
			for _, b := range grid {
				prev := 0.0
				for _, s := range grid {
					v := AttnPrefillTime(l, a, b*s, b*CausalPairs(s, 0, 0), 0)
					if v < prev {
						t.Fatalf("%s prefill %s: not monotone in isl", chip, l.KVDtype)
					}
					prev = v
				}
			}
		}
		for i := range co.MLADecode {
			prev := 0.0
			for _, ctx := range grid {
				v := MLADecodeTime(&co.MLADecode[i], dsv3, 8, 8*ctx)
				if v < prev {
					t.Fatalf("%s MLA decode: not monotone in context", chip)
				}
				prev = v
			}
		}
		for i := range co.MLAPrefill {
			prev := 0.0
			for _, s := range grid {
				v := MLAPrefillTime(&co.MLAPrefill[i], dsv3, s, CausalPairs(s, 0, 0))
				if v < prev {
					t.Fatalf("%s MLA prefill: not monotone in isl", chip)
				}
				prev = v
			}
		}
		for i := range co.MoE {
			prev := 0.0
			for _, tok := range grid {
				v := MoETime(&co.MoE[i], MoEShape{Tokens: tok, Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1})
				if v < prev || !(v > 0) {
					t.Fatalf("%s moe %s: not monotone in tokens", chip, co.MoE[i].Dtype)
				}
				prev = v
			}
		}
		for i := range co.Comm {
			prev := 0.0
			for _, b := range grid {
				v := CommTime(&co.Comm[i], 8, b*1024)
				if v < prev {
					t.Fatalf("%s comm %s: not monotone in bytes", chip, co.Comm[i].Op)
				}
				prev = v
			}
		}
	}
}

func TestLawsDoNotAllocate(t *testing.T) {
	co, err := catalog.LookupCoefficients("h100")
	if err != nil {
		t.Fatal(err)
	}
	g, d, p, m, mo, cm := &co.GEMM[0], &co.AttnDecode[0], &co.AttnPrefill[0], &co.MLADecode[0], &co.MoE[0], &co.Comm[0]
	a := AttnShape{Heads: 32, KVHeads: 8, HeadDim: 128}
	var sink float64
	allocs := testing.AllocsPerRun(100, func() {
		sink += GEMMTime(g, 256, 4096, 4096)
		sink += AttnDecodeTime(d, a, 64, 64*2048)
		sink += AttnPrefillTime(p, a, 2048, CausalPairs(2048, 0, 0), 0)
		sink += MLADecodeTime(m, dsv3, 64, 64*4096)
		sink += MoETime(mo, MoEShape{Tokens: 256, Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1})
		sink += CommTime(cm, 8, 1<<20)
	})
	if allocs != 0 {
		t.Errorf("laws allocate %v times per evaluation", allocs)
	}
	if !(sink > 0) {
		t.Error("laws returned nothing")
	}
}

var benchSink float64

func BenchmarkLaws(b *testing.B) {
	co, err := catalog.LookupCoefficients("h100")
	if err != nil {
		b.Fatal(err)
	}
	a := AttnShape{Heads: 32, KVHeads: 8, HeadDim: 128}
	b.Run("GEMM", func(b *testing.B) {
		l := &co.GEMM[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchSink += GEMMTime(l, float64(i&1023+1), 4096, 4096)
		}
	})
	b.Run("AttnDecode", func(b *testing.B) {
		l := &co.AttnDecode[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchSink += AttnDecodeTime(l, a, 64, float64(i&1023+1)*64)
		}
	})
	b.Run("AttnPrefill", func(b *testing.B) {
		l := &co.AttnPrefill[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s := float64(i&1023 + 1)
			benchSink += AttnPrefillTime(l, a, s, s*(s+1)/2, 0)
		}
	})
	b.Run("MLADecode", func(b *testing.B) {
		l := &co.MLADecode[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchSink += MLADecodeTime(l, dsv3, 64, float64(i&1023+1)*64)
		}
	})
	b.Run("MoE", func(b *testing.B) {
		l := &co.MoE[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchSink += MoETime(l, MoEShape{Tokens: float64(i&1023 + 1), Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1})
		}
	})
	b.Run("MoEGivenDistinct", func(b *testing.B) {
		l := &co.MoE[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchSink += MoETime(l, MoEShape{Tokens: float64(i&1023 + 1), Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1, Distinct: 100})
		}
	})
	b.Run("Comm", func(b *testing.B) {
		l := &co.Comm[0]
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			benchSink += CommTime(l, 8, float64(i&1023+1)*4096)
		}
	})
}

// A group within a node keeps its measured curve; one spanning nodes adds
// one inter-node latency and every byte's (n−1)/n trip through the NIC
// (twice for an all-reduce).
func TestCommCurveCrossNode(t *testing.T) {
	co, err := catalog.LookupCoefficients("h100")
	if err != nil {
		t.Fatal(err)
	}
	var l *catalog.CommLaw
	for i := range co.Comm {
		if co.Comm[i].Op == "all_gather" {
			l = &co.Comm[i]
		}
	}
	if l == nil {
		t.Fatal("no all_gather law on h100")
	}
	const bw, lat, b = 50e9, 5e-6, 4 << 20
	base, one := newCommCurve(l, 16), newCommCurve(l, 8)
	intra := base.at(b, math.Log(b))
	cases := []struct {
		name      string
		gpus      int
		allReduce bool
		want      float64
	}{
		{"one node", 8, false, one.at(b, math.Log(b))},
		{"two nodes, gather", 16, false, intra + lat + 15.0/16*b/bw},
		{"two nodes, all-reduce", 16, true, intra + lat + 2*15.0/16*b/bw},
	}
	for _, c := range cases {
		cc := newCommCurve(l, c.gpus).crossNode(c.gpus, 8, c.allReduce, bw, lat)
		if got := cc.at(b, math.Log(b)); math.Abs(got/c.want-1) > 1e-12 {
			t.Errorf("%s: %g s, want %g", c.name, got, c.want)
		}
	}
}
