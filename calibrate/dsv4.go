package calibrate

import (
	"fmt"
	"sort"

	"blis/catalog"
	"blis/kernel"
)

// dsv4Model is a DeepSeek-V4 model the attention tables time, by its
// config.json (the numbers DSV4Shape needs, with whole-model head and
// output-group counts, which each row splits by its tp_size).
type dsv4Model struct {
	shape          kernel.DSV4Shape
	heads, oGroups float64
}

// dsv4Models are the models aiconfigurator's vLLM DeepSeek-V4 collector
// times (collector/vllm/collect_dsv4_attn.py), from their config.json:
// hidden_size, num_attention_heads, head_dim, q_lora_rank, o_lora_rank,
// o_groups, index_n_heads, index_head_dim, index_topk, sliding_window.
// deepseek-ai/DeepSeek-V4-Pro (the B200 tables) has Pro-FP8's attention
// config; only its experts' dtype differs.
var dsv4Models = map[string]dsv4Model{
	"deepseek-ai/DeepSeek-V4-Pro": dsv4Pro,
	"sgl-project/DeepSeek-V4-Flash-FP8": {heads: 64, oGroups: 8, shape: kernel.DSV4Shape{Hidden: 4096, HeadDim: 512,
		QLoraRank: 1024, OLoraRank: 1024, IndexHeads: 64, IndexHeadDim: 128, TopK: 512, Window: 128}},
	"sgl-project/DeepSeek-V4-Pro-FP8": dsv4Pro,
}

var dsv4Pro = dsv4Model{heads: 128, oGroups: 16, shape: kernel.DSV4Shape{Hidden: 7168, HeadDim: 512,
	QLoraRank: 1536, OLoraRank: 1024, IndexHeads: 64, IndexHeadDim: 128, TopK: 1024, Window: 128}}

// dsv4Kinds are the layer kinds with module tables and their compress
// ratios (the tables' compress_ratio column; checked per row).
var dsv4Kinds = []struct {
	kind  string
	ratio float64
}{{"csa", 4}, {"hca", 128}}

// fitDSV4 fits the DeepSeek-V4 attention module tables
// (sparse_attention/vllm/0.24.0/dsv4_{csa,hca}_{generation,context}_module_perf):
// each row times one DeepseekV4Attention forward inside a CUDA graph, with
// num_heads the rank's heads (the model's / tp_size, the collector
// simulating the TP shard in one process), batch_size sequences of isl new
// tokens after step cached ones (context) or one decode token after step
// past tokens (generation: the sequence holds step + 1).
func (cf *chipFit) fitDSV4() (dec, pre []catalog.DSV4AttnLaw, err error) {
	for _, k := range dsv4Kinds {
		prefix := "sparse_attention/vllm/0.24.0/dsv4_" + k.kind
		err = cf.eachModulePhase(prefix, func(phase string, mt *moduleTable) error {
			law, ok, err := cf.fitDSV4Table(k.kind, k.ratio, phase, mt)
			if err != nil || !ok {
				return err
			}
			if phase == "generation" {
				dec = append(dec, law)
			} else {
				pre = append(pre, law)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return dec, pre, nil
}

// fitDSV4Table fits one kind and phase. Every row of the tables has
// gemm_type fp8_block and an fp8 KV cache (vLLM's DeepSeek-V4 cache is
// fp8); other combinations are an error rather than a silent second law.
func (cf *chipFit) fitDSV4Table(kind string, ratio float64, phase string, mt *moduleTable) (catalog.DSV4AttnLaw, bool, error) {
	cr, err := mt.t.Num("compress_ratio")
	if err != nil {
		return catalog.DSV4AttnLaw{}, false, err
	}
	file, model, H, B, S, step, tp, y := mt.file, mt.model, mt.heads, mt.batch, mt.isl, mt.step, mt.tp, mt.sec
	var rows []int
	seen := map[string]bool{}
	oneToken := 0
	for i := range y {
		if !(y[i] > 0) {
			continue
		}
		m, ok := dsv4Models[model[i]]
		if !ok {
			return catalog.DSV4AttnLaw{}, false, fmt.Errorf("%s: row %d: model %q is not a known DeepSeek-V4 model", file, i, model[i])
		}
		if cr[i] != ratio {
			return catalog.DSV4AttnLaw{}, false, fmt.Errorf("%s: row %d: compress_ratio %g, want %g", file, i, cr[i], ratio)
		}
		if mt.gemm[i] != "fp8_block" || mt.kv[i] != "fp8" || mt.mlaDtype[i] != "bfloat16" {
			return catalog.DSV4AttnLaw{}, false, fmt.Errorf("%s: row %d: gemm_type %q, kv_cache_dtype %q, mla_dtype %q: the DSV4 laws cover fp8_block, fp8, bfloat16",
				file, i, mt.gemm[i], mt.kv[i], mt.mlaDtype[i])
		}
		if H[i]*tp[i] != m.heads {
			return catalog.DSV4AttnLaw{}, false, fmt.Errorf("%s: row %d: num_heads %g × tp_size %g is not the model's %g heads", file, i, H[i], tp[i], m.heads)
		}
		// A context row of one new token per sequence runs vLLM's decode
		// path (query length 1 is a decode request to the DSV4 backend's
		// batch split): the H200 rows equal the generation table's at the
		// same context (Flash, 16 sequences after 4096: 0.117 ms against
		// 0.120), not the prefill path's per-sequence prefix pass (4 new
		// tokens after 65532: 0.43 ms, after 0: 0.13). The decode law
		// prices such rows.
		if phase == "context" && S[i] == 1 {
			oneToken++
			continue
		}
		seen[model[i]] = true
		rows = append(rows, i)
	}
	if len(rows) == 0 {
		return catalog.DSV4AttnLaw{}, false, nil
	}
	var models []string
	for id := range seen {
		models = append(models, id)
	}
	sort.Strings(models)
	base, ok, err := cf.baseLaw(mt, moduleGroup{gemm: "fp8_block", kv: "fp8"})
	if err != nil || !ok {
		return catalog.DSV4AttnLaw{}, false, err
	}
	shape := func(r int) kernel.DSV4Shape {
		m := dsv4Models[model[r]]
		s := m.shape
		s.Heads, s.OGroups, s.CompressRatio = H[r], m.oGroups/tp[r], ratio
		return s
	}
	// The per-row reads do not depend on the parameters: computed once.
	rowsN, keys, index, ents := make([]float64, len(y)), make([]float64, len(y)), make([]float64, len(y)), make([]float64, len(y))
	shapes := make([]kernel.DSV4Shape, len(y))
	for _, r := range rows {
		s := shape(r)
		shapes[r] = s
		if phase == "generation" {
			rowsN[r] = B[r]
			keys[r], index[r] = s.DecodeReads(B[r], B[r]*(step[r]+1))
		} else {
			rowsN[r] = B[r] * S[r]
			a, ix, e := s.PrefillReads(S[r], step[r])
			keys[r], index[r], ents[r] = B[r]*a, B[r]*ix, B[r]*e
		}
	}
	csa := kind == "csa"
	var best catalog.DSV4AttnLaw
	bestFit := -1.0
	for _, pad := range dsaPads {
		law := catalog.DSV4AttnLaw{Kind: kind, GEMMDtype: base.GEMMDtype, KVDtype: base.KVDtype, PeakKey: base.PeakKey,
			PeakFLOPS: base.PeakFLOPS, MemBW: base.MemBW, WeightBytes: base.WeightBytes, KVBytes: base.KVBytes, PadHeads: pad}
		// Held out: whole (model, heads per rank, batch) shapes.
		fit, held, nshapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{shapes[r].Hidden, H[r], B[r]} })
		kinds := []paramKind{positive, fraction, positive, fraction, fraction}
		p0 := []float64{quantile(y, fit, 0.02) / 2, 0.3, 1000, 0.7, 0.3}
		var set func(p []float64, l *catalog.DSV4AttnLaw)
		var predict func(l *catalog.DSV4AttnLaw, r int) float64
		if phase == "generation" {
			kinds, p0 = append(kinds, positive), append(p0, 1e-8)
			if csa {
				kinds, p0 = append(kinds, positive), append(p0, 5e-11)
			}
			set = func(p []float64, l *catalog.DSV4AttnLaw) {
				l.T0, l.EffMax, l.WorkHalf, l.BWEff, l.AttnEff, l.PerSeqHead = p[0], p[1], p[2], p[3], p[4], p[5]
				if csa {
					l.IndexerPerToken = p[6]
				}
			}
			predict = func(l *catalog.DSV4AttnLaw, r int) float64 {
				return kernel.DSV4DecodeTime(l, shapes[r], rowsN[r], keys[r], index[r])
			}
		} else {
			kinds, p0 = append(kinds, positive, positive), append(p0, 1e-9, 1e-8)
			if csa {
				kinds, p0 = append(kinds, positive), append(p0, 1e-12)
			}
			set = func(p []float64, l *catalog.DSV4AttnLaw) {
				l.T0, l.EffMax, l.WorkHalf, l.BWEff, l.AttnEff, l.PerCachedEntry, l.PerToken = p[0], p[1], p[2], p[3], p[4], p[5], p[6]
				if csa {
					l.IndexerPerPair = p[7]
				}
			}
			predict = func(l *catalog.DSV4AttnLaw, r int) float64 {
				return kernel.DSV4PrefillTime(l, shapes[r], rowsN[r], keys[r], index[r], ents[r])
			}
		}
		fs := &fitSet{y: y, fit: fit, held: held, heldShapes: nshapes, kinds: kinds, p0: p0,
			predict: func(p []float64, r int) float64 {
				l := law
				set(p, &l)
				return predict(&l, r)
			}}
		p, fm, hm := fs.run()
		set(p, &law)
		what := "batch %g..%g, past KV length (step) %g..%g"
		lo, hi := minOf(step, rows), maxOf(step, rows)
		if phase == "context" {
			what = fmt.Sprintf("batch %%g..%%g, isl %g..%g (%d isl-1 rows excluded: vLLM's decode path), cached prefix (step) %%g..%%g", minOf(S, rows), maxOf(S, rows), oneToken)
		}
		scope := join(
			fmt.Sprintf("model %v (whole DeepSeek-V4 %s attention module, compress_ratio %g), mla_dtype=bfloat16, gemm_type=fp8_block, kv_cache_dtype=fp8, tp_size %g..%g (num_heads per rank), query heads padded to %g",
				models, kind, ratio, minOf(tp, rows), maxOf(tp, rows), pad),
			fmt.Sprintf(what+", heads per rank %g..%g", minOf(B, rows), maxOf(B, rows), lo, hi, minOf(H, rows), maxOf(H, rows)),
			heldRule("(hidden_size, num_heads, batch_size)"),
		)
		law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
		// As for DSA: the padding is chosen on the held-out shapes.
		if m := selectionMAPE(law.Provenance); bestFit < 0 || m < bestFit {
			best, bestFit = law, m
		}
	}
	return best, true, nil
}

// fitMHC fits the DeepSeek-V4 mHC table (mhc/vllm/0.24.0/mhc_module_perf,
// collector/vllm/collect_mhc_module.py): each row times num_sites
// independent calls of mhc_pre_tilelang or mhc_post_tilelang (op_name) on
// num_tokens tokens in one CUDA graph, so one call is latency/num_sites.
func (cf *chipFit) fitMHC() ([]catalog.MHCLaw, error) {
	const rel = "mhc/vllm/0.24.0/mhc_module_perf.parquet"
	t, file, err := cf.table(rel)
	if err != nil || t == nil {
		return nil, err
	}
	c := &cols{t: t}
	op, tok, sites, hc, hid, lat := c.str("op_name"), c.num("num_tokens"), c.num("num_sites"), c.num("hc_mult"), c.num("hidden_size"), c.num("latency")
	if c.err != nil {
		return nil, c.err
	}
	y := seconds(lat)
	byOp := map[string][]int{}
	for i := range y {
		if !(y[i] > 0) {
			continue
		}
		if op[i] != "pre" && op[i] != "post" {
			return nil, fmt.Errorf("%s: row %d: op_name %q is not pre or post", file, i, op[i])
		}
		if !(sites[i] >= 1) {
			return nil, fmt.Errorf("%s: row %d: num_sites %g, want ≥ 1", file, i, sites[i])
		}
		y[i] /= sites[i]
		byOp[op[i]] = append(byOp[op[i]], i)
	}
	var out []catalog.MHCLaw
	for _, name := range []string{"pre", "post"} {
		rows := byOp[name]
		if len(rows) == 0 {
			continue
		}
		law := catalog.MHCLaw{Op: name, MemBW: cf.chip.MemBW}
		set := func(p []float64, l *catalog.MHCLaw) { l.T0, l.BWEff, l.PerToken = p[0], p[1], p[2] }
		fit, held, nshapes := splitByShape(rows, func(r int) shapeKey { return shapeKey{hid[r], hc[r], tok[r]} })
		fs := &fitSet{y: y, fit: fit, held: held, heldShapes: nshapes,
			kinds: []paramKind{positive, fraction, positive},
			p0:    []float64{quantile(y, fit, 0.02), 0.7, 1e-9},
			predict: func(p []float64, r int) float64 {
				l := law
				set(p, &l)
				return kernel.MHCTime(&l, tok[r], hid[r], hc[r])
			}}
		p, fm, hm := fs.run()
		set(p, &law)
		scope := join(
			fmt.Sprintf("op %s (one call per site: latency / num_sites), hidden_size %g..%g, hc_mult %g..%g, sinkhorn iterations as timed", name, minOf(hid, rows), maxOf(hid, rows), minOf(hc, rows), maxOf(hc, rows)),
			fmt.Sprintf("num_tokens %g..%g", minOf(tok, rows), maxOf(tok, rows)),
			heldRule("(hidden_size, hc_mult, num_tokens)"),
		)
		law.Provenance = provenance([]string{file}, scope, fs, fm, hm)
		out = append(out, law)
	}
	return out, nil
}
