package calibrate

import (
	"fmt"
	"io"

	"strings"

	"blis/catalog"
)

// ErrorRow is one line of the error table: one law family and kind, with
// its provenance per chip (nil where the chip has no such law).
type ErrorRow struct {
	Family string // gemm, attention decode, ...
	Kind   string // dtype / kv dtype / op
	ByChip []*catalog.Provenance
}

// Rows lists every fitted law as error-table rows, in file order.
func (r *Report) Rows() []ErrorRow {
	var out []ErrorRow
	index := map[string]int{}
	add := func(ci int, family, kind string, p *catalog.Provenance) {
		key := family + "\x00" + kind
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, ErrorRow{Family: family, Kind: kind, ByChip: make([]*catalog.Provenance, len(r.Chips))})
		}
		out[i].ByChip[ci] = p
	}
	for ci, ch := range r.Chips {
		c := ch.Coeffs
		for i := range c.GEMM {
			add(ci, "gemm", c.GEMM[i].Dtype, &c.GEMM[i].Provenance)
		}
		for i := range c.AttnDecode {
			add(ci, "attn decode", "kv "+c.AttnDecode[i].KVDtype, &c.AttnDecode[i].Provenance)
		}
		for i := range c.AttnPrefill {
			add(ci, "attn prefill", "kv "+c.AttnPrefill[i].KVDtype, &c.AttnPrefill[i].Provenance)
		}
		for i := range c.MLADecode {
			add(ci, "mla decode", c.MLADecode[i].GEMMDtype+" kv "+c.MLADecode[i].KVDtype, &c.MLADecode[i].Provenance)
		}
		for i := range c.MLAPrefill {
			add(ci, "mla prefill", c.MLAPrefill[i].GEMMDtype+" kv "+c.MLAPrefill[i].KVDtype, &c.MLAPrefill[i].Provenance)
		}
		for i := range c.DSADecode {
			add(ci, "dsa decode", c.DSADecode[i].GEMMDtype+" kv "+c.DSADecode[i].KVDtype, &c.DSADecode[i].Provenance)
		}
		for i := range c.DSAPrefill {
			l := &c.DSAPrefill[i]
			kind := l.GEMMDtype + " kv " + l.KVDtype
			if l.MaxHeads > 0 {
				kind += fmt.Sprintf(" h%g-%g", l.MinHeads, l.MaxHeads)
			}
			add(ci, "dsa prefill", kind, &l.Provenance)
		}
		for i := range c.DSV4Decode {
			l := &c.DSV4Decode[i]
			add(ci, "dsv4 decode", l.Kind+" "+l.GEMMDtype+" kv "+l.KVDtype, &l.Provenance)
		}
		for i := range c.DSV4Prefill {
			l := &c.DSV4Prefill[i]
			add(ci, "dsv4 prefill", l.Kind+" "+l.GEMMDtype+" kv "+l.KVDtype, &l.Provenance)
		}
		for i := range c.MHC {
			add(ci, "mhc", c.MHC[i].Op, &c.MHC[i].Provenance)
		}
		for i := range c.MoE {
			add(ci, "moe", c.MoE[i].Dtype, &c.MoE[i].Provenance)
		}
		for i := range c.Comm {
			add(ci, "comm "+c.Comm[i].Impl, c.Comm[i].Op, &c.Comm[i].Provenance)
		}
		for i := range c.GDN {
			add(ci, gdnRowNames[c.GDN[i].Kernel][0], gdnRowNames[c.GDN[i].Kernel][1], &c.GDN[i].Provenance)
		}
	}
	return out
}

// WriteTable prints the per-family error table: for each chip, fit MAPE,
// held-out MAPE and rows fitted (+ held out).
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	rows := r.Rows()
	kw := 22 // the kind column: as wide as the longest kind
	for _, row := range rows {
		kw = max(kw, len(row.Kind))
	}
	head := fmt.Sprintf("%-16s %-*s", "family", kw, "kind")
	rule := strings.Repeat("-", 17+kw)
	for _, ch := range r.Chips {
		head += fmt.Sprintf(" | %-27s", ch.Coeffs.Chip+": fit% held% rows")
		rule += "-+-" + strings.Repeat("-", 27)
	}
	b.WriteString(head + "\n" + rule + "\n")
	for _, row := range rows {
		line := fmt.Sprintf("%-16s %-*s", row.Family, kw, row.Kind)
		for _, p := range row.ByChip {
			if p == nil {
				line += fmt.Sprintf(" | %-27s", "—")
				continue
			}
			held := "  n/a"
			if p.HeldOutMAPE != nil {
				held = fmt.Sprintf("%5.1f", *p.HeldOutMAPE)
			}
			rows := fmt.Sprintf("%d+%d", p.Rows, p.HeldOutRows)
			line += fmt.Sprintf(" | %5.1f %s %-15s", p.FitMAPE, held, rows)
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	b.WriteString("MAPE in percent: fit = on the rows fitted, held = on whole shapes held out (rule in each law's provenance scope); rows = fitted+held out.\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Files returns each chip's coefficient file, by file name (<chip>.yaml).
func (r *Report) Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, ch := range r.Chips {
		data, err := catalog.MarshalCoefficients(ch.Coeffs)
		if err != nil {
			return nil, err
		}
		out[ch.Coeffs.Chip+".yaml"] = data
		if len(ch.Coeffs.GEMMGrids) > 0 {
			src := fmt.Sprintf("Written by %s from data/ops/%s/gemm/vllm/0.24.0/gemm_perf.parquet against the GEMM laws of %s.yaml; do not edit.", Generator, ch.Dir, ch.Coeffs.Chip)
			out[catalog.GEMMGridFile(ch.Coeffs.Chip)] = catalog.MarshalGEMMGrids(ch.Coeffs.Chip, src, ch.Coeffs.GEMMGrids)
		}
		if len(ch.Coeffs.MoEGrids) > 0 {
			src := fmt.Sprintf("Written by %s from data/ops/%s/moe/vllm/0.24.0/moe_perf.parquet against the MoE laws of %s.yaml; do not edit.", Generator, ch.Dir, ch.Coeffs.Chip)
			out[catalog.MoEGridFile(ch.Coeffs.Chip)] = catalog.MarshalMoEGrids(ch.Coeffs.Chip, src, ch.Coeffs.MoEGrids)
		}
	}
	return out, nil
}

// gdnRowNames are the error table's family and kind for each GDN kernel
// source (the sources' names are too long for the kind column).
var gdnRowNames = map[string][2]string{
	catalog.GDNConvPrefill: {"gdn prefill", "causal_conv1d_fn"},
	catalog.GDNRulePrefill: {"gdn prefill", "chunk_delta_rule"},
	catalog.GDNConvDecode:  {"gdn decode", "causal_conv1d_update"},
	catalog.GDNRuleDecode:  {"gdn decode", "recurrent_delta_rule"},
}
