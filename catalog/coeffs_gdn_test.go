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
