package kernel

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"blis/catalog"
)

func fittedFor(t testing.TB, model, chip string, tp int) Pricer {
	t.Helper()
	d := deploy(t, model, chip, tp)
	d.MaxNumSeqs, d.MaxModelLen = 256, 8192
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mixedBatch is 255 decode rows at 2k context plus one 1k-token prefill chunk.
func mixedBatch() Batch {
	return Batch{NumDecode: 255, DecodeTokens: 255, DecodeContext: 255 * 2048,
		NumPrefill: 1, PrefillTokens: 1024, PrefillAttnPairs: 1024 * 1025 / 2, Sampled: 256}
}

func TestFittedCoversTheCalibratedModels(t *testing.T) {
	for _, tc := range []struct {
		model, chip string
		tp          int
	}{
		{"meta-llama/Llama-3.1-8B", "h100", 1},
		{"nvidia/Llama-3.3-70B-Instruct-FP8", "h100", 4},
		{"Qwen/Qwen3-32B", "h200", 2},
		{"openai/gpt-oss-120b", "h100", 2},
		{"deepseek-ai/DeepSeek-V3", "b200", 8},
		{"mistralai/Mixtral-8x7B-v0.1", "h100", 2},
	} {
		p := fittedFor(t, tc.model, tc.chip, tc.tp)
		b := mixedBatch()
		if bd := p.StepTime(&b); bd.Total <= 0 || bd.Compute <= 0 {
			t.Errorf("%s on %s: %+v", tc.model, tc.chip, bd)
		}
	}
}

func TestFittedIsMonotoneAndSumsResources(t *testing.T) {
	p := fittedFor(t, "meta-llama/Llama-3.1-8B", "h100", 2)
	prev := time.Duration(0)
	for _, rows := range []int{1, 8, 32, 128, 256} {
		b := Batch{NumDecode: rows, DecodeTokens: rows, DecodeContext: int64(rows) * 1000, Sampled: rows}
		bd := p.StepTime(&b)
		if bd.Total < prev {
			t.Fatalf("decode of %d rows cheaper than fewer rows: %v < %v", rows, bd.Total, prev)
		}
		if bd.Total != bd.Compute+bd.Memory+bd.Comm+bd.Launch+bd.Host {
			t.Fatalf("total %v is not the sum of %+v", bd.Total, bd)
		}
		if bd.Comm <= 0 {
			t.Fatal("TP2 must pay for its all-reduces")
		}
		prev = bd.Total
	}
	short := Batch{NumDecode: 64, DecodeTokens: 64, DecodeContext: 64 * 100, Sampled: 64}
	long := short
	long.DecodeContext = 64 * 8000
	if a, b := p.StepTime(&short), p.StepTime(&long); b.Compute <= a.Compute {
		t.Fatalf("longer contexts must cost more attention: %v vs %v", a.Compute, b.Compute)
	}
	var empty Batch
	if bd := p.StepTime(&empty); bd.Total != 0 {
		t.Fatalf("empty batch costs %v", bd.Total)
	}
}

// A pure-decode batch replays a CUDA graph at the next capture size: 33
// rows cost what 40 do, and less host time than a mixed batch.
func TestFittedPadsToCaptureSizes(t *testing.T) {
	p := fittedFor(t, "meta-llama/Llama-3.1-8B", "h100", 1)
	a := Batch{NumDecode: 33, DecodeTokens: 33, DecodeContext: 33 * 500, Sampled: 33}
	b := Batch{NumDecode: 40, DecodeTokens: 40, DecodeContext: 33 * 500, Sampled: 33}
	ta, tb := p.StepTime(&a), p.StepTime(&b)
	if ta.Memory != tb.Memory {
		t.Fatalf("33 and 40 rows should run the same padded graph: %v vs %v", ta.Memory, tb.Memory)
	}
	if got := captureSizes(512); got[0] != 1 || got[3] != 8 || got[len(got)-1] != 512 || len(got) != 3+31+17 {
		t.Fatalf("capture sizes %v", got)
	}
	mixed := mixedBatch()
	if p.StepTime(&mixed).Host <= ta.Host {
		t.Fatal("a mixed batch (piecewise graphs) must cost more host time than a full graph")
	}
}

func TestFittedNeedsCoefficients(t *testing.T) {
	m, _ := catalog.LookupModel("meta-llama/Llama-3.1-8B")
	c, _ := catalog.LookupChip("a100")
	_, err := NewFitted(Deployment{Model: m, Chip: c, TP: 1, KVCacheDtype: "auto", MaxNumBatchedTokens: 2048,
		MaxNumSeqs: 256, MaxModelLen: 8192, BlockSize: 16, GPUMemoryUtilization: 0.9})
	if err == nil || !strings.Contains(err.Error(), "a100") {
		t.Fatalf("want an error naming the chip without coefficients, got %v", err)
	}
}

func TestFittedStepTimeDoesNotAllocate(t *testing.T) {
	p := fittedFor(t, "deepseek-ai/DeepSeek-V3", "h200", 8)
	b := mixedBatch()
	if n := testing.AllocsPerRun(100, func() { p.StepTime(&b) }); n != 0 {
		t.Fatalf("%v allocations per step", n)
	}
}

// BenchmarkFittedStepTime prices a 256-request mixed batch (target ≤ 1 µs,
// 0 allocations): go test ./kernel -run '^$' -bench FittedStepTime -benchmem
func BenchmarkFittedStepTime(b *testing.B) {
	for _, model := range []string{"meta-llama/Llama-3.1-70B", "deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3.2", "openai/gpt-oss-120b"} {
		b.Run(model[strings.Index(model, "/")+1:], func(b *testing.B) {
			p := fittedFor(b, model, "h200", 8)
			batch := mixedBatch()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p.StepTime(&batch)
			}
		})
	}
}

// vLLM's cudagraph modes decide which steps replay graphs: PIECEWISE keeps
// attention eager for every step (piecewise host cost even in pure decode),
// NONE pays eager host cost, FULL_DECODE_ONLY runs mixed steps eagerly.
func TestFittedCUDAGraphModes(t *testing.T) {
	m, _ := catalog.LookupModel("meta-llama/Llama-3.1-8B")
	c, _ := catalog.LookupChip("h100")
	decode := Batch{NumDecode: 8, DecodeTokens: 8, DecodeContext: 8 * 500, Sampled: 8}
	mixed := Batch{NumDecode: 7, DecodeTokens: 7, DecodeContext: 7 * 500, NumPrefill: 1, PrefillTokens: 100, PrefillAttnPairs: 5050, Sampled: 8}
	host := func(mode string, async bool, b Batch) Breakdown {
		p, err := NewFitted(Deployment{Model: m, Chip: c, TP: 1, KVCacheDtype: "auto", MaxNumBatchedTokens: 8192, MaxNumSeqs: 64,
			MaxModelLen: 8192, BlockSize: 16, GPUMemoryUtilization: 0.9, CUDAGraphMode: mode, AsyncScheduling: async})
		if err != nil {
			t.Fatal(err)
		}
		return p.StepTime(&b)
	}
	a, err := DefaultFittedAssumptions()
	if err != nil {
		t.Fatal(err)
	}
	sampled := 8 * a.HostPerSampledToken
	// Llama-3.1-8B has 32 decoder layers: one piecewise graph each.
	piecewise := a.HostStepGraphed + 32*a.HostPiecewisePerLayer
	for _, tc := range []struct {
		mode string
		b    Batch
		want time.Duration
		gaps time.Duration
	}{
		{"", decode, a.HostStepGraphed, 0},
		{"FULL_AND_PIECEWISE", mixed, piecewise, 32 * a.PiecewiseGapPerLayer},
		{"PIECEWISE", decode, piecewise, 32 * a.PiecewiseGapPerLayer},
		{"FULL", mixed, a.HostStepGraphed, 0},
		{"FULL_DECODE_ONLY", mixed, max(a.HostStepEager, piecewise), 32 * a.PiecewiseGapPerLayer},
		{"NONE", decode, max(a.HostStepEager, piecewise), 32 * a.PiecewiseGapPerLayer},
	} {
		bd := host(tc.mode, false, tc.b)
		if bd.Host != tc.want+sampled || bd.Launch != tc.gaps {
			t.Errorf("%q: host %v launch %v, want %v and %v", tc.mode, bd.Host, bd.Launch, tc.want+sampled, tc.gaps)
		}
		if bd.Total != bd.Compute+bd.Memory+bd.Comm+bd.Launch+bd.Host {
			t.Errorf("%q: without async scheduling the step is the sum of its resources: %+v", tc.mode, bd)
		}
	}
	sync, async := host("", false, decode), host("", true, decode)
	if async.Total != max(sync.Compute+sync.Memory+sync.Comm, sync.Host) || async.Total >= sync.Total {
		t.Errorf("async scheduling should overlap host and GPU: sync %v, async %v", sync.Total, async.Total)
	}
}

// --enable-expert-parallel prices the MoE as whole experts split across the
// group rather than every expert sliced: a different kernel shape, so a
// different time, while dense models are unaffected.
func TestFittedExpertParallel(t *testing.T) {
	c, _ := catalog.LookupChip("h100")
	price := func(model string, ep bool) time.Duration {
		m, _ := catalog.LookupModel(model)
		p, err := NewFitted(Deployment{Model: m, Chip: c, TP: 4, KVCacheDtype: "auto", MaxNumBatchedTokens: 8192, MaxNumSeqs: 64,
			MaxModelLen: 8192, BlockSize: 16, GPUMemoryUtilization: 0.9, ExpertParallel: ep})
		if err != nil {
			t.Fatal(err)
		}
		b := mixedBatch()
		return p.StepTime(&b).Compute
	}
	if a, b := price("Qwen/Qwen3-30B-A3B", false), price("Qwen/Qwen3-30B-A3B", true); a == b || a <= 0 || b <= 0 {
		t.Fatalf("MoE model: TP-sliced %v vs expert-parallel %v", a, b)
	}
	if a, b := price("meta-llama/Llama-3.1-8B", false), price("meta-llama/Llama-3.1-8B", true); a != b {
		t.Fatalf("dense model changed with expert parallel: %v vs %v", a, b)
	}
}

// --moe-backend picks the law of the kernel family vLLM's environment
// forces; a family not measured for the dtype on the chip falls back to the
// dtype's law and says so.
func TestFittedMoEBackend(t *testing.T) {
	batch := mixedBatch()
	for _, tc := range []struct {
		model, chip, backend string
		differs              bool   // step time differs from auto
		sub                  string // substitution note expected ("" = none)
	}{
		{"openai/gpt-oss-120b", "h100", "marlin", true, ""},
		{"openai/gpt-oss-120b", "b200", "flashinfer-mxfp8", true, ""},
		{"MiniMaxAI/MiniMax-M2.5", "h100", "triton", true, ""},
		{"MiniMaxAI/MiniMax-M2.5", "h100", "flashinfer", true, ""},
		{"MiniMaxAI/MiniMax-M2.5", "b200", "triton", false, "no fp8_block_triton law on b200"},
		{"meta-llama/Llama-3.1-8B", "h100", "marlin", false, ""},
	} {
		t.Run(tc.model+"/"+tc.chip+"/"+tc.backend, func(t *testing.T) {
			d := deploy(t, tc.model, tc.chip, 4)
			d.MaxNumSeqs, d.MaxModelLen = 256, 8192
			auto, err := NewFitted(d)
			if err != nil {
				t.Fatal(err)
			}
			d.MoEBackend = tc.backend
			p, err := NewFitted(d)
			if err != nil {
				t.Fatal(err)
			}
			a, b := auto.StepTime(&batch).Total, p.StepTime(&batch).Total
			if (a != b) != tc.differs {
				t.Errorf("auto %v, %s %v: differs = %v, want %v", a, tc.backend, b, a != b, tc.differs)
			}
			subs := strings.Join(p.(*fitted).Substitutions(), "; ")
			if tc.sub == "" && strings.Contains(subs, "moe") || tc.sub != "" && !strings.Contains(subs, tc.sub) {
				t.Errorf("substitutions %q, want %q", subs, tc.sub)
			}
		})
	}
}

// Layer kinds that share an operator price it once: gpt-oss's sliding and
// full-attention layers have the same experts, so one MoE term (with its
// measured residual row) carries all 36 layers.
func TestFittedMergesSharedOperators(t *testing.T) {
	for _, tp := range []int{1, 2, 4, 8} {
		f := fittedFor(t, "openai/gpt-oss-120b", "h100", tp).(*fitted)
		n, layers := 0, 0.0
		for _, term := range f.terms {
			if term.kind == termMoE {
				n++
				layers += term.count
			}
		}
		if n != 1 || layers != 36 {
			t.Errorf("TP%d: %d MoE terms over %g layers, want 1 over 36", tp, n, layers)
		}
	}
}

// The MLA laws price DeepseekV2MLAAttention whole (the tables time the
// module), so the fitted pricer adds no separate term for its projections,
// norms or RoPE; the MLP's GEMMs and the o_proj all-reduce stay.
func TestFittedPricesTheMLAModuleOnce(t *testing.T) {
	f := fittedFor(t, "deepseek-ai/DeepSeek-V3", "h200", 8).(*fitted)
	names := map[string]bool{}
	for _, term := range f.terms {
		names[term.name] = true
	}
	for _, gone := range []string{"fused_qkv_a_proj", "q_b_proj", "kv_b_proj", "q_nope_absorb", "v_up_proj", "o_proj", "q_a_layernorm", "kv_a_layernorm", "rotary_emb"} {
		if names[gone] {
			t.Errorf("%s priced apart from the MLA module", gone)
		}
	}
	for _, kept := range []string{"attn (MLA module)", "o_proj.all_reduce", "shared_experts.gate_up_proj", "input_layernorm"} {
		if !names[kept] {
			t.Errorf("no %s term", kept)
		}
	}
}

// Explain's operators add up to the step's GPU time, and name the
// sliding-window attention apart from the full one.
func TestFittedExplainSumsToTheStep(t *testing.T) {
	p := fittedFor(t, "openai/gpt-oss-120b", "h100", 2)
	b := mixedBatch()
	ops := p.(Explainer).Explain(&b)
	var sum time.Duration
	windowed := false
	for _, o := range ops {
		sum += o.Time
		windowed = windowed || strings.Contains(o.Name, "window 128")
	}
	bd := p.StepTime(&b)
	if d := sum - (bd.Compute + bd.Memory + bd.Comm); d < -time.Duration(len(ops)) || d > time.Duration(len(ops)) {
		t.Errorf("operators sum to %v, step's GPU time %v", sum, bd.Compute+bd.Memory+bd.Comm)
	}
	if !windowed {
		t.Error("no sliding-window attention row")
	}
}

// A MoE model's DP group steps in lockstep: one rank alone prices as
// StepTime; ranks pad to the largest graph and the experts see every rank's
// tokens, so a group step costs at least its busiest rank's own step; an
// idle rank still costs a dummy batch's gathered tokens; the experts split
// over DP × TP GPUs hold fewer bytes per GPU.
func TestFittedDataParallelGroup(t *testing.T) {
	d := deploy(t, "Qwen/Qwen3-30B-A3B", "h100", 2)
	d.MaxNumSeqs, d.MaxModelLen, d.ExpertParallel = 256, 8192, true
	one, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	d.DP = 2
	two, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	gp := two.(GroupPricer)
	dec := Batch{NumDecode: 24, DecodeTokens: 24, DecodeContext: 24 * 1500, Sampled: 24}
	mixed := mixedBatch()
	cases := []struct {
		name string
		bs   []Batch
	}{
		{"decode and idle", []Batch{dec, {}}},
		{"decode and decode", []Batch{dec, dec}},
		{"mixed and decode", []Batch{mixed, dec}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := gp.GroupStepTime(c.bs)
			for i := range c.bs {
				if own := two.StepTime(&c.bs[i]); g.Total < own.Total {
					t.Errorf("group step %v shorter than rank %d's own step %v", g.Total, i, own.Total)
				}
			}
			if g.Total != g.Compute+g.Memory+g.Comm+g.Launch+g.Host && !d.AsyncScheduling {
				t.Errorf("total %v is not the sum of %+v", g.Total, g)
			}
		})
	}
	// One rank: the group price is the plain step price.
	for _, b := range []Batch{dec, mixed} {
		if g, s := one.(GroupPricer).GroupStepTime([]Batch{b}), one.StepTime(&b); g != s {
			t.Errorf("DP 1 group step %+v != StepTime %+v", g, s)
		}
	}
	// Gathered tokens cost more expert work than a rank's own.
	alone := two.StepTime(&dec)
	if g := gp.GroupStepTime([]Batch{dec, dec}); g.Compute <= alone.Compute || g.Comm <= alone.Comm {
		t.Errorf("two busy ranks %+v vs one rank's own tokens %+v", g, alone)
	}
	d.DP = 1
	w1, _ := WeightBytes(d)
	d.DP = 2
	w2, _ := WeightBytes(d)
	if !(w2 < w1) {
		t.Errorf("weights per GPU %v GiB at DP 2, %v at DP 1", w2/gib, w1/gib)
	}
	// GroupStepTime on a pricer without group pricing: the slowest rank.
	r, err := NewRoofline(d)
	if err != nil {
		t.Fatal(err)
	}
	if g, s := GroupStepTime(r, []Batch{dec, mixed}), r.StepTime(&mixed); g != s {
		t.Errorf("roofline group %+v, slowest rank %+v", g, s)
	}
}

func TestFittedGroupStepTimeDoesNotAllocate(t *testing.T) {
	d := deploy(t, "Qwen/Qwen3-30B-A3B", "h100", 2)
	d.MaxNumSeqs, d.MaxModelLen, d.ExpertParallel, d.DP = 256, 8192, true, 4
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	bs := []Batch{mixedBatch(), mixedBatch(), {}, {NumDecode: 3, DecodeTokens: 3, DecodeContext: 3000, Sampled: 3}}
	gp := p.(GroupPricer)
	if n := testing.AllocsPerRun(100, func() { gp.GroupStepTime(bs) }); n != 0 {
		t.Fatalf("GroupStepTime allocates %v times", n)
	}
}

// DeepSeek sparse attention: the latent and the indexer's keys share a
// block (vLLM's one KV cache group), 788 bytes per token per layer with
// Hopper's fp8_ds_mla latent, 708 with Blackwell's plain fp8, 1284 in bf16;
// the module is one DSA term whose decode price grows with context past
// index_topk only by the indexer's scan.
func TestFittedDSA(t *testing.T) {
	for _, tc := range []struct {
		chip, kv string
		bytes    float64
	}{
		{"h200", "fp8", 61 * 788}, {"b200", "fp8", 61 * 708}, {"h200", "auto", 61 * 1284},
	} {
		d := deploy(t, "deepseek-ai/DeepSeek-V3.2", tc.chip, 8)
		d.KVCacheDtype = tc.kv
		if got, err := KVBytesPerToken(d); err != nil || got != tc.bytes {
			t.Errorf("%s kv %s: %v B/token (%v), want %v", tc.chip, tc.kv, got, err, tc.bytes)
		}
	}
	f := fittedFor(t, "deepseek-ai/DeepSeek-V3.2", "h200", 8).(*fitted)
	var dsa *term
	for i := range f.terms {
		if f.terms[i].kind == termDSA {
			dsa = &f.terms[i]
		}
		if n := f.terms[i].name; n == "indexer.wq_b" || n == "q_b_proj" {
			t.Errorf("%s priced apart from the DSA module", n)
		}
	}
	if dsa == nil || dsa.count != 61 || dsa.dsa.TopK != 2048 || dsa.dsa.IndexHeads != 64 {
		t.Fatalf("DSA term %+v", dsa)
	}
	at := func(ctx float64) float64 {
		return DSADecodeTime(dsa.mlaDec, dsa.dsa, 64, 64*ctx, 64*math.Min(ctx, 2048))
	}
	short, mid, long := at(1024), at(4096), at(65536)
	if !(short < mid && mid < long) {
		t.Fatalf("decode not growing with context: %g %g %g", short, mid, long)
	}
	// Past top-k only the indexer's per-token scan grows.
	if d, want := long-mid, dsa.mlaDec.IndexerPerToken*64*(65536-4096); math.Abs(d-want) > 1e-9 {
		t.Errorf("65k − 4k context adds %g s, the indexer's scan %g s", d, want)
	}
	b := mixedBatch()
	if bd := f.StepTime(&b); bd.Compute <= 0 {
		t.Errorf("step %+v", bd)
	}
}

// A chip without fitted coefficients, its own or a sibling's, is
// ErrNoCoefficients; every other failure of NewFitted is not.
func TestNewFittedNoCoefficients(t *testing.T) {
	for _, c := range []struct {
		chip   string
		noCoef bool
	}{{"a100", true}, {"h100", false}, {"b300", false}} {
		_, err := NewFitted(deploy(t, "llama-3.1-8b", c.chip, 1))
		if errors.Is(err, ErrNoCoefficients) != c.noCoef || !c.noCoef && err != nil {
			t.Errorf("%s: %v", c.chip, err)
		}
	}
	d := deploy(t, "llama-3.1-8b", "h100", 1)
	d.Model.ID = "test/no-graph"
	if _, err := NewFitted(d); err == nil || errors.Is(err, ErrNoCoefficients) {
		t.Errorf("a model without a graph: %v", err)
	}
}
