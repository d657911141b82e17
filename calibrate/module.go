package calibrate

import (
	"fmt"
	"sort"

	"blis/catalog"
)

// moduleTable is one whole-attention-module table (aiconfigurator's MLA
// and DSA module collectors share the columns), read once: the rows a law
// may use are those timed at tp_size 1 with bf16 attention compute.
type moduleTable struct {
	file string
	// t is the table itself, for the columns one family alone reads
	// (DeepSeek-V4's compress_ratio).
	t                                *Table
	model, mlaDtype, kv, gemm, kern  []string
	heads, batch, isl, step, tp, sec []float64
	// models are the rows' catalog models by id, looked up once.
	models map[string]*catalog.Model
}

// readModuleTable reads rel, or returns nil when the chip folder lacks it.
func (cf *chipFit) readModuleTable(rel string) (*moduleTable, error) {
	t, file, err := cf.table(rel)
	if err != nil || t == nil {
		return nil, err
	}
	c := &cols{t: t}
	mt := &moduleTable{file: file, t: t, models: map[string]*catalog.Model{},
		model: c.str("model"), mlaDtype: c.str("mla_dtype"), kv: c.str("kv_cache_dtype"), gemm: c.str("gemm_type"), kern: c.str("kernel_source"),
		heads: c.num("num_heads"), batch: c.num("batch_size"), isl: c.num("isl"), step: c.num("step"), tp: c.num("tp_size")}
	lat := c.num("latency")
	if c.err != nil {
		return nil, c.err
	}
	mt.sec = seconds(lat)
	return mt, nil
}

// eachModulePhase runs fit on the generation and the context table of an
// attention module (prefix + "_<phase>_module_perf.parquet"), skipping a
// table the chip folder lacks.
func (cf *chipFit) eachModulePhase(prefix string, fit func(phase string, mt *moduleTable) error) error {
	for _, phase := range []string{"generation", "context"} {
		mt, err := cf.readModuleTable(prefix + "_" + phase + "_module_perf.parquet")
		if err != nil {
			return err
		}
		if mt != nil {
			if err := fit(phase, mt); err != nil {
				return err
			}
		}
	}
	return nil
}

// usable reports whether row i can be fitted: a positive time at tp_size 1.
func (mt *moduleTable) usable(i int) bool { return mt.sec[i] > 0 && mt.tp[i] == 1 }

// lookup returns row i's catalog model (checked by ok, which says what the
// model lacks) and checks its gemm_type is one the laws know.
func (mt *moduleTable) lookup(i int, ok func(*catalog.Model) bool, lacks string) (*catalog.Model, error) {
	m, seen := mt.models[mt.model[i]]
	if !seen {
		var err error
		if m, err = catalog.LookupModel(mt.model[i]); err != nil {
			return nil, fmt.Errorf("%s: row %d: model %q: %v", mt.file, i, mt.model[i], err)
		}
		if !ok(m) {
			return nil, fmt.Errorf("%s: row %d: model %q has no %s", mt.file, i, mt.model[i], lacks)
		}
		mt.models[mt.model[i]] = m
	}
	if _, known := mlaGEMM[mt.gemm[i]]; !known {
		return nil, fmt.Errorf("%s: row %d: unknown gemm_type %q", mt.file, i, mt.gemm[i])
	}
	return m, nil
}

// modelIDs are the models the fitted rows came from, sorted, for scopes.
func (mt *moduleTable) modelIDs() []string {
	ids := make([]string, 0, len(mt.models))
	for id := range mt.models {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// moduleGroup is one law's rows: a GEMM dtype, a KV-cache dtype and, where
// vLLM runs different kernels by head count, the kernel regime.
type moduleGroup struct{ gemm, kv, regime string }

// sortedGroups orders groups by GEMM dtype, KV dtype, then their smallest
// head count, so that laws are written in a stable order.
func (mt *moduleTable) sortedGroups(groups map[moduleGroup][]int) []moduleGroup {
	out := make([]moduleGroup, 0, len(groups))
	for g := range groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.gemm != b.gemm {
			return a.gemm < b.gemm
		}
		if a.kv != b.kv {
			return a.kv < b.kv
		}
		return minOf(mt.heads, groups[a]) < minOf(mt.heads, groups[b])
	})
	return out
}

// baseLaw is a module law for group g with everything but its fitted
// parameters; ok is false when the chip has no peak for g's GEMM dtype.
func (cf *chipFit) baseLaw(mt *moduleTable, g moduleGroup) (law catalog.MLALaw, ok bool, err error) {
	gm := mlaGEMM[g.gemm]
	if peakOf(cf.chip, gm.peak) <= 0 {
		return law, false, nil
	}
	kb, err := kvBytes(g.kv)
	if err != nil {
		return law, false, fmt.Errorf("%s: %v", mt.file, err)
	}
	return catalog.MLALaw{GEMMDtype: g.gemm, KVDtype: g.kv, PeakKey: gm.peak, PeakFLOPS: peakOf(cf.chip, gm.peak),
		MemBW: cf.chip.MemBW, WeightBytes: gm.weightBytes, KVBytes: kb}, true, nil
}
