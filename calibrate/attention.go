package calibrate

import (
	"fmt"
	"math"

	"blis/catalog"
	"blis/kernel"
)

func kvBytes(dtype string) (float64, error) {
	switch dtype {
	case "bfloat16", "float16":
		return 2, nil
	case "fp8":
		return 1, nil
	}
	return 0, fmt.Errorf("unknown kv_cache_dtype %q", dtype)
}

// attnRows holds one attention table's columns.
type attnRows struct {
	file                    string
	y                       []float64
	B, S, step, H, KV, D, W []float64
	kvd, kern               []string
	kvDtypes                []string
	byKV                    map[string][]int
	shapes                  func(r int) shapeKey
}

func (cf *chipFit) attnTable(rel string) (*attnRows, error) {
	t, file, err := cf.table(rel)
	if err != nil || t == nil {
		return nil, err
	}
	c := &cols{t: t}
	a := &attnRows{file: file,
		B: c.num("batch_size"), S: c.num("isl"), step: c.num("step"), H: c.num("num_heads"),
		KV: c.num("num_key_value_heads"), D: c.num("head_dim"), W: c.num("window_size"),
		kvd: c.str("kv_cache_dtype"), kern: c.str("kernel_source"),
	}
	lat := c.num("latency")
	if c.err != nil {
		return nil, c.err
	}
	a.y = seconds(lat)
	a.byKV = map[string][]int{}
	for i := range a.y {
		if a.y[i] > 0 {
			a.byKV[a.kvd[i]] = append(a.byKV[a.kvd[i]], i)
		}
	}
	for _, d := range []string{"bfloat16", "fp8"} {
		if len(a.byKV[d]) > 0 {
			a.kvDtypes = append(a.kvDtypes, d)
		}
	}
	if len(a.kvDtypes) != len(a.byKV) {
		return nil, fmt.Errorf("%s: kv_cache_dtype values %v, want bfloat16 and fp8", file, keys(a.byKV))
	}
	a.shapes = func(r int) shapeKey { return shapeKey{a.H[r], a.KV[r], a.D[r]} }
	return a, nil
}

func keys(m map[string][]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// onlyKernel keeps the rows of the dominant kernel_source.
func (a *attnRows) onlyKernel(rows []int) (kern string, kept []int, dropped int) {
	kern, dropped = dominant(a.kern, rows)
	for _, r := range rows {
		if a.kern[r] == kern {
			kept = append(kept, r)
		}
	}
	return kern, kept, dropped
}

func (cf *chipFit) fitAttention() ([]catalog.AttnDecodeLaw, []catalog.AttnPrefillLaw, error) {
	var dec []catalog.AttnDecodeLaw
	var pre []catalog.AttnPrefillLaw
	g, err := cf.attnTable("attention/vllm/0.24.0/generation_attention_perf.parquet")
	if err != nil {
		return nil, nil, err
	}
	if g != nil {
		for _, kvd := range g.kvDtypes {
			kb, err := kvBytes(kvd)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %v", g.file, err)
			}
			kern, rows, dropped := g.onlyKernel(g.byKV[kvd])
			fit, held, shapes := splitByShape(rows, g.shapes)
			// KV length = isl + step (the table's generation rows cache isl
			// prompt tokens plus step generated ones); windowed layers read
			// at most window_size of them.
			ctx := func(r int) float64 {
				c := g.S[r] + g.step[r]
				if g.W[r] > 0 {
					c = math.Min(c, g.W[r])
				}
				return c
			}
			law := catalog.AttnDecodeLaw{KVDtype: kvd, Kernel: kern, KVBytes: kb, MemBW: cf.chip.MemBW}
			set := func(p []float64, l *catalog.AttnDecodeLaw) { l.T0, l.BWEff, l.PerSeqHead = p[0], p[1], p[2] }
			fs := &fitSet{y: g.y, fit: fit, held: held, heldShapes: shapes,
				kinds: []paramKind{positive, positive, positive}, p0: []float64{quantile(g.y, fit, 0.02), 0.7, 2e-8},
				predict: func(p []float64, r int) float64 {
					l := law
					set(p, &l)
					return kernel.AttnDecodeTime(&l, kernel.AttnShape{Heads: g.H[r], KVHeads: g.KV[r], HeadDim: g.D[r]}, g.B[r], g.B[r]*ctx(r))
				}}
			p, fm, hm := fs.run()
			set(p, &law)
			scope := join(
				fmt.Sprintf("kv_cache_dtype=%s, kernel_source=%s (%d rows of other kernels excluded)", kvd, kern, dropped),
				fmt.Sprintf("batch %g..%g, KV length isl+step %g..%g, window_size 0/128/1024/8192 (reads capped at the window), %d distinct (heads, kv_heads, head_dim) per GPU", minOf(g.B, rows), maxOf(g.B, rows), minOf(g.step, rows)+1, maxOf(g.step, rows)+1, shapes),
				fmt.Sprintf("kv_heads per GPU %g..%g: more (MHA at TP1-2, e.g. Llama-2-7B's 32) is extrapolated and provisional (tools/gpu/attn_decode_mha.py times it on Hopper)", minOf(g.KV, rows), maxOf(g.KV, rows)),
				heldRule("(num_heads, num_key_value_heads, head_dim)"),
			)
			law.Provenance = provenance([]string{g.file}, scope, fs, fm, hm)
			dec = append(dec, law)
		}
	}
	c, err := cf.attnTable("attention/vllm/0.24.0/context_attention_perf.parquet")
	if err != nil {
		return nil, nil, err
	}
	if c != nil {
		for _, kvd := range c.kvDtypes {
			kb, err := kvBytes(kvd)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %v", c.file, err)
			}
			kern, rows, dropped := c.onlyKernel(c.byKV[kvd])
			fit, held, shapes := splitByShape(rows, c.shapes)
			law := catalog.AttnPrefillLaw{KVDtype: kvd, Kernel: kern, KVBytes: kb, PeakFLOPS: cf.chip.BF16FLOPS, MemBW: cf.chip.MemBW}
			set := func(p []float64, l *catalog.AttnPrefillLaw) {
				l.T0, l.EffMax, l.BWEff, l.WorkHalf, l.SoftmaxDim = p[0], p[1], p[2], p[3], p[4]
			}
			fs := &fitSet{y: c.y, fit: fit, held: held, heldShapes: shapes,
				kinds: []paramKind{positive, positive, positive, positive, positive}, p0: []float64{quantile(c.y, fit, 0.02), 0.5, 0.3, 1e4, 50},
				predict: func(p []float64, r int) float64 {
					l := law
					set(p, &l)
					pairs := c.B[r] * kernel.CausalPairs(c.S[r], 0, c.W[r])
					return kernel.AttnPrefillTime(&l, kernel.AttnShape{Heads: c.H[r], KVHeads: c.KV[r], HeadDim: c.D[r]}, c.B[r]*c.S[r], pairs, 0)
				}}
			p, fm, hm := fs.run()
			set(p, &law)
			scope := join(
				fmt.Sprintf("kv_cache_dtype=%s, attn_dtype=bfloat16, kernel_source=%s (%d rows of other kernels excluded)", kvd, kern, dropped),
				fmt.Sprintf("batch %g..%g, isl %g..%g, no cached prefix, window_size 0/128/1024/8192 (pairs capped at the window), %d distinct (heads, kv_heads, head_dim) per GPU", minOf(c.B, rows), maxOf(c.B, rows), minOf(c.S, rows), maxOf(c.S, rows), shapes),
				heldRule("(num_heads, num_key_value_heads, head_dim)"),
			)
			law.Provenance = provenance([]string{c.file}, scope, fs, fm, hm)
			pre = append(pre, law)
		}
	}
	return dec, pre, nil
}
