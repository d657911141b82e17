package calibrate

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"testing"

	"blis/catalog"
	"blis/kernel"
)

// Decode (1..64 rows) of the two MoE layouts whose served TPOT BLIS
// misses (docs/accuracy.md, "Regime: small-batch MoE decode"): the tables
// time both at their exact shape, and the embedded law times its grid
// reproduces those rows (within 15 %, 30 % at one token), so the decode
// error of those deployments is not an extrapolation of the MoE law. A refit that moves the small-m side of
// the law (or the grid's smoothing) away from the measured rows fails here.
func TestMoEDecodeRegimeLayoutsMatchTheTable(t *testing.T) {
	cases := []struct {
		chip, dir, dtype                     string
		hidden, inter, topk, experts, tp, ep float64
	}{
		// MiniMax-M2.5 FP8 (128×128 blocks) at TP 4 without expert parallel
		{"b200", "b200_sxm", "fp8_block", 3072, 1536, 8, 256, 4, 1},
		{"h100", "h100_sxm", "fp8_block", 3072, 1536, 8, 256, 4, 1},
		// Kimi-K2.5 INT4 (Marlin W4A16) at TP 8
		{"b200", "b200_sxm", "int4_wo", 7168, 2048, 8, 384, 8, 1},
		{"h100", "h100_sxm", "int4_wo", 7168, 2048, 8, 384, 8, 1},
		{"h200", "h200_sxm", "int4_wo", 7168, 2048, 8, 384, 8, 1},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s_%s_tp%g", c.chip, c.dtype, c.tp), func(t *testing.T) {
			co, err := catalog.LookupCoefficients(c.chip)
			if err != nil {
				t.Fatal(err)
			}
			law, err := co.MoEFor(c.dtype)
			if err != nil {
				t.Fatal(err)
			}
			g := co.MoEGridFor(c.dtype)
			if g == nil {
				t.Fatalf("no %s grid", c.dtype)
			}
			res := g.Row(c.hidden, c.inter, c.topk, c.experts, c.tp, c.ep)
			if res == nil {
				t.Fatalf("%s grid has no row for the layout", c.dtype)
			}
			tb, err := ReadTable(filepath.Join(dataDir, c.dir, "moe/vllm/0.24.0/moe_perf.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			cl := &cols{t: tb}
			dt, dist := cl.str("moe_dtype"), cl.str("distribution")
			T, Hd, In, K, E, TP, EP, lat := cl.num("num_tokens"), cl.num("hidden_size"), cl.num("inter_size"), cl.num("topk"),
				cl.num("num_experts"), cl.num("moe_tp_size"), cl.num("moe_ep_size"), cl.num("latency")
			if cl.err != nil {
				t.Fatal(cl.err)
			}
			n := 0
			for i := range T {
				if dt[i] != c.dtype || dist[i] != moeDistribution || T[i] > 64 || Hd[i] != c.hidden || In[i] != c.inter ||
					K[i] != c.topk || E[i] != c.experts || TP[i] != c.tp || EP[i] != c.ep {
					continue
				}
				j := sort.SearchFloat64s(g.Tokens, T[i])
				p := kernel.MoETime(law, kernel.MoEShape{Tokens: T[i], Hidden: c.hidden, Inter: c.inter, TopK: c.topk, Experts: c.experts, TP: c.tp, EP: c.ep}) * res[j] * 1e3
				e := p/lat[i] - 1
				t.Logf("%g tokens: law × grid %.4f ms, measured %.4f ms (%+.1f %%)", T[i], p, lat[i], 100*e)
				// One token sits above the other sizes (+16 to +25 % on
				// Hopper): the grid's running median of 5 along tokens
				// lifts the steepest end of the residual.
				tol := 0.15
				if T[i] == 1 {
					tol = 0.30
				}
				if math.Abs(e) > tol {
					t.Errorf("%g tokens: law × grid %.4f ms, measured %.4f ms (%+.0f %%)", T[i], p, lat[i], 100*e)
				}
				n++
			}
			if n < 8 {
				t.Fatalf("%d decode rows at the layout; want ≥ 8", n)
			}
		})
	}
}
