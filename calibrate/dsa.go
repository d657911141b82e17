package calibrate

import (
	"fmt"

	"blis/catalog"
	"blis/kernel"
)

// dsaPads are the query-head paddings a DSA law is tried with: none, and
// the 64 and 128 heads vLLM's FlashMLA sparse kernels compute for fewer on
// SM90 and SM100 (vllm/v1/attention/backends/mla/flashmla_sparse.py). The
// fit keeps the one the table agrees with best on its held-out heads (on
// the fitted rows when none are held out): the tables time several
// backends (FlashMLA sparse, FlashInfer sparse MLA) under one dtype pair.
var dsaPads = []float64{1, 64, 128}

// fitDSA fits the DeepSeek-sparse-attention module tables (DeepSeek-V3.2,
// GLM-5; sparse_attention/vllm/0.24.0/dsa_*_module_perf.parquet) as the
// MLA tables are fitted, with the indexer's terms and the head padding.
func (cf *chipFit) fitDSA() (dec, pre []catalog.MLALaw, err error) {
	err = cf.eachModulePhase("sparse_attention/vllm/0.24.0/dsa", func(phase string, mt *moduleTable) error {
		file, model, H, B, S, step, y := mt.file, mt.model, mt.heads, mt.batch, mt.isl, mt.step, mt.sec
		shapes := map[string]kernel.DSAShape{}
		// Prefill laws are fitted per kernel regime: the tables time the
		// backend vLLM picks for each head count, and in prefill the picks
		// differ in cost (FlashMLA sparse with an fp8 cache runs the fp8
		// decode kernel below 32 heads per rank — flashmla_sparse.py's
		// MIN_HEADS_FOR_BF16_PREFILL; the H100 rows cost 1.4–1.55× the bf16
		// cache's there and +4 % from 32 heads up — and upconverts to bf16
		// above; Blackwell with a bf16 cache runs FlashInfer at ≤ 16 heads).
		groups := map[moduleGroup][]int{}
		for i := range y {
			if !mt.usable(i) || mt.mlaDtype[i] != "bfloat16" {
				continue
			}
			m, err := mt.lookup(i, (*catalog.Model).IsDSA, "DSA indexer")
			if err != nil {
				return err
			}
			shapes[model[i]] = kernel.DSAShape{
				MLAShape: kernel.MLAShape{Hidden: float64(m.HiddenSize), QLoraRank: float64(m.QLoraRank),
					KVLoraRank: float64(m.KVLoraRank), RopeDim: float64(m.QKRopeHeadDim), NopeDim: float64(m.QKNopeHeadDim), VDim: float64(m.VHeadDim)},
				IndexHeads: float64(m.IndexHeads), IndexHeadDim: float64(m.IndexHeadDim), TopK: float64(m.IndexTopK)}
			g := moduleGroup{gemm: mt.gemm[i], kv: mt.kv[i]}
			if phase == "context" {
				g.regime = mt.kern[i]
				if g.regime == "FLASHMLA_SPARSE" && g.kv == "fp8" && H[i] < 32 {
					g.regime += " (fp8 decode kernel)"
				}
			}
			groups[g] = append(groups[g], i)
		}
		combos := mt.sortedGroups(groups)
		models := mt.modelIDs()
		regimes := map[[2]string]int{}
		for _, cb := range combos {
			regimes[[2]string{cb.gemm, cb.kv}]++
		}
		for _, cb := range combos {
			rows := groups[cb]
			base, ok, err := cf.baseLaw(mt, cb)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			shape := func(r int) kernel.DSAShape {
				s := shapes[model[r]]
				s.Heads = H[r]
				return s
			}
			var best catalog.MLALaw
			bestFit := -1.0
			for _, pad := range dsaPads {
				fit, held, nshapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{H[r]} })
				law := base
				law.PadHeads = pad
				kernels := ""
				if regimes[[2]string{cb.gemm, cb.kv}] > 1 {
					law.MinHeads, law.MaxHeads = minOf(H, rows), maxOf(H, rows)
					kernels = ", kernel " + cb.regime + " (the rows of its head range)"
				}
				var fs *fitSet
				var scope string
				if phase == "generation" {
					set := func(p []float64, l *catalog.MLALaw) {
						l.T0, l.EffMax, l.WorkHalf, l.BWEff, l.PerSeqHead, l.IndexerPerToken = p[0], p[1], p[2], p[3], p[4], p[5]
					}
					fs = &fitSet{y: y, fit: fit, held: held, heldShapes: nshapes,
						kinds: []paramKind{positive, fraction, positive, fraction, positive, positive},
						p0:    []float64{quantile(y, fit, 0.02) / 2, 0.3, 100, 0.7, 1e-8, 5e-11},
						predict: func(p []float64, r int) float64 {
							l := law
							set(p, &l)
							s := shape(r)
							kv := S[r] + step[r] - 1 // as the MLA tables: KV length isl+step−1
							return kernel.DSADecodeTime(&l, s, B[r], B[r]*kv, B[r]*min(kv, s.TopK))
						}}
					p, fm, hm := fs.run()
					set(p, &law)
					scope = join(
						fmt.Sprintf("model %v (whole DSA attention module: MLA projections, indexer, sparse attention, o_proj), mla_dtype=bfloat16, gemm_type=%s, kv_cache_dtype=%s, tp_size=1, query heads padded to %g", models, cb.gemm, cb.kv, pad),
						fmt.Sprintf("batch %g..%g, KV length %g..%g, heads %g..%g", minOf(B, rows), maxOf(B, rows), minOf(step, rows), maxOf(step, rows), minOf(H, rows), maxOf(H, rows)),
						heldRule("num_heads"),
					)
					law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
				} else {
					set := func(p []float64, l *catalog.MLALaw) {
						l.T0, l.EffMax, l.WorkHalf, l.BWEff, l.IndexerPerPair = p[0], p[1], p[2], p[3], p[4]
					}
					fs = &fitSet{y: y, fit: fit, held: held, heldShapes: nshapes,
						// Efficiencies are fractions: with the floor a max,
						// an unbounded bandwidth term could vanish into it.
						kinds: []paramKind{positive, fraction, positive, fraction, positive},
						p0:    []float64{quantile(y, fit, 0.02), 0.3, 1000, 0.7, 1e-10},
						predict: func(p []float64, r int) float64 {
							l := law
							set(p, &l)
							s := shape(r)
							// step is the cached prefix the chunk follows.
							return kernel.DSAPrefillTime(&l, s, B[r]*S[r], B[r]*kernel.CausalPairs(S[r], step[r], s.TopK), B[r]*kernel.CausalPairs(S[r], step[r], 0))
						}}
					p, fm, hm := fs.run()
					set(p, &law)
					scope = join(
						fmt.Sprintf("model %v (whole DSA attention module), mla_dtype=bfloat16, gemm_type=%s, kv_cache_dtype=%s%s, tp_size=1, query heads padded to %g", models, cb.gemm, cb.kv, kernels, pad),
						fmt.Sprintf("batch %g..%g, isl %g..%g, cached prefix %g..%g, heads %g..%g", minOf(B, rows), maxOf(B, rows), minOf(S, rows), maxOf(S, rows), minOf(step, rows), maxOf(step, rows), minOf(H, rows), maxOf(H, rows)),
						heldRule("num_heads"),
					)
					law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
				}
				// The padding is chosen on the held-out heads where some are
				// held out (selectionMAPE).
				if m := selectionMAPE(law.Provenance); bestFit < 0 || m < bestFit {
					best, bestFit = law, m
				}
			}
			if phase == "generation" {
				dec = append(dec, best)
			} else {
				pre = append(pre, best)
			}
		}
		return nil
	})
	return dec, pre, err
}
