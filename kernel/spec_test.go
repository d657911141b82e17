package kernel

import (
	"math"
	"strings"
	"testing"
	"time"

	"blis/catalog"
)

// specDeploy is a deployment of model on chip at TP tp with spec.
func specDeploy(t testing.TB, model, chip string, tp int, spec Speculation) Deployment {
	t.Helper()
	d := deploy(t, model, chip, tp)
	d.MaxNumSeqs = 256
	d.Spec = spec
	return d
}

// bothPricers builds the fitted and the roofline pricer of d.
func bothPricers(t testing.TB, d Deployment) map[string]Pricer {
	t.Helper()
	out := map[string]Pricer{}
	for name, build := range map[string]func(Deployment) (Pricer, error){"fitted": NewFitted, "roofline": NewRoofline} {
		p, err := build(d)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = p
	}
	return out
}

// verifyBatch is n decode rows at ctx tokens of context each verifying k
// drafts; plainBatch the same rows decoding one token.
func verifyBatch(n, k int, ctx int64) Batch {
	return Batch{NumDecode: n, DecodeTokens: n * (1 + k), DecodeContext: int64(n) * ctx, Sampled: n, SpecRows: n, SpecTokens: n * k}
}

func plainBatch(n int, ctx int64) Batch {
	return Batch{NumDecode: n, DecodeTokens: n, DecodeContext: int64(n) * ctx, Sampled: n}
}

func TestValidateSpec(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model string
		tp    int
		spec  Speculation
		want  string // "" = valid
	}{
		{"off", "llama-3.1-8b", 1, Speculation{}, ""},
		{"eagle3", "meta-llama/Llama-3.1-8B-Instruct", 1, Speculation{Method: "eagle3", NumTokens: 3}, ""},
		{"mtp", "deepseek-v3", 8, Speculation{Method: "mtp", NumTokens: 1}, ""},
		{"mtp draft tp 1", "deepseek-v3", 8, Speculation{Method: "mtp", NumTokens: 2, DraftTP: 1}, ""},
		{"ngram", "llama-3.1-8b", 1, Speculation{Method: "ngram", NumTokens: 5}, ""},
		{"draft model", "meta-llama/Llama-3.1-70B-Instruct", 4, Speculation{Method: "draft_model", NumTokens: 4, DraftModel: "meta-llama/Llama-3.1-8B-Instruct"}, ""},
		{"tokens without method", "llama-3.1-8b", 1, Speculation{NumTokens: 3}, "without a method"},
		{"unknown method", "llama-3.1-8b", 1, Speculation{Method: "medusa", NumTokens: 3}, `method "medusa" is not supported`},
		{"k 0", "llama-3.1-8b", 1, Speculation{Method: "ngram"}, "num_speculative_tokens 0 must be in 1..32"},
		{"k 33", "llama-3.1-8b", 1, Speculation{Method: "ngram", NumTokens: 33}, "num_speculative_tokens 33 must be in 1..32"},
		{"mtp without layers", "llama-3.1-8b", 1, Speculation{Method: "mtp", NumTokens: 1}, "has no MTP layers (num_nextn_predict_layers, mtp_num_hidden_layers); models that have: [Qwen/Qwen3.5-397B-A17B deepseek-ai/DeepSeek-R1"},
		{"eagle on MLA", "deepseek-v3", 8, Speculation{Method: "eagle3", NumTokens: 1}, "use method mtp"},
		{"eagle head by id", "llama-3.1-8b", 1, Speculation{Method: "eagle3", NumTokens: 1, DraftModel: "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}, ""},
		{"mtp naming the target", "deepseek-v3", 8, Speculation{Method: "mtp", NumTokens: 1, DraftModel: "deepseek-ai/DeepSeek-V3"}, ""},
		{"mtp naming another model", "deepseek-v3", 8, Speculation{Method: "mtp", NumTokens: 1, DraftModel: "deepseek-ai/DeepSeek-R1"}, "must be empty or the target deepseek-ai/DeepSeek-V3"},
		{"draft model missing", "llama-3.1-8b", 1, Speculation{Method: "draft_model", NumTokens: 1}, "needs a draft model"},
		{"draft model unknown", "llama-3.1-8b", 1, Speculation{Method: "draft_model", NumTokens: 1, DraftModel: "no/such-model"}, "unknown model"},
		{"draft model other vocab", "meta-llama/Llama-3.1-70B-Instruct", 4, Speculation{Method: "draft_model", NumTokens: 1, DraftModel: "Qwen/Qwen3-0.6B"}, "must share the target's tokenizer"},
		{"draft tp 2 of 8", "deepseek-v3", 8, Speculation{Method: "mtp", NumTokens: 1, DraftTP: 2}, "draft_tensor_parallel_size 2 cannot be other than 1 or --tensor-parallel-size 8"},
		{"draft tp negative", "deepseek-v3", 8, Speculation{Method: "mtp", NumTokens: 1, DraftTP: -1}, "must be ≥ 1"},
		{"ngram with a model", "llama-3.1-8b", 1, Speculation{Method: "ngram", NumTokens: 1, DraftModel: "llama-3.1-8b"}, "runs no draft model"},
		{"dspark", "deepseek-r1", 8, Speculation{Method: "dspark", NumTokens: 5}, ""},
		{"dspark naming the target", "deepseek-r1", 8, Speculation{Method: "dspark", NumTokens: 7, DraftModel: "deepseek-ai/DeepSeek-R1"}, ""},
		{"dspark naming another model", "deepseek-r1", 8, Speculation{Method: "dspark", NumTokens: 5, DraftModel: "deepseek-ai/DeepSeek-V3"}, "must be empty or the target deepseek-ai/DeepSeek-R1"},
		{"dspark without MTP layers", "llama-3.1-8b", 1, Speculation{Method: "dspark", NumTokens: 5}, "no MTP layers to size a DSpark stack on; models that have: [Qwen/Qwen3.5-397B-A17B deepseek-ai/DeepSeek-R1 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := specDeploy(t, tc.model, "h100", tc.tp, tc.spec)
			err := Validate(d)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// vLLM's adjust_cudagraph_sizes_for_spec_decode rounds the default capture
// list up to multiples of 1 + k (the worked examples: max 120 and 160 for
// max_num_seqs 20 and k = 2, 3).
func TestSpecCaptureSizes(t *testing.T) {
	for _, tc := range []struct {
		q, maxCap int
		want      []int
	}{
		{3, 120, []int{3, 6, 9, 18, 24, 33, 42, 48, 57, 66, 72, 81, 90, 96, 105, 114, 120}},
		{4, 160, []int{4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152, 160}},
		{4, 3, nil},
	} {
		got, err := specCaptureSizes(captureSizes(tc.maxCap), tc.q, tc.maxCap)
		if tc.want == nil {
			if err == nil {
				t.Errorf("q %d max %d: want an error, got %v", tc.q, tc.maxCap, got)
			}
			continue
		}
		if err != nil || !equalInts(got, tc.want) {
			t.Errorf("q %d max %d: got %v, %v; want %v", tc.q, tc.maxCap, got, err, tc.want)
		}
	}
	if got, _ := specCaptureSizes([]int{1, 2}, 5, 4); got != nil {
		t.Errorf("sizes past the cap: got %v", got)
	}
	if got, _ := specCaptureSizes([]int{1}, 3, 4); !equalInts(got, []int{3}) {
		t.Errorf("one size rounded: got %v", got)
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

// A verification step pads to the spec-rounded capture sizes and is a full
// graph only when every row verifies k drafts (uniform decode).
func TestSpecVerificationGraphs(t *testing.T) {
	d := specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle3", NumTokens: 3})
	d.MaxNumSeqs = 20
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(*fitted)
	if last := f.captureSizes[len(f.captureSizes)-1]; last != 160 {
		t.Fatalf("largest capture size %d, want min(2 × 20 × 4, 512) = 160", last)
	}
	uniform := verifyBatch(5, 3, 1000)
	if m, graphed, full := f.graphFor(uniform.Tokens(), f.uniformDecode(&uniform)); m != 24 || !graphed || !full {
		t.Errorf("5 rows × 4 tokens: padded %d graphed %v full %v, want 24 in a full graph", m, graphed, full)
	}
	ragged := uniform
	ragged.SpecRows, ragged.SpecTokens, ragged.DecodeTokens = 4, 12, 17
	if _, graphed, full := f.graphFor(ragged.Tokens(), f.uniformDecode(&ragged)); !graphed || full {
		t.Errorf("a row without drafts must run piecewise graphs: graphed %v full %v", graphed, full)
	}
	if a, b := p.StepTime(&uniform), p.StepTime(&ragged); b.Host <= a.Host {
		t.Errorf("piecewise host %v must exceed the full graph's %v", b.Host, a.Host)
	}
	if m, ok := f.spec.pad(5); m != 8 || !ok {
		t.Errorf("a draft pass of 5 rows pads to %d (graphed %v), want 8", m, ok)
	}
}

// vLLM rounds the capture sizes against max_cudagraph_capture_size as
// _set_cudagraph_sizes leaves it: the largest size of the list (its
// valid_max_size), not the formula's bound. max_num_seqs 3, k = 4: the
// formula gives min(2 × 3 × 5, 512) = 30, the default list stops at 24,
// and 24 rounds up to 25 > 24, which vLLM drops. With a given list, its
// largest size is the bound (64 rounds up to 65, dropped).
func TestSpecCaptureSizesBoundIsTheListsLargest(t *testing.T) {
	d := specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle3", NumTokens: 4})
	d.MaxNumSeqs = 3
	for _, tc := range []struct {
		sizes, want []int
	}{
		{nil, []int{5, 10, 20}},
		{[]int{1, 2, 4, 8, 16, 32, 64}, []int{5, 10, 20, 35}},
	} {
		d.CaptureSizes = tc.sizes
		p, err := NewFitted(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.(*fitted).captureSizes; !equalInts(got, tc.want) {
			t.Errorf("capture sizes %v: got %v, want %v", tc.sizes, got, tc.want)
		}
	}
}

// The proposer's time grows with k and with the requests it drafts for,
// in both pricers, and shows in Draft.
func TestSpecDraftGrows(t *testing.T) {
	for _, tc := range []struct {
		model string
		tp    int
		spec  Speculation
	}{
		{"deepseek-ai/DeepSeek-V3", 8, Speculation{Method: "mtp"}},
		{"meta-llama/Llama-3.1-8B-Instruct", 1, Speculation{Method: "eagle3"}},
		{"meta-llama/Llama-3.1-8B-Instruct", 1, Speculation{Method: "eagle"}},
		{"meta-llama/Llama-3.1-70B-Instruct", 4, Speculation{Method: "draft_model", DraftModel: "meta-llama/Llama-3.1-8B-Instruct", DraftTP: 1}},
		{"deepseek-ai/DeepSeek-R1", 8, Speculation{Method: "dspark"}},
	} {
		for name := range bothPricers(t, specDeploy(t, tc.model, "h200", tc.tp, Speculation{})) {
			prev := time.Duration(0)
			for _, k := range []int{1, 2, 3, 5, 8} {
				s := tc.spec
				s.NumTokens = k
				p := bothPricers(t, specDeploy(t, tc.model, "h200", tc.tp, s))[name]
				b := verifyBatch(16, k, 2000)
				bd := p.StepTime(&b)
				if bd.Draft <= prev {
					t.Errorf("%s %s %s: k %d drafts in %v, not more than k−1's %v", name, tc.model, tc.spec.Method, k, bd.Draft, prev)
				}
				prev = bd.Draft
				if bd.Draft >= bd.Total {
					t.Errorf("%s %s: draft %v is not inside total %v", name, tc.model, bd.Draft, bd.Total)
				}
			}
			s := tc.spec
			s.NumTokens = 3
			p := bothPricers(t, specDeploy(t, tc.model, "h200", tc.tp, s))[name]
			prev = 0
			for _, n := range []int{1, 16, 64, 200} {
				b := verifyBatch(n, 3, 2000)
				if bd := p.StepTime(&b); bd.Draft <= prev {
					t.Errorf("%s %s: %d rows draft in %v, not more than fewer rows' %v", name, tc.model, n, bd.Draft, prev)
				} else {
					prev = bd.Draft
				}
			}
		}
	}
}

// One draft pass (k = 1) costs well under one target decode step:
// MTP is one DeepSeek layer of 61 plus its embedding and LM head, an
// EAGLE-3 head one Llama layer of 32 plus a 32000-row LM head.
func TestSpecDraftPassIsSmall(t *testing.T) {
	for _, tc := range []struct {
		model, chip string
		tp          int
		method      string
	}{
		{"deepseek-ai/DeepSeek-V3", "h200", 8, "mtp"},
		{"deepseek-ai/DeepSeek-V3", "h100", 8, "mtp"},
		{"deepseek-ai/DeepSeek-V3.2", "h200", 8, "mtp"},
		{"meta-llama/Llama-3.1-8B-Instruct", "h100", 1, "eagle3"},
		{"meta-llama/Llama-3.1-8B-Instruct", "h200", 1, "eagle3"},
	} {
		base := bothPricers(t, specDeploy(t, tc.model, tc.chip, tc.tp, Speculation{}))
		spec := bothPricers(t, specDeploy(t, tc.model, tc.chip, tc.tp, Speculation{Method: tc.method, NumTokens: 1}))
		for name := range base {
			for _, n := range []int{1, 32} {
				plain, ver := plainBatch(n, 2000), verifyBatch(n, 1, 2000)
				step := base[name].StepTime(&plain).Total
				pass := spec[name].StepTime(&ver).Draft
				ratio := float64(pass) / float64(step)
				t.Logf("%s %s %s on %s, %d rows: one draft pass %v, decode step %v, ratio %.3f", name, tc.model, tc.method, tc.chip, n, pass, step, ratio)
				if pass <= 0 || ratio > 0.25 {
					t.Errorf("%s %s on %s, %d rows: draft pass %v vs decode step %v (ratio %.3f)", name, tc.method, tc.chip, n, pass, step, ratio)
				}
			}
		}
	}
}

// Decode is memory-bound at small batches: verifying k drafts per row
// costs more than decoding one token per row and much less than k + 1
// decode steps, the proposer included.
func TestSpecVerificationVersusDecode(t *testing.T) {
	const k = 3
	for _, model := range []string{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B-Instruct"} {
		tp := 1
		if strings.Contains(model, "70B") {
			tp = 4
		}
		base := bothPricers(t, specDeploy(t, model, "h100", tp, Speculation{}))
		spec := bothPricers(t, specDeploy(t, model, "h100", tp, Speculation{Method: "eagle3", NumTokens: k}))
		for name := range base {
			for _, n := range []int{1, 4, 16} {
				plain, ver := plainBatch(n, 1000), verifyBatch(n, k, 1000)
				a, b := base[name].StepTime(&plain).Total, spec[name].StepTime(&ver).Total
				t.Logf("%s %s, %d rows: decode %v, verify %d + draft %v (×%.2f)", name, model, n, a, k, b, float64(b)/float64(a))
				if b <= a || b >= (1+k)*a {
					t.Errorf("%s %s, %d rows: verify+draft %v outside (%v, %v)", name, model, n, b, a, (1+k)*a)
				}
			}
		}
	}
}

// n-gram and suffix proposers run on the CPU: no GPU time, a host cost per
// sampled row.
func TestSpecNgramIsHostOnly(t *testing.T) {
	st, err := catalog.LookupStack("vllm")
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"ngram", "suffix"} {
		for name, p := range bothPricers(t, specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: method, NumTokens: 4})) {
			b := verifyBatch(32, 4, 1500)
			bd := p.StepTime(&b)
			if want := 32 * st.HostNgramPerRow; bd.Draft != want {
				t.Errorf("%s %s: draft %v, want 32 × %v", name, method, bd.Draft, st.HostNgramPerRow)
			}
			var noDraft Breakdown
			switch q := p.(type) {
			case *fitted:
				c := *q
				c.spec = nil
				noDraft = c.StepTime(&b)
			case *roofline:
				c := *q
				c.spec = nil
				noDraft = c.StepTime(&b)
			}
			if bd.Compute != noDraft.Compute || bd.Memory != noDraft.Memory || bd.Comm != noDraft.Comm || bd.Launch != noDraft.Launch {
				t.Errorf("%s %s adds GPU time: %+v vs %+v", name, method, bd, noDraft)
			}
			if bd.Host != noDraft.Host+bd.Draft {
				t.Errorf("%s %s: host %v, want %v + %v", name, method, bd.Host, noDraft.Host, bd.Draft)
			}
		}
	}
}

// TPOT at concurrency 1 (one request decoding alone): each step verifies k
// drafts and proposes k more, and emits the accepted drafts plus one
// token, the mean acceptance length τ (1 ≤ τ ≤ k + 1):
//
//	TPOT ≈ (t_verify(k) + t_draft(k)) / τ = StepTime(verify of k).Total / τ
//
// with StepTime's Total already holding both. This test computes it as a
// lead would, and checks speculation pays at a typical EAGLE-3 acceptance
// on a memory-bound 8B decode, and cannot pay when nothing is accepted.
func TestSpecTPOTAtConcurrencyOne(t *testing.T) {
	const k, ctx = 3, 2000
	base := bothPricers(t, specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{}))
	spec := bothPricers(t, specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle3", NumTokens: k}))
	tpot := func(p Pricer, b Batch, tau float64) time.Duration {
		return time.Duration(float64(p.StepTime(&b).Total) / tau)
	}
	for name := range base {
		plain := tpot(base[name], plainBatch(1, ctx), 1)
		good := tpot(spec[name], verifyBatch(1, k, ctx), 2.5)
		none := tpot(spec[name], verifyBatch(1, k, ctx), 1)
		t.Logf("%s: TPOT plain %v, eagle3 k=%d at τ=2.5 %v, at τ=1 %v", name, plain, k, good, none)
		if good >= plain || none <= plain {
			t.Errorf("%s: TPOT plain %v, τ=2.5 %v, τ=1 %v", name, plain, good, none)
		}
	}
}

// Only the last pipeline stage runs the proposer.
func TestSpecPipelineLastStage(t *testing.T) {
	d := specDeploy(t, "meta-llama/Llama-3.1-70B-Instruct", "h100", 2, Speculation{Method: "eagle3", NumTokens: 2})
	d.PP = 2
	for _, build := range []func(Deployment) (Pricer, error){NewFitted, NewRoofline} {
		p, err := NewPipeline(d, build)
		if err != nil {
			t.Fatal(err)
		}
		b := verifyBatch(8, 2, 1000)
		st := p.StageTimes(&b, nil)
		if st[0].Draft != 0 || st[1].Draft <= 0 {
			t.Errorf("%s: stage drafts %v, %v; want only the last", p.Name(), st[0].Draft, st[1].Draft)
		}
		if sum := p.StepTime(&b); sum.Draft != st[1].Draft {
			t.Errorf("%s: pipeline draft %v, want the last stage's %v", p.Name(), sum.Draft, st[1].Draft)
		}
	}
}

// A data-parallel MoE group drafts on every rank (DeepSeek's MTP layer is
// a MoE layer); Explain names the proposer.
func TestSpecGroupAndExplain(t *testing.T) {
	d := specDeploy(t, "deepseek-ai/DeepSeek-V3", "h200", 8, Speculation{Method: "mtp", NumTokens: 2})
	d.DP, d.ExpertParallel = 2, true
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	bs := []Batch{verifyBatch(8, 2, 1000), verifyBatch(4, 2, 1000)}
	if bd := GroupStepTime(p, bs); bd.Draft <= 0 || bd.Total <= bd.Draft {
		t.Errorf("group step %+v", bd)
	}
	ops := p.(Explainer).Explain(&bs[0])
	if last := ops[len(ops)-1]; !strings.Contains(last.Name, "speculative proposer: mtp") || last.Time <= 0 {
		t.Errorf("Explain's last op %+v, want the proposer", last)
	}
}

func TestBreakdownAddDraft(t *testing.T) {
	a := Breakdown{Compute: 1, Draft: 2, Total: 3}
	a.Add(Breakdown{Compute: 4, Draft: 5, Total: 6})
	if a.Draft != 7 || a.Compute != 5 || a.Total != 9 {
		t.Errorf("Add: %+v", a)
	}
}

// BenchmarkStepTimeSpec prices a verification step with its draft passes:
// go test ./kernel -run x -bench StepTime -benchmem
func BenchmarkStepTimeSpec(b *testing.B) {
	for _, tc := range []struct {
		name, model string
		tp          int
		spec        Speculation
	}{
		{"mtp-DeepSeek-V3", "deepseek-ai/DeepSeek-V3", 8, Speculation{Method: "mtp", NumTokens: 3}},
		{"eagle3-Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", 1, Speculation{Method: "eagle3", NumTokens: 3}},
		{"draft_model-Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", 4, Speculation{Method: "draft_model", NumTokens: 3, DraftModel: "meta-llama/Llama-3.1-8B-Instruct"}},
		{"dspark-DeepSeek-R1", "deepseek-ai/DeepSeek-R1", 8, Speculation{Method: "dspark", NumTokens: 3}},
	} {
		for name, p := range bothPricers(b, specDeploy(b, tc.model, "h200", tc.tp, tc.spec)) {
			b.Run(name+"/"+tc.name, func(b *testing.B) {
				batch := verifyBatch(64, 3, 2000)
				b.ReportAllocs()
				for b.Loop() {
					p.StepTime(&batch)
				}
			})
		}
	}
}

// vLLM loads the draft beside the target: its weights and its attention
// layers' KV come out of the pool.
func TestSpecMemory(t *testing.T) {
	for _, tc := range []struct {
		model, chip string
		tp          int
		spec        Speculation
		// Expected extra weights per GPU, GiB, and KV bytes per token
		// relative to the target's.
		wLo, wHi, kvRatio float64
	}{
		// One MTP module: 256 fp8 experts of 3 × 7168 × 2048 over 8 GPUs
		// (1.41 GB), MLA, eh_proj, its shared head; one layer's KV of 61.
		{"deepseek-ai/DeepSeek-V3", "h200", 8, Speculation{Method: "mtp", NumTokens: 1}, 1.5, 2.2, 62.0 / 61},
		// EAGLE-3 head: qkv 8192×6144, o, MLP 3×4096×14336, fc 12288×4096,
		// a 32000-row head, in bf16 (0.79 GiB); one layer's KV of 32.
		{"meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle3", NumTokens: 3}, 0.75, 0.85, 33.0 / 32},
		// EAGLE-1 head: fc 8192×4096 instead, no LM head of its own (0.47 GiB).
		{"meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle", NumTokens: 3}, 0.45, 0.5, 33.0 / 32},
		{"meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "ngram", NumTokens: 3}, 0, 0, 1},
		// DSpark on DeepSeek-R1: three MTP-sized stages (3 × 1.4 GB of
		// experts over 8 GPUs, MLA), main_proj 21504×7168, the head, the
		// Markov head; three layers' KV of 61.
		{"deepseek-ai/DeepSeek-R1", "h200", 8, Speculation{Method: "dspark", NumTokens: 5}, 4.2, 5.5, 64.0 / 61},
	} {
		d := specDeploy(t, tc.model, tc.chip, tc.tp, Speculation{})
		d.MaxModelLen = 8192
		base, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		d.Spec = tc.spec
		p, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		dw := (p.WeightBytes - base.WeightBytes) / gib
		if dw < tc.wLo || dw > tc.wHi {
			t.Errorf("%s %s: draft weights %.3f GiB per GPU, want [%g, %g]", tc.model, tc.spec.Method, dw, tc.wLo, tc.wHi)
		}
		if r := p.KVBytesPerToken / base.KVBytesPerToken; math.Abs(r-tc.kvRatio) > 1e-9 {
			t.Errorf("%s %s: KV bytes per token ×%.4f, want ×%.4f", tc.model, tc.spec.Method, r, tc.kvRatio)
		}
		if tc.wHi > 0 && p.NumBlocks >= base.NumBlocks {
			t.Errorf("%s %s: %d blocks with the draft, %d without", tc.model, tc.spec.Method, p.NumBlocks, base.NumBlocks)
		}
	}
}

// Odd batches (empty, prefill only, inconsistent spec counts, negative
// fields) price without panicking and never negative, in both pricers.
func FuzzSpecStepTime(f *testing.F) {
	f.Add(0, 0, 0, 0, 0, int64(0), 0, 0)
	f.Add(0, 1, 512, 0, 1, int64(0), 0, 0)
	f.Add(8, 0, 0, 32, 8, int64(16000), 8, 24)
	f.Add(-1, 3, -5, 7, -2, int64(-9), 9, -3)
	pricers := bothPricers(f, specDeploy(f, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle3", NumTokens: 3}))
	mtp := bothPricers(f, specDeploy(f, "deepseek-ai/DeepSeek-V3", "h200", 8, Speculation{Method: "mtp", NumTokens: 2}))
	dspark := bothPricers(f, specDeploy(f, "deepseek-ai/DeepSeek-R1", "h200", 8, Speculation{Method: "dspark", NumTokens: 5}))
	f.Fuzz(func(t *testing.T, nDec, nPre, preTok, decTok, sampled int, ctx int64, specRows, specTok int) {
		b := Batch{NumDecode: nDec % 4096, NumPrefill: nPre % 4096, PrefillTokens: preTok % 65536, DecodeTokens: decTok % 65536,
			Sampled: sampled % 4096, DecodeContext: ctx % (1 << 30), SpecRows: specRows, SpecTokens: specTok}
		for _, ps := range []map[string]Pricer{pricers, mtp, dspark} {
			for name, p := range ps {
				bd := p.StepTime(&b)
				if bd.Total < 0 || bd.Draft < 0 || bd.Draft > bd.Total && bd.Total > 0 {
					t.Fatalf("%s: %+v for %+v", name, bd, b)
				}
			}
		}
	})
}

// With --async-scheduling the draft passes are GPU time: the step is the
// longer of the GPU's work (verification and drafts) and the host's.
func TestSpecAsync(t *testing.T) {
	d := specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 1, Speculation{Method: "eagle3", NumTokens: 3})
	d.AsyncScheduling = true
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	b := verifyBatch(8, 3, 1000)
	bd := p.StepTime(&b)
	gpu := bd.Compute + bd.Memory + bd.Comm + bd.Launch
	if bd.Total != max(gpu, bd.Host) || bd.Draft <= 0 || bd.Draft > gpu {
		t.Errorf("async step %+v: total must be max(gpu %v, host %v) with the draft inside the GPU's", bd, gpu, bd.Host)
	}
}

// The target computes logits at every verified draft as well as at each
// sampling row: its LM head runs on Sampled + SpecTokens rows.
func TestSpecVerificationLogits(t *testing.T) {
	p, err := NewFitted(specDeploy(t, "meta-llama/Llama-3.1-8B-Instruct", "h100", 2, Speculation{Method: "eagle3", NumTokens: 3}))
	if err != nil {
		t.Fatal(err)
	}
	ver := verifyBatch(16, 3, 1000)
	same := ver
	same.Sampled, same.SpecRows, same.SpecTokens = 16*4, 0, 0
	plain := ver
	plain.SpecRows, plain.SpecTokens = 0, 0
	head := func(b Batch) time.Duration {
		for _, o := range p.(Explainer).Explain(&b) {
			if o.Name == "lm_head" {
				return o.Time
			}
		}
		t.Fatal("no lm_head in Explain")
		return 0
	}
	// (The fitted GEMM law's measured residuals make 16 rows no cheaper
	// than 64 here, so only the equality and the change are checked.)
	if a, b, c := head(ver), head(same), head(plain); a != b || a == c {
		t.Errorf("lm_head: verify %v, 64 sampled rows %v, 16 sampled rows %v", a, b, c)
	}
}

// A DSpark step drafts a block of k tokens in ONE forward of its three
// stages, where MTP runs k sequential passes of one layer. On DeepSeek-R1
// (TP8, H200) at one decoding row, memory-bound, raising k from 1 to 5
// moves DSpark's draft time little (one pass either way, over 1 or 5
// tokens, plus Markov steps) while MTP's grows about fivefold; the DSpark
// step at k = 5 costs about one pass of its stack (three MTP-sized
// layers, so at most four one-token MTP passes) and less than MTP's five
// passes at 1 and at 64 rows.
func TestSpecDSparkOneBlockPass(t *testing.T) {
	const k = 5
	pricers := func(method string, k int) map[string]Pricer {
		return bothPricers(t, specDeploy(t, "deepseek-r1", "h200", 8, Speculation{Method: method, NumTokens: k}))
	}
	mtp1, mtpK, ds1, dsK := pricers("mtp", 1), pricers("mtp", k), pricers("dspark", 1), pricers("dspark", k)
	for name := range dsK {
		for _, n := range []int{1, 64} {
			b1, bk := verifyBatch(n, 1, 2000), verifyBatch(n, k, 2000)
			pass := mtp1[name].StepTime(&b1).Draft
			m, d := mtpK[name].StepTime(&bk), dsK[name].StepTime(&bk)
			d1 := ds1[name].StepTime(&b1).Draft
			t.Logf("%s, %d rows, k=%d: dspark step %v (draft %v; k=1 %v), mtp step %v (draft %v; k=1 %v)",
				name, n, k, d.Total, d.Draft, d1, m.Total, m.Draft, pass)
			if d.Draft <= 0 || d.Draft >= m.Draft {
				t.Errorf("%s, %d rows: dspark draft %v not below mtp's %d passes %v", name, n, k, d.Draft, m.Draft)
			}
			if n != 1 {
				continue
			}
			if r := float64(d.Draft) / float64(d1); r > 2 {
				t.Errorf("%s, one row: dspark draft grows ×%.2f from k=1 to k=%d, want one pass (≤ ×2; its MoE stages read more experts for 5 tokens than for 1)", name, r, k)
			}
			if r := float64(m.Draft) / float64(pass); r < 4 {
				t.Errorf("%s, one row: mtp draft grows only ×%.2f from k=1 to k=%d", name, r, k)
			}
			if r := float64(d.Draft) / float64(pass); r > 4 {
				t.Errorf("%s, one row: dspark draft %v is %.2f one-token MTP passes (%v), want ≤ 4 (three stages, head, Markov loop)", name, d.Draft, r, pass)
			}
		}
	}
}

// DSpark's stack is derived from the MTP layer: three stages of its
// decoder layer, the context projection per scheduled token, the Markov
// head; the block's LM head runs on k rows per request.
func TestSpecDSparkDraftShape(t *testing.T) {
	g, err := catalog.LookupGraph("deepseek-ai/DeepSeek-R1")
	if err != nil {
		t.Fatal(err)
	}
	d := specDeploy(t, "deepseek-r1", "h200", 8, Speculation{Method: "dspark", NumTokens: 5})
	dg, err := resolveDraft(d, g)
	if err != nil {
		t.Fatal(err)
	}
	if !dg.block || len(dg.layers) != 1 || dg.counts[0] != catalog.DSparkStages || dg.layersAPass != catalog.DSparkStages {
		t.Fatalf("dspark draft: block %v, layers %d, counts %v", dg.block, len(dg.layers), dg.counts)
	}
	if len(dg.markov) == 0 || len(dg.combine) == 0 || !strings.Contains(dg.description, "3 × mtp_moe stages") {
		t.Errorf("dspark draft: markov %d ops, context %d ops, %q", len(dg.markov), len(dg.combine), dg.description)
	}
	blk, mk, reqs := specBlock(&Batch{NumDecode: 4, DecodeTokens: 24, DecodeContext: 8000, Sampled: 4, SpecRows: 4, SpecTokens: 20}, 5)
	if reqs != 4 || blk.DecodeTokens != 20 || blk.Sampled != 20 || blk.NumDecode != 4 || mk.Sampled != 4 || blk.DecodeContext != 8020 {
		t.Errorf("specBlock: %+v / %+v / %d", blk, mk, reqs)
	}
}

// DSpark's draft step is one FULL graph when the decode cudagraph mode is
// FULL, at capture sizes rounded once more to multiples of k (the block's
// queries per request); vLLM's DFlash/DSpark drafter has no PIECEWISE
// graphs, so PIECEWISE and NONE run it eagerly.
func TestSpecDSparkGraphs(t *testing.T) {
	const k = 5
	for _, tc := range []struct {
		mode   string
		graphs bool
	}{{"", true}, {"FULL", true}, {"FULL_DECODE_ONLY", true}, {"PIECEWISE", false}, {"NONE", false}} {
		d := specDeploy(t, "deepseek-r1", "h200", 8, Speculation{Method: "dspark", NumTokens: k})
		d.CUDAGraphMode = tc.mode
		p, err := NewFitted(d)
		if err != nil {
			t.Fatal(err)
		}
		s := p.(*fitted).spec
		if s.graphs != tc.graphs || !s.block {
			t.Errorf("mode %q: graphs %v block %v, want graphs %v", tc.mode, s.graphs, s.block, tc.graphs)
			continue
		}
		if !tc.graphs {
			continue
		}
		if s.passGap != 0 {
			t.Errorf("mode %q: a FULL graph has gaps %v", tc.mode, s.passGap)
		}
		for _, c := range s.captureSizes {
			if c%k != 0 {
				t.Errorf("mode %q: draft capture size %d not a multiple of %d (%v)", tc.mode, c, k, s.captureSizes)
				break
			}
		}
		if m, ok := s.pad(3 * k); !ok || m != 3*k {
			t.Errorf("mode %q: a block of 3 requests pads to %d (graphed %v), want %d", tc.mode, m, ok, 3*k)
		}
		if _, ok := s.pad(1 << 20); ok || s.eagerCPU <= s.passCPU || s.eagerGap <= 0 {
			t.Errorf("mode %q: a block beyond the largest capture size replays a graph (%v) or launches as cheaply (%g ≤ %g s)", tc.mode, ok, s.eagerCPU, s.passCPU)
		}
	}
}

// The module laws (MLA, DSA, DeepSeek-V4) price a verify row's every query
// token: their projections run for each, so a step verifying 3 drafts per
// row costs the attention module more than one token per row does.
func TestSpecModuleLawsCountVerifyTokens(t *testing.T) {
	for _, model := range []string{"deepseek-r1", "deepseek-v3.2", "deepseek-v4-flash"} {
		t.Run(model, func(t *testing.T) {
			d := deploy(t, model, "h200", 8)
			d.Spec = Speculation{Method: "mtp", NumTokens: 3}
			p, err := NewFitted(d)
			if err != nil {
				t.Fatal(err)
			}
			attn := func(b Batch) time.Duration {
				var sum time.Duration
				for _, o := range p.(Explainer).Explain(&b) {
					if o.Name == "attn" || strings.HasPrefix(o.Name, "attn (") {
						sum += o.Time
					}
				}
				return sum
			}
			one := Batch{NumDecode: 32, DecodeTokens: 32, DecodeContext: 32 * 2000, Sampled: 32}
			spec := Batch{NumDecode: 32, DecodeTokens: 128, DecodeContext: 32 * 2000, Sampled: 32, SpecRows: 32, SpecTokens: 96}
			if a, b := attn(one), attn(spec); b <= a {
				t.Errorf("attention module %v verifying 3 drafts a row, %v without: want more", b, a)
			}
		})
	}
}
