package catalog

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func smallGrid() GEMMGrid {
	return GEMMGrid{Dtype: "fp8", M: []float64{1, 16}, N: []float64{64, 256}, K: []float64{128},
		Res: []int16{0, 100, -50, 500}}
}

// A grid file reads back as written, and Row interpolates bilinearly in
// log n, log k (here log n only) and clamps outside the axes.
func TestGEMMGridRoundTripAndRow(t *testing.T) {
	g := smallGrid()
	data := MarshalGEMMGrids("h100", "test", []GEMMGrid{g})
	chip, back, err := ParseGEMMGrids("g.txt", data)
	if err != nil || chip != "h100" || len(back) != 1 {
		t.Fatalf("parse: %v %q %d", err, chip, len(back))
	}
	if again := MarshalGEMMGrids("h100", "test", back); !bytes.Equal(again, data) {
		t.Fatalf("round trip differs:\n%s\n%s", data, again)
	}
	for _, tc := range []struct {
		n, k float64
		want []float64 // ln ratio per m
	}{
		{64, 128, []float64{0, 0.2}},
		{256, 128, []float64{-0.1, 1}},
		{128, 128, []float64{-0.05, 0.6}}, // halfway in log n
		{32, 1e6, []float64{0, 0.2}},      // clamped
		{1e6, 1, []float64{-0.1, 1}},
	} {
		row := back[0].Row(tc.n, tc.k)
		for i, w := range tc.want {
			if math.Abs(math.Log(row[i])-w) > 1e-12 {
				t.Errorf("Row(%g,%g)[%d] = ln %v, want %v", tc.n, tc.k, i, math.Log(row[i]), w)
			}
		}
	}
}

func TestParseGEMMGridsStrict(t *testing.T) {
	good := string(MarshalGEMMGrids("h100", "test", []GEMMGrid{smallGrid()}))
	for _, tc := range []struct{ name, data, want string }{
		{"no chip", strings.Replace(good, "chip h100\n", "", 1), "after the chip line"},
		{"unknown line", good + "x 1\n", `unknown line kind "x"`},
		{"descending axis", strings.Replace(good, "m 1 16", "m 16 1", 1), "ascending"},
		{"off-grid row", strings.Replace(good, "r 64 128", "r 65 128", 1), "not on the grid"},
		{"short row", strings.Replace(good, "r 64 128 0 100", "r 64 128 0", 1), "want n, k and 2 values"},
		{"bad value", strings.Replace(good, "r 64 128 0 100", "r 64 128 0 x", 1), `value "x"`},
		{"duplicate row", good + "r 64 128 0 0\n", "given twice"},
		{"row before axes", "chip h100\ngrid fp8\nr 1 1 0\n", "row before grid fp8's axes"},
		{"empty", "", "no \"chip NAME\" line"},
		{"grid twice", good + "grid fp8\n", "grid fp8 given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseGEMMGrids("g.txt", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "g.txt") {
				t.Errorf("error %v, want %q and the file name", err, tc.want)
			}
		})
	}
}

// Every embedded grid belongs to a GEMM law of its chip.
func TestEmbeddedGEMMGrids(t *testing.T) {
	co, err := LookupCoefficients("h100")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bfloat16", "fp8", "fp8_block"} {
		if g := co.GEMMGridFor(d); g == nil || len(g.Res) != len(g.M)*len(g.N)*len(g.K) {
			t.Errorf("h100 %s: no grid or wrong size", d)
		}
	}
}

func FuzzParseGEMMGrids(f *testing.F) {
	f.Add(MarshalGEMMGrids("h100", "t", []GEMMGrid{smallGrid()}))
	f.Add([]byte("chip a\ngrid b\nm 1\nn 1\nk 1\nr 1 1 5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		chip, grids, err := ParseGEMMGrids("f.txt", data)
		if err != nil {
			return
		}
		for _, g := range grids {
			if len(g.Res) != len(g.M)*len(g.N)*len(g.K) {
				t.Fatalf("grid %s: %d cells for %d×%d×%d", g.Dtype, len(g.Res), len(g.M), len(g.N), len(g.K))
			}
			g.Row(100, 100)
		}
		_ = chip
	})
}
