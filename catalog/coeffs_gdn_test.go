package catalog

import (
	"strings"
	"testing"
)

// The GDN laws decode strictly: an unknown kernel, a kernel in the wrong
// phase, a duplicate or a negative number is an error naming the key.
func TestGDNLawsStrict(t *testing.T) {
	good := string(h100File(t))
	replace := func(old, new string) string {
		t.Helper()
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	for _, c := range []struct{ name, data, want string }{
		{"unknown kernel", replace("  - kernel: causal_conv1d_fn\n", "  - kernel: mamba_scan\n"), `key "gdn[0].kernel": "mamba_scan" is not one of`},
		{"wrong phase", replace("  - kernel: causal_conv1d_fn\n    phase: context", "  - kernel: causal_conv1d_fn\n    phase: generation"), `key "gdn[0].phase": "generation" for causal_conv1d_fn`},
		{"duplicate", replace("  - kernel: causal_conv1d_update\n    phase: generation", "  - kernel: causal_conv1d_fn\n    phase: context"), `"causal_conv1d_fn" appears twice`},
		{"negative per-chunk", replace("    per_chunk_s: 0\n", "    per_chunk_s: -1\n"), `key "gdn[0].per_chunk_s": -1`},
		{"unknown key", replace("    per_chunk_s: 0\n", "    per_chunk_s: 0\n    warp_eff: 1\n"), "warp_eff"},
	} {
		if _, err := ParseCoefficients("h100.yaml", []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	co, err := LookupCoefficients("h200")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{GDNConvPrefill, GDNConvDecode, GDNRulePrefill, GDNRuleDecode} {
		if l, err := co.GDNFor(k); err != nil || l.MemBW <= 0 || l.PeakFLOPS <= 0 {
			t.Errorf("%s: %+v, %v", k, l, err)
		}
	}
	if _, err := co.GDNFor("kda"); err == nil || !strings.Contains(err.Error(), "no gdn law for kernel \"kda\"") {
		t.Errorf("GDNFor(kda) = %v", err)
	}
}

// Each lookup's GDN laws are its own: a caller's edit, or a borrowing
// chip's resolve (b300 prices with b200's laws at its own bandwidth),
// leaves every other lookup's laws as they were.
func TestGDNLawsNotShared(t *testing.T) {
	b200, err := LookupCoefficients("b200")
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := LookupChip("b200")
	b300, err := LookupCoefficients("b300")
	if err != nil {
		t.Fatal(err)
	}
	ch300, _ := LookupChip("b300")
	if ch.MemBW == ch300.MemBW {
		t.Fatalf("fixture: b200 and b300 share a bandwidth %g", ch.MemBW)
	}
	if len(b200.GDN) == 0 || len(b300.GDN) != len(b200.GDN) {
		t.Fatalf("b200 %d GDN laws, b300 %d", len(b200.GDN), len(b300.GDN))
	}
	for i := range b200.GDN {
		if b200.GDN[i].MemBW != ch.MemBW || b300.GDN[i].MemBW != ch300.MemBW {
			t.Errorf("gdn[%d]: b200 bandwidth %g (want %g), b300 %g (want %g)", i, b200.GDN[i].MemBW, ch.MemBW, b300.GDN[i].MemBW, ch300.MemBW)
		}
	}
	b200.GDN[0].T0 = -1
	b200.GDN[0].Provenance.Files[0] = "x"
	again, _ := LookupCoefficients("b200")
	if again.GDN[0].T0 == -1 || again.GDN[0].Provenance.Files[0] == "x" {
		t.Error("LookupCoefficients shares GDN laws between callers")
	}
}
