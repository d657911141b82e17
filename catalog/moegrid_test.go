package catalog

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func smallMoEGrid() MoEGrid {
	return MoEGrid{Dtype: "fp8_block", Tokens: []float64{1, 16, 256},
		Rows: []MoEGridRow{
			{Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 1, Res: []int16{0, 100, -50}},
			{Hidden: 4096, Inter: 1536, TopK: 8, Experts: 128, TP: 1, EP: 8, Res: []int16{500, 0, 0}},
		}}
}

// A MoE grid file reads back as written; Row matches layouts exactly and
// returns measured/law per token count.
func TestMoEGridRoundTripAndRow(t *testing.T) {
	data := MarshalMoEGrids("h100", "test", []MoEGrid{smallMoEGrid()})
	chip, back, err := ParseMoEGrids("m.txt", data)
	if err != nil || chip != "h100" || len(back) != 1 {
		t.Fatalf("parse: %v %q %d", err, chip, len(back))
	}
	if again := MarshalMoEGrids("h100", "test", back); !bytes.Equal(again, data) {
		t.Fatalf("round trip differs:\n%s\n%s", data, again)
	}
	for _, tc := range []struct {
		name                        string
		hidden, inter, k, e, tp, ep float64
		want                        []float64 // ln ratio per token count; nil: no row
	}{
		{"tp1", 4096, 1536, 8, 128, 1, 1, []float64{0, 0.2, -0.1}},
		{"ep8", 4096, 1536, 8, 128, 1, 8, []float64{1, 0, 0}},
		{"other ep", 4096, 1536, 8, 128, 1, 4, nil},
		{"other inter", 4096, 768, 8, 128, 1, 1, nil},
	} {
		row := back[0].Row(tc.hidden, tc.inter, tc.k, tc.e, tc.tp, tc.ep)
		if (row == nil) != (tc.want == nil) {
			t.Fatalf("%s: row %v, want %v", tc.name, row, tc.want)
		}
		for i, w := range tc.want {
			if math.Abs(math.Log(row[i])-w) > 1e-12 {
				t.Errorf("%s: [%d] = ln %v, want %v", tc.name, i, math.Log(row[i]), w)
			}
		}
	}
}

func TestParseMoEGridsStrict(t *testing.T) {
	good := string(MarshalMoEGrids("h100", "test", []MoEGrid{smallMoEGrid()}))
	for _, tc := range []struct{ name, data, want string }{
		{"no chip", strings.Replace(good, "chip h100\n", "", 1), "after the chip line"},
		{"two chips", strings.Replace(good, "chip h100\n", "chip h100\nchip h200\n", 1), "one \"chip NAME\" line"},
		{"unknown line", good + "x 1\n", `unknown line kind "x"`},
		{"descending tokens", strings.Replace(good, "tokens 1 16 256", "tokens 16 1 256", 1), "ascending"},
		{"zero tokens", strings.Replace(good, "tokens 1 16 256", "tokens 0 16 256", 1), "ascending numbers ≥ 1"},
		{"short row", strings.Replace(good, "r 4096 1536 8 128 1 1 0 100 -50", "r 4096 1536 8 128 1 1 0 100", 1), "want 6 layout numbers and 3 values"},
		{"bad layout", strings.Replace(good, "r 4096 1536 8 128 1 1", "r 4096 1536 8 x 1 1", 1), `layout value "x"`},
		{"bad value", strings.Replace(good, "0 100 -50", "0 100 99999", 1), `value "99999"`},
		{"duplicate row", good + "r 4096 1536 8 128 1 1 0 0 0\n", "given twice"},
		{"row before tokens", "chip h100\ngrid fp8\nr 1 1 1 1 1 1 0\n", "row before a grid's tokens axis"},
		{"grid without tokens", "chip h100\ngrid fp8\n", "has no tokens axis"},
		{"empty", "", "no \"chip NAME\" line"},
		{"grid twice", good + "grid fp8_block\ntokens 1\n", "grid fp8_block given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseMoEGrids("m.txt", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m.txt") {
				t.Errorf("error %v, want %q and the file name", err, tc.want)
			}
		})
	}
}

// Every embedded MoE grid belongs to a MoE law of its chip, and the
// layouts served models use on H100 are there.
func TestEmbeddedMoEGrids(t *testing.T) {
	co, err := LookupCoefficients("h100")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bfloat16", "fp8_block", "w4a16_mxfp4", "w4a16_mxfp4_marlin"} {
		g := co.MoEGridFor(d)
		if g == nil || len(g.Rows) == 0 {
			t.Fatalf("h100 %s: no grid", d)
		}
		for _, r := range g.Rows {
			if len(r.Res) != len(g.Tokens) {
				t.Errorf("h100 %s: row with %d values for %d token counts", d, len(r.Res), len(g.Tokens))
			}
		}
	}
	if co.MoEGridFor("no-such-law") != nil {
		t.Error("grid for an unknown law")
	}
}

func FuzzParseMoEGrids(f *testing.F) {
	f.Add(MarshalMoEGrids("h100", "t", []MoEGrid{smallMoEGrid()}))
	f.Add([]byte("chip a\ngrid b\ntokens 1 2\nr 1 1 1 1 1 1 5 -5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, grids, err := ParseMoEGrids("f.txt", data)
		if err != nil {
			return
		}
		for _, g := range grids {
			for _, r := range g.Rows {
				if len(r.Res) != len(g.Tokens) {
					t.Fatalf("grid %s: %d values for %d token counts", g.Dtype, len(r.Res), len(g.Tokens))
				}
				if g.Row(r.Hidden, r.Inter, r.TopK, r.Experts, r.TP, r.EP) == nil {
					t.Fatalf("grid %s: a parsed row is not found", g.Dtype)
				}
			}
		}
	})
}
