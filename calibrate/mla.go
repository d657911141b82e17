package calibrate

import (
	"fmt"

	"blis/catalog"
	"blis/kernel"
)

// mlaGEMM maps the MLA tables' gemm_type to the projections' weight bytes
// and the chip peak they run at.
var mlaGEMM = map[string]struct {
	peak        string
	weightBytes float64
}{
	"bfloat16":  {"bf16_flops", 2},
	"fp8_block": {"fp8_flops", 1 + 4.0/(128*128)},
	"nvfp4":     {"fp4_flops", 0.5 + 1.0/16},
}

func (cf *chipFit) fitMLA() (dec, pre []catalog.MLALaw, err error) {
	err = cf.eachModulePhase("mla/vllm/0.24.0/mla", func(phase string, mt *moduleTable) error {
		file, model, H, B, S, step, y := mt.file, mt.model, mt.heads, mt.batch, mt.isl, mt.step, mt.sec
		shapes := map[string]kernel.MLAShape{}
		groups := map[moduleGroup][]int{}
		excluded := 0
		for i := range y {
			if !mt.usable(i) {
				continue
			}
			// mla_dtype=fp8 rows quantize the prefill query (Blackwell
			// only); the laws cover bf16 attention compute.
			if mt.mlaDtype[i] != "bfloat16" {
				excluded++
				continue
			}
			m, err := mt.lookup(i, (*catalog.Model).IsMLA, "MLA")
			if err != nil {
				return err
			}
			shapes[model[i]] = kernel.MLAShape{Hidden: float64(m.HiddenSize), QLoraRank: float64(m.QLoraRank),
				KVLoraRank: float64(m.KVLoraRank), RopeDim: float64(m.QKRopeHeadDim), NopeDim: float64(m.QKNopeHeadDim), VDim: float64(m.VHeadDim)}
			g := moduleGroup{gemm: mt.gemm[i], kv: mt.kv[i]}
			groups[g] = append(groups[g], i)
		}
		combos := mt.sortedGroups(groups)
		models := mt.modelIDs()
		for _, cb := range combos {
			rows := groups[cb]
			law, ok, err := cf.baseLaw(mt, cb)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			fit, held, nshapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{H[r]} })
			shape := func(r int) kernel.MLAShape {
				s := shapes[model[r]]
				s.Heads = H[r]
				return s
			}
			var fs *fitSet
			var scope string
			if phase == "generation" {
				set := func(p []float64, l *catalog.MLALaw) {
					l.T0, l.EffMax, l.WorkHalf, l.BWEff, l.PerSeqHead = p[0], p[1], p[2], p[3], p[4]
				}
				fs = &fitSet{y: y, fit: fit, held: held, heldShapes: nshapes,
					kinds: []paramKind{positive, positive, positive, positive, positive},
					p0:    []float64{quantile(y, fit, 0.02) / 2, 0.3, 100, 0.7, 1e-8},
					predict: func(p []float64, r int) float64 {
						l := law
						set(p, &l)
						// step is the sequence length including the
						// current token (isl = 1): KV length isl+step−1.
						return kernel.MLADecodeTime(&l, shape(r), B[r], B[r]*(S[r]+step[r]-1))
					}}
				p, fm, hm := fs.run()
				set(p, &law)
				scope = join(
					fmt.Sprintf("model %v (whole attention module: projections, RoPE, absorbed attention, o_proj), mla_dtype=bfloat16, gemm_type=%s, kv_cache_dtype=%s, tp_size=1", models, cb.gemm, cb.kv),
					fmt.Sprintf("batch %g..%g, KV length %g..%g, heads %g..%g", minOf(B, rows), maxOf(B, rows), minOf(step, rows), maxOf(step, rows), minOf(H, rows), maxOf(H, rows)),
					heldRule("num_heads"),
				)
				law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
				dec = append(dec, law)
				continue
			}
			set := func(p []float64, l *catalog.MLALaw) {
				l.T0, l.EffMax, l.WorkHalf, l.BWEff = p[0], p[1], p[2], p[3]
			}
			fs = &fitSet{y: y, fit: fit, held: held, heldShapes: nshapes,
				kinds: []paramKind{positive, positive, positive, positive},
				p0:    []float64{quantile(y, fit, 0.02) / 2, 0.3, 1000, 0.7},
				predict: func(p []float64, r int) float64 {
					l := law
					set(p, &l)
					return kernel.MLAPrefillTime(&l, shape(r), B[r]*S[r], B[r]*kernel.CausalPairs(S[r], 0, 0))
				}}
			p, fm, hm := fs.run()
			set(p, &law)
			scope = join(
				fmt.Sprintf("model %v (whole attention module), mla_dtype=bfloat16 (%d fp8-query rows excluded), gemm_type=%s, kv_cache_dtype=%s, tp_size=1", models, excluded, cb.gemm, cb.kv),
				fmt.Sprintf("batch %g..%g, isl %g..%g, no cached prefix, heads %g..%g", minOf(B, rows), maxOf(B, rows), minOf(S, rows), maxOf(S, rows), minOf(H, rows), maxOf(H, rows)),
				heldRule("num_heads"),
			)
			law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
			pre = append(pre, law)
		}
		return nil
	})
	return dec, pre, err
}
