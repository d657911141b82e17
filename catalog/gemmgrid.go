package catalog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
)

// GEMMGrid is what a fitted GEMM law leaves unexplained, shape by shape:
// ln(measured/law) on the measured table's own grid of m × n × k (the
// aiconfigurator GEMM collection times every n and k of one list at every
// m of another). A law with a few parameters cannot follow how a real
// kernel's efficiency depends on its exact shape (tile quantisation, split
// k, which CUTLASS/cuBLAS kernel wins): on H100 fp8 the law is within 2 %
// on average for large GEMMs yet 20–30 % slow on Llama-3.1-70B's TP8 MLP
// shapes. The pricer multiplies the law by exp of this residual,
// interpolated in log m, log n and log k, so a measured shape costs what
// was measured and an unmeasured one what its neighbours suggest.
type GEMMGrid struct {
	Dtype   string
	M, N, K []float64 // ascending axes
	// Res holds round(GEMMGridScale · ln(measured/law)) with the row of
	// shape (N[i], K[j]) at (i·len(K)+j)·len(M); cells the table did not
	// measure are interpolated along m within their row.
	Res []int16
}

// GEMMGridScale is the fixed-point scale of GEMMGrid.Res: 1/500 in log
// ratio, 0.2 %.
const GEMMGridScale = 500

// Row returns measured/law for every m of the grid at shape (n, k):
// bilinear in log n and log k between the four surrounding grid shapes,
// clamped to the grid's edges.
func (g *GEMMGrid) Row(n, k float64) []float64 {
	i0, i1, wn := bracket(g.N, n)
	j0, j1, wk := bracket(g.K, k)
	out := make([]float64, len(g.M))
	nm := len(g.M)
	at := func(i, j, m int) float64 { return float64(g.Res[(i*len(g.K)+j)*nm+m]) / GEMMGridScale }
	for m := range out {
		v := (1-wn)*((1-wk)*at(i0, j0, m)+wk*at(i0, j1, m)) + wn*((1-wk)*at(i1, j0, m)+wk*at(i1, j1, m))
		out[m] = math.Exp(v)
	}
	return out
}

// bracket finds x's neighbours on an ascending axis and its weight towards
// the upper one, in log space; outside the axis it clamps to the end.
func bracket(axis []float64, x float64) (lo, hi int, w float64) {
	n := len(axis)
	if x <= axis[0] {
		return 0, 0, 0
	}
	if x >= axis[n-1] {
		return n - 1, n - 1, 0
	}
	hi = sort.SearchFloat64s(axis, x)
	if axis[hi] == x {
		return hi, hi, 0
	}
	lo = hi - 1
	return lo, hi, math.Log(x/axis[lo]) / math.Log(axis[hi]/axis[lo])
}

// GEMMGridFor returns the residual grid of a GEMM law's dtype, or nil.
func (c *Coefficients) GEMMGridFor(dtype string) *GEMMGrid { return gridFor(c.GEMMGrids, dtype) }

func (g GEMMGrid) gridDtype() string { return g.Dtype }

// dtypeGrid is a residual grid of one law, named by the law's dtype.
type dtypeGrid interface{ gridDtype() string }

// gridFor returns the grid of grids for dtype, or nil.
func gridFor[G dtypeGrid](grids []G, dtype string) *G {
	for i := range grids {
		if grids[i].gridDtype() == dtype {
			return &grids[i]
		}
	}
	return nil
}

// attachGrids checks that every grid of one file has its law on chip c
// (law) and that the chip has no grids of this kind yet, then sets *dst.
func attachGrids[G dtypeGrid](c *Coefficients, kind string, dst *[]G, grids []G, law func(dtype string) error) error {
	for _, g := range grids {
		if err := law(g.gridDtype()); err != nil {
			return fmt.Errorf("grid %s: %v", g.gridDtype(), err)
		}
	}
	if *dst != nil {
		return fmt.Errorf("chip %q already has %s grids from another file", c.Chip, kind)
	}
	*dst = grids
	return nil
}

// GEMMGridFile is the file name of a chip's residual grids.
func GEMMGridFile(chip string) string { return chip + ".gemm-grid.txt" }

// MarshalGEMMGrids writes a chip's grids in the embedded file's form: a
// header naming the source, then per dtype its axes and one line per
// (n, k) row. The same grids give the same bytes.
func MarshalGEMMGrids(chip, source string, grids []GEMMGrid) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# GEMM residual grids for %s: round(%d · ln(measured/law)) per (n, k) row over m.\n", chip, GEMMGridScale)
	fmt.Fprintf(&b, "# %s\n", source)
	fmt.Fprintf(&b, "chip %s\n", chip)
	axis := func(name string, xs []float64) {
		b.WriteString(name)
		for _, x := range xs {
			b.WriteByte(' ')
			b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	for _, g := range grids {
		fmt.Fprintf(&b, "grid %s\n", g.Dtype)
		axis("m", g.M)
		axis("n", g.N)
		axis("k", g.K)
		nm := len(g.M)
		for i, n := range g.N {
			for j, k := range g.K {
				fmt.Fprintf(&b, "r %g %g", n, k)
				for _, v := range g.Res[(i*len(g.K)+j)*nm : (i*len(g.K)+j+1)*nm] {
					b.WriteByte(' ')
					b.WriteString(strconv.Itoa(int(v)))
				}
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

// ParseGEMMGrids reads a grid file strictly; errors name the file and line.
func ParseGEMMGrids(name string, data []byte) (chip string, grids []GEMMGrid, err error) {
	var rowsSeen []bool
	// complete is the check a grid must pass before the next one or the end.
	complete := func() error {
		if g := lastOf(grids); g != nil && (g.M == nil || g.N == nil || g.K == nil) {
			return fmt.Errorf("grid %s: axes m, n and k must all come before its rows", g.Dtype)
		}
		return nil
	}
	newGrid := func(dtype string) GEMMGrid { return GEMMGrid{Dtype: dtype} }
	chip, lines, err := readGridFile(name, data, &grids, newGrid, complete, func(f []string) error {
		g := lastOf(grids)
		switch f[0] {
		case "m", "n", "k":
			if g == nil {
				return fmt.Errorf("axis %s before any grid", f[0])
			}
			xs, err := parseGridAxis(f[1:])
			if err != nil {
				return fmt.Errorf("axis %s: %v", f[0], err)
			}
			if xs == nil {
				return fmt.Errorf("axis %s is empty", f[0])
			}
			switch f[0] {
			case "m":
				g.M = xs
			case "n":
				g.N = xs
			case "k":
				g.K = xs
			}
			if g.M != nil && g.N != nil && g.K != nil {
				if len(g.M)*len(g.N)*len(g.K) > 1<<24 {
					return fmt.Errorf("grid %s: %d×%d×%d cells: too many", g.Dtype, len(g.M), len(g.N), len(g.K))
				}
				g.Res = make([]int16, len(g.M)*len(g.N)*len(g.K))
				rowsSeen = make([]bool, len(g.N)*len(g.K))
			}
		case "r":
			if g == nil || g.Res == nil {
				return fmt.Errorf("row before grid %s's axes", gridName(g))
			}
			if len(f) != 3+len(g.M) {
				return fmt.Errorf("row: want n, k and %d values, got %d fields", len(g.M), len(f)-1)
			}
			n, err1 := strconv.ParseFloat(f[1], 64)
			k, err2 := strconv.ParseFloat(f[2], 64)
			i, j := indexOf(g.N, n), indexOf(g.K, k)
			if err1 != nil || err2 != nil || i < 0 || j < 0 {
				return fmt.Errorf("row: shape %s×%s is not on the grid's n and k axes", f[1], f[2])
			}
			if rowsSeen[i*len(g.K)+j] {
				return fmt.Errorf("row: shape %s×%s given twice", f[1], f[2])
			}
			rowsSeen[i*len(g.K)+j] = true
			base := (i*len(g.K) + j) * len(g.M)
			for c, s := range f[3:] {
				v, err := parseResidual(s)
				if err != nil {
					return fmt.Errorf("row %s×%s: %v", f[1], f[2], err)
				}
				g.Res[base+c] = v
			}
		default:
			return fmt.Errorf("unknown line kind %q: allowed: chip, grid, m, n, k, r", f[0])
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if err := complete(); err != nil {
		return "", nil, fmt.Errorf("%s:%d: %v", name, lines, err)
	}
	for _, g := range grids {
		if g.Res == nil {
			return "", nil, fmt.Errorf("%s: grid %s has no axes", name, g.Dtype)
		}
	}
	return chip, grids, nil
}

// readGridFile reads the lines every residual grid file shares — blank
// lines, # comments, one "chip NAME" line and "grid DTYPE" lines, each
// grid appended to *grids by newGrid once complete accepts the one before
// — and hands every other line's fields to body, the grid being the last
// of *grids. Errors name the file and line; lines is how many were read.
func readGridFile[G dtypeGrid](name string, data []byte, grids *[]G, newGrid func(dtype string) G,
	complete func() error, body func(f []string) error) (chip string, lines int, err error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := func(f []string) error {
		switch f[0] {
		case "chip":
			if len(f) != 2 || chip != "" {
				return errors.New("want one \"chip NAME\" line")
			}
			chip = f[1]
		case "grid":
			if len(f) != 2 || chip == "" {
				return errors.New("want \"grid DTYPE\" after the chip line")
			}
			if err := complete(); err != nil {
				return err
			}
			if gridFor(*grids, f[1]) != nil {
				return fmt.Errorf("grid %s given twice", f[1])
			}
			*grids = append(*grids, newGrid(f[1]))
		default:
			return body(f)
		}
		return nil
	}
	for sc.Scan() {
		lines++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		if err := line(strings.Fields(text)); err != nil {
			return "", lines, fmt.Errorf("%s:%d: %v", name, lines, err)
		}
	}
	if err := sc.Err(); err != nil {
		return "", lines, fmt.Errorf("%s: %v", name, err)
	}
	if chip == "" {
		return "", lines, fmt.Errorf("%s: no \"chip NAME\" line", name)
	}
	return chip, lines, nil
}

// lastOf is the last element of s, or nil.
func lastOf[G any](s []G) *G {
	if len(s) == 0 {
		return nil
	}
	return &s[len(s)-1]
}

// parseGridAxis reads a grid axis: ascending numbers ≥ 1 (none: nil).
func parseGridAxis(fields []string) ([]float64, error) {
	var xs []float64
	for _, s := range fields {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x >= 1) || math.IsInf(x, 0) || (len(xs) > 0 && x <= xs[len(xs)-1]) {
			return nil, fmt.Errorf("%q: want ascending numbers ≥ 1", s)
		}
		xs = append(xs, x)
	}
	return xs, nil
}

// parseResidual reads one stored residual: an int16.
func parseResidual(s string) (int16, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < math.MinInt16 || v > math.MaxInt16 {
		return 0, fmt.Errorf("value %q: want an integer in [%d, %d]", s, math.MinInt16, math.MaxInt16)
	}
	return int16(v), nil
}

func gridName(g *GEMMGrid) string {
	if g == nil {
		return "(none)"
	}
	return g.Dtype
}

func indexOf(axis []float64, x float64) int {
	i := sort.SearchFloat64s(axis, x)
	if i < len(axis) && axis[i] == x {
		return i
	}
	return -1
}

// loadGEMMGrids attaches every embedded grid file to its chip's laws.
func loadGEMMGrids(fsys fs.FS, byChip map[string]*Coefficients) error {
	return loadGridFiles(fsys, byChip, "coeffs/*.gemm-grid.txt", ParseGEMMGrids, func(c *Coefficients, grids []GEMMGrid) error {
		return attachGrids(c, "GEMM", &c.GEMMGrids, grids, func(dtype string) error { _, err := c.GEMMFor(dtype); return err })
	})
}

// loadGridFiles parses every embedded file matching pattern and hands its
// grids to attach with its chip's coefficients; errors name the file.
func loadGridFiles[G any](fsys fs.FS, byChip map[string]*Coefficients, pattern string,
	parse func(name string, data []byte) (string, []G, error), attach func(*Coefficients, []G) error) error {
	files, err := fs.Glob(fsys, pattern)
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		chip, grids, err := parse(path.Base(f), data)
		if err != nil {
			return err
		}
		c, ok := byChip[chip]
		if !ok {
			return fmt.Errorf("%s: chip %q has no coefficient file", f, chip)
		}
		if err := attach(c, grids); err != nil {
			return fmt.Errorf("%s: %v", f, err)
		}
	}
	return nil
}
