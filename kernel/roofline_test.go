package kernel

import (
	"testing"
	"time"
)

func pricer(t testing.TB, model, chip string, tp int, change func(*Deployment)) Pricer {
	t.Helper()
	d := deploy(t, model, chip, tp)
	if change != nil {
		change(&d)
	}
	p, err := NewRoofline(d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func decode(rows int, ctxPerRow int64) Batch {
	return Batch{NumDecode: rows, DecodeTokens: rows, DecodeContext: int64(rows) * ctxPerRow, Sampled: rows}
}

func prefill(rows, tokensPerRow int) Batch {
	s := float64(tokensPerRow)
	return Batch{NumPrefill: rows, PrefillTokens: rows * tokensPerRow, PrefillAttnPairs: float64(rows) * s * (s + 1) / 2, Sampled: rows}
}

func TestRooflineName(t *testing.T) {
	if n := pricer(t, "llama-3.1-8b", "h100", 1, nil).Name(); n != "roofline-v1" {
		t.Errorf("Name() = %q", n)
	}
}

func TestStepTimeBreakdown(t *testing.T) {
	p := pricer(t, "llama-3.1-70b", "h100", 4, nil)
	for _, b := range []Batch{decode(1, 100), decode(256, 2000), prefill(1, 2048), prefill(4, 2048)} {
		bd := p.StepTime(&b)
		if bd.Total != max(bd.Compute, bd.Memory)+bd.Comm+bd.Host {
			t.Errorf("%+v: Total is not max(Compute, Memory) + Comm + Host", bd)
		}
		if bd.Compute <= 0 || bd.Memory <= 0 || bd.Comm <= 0 || bd.Host <= 0 {
			t.Errorf("%+v: a resource is free", bd)
		}
	}
	var empty Batch
	if bd := p.StepTime(&empty); bd != (Breakdown{}) {
		t.Errorf("empty batch costs %+v", bd)
	}
}

// A one-row decode of Llama-3.1-8B on an H100 reads the 15 GB of weights
// (the embedding table is gathered, not read): 15 GB / (3.35 TB/s × 0.8)
// ≈ 5.6 ms, plus host time.
func TestDecodeStepBelievable(t *testing.T) {
	p := pricer(t, "llama-3.1-8b", "h100", 1, nil)
	b := decode(1, 128)
	bd := p.StepTime(&b)
	if bd.Total < 5*time.Millisecond || bd.Total > 8*time.Millisecond {
		t.Errorf("decode step %v, want 5–8 ms: %+v", bd.Total, bd)
	}
	if bd.Memory < 10*bd.Compute {
		t.Errorf("a one-row decode should be memory-bound: %+v", bd)
	}
	if bd.Comm != 0 {
		t.Errorf("TP 1 has no collectives: %+v", bd)
	}
}

func TestPrefillComputeBound(t *testing.T) {
	p := pricer(t, "llama-3.1-8b", "h100", 1, nil)
	b := prefill(4, 2048)
	bd := p.StepTime(&b)
	// 2 × 8192 tokens × 6.98 B linear parameters / (989 TFLOP/s × 0.8) ≈ 145 ms.
	if bd.Compute < bd.Memory || bd.Compute < 140*time.Millisecond || bd.Compute > 170*time.Millisecond {
		t.Errorf("prefill of 8192 tokens: %+v", bd)
	}
}

func TestStepTimeMonotone(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b"} {
		tp := 1
		if model == "deepseek-v3" {
			tp = 8
		}
		p := pricer(t, model, "h200", tp, nil)
		t.Run(model, func(t *testing.T) {
			var prev time.Duration
			for _, rows := range []int{1, 2, 8, 32, 128, 256, 512, 1024} {
				b := decode(rows, 1000)
				got := p.StepTime(&b).Total
				if got < prev {
					t.Errorf("decode %d rows: %v < %v", rows, got, prev)
				}
				prev = got
			}
			prev = 0
			for _, ctx := range []int64{1, 100, 1000, 10000, 100000} {
				b := decode(64, ctx)
				got := p.StepTime(&b).Total
				if got < prev {
					t.Errorf("decode context %d: %v < %v", ctx, got, prev)
				}
				prev = got
			}
			prev = 0
			for _, n := range []int{16, 128, 512, 2048, 8192} {
				b := prefill(1, n)
				got := p.StepTime(&b).Total
				if got <= prev {
					t.Errorf("prefill %d tokens: %v ≤ %v", n, got, prev)
				}
				prev = got
			}
			prev = 0
			for _, cached := range []int64{0, 1000, 10000, 100000} {
				b := prefill(1, 512)
				b.PrefillContext = cached
				b.PrefillAttnPairs += 512 * float64(cached)
				got := p.StepTime(&b).Total
				if got < prev {
					t.Errorf("prefill over %d cached tokens: %v < %v", cached, got, prev)
				}
				prev = got
			}
		})
	}
}

func TestTensorParallelSpeedsUpBigSteps(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "qwen3-32b", "mixtral-8x7b"} {
		tp1 := pricer(t, model, "h100", 1, nil)
		tp2 := pricer(t, model, "h100", 2, nil)
		for _, b := range []Batch{prefill(4, 2048), decode(256, 2000)} {
			t1, t2 := tp1.StepTime(&b), tp2.StepTime(&b)
			if t2.Total >= t1.Total {
				t.Errorf("%s %+v: TP2 %v ≥ TP1 %v", model, b, t2.Total, t1.Total)
			}
			if t2.Comm == 0 {
				t.Errorf("%s: TP2 has no all-reduce time", model)
			}
		}
	}
}

func TestHostTime(t *testing.T) {
	a, err := DefaultRooflineAssumptions()
	if err != nil {
		t.Fatal(err)
	}
	graphs := pricer(t, "llama-3.1-8b", "h100", 1, nil)
	eager := pricer(t, "llama-3.1-8b", "h100", 1, func(d *Deployment) { d.EnforceEager = true })
	small, big, pre := decode(8, 100), decode(1024, 100), prefill(1, 64)
	for _, tt := range []struct {
		name string
		p    Pricer
		b    Batch
		want time.Duration
	}{
		{"graphed decode", graphs, small, a.HostStepGraphed + 8*a.HostPerSampledToken},
		{"decode above the largest graph", graphs, big, a.HostStepEager + 1024*a.HostPerSampledToken},
		{"prefill", graphs, pre, a.HostStepEager + a.HostPerSampledToken},
		{"enforce eager", eager, small, a.HostStepEager + 8*a.HostPerSampledToken},
	} {
		if got := tt.p.StepTime(&tt.b).Host; got != tt.want {
			t.Errorf("%s: host %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMoEWeightsTouched(t *testing.T) {
	// Qwen3-30B-A3B: 128 experts, top-8. One token reads 8 experts per
	// layer; a large batch reads all 128, so memory grows and then saturates.
	p := pricer(t, "qwen3-30b-a3b", "h100", 1, nil)
	b1, b64, b4k, b8k := decode(1, 10), decode(64, 10), prefill(1, 4096), prefill(1, 8192)
	m1, m64 := p.StepTime(&b1).Memory, p.StepTime(&b64).Memory
	if m64 < 5*m1 {
		t.Errorf("64 rows touch most experts: memory %v vs one row %v", m64, m1)
	}
	r := p.(*roofline)
	perToken := r.bytesKVWrite + r.bytesActPerToken
	d4k := p.StepTime(&b4k).Memory - time.Duration(4096*perToken*r.secPerByte*1e9)
	d8k := p.StepTime(&b8k).Memory - time.Duration(8192*perToken*r.secPerByte*1e9)
	if diff := d8k - d4k; diff > 10*time.Microsecond || diff < -10*time.Microsecond {
		t.Errorf("weights read at 4096 and 8192 tokens differ by %v: all experts are already touched", diff)
	}
}

func TestSlidingWindowCapsAttention(t *testing.T) {
	// gpt-oss: half the layers attend to 128 tokens, so a long context costs
	// about half of what it would with every layer full.
	p := pricer(t, "gpt-oss-120b", "h100", 1, nil).(*roofline)
	short, long := decode(1, 1000), decode(1, 101000)
	extra := p.StepTime(&long).Memory - p.StepTime(&short).Memory
	allFull := time.Duration(100000 * (p.bytesKVFull + p.bytesKVSW) * p.secPerByte * 1e9)
	if extra < allFull*45/100 || extra > allFull*55/100 {
		t.Errorf("100k more context tokens cost %v; with every layer full %v", extra, allFull)
	}
}

func TestStepTimeDoesNotAllocate(t *testing.T) {
	for _, model := range []string{"llama-3.1-70b", "deepseek-v3", "gpt-oss-120b"} {
		p := pricer(t, model, "h200", 8, nil)
		b := decode(128, 3000)
		b.NumPrefill, b.PrefillTokens, b.PrefillAttnPairs, b.PrefillContext = 1, 1024, 1024*1025/2+1024*500, 500
		if n := testing.AllocsPerRun(100, func() { p.StepTime(&b) }); n != 0 {
			t.Errorf("%s: StepTime allocates %v times per call", model, n)
		}
	}
}

func BenchmarkStepTime(b *testing.B) {
	p := pricer(b, "deepseek-v3", "h200", 8, nil)
	batch := decode(128, 3000)
	batch.NumPrefill, batch.PrefillTokens, batch.PrefillAttnPairs = 1, 1024, 1024*1025/2
	b.ReportAllocs()
	for b.Loop() {
		p.StepTime(&batch)
	}
}
