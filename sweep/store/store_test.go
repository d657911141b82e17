package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"blis/scenario"
	"blis/sweep/grid"
)

func testGrid(t *testing.T, text string) (*grid.Grid, []grid.Point) {
	t.Helper()
	g, err := grid.Parse("g.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := g.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return g, pts
}

const gridText = "name: s\naxes:\n  max-num-seqs: [8, 16, 32]\nload: {request-rate: [1.5, inf]}\n"

func record(p grid.Point) Record {
	if p.Index%3 == 0 {
		return Record{Point: p, Status: StatusInfeasible, Reason: "does not fit"}
	}
	m := make([]any, len(MetricColumns))
	for i := range m {
		m[i] = float64(p.Index) + float64(i)/10
	}
	m[len(m)-4] = nil // no goodput
	return Record{Point: p, Status: StatusOK, Metrics: m, JSON: []byte(`{"point":` + p.ID + `}`)}
}

func fill(t *testing.T, dir string, g *grid.Grid, pts []grid.Point, shard Shard, order []int) {
	t.Helper()
	st, err := Open(dir, g, len(pts), shard)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range order {
		if shard.Has(i) {
			if err := st.Put(record(pts[i])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := Finalize(dir); err != nil {
		t.Fatal(err)
	}
}

// Points stored in any order, whole or as shards merged, give the same
// database file.
func TestCanonical(t *testing.T) {
	g, pts := testGrid(t, gridText)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	fill(t, a, g, pts, Shard{}, []int{0, 1, 2, 3, 4, 5})
	fill(t, b, g, pts, Shard{}, []int{5, 3, 1, 0, 2, 4})
	var shards []string
	for i := range 2 {
		d := filepath.Join(dir, "shard", string(rune('0'+i)))
		fill(t, d, g, pts, Shard{Index: i, Count: 2}, []int{4, 2, 0, 1, 3, 5})
		shards = append(shards, d)
	}
	m := filepath.Join(dir, "m")
	if _, err := Merge(m, shards); err != nil {
		t.Fatal(err)
	}
	da, _ := os.ReadFile(filepath.Join(a, DBName))
	for _, other := range []string{b, m} {
		d, _ := os.ReadFile(filepath.Join(other, DBName))
		if !bytes.Equal(da, d) {
			t.Errorf("%s's database differs from %s's", other, a)
		}
	}
	tab, err := Load(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 6 || strings.Join(tab.Keys, ",") != "max-num-seqs,request-rate" {
		t.Fatalf("%d rows, keys %v", len(tab.Rows), tab.Keys)
	}
	// Typed axis columns: integers, reals, and inf as text.
	if tab.Rows[0][tab.Col("max-num-seqs")] != int64(8) || tab.Rows[0][tab.Col("request-rate")] != 1.5 || tab.Rows[1][tab.Col("request-rate")] != "inf" {
		t.Errorf("row 0-1: %v %v", tab.Rows[0], tab.Rows[1])
	}
	if tab.Rows[1][tab.Col("request_goodput")] != nil || tab.Rows[0][tab.Col("completed")] != nil {
		t.Error("NULLs not kept")
	}
}

func TestOpenRefusesOtherGridOrShard(t *testing.T) {
	g, pts := testGrid(t, gridText)
	dir := t.TempDir()
	fill(t, dir, g, pts, Shard{Index: 0, Count: 2}, []int{0})
	g2, pts2 := testGrid(t, gridText+"# changed\n")
	for _, c := range []struct {
		g     *grid.Grid
		shard Shard
		want  string
	}{
		{g2, Shard{Index: 0, Count: 2}, "another grid"},
		{g, Shard{Index: 1, Count: 2}, "holds shard 0/2 of the grid, not 1/2"},
		{g, Shard{}, "not the whole grid"},
	} {
		_, err := Open(dir, c.g, len(pts2), c.shard)
		var ie *scenario.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func TestMergeConflict(t *testing.T) {
	g, pts := testGrid(t, gridText)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	fill(t, a, g, pts, Shard{}, []int{1})
	st, err := Open(b, g, len(pts), Shard{})
	if err != nil {
		t.Fatal(err)
	}
	r := record(pts[1])
	r.Metrics[0] = 99.0
	if err := st.Put(r); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err = Merge(filepath.Join(dir, "m"), []string{a, b})
	if err == nil || !strings.Contains(err.Error(), "point 1 differs") {
		t.Errorf("got %v", err)
	}
}

func TestShardHas(t *testing.T) {
	s := Shard{Index: 1, Count: 3}
	var got []int
	for i := range 8 {
		if s.Has(i) {
			got = append(got, i)
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 7 {
		t.Errorf("%v", got)
	}
	if !(Shard{}).Has(5) {
		t.Error("the zero shard holds every point")
	}
}

// A kill between creating the database file and committing its tables
// leaves an empty database: the next run starts the store afresh. A
// database of something else is refused as bad input (--out).
func TestOpenEmptyOrForeignDatabase(t *testing.T) {
	g, pts := testGrid(t, gridText)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DBName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fill(t, dir, g, pts, Shard{}, []int{0, 1})
	if tab, err := Load(dir); err != nil || len(tab.Rows) != 2 {
		t.Fatalf("after an empty database: %v", err)
	}

	other := t.TempDir()
	db, err := openDB(filepath.Join(other, DBName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(other, g, len(pts), Shard{})
	var ie *scenario.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "not a sweep store") {
		t.Errorf("foreign database: got %v, want an input error", err)
	}
}
