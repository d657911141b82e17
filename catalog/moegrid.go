package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
)

// MoEGrid is what a fitted MoE law leaves unexplained for the exact
// layouts the MoE table measured: per (hidden, inter, topk, experts,
// moe_tp, moe_ep), ln(measured/law) over the token counts. The grouped
// GEMM kernels switch tile configurations in steps a smooth law cannot
// follow (gpt-oss's Triton MXFP4 kernel on H100 is flat from 32 to 512
// tokens, then jumps), and most served MoE models' shapes are in the
// table, so the pricer multiplies the law by the measured residual where
// the layout matches exactly and uses the law alone elsewhere.
type MoEGrid struct {
	Dtype  string // the MoE law's dtype (its kernel family included)
	Tokens []float64
	Rows   []MoEGridRow
}

// MoEGridRow is one measured layout's residual, GEMMGridScale fixed point,
// one value per token count.
type MoEGridRow struct {
	Hidden, Inter, TopK, Experts, TP, EP float64
	Res                                  []int16
}

// Row returns measured/law over the grid's token counts for a layout, or
// nil when the table did not measure it.
func (g *MoEGrid) Row(hidden, inter, topk, experts, tp, ep float64) []float64 {
	for i := range g.Rows {
		r := &g.Rows[i]
		if r.Hidden == hidden && r.Inter == inter && r.TopK == topk && r.Experts == experts && r.TP == tp && r.EP == ep {
			out := make([]float64, len(r.Res))
			for j, v := range r.Res {
				out[j] = math.Exp(float64(v) / GEMMGridScale)
			}
			return out
		}
	}
	return nil
}

// MoEGridFor returns the residual grid of a MoE law's dtype, or nil.
func (c *Coefficients) MoEGridFor(dtype string) *MoEGrid { return gridFor(c.MoEGrids, dtype) }

func (g MoEGrid) gridDtype() string { return g.Dtype }

// MoEGridFile is the file name of a chip's MoE residual grids.
func MoEGridFile(chip string) string { return chip + ".moe-grid.txt" }

// MarshalMoEGrids writes a chip's MoE grids: a header naming the source,
// then per law its token axis and one line per measured layout.
func MarshalMoEGrids(chip, source string, grids []MoEGrid) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# MoE residual grids for %s: round(%d · ln(measured/law)) per measured layout (hidden inter topk experts tp ep) over tokens.\n", chip, GEMMGridScale)
	fmt.Fprintf(&b, "# %s\n", source)
	fmt.Fprintf(&b, "chip %s\n", chip)
	for _, g := range grids {
		fmt.Fprintf(&b, "grid %s\ntokens", g.Dtype)
		for _, t := range g.Tokens {
			b.WriteString(" " + strconv.FormatFloat(t, 'g', -1, 64))
		}
		b.WriteByte('\n')
		for _, r := range g.Rows {
			fmt.Fprintf(&b, "r %g %g %g %g %g %g", r.Hidden, r.Inter, r.TopK, r.Experts, r.TP, r.EP)
			for _, v := range r.Res {
				b.WriteString(" " + strconv.Itoa(int(v)))
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// ParseMoEGrids reads a MoE grid file strictly; errors name file and line.
func ParseMoEGrids(name string, data []byte) (chip string, grids []MoEGrid, err error) {
	complete := func() error {
		if g := lastOf(grids); g != nil && g.Tokens == nil {
			return fmt.Errorf("grid %s has no tokens axis", g.Dtype)
		}
		return nil
	}
	newGrid := func(dtype string) MoEGrid { return MoEGrid{Dtype: dtype} }
	chip, _, err = readGridFile(name, data, &grids, newGrid, complete, func(f []string) error {
		g := lastOf(grids)
		switch f[0] {
		case "tokens":
			if g == nil || g.Tokens != nil {
				return errors.New("one tokens axis per grid, after its grid line")
			}
			xs, err := parseGridAxis(f[1:])
			if err != nil {
				return fmt.Errorf("tokens: %v", err)
			}
			if xs == nil {
				return errors.New("tokens axis is empty")
			}
			g.Tokens = xs
		case "r":
			if g == nil || g.Tokens == nil {
				return errors.New("row before a grid's tokens axis")
			}
			if len(f) != 7+len(g.Tokens) {
				return fmt.Errorf("row: want 6 layout numbers and %d values, got %d fields", len(g.Tokens), len(f)-1)
			}
			var k [6]float64
			for i := range k {
				x, err := strconv.ParseFloat(f[1+i], 64)
				if err != nil || !(x >= 1) || math.IsInf(x, 0) {
					return fmt.Errorf("row: layout value %q: want a number ≥ 1", f[1+i])
				}
				k[i] = x
			}
			if g.Row(k[0], k[1], k[2], k[3], k[4], k[5]) != nil {
				return fmt.Errorf("row: layout %s given twice", strings.Join(f[1:7], " "))
			}
			row := MoEGridRow{Hidden: k[0], Inter: k[1], TopK: k[2], Experts: k[3], TP: k[4], EP: k[5], Res: make([]int16, len(g.Tokens))}
			for j, s := range f[7:] {
				v, err := parseResidual(s)
				if err != nil {
					return fmt.Errorf("row: %v", err)
				}
				row.Res[j] = v
			}
			g.Rows = append(g.Rows, row)
		default:
			return fmt.Errorf("unknown line kind %q: allowed: chip, grid, tokens, r", f[0])
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if err := complete(); err != nil {
		return "", nil, fmt.Errorf("%s: %v", name, err)
	}
	return chip, grids, nil
}

// loadMoEGrids attaches every embedded MoE grid file to its chip's laws.
func loadMoEGrids(fsys fs.FS, byChip map[string]*Coefficients) error {
	return loadGridFiles(fsys, byChip, "coeffs/*.moe-grid.txt", ParseMoEGrids, func(c *Coefficients, grids []MoEGrid) error {
		return attachGrids(c, "MoE", &c.MoEGrids, grids, func(dtype string) error { _, err := c.MoEFor(dtype); return err })
	})
}
