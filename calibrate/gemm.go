package calibrate

import (
	"fmt"
	"math"
	"sort"

	"blis/catalog"
	"blis/kernel"
)

// gemmDtype is what the fitter knows about one gemm_dtype of the table.
type gemmDtype struct {
	name        string
	peak        string  // chip peak key
	weightBytes float64 // per weight element, scales included
	actBytes    float64 // per activation element the GEMM reads
	quant       bool    // a separate kernel quantizes the bf16 activations
	hostFloor   bool    // timed without CUDA graphs
	note        string
}

// The gemm_dtypes of aiconfigurator's vLLM GEMM collector
// (collector/vllm/collect_gemm.py): bf16 through torch linear; fp8 with a
// static per-tensor scale (CUTLASS scaled_mm); fp8_block with 128×128
// weight blocks and dynamic per-token-group (128) activation scales
// (DeepGEMM / FlashInfer), timed without CUDA graphs
// (use_cuda_graph = gemm_type != "fp8_block"); nvfp4 with 16-element
// groups and fp8 scales (FlashInfer CuTe DSL).
var gemmDtypes = []gemmDtype{
	{name: "bfloat16", peak: "bf16_flops", weightBytes: 2, actBytes: 2},
	{name: "fp8", peak: "fp8_flops", weightBytes: 1, actBytes: 1, quant: true,
		note: "static per-tensor scales"},
	{name: "fp8_block", peak: "fp8_flops", weightBytes: 1 + 4.0/(128*128), actBytes: 1 + 4.0/128, quant: true, hostFloor: true,
		note: "128x128 weight blocks, per-token-group activation scales; timed without CUDA graphs, so host_floor_s is the eager launch floor (DeepGEMM/FlashInfer wrappers)"},
	{name: "nvfp4", peak: "fp4_flops", weightBytes: 0.5 + 1.0/16, actBytes: 0.5 + 1.0/16, quant: true,
		note: "16-element groups with fp8 scales"},
}

func (cf *chipFit) fitGEMM() ([]catalog.GEMMLaw, []catalog.GEMMGrid, error) {
	const rel = "gemm/vllm/0.24.0/gemm_perf.parquet"
	t, file, err := cf.table(rel)
	if err != nil || t == nil {
		return nil, nil, err
	}
	c := &cols{t: t}
	dt, M, N, K, lat := c.str("gemm_dtype"), c.num("m"), c.num("n"), c.num("k"), c.num("latency")
	if c.err != nil {
		return nil, nil, c.err
	}
	gridRows := make([][]int, len(gemmDtypes))
	y := seconds(lat)
	// fitOne fits one dtype; t0 > 0 fixes the device latency instead of
	// fitting it.
	fitOne := func(d gemmDtype, t0 float64) (*catalog.GEMMLaw, error) {
		var rows []int
		excluded := 0
		for i := range y {
			if dt[i] != d.name || !(y[i] > 0) {
				continue
			}
			// The block kernels take n and k in whole 128-blocks; smaller
			// shapes in the table fell back to another kernel.
			if d.name == "fp8_block" && (N[i] < 128 || K[i] < 128) {
				excluded++
				continue
			}
			rows = append(rows, i)
		}
		if len(rows) == 0 {
			return nil, nil
		}
		if peakOf(cf.chip, d.peak) <= 0 {
			return nil, fmt.Errorf("%s: %d %s rows but chip %s has no %s", file, len(rows), d.name, cf.chip.Name, d.peak)
		}
		fit, held, shapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{N[r], K[r]} })
		law := catalog.GEMMLaw{
			Dtype: d.name, PeakKey: d.peak, PeakFLOPS: peakOf(cf.chip, d.peak), MemBW: cf.chip.MemBW,
			WeightBytes: d.weightBytes, ActBytes: d.actBytes, T0: t0,
		}
		// Parameters: EffMax, OutHalf, BWEff [, T0] [, QuantPerRow, QuantBWEff] [, HostFloor].
		kinds := []paramKind{positive, positive, positive}
		p0 := []float64{0.7, 1e5, 0.8}
		if t0 <= 0 {
			kinds = append(kinds, positive)
			p0 = append(p0, quantile(y, fit, 0.02)*0.8)
		}
		if d.quant {
			kinds = append(kinds, positive, positive)
			p0 = append(p0, 1e-9, 0.5)
		}
		if d.hostFloor {
			kinds = append(kinds, positive)
			p0 = append(p0, quantile(y, fit, 0.2))
		}
		set := func(p []float64, l *catalog.GEMMLaw) {
			l.EffMax, l.OutHalf, l.BWEff = p[0], p[1], p[2]
			j := 3
			if t0 <= 0 {
				l.T0 = p[j]
				j++
			}
			if d.quant {
				l.QuantPerRow, l.QuantBWEff = p[j], p[j+1]
				j += 2
			}
			if d.hostFloor {
				l.HostFloor = p[j]
			}
		}
		fs := &fitSet{y: y, fit: fit, held: held, kinds: kinds, p0: p0, heldShapes: shapes,
			predict: func(p []float64, r int) float64 {
				l := law
				set(p, &l)
				return kernel.GEMMTime(&l, M[r], N[r], K[r])
			}}
		p, fm, hm := fs.run()
		set(p, &law)
		for di := range gemmDtypes {
			if gemmDtypes[di].name == d.name {
				gridRows[di] = rows
			}
		}
		scope := join(
			fmt.Sprintf("gemm_dtype=%s (%s)", d.name, orDefault(d.note, "torch linear")),
			fmt.Sprintf("m %g..%g, n %g..%g, k %g..%g over %d distinct (n,k)", minOf(M, rows), maxOf(M, rows), minOf(N, rows), maxOf(N, rows), minOf(K, rows), maxOf(K, rows), shapes),
			heldRule("(n,k) pair"),
		)
		if excluded > 0 {
			scope = join(scope, fmt.Sprintf("%d rows with n or k < 128 excluded (not block-aligned: another kernel)", excluded))
		}
		if t0 > 0 {
			scope = join(scope, "t0_s not fitted: under the host floor the device latency is not identifiable, so it is the fp8 (CUDA-graph-timed) law's t0_s")
		}
		law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
		return &law, nil
	}
	// Graph-timed dtypes first, in parallel; then the eager ones, which
	// borrow the fp8 law's device latency.
	laws := make([]*catalog.GEMMLaw, len(gemmDtypes))
	err = parallel(len(gemmDtypes), func(di int) error {
		if gemmDtypes[di].hostFloor {
			return nil
		}
		var err error
		laws[di], err = fitOne(gemmDtypes[di], 0)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	t0 := 0.0
	for _, l := range laws {
		if l != nil && l.Dtype == "fp8" {
			t0 = l.T0
		}
	}
	for di, d := range gemmDtypes {
		if d.hostFloor {
			if laws[di], err = fitOne(d, t0); err != nil {
				return nil, nil, err
			}
		}
	}
	var out []catalog.GEMMLaw
	var grids []catalog.GEMMGrid
	for di, l := range laws {
		if l != nil {
			out = append(out, *l)
			grids = append(grids, gemmGrid(l, gridRows[di], M, N, K, y))
		}
	}
	return out, grids, nil
}

// gemmGrid is the law's residual on the table's m × n × k grid: the mean
// ln(measured/law) of each cell's rows (fitted and held-out alike: the grid
// is a lookup of what was measured), cells without rows filled along m
// within their (n, k) row by linear interpolation in log m (the nearest
// measured m beyond the ends; 0 for a row with no measurement), then a
// running median of 5 along m: the tables hold isolated cells 2–2.5× off
// their neighbours (B200 fp8, n 2560 k 8192: m 1, 2 and 4 take 0.027–0.032
// ms, m 3 and 5–16 take 0.013 ms), single timings a pricer should not
// reproduce, while a shape's real dependence on m spans several cells.
func gemmGrid(l *catalog.GEMMLaw, rows []int, M, N, K, y []float64) catalog.GEMMGrid {
	axis := func(x []float64) []float64 {
		seen := map[float64]bool{}
		var out []float64
		for _, r := range rows {
			if !seen[x[r]] {
				seen[x[r]] = true
				out = append(out, x[r])
			}
		}
		sort.Float64s(out)
		return out
	}
	g := catalog.GEMMGrid{Dtype: l.Dtype, M: axis(M), N: axis(N), K: axis(K)}
	nm, nk := len(g.M), len(g.K)
	sum := make([]float64, len(g.N)*nk*nm)
	cnt := make([]int, len(sum))
	idx := func(axis []float64, x float64) int { return sort.SearchFloat64s(axis, x) }
	for _, r := range rows {
		c := (idx(g.N, N[r])*nk+idx(g.K, K[r]))*nm + idx(g.M, M[r])
		sum[c] += math.Log(y[r] / kernel.GEMMTime(l, M[r], N[r], K[r]))
		cnt[c]++
	}
	g.Res = make([]int16, 0, len(sum))
	for row := 0; row < len(g.N)*nk; row++ {
		g.Res = append(g.Res, fillAndSmooth(g.M, sum[row*nm:(row+1)*nm], cnt[row*nm:(row+1)*nm])...)
	}
	return g
}

func heldRule(what string) string {
	return fmt.Sprintf("held out: every %dth distinct %s in sorted order", holdEvery, what)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func peakOf(ch *catalog.Chip, key string) float64 {
	switch key {
	case "bf16_flops":
		return ch.BF16FLOPS
	case "fp8_flops":
		return ch.FP8FLOPS
	case "fp4_flops":
		return ch.FP4FLOPS
	}
	return 0
}

// quantile returns the q-quantile of y over rows (nearest rank).
func quantile(y []float64, rows []int, q float64) float64 {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = y[r]
	}
	sort.Float64s(v)
	i := int(math.Round(q * float64(len(v)-1)))
	return v[i]
}

func minOf(x []float64, rows []int) float64 {
	m := math.Inf(1)
	for _, r := range rows {
		m = math.Min(m, x[r])
	}
	return m
}

func maxOf(x []float64, rows []int) float64 {
	m := math.Inf(-1)
	for _, r := range rows {
		m = math.Max(m, x[r])
	}
	return m
}

// medianAlongM is the running median of 5 (fewer at the ends) of v.
func medianAlongM(v []float64) []float64 {
	out := make([]float64, len(v))
	w := make([]float64, 0, 5)
	for i := range v {
		w = w[:0]
		for j := max(0, i-2); j <= min(len(v)-1, i+2); j++ {
			w = append(w, v[j])
		}
		sort.Float64s(w)
		if len(w)%2 == 1 {
			out[i] = w[len(w)/2]
		} else {
			out[i] = (w[len(w)/2-1] + w[len(w)/2]) / 2
		}
	}
	return out
}

// fillAndSmooth turns one grid row's sums and counts of log residuals over
// an ascending axis into fixed-point residuals: the mean per cell, cells
// without rows filled by linear interpolation in log axis (the nearest
// measured cell beyond the ends; 0 for a row with no measurement), then
// the running median of 5.
func fillAndSmooth(axis, sum []float64, cnt []int) []int16 {
	n := len(axis)
	v := make([]float64, n)
	var have []int
	for i := 0; i < n; i++ {
		if cnt[i] > 0 {
			v[i] = sum[i] / float64(cnt[i])
			have = append(have, i)
		}
	}
	for i := 0; i < n; i++ {
		if cnt[i] > 0 {
			continue
		}
		j := sort.SearchInts(have, i)
		switch {
		case len(have) == 0:
		case j == 0:
			v[i] = v[have[0]]
		case j == len(have):
			v[i] = v[have[len(have)-1]]
		default:
			a, b := have[j-1], have[j]
			w := math.Log(axis[i]/axis[a]) / math.Log(axis[b]/axis[a])
			v[i] = (1-w)*v[a] + w*v[b]
		}
	}
	out := make([]int16, n)
	for i, x := range medianAlongM(v) {
		q := math.Round(x * catalog.GEMMGridScale)
		out[i] = int16(math.Max(math.MinInt16, math.Min(math.MaxInt16, q)))
	}
	return out
}
