package catalog

import (
	"strings"
	"testing"
)

func TestDSV4CoefficientsLoad(t *testing.T) {
	for _, name := range CoefficientChips() {
		c, err := LookupCoefficients(name)
		if err != nil {
			t.Fatal(err)
		}
		ch, _ := LookupChip(name)
		for _, kind := range []string{"csa", "hca"} {
			for phase, f := range map[string]func(string, string, string) (*DSV4AttnLaw, error){"decode": c.DSV4DecodeFor, "prefill": c.DSV4PrefillFor} {
				l, err := f(kind, "fp8_block", "fp8")
				if err != nil {
					t.Fatalf("%s %s %s: %v", name, kind, phase, err)
				}
				if l.PeakFLOPS != ch.FP8FLOPS || l.MemBW != ch.MemBW {
					t.Errorf("%s %s %s: not resolved against the chip: peak %g bw %g", name, kind, phase, l.PeakFLOPS, l.MemBW)
				}
				if kind == "hca" && (l.IndexerPerToken != 0 || l.IndexerPerPair != 0) {
					t.Errorf("%s hca %s: indexer terms set", name, phase)
				}
			}
		}
		for _, op := range []string{"pre", "post"} {
			l, err := c.MHCFor(op)
			if err != nil {
				t.Fatal(err)
			}
			if l.MemBW != ch.MemBW {
				t.Errorf("%s mhc %s: bandwidth %g", name, op, l.MemBW)
			}
		}
		// Copies are independent.
		c.DSV4Decode[0].Provenance.Files[0] = "x"
		c.MHC[0].T0 = -1
		again, _ := LookupCoefficients(name)
		if again.DSV4Decode[0].Provenance.Files[0] == "x" || again.MHC[0].T0 == -1 {
			t.Errorf("%s: LookupCoefficients shares DSV4 state between callers", name)
		}
	}
}

func TestDSV4LookupErrors(t *testing.T) {
	c, err := LookupCoefficients("h200")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DSV4DecodeFor("swa", "fp8_block", "fp8"); err == nil || !strings.Contains(err.Error(), "dsv4_attention_decode") || !strings.Contains(err.Error(), "csa/fp8_block/fp8") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := c.DSV4PrefillFor("csa", "nvfp4", "fp8"); err == nil || !strings.Contains(err.Error(), "dsv4_attention_prefill") {
		t.Errorf("unknown dtype: %v", err)
	}
	if _, err := c.MHCFor("mid"); err == nil || !strings.Contains(err.Error(), `"mid"`) || !strings.Contains(err.Error(), "pre, post") {
		t.Errorf("unknown mhc op: %v", err)
	}
}

func TestDSV4ParseStrict(t *testing.T) {
	good := string(h100File(t))
	replace := func(old, new string) string {
		t.Helper()
		if !strings.Contains(good, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	cases := []struct {
		name, data, want string
	}{
		{"unknown kind", replace("  - kind: csa\n", "  - kind: swa\n"), `key "dsv4_attention_decode[0].kind": "swa" is not csa or hca`},
		{"unknown key", replace("    attn_eff:", "    attn_speed: 1\n    attn_eff:"), "attn_speed"},
		{"negative attention efficiency", replace("    attn_eff: ", "    attn_eff: -"), `attn_eff": -`},
		{"hca with an indexer", replace("  - kind: hca\n", "  - kind: hca\n    indexer_per_token_s: 1e-10\n"), "an hca law has no indexer"},
		{"hca with an indexer pair cost", replace("  - kind: hca\n", "  - kind: hca\n    indexer_per_pair_s: 1e-10\n"), `key "dsv4_attention_decode[1].indexer_per_pair_s": an hca law has no indexer`},
		{"duplicate law", replace("  - kind: hca\n", "  - kind: csa\n"), `"csa/fp8_block/fp8" appears twice`},
		{"bad mhc op", replace("  - op: pre\n", "  - op: mid\n"), `key "mhc[0].op": "mid" is not pre or post`},
		{"mhc without provenance files", replace("        - data/ops/h100_sxm/mhc/vllm/0.24.0/mhc_module_perf.parquet\n", ""), `mhc[0].provenance.files": missing`},
	}
	for _, c := range cases {
		_, err := ParseCoefficients("h100.yaml", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// A file with faults in several sections reports the same one every
// time, the first in the file's order, never one map iteration picked.
func TestCoefficientErrorsDeterministic(t *testing.T) {
	good := string(h100File(t))
	spoil := func(secs []string, first, bad string) string {
		t.Helper()
		out := good
		for _, sec := range secs {
			old := sec + ":\n  - " + first
			if !strings.Contains(out, old) {
				t.Fatalf("fixture lacks %q", old)
			}
			out = strings.Replace(out, old, sec+":\n  - "+bad, 1)
		}
		return out
	}
	for _, c := range []struct{ data, want string }{
		{spoil([]string{"mla_decode", "mla_prefill", "dsa_decode", "dsa_prefill"}, "gemm_dtype: ", `gemm_dtype: " " # `), `key "mla_decode[0].gemm_dtype": missing`},
		{spoil([]string{"dsv4_attention_decode", "dsv4_attention_prefill"}, "kind: csa\n", "kind: swa\n"), `key "dsv4_attention_decode[0].kind"`},
	} {
		for try := range 40 {
			if _, err := ParseCoefficients("h100.yaml", []byte(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("try %d: err = %v, want it to contain %q", try, err, c.want)
			}
		}
	}
}
