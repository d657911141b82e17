package calibrate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"blis/catalog"

	"github.com/parquet-go/parquet-go"
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

// dsv4Row is one row of a DSV4 attention module table (the columns the
// fitter reads).
type dsv4Row struct {
	Model  string  `parquet:"model"`
	MLA    string  `parquet:"mla_dtype"`
	KV     string  `parquet:"kv_cache_dtype"`
	GEMM   string  `parquet:"gemm_type"`
	Kernel string  `parquet:"kernel_source"`
	Heads  int64   `parquet:"num_heads"`
	Batch  int64   `parquet:"batch_size"`
	ISL    int64   `parquet:"isl"`
	TP     int64   `parquet:"tp_size"`
	Step   int64   `parquet:"step"`
	Ratio  int64   `parquet:"compress_ratio"`
	Lat    float64 `parquet:"latency"`
}

type mhcRow struct {
	Op     string  `parquet:"op_name"`
	Tokens int64   `parquet:"num_tokens"`
	Sites  int64   `parquet:"num_sites"`
	HC     int64   `parquet:"hc_mult"`
	Hidden int64   `parquet:"hidden_size"`
	Lat    float64 `parquet:"latency"`
}

// Tables the fitters do not understand fail with the file, row and value.
func TestDSV4FitRejectsBadRows(t *testing.T) {
	good := dsv4Row{"sgl-project/DeepSeek-V4-Flash-FP8", "bfloat16", "fp8", "fp8_block", "FLASHMLA_SPARSE_DSV4", 64, 1, 1, 1, 1, 4, 0.09}
	cases := []struct {
		name string
		edit func(*dsv4Row)
		want string
	}{
		{"unknown model", func(r *dsv4Row) { r.Model = "acme/V4" }, `row 1: model "acme/V4" is not a known DeepSeek-V4 model`},
		{"wrong ratio", func(r *dsv4Row) { r.Ratio = 128 }, "row 1: compress_ratio 128, want 4"},
		{"other dtype", func(r *dsv4Row) { r.GEMM = "nvfp4" }, `row 1: gemm_type "nvfp4"`},
		{"heads not the model's", func(r *dsv4Row) { r.Heads = 32 }, "row 1: num_heads 32 × tp_size 1 is not the model's 64 heads"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		folder := filepath.Join(dir, "h200_sxm", "sparse_attention", "vllm", "0.24.0")
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		bad := good
		c.edit(&bad)
		if err := parquet.WriteFile(filepath.Join(folder, "dsv4_csa_generation_module_perf.parquet"), []dsv4Row{good, bad}); err != nil {
			t.Fatal(err)
		}
		_, err := fitChip(dir, "h200_sxm", map[string]bool{"dsv4": true})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "dsv4_csa_generation_module_perf.parquet") {
			t.Errorf("%s: err = %v, want it to name the file and contain %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct {
		row  mhcRow
		want string
	}{
		{mhcRow{"mid", 16, 2, 4, 4096, 0.01}, `row 0: op_name "mid" is not pre or post`},
		{mhcRow{"pre", 16, 0, 4, 4096, 0.01}, "row 0: num_sites 0, want ≥ 1"},
	} {
		dir := t.TempDir()
		folder := filepath.Join(dir, "h200_sxm", "mhc", "vllm", "0.24.0")
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := parquet.WriteFile(filepath.Join(folder, "mhc_module_perf.parquet"), []mhcRow{c.row}); err != nil {
			t.Fatal(err)
		}
		_, err := fitChip(dir, "h200_sxm", map[string]bool{"dsv4": true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mhc: err = %v, want %q", err, c.want)
		}
	}
}
