package calibrate

import (
	"fmt"

	"blis/catalog"
	"blis/kernel"
)

// gdnKernels are the Gated DeltaNet kernel sources a law is fitted for,
// with the phase their rows carry.
var gdnKernels = []struct{ kernel, phase string }{
	{catalog.GDNConvPrefill, "context"},
	{catalog.GDNRulePrefill, "context"},
	{catalog.GDNConvDecode, "generation"},
	{catalog.GDNRuleDecode, "generation"},
}

// gdnTable is the linear-attention table (Qwen3.5's GDN layers, per GPU
// heads): every row one kernel call over batch_size sequences of
// num_tokens new tokens in all.
const gdnTable = "linear_attention/vllm/0.24.0/gdn_perf.parquet"

// fitGDN fits one law per GDN kernel source (kernel.GDNTime). The tables
// time the layer's state in fp32 (Qwen3.5's mamba_ssm_dtype) and its
// activations in bf16; rows with no latency (the packed-recurrent
// kernel's grid guard on the largest decode shapes) are skipped. A chip
// without the table gets no GDN laws.
func (cf *chipFit) fitGDN() ([]catalog.GDNLaw, error) {
	t, file, err := cf.table(gdnTable)
	if err != nil || t == nil {
		return nil, err
	}
	c := &cols{t: t}
	kern, phase := c.str("kernel_source"), c.str("phase")
	B, N, S := c.num("batch_size"), c.num("num_tokens"), c.num("seq_len")
	conv, nk, dk, nv, dv := c.num("d_conv"), c.num("num_k_heads"), c.num("head_k_dim"), c.num("num_v_heads"), c.num("head_v_dim")
	lat := c.num("latency")
	if c.err != nil {
		return nil, c.err
	}
	y := seconds(lat)
	shape := func(r int) kernel.GDNShape {
		return kernel.GDNShape{KeyHeads: nk[r], ValueHeads: nv[r], KeyHeadDim: dk[r], ValueDim: dv[r], ConvKernel: conv[r], ActBytes: 2, SSMStateByte: 4}
	}
	var laws []catalog.GDNLaw
	for _, k := range gdnKernels {
		var rows []int
		for r := range y {
			if kern[r] == k.kernel && y[r] > 0 {
				if phase[r] != k.phase {
					return nil, fmt.Errorf("%s: row %d: %s in phase %q, want %q", file, r, k.kernel, phase[r], k.phase)
				}
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			return nil, fmt.Errorf("%s: no timed rows of kernel_source %s", file, k.kernel)
		}
		fit, held, shapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{nk[r], nv[r], B[r], S[r]} })
		law := catalog.GDNLaw{Kernel: k.kernel, Phase: k.phase, PeakFLOPS: cf.chip.BF16FLOPS, MemBW: cf.chip.MemBW}
		withFLOPs := k.kernel == catalog.GDNRulePrefill
		set := func(p []float64, l *catalog.GDNLaw) {
			l.T0, l.BWEff, l.PerSeq = p[0], p[1], p[2]
			if withFLOPs {
				l.FLOPEff, l.PerChunk = p[3], p[4]
			}
		}
		kinds, p0 := []paramKind{positive, positive, positive}, []float64{quantile(y, fit, 0.02), 0.5, 1e-7}
		if withFLOPs {
			kinds, p0 = append(kinds, fraction, positive), append(p0, 0.2, 2e-6)
		}
		fs := &fitSet{y: y, fit: fit, held: held, heldShapes: shapes, kinds: kinds, p0: p0,
			starts: [][]float64{[]float64{1, 0.2, 10, 0.5, 0.3}[:len(p0)], []float64{0.5, 2, 0.1, 2, 3}[:len(p0)]},
			predict: func(p []float64, r int) float64 {
				l := law
				set(p, &l)
				return kernel.GDNTime(&l, shape(r), B[r], N[r])
			}}
		p, fm, hm := fs.run()
		set(p, &law)
		scope := join(
			fmt.Sprintf("kernel_source=%s, phase=%s", k.kernel, k.phase),
			fmt.Sprintf("batch %g..%g, new tokens %g..%g, %d distinct (key heads, value heads, batch, seq_len) per GPU; state fp32, activations bf16", minOf(B, rows), maxOf(B, rows), minOf(N, rows), maxOf(N, rows), shapes),
			heldRule("(num_k_heads, num_v_heads, batch_size, seq_len)"),
		)
		law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
		laws = append(laws, law)
	}
	return laws, nil
}
