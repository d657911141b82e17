package kernel

import (
	"math"
	"strings"
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

// dsv4Explain is Explain's time per operator name for d's fitted pricer.
func dsv4Explain(t *testing.T, d Deployment, b *Batch) (Pricer, map[string]OpTime) {
	t.Helper()
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]OpTime{}
	for _, o := range p.(Explainer).Explain(b) {
		ops[o.Name] = o
	}
	return p, ops
}

// TestDSV4FittedModuleLaws: on H200 the fitted pricer prices each
// DeepSeek-V4-Flash attention module (TP4: 16 query heads, 2 output groups
// a rank) with its kind's module laws — decode rows with the decode law,
// the prefill chunk with the prefill law, summed — and the two mHC sites
// of a layer as a pre and a post call each over the step's tokens.
func TestDSV4FittedModuleLaws(t *testing.T) {
	d := deploy(t, "deepseek-ai/DeepSeek-V4-Flash", "h200", 4)
	co, err := catalog.LookupCoefficients("h200")
	if err != nil {
		t.Fatal(err)
	}
	// 8 decode rows of 3,000 context tokens; one 512-token chunk onto 1,024 cached.
	b := Batch{NumDecode: 8, DecodeTokens: 8, DecodeContext: 8 * 3000, NumPrefill: 1, PrefillTokens: 512,
		PrefillContext: 1024, PrefillAttnPairs: CausalPairs(512, 1024, 0), Sampled: 8}
	_, ops := dsv4Explain(t, d, &b)
	for _, c := range []struct {
		name, law string
		ratio     float64
		count     float64
	}{
		{"attn (dsv4_csa module, csa law)", "csa", 4, 21},
		{"attn (dsv4_hca module, hca law)", "hca", 128, 20},
		{"attn (dsv4_swa module, hca law)", "hca", 0, 2},
	} {
		dec, err := co.DSV4DecodeFor(c.law, "fp8_block", "fp8")
		if err != nil {
			t.Fatal(err)
		}
		pre, err := co.DSV4PrefillFor(c.law, "fp8_block", "fp8")
		if err != nil {
			t.Fatal(err)
		}
		s := dsv4Flash(4, c.ratio)
		k, ix := s.DecodeReads(8, 8*3000)
		ap, ip, e := s.PrefillReadsFromPairs(512, b.PrefillAttnPairs, 1024+512)
		want := c.count * (DSV4DecodeTime(dec, s, 8, k, ix) + DSV4PrefillTime(pre, s, 512, ap, ip, e))
		o, ok := ops[c.name]
		if !ok || o.Count != c.count || math.Abs(o.Time.Seconds()-want) > 1e-9 {
			t.Errorf("%s: %+v, want × %g %.3f µs", c.name, o, c.count, want*1e6)
		}
	}
	// Prefill rows of one token each run on the decode path: priced as
	// decode rows whose contexts count the new token.
	oneTok := Batch{NumPrefill: 2, PrefillTokens: 2, PrefillContext: 2000, PrefillAttnPairs: CausalPairs(1, 1000, 0) * 2, Sampled: 2}
	asDec := Batch{NumDecode: 2, DecodeTokens: 2, DecodeContext: 2002, Sampled: 2}
	_, a := dsv4Explain(t, d, &oneTok)
	_, bb := dsv4Explain(t, d, &asDec)
	if n := "attn (dsv4_csa module, csa law)"; a[n].Time != bb[n].Time || a[n].Time <= 0 {
		t.Errorf("two one-token prefill rows %v, as decode rows %v", a[n].Time, bb[n].Time)
	}
	pre, _ := co.MHCFor("pre")
	post, _ := co.MHCFor("post")
	if pre == nil || post == nil {
		t.Fatal("no mHC laws on h200")
	}
	want := 43 * (MHCTime(pre, 520, 4096, 4) + MHCTime(post, 520, 4096, 4))
	for _, n := range []string{"hc_attn_post_pre (mHC pre + post laws)", "hc_ffn_post_pre (mHC pre + post laws)"} {
		if o := ops[n]; o.Resource != "memory" || math.Abs(o.Time.Seconds()-want) > 1e-9 {
			t.Errorf("%s: %+v, want %.3f µs of memory", n, o, want*1e6)
		}
	}
}

// TestDSV4FittedNoDoublePricing: with the module laws, no operator inside
// the attention module (catalog InAttentionModule) is priced beside it and
// the last layer's mHC post is in the layers' post calls; every other
// operator of the graph still is (the wo_b all-reduce follows the module).
// Without a law (a bf16 checkpoint: the laws are fitted on fp8_block
// projections) the kernel falls back to the roofline, the module's
// operators are priced one by one and the substitution is recorded.
func TestDSV4FittedNoDoublePricing(t *testing.T) {
	d := deploy(t, "deepseek-ai/DeepSeek-V4-Flash", "h200", 4)
	g, err := catalog.LookupGraph(d.Model.ID)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{NumDecode: 4, DecodeTokens: 4, DecodeContext: 4 * 2000, Sampled: 4}
	p, ops := dsv4Explain(t, d, &b)
	priced := func(name string) bool {
		for n := range ops {
			if n == name || (len(n) > len(name) && n[:len(name)+1] == name+" ") {
				return true
			}
		}
		return false
	}
	for _, lk := range g.Layers {
		for i := range lk.Ops {
			op := &lk.Ops[i]
			if op.Kind == catalog.OpCollective && op.Group == catalog.GroupDP {
				continue // DP collectives: none at DP 1
			}
			if in := lk.InAttentionModule(op); in == priced(op.Name) {
				t.Errorf("%s.%s: in module %v, priced alone %v", lk.Name, op.Name, in, !in)
			}
		}
	}
	if priced("hc_post") || !priced("hc_head") || !priced("wo_b.all_reduce") {
		t.Errorf("head: hc_post priced %v (want false), hc_head %v, wo_b.all_reduce %v (want true)", priced("hc_post"), priced("hc_head"), priced("wo_b.all_reduce"))
	}
	for _, s := range p.(*fitted).Substitutions() {
		if strings.Contains(s, "DeepSeek-V4") || strings.Contains(s, "mhc") {
			t.Errorf("substitution with the laws present: %s", s)
		}
	}

	m := *d.Model
	m.WeightBlock = 0
	d.Model = &m
	p, ops = dsv4Explain(t, d, &b)
	if _, ok := ops["attn (dsv4_csa)"]; !ok || !priced("fused_wqa_wkv") || !priced("indexer.wq_b") || !priced("wo_a") {
		t.Errorf("bf16 checkpoint: want the roofline kernel and the module's operators one by one, got %v", ops)
	}
	if !strings.Contains(strings.Join(p.(*fitted).Substitutions(), "\n"), "no DeepSeek-V4 attention-module law") {
		t.Errorf("bf16 checkpoint: substitutions %q", p.(*fitted).Substitutions())
	}
}

// dsv4ModuleSeconds prices, with coefficients co, only the operators of
// d's attention modules (the kernels and InAttentionModule's operators).
func dsv4ModuleSeconds(t *testing.T, d Deployment, co *catalog.Coefficients, b *Batch) float64 {
	t.Helper()
	g, err := catalog.LookupGraph(d.Model.ID)
	if err != nil {
		t.Fatal(err)
	}
	a, err := DefaultFittedAssumptions()
	if err != nil {
		t.Fatal(err)
	}
	f := &fitted{memBW: d.Chip.MemBW * d.Chip.MemBWEfficiency, a: a, elemFloor: a.ElementwiseFloor.Seconds()}
	var layers []catalog.LayerKind
	var counts []int
	for _, lk := range g.Layers {
		k := catalog.LayerKind{Name: lk.Name, Count: lk.Count}
		for i := range lk.Ops {
			if lk.Ops[i].Attn != nil || lk.InAttentionModule(&lk.Ops[i]) {
				k.Ops = append(k.Ops, lk.Ops[i])
			}
		}
		layers, counts = append(layers, k), append(counts, lk.Count)
	}
	if err := resolveTerms(d, co, f, nil, layers, counts, nil, false); err != nil {
		t.Fatal(err)
	}
	c, m, _ := f.work(b, b.Tokens(), true)
	return c + m
}

// TestDSV4ModuleLawsAgainstOpByOp: the module laws price DeepSeek-V4-Flash's
// attention within a factor of 2.5 of what the same checkpoint's
// attention costs without them (the roofline kernel and the module's
// projections, compressor and indexer priced one by one by their own
// laws), from one decode row to a mixed step. (The measured modules cost
// more: on H200 TP8 about 1.3× at one decode row and 1.8–2× with a prefill
// chunk, the per-token work outside the GEMMs that the operators one by one
// price at bandwidth.)
func TestDSV4ModuleLawsAgainstOpByOp(t *testing.T) {
	co, err := catalog.LookupCoefficients("h200")
	if err != nil {
		t.Fatal(err)
	}
	without := *co
	without.DSV4Decode, without.DSV4Prefill = nil, nil
	for _, tp := range []int{4, 8} {
		d := deploy(t, "deepseek-ai/DeepSeek-V4-Flash", "h200", tp)
		for name, b := range map[string]Batch{
			"1 decode row":   {NumDecode: 1, DecodeTokens: 1, DecodeContext: 1200, Sampled: 1},
			"64 decode rows": {NumDecode: 64, DecodeTokens: 64, DecodeContext: 64 * 1200, Sampled: 64},
			"mixed":          mixedBatch(),
		} {
			law, ops := dsv4ModuleSeconds(t, d, co, &b), dsv4ModuleSeconds(t, d, &without, &b)
			t.Logf("TP%d %s: module laws %.3f ms, op by op %.3f ms", tp, name, law*1e3, ops*1e3)
			if ratio := law / ops; ratio < 0.5 || ratio > 2.5 {
				t.Errorf("TP%d %s: module laws %.3f ms, op by op %.3f ms (ratio %.2f)", tp, name, law*1e3, ops*1e3, ratio)
			}
		}
	}
}
