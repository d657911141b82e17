package specdecode

import (
	"math"
	"strings"
	"testing"
)

func TestFromRates(t *testing.T) {
	for _, tc := range []struct {
		u    []float64
		mean float64
		err  string
	}{
		{[]float64{0.7296, 0.5208, 0.3545}, 2.6049, ""},
		{nil, 1, ""},
		{[]float64{0, 0}, 1, ""},
		{[]float64{1, 1, 1}, 4, ""},
		{[]float64{0.5, 0.6}, 0, "non-increasing"},
		{[]float64{1.1}, 0, "[0, 1]"},
		{[]float64{-0.1}, 0, "[0, 1]"},
		{[]float64{math.NaN()}, 0, "[0, 1]"},
		{make([]float64, MaxPositions+1), 0, "at most"},
	} {
		s, err := FromRates(tc.u)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("FromRates(%v) error %v, want %q", tc.u, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FromRates(%v): %v", tc.u, err)
		}
		if got := s.MeanLength(); math.Abs(got-tc.mean) > 1e-9 {
			t.Errorf("FromRates(%v).MeanLength() = %v, want %v", tc.u, got, tc.mean)
		}
	}
}

func TestFromMean(t *testing.T) {
	for _, tc := range []struct {
		a     float64
		k     int
		alpha float64 // expected conditional rate (-1: error)
	}{
		{1, 3, 0},
		{4, 3, 1},
		{2, 1, 1},
		{1.5, 1, 0.5},
		{1.75, 2, 0.5}, // 0.5 + 0.25
		{1 + 0.6 + 0.36 + 0.216, 3, 0.6},
		{0.9, 3, -1},
		{4.1, 3, -1},
		{math.NaN(), 3, -1},
		{2, MaxPositions + 1, -1},
	} {
		s, err := FromMean(tc.a, tc.k)
		if tc.alpha < 0 {
			if err == nil {
				t.Errorf("FromMean(%v, %d): no error", tc.a, tc.k)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FromMean(%v, %d): %v", tc.a, tc.k, err)
		}
		if s.K() != tc.k || math.Abs(s.MeanLength()-tc.a) > 1e-9 {
			t.Errorf("FromMean(%v, %d): k %d mean %v", tc.a, tc.k, s.K(), s.MeanLength())
		}
		if math.Abs(s.Rate(1)-tc.alpha) > 1e-9 {
			t.Errorf("FromMean(%v, %d): α = %v, want %v", tc.a, tc.k, s.Rate(1), tc.alpha)
		}
	}
}

func TestFromCounts(t *testing.T) {
	s, err := FromCounts(4816, []int64{3500, 2500, 0})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Rate(2), 2500.0/4816; got != want {
		t.Errorf("rate 2 = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		n   int64
		acc []int64
	}{{0, []int64{1}}, {10, []int64{11}}, {10, []int64{5, 6}}, {10, []int64{-1}}} {
		if _, err := FromCounts(tc.n, tc.acc); err == nil {
			t.Errorf("FromCounts(%d, %v): no error", tc.n, tc.acc)
		}
	}
}

func TestResize(t *testing.T) {
	s, _ := FromRates([]float64{0.8, 0.4})
	for _, tc := range []struct {
		k    int
		want []float64
	}{
		{0, []float64{}},
		{1, []float64{0.8}},
		{2, []float64{0.8, 0.4}},
		{4, []float64{0.8, 0.4, 0.2, 0.1}}, // the last conditional ratio, 0.5, continues
	} {
		got := s.Resize(tc.k).Rates()
		if len(got) != len(tc.want) {
			t.Fatalf("Resize(%d) = %v, want %v", tc.k, got, tc.want)
		}
		for j := range got {
			if math.Abs(got[j]-tc.want[j]) > 1e-12 {
				t.Errorf("Resize(%d) = %v, want %v", tc.k, got, tc.want)
			}
		}
	}
	one, _ := FromRates([]float64{0.5})
	if got := one.Resize(3).Rates(); math.Abs(got[2]-0.125) > 1e-12 {
		t.Errorf("one position extends i.i.d.: %v", got)
	}
	zero, _ := FromRates([]float64{0.5, 0})
	if got := zero.Resize(3).Rates(); got[2] != 0 {
		t.Errorf("a zero rate stays zero: %v", got)
	}
}

// TestSamplerRandom: over many draws the realised mean acceptance length
// is within 1 % of 1 + Σu, and each position's acceptance frequency
// within 1 % of u_j.
func TestSamplerRandom(t *testing.T) {
	p, err := Preset("vllm-test-llama8b")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10000, 100000} {
		s := NewSampler(p.Schedule, Random, 42, 0)
		var pos [3]int
		total := 0
		for range n {
			a := s.Accept(3)
			total += a
			for j := 0; j < a; j++ {
				pos[j]++
			}
		}
		mean := 1 + float64(total)/float64(n)
		if want := p.Schedule.MeanLength(); math.Abs(mean-want) > 0.01*want {
			t.Errorf("%d draws: mean length %.4f, want %.4f ± 1 %%", n, mean, want)
		}
		if n < 100000 {
			continue
		}
		for j := range pos {
			got, want := float64(pos[j])/float64(n), p.Schedule.Rate(j+1)
			if math.Abs(got-want) > 0.01*want {
				t.Errorf("position %d: rate %.4f, want %.4f ± 1 %%", j+1, got, want)
			}
		}
	}
}

// TestSamplerReplay: the low-discrepancy mode tracks N·u_j within a few
// draws at every position, for any N.
func TestSamplerReplay(t *testing.T) {
	sched, _ := FromRates([]float64{0.7002, 0.2874})
	s := NewSampler(sched, Replay, 7, 3)
	var pos [2]int
	for n := 1; n <= 10000; n++ {
		a := s.Accept(2)
		for j := 0; j < a; j++ {
			pos[j]++
		}
		for j := range pos {
			if d := math.Abs(float64(pos[j]) - float64(n)*sched.Rate(j+1)); d > 4 {
				t.Fatalf("after %d draws position %d: %d accepted, want %.1f ± 4", n, j+1, pos[j], float64(n)*sched.Rate(j+1))
			}
		}
	}
}

func TestSamplerEdges(t *testing.T) {
	sched, _ := FromRates([]float64{1, 1, 1})
	s := NewSampler(sched, Random, 1, 1)
	for _, tc := range []struct{ drafts, want int }{{0, 0}, {-1, 0}, {2, 2}, {3, 3}, {5, 3}} {
		if got := s.Accept(tc.drafts); got != tc.want {
			t.Errorf("Accept(%d) with u = 1 = %d, want %d", tc.drafts, got, tc.want)
		}
	}
	z := NewSampler(Schedule{}, Random, 1, 1)
	if z.Accept(4) != 0 {
		t.Error("an empty schedule accepted a draft")
	}
}

func TestSamplerStreams(t *testing.T) {
	sched, _ := FromRates([]float64{0.6, 0.3})
	draw := func(seed, stream uint64) []int {
		s := NewSampler(sched, Random, seed, stream)
		out := make([]int, 64)
		for i := range out {
			out[i] = s.Accept(2)
		}
		return out
	}
	a, b, c := draw(1, 0), draw(1, 0), draw(1, 1)
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed and stream drew differently")
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Error("streams 0 and 1 drew the same sequence")
	}
}

func TestPresets(t *testing.T) {
	ps := Presets()
	want := map[string]struct {
		k        int
		mean     float64
		fromMean bool
	}{
		"vllm-test-llama8b":             {3, 2.6049, false},
		"vllm-48892-mtp8":               {8, 1 + 0.7617 + 0.6158 + 0.5125 + 0.4243 + 0.3640 + 0.3094 + 0.2722 + 0.2365, false},
		"vllm-19254-ngram":              {3, 1 + 0.543 + 0.357 + 0.264, false}, // first window
		"vllm-26191-llama8b-k7":         {7, 3.53, true},
		"vllm-16035-eagle1-k2":          {2, 1.89, true},
		"ascend-13640-dsv4flash-dspark": {7, 1 + 0.739 + 0.478 + 0.261 + 0.174 + 0.130 + 0.087 + 0.043, false},
	}
	seen := map[string]bool{}
	for i, p := range ps {
		if i > 0 && ps[i-1].Name >= p.Name {
			t.Errorf("presets not sorted: %q before %q", ps[i-1].Name, p.Name)
		}
		seen[p.Name] = true
		if p.Schedule.K() != p.K {
			t.Errorf("%s: schedule has %d positions, k %d", p.Name, p.Schedule.K(), p.K)
		}
		if w, ok := want[p.Name]; ok {
			if p.K != w.k || math.Abs(p.Schedule.MeanLength()-w.mean) > 1e-9 || p.FromMean != w.fromMean {
				t.Errorf("%s: k %d mean %v fromMean %v, want %+v", p.Name, p.K, p.Schedule.MeanLength(), p.FromMean, w)
			}
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("preset %s missing", n)
		}
	}
	for _, n := range []string{"vllm-16937-h100-bs1", "sglang-4247-eagle3-s8", "hf-aqmedai-qwen35-397b", "vllm-25993-glm46-mtp"} {
		if seen[n] {
			t.Errorf("%s has no usable schedule but is a preset", n)
		}
	}
	if _, err := Preset("nope"); err == nil || !strings.Contains(err.Error(), "vllm-test-llama8b") {
		t.Errorf("unknown preset error %v does not list the presets", err)
	}
}

func TestParseAcceptance(t *testing.T) {
	for _, tc := range []struct {
		in   string
		k    int
		mode Mode
		rate []float64 // expected rates at k
		err  string
	}{
		{"vllm-test-llama8b", 3, Random, []float64{0.7296, 0.5208, 0.3545}, ""},
		{"vllm-test-llama8b@replay", 2, Replay, []float64{0.7296, 0.5208}, ""},
		{"rates:0.8,0.4@random", 3, Random, []float64{0.8, 0.4, 0.2}, ""},
		{"rates:0.5", 1, Random, []float64{0.5}, ""},
		{"counts:100,50,25", 2, Random, []float64{0.5, 0.25}, ""},
		{"mean:1.75@replay", 2, Replay, []float64{0.5, 0.25}, ""},
		{"mean:5", 3, Random, nil, "must be in [1, 4]"},
		{"", 0, Random, nil, "empty"},
		{"nope", 0, Random, nil, "unknown preset"},
		{"rates:", 0, Random, nil, "no rates"},
		{"rates:0.3,0.5", 0, Random, nil, "non-increasing"},
		{"rates:x", 0, Random, nil, "not a number"},
		{"counts:10", 0, Random, nil, "at least one"},
		{"counts:10,x", 0, Random, nil, "not an integer"},
		{"counts:10,20", 0, Random, nil, "num_drafts"},
		{"mean:abc", 0, Random, nil, "want a number"},
		{"mean:0.5", 0, Random, nil, "want a number"},
		{"vllm-test-llama8b@fast", 0, Random, nil, "not random or replay"},
		{"foo:1", 0, Random, nil, "unknown form"},
	} {
		a, err := ParseAcceptance(tc.in)
		var s Schedule
		if err == nil {
			s, err = a.ForK(tc.k)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAcceptance(%q): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAcceptance(%q): %v", tc.in, err)
			continue
		}
		if a.Mode != tc.mode {
			t.Errorf("ParseAcceptance(%q): mode %v, want %v", tc.in, a.Mode, tc.mode)
		}
		got := s.Rates()
		if len(got) != len(tc.rate) {
			t.Errorf("ParseAcceptance(%q).ForK(%d) = %v, want %v", tc.in, tc.k, got, tc.rate)
			continue
		}
		for j := range got {
			if math.Abs(got[j]-tc.rate[j]) > 1e-9 {
				t.Errorf("ParseAcceptance(%q).ForK(%d) = %v, want %v", tc.in, tc.k, got, tc.rate)
				break
			}
		}
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		in     string
		method string
		k      int
		err    string
	}{
		{`{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}`, "eagle3", 3, ""},
		{`{"method": "deepseek_mtp", "num_speculative_tokens": 1}`, "mtp", 1, ""},
		{`{"method": "qwen3_next_mtp", "num_speculative_tokens": 2}`, "mtp", 2, ""},
		{`{"method": "mtp", "num_speculative_tokens": 2, "index_share_for_mtp_iteration": true}`, "mtp", 2, ""},
		{`{"model": "ngram", "num_speculative_tokens": 4}`, "ngram", 4, ""},
		{`{"method": "[ngram]", "num_speculative_tokens": 4, "prompt_lookup_max": 3}`, "ngram", 4, ""},
		{`{"model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 2}`, "eagle", 2, ""},
		{`{"model": "AngelSlim/Qwen3-8B_eagle3", "num_speculative_tokens": 2}`, "eagle3", 2, ""},
		{`{"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 5, "draft_tensor_parallel_size": 1}`, "draft_model", 5, ""},
		{`{"method": "suffix"}`, "suffix", 24, ""},
		{`{"method": "eagle3", "model": "m", "num_speculative_tokens": 3, "disable_padded_drafter_batch": true, "disable_by_batch_size": 8}`, "eagle3", 3, ""},
		{`{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}`, "mtp", 3, ""},
		// The DeepSeek-V4.1-Flash seed deployments' config.
		{`{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","rejection_sample_method":"synthetic","synthetic_acceptance_length":3.51,"enable_adaptive_verification":false}`, "dspark", 5, ""},
		{`{"method": "dspark", "num_speculative_tokens": 7, "rejection_sample_method": "block"}`, "dspark", 7, ""},
		{`{"model": "deepseek-ai/dspark_qwen3_8b_block7", "num_speculative_tokens": 7}`, "dspark", 7, ""},
		{`{"method": "dspark", "num_speculative_tokens": 5, "enable_adaptive_verification": true}`, "", 0, "does not simulate DSpark's confidence-sized verification"},
		{`{"method": "mtp", "num_speculative_tokens": 2, "enable_adaptive_verification": true}`, "", 0, "only supported with DSpark"},
		{`{"method": "dspark", "num_speculative_tokens": 5, "dspark_draft_topk": 64}`, "", 0, "only supported by Qwen3DSparkModel"},
		{`{"method": "dspark", "num_speculative_tokens": 5, "dspark_draft_topk": 0}`, "", 0, "dspark_draft_topk 0: must be ≥ 1"},
		{`{"method": "mtp", "num_speculative_tokens": 2, "dspark_draft_topk": 8}`, "", 0, "only supported by DSpark"},
		{`{"method": "dspark", "num_speculative_tokens": 5, "dspark_block_size": 5}`, "", 0, "unknown key \"dspark_block_size\""},
		{`{"method": "dspark"}`, "", 0, "num_speculative_tokens is required"},
		{`{"method": "dspark", "num_speculative_tokens": 5, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 6.5}`, "", 0, "synthetic_acceptance_length must be in [1, 6]"},
		{`{"method": "dflash", "model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 15}`, "", 0, "does not simulate"},
		{`{"model": "z-lab/Qwen3-8B-DFlash-b16", "num_speculative_tokens": 15}`, "", 0, "method \"dflash\": vLLM has it but BLIS does not simulate it"},
		{`{"method": "eagle3", "model": "m", "num_speculativ_tokens": 3}`, "", 0, "unknown key \"num_speculativ_tokens\""},
		{`{"method": "medusa", "model": "m", "num_speculative_tokens": 3}`, "", 0, "does not simulate"},
		{`{"method": "eagle4", "model": "m", "num_speculative_tokens": 3}`, "", 0, "mtp, eagle, eagle3, ngram, draft_model, suffix"},
		{`{"method": "mtp"}`, "", 0, "num_speculative_tokens is required"},
		{`{"method": "mtp", "num_speculative_tokens": 0}`, "", 0, "must be > 0"},
		{`{"method": "eagle3", "num_speculative_tokens": 3}`, "", 0, "needs model"},
		{`{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 4, "prompt_lookup_max": 2}`, "", 0, "prompt_lookup_min=4"},
		{`{"method": "mtp", "num_speculative_tokens": 3, "tensor_parallel_size": 2}`, "", 0, "draft_tensor_parallel_size"},
		{`{"method": "mtp", "num_speculative_tokens": 2, "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.5]}`, "", 0, "length 2"},
		{`{"method": "mtp", "num_speculative_tokens": 2, "synthetic_acceptance_length": 2}`, "", 0, "synthetic"},
		{`{"method": "ngram", "num_speculative_tokens": 2, "index_share_for_mtp_iteration": false}`, "", 0, "only supported with method='mtp'"},
		{`{"method": "mtp", "num_speculative_tokens": 2, "target_model_config": {}}`, "", 0, "unknown key"},
		{`{"method": "mtp", "num_speculative_tokens": "2"}`, "", 0, "cannot unmarshal"},
		{`[1]`, "", 0, "JSON object"},
		{``, "", 0, "JSON object"},
		{`{"method": "mtp", "num_speculative_tokens": 2} x`, "", 0, "trailing"},
	} {
		c, err := ParseConfig(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseConfig(%s): error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseConfig(%s): %v", tc.in, err)
			continue
		}
		if *c.Method != tc.method || *c.NumSpeculativeTokens != tc.k {
			t.Errorf("ParseConfig(%s): method %q k %d, want %q %d", tc.in, *c.Method, *c.NumSpeculativeTokens, tc.method, tc.k)
		}
	}
	c, _ := ParseConfig(`{"method": "ngram", "num_speculative_tokens": 3}`)
	if *c.PromptLookupMin != 5 || *c.PromptLookupMax != 5 {
		t.Errorf("ngram defaults: min %d max %d, want 5 5", *c.PromptLookupMin, *c.PromptLookupMax)
	}
	c, _ = ParseConfig(`{"method": "mtp", "num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}`)
	if s, ok := c.SyntheticSchedule(); !ok || s.Rate(1) != 1 || s.Rate(2) != 0.5 || s.Rate(3) != 0 {
		t.Errorf("synthetic length 2.5 at k 3: %v %v, want [1 0.5 0]", s, ok)
	}
}

func TestLookaheadSlots(t *testing.T) {
	for m, want := range map[string]bool{"eagle": true, "eagle3": true, "mtp": true, "draft_model": true, "dspark": true, "ngram": false, "suffix": false} {
		if LookaheadSlots(m) != want {
			t.Errorf("LookaheadSlots(%q) = %v, want %v", m, !want, want)
		}
	}
}

func FuzzParseAcceptance(f *testing.F) {
	for _, s := range []string{"vllm-test-llama8b", "mean:3.51", "rates:0.73,0.52,0.35@replay", "counts:4816,3500,2500", "@", "mean:", "rates:1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, k int) {
		a, err := ParseAcceptance(s)
		if err != nil {
			return
		}
		sched, err := a.ForK(k)
		if err != nil {
			return
		}
		if sched.K() != k {
			t.Fatalf("%q ForK(%d) has %d positions", s, k, sched.K())
		}
		if _, err := FromRates(sched.Rates()); err != nil {
			t.Fatalf("%q ForK(%d) gave an invalid schedule: %v", s, k, err)
		}
		smp := NewSampler(sched, a.Mode, 1, 2)
		if n := smp.Accept(k); n < 0 || n > k {
			t.Fatalf("accepted %d of %d", n, k)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{`{"method": "eagle3", "model": "m", "num_speculative_tokens": 3}`, `{"model": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2}`,
		`{"method": "suffix"}`, `{"method":"mtp","num_speculative_tokens":3,"rejection_sample_method":"synthetic","synthetic_acceptance_rates":[1,0.5,0]}`, `{}`, `null`,
		`{"method":"dspark","num_speculative_tokens":5,"draft_sample_method":"probabilistic","rejection_sample_method":"synthetic","synthetic_acceptance_length":3.51,"enable_adaptive_verification":false}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConfig(s)
		if err != nil {
			return
		}
		if c.Method == nil || c.NumSpeculativeTokens == nil || *c.NumSpeculativeTokens < 1 {
			t.Fatalf("%q parsed without a method or a positive k: %+v", s, c)
		}
		c.SyntheticSchedule()
	})
}

// TestPresetsCiteASource: every preset names the public thread or file its
// numbers come from ("same file" rows inherit the row above's).
func TestPresetsCiteASource(t *testing.T) {
	for _, p := range Presets() {
		if !strings.HasPrefix(p.Source, "https://") {
			t.Errorf("preset %s: source %q is not a link", p.Name, p.Source)
		}
	}
}

// TestDraftSlots mirrors vLLM's test_max_num_new_slots_for_drafting at
// k = 8 (tests/v1/spec_decode): parallel EAGLE and DSpark 7, MTP and
// n-gram 0, a draft model 1, a parallel draft model (PARD) 8.
func TestDraftSlots(t *testing.T) {
	for in, want := range map[string]int{
		`{"method": "eagle3", "model": "m", "num_speculative_tokens": 8, "parallel_drafting": true}`: 7,
		`{"method": "eagle3", "model": "m", "num_speculative_tokens": 8}`:                            0,
		`{"method": "dspark", "num_speculative_tokens": 8}`:                                          7,
		`{"method": "mtp", "num_speculative_tokens": 8}`:                                             0,
		`{"method": "ngram", "num_speculative_tokens": 8}`:                                           0,
		`{"model": "m", "num_speculative_tokens": 8}`:                                                1,
		`{"model": "m", "num_speculative_tokens": 8, "parallel_drafting": true}`:                     8,
	} {
		c, err := ParseConfig(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := c.DraftSlots(); got != want {
			t.Errorf("%s: %d draft slots, want %d", in, got, want)
		}
	}
	if (Config{}).DraftSlots() != 0 {
		t.Error("an empty config has draft slots")
	}
}
