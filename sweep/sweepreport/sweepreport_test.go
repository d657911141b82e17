package sweepreport

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"blis/report"
	"blis/scenario"
	"blis/sweep/store"
)

// table is a synthetic store table: axis keys, then one row per point of
// (status, axis values, p50 TPOT, output tok/s); the other metrics derive
// from them (interactivity = 1000 / TPOT, as the store writes it).
func table(keys []string, rows [][]any) *store.Table {
	cols := []string{"idx", "id", "status", "reason", "seed"}
	cols = append(cols, keys...)
	cols = append(cols, "scenario", "result")
	cols = append(cols, store.MetricColumns...)
	t := &store.Table{Info: store.Info{Name: "g", Points: len(rows), Text: "name: g\naxes:\n  x: [1]\n"}, Keys: keys, Columns: cols}
	for i, r := range rows {
		row := make([]any, len(cols))
		row[0], row[1], row[2], row[3], row[4] = int64(i), "id"+string(rune('a'+i)), r[0], "", int64(7)
		for k := range keys {
			row[5+k] = r[1+k]
		}
		row[5+len(keys)] = "model: m\nseed: " + string(rune('0'+i)) + "\n"
		if r[0] != store.StatusOK {
			row[3] = "cannot be"
			t.Rows = append(t.Rows, row)
			continue
		}
		tpot, out := r[1+len(keys)].(float64), r[2+len(keys)].(float64)
		for _, c := range store.MetricColumns {
			v := any(tpot)
			switch c {
			case "gpus":
				v = int64(1)
			case "completed", "failed", "preemptions", "kv_cache_tokens":
				v = int64(0)
			case "output_throughput", "total_token_throughput_per_gpu", "output_throughput_per_gpu":
				v = out
			case "interactivity":
				v = 1000 / tpot
			}
			row[slices.Index(cols, c)] = v
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func chart(t *testing.T, doc *report.Document, id string) report.Chart {
	t.Helper()
	for _, s := range doc.Sections {
		for _, c := range s.Charts {
			if c.ID == id {
				return c
			}
		}
	}
	t.Fatalf("no chart %q", id)
	return report.Chart{}
}

func names(c report.Chart) []string {
	var out []string
	for _, s := range c.Series {
		out = append(out, s.Name)
	}
	return out
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name        string
		keys        []string
		rows        [][]any
		pareto, e2e []string // series names
		title       string   // in the e2el chart's title
		logX        bool
		common      []report.KV
	}{
		{
			name: "configurations by the varying axes, load on x",
			keys: []string{"tensor-parallel-size", "dtype", "max-concurrency"},
			rows: [][]any{
				{store.StatusOK, int64(1), "bf16", int64(1), 10.0, 100.0},
				{store.StatusOK, int64(1), "bf16", int64(64), 20.0, 800.0},
				{store.StatusOK, int64(2), "bf16", int64(1), 8.0, 90.0},
				{store.StatusInfeasible, int64(3), "bf16", int64(1)},
			},
			pareto: []string{"tensor-parallel-size=1", "tensor-parallel-size=2", "Pareto frontier"},
			e2e:    []string{"tensor-parallel-size=1", "tensor-parallel-size=2"},
			title:  "against max-concurrency",
			logX:   true,
			common: []report.KV{{Key: "model", Value: "m"}},
		},
		{
			name: "no load axis: the first numeric axis, a narrow span",
			keys: []string{"dtype", "max-num-seqs"},
			rows: [][]any{
				{store.StatusOK, "bf16", int64(64), 10.0, 100.0},
				{store.StatusOK, "fp8", int64(128), 9.0, 120.0},
				{store.StatusUnserved, "fp8", int64(256)},
			},
			pareto: []string{"dtype=bf16", "dtype=fp8", "Pareto frontier"},
			e2e:    []string{"dtype=bf16", "dtype=fp8"},
			title:  "against max-num-seqs (the grid has no load axis: its first numeric axis)",
			common: []report.KV{{Key: "model", Value: "m"}},
		},
		{
			name: "no load axis: a numeric axis of one value is not x",
			keys: []string{"max-model-len", "dtype", "max-num-seqs"},
			rows: [][]any{
				{store.StatusOK, int64(4096), "bf16", int64(64), 10.0, 100.0},
				{store.StatusOK, int64(4096), "fp8", int64(128), 9.0, 120.0},
			},
			pareto: []string{"dtype=bf16", "dtype=fp8", "Pareto frontier"},
			e2e:    []string{"dtype=bf16", "dtype=fp8"},
			title:  "against max-num-seqs (the grid has no load axis: its first numeric axis)",
			common: []report.KV{{Key: "model", Value: "m"}},
		},
		{
			name: "no numeric axis: the point index",
			keys: []string{"dtype"},
			rows: [][]any{
				{store.StatusOK, "bf16", 10.0, 100.0},
				{store.StatusOK, "fp8", 9.0, 120.0},
			},
			pareto: []string{"dtype=bf16", "dtype=fp8", "Pareto frontier"},
			e2e:    []string{"dtype=bf16", "dtype=fp8"},
			title:  "against the point index",
			common: []report.KV{{Key: "model", Value: "m"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := table(tc.keys, tc.rows)
			doc, err := Build(tab)
			if err != nil {
				t.Fatal(err)
			}
			p := chart(t, doc, "pareto")
			if got := names(p); !slices.Equal(got, tc.pareto) {
				t.Errorf("pareto series %q, want %q", got, tc.pareto)
			}
			e := chart(t, doc, "e2el")
			if got := names(e); !slices.Equal(got, tc.e2e) {
				t.Errorf("e2el series %q, want %q", got, tc.e2e)
			}
			if !strings.Contains(e.Title, tc.title) || e.LogX != tc.logX {
				t.Errorf("e2el title %q log %v, want %q log %v", e.Title, e.LogX, tc.title, tc.logX)
			}
			if !slices.Equal(e.Common, tc.common) {
				t.Errorf("common %v, want %v", e.Common, tc.common)
			}
			// Two statistics per configuration, the mean dashed in the
			// same colour.
			tt := chart(t, doc, "ttft")
			if len(tt.Series) != 2*len(tc.e2e) || tt.Series[1].Style != report.Dashed || tt.Series[0].Color != tt.Series[1].Color {
				t.Errorf("ttft series %+v", tt.Series)
			}
			ok := 0
			for _, r := range tc.rows {
				if r[0] == store.StatusOK {
					ok++
				}
			}
			drawn := 0
			for _, s := range e.Series {
				drawn += len(s.Points)
			}
			if drawn != ok {
				t.Errorf("e2el draws %d points, want the %d ok ones", drawn, ok)
			}
			// Every point in the table, the others with their reason.
			var tbl *report.Table
			for _, s := range doc.Sections {
				if s.Heading == "Points" {
					tbl = s.Table
				}
			}
			if tbl == nil || len(tbl.Rows) != len(tc.rows) {
				t.Fatalf("points table %+v", tbl)
			}
			for i, r := range tc.rows {
				if r[0] != store.StatusOK && (tbl.Rows[i][2] != r[0] || tbl.Rows[i][3] != "cannot be") {
					t.Errorf("row %d: %q", i, tbl.Rows[i])
				}
			}
			if doc.Title != "g" || !strings.Contains(doc.Subtitle, "points stored") {
				t.Errorf("title %q subtitle %q", doc.Title, doc.Subtitle)
			}
			// The same table gives the same bytes.
			var a, b bytes.Buffer
			doc2, _ := Build(tab)
			if report.HTML(&a, doc) != nil || report.HTML(&b, doc2) != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("two builds of one table differ")
			}
		})
	}
}

// The frontier is over every configuration; the Pareto y is throughput
// per GPU, x the interactivity of the median TPOT.
func TestBuildPareto(t *testing.T) {
	tab := table([]string{"tensor-parallel-size", "max-concurrency"}, [][]any{
		{store.StatusOK, int64(1), int64(1), 10.0, 100.0}, // 100 tok/s/user
		{store.StatusOK, int64(1), int64(8), 20.0, 800.0}, // 50
		{store.StatusOK, int64(2), int64(1), 8.0, 90.0},   // 125
		{store.StatusOK, int64(2), int64(8), 25.0, 700.0}, // 40: dominated
	})
	doc, err := Build(tab)
	if err != nil {
		t.Fatal(err)
	}
	p := chart(t, doc, "pareto")
	f := p.Series[len(p.Series)-1]
	var xs []float64
	for _, pt := range f.Points {
		xs = append(xs, math.Round(pt.X))
	}
	if f.Style != report.Frontier || !slices.Equal(xs, []float64{50, 100, 125}) {
		t.Errorf("frontier %+v", f)
	}
}

func TestBuildBadStore(t *testing.T) {
	tab := table([]string{"max-concurrency"}, [][]any{{store.StatusOK, int64(1), 10.0, 100.0}})
	tab.Columns[slices.Index(tab.Columns, "p99_e2el_ms")] = "other"
	_, err := Build(tab)
	var ie *scenario.InputError
	if err == nil || !strings.Contains(err.Error(), "no column p99_e2el_ms") || !errors.As(err, &ie) {
		t.Errorf("err %v", err)
	}
}

func TestGridTableKeepsIndentation(t *testing.T) {
	tbl := gridTable("name: g\naxes:\n  x: [1]\n")
	if len(tbl.Rows) != 3 || tbl.Rows[2][1] != "\u00a0\u00a0x: [1]" || tbl.Rows[0][0] != "1" {
		t.Errorf("%q", tbl.Rows)
	}
}

// A grid whose metric-percentiles leave p90 or p99 out stores NULL for
// them: each chart draws the percentile the points have (p99 for TTFT's
// missing p90, p90 for TPOT's and E2EL's missing p99, else the median)
// and its title and series say which.
func TestBuildMissingPercentiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		null []string
		want map[string]string // chart id: the percentile drawn
	}{
		{"every percentile", nil, map[string]string{"ttft": "p90", "tpot": "p99", "e2el": "p99"}},
		{"metric-percentiles: 99", []string{"p90_ttft_ms", "p90_tpot_ms", "p90_e2el_ms"}, map[string]string{"ttft": "p99", "tpot": "p99", "e2el": "p99"}},
		{"metric-percentiles: 90", []string{"p99_ttft_ms", "p99_tpot_ms", "p99_e2el_ms"}, map[string]string{"ttft": "p90", "tpot": "p90", "e2el": "p90"}},
		{"metric-percentiles: 50", []string{"p90_ttft_ms", "p90_tpot_ms", "p90_e2el_ms", "p99_ttft_ms", "p99_tpot_ms", "p99_e2el_ms"}, map[string]string{"ttft": "p50", "tpot": "p50", "e2el": "p50"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := table([]string{"tensor-parallel-size", "max-concurrency"}, [][]any{
				{store.StatusOK, int64(1), int64(1), 10.0, 100.0},
				{store.StatusOK, int64(1), int64(8), 20.0, 800.0},
				{store.StatusInfeasible, int64(3), int64(1)},
			})
			for _, c := range tc.null {
				for _, r := range tab.Rows {
					r[tab.Col(c)] = nil
				}
			}
			doc, err := Build(tab)
			if err != nil {
				t.Fatal(err)
			}
			for id, p := range tc.want {
				c := chart(t, doc, id)
				if !strings.Contains(c.Title, "("+p) || !strings.HasSuffix(c.Series[0].Name, " — "+p) && id != "e2el" {
					t.Errorf("%s: title %q, series %q; want %s", id, c.Title, names(c), p)
				}
				if len(c.Series[0].Points) != 2 {
					t.Errorf("%s: %s draws %d points, want 2", id, p, len(c.Series[0].Points))
				}
				for _, pt := range c.Series[0].Points {
					if math.IsNaN(pt.Y) {
						t.Errorf("%s: %s draws NULL", id, p)
					}
				}
			}
		})
	}
}

// request-rate inf (every request at once) has no place on the load
// axis: the section says which points the charts leave off.
func TestBuildInfiniteLoad(t *testing.T) {
	tab := table([]string{"tensor-parallel-size", "request-rate"}, [][]any{
		{store.StatusOK, int64(1), int64(1), 10.0, 100.0},
		{store.StatusOK, int64(1), "inf", 20.0, 800.0},
		{store.StatusOK, int64(2), "inf", 20.0, 800.0},
		{store.StatusInfeasible, int64(3), "inf"},
	})
	doc, err := Build(tab)
	if err != nil {
		t.Fatal(err)
	}
	want := "2 ok points at request-rate=inf have no place on the x axis"
	if s := doc.Sections[1]; !strings.Contains(s.Text, want) {
		t.Errorf("section %q text %q, want %q", s.Heading, s.Text, want)
	}
	tab = table([]string{"request-rate"}, [][]any{{store.StatusOK, int64(1), 10.0, 100.0}})
	if doc, err = Build(tab); err != nil || doc.Sections[1].Text != "" {
		t.Errorf("finite load: text %q, err %v", doc.Sections[1].Text, err)
	}
}
