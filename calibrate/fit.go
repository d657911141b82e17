// Package calibrate fits the operator laws of kernel/laws.go to the measured
// per-operator GPU timings in data/ops (aiconfigurator's collections under
// vLLM 0.24.0) and writes the per-chip coefficient files of
// catalog/coeffs. It is run by `blis calibrate ops`; the simulator itself
// only reads the files.
//
// Method, for every law: rows are split by whole shapes into a fitted set
// and a held-out set (every 5th distinct shape in sorted order is held
// out; the rule per family is in each law's provenance scope); the law's
// parameters are fitted on the fitted set by Levenberg–Marquardt on
// log(predicted/measured) — relative error, so a 3 µs kernel counts like a
// 30 ms one — followed by a few rounds of iteratively reweighted least
// squares towards the least absolute log error, since MAPE is what the
// laws are judged by. Both MAPEs are reported. The fit is deterministic:
// the same tables give byte-identical coefficient files.
package calibrate

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"blis/catalog"
)

// Origin of the measured tables (data/ops/PROVENANCE.md).
const Origin = "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce aic-core/src/aiconfigurator_core/systems/data (Apache-2.0): per-operator latencies measured under vLLM 0.24.0 (NCCL 2.29.2)"

// Generator names what writes the coefficient files.
const Generator = "blis calibrate ops (calibrate package)"

// Method is the fit method every law's provenance records.
const Method = "Levenberg-Marquardt (step-bounded, from fixed starting points; best fitted MAPE kept) on log(predicted/measured), then 3 rounds of IRLS towards least absolute log error; chip peaks from catalog/chips; parameters rounded to 6 significant digits"

// holdEvery: every holdEvery-th distinct shape (sorted) is held out.
const holdEvery = 5

// ChipResult is one chip's fitted coefficients.
type ChipResult struct {
	Dir    string // data/ops/<dir>
	Coeffs *catalog.Coefficients
}

// Report is the outcome of fitting every chip found in the data folder.
type Report struct {
	Chips []ChipResult // sorted by chip name
}

// Fit fits every law for every chip folder under dataDir (data/ops; the
// provenance names files as data/ops/<chip folder>/...).
// Chips are fitted concurrently; the result does not depend on it.
func Fit(dataDir string) (*Report, error) { return FitProgress(dataDir, nil) }

// FitProgress is Fit calling progress, when set, after each chip's fit with
// the chips done and the chips in all, one call at a time.
func FitProgress(dataDir string, progress func(done, total int)) (*Report, error) {
	ents, err := os.ReadDir(dataDir)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s: no chip folders", dataDir)
	}
	res := make([]ChipResult, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := fitChip(dataDir, d, nil)
			res[i], errs[i] = ChipResult{Dir: d, Coeffs: c}, err
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(dirs))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Coeffs.Chip < res[j].Coeffs.Chip })
	return &Report{Chips: res}, nil
}

// chipFit carries one chip's context through the family fitters.
type chipFit struct {
	chip    *catalog.Chip
	dataDir string // the folder given to Fit
	dir     string // chip folder name, e.g. h100_sxm
}

// path returns the file of one table and its provenance name.
func (cf *chipFit) path(rel string) (string, string) {
	return filepath.Join(cf.dataDir, cf.dir, rel), "data/ops/" + cf.dir + "/" + rel
}

// table reads a table if present; (nil, nil) when the file does not exist.
func (cf *chipFit) table(rel string) (*Table, string, error) {
	p, name := cf.path(rel)
	if _, err := os.Stat(p); err != nil {
		if os.IsNotExist(err) {
			return nil, name, nil
		}
		return nil, name, err
	}
	t, err := ReadTable(p)
	return t, name, err
}

// fitChip fits one chip folder; only, when non-nil, limits the families
// fitted ("gemm", "attention", "mla", "dsv4", "moe", "comm").
func fitChip(dataDir, dir string, only map[string]bool) (*catalog.Coefficients, error) {
	ch, err := catalog.LookupChip(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dataDir, dir), err)
	}
	cf := &chipFit{chip: ch, dataDir: dataDir, dir: dir}
	c := &catalog.Coefficients{
		Chip:      ch.Name,
		Data:      "data/ops/" + dir,
		Origin:    Origin,
		Generator: Generator,
	}
	want := func(f string) bool { return only == nil || only[f] }
	if want("gemm") {
		if c.GEMM, c.GEMMGrids, err = cf.fitGEMM(); err != nil {
			return nil, err
		}
	}
	if want("attention") {
		if c.AttnDecode, c.AttnPrefill, err = cf.fitAttention(); err != nil {
			return nil, err
		}
	}
	if want("mla") {
		if c.MLADecode, c.MLAPrefill, err = cf.fitMLA(); err != nil {
			return nil, err
		}
		if c.DSADecode, c.DSAPrefill, err = cf.fitDSA(); err != nil {
			return nil, err
		}
	}
	if want("dsv4") {
		if c.DSV4Decode, c.DSV4Prefill, err = cf.fitDSV4(); err != nil {
			return nil, err
		}
		if c.MHC, err = cf.fitMHC(); err != nil {
			return nil, err
		}
	}
	if want("moe") {
		if c.MoE, c.MoEGrids, err = cf.fitMoE(); err != nil {
			return nil, err
		}
	}
	if want("comm") {
		if c.Comm, err = cf.fitComm(); err != nil {
			return nil, err
		}
	}
	if want("gdn") {
		if c.GDN, err = cf.fitGDN(); err != nil {
			return nil, err
		}
	}
	// The file must read back as written.
	data, err := catalog.MarshalCoefficients(c)
	if err != nil {
		return nil, err
	}
	back, err := catalog.ParseCoefficients(ch.Name+".yaml", data)
	if err != nil {
		return nil, fmt.Errorf("fitted coefficients do not validate: %v", err)
	}
	if err := back.Resolve(ch); err != nil {
		return nil, err
	}
	// The residual grids (their own file) were computed against the
	// unrounded laws; at 0.2 % per step the 6-digit rounding does not show.
	back.GEMMGrids, back.MoEGrids = c.GEMMGrids, c.MoEGrids
	return back, nil
}

// fitSet is one law's rows: indices into y split into fitted and held out.
type fitSet struct {
	y          []float64 // measured seconds, by table row
	fit, held  []int
	kinds      []paramKind
	p0         []float64
	predict    func(p []float64, row int) float64
	l1Rounds   int
	heldShapes int
	// starts are further starting points besides p0 (each a factor per
	// parameter applied to p0); the fit with the lowest fitted-row MAPE
	// wins, ties to the earliest. The laws are not convex in their ramps.
	starts [][]float64
}

// run fits the set and returns rounded parameters and both MAPEs (percent;
// held-out NaN when nothing was held out), evaluated with the rounded
// parameters, which are what the file keeps.
func (s *fitSet) run() (p []float64, fitMAPE, heldMAPE float64) {
	pr := &problem{rows: s.fit, y: s.y, f: s.predict, kinds: s.kinds}
	rounds := s.l1Rounds
	if rounds == 0 {
		rounds = 3
	}
	best, bestMAPE := []float64(nil), math.Inf(1)
	for si := -1; si < len(s.starts); si++ {
		p0 := append([]float64(nil), s.p0...)
		if si >= 0 {
			for i := range p0 {
				p0[i] *= s.starts[si][i]
			}
			for i, k := range s.kinds {
				if k == fraction {
					p0[i] = math.Min(p0[i], 0.99)
				}
			}
		}
		p := pr.solveL1(p0, rounds)
		for i := range p {
			p[i] = catalog.RoundSig(p[i], 6)
		}
		if m := pr.mape(p, s.fit); m < bestMAPE {
			best, bestMAPE = p, m
		}
	}
	return best, bestMAPE, pr.mape(best, s.held)
}

// selectionMAPE is the error a choice between candidate fits (a padding)
// is made on: the held-out MAPE where some shapes are held out, since it
// decides how the law extrapolates, which the fitted rows alone do not
// test; else the fit MAPE.
func selectionMAPE(p catalog.Provenance) float64 {
	if p.HeldOutMAPE != nil {
		return *p.HeldOutMAPE
	}
	return p.FitMAPE
}

// provenance builds a law's provenance from a fitted set.
func provenance(files []string, scope string, s *fitSet, fitMAPE, heldMAPE float64) catalog.Provenance {
	p := catalog.Provenance{
		Files:       files,
		Method:      Method,
		Scope:       scope,
		Rows:        len(s.fit),
		HeldOutRows: len(s.held),
		FitMAPE:     catalog.RoundSig(fitMAPE, 4),
	}
	if len(s.held) > 0 && !math.IsNaN(heldMAPE) {
		v := catalog.RoundSig(heldMAPE, 4)
		p.HeldOutMAPE = &v
	} else {
		p.HeldOutRows = 0
	}
	return p
}

// shapeKey orders distinct shapes for the held-out rule.
type shapeKey [4]float64

func (a shapeKey) less(b shapeKey) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// splitByShape puts rows into fitted and held-out sets: the distinct shapes
// (key), sorted, have every holdEvery-th one held out. Sets with fewer
// than holdEvery shapes hold nothing out.
func splitByShape(rows []int, key func(int) shapeKey) (fit, held []int, shapes int) {
	set := map[shapeKey]bool{}
	for _, r := range rows {
		set[key(r)] = true
	}
	keys := make([]shapeKey, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].less(keys[j]) })
	hold := map[shapeKey]bool{}
	for i, k := range keys {
		if i%holdEvery == holdEvery-1 {
			hold[k] = true
		}
	}
	for _, r := range rows {
		if hold[key(r)] {
			held = append(held, r)
		} else {
			fit = append(fit, r)
		}
	}
	return fit, held, len(keys)
}

// parallel runs f(0..n-1) concurrently and returns the first error by
// index. Each f writes only its own result slot, so the outcome does not
// depend on scheduling.
func parallel(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// seconds converts the tables' milliseconds.
func seconds(ms []float64) []float64 {
	y := make([]float64, len(ms))
	for i, v := range ms {
		y[i] = v * 1e-3
	}
	return y
}

// dominant returns the most frequent value among rows (ties: the smaller
// string) and how many rows have another value.
func dominant(vals []string, rows []int) (string, int) {
	cnt := map[string]int{}
	for _, r := range rows {
		cnt[vals[r]]++
	}
	best := ""
	for k, n := range cnt {
		if best == "" || n > cnt[best] || (n == cnt[best] && k < best) {
			best = k
		}
	}
	return best, len(rows) - cnt[best]
}

// cols reads named columns or fails with the table's error.
type cols struct {
	t   *Table
	err error
}

func (c *cols) num(name string) []float64 {
	if c.err != nil {
		return nil
	}
	v, err := c.t.Num(name)
	if err != nil {
		c.err = err
	}
	return v
}

func (c *cols) str(name string) []string {
	if c.err != nil {
		return nil
	}
	v, err := c.t.Str(name)
	if err != nil {
		c.err = err
	}
	return v
}

func join(parts ...string) string { return strings.Join(parts, "; ") }
