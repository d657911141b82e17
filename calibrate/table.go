package calibrate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Table is one parquet file read into memory column by column: numeric
// columns as float64 (NaN for nulls), text columns as strings.
type Table struct {
	Path string
	Rows int
	cols map[string]*column
	Cols []string // column names in file order
}

type column struct {
	num []float64
	str []string
}

// ReadTable reads a flat parquet file (every column a leaf of the root).
func ReadTable(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	leaves := pf.Schema().Columns()
	t := &Table{Path: path, cols: map[string]*column{}}
	isStr := make([]bool, len(leaves))
	byIdx := make([]*column, len(leaves))
	for i, p := range leaves {
		if len(p) != 1 {
			return nil, fmt.Errorf("%s: nested column %v is not supported", path, p)
		}
		leaf, _ := pf.Schema().Lookup(p...)
		k := leaf.Node.Type().Kind()
		isStr[i] = k == parquet.ByteArray || k == parquet.FixedLenByteArray
		c := &column{}
		byIdx[i] = c
		t.cols[p[0]] = c
		t.Cols = append(t.Cols, p[0])
	}
	buf := make([]parquet.Row, 256)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, row := range buf[:n] {
				seen := 0
				for _, v := range row {
					ci := v.Column()
					if ci < 0 || ci >= len(byIdx) {
						continue
					}
					seen++
					c := byIdx[ci]
					if isStr[ci] {
						if v.IsNull() {
							c.str = append(c.str, "")
						} else {
							c.str = append(c.str, string(v.ByteArray()))
						}
						continue
					}
					c.num = append(c.num, numeric(v))
				}
				if seen != len(byIdx) {
					rows.Close()
					return nil, fmt.Errorf("%s: row %d has %d values for %d columns", path, t.Rows, seen, len(byIdx))
				}
				t.Rows++
			}
			if err != nil {
				rows.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("%s: %v", path, err)
			}
		}
	}
	return t, nil
}

func numeric(v parquet.Value) float64 {
	if v.IsNull() {
		return math.NaN()
	}
	switch v.Kind() {
	case parquet.Boolean:
		if v.Boolean() {
			return 1
		}
		return 0
	case parquet.Int32:
		return float64(v.Int32())
	case parquet.Int64:
		return float64(v.Int64())
	case parquet.Float:
		return float64(v.Float())
	case parquet.Double:
		return v.Double()
	}
	return math.NaN()
}

// Num returns a numeric column, or an error naming the file and column.
func (t *Table) Num(name string) ([]float64, error) {
	c, ok := t.cols[name]
	if !ok {
		return nil, fmt.Errorf("%s: no column %q (have %v)", t.Path, name, t.Cols)
	}
	if c.str != nil || (c.num == nil && t.Rows > 0) {
		return nil, fmt.Errorf("%s: column %q is not numeric", t.Path, name)
	}
	return c.num, nil
}

// Str returns a text column, or an error naming the file and column.
func (t *Table) Str(name string) ([]string, error) {
	c, ok := t.cols[name]
	if !ok {
		return nil, fmt.Errorf("%s: no column %q (have %v)", t.Path, name, t.Cols)
	}
	if c.num != nil || (c.str == nil && t.Rows > 0) {
		return nil, fmt.Errorf("%s: column %q is not text", t.Path, name)
	}
	return c.str, nil
}
