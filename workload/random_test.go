package workload

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// collect drains a source built from spec, copying each prompt.
func collect(t testing.TB, spec RandomSpec, seed int64) []Request {
	t.Helper()
	src, err := NewRandom(spec, seed)
	if err != nil {
		t.Fatalf("NewRandom(%+v): %v", spec, err)
	}
	var out []Request
	var r Request
	for src.Next(&r) {
		c := r
		c.Prompt = slices.Clone(r.Prompt)
		out = append(out, c)
	}
	return out
}

func spec(mod func(*RandomSpec)) RandomSpec {
	s := DefaultRandomSpec()
	mod(&s)
	return s
}

type intStats struct {
	min, max int
	mean     float64
}

func statsOf(xs []int) intStats {
	st := intStats{min: math.MaxInt, max: math.MinInt}
	sum := 0.0
	for _, x := range xs {
		st.min, st.max = min(st.min, x), max(st.max, x)
		sum += float64(x)
	}
	st.mean = sum / float64(len(xs))
	return st
}

func TestRandomLengths(t *testing.T) {
	const n = 20000
	cases := []struct {
		name                string
		style               string
		in, out, prefix, sp int
		ratio               float64
		// InputLen (special + prefix + sampled) and OutputLen ranges, inclusive.
		inMin, inMax, outMin, outMax int
	}{
		{"legacy L=1024 r=0.8", RangeStyleLegacy, 1024, 128, 0, 0, 0.8, 819, 1024, 102, 128},
		{"legacy r=1 is fixed", RangeStyleLegacy, 1024, 128, 0, 0, 1, 1024, 1024, 128, 128},
		{"legacy r=0 starts at 1", RangeStyleLegacy, 64, 16, 0, 0, 0, 1, 64, 1, 16},
		{"legacy prefix and special on top", RangeStyleLegacy, 100, 40, 10, 1, 0.5, 61, 111, 20, 40},
		{"current r=0 is fixed", RangeStyleCurrent, 1024, 128, 0, 0, 0, 1024, 1024, 128, 128},
		{"current empty style is current", "", 1024, 128, 0, 0, 0, 1024, 1024, 128, 128},
		{"current L=1024 r=0.5", RangeStyleCurrent, 1024, 128, 0, 0, 0.5, 512, 1536, 64, 192},
		{"current floor and ceil", RangeStyleCurrent, 100, 3, 0, 0, 0.25, 75, 125, 2, 4},
		// 100·(1−0.9) = 9.999999999999998: Python's floor gives 9 too.
		{"current output floor of 1", RangeStyleCurrent, 100, 1, 0, 0, 0.9, 9, 190, 1, 2},
		// 10·(1−0.9) = 0.9999999999999998 in float64: the sampled part can be 0.
		{"current sampled part may be 0", RangeStyleCurrent, 10, 8, 5, 0, 0.9, 5, 24, 1, 16},
		{"current prefix on top", RangeStyleCurrent, 128, 8, 64, 0, 0, 192, 192, 8, 8},
		{"current special tokens come off the input", RangeStyleCurrent, 1024, 8, 0, 1, 0, 1024, 1024, 8, 8},
		{"current special tokens with range", RangeStyleCurrent, 101, 8, 0, 1, 0.5, 51, 151, 4, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := spec(func(s *RandomSpec) {
				s.RangeStyle, s.InputLen, s.OutputLen = c.style, c.in, c.out
				s.PrefixLen, s.NumSpecialTokens, s.RangeRatio, s.NumPrompts = c.prefix, c.sp, c.ratio, n
			})
			reqs := collect(t, s, 42)
			if len(reqs) != n {
				t.Fatalf("got %d requests, want %d", len(reqs), n)
			}
			ins, outs := make([]int, n), make([]int, n)
			for i, r := range reqs {
				ins[i], outs[i] = r.InputLen, r.OutputLen
			}
			for _, x := range []struct {
				what     string
				got      intStats
				min, max int
			}{
				{"input", statsOf(ins), c.inMin, c.inMax},
				{"output", statsOf(outs), c.outMin, c.outMax},
			} {
				if x.got.min != x.min || x.got.max != x.max {
					t.Errorf("%s lengths span [%d, %d], want [%d, %d]", x.what, x.got.min, x.got.max, x.min, x.max)
				}
				// Uniform over the integers in [min, max]: mean (min+max)/2,
				// standard error (max−min+1)/√(12n); allow 4 of them.
				want := float64(x.min+x.max) / 2
				tol := 4 * float64(x.max-x.min+1) / math.Sqrt(12*n)
				if math.Abs(x.got.mean-want) > tol {
					t.Errorf("%s mean %.2f, want %.2f ± %.2f", x.what, x.got.mean, want, tol)
				}
			}
		})
	}
}

func TestRandomPromptSegments(t *testing.T) {
	const n = 5000
	s := spec(func(s *RandomSpec) {
		s.InputLen, s.RangeRatio, s.PrefixLen, s.NumSpecialTokens, s.NumPrompts = 200, 0.5, 100, 1, n
	})
	reqs := collect(t, s, 7)
	special, prefix := reqs[0].Prompt[0], reqs[0].Prompt[1]
	if special.Len != 1 || prefix.Len != 100 {
		t.Fatalf("fixed segments %+v %+v, want lengths 1 and 100", special, prefix)
	}
	seen := map[uint64]int64{special.ID: -1, prefix.ID: -2}
	for _, r := range reqs {
		if len(r.Prompt) != 3 {
			t.Fatalf("request %d: %d segments, want 3", r.Index, len(r.Prompt))
		}
		if r.Prompt[0] != special || r.Prompt[1] != prefix {
			t.Fatalf("request %d: shared segments %+v, want %+v %+v", r.Index, r.Prompt[:2], special, prefix)
		}
		sum := 0
		for _, seg := range r.Prompt {
			if seg.Len < 1 {
				t.Fatalf("request %d: empty segment %+v", r.Index, seg)
			}
			sum += seg.Len
		}
		if sum != r.InputLen {
			t.Fatalf("request %d: segments sum to %d, InputLen %d", r.Index, sum, r.InputLen)
		}
		u := r.Prompt[2]
		if other, dup := seen[u.ID]; dup {
			t.Fatalf("request %d: unique segment ID %#x already used by %d", r.Index, u.ID, other)
		}
		seen[u.ID] = r.Index
	}

	// Another seed: another prefix and other unique IDs; the special tokens
	// are the tokenizer's, the same in every run.
	other := collect(t, s, 8)
	if other[0].Prompt[0] != special {
		t.Errorf("special segment changed with the seed: %+v vs %+v", other[0].Prompt[0], special)
	}
	if other[0].Prompt[1].ID == prefix.ID {
		t.Errorf("prefix ID %#x is the same for seeds 7 and 8", prefix.ID)
	}
	for _, r := range other {
		if _, dup := seen[r.Prompt[2].ID]; dup {
			t.Fatalf("seed 8 request %d reuses a seed-7 ID %#x", r.Index, r.Prompt[2].ID)
		}
	}
}

func TestRandomSegmentsOmittedWhenEmpty(t *testing.T) {
	// No prefix, no special tokens: one segment. A sampled part of 0 tokens
	// (possible when the prefix carries the prompt) is left out.
	reqs := collect(t, spec(func(s *RandomSpec) { s.NumPrompts = 3 }), 1)
	for _, r := range reqs {
		if len(r.Prompt) != 1 || r.Prompt[0].Len != 1024 {
			t.Fatalf("request %d: prompt %+v, want one segment of 1024", r.Index, r.Prompt)
		}
	}
	reqs = collect(t, spec(func(s *RandomSpec) {
		s.InputLen, s.RangeRatio, s.PrefixLen, s.NumPrompts = 10, 0.9, 5, 2000
	}), 1)
	sawPrefixOnly := false
	for _, r := range reqs {
		if r.InputLen == 5 {
			sawPrefixOnly = true
			if len(r.Prompt) != 1 {
				t.Fatalf("request %d: prompt %+v, want the prefix alone", r.Index, r.Prompt)
			}
		}
	}
	if !sawPrefixOnly {
		t.Fatal("no request drew a sampled part of 0 tokens in 2000 draws over [0, 19]")
	}
}

func TestRandomIndexAndExhaustion(t *testing.T) {
	src, err := NewRandom(spec(func(s *RandomSpec) { s.NumPrompts = 5 }), 3)
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	for i := range int64(5) {
		if !src.Next(&r) {
			t.Fatalf("exhausted after %d requests, want 5", i)
		}
		if r.Index != i {
			t.Fatalf("Index %d, want %d", r.Index, i)
		}
	}
	for range 3 {
		if src.Next(&r) {
			t.Fatal("Next returned true after the last request")
		}
	}
	if r.Index != 4 {
		t.Errorf("an exhausted Next changed the request: Index %d", r.Index)
	}
}

func TestRandomDeterminism(t *testing.T) {
	for _, style := range []string{RangeStyleCurrent, RangeStyleLegacy} {
		t.Run(style, func(t *testing.T) {
			s := spec(func(s *RandomSpec) {
				s.RangeStyle, s.RangeRatio, s.PrefixLen, s.NumPrompts, s.RequestRate, s.Burstiness = style, 0.5, 16, 500, 20, 0.7
			})
			a, b := collect(t, s, 11), collect(t, s, 11)
			for i := range a {
				if a[i].Index != b[i].Index || a[i].Arrival != b[i].Arrival || a[i].InputLen != b[i].InputLen ||
					a[i].OutputLen != b[i].OutputLen || !slices.Equal(a[i].Prompt, b[i].Prompt) {
					t.Fatalf("seed 11 twice: request %d differs: %+v vs %+v", i, a[i], b[i])
				}
			}
			c := collect(t, s, 12)
			var sameIn, sameOut, sameAt int
			for i := range a {
				if a[i].InputLen == c[i].InputLen {
					sameIn++
				}
				if a[i].OutputLen == c[i].OutputLen {
					sameOut++
				}
				if a[i].Arrival == c[i].Arrival {
					sameAt++
				}
			}
			// Lengths over ~1000 values agree by chance a few times in 500.
			if sameIn > 25 || sameOut > 25 || sameAt > 1 {
				t.Errorf("seeds 11 and 12 agree on %d input lengths, %d output lengths, %d arrivals of 500",
					sameIn, sameOut, sameAt)
			}
		})
	}
}

// gaps returns the n inter-arrival gaps in seconds, the first measured from 0.
func gaps(reqs []Request) []float64 {
	g := make([]float64, len(reqs))
	prev := time.Duration(0)
	for i, r := range reqs {
		g[i] = (r.Arrival - prev).Seconds()
		prev = r.Arrival
	}
	return g
}

func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

func TestRandomArrivalsInfiniteRate(t *testing.T) {
	for _, style := range []string{RangeStyleCurrent, RangeStyleLegacy} {
		reqs := collect(t, spec(func(s *RandomSpec) { s.RangeStyle, s.NumPrompts, s.Burstiness = style, 100, 0.5 }), 1)
		for _, r := range reqs {
			if r.Arrival != 0 {
				t.Fatalf("%s: request %d at %v, want 0 for --request-rate inf", style, r.Index, r.Arrival)
			}
		}
	}
}

func TestRandomArrivalsCurrent(t *testing.T) {
	const n, rate = 20000, 10.0
	for _, b := range []float64{1, 0.5, 4, math.Inf(1)} {
		t.Run(fmt.Sprint("burstiness=", b), func(t *testing.T) {
			reqs := collect(t, spec(func(s *RandomSpec) { s.NumPrompts, s.RequestRate, s.Burstiness = n, rate, b }), 5)
			for i := 1; i < n; i++ {
				if reqs[i].Arrival < reqs[i-1].Arrival {
					t.Fatalf("request %d at %v before request %d at %v", i, reqs[i].Arrival, i-1, reqs[i-1].Arrival)
				}
			}
			// serve.py rescales the cumulative gaps so the last request goes
			// out at exactly num-prompts/rate, and the first at its own gap.
			if last, want := reqs[n-1].Arrival, time.Duration(n/rate*float64(time.Second)); last != want {
				t.Errorf("last request at %v, want %v", last, want)
			}
			if reqs[0].Arrival <= 0 {
				t.Errorf("first request at %v, want its (positive) gap", reqs[0].Arrival)
			}
			g := gaps(reqs)
			mean, v := meanVar(g)
			if math.Abs(mean-1/rate) > 1e-9 {
				t.Errorf("mean gap %v s, want %v", mean, 1/rate)
			}
			if math.IsInf(b, 1) {
				for i, x := range g {
					if math.Abs(x-1/rate) > 2e-9 {
						t.Fatalf("gap %d is %v s, want a constant %v", i, x, 1/rate)
					}
				}
				return
			}
			// Gamma gaps: squared coefficient of variation 1/burstiness.
			if cv2 := v / (mean * mean); math.Abs(cv2-1/b) > 0.12/b {
				t.Errorf("gap CV² %.3f, want %.3f ± 12%%", cv2, 1/b)
			}
		})
	}
}

func TestRandomArrivalsLegacy(t *testing.T) {
	const n, rate = 20000, 10.0
	for _, b := range []float64{1, 0.5, 4} {
		t.Run(fmt.Sprint("burstiness=", b), func(t *testing.T) {
			reqs := collect(t, spec(func(s *RandomSpec) {
				s.RangeStyle, s.RangeRatio, s.NumPrompts, s.RequestRate, s.Burstiness = RangeStyleLegacy, 1, n, rate, b
			}), 5)
			if reqs[0].Arrival != 0 {
				t.Fatalf("first request at %v, want 0", reqs[0].Arrival)
			}
			g := gaps(reqs)[1:] // unscaled gamma gaps
			mean, v := meanVar(g)
			// Gap mean 1/rate, variance 1/(rate²·b).
			if se := 1 / rate / math.Sqrt(b*float64(len(g))); math.Abs(mean-1/rate) > 4*se {
				t.Errorf("mean gap %.5f s, want %.5f ± %.5f", mean, 1/rate, 4*se)
			}
			if want := 1 / (rate * rate * b); math.Abs(v-want) > 0.12*want {
				t.Errorf("gap variance %.6f, want %.6f ± 12%%", v, want)
			}
		})
	}
}

func TestRandomValidation(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*RandomSpec)
		flag string
		msg  string // substring of the message
	}{
		{"range ratio 1.5 current", func(s *RandomSpec) { s.RangeRatio = 1.5 },
			"--random-range-ratio", "--random-range-ratio 1.5: must be in [0, 1) for --random-range-style current"},
		{"range ratio 1 current", func(s *RandomSpec) { s.RangeRatio = 1 }, "--random-range-ratio", "[0, 1)"},
		{"range ratio 1.5 legacy", func(s *RandomSpec) { s.RangeStyle, s.RangeRatio = RangeStyleLegacy, 1.5 },
			"--random-range-ratio", "must be in [0, 1] for --random-range-style legacy"},
		{"range ratio negative", func(s *RandomSpec) { s.RangeRatio = -0.1 }, "--random-range-ratio", "-0.1"},
		{"range ratio NaN", func(s *RandomSpec) { s.RangeRatio = math.NaN() }, "--random-range-ratio", "nan"},
		{"unknown style", func(s *RandomSpec) { s.RangeStyle = "newest" },
			"--random-range-style", "--random-range-style newest: must be current or legacy"},
		{"negative input", func(s *RandomSpec) { s.InputLen = -1 }, "--random-input-len", "-1: must be an integer in [0,"},
		{"zero input no prefix", func(s *RandomSpec) { s.InputLen = 0 }, "--random-input-len", "shortest prompt would have 0 tokens"},
		{"zero input no prefix legacy", func(s *RandomSpec) { s.RangeStyle, s.InputLen = RangeStyleLegacy, 0 },
			"--random-input-len", "every prompt would be empty"},
		{"input eaten by special tokens", func(s *RandomSpec) { s.InputLen, s.NumSpecialTokens = 1, 1 },
			"--random-input-len", "1 tokenizer special tokens"},
		{"range reaches 0 tokens", func(s *RandomSpec) { s.InputLen, s.RangeRatio = 10, 0.9 },
			"--random-input-len", "--random-range-ratio 0.9"},
		{"huge input", func(s *RandomSpec) { s.InputLen = MaxTokens + 1 }, "--random-input-len", "268435457"},
		{"zero output", func(s *RandomSpec) { s.OutputLen = 0 }, "--random-output-len", "0: must be an integer in [1,"},
		{"negative output", func(s *RandomSpec) { s.OutputLen = -3 }, "--random-output-len", "-3"},
		{"negative prefix", func(s *RandomSpec) { s.PrefixLen = -1 }, "--random-prefix-len", "-1"},
		{"negative special tokens", func(s *RandomSpec) { s.NumSpecialTokens = -1 }, "num_special_tokens (tokenizer)", "-1"},
		{"zero prompts", func(s *RandomSpec) { s.NumPrompts = 0 }, "--num-prompts", "--num-prompts 0: must be an integer ≥ 1"},
		{"negative prompts", func(s *RandomSpec) { s.NumPrompts = -5 }, "--num-prompts", "-5"},
		{"zero rate", func(s *RandomSpec) { s.RequestRate = 0 }, "--request-rate", "--request-rate 0: must be a number > 0"},
		{"negative rate", func(s *RandomSpec) { s.RequestRate = -2 }, "--request-rate", "-2"},
		{"-inf rate", func(s *RandomSpec) { s.RequestRate = math.Inf(-1) }, "--request-rate", "-inf"},
		{"NaN rate", func(s *RandomSpec) { s.RequestRate = math.NaN() }, "--request-rate", "nan"},
		{"rate too low", func(s *RandomSpec) { s.RequestRate = 1e-9 }, "--request-rate", "too low"},
		{"zero burstiness", func(s *RandomSpec) { s.Burstiness = 0 }, "--burstiness", "--burstiness 0: must be ≥ 0.001, or inf"},
		{"negative burstiness", func(s *RandomSpec) { s.Burstiness = -1 }, "--burstiness", "-1"},
		{"NaN burstiness", func(s *RandomSpec) { s.Burstiness = math.NaN() }, "--burstiness", "nan"},
		{"inf burstiness legacy", func(s *RandomSpec) { s.RangeStyle, s.RequestRate, s.Burstiness = RangeStyleLegacy, 5, math.Inf(1) },
			"--burstiness", "for --random-range-style legacy"},
		{"zero value", func(s *RandomSpec) { *s = RandomSpec{} }, "--random-output-len", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, err := NewRandom(spec(c.mod), 1)
			if err == nil {
				t.Fatalf("no error; source %v", src)
			}
			if !errors.Is(err, ErrBadInput) {
				t.Errorf("errors.Is(%v, ErrBadInput) is false", err)
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("%v is not an *InputError", err)
			}
			if ie.Flag != c.flag {
				t.Errorf("flag %q, want %q (%v)", ie.Flag, c.flag, err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err.Error(), c.msg)
			}
		})
	}
}

func TestRandomValidEdges(t *testing.T) {
	for name, mod := range map[string]func(*RandomSpec){
		"defaults":                   func(*RandomSpec) {},
		"input 0 carried by prefix":  func(s *RandomSpec) { s.InputLen, s.PrefixLen = 0, 8 },
		"range ratio just below 1":   func(s *RandomSpec) { s.RangeRatio = 0.999 },
		"legacy range ratio 0 and 1": func(s *RandomSpec) { s.RangeStyle, s.RangeRatio = RangeStyleLegacy, 0 },
		"inf burstiness current":     func(s *RandomSpec) { s.RequestRate, s.Burstiness = 3, math.Inf(1) },
		"smallest burstiness":        func(s *RandomSpec) { s.RequestRate, s.Burstiness = 3, 0.001 },
		"max tokens":                 func(s *RandomSpec) { s.InputLen, s.OutputLen, s.PrefixLen = MaxTokens, MaxTokens, MaxTokens },
	} {
		s := spec(mod)
		s.NumPrompts = 50
		if reqs := collect(t, s, 9); len(reqs) != 50 {
			t.Errorf("%s: %d requests, want 50", name, len(reqs))
		}
	}
}

func TestRandomNextAllocs(t *testing.T) {
	for _, style := range []string{RangeStyleCurrent, RangeStyleLegacy} {
		src, err := NewRandom(spec(func(s *RandomSpec) {
			s.RangeStyle, s.RangeRatio, s.PrefixLen, s.NumSpecialTokens = style, 0.5, 32, 1
			s.NumPrompts, s.RequestRate, s.Burstiness = 100000, 50, 0.5
		}), 1)
		if err != nil {
			t.Fatal(err)
		}
		var r Request
		if allocs := testing.AllocsPerRun(1000, func() { src.Next(&r) }); allocs != 0 {
			t.Errorf("%s: Next allocates %v times per call, want 0", style, allocs)
		}
	}
}

func BenchmarkRandomNext(b *testing.B) {
	src, err := NewRandom(spec(func(s *RandomSpec) {
		s.RangeRatio, s.PrefixLen, s.NumPrompts, s.RequestRate, s.Burstiness = 0.5, 64, b.N, 100, 0.5
	}), 1)
	if err != nil {
		b.Fatal(err)
	}
	var r Request
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		src.Next(&r)
	}
}

func ExampleNewRandom() {
	spec := DefaultRandomSpec()
	spec.InputLen, spec.OutputLen, spec.PrefixLen, spec.NumPrompts = 512, 64, 128, 3
	src, err := NewRandom(spec, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	var r Request
	for src.Next(&r) {
		fmt.Println(r.Index, r.Arrival, r.InputLen, r.OutputLen, len(r.Prompt))
	}

	spec.RangeRatio = 1.5
	_, err = NewRandom(spec, 0)
	fmt.Println(err)
	// Output:
	// 0 0s 640 64 2
	// 1 0s 640 64 2
	// 2 0s 640 64 2
	// --random-range-ratio 1.5: must be in [0, 1) for --random-range-style current
}
