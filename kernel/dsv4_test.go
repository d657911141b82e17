package kernel

import (
	"math"
	"testing"

	"blis/catalog"
)

// TestDSV4KVBytes checks one layer of each DeepSeek-V4 kind by hand
// (head_dim 512, rope 64, index_head_dim 128, window 128):
//
//	entry (fp8_ds_mla)      448 + 2·64 + 448/64 + 1            = 584 B
//	indexer key             128 + 128/128·4                    = 132 B
//	SWA layer   grows 0;           window 584
//	CSA layer   grows (584+132)/4 = 179; window 584 + 2·2·512·4 + 2·2·128·4 = 10,824
//	HCA layer   grows 584/128 = 4.5625;  window 584 + 2·1·512·4 = 4,680
//
// and V4-Flash's totals (2 SWA, 21 CSA, 20 HCA layers) and group layout.
func TestDSV4KVBytes(t *testing.T) {
	m, err := catalog.LookupModel("deepseek-ai/DeepSeek-V4-Flash")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ratio        int
		grow, window float64
	}{
		{0, 0, 584},
		{4, 179, 10824},
		{128, 4.5625, 4680},
	} {
		if g := dsv4GrowBytes(m, []int{c.ratio}); g != c.grow {
			t.Errorf("ratio %d: grows %g B/token, want %g", c.ratio, g, c.grow)
		}
		if w := dsv4WindowBytes(m, []int{c.ratio}, 0); w != c.window {
			t.Errorf("ratio %d: window %g B/token, want %g", c.ratio, w, c.window)
		}
	}
	d := deploy(t, m.ID, "h200", 4)
	if g, w := dsv4GrowBytes(m, m.CompressRatios), dsv4WindowBytes(m, m.CompressRatios, 0); g != 21*179+20*4.5625 || w != 2*584+21*10824+20*4680 {
		t.Errorf("V4-Flash: grows %g, window %g B/token", g, w)
	}
	kv := dsv4KVLayout(d)
	if l := kv.layout; l.Groups != 64 || l.Sliding != math.MaxUint64-1 || l.Window != 128 {
		t.Errorf("layout %+v", l)
	}
	if want := 16 * (2*584 + 21*10824 + 20*4680) / 63.0; math.Abs(kv.blockBytes-want) > 1e-6 {
		t.Errorf("block %g bytes, want %g", kv.blockBytes, want)
	}
	// With MTP the draft's sliding-window layer joins the windowed bytes.
	if w := dsv4WindowBytes(m, m.CompressRatios, 1); w != 2*584+21*10824+20*4680+584 {
		t.Errorf("with MTP: window %g", w)
	}
}

// TestDSV4Memory: V4-Flash's weights per GPU at TP2 are within 2% of the
// 74.08 GiB vLLM 0.23.0 logged on 2 × H200 NVL (kv_cache_facts), and every
// pricer prices its steps without allocating.
func TestDSV4Memory(t *testing.T) {
	d := deploy(t, "deepseek-ai/DeepSeek-V4-Flash", "h200", 2)
	w, err := WeightBytes(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := w / gib; math.Abs(got-74.08)/74.08 > 0.02 {
		t.Errorf("weights %.2f GiB per GPU at TP2, vLLM logged 74.08", got)
	}
	for _, tp := range []int{4, 8} {
		d := deploy(t, "deepseek-ai/DeepSeek-V4-Flash", "h200", tp)
		for name, mk := range map[string]func(Deployment) (Pricer, error){"roofline": NewRoofline, "fitted": NewFitted} {
			p, err := mk(d)
			if err != nil {
				t.Fatalf("%s TP%d: %v", name, tp, err)
			}
			b := mixedBatch()
			if bt := p.StepTime(&b); bt.Total <= 0 {
				t.Errorf("%s TP%d: step %v", name, tp, bt)
			}
			if n := testing.AllocsPerRun(50, func() { p.StepTime(&b) }); n != 0 {
				t.Errorf("%s TP%d: StepTime allocates %v times", name, tp, n)
			}
		}
	}
}

// TestDSV4AttnWork: decode past the window reads the window on every
// layer, top-k entries on CSA layers and a 128th of the context on HCA
// layers; a longer context adds only compressed reads.
func TestDSV4AttnWork(t *testing.T) {
	d := deploy(t, "deepseek-ai/DeepSeek-V4-Flash", "h200", 4)
	a := newDSV4Attn(d)
	_, short := a.work(1, 4096, 0, 0, 0, 0)
	_, long := a.work(1, 8192, 0, 0, 0, 0)
	// 43 windows of 128 entries, 21 × 512 top-k entries (both contexts
	// exceed 4 × 512), 20 × ctx/128 entries, 21 × ctx/4 indexer keys.
	want := func(ctx float64) float64 {
		return 584*(43*128+21*512+20*ctx/128) + 21*132*ctx/4
	}
	if short != want(4096) || long != want(8192) {
		t.Errorf("decode bytes %g / %g, want %g / %g", short, long, want(4096), want(8192))
	}
}

// BenchmarkDSV4StepTime prices a mixed step (255 decode rows at 2k
// context, one 1k prefill chunk) of DeepSeek-V4-Flash on 4 × H200.
func BenchmarkDSV4StepTime(b *testing.B) {
	d := deploy(b, "deepseek-ai/DeepSeek-V4-Flash", "h200", 4)
	d.MaxNumSeqs, d.MaxModelLen = 256, 8192
	for name, mk := range map[string]func(Deployment) (Pricer, error){"roofline": NewRoofline, "fitted": NewFitted} {
		b.Run(name, func(b *testing.B) {
			p, err := mk(d)
			if err != nil {
				b.Fatal(err)
			}
			batch := mixedBatch()
			b.ReportAllocs()
			for b.Loop() {
				p.StepTime(&batch)
			}
		})
	}
}
