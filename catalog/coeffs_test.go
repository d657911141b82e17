package catalog

import (
	"bytes"
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

func embeddedCoeffFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := fs.Glob(coeffFS, "coeffs/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded coefficient files (%v)", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := fs.ReadFile(coeffFS, f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = b
	}
	return out
}

func TestEmbeddedCoefficientsLoad(t *testing.T) {
	chips := CoefficientChips()
	if strings.Join(chips, ",") != "b200,h100,h200" {
		t.Errorf("chips with coefficients: %v, want b200, h100, h200 (the chips data/ops measures)", chips)
	}
	for _, name := range []string{"h100", "H100_SXM", "h200", "b200"} {
		c, err := LookupCoefficients(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ch, _ := LookupChip(name)
		if c.Chip != ch.Name {
			t.Errorf("%s: chip %q", name, c.Chip)
		}
		if len(c.GEMM) == 0 || len(c.AttnDecode) == 0 || len(c.AttnPrefill) == 0 || len(c.MoE) == 0 || len(c.Comm) == 0 || len(c.MLADecode) == 0 {
			t.Errorf("%s: a law family is missing", name)
		}
		g, err := c.GEMMFor("bfloat16")
		if err != nil {
			t.Fatal(err)
		}
		if g.PeakFLOPS != ch.BF16FLOPS || g.MemBW != ch.MemBW {
			t.Errorf("%s: bf16 GEMM law not resolved against the chip: peak %g bw %g", name, g.PeakFLOPS, g.MemBW)
		}
		if f8, err := c.GEMMFor("fp8"); err != nil || f8.PeakFLOPS != ch.FP8FLOPS {
			t.Errorf("%s: fp8 GEMM law peak: %v", name, err)
		}
		for i := range c.AttnPrefill {
			if c.AttnPrefill[i].PeakFLOPS != ch.BF16FLOPS {
				t.Errorf("%s: prefill attention peak %g", name, c.AttnPrefill[i].PeakFLOPS)
			}
		}
		if _, err := c.CommFor("all_reduce", "nccl"); err != nil {
			t.Error(err)
		}
		// Copies are independent.
		c.GEMM[0].EffMax = -1
		c.GEMM[0].Provenance.Files[0] = "x"
		again, _ := LookupCoefficients(name)
		if again.GEMM[0].EffMax == -1 || again.GEMM[0].Provenance.Files[0] == "x" {
			t.Errorf("%s: LookupCoefficients shares state between callers", name)
		}
	}
}

func TestLookupCoefficientsErrors(t *testing.T) {
	for _, c := range []struct {
		chip, want string
		noCoef     bool
	}{
		{"a100", `chip "a100" has no fitted coefficients: only b200, h100, h200 have measured per-operator tables`, true},
		{"tpu-v9", `unknown chip "tpu-v9"`, false},
	} {
		_, err := LookupCoefficients(c.chip)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LookupCoefficients(%q) = %v, want an error containing %q", c.chip, err, c.want)
		}
		if errors.Is(err, ErrNoCoefficients) != c.noCoef {
			t.Errorf("LookupCoefficients(%q): errors.Is(ErrNoCoefficients) = %v", c.chip, !c.noCoef)
		}
	}
	// B300 and GB200 have no tables: B200's laws, resolved against their
	// own peaks.
	b200, _ := LookupCoefficients("b200")
	for _, name := range []string{"b300", "gb200"} {
		co, err := LookupCoefficients(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ch, _ := LookupChip(name)
		if co.Chip != name || co.BorrowedFrom != "b200" || len(co.GEMM) != len(b200.GEMM) {
			t.Errorf("%s: chip %q borrowed from %q, %d GEMM laws", name, co.Chip, co.BorrowedFrom, len(co.GEMM))
		}
		for i := range co.GEMM {
			if co.GEMM[i].MemBW != ch.MemBW || co.GEMM[i].EffMax != b200.GEMM[i].EffMax {
				t.Errorf("%s: GEMM %s not resolved against the chip", name, co.GEMM[i].Dtype)
			}
		}
	}
	co, _ := LookupCoefficients("h100")
	if _, err := co.GEMMFor("int2"); err == nil || !strings.Contains(err.Error(), `no gemm law for dtype "int2"; fitted: bfloat16, fp8, fp8_block`) {
		t.Errorf("GEMMFor(int2) = %v", err)
	}
	if _, err := co.MoEFor("nvfp4"); err == nil || !strings.Contains(err.Error(), "coefficients for h100: no moe law") {
		t.Errorf("MoEFor(nvfp4) on h100 = %v", err)
	}
}

func h100File(t testing.TB) []byte {
	return embeddedCoeffFiles(t)["coeffs/h100.yaml"]
}

func TestParseCoefficientsStrict(t *testing.T) {
	good := string(h100File(t))
	if _, err := ParseCoefficients("h100.yaml", []byte(good)); err != nil {
		t.Fatal(err)
	}
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
		{"unknown key in a law", replace("    eff_max:", "    bogus_key: 1\n    eff_max:"), `h100.yaml: yaml: unmarshal errors:`},
		{"unknown key names the key", replace("    eff_max:", "    bogus_key: 1\n    eff_max:"), "bogus_key"},
		{"unknown top-level key", "extra: 1\n" + good, `field extra not found`},
		{"negative efficiency", replace("    eff_max: ", "    eff_max: -"), `h100.yaml: key "gemm[0].eff_max": -`},
		{"missing provenance files", replace("      files:\n        - data/ops/h100_sxm/gemm/vllm/0.24.0/gemm_perf.parquet\n", ""), `key "gemm[0].provenance.files": missing`},
		{"file outside data/ops", replace("        - data/ops/h100_sxm/gemm", "        - /tmp/h100_sxm/gemm"), `is not under data/ops/`},
		{"bad peak key", replace("    peak: bf16_flops", "    peak: int8_tops"), `key "gemm[0].peak": "int8_tops" is not one of`},
		{"wrong type", replace("    eff_max: ", "    eff_max: fast # "), `cannot unmarshal`},
		{"duplicate law", strings.Replace(good, "  - dtype: fp8\n", "  - dtype: bfloat16\n", 1), `"bfloat16" appears twice`},
		{"empty", "", "h100.yaml: empty file"},
		{"two documents", good + "---\nchip: h100\n", "more than one YAML document"},
		{"no chip", replace("chip: h100", "chip: \"\""), `key "chip"`},
	}
	for _, c := range cases {
		_, err := ParseCoefficients("h100.yaml", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// The embedded files are in MarshalCoefficients' exact form, so a re-fit
// that changes nothing changes no byte.
func TestCoefficientFilesRoundTrip(t *testing.T) {
	for name, data := range embeddedCoeffFiles(t) {
		c, err := ParseCoefficients(name, data)
		if err != nil {
			t.Fatal(err)
		}
		out, err := MarshalCoefficients(c)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, data) {
			t.Errorf("%s: parse + marshal changes the file", name)
		}
	}
}

func TestRoundSig(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{
		{0.123456789, 0.123457}, {123456789, 123457000}, {1.5e-9, 1.5e-9}, {0, 0}, {-2.000004, -2.00000},
	} {
		if got := RoundSig(c.in, 6); got != c.want {
			t.Errorf("RoundSig(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}

// smallCoefficients is an embedded file cut to one GEMM and one collective
// law with short provenance: the fuzzer minimises every new input it finds,
// which on the full files (30 KB) takes it minutes.
func smallCoefficients(t testing.TB) []byte {
	c, err := ParseCoefficients("h100.yaml", h100File(t))
	if err != nil {
		t.Fatal(err)
	}
	c.GEMM, c.Comm = c.GEMM[:1], c.Comm[:1]
	c.AttnDecode, c.AttnPrefill, c.MLADecode, c.MLAPrefill, c.MoE = nil, nil, nil, nil, nil
	c.Origin, c.Generator = "o", "g"
	for _, p := range []*Provenance{&c.GEMM[0].Provenance, &c.Comm[0].Provenance} {
		p.Method, p.Scope = "m", "s"
	}
	out, err := MarshalCoefficients(c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func FuzzParseCoefficients(f *testing.F) {
	f.Add(smallCoefficients(f))
	f.Add([]byte("chip: h100\n"))
	f.Add([]byte("gemm: [{dtype: x}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCoefficients("fuzz.yaml", data)
		if err != nil {
			return
		}
		// Whatever parses writes back to something that parses to the same.
		out, err := MarshalCoefficients(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		c2, err := ParseCoefficients("fuzz.yaml", out)
		if err != nil {
			t.Fatalf("re-parse of marshalled coefficients: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed the coefficients")
		}
	})
}

// Every coefficients_from names a chip with coefficients of its own.
func TestCoefficientsFromNamesAFittedChip(t *testing.T) {
	fitted := map[string]bool{}
	for _, c := range CoefficientChips() {
		fitted[c] = true
	}
	for _, ch := range Chips() {
		if ch.CoefficientsFrom != "" && !fitted[ch.CoefficientsFrom] {
			t.Errorf("%s: coefficients_from %q has no fitted coefficients", ch.Name, ch.CoefficientsFrom)
		}
	}
}

// DSA prefill laws fitted on different head ranges of one dtype pair: a
// deployment takes the law of its heads per rank, else the nearest range
// (the larger heads on a tie); a law without a range covers every count.
func TestDSAPrefillForPicksTheHeadRange(t *testing.T) {
	c := &Coefficients{DSAPrefill: []MLALaw{
		{GEMMDtype: "fp8_block", KVDtype: "fp8", T0: 1, MinHeads: 1, MaxHeads: 16},
		{GEMMDtype: "fp8_block", KVDtype: "fp8", T0: 2, MinHeads: 32, MaxHeads: 128},
		{GEMMDtype: "fp8_block", KVDtype: "bfloat16", T0: 3},
	}}
	for _, tc := range []struct {
		kv    string
		heads float64
		want  float64
	}{
		{"fp8", 8, 1}, {"fp8", 16, 1}, {"fp8", 32, 2}, {"fp8", 256, 2}, {"fp8", 20, 1}, {"fp8", 24, 2}, {"fp8", 28, 2},
		{"bfloat16", 8, 3}, {"bfloat16", 128, 3},
	} {
		l, err := c.DSAPrefillFor("fp8_block", tc.kv, tc.heads)
		if err != nil || l.T0 != tc.want {
			t.Errorf("kv %s, %g heads: law %+v (%v), want T0 %g", tc.kv, tc.heads, l, err, tc.want)
		}
	}
	if _, err := c.DSAPrefillFor("bfloat16", "fp8", 8); err == nil || !strings.Contains(err.Error(), "dsa_prefill") {
		t.Errorf("missing dtype pair: %v", err)
	}
}
