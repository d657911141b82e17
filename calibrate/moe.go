package calibrate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"blis/catalog"
	"blis/kernel"
)

// moeDtypes are the moe_dtype values of aiconfigurator's vLLM MoE
// collector: the expert weights' bytes per element (scales included) and
// the peak their GEMMs run at (weight-only formats dequantize to bf16).
var moeDtypes = []struct {
	name        string
	peak        string
	weightBytes float64
	note        string
	// marlin selects the rows timed on vLLM's Marlin MoE kernels
	// (kernel_source containing "marlin") instead of every other row.
	marlin bool
}{
	{"bfloat16", "bf16_flops", 2, "unquantized", false},
	{"fp8", "fp8_flops", 1, "per-tensor fp8 (ModelOpt)", false},
	{"fp8_block", "fp8_flops", 1 + 4.0/(128*128), "128x128-block fp8", false},
	{"nvfp4", "fp4_flops", 0.5 + 1.0/16, "NVFP4 weights and activations", false},
	{"int4_wo", "bf16_flops", 0.5 + 2.0/128, "int4 weight-only, group 128 (Marlin)", false},
	{"w4a16_mxfp4", "bf16_flops", 0.5 + 1.0/32, "MXFP4 weights, bf16 activations", false},
	// vLLM's Marlin MXFP4 MoE path (VLLM_MXFP4_USE_MARLIN=1 on Hopper), fitted
	// from the rows aiconfigurator timed on marlin_moe_wna16 kernels.
	{"w4a16_mxfp4_marlin", "bf16_flops", 0.5 + 1.0/32, "MXFP4 weights, bf16 activations, Marlin kernels", true},
	{"w4a8_mxfp4_mxfp8", "fp8_flops", 0.5 + 1.0/32, "MXFP4 weights, MXFP8 activations", false},
}

// moeDistribution is the token-to-expert routing of the rows the MoE laws
// are fitted on. aiconfigurator's collector times each shape under
// balanced routing and under power-law routing (expert loads drawn from
// P(x) ∝ x^−α, α = 1.01 or 1.2); its own estimator defaults to power_law,
// which it maps to power_law_1.01 (aiconfigurator ModelConfig
// workload_distribution = "power_law"). Real routers are skewed: with few
// tokens they touch fewer experts than balanced routing spreads them over
// (faster), with many the hottest expert's GEMM is longer (slower).
const moeDistribution = "power_law_1.01"

const moeDistributionNote = "aiconfigurator's default routing for its estimates; balanced and power_law_1.2 rows not used"

func (cf *chipFit) fitMoE() ([]catalog.MoELaw, []catalog.MoEGrid, error) {
	const rel = "moe/vllm/0.24.0/moe_perf.parquet"
	t, file, err := cf.table(rel)
	if err != nil || t == nil {
		return nil, nil, err
	}
	c := &cols{t: t}
	ver, dt, dist, kern := c.str("version"), c.str("moe_dtype"), c.str("distribution"), c.str("kernel_source")
	T, Hd, In, K, E, TP, EP, lat := c.num("num_tokens"), c.num("hidden_size"), c.num("inter_size"), c.num("topk"),
		c.num("num_experts"), c.num("moe_tp_size"), c.num("moe_ep_size"), c.num("latency")
	if c.err != nil {
		return nil, nil, c.err
	}
	y := seconds(lat)
	known := map[string]bool{}
	for _, d := range moeDtypes {
		known[d.name] = true
	}
	for i := range y {
		if !known[dt[i]] {
			return nil, nil, fmt.Errorf("%s: row %d: unknown moe_dtype %q", file, i, dt[i])
		}
	}
	// One law per moe_dtype over all its kernels (the default), and where a
	// dtype's rows come from more than one kernel family, one law per family
	// too ("fp8_block_triton", "fp8_block_flashinfer"): vLLM picks the family
	// per chip, version and environment (--moe-backend), and one law over two
	// kernels' rows prices neither.
	type job struct {
		d      int
		family string // "" = every kernel
	}
	var jobs []job
	for di, d := range moeDtypes {
		jobs = append(jobs, job{di, ""})
		if d.marlin {
			continue
		}
		fams := map[string]bool{}
		for i := range y {
			if dt[i] == d.name && dist[i] == moeDistribution && y[i] > 0 && ver[i] == "0.24.0" && !strings.Contains(kern[i], "situ_as_silu") {
				fams[kernelFamily(kern[i])] = true
			}
		}
		if len(fams) > 1 {
			for _, f := range moeFamilies {
				if fams[f] {
					jobs = append(jobs, job{di, f})
				}
			}
		}
	}
	laws := make([]*catalog.MoELaw, len(jobs))
	grids := make([]*catalog.MoEGrid, len(jobs))
	err = parallel(len(jobs), func(ji int) error {
		d := moeDtypes[jobs[ji].d]
		family := jobs[ji].family
		name := d.name
		if family != "" {
			name += "_" + family
		}
		var rows []int
		otherVersion, approx := 0, 0
		for i := range y {
			if dist[i] != moeDistribution || !(y[i] > 0) {
				continue
			}
			if d.marlin {
				if !strings.Contains(kern[i], "marlin") || (dt[i] != "w4a16_mxfp4" && dt[i] != "int4_wo") {
					continue
				}
			} else if dt[i] != d.name || (family != "" && kernelFamily(kern[i]) != family) {
				continue
			}
			if ver[i] != "0.24.0" {
				otherVersion++
				continue
			}
			// The Marlin law takes the rows of vLLM's Marlin MoE kernel
			// (marlin_moe_wna16) in both 4-bit weight formats it runs: int4
			// (group 128) and MXFP4 (e2m1, group 32) differ only in how
			// weights dequantise in registers, so one law with each row's
			// own weight bytes fits both, and two shapes constrain its
			// shape terms better than one. On H100 the MXFP4 rows are the
			// Kimi-K3 rows timed with SiTU swapped for SiLU
			// (moe/collection_meta.yaml): the activation is a separate
			// elementwise kernel between the two Marlin GEMMs, so the
			// swap leaves the GEMM timings vLLM's own.
			if !d.marlin && strings.Contains(kern[i], "situ_as_silu") {
				// Kimi-K3 rows timed through a SiTU-as-SiLU approximation
				// shim, on Marlin kernels: the Marlin law's, not this one's.
				approx++
				continue
			}
			rows = append(rows, i)
		}
		if len(rows) == 0 || peakOf(cf.chip, d.peak) <= 0 {
			return nil
		}
		fit, held, shapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{Hd[r], In[r], K[r], E[r]} })
		law := catalog.MoELaw{Dtype: name, PeakKey: d.peak, PeakFLOPS: peakOf(cf.chip, d.peak), MemBW: cf.chip.MemBW, WeightBytes: d.weightBytes}
		set := func(p []float64, l *catalog.MoELaw) {
			l.T0, l.EffMax, l.TokHalf, l.WidthHalf, l.BWEff, l.BWWidthHalf, l.PerRoutedElem = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
		}
		fs := &fitSet{y: y, fit: fit, held: held, heldShapes: shapes,
			kinds: []paramKind{positive, positive, positive, positive, positive, positive, positive},
			p0:    []float64{quantile(y, fit, 0.02) / 2, 0.4, 2, 100, 0.8, 20, 2e-12},
			starts: [][]float64{
				{1, 1, 0.1, 0.1, 1, 5, 5},
				{0.5, 2, 1, 1, 1, 1, 1},
			},
			predict: func(p []float64, r int) float64 {
				l := law
				set(p, &l)
				l.WeightBytes = weightBytesOf(dt[r])
				// Distinct experts as the pricer estimates them at run time
				// (uniform routing, kernel.ExpectedDistinctExperts): the
				// skew of real routing is in the rows the law is fitted on.
				return kernel.MoETime(&l, kernel.MoEShape{Tokens: T[r], Hidden: Hd[r], Inter: In[r], TopK: K[r], Experts: E[r], TP: TP[r], EP: EP[r]})
			}}
		if len(fit) < 2000 { // small sets: more starting points are cheap
			fs.starts = append(fs.starts, []float64{1, 1, 1, 1, 1, 1, 100}, []float64{1, 1, 1, 1, 1, 1, 0.01}, []float64{1, 0.5, 0.2, 0.2, 0.5, 1, 1})
		}
		p, fm, hm := fs.run()
		set(p, &law)
		kname, others := dominant(kern, rows)
		kdesc := kname
		if others > 0 {
			kdesc = fmt.Sprintf("%s and %d rows of other kernels", kname, others)
		}
		scope := join(
			fmt.Sprintf("moe_dtype=%s (%s)%s, distribution=%s (%s), version 0.24.0 rows only (%d other-version rows excluded)", strings.TrimSuffix(d.name, "_marlin"), d.note, familyNote(family), moeDistribution, moeDistributionNote, otherVersion),
			kernelScope(d.marlin, kdesc, approx),
			fmt.Sprintf("tokens %g..%g, moe_tp %g..%g, moe_ep %g..%g over %d distinct (hidden, inter, topk, experts)", minOf(T, rows), maxOf(T, rows), minOf(TP, rows), maxOf(TP, rows), minOf(EP, rows), maxOf(EP, rows), shapes),
			heldRule("(hidden_size, inter_size, topk, num_experts)")+"; fewer than 5 shapes: nothing held out",
			moeProvisional(d.name),
		)
		law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
		laws[ji] = &law
		grids[ji] = moeGrid(&law, rows, dt, T, Hd, In, K, E, TP, EP, y)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var out []catalog.MoELaw
	var gout []catalog.MoEGrid
	for i, l := range laws {
		if l != nil {
			out = append(out, *l)
			gout = append(gout, *grids[i])
		}
	}
	return out, gout, nil
}

// moeProvisional says where a MoE law is extrapolated or its rows miss a
// cost a served model pays, with the prepared GPU script that measures it
// (tools/gpu; docs/accuracy.md's regime sections give the evidence).
func moeProvisional(dtype string) string {
	note := "provisional at decode: the rows reuse one layer's weights with the routing precomputed, so a served model's cold per-layer weights and vLLM's router kernel are not in them (tools/gpu/moe_decode_inmodel.py times both)"
	switch dtype {
	case "w4a16_mxfp4", "w4a16_mxfp4_marlin", "w4a8_mxfp4_mxfp8":
		note += "; provisional for gpt-oss: vLLM's Mxfp4MoEMethod pads its experts (hidden and intermediate 2880 to 3072) and the kernels InferenceX ran it on (Marlin under VLLM_MXFP4_USE_MARLIN=1, TRT-LLM MXFP4 x MXFP8) are not timed at its shape (tools/gpu/moe_prefill_shapes.py)"
	case "int4_wo":
		note += "; FlashInfer's INT4 MoE kernel (VLLM_USE_FLASHINFER_MOE_INT4) is not timed and is priced with this Marlin law"
	}
	return note
}

// kernelScope says which kernels' rows a MoE law was fitted on.
func kernelScope(marlin bool, kdesc string, approx int) string {
	if marlin {
		return fmt.Sprintf("kernels: %s (Marlin-kernel rows of int4_wo and w4a16_mxfp4, each priced with its own weight bytes; the MXFP4 rows timed with SiTU swapped for SiLU, an activation-only change)", kdesc)
	}
	return fmt.Sprintf("kernels: %s (%d rows timed through the situ_as_silu approximation shim excluded)", kdesc, approx)
}

// weightBytesOf is a moe_dtype's expert-weight bytes per element.
func weightBytesOf(dtype string) float64 {
	for _, d := range moeDtypes {
		if d.name == dtype {
			return d.weightBytes
		}
	}
	return 2
}

// moeFamilies are the MoE kernel families vLLM chooses between, in the
// order their laws are written.
var moeFamilies = []string{"triton", "flashinfer", "marlin", "other"}

// kernelFamily names the family of an aiconfigurator kernel_source:
// vLLM's Triton fused-MoE kernels (and OpenAI's Triton MXFP4 kernels),
// FlashInfer's CUTLASS and TRT-LLM MoE kernels, or Marlin.
func kernelFamily(kernel string) string {
	switch {
	case strings.Contains(kernel, "marlin"):
		return "marlin"
	case strings.Contains(kernel, "flashinfer"):
		return "flashinfer"
	case strings.Contains(kernel, "triton"):
		return "triton"
	}
	return "other"
}

func familyNote(family string) string {
	if family == "" {
		return ""
	}
	return ", " + family + " kernels only"
}

// moeGrid is the law's residual at every layout the rows measured
// (hidden, inter, topk, experts, moe_tp, moe_ep) over the union of their
// token counts, as gemmGrid builds the GEMM one: the mean ln(measured/law)
// per cell, gaps filled along tokens in log tokens, then the running
// median of 5 along tokens.
func moeGrid(l *catalog.MoELaw, rows []int, dt []string, T, Hd, In, K, E, TP, EP, y []float64) *catalog.MoEGrid {
	type key struct{ h, in, k, e, tp, ep float64 }
	tokSet := map[float64]bool{}
	keys := map[key]bool{}
	for _, r := range rows {
		tokSet[T[r]] = true
		keys[key{Hd[r], In[r], K[r], E[r], TP[r], EP[r]}] = true
	}
	g := &catalog.MoEGrid{Dtype: l.Dtype}
	for t := range tokSet {
		g.Tokens = append(g.Tokens, t)
	}
	sort.Float64s(g.Tokens)
	var ks []key
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(a, b int) bool {
		x, z := ks[a], ks[b]
		for _, p := range [][2]float64{{x.h, z.h}, {x.in, z.in}, {x.k, z.k}, {x.e, z.e}, {x.tp, z.tp}, {x.ep, z.ep}} {
			if p[0] != p[1] {
				return p[0] < p[1]
			}
		}
		return false
	})
	row := map[key]int{}
	for i, k := range ks {
		row[k] = i
	}
	nt := len(g.Tokens)
	sum := make([]float64, len(ks)*nt)
	cnt := make([]int, len(sum))
	for _, r := range rows {
		law := *l
		law.WeightBytes = weightBytesOf(dt[r])
		p := kernel.MoETime(&law, kernel.MoEShape{Tokens: T[r], Hidden: Hd[r], Inter: In[r], TopK: K[r], Experts: E[r], TP: TP[r], EP: EP[r]})
		c := row[key{Hd[r], In[r], K[r], E[r], TP[r], EP[r]}]*nt + sort.SearchFloat64s(g.Tokens, T[r])
		sum[c] += math.Log(y[r] / p)
		cnt[c]++
	}
	for i, k := range ks {
		res := fillAndSmooth(g.Tokens, sum[i*nt:(i+1)*nt], cnt[i*nt:(i+1)*nt])
		g.Rows = append(g.Rows, catalog.MoEGridRow{Hidden: k.h, Inter: k.in, TopK: k.k, Experts: k.e, TP: k.tp, EP: k.ep, Res: res})
	}
	return g
}
