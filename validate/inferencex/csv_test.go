package inferencex

import (
	"errors"
	"os"
	"strings"
	"testing"

	"blis/scenario"
)

const ixHeader = "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,gemm_quant_mode,moe_quant_mode,batch_size,tp_size,pp_size,attention_dp_size,moe_tp_size,moe_ep_size,prefill_batch_size,prefill_num_workers,prefill_tp_size,prefill_pp_size,prefill_attention_dp_size,prefill_moe_tp_size,prefill_moe_ep_size,decode_batch_size,decode_num_workers,decode_tp_size,decode_pp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"

// An agg row and a disagg row in the file's own spelling.
const (
	ixAgg    = "r1,source_file=a.csv; model=X; silicon_concurrency=4; measured=2025-10-29T00:00:00.000Z; wip=False,vllm,,meta-llama/Llama-3.1-70B,h100_sxm,fp8,agg,1024,1024,fp8,fp8,4,4,1,1,4,1,,,,,,,,,,,,,,,80.5,11.776\n"
	ixDisagg = "r2,db-dump/2026-04-27; config_id=1; silicon_concurrency=64; measured=2026-04-07T00:00:00.000Z; workflow_run_id=1; vllm/vllm-openai:v0.18.0-cu130,vllm,0.18.0,moonshotai/Kimi-K2.5,gb200,fp4,disagg,1024,1024,nvfp4,nvfp4,,,,,,,1,1,4,1,4,1,4,64,1,16,1,16,1,16,500,20\n"
)

func TestReadInferenceXFields(t *testing.T) {
	rows, err := Read("t.csv", strings.NewReader(ixHeader+ixAgg+ixDisagg))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	a, d := rows[0], rows[1]
	if a.Line != 2 || a.ID != "r1" || a.Backend != "vllm" || a.BackendVersion != "" || a.ModelPath != "meta-llama/Llama-3.1-70B" ||
		a.System != "h100_sxm" || a.Precision != "fp8" || a.Mode != "agg" || a.ISL != 1024 || a.OSL != 1024 ||
		a.Agg != (Layout{BatchSize: 4, TP: 4, PP: 1, AttentionDP: 1, MoETP: 4, MoEEP: 1}) || a.TTFTms != 80.5 || a.TPOTms != 11.776 {
		t.Errorf("agg row: %+v", a)
	}
	if a.MeasuredDate() != "2025-10-29" || a.SourceField("silicon_concurrency") != "4" || a.WIP() || a.Image() != "" || a.GapAnalysis() {
		t.Errorf("agg source fields: date %q conc %q wip %v image %q", a.MeasuredDate(), a.SourceField("silicon_concurrency"), a.WIP(), a.Image())
	}
	if d.Line != 3 || d.Mode != "disagg" || d.Agg != (Layout{}) ||
		d.Prefill != (Layout{BatchSize: 1, NumWorkers: 1, TP: 4, PP: 1, AttentionDP: 4, MoETP: 1, MoEEP: 4}) ||
		d.Decode != (Layout{BatchSize: 64, NumWorkers: 1, TP: 16, PP: 1, AttentionDP: 16, MoETP: 1, MoEEP: 16}) {
		t.Errorf("disagg row: %+v", d)
	}
	if d.Image() != "vllm/vllm-openai:v0.18.0-cu130" || d.MeasuredDate() != "2026-04-07" {
		t.Errorf("disagg image %q date %q", d.Image(), d.MeasuredDate())
	}
}

func TestReadInferenceXErrors(t *testing.T) {
	swap := func(row, old, new string) string {
		if !strings.Contains(row, old) {
			t.Fatalf("%q not in row", old)
		}
		return strings.Replace(row, old, new, 1)
	}
	cases := []struct {
		name, data string
		want       string // exact message
	}{
		{"empty", "", "t.csv:1: empty file: expected the header " + strings.TrimSuffix(ixHeader, "\n")},
		{"renamed column", strings.Replace(ixHeader, "tp_size", "tp", 1) + ixAgg,
			`t.csv:1: header column 14 is "tp", expected "tp_size"`},
		{"short header", "id,silicon_data_source\n", "t.csv:1: header has 2 columns, expected 34; missing backend,"},
		{"extra column", strings.TrimSuffix(ixHeader, "\n") + ",extra\n",
			`t.csv:1: header has 35 columns, expected 34`},
		{"short row", ixHeader + "r1,src,vllm\n", "t.csv:2: row has 3 columns, expected 34"},
		{"bad tp", ixHeader + ixAgg + swap(ixAgg, ",4,4,1,1,4,1,", ",4,four,1,1,4,1,"),
			`t.csv:3: column tp_size "four": expected an integer in [0, 2^30]`},
		{"negative isl", ixHeader + swap(ixAgg, ",1024,1024,", ",-1024,1024,"),
			`t.csv:2: column isl "-1024": expected an integer in [0, 2^30]`},
		{"zero osl", ixHeader + swap(ixAgg, ",1024,1024,", ",1024,0,"), `t.csv:2: column osl "0": expected an integer ≥ 1`},
		{"agg without tp", ixHeader + swap(ixAgg, ",4,4,1,1,4,1,", ",4,,1,1,4,1,"),
			`t.csv:2: column tp_size: must not be empty: expected an integer ≥ 1`},
		{"bad ttft", ixHeader + swap(ixAgg, ",80.5,", ",fast,"), `t.csv:2: column silicon_ttft_ms "fast": expected a latency in milliseconds > 0`},
		{"nan tpot", ixHeader + swap(ixAgg, ",11.776", ",NaN"), `t.csv:2: column silicon_tpot_ms "NaN": expected a latency in milliseconds > 0`},
		{"zero tpot", ixHeader + swap(ixAgg, ",11.776", ",0"), `t.csv:2: column silicon_tpot_ms "0": expected a latency in milliseconds > 0`},
		{"bad mode", ixHeader + swap(ixAgg, ",agg,", ",mixed,"), `t.csv:2: column mode "mixed": expected agg or disagg`},
		{"no model", ixHeader + swap(ixAgg, "meta-llama/Llama-3.1-70B", ""), `t.csv:2: column model_path: must not be empty`},
		{"padded system", ixHeader + swap(ixAgg, "h100_sxm", " h100_sxm"), `t.csv:2: column system " h100_sxm": has leading or trailing spaces`},
		{"bare quote", ixHeader + swap(ixAgg, "r1,", `r"1,`), "t.csv:2: not valid CSV at column 2"},
	}
	for _, c := range cases {
		_, err := Read("t.csv", strings.NewReader(c.data))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		var ie *scenario.InputError
		if !errors.As(err, &ie) || ie.File != "t.csv" || ie.Line < 1 {
			t.Errorf("%s: %T %v: want an *InputError naming the file and line", c.name, err, err)
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, err, c.want)
		}
	}
}

func TestReadInferenceXLineOfMultiLineField(t *testing.T) {
	// A quoted field spanning two lines: the next row starts on line 4.
	data := ixHeader + strings.Replace(ixAgg, "r1,", "\"r\n1\",", 1) + strings.Replace(ixAgg, "4,4,1,1,4,1", "4,x,1,1,4,1", 1)
	_, err := Read("t.csv", strings.NewReader(data))
	if err == nil || !strings.HasPrefix(err.Error(), `t.csv:4: column tp_size "x"`) {
		t.Errorf("got %v", err)
	}
}

// The shipped data file reads cleanly and has the rows its provenance
// states.
func TestReadShippedData(t *testing.T) {
	f, err := os.Open("../../data/e2e/inferencex_calibration.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := Read("inferencex_calibration.csv", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4254 {
		t.Errorf("%d rows, PROVENANCE.md says 4254", len(rows))
	}
	by := map[string]int{}
	for i := range rows {
		by[rows[i].System]++
		if rows[i].System == "h200_sxm" {
			t.Fatalf("line %d: an H200 row; they are held back", rows[i].Line)
		}
	}
	if by["b200_sxm"] != 2052 || by["h100_sxm"] != 917 || by["gb200"] != 627 || by["b300_sxm"] != 381 || by["gb300"] != 277 {
		t.Errorf("rows by system %v differ from PROVENANCE.md", by)
	}
	// 600 exact repeats, and 71 gap-analysis rows that copy an InferenceX
	// run with TTFT and TPOT rounded to 0.01 ms (15 Kimi-K2.5 INT4 and 2 FP4
	// vLLM rows, 54 Qwen3.5-397B SGLang rows).
	if n := len(Duplicates(rows)); n != 671 {
		t.Errorf("%d duplicate rows, want 671", n)
	}
}

func FuzzReadInferenceX(f *testing.F) {
	f.Add(ixHeader + ixAgg + ixDisagg)
	f.Add(ixHeader)
	f.Add("")
	f.Add(ixHeader + "r1,src,vllm\n")
	f.Add(ixHeader + strings.Replace(ixAgg, "80.5", "1e309", 1))
	f.Add(ixHeader + strings.Replace(ixAgg, "r1,", "\"r\"\"1\",", 1))
	f.Add("\ufeff" + ixHeader + ixAgg)
	f.Fuzz(func(t *testing.T, data string) {
		rows, err := Read("f.csv", strings.NewReader(data))
		if err != nil {
			var ie *scenario.InputError
			if !errors.As(err, &ie) || ie.File != "f.csv" {
				t.Fatalf("error %T %v does not name the file", err, err)
			}
			if rows != nil {
				t.Fatalf("rows returned with an error")
			}
			return
		}
		prev := 1
		for _, r := range rows {
			if r.Line <= prev {
				t.Fatalf("line %d after %d", r.Line, prev)
			}
			prev = r.Line
			if r.ID == "" || r.ModelPath == "" || r.ISL < 1 || r.OSL < 1 || !(r.TTFTms > 0) || !(r.TPOTms > 0) {
				t.Fatalf("row breaks the reader's promises: %+v", r)
			}
			if r.Mode == "agg" && (r.Agg.TP < 1 || r.Agg.BatchSize < 1) {
				t.Fatalf("agg row without a layout: %+v", r)
			}
			// Mapping never panics on what the reader accepts.
			MapRow(&r, MapOptions{Backend: BackendAll, EPAsTP: true})
		}
	})
}
