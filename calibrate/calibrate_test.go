package calibrate

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"blis/catalog"
	"blis/kernel"
)

const (
	dataDir   = "../data/ops"
	coeffsDir = "../catalog/coeffs"
)

// refit turns on the full refits (every law of every chip: about 15 s on
// two cores). Without it the same code paths run on one chip's cheapest
// families, so `go test ./...` stays fast; CI runs the full check
// (`go test ./calibrate -run Fresh -refit`).
var refit = flag.Bool("refit", false, "refit every law of every chip and compare with catalog/coeffs")

// The embedded coefficient files are exactly what a fresh fit of data/ops
// writes, so a changed law, fitter or table without `blis calibrate ops
// --write` fails here. The full fit runs with -refit; without it only
// H100's GEMM, collective and Gated DeltaNet laws are refitted and compared.
func TestEmbeddedCoefficientsAreFresh(t *testing.T) {
	if !*refit {
		fresh, err := fitChip(dataDir, "h100_sxm", map[string]bool{"gemm": true, "comm": true, "gdn": true})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(coeffsDir, "h100.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		stored, err := catalog.ParseCoefficients("h100.yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		stored.AttnDecode, stored.AttnPrefill, stored.MLADecode, stored.MLAPrefill, stored.MoE = nil, nil, nil, nil, nil
		stored.DSADecode, stored.DSAPrefill = nil, nil
		stored.DSV4Decode, stored.DSV4Prefill, stored.MHC = nil, nil, nil
		a, _ := catalog.MarshalCoefficients(fresh)
		b, _ := catalog.MarshalCoefficients(stored)
		if !bytes.Equal(a, b) {
			t.Fatalf("catalog/coeffs/h100.yaml's GEMM, collective or GDN laws differ from a fresh fit of data/ops; run `blis calibrate ops --write`\n%s", firstDiff(a, b))
		}
		return
	}
	rep, err := Fit(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	files, err := rep.Files()
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := filepath.Glob(filepath.Join(coeffsDir, "*.yaml"))
	grids, _ := filepath.Glob(filepath.Join(coeffsDir, "*-grid.txt"))
	stored = append(stored, grids...)
	if len(stored) != len(files) {
		t.Errorf("catalog/coeffs has %d coefficient files, a fresh fit writes %d (%v)", len(stored), len(files), stored)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(coeffsDir, name))
		if err != nil {
			t.Errorf("%v (run `blis calibrate ops --write`)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("catalog/coeffs/%s differs from a fresh fit of data/ops; run `blis calibrate ops --write`\n%s", name, firstDiff(want, got))
		}
	}
}

func firstDiff(a, b []byte) string {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n  fresh:  " + x + "\n  stored: " + y
		}
	}
	return "(no line differs)"
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}

// Same tables, same bytes.
func TestFitIsDeterministic(t *testing.T) {
	families := map[string]bool{"comm": true, "attention": true}
	if *refit {
		families["mla"] = true // the slowest fitter, with its multi-start search
	}
	var prev []byte
	for i := 0; i < 2; i++ {
		c, err := fitChip(dataDir, "h200_sxm", families)
		if err != nil {
			t.Fatal(err)
		}
		b, err := catalog.MarshalCoefficients(c)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && !bytes.Equal(prev, b) {
			t.Fatal("two fits of the same tables differ")
		}
		prev = b
	}
}

// The fitter recovers a known GEMM law from its own noiseless predictions.
func TestSolveRecoversKnownLaw(t *testing.T) {
	truth := catalog.GEMMLaw{PeakFLOPS: 989e12, MemBW: 3.35e12, WeightBytes: 2, ActBytes: 2,
		EffMax: 0.8, OutHalf: 1e5, BWEff: 0.85, T0: 3e-6}
	var M, N, K, y []float64
	grid := []float64{1, 8, 64, 256, 1024, 4096, 16384}
	for _, m := range grid {
		for _, n := range grid[1:] {
			for _, k := range grid[1:] {
				M, N, K = append(M, m), append(N, n), append(K, k)
				y = append(y, kernel.GEMMTime(&truth, m, n, k))
			}
		}
	}
	rows := make([]int, len(y))
	for i := range rows {
		rows[i] = i
	}
	pr := &problem{rows: rows, y: y, kinds: []paramKind{positive, positive, positive, positive},
		f: func(p []float64, r int) float64 {
			l := truth
			l.EffMax, l.OutHalf, l.BWEff, l.T0 = p[0], p[1], p[2], p[3]
			return kernel.GEMMTime(&l, M[r], N[r], K[r])
		}}
	p := pr.solveL1([]float64{0.5, 1e4, 0.5, 1e-5}, 2)
	want := []float64{0.8, 1e5, 0.85, 3e-6}
	for i := range want {
		if math.Abs(p[i]/want[i]-1) > 1e-3 {
			t.Errorf("parameter %d = %g, want %g", i, p[i], want[i])
		}
	}
	if m := pr.mape(p, rows); m > 0.01 {
		t.Errorf("MAPE %g%% on noiseless data", m)
	}
}

func TestSplitByShapeHoldsOutEveryFifthShape(t *testing.T) {
	// 12 shapes × 3 rows; shapes 4 and 9 (0-based, sorted) are held out.
	var rows []int
	key := func(r int) shapeKey { return shapeKey{float64(11 - r/3)} } // reverse order: sorting matters
	for r := 0; r < 36; r++ {
		rows = append(rows, r)
	}
	fit, held, shapes := splitByShape(rows, key)
	if shapes != 12 || len(held) != 6 || len(fit) != 30 {
		t.Fatalf("shapes %d, held %d, fit %d", shapes, len(held), len(fit))
	}
	for _, r := range held {
		if k := key(r)[0]; k != 4 && k != 9 {
			t.Errorf("row %d (shape %g) held out", r, k)
		}
	}
	// Fewer than five shapes: nothing held out.
	if _, held, _ := splitByShape([]int{0, 1, 2}, func(r int) shapeKey { return shapeKey{float64(r)} }); len(held) != 0 {
		t.Errorf("held out %v of three shapes", held)
	}
}

type row struct {
	Name    string  `parquet:"name"`
	M       int64   `parquet:"m"`
	N       int32   `parquet:"n"`
	Latency float64 `parquet:"latency"`
	Ok      bool    `parquet:"ok"`
	Scale   float32 `parquet:"scale"`
}

func TestReadTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.parquet")
	in := []row{{"a", 1, 2, 0.5, true, 1.5}, {"b", 3, 4, 0.25, false, 2.5}}
	if err := parquet.WriteFile(path, in); err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Rows != 2 {
		t.Fatalf("rows %d", tb.Rows)
	}
	names, err := tb.Str("name")
	if err != nil || names[0] != "a" || names[1] != "b" {
		t.Errorf("name = %v, %v", names, err)
	}
	for col, want := range map[string][]float64{"m": {1, 3}, "n": {2, 4}, "latency": {0.5, 0.25}, "ok": {1, 0}, "scale": {1.5, 2.5}} {
		v, err := tb.Num(col)
		if err != nil || len(v) != 2 || v[0] != want[0] || v[1] != want[1] {
			t.Errorf("%s = %v, %v; want %v", col, v, err, want)
		}
	}
	if _, err := tb.Num("name"); err == nil || !strings.Contains(err.Error(), `column "name" is not numeric`) {
		t.Errorf("Num(name) = %v", err)
	}
	if _, err := tb.Num("k"); err == nil || !strings.Contains(err.Error(), path+`: no column "k"`) {
		t.Errorf("Num(k) = %v", err)
	}
	if _, err := ReadTable(filepath.Join(t.TempDir(), "missing.parquet")); err == nil {
		t.Error("reading a missing file succeeded")
	}
	bad := filepath.Join(t.TempDir(), "bad.parquet")
	os.WriteFile(bad, []byte("not parquet"), 0o644)
	if _, err := ReadTable(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("reading a non-parquet file: %v", err)
	}
}

// Every law's recorded MAPE is within the bounds the docs promise, so a
// refit that degrades a family shows in review.
func TestRecordedErrorsStayBounded(t *testing.T) {
	bound := map[string]float64{"gemm": 16, "attn decode": 17, "attn prefill": 21, "mla decode": 14, "mla prefill": 15, "dsa decode": 10, "dsa prefill": 35, "dsv4 decode": 7, "dsv4 prefill": 18, "mhc": 20, "moe": 36, "comm nccl": 22, "comm vllm_custom": 18, "gdn prefill": 30, "gdn decode": 16}
	var chips []ChipResult
	for _, name := range catalog.CoefficientChips() {
		c, err := catalog.LookupCoefficients(name)
		if err != nil {
			t.Fatal(err)
		}
		chips = append(chips, ChipResult{Coeffs: c})
	}
	rep := &Report{Chips: chips}
	for _, r := range rep.Rows() {
		b, ok := bound[r.Family]
		if !ok {
			t.Errorf("no bound for family %q", r.Family)
			continue
		}
		for i, p := range r.ByChip {
			if p != nil && p.FitMAPE > b {
				t.Errorf("%s %s on %s: fit MAPE %.1f%% > %.0f%%", r.Family, r.Kind, chips[i].Coeffs.Chip, p.FitMAPE, b)
			}
		}
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil || !strings.Contains(buf.String(), "gemm             bfloat16") {
		t.Errorf("error table:\n%s", buf.String())
	}
}

// The law times its residual grid reproduces the measured GEMM table up to
// the grid's running median along m (which drops isolated cells) and its
// 0.2 % steps.
func TestGEMMGridReproducesTheTable(t *testing.T) {
	co, err := catalog.LookupCoefficients("h100")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTable(filepath.Join(dataDir, "h100_sxm/gemm/vllm/0.24.0/gemm_perf.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	c := &cols{t: tb}
	dt, M, N, K, lat := c.str("gemm_dtype"), c.num("m"), c.num("n"), c.num("k"), c.num("latency")
	for _, d := range []string{"bfloat16", "fp8"} {
		law, _ := co.GEMMFor(d)
		g := co.GEMMGridFor(d)
		var lawErr, gridErr float64
		n := 0
		for i := range M {
			if dt[i] != d || !(lat[i] > 0) {
				continue
			}
			p := kernel.GEMMTime(law, M[i], N[i], K[i]) * 1e3
			row := g.Row(N[i], K[i])
			j := sort.SearchFloat64s(g.M, M[i])
			lawErr += math.Abs(p/lat[i] - 1)
			gridErr += math.Abs(p*row[j]/lat[i] - 1)
			n++
		}
		lawErr, gridErr = 100*lawErr/float64(n), 100*gridErr/float64(n)
		t.Logf("h100 %s: law MAPE %.1f %%, law × grid %.2f %% over %d rows", d, lawErr, gridErr, n)
		if gridErr > 4 || gridErr > lawErr/2 {
			t.Errorf("h100 %s: law × grid MAPE %.2f %% (law alone %.1f %%)", d, gridErr, lawErr)
		}
	}
}

// The MoE law times its residual grid reproduces the measured MoE rows it
// was fitted on (power-law routing, vLLM 0.24.0) up to the grid's running
// median along tokens.
func TestMoEGridReproducesTheTable(t *testing.T) {
	co, err := catalog.LookupCoefficients("h100")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ReadTable(filepath.Join(dataDir, "h100_sxm/moe/vllm/0.24.0/moe_perf.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	c := &cols{t: tb}
	ver, dt, dist, kern := c.str("version"), c.str("moe_dtype"), c.str("distribution"), c.str("kernel_source")
	T, Hd, In, K, E, TP, EP, lat := c.num("num_tokens"), c.num("hidden_size"), c.num("inter_size"), c.num("topk"),
		c.num("num_experts"), c.num("moe_tp_size"), c.num("moe_ep_size"), c.num("latency")
	if c.err != nil {
		t.Fatal(c.err)
	}
	for _, d := range []string{"bfloat16", "fp8_block", "w4a16_mxfp4"} {
		law, err := co.MoEFor(d)
		if err != nil {
			t.Fatal(err)
		}
		g := co.MoEGridFor(d)
		var lawErr, gridErr float64
		n := 0
		for i := range T {
			if dt[i] != d || dist[i] != moeDistribution || ver[i] != "0.24.0" || !(lat[i] > 0) || strings.Contains(kern[i], "situ_as_silu") {
				continue
			}
			p := kernel.MoETime(law, kernel.MoEShape{Tokens: T[i], Hidden: Hd[i], Inter: In[i], TopK: K[i], Experts: E[i], TP: TP[i], EP: EP[i]}) * 1e3
			row := g.Row(Hd[i], In[i], K[i], E[i], TP[i], EP[i])
			if row == nil {
				t.Fatalf("%s: layout %v %v %v %v %v %v has no grid row", d, Hd[i], In[i], K[i], E[i], TP[i], EP[i])
			}
			j := sort.SearchFloat64s(g.Tokens, T[i])
			lawErr += math.Abs(p/lat[i] - 1)
			gridErr += math.Abs(p*row[j]/lat[i] - 1)
			n++
		}
		if n == 0 {
			t.Fatalf("h100 %s: no rows", d)
		}
		lawErr, gridErr = 100*lawErr/float64(n), 100*gridErr/float64(n)
		t.Logf("h100 MoE %s: law MAPE %.1f %%, law × grid %.2f %% over %d rows", d, lawErr, gridErr, n)
		if gridErr > 4 || gridErr > lawErr/2 {
			t.Errorf("h100 MoE %s: law × grid MAPE %.2f %% (law alone %.1f %%)", d, gridErr, lawErr)
		}
	}
}
