package calibrate

import (
	"reflect"
	"testing"

	"blis/catalog"
)

// The DeepSeek-V4 laws refitted from H200's tables equal the embedded
// ones (the full comparison of every chip runs with -refit), and their
// held-out errors stay within what docs/calibration.md reports.
func TestDSV4LawsFreshAndBounded(t *testing.T) {
	fresh, err := fitChip(dataDir, "h200_sxm", map[string]bool{"dsv4": true})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := catalog.LookupCoefficients("h200")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh.DSV4Decode, emb.DSV4Decode) || !reflect.DeepEqual(fresh.DSV4Prefill, emb.DSV4Prefill) || !reflect.DeepEqual(fresh.MHC, emb.MHC) {
		t.Fatal("catalog/coeffs/h200.yaml's DeepSeek-V4 laws are stale: run `go run ./cmd/blis calibrate ops --write`")
	}
	check := func(what string, p catalog.Provenance, bound float64) {
		if p.HeldOutMAPE == nil || p.HeldOutRows == 0 {
			t.Errorf("%s: nothing held out", what)
			return
		}
		if *p.HeldOutMAPE > bound || p.FitMAPE > bound {
			t.Errorf("%s: MAPE fit %g%%, held out %g%%, want ≤ %g%%", what, p.FitMAPE, *p.HeldOutMAPE, bound)
		}
	}
	if len(fresh.DSV4Decode) != 2 || len(fresh.DSV4Prefill) != 2 || len(fresh.MHC) != 2 {
		t.Fatalf("want csa and hca laws per phase and pre and post: %d %d %d", len(fresh.DSV4Decode), len(fresh.DSV4Prefill), len(fresh.MHC))
	}
	for _, l := range fresh.DSV4Decode {
		check(l.Kind+" decode", l.Provenance, 8)
	}
	for _, l := range fresh.DSV4Prefill {
		check(l.Kind+" prefill", l.Provenance, 20)
	}
	for _, l := range fresh.MHC {
		check("mhc "+l.Op, l.Provenance, 20)
	}
}
