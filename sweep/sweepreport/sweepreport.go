// Package sweepreport turns a sweep's results store (package sweep/store)
// into one report (package report): the Pareto chart of throughput per GPU
// against interactivity, TTFT, TPOT, output throughput and E2E latency
// against the load, one series per configuration, and a table of every
// point. It reads only the store's table, so the report of a store is the
// same bytes however the sweep was run: whole, resumed, or sharded and
// merged.
package sweepreport

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"blis/plan"
	"blis/report"
	"blis/scenario"
	"blis/sweep/store"
)

// metricCols are the store columns the report reads.
var metricCols = []string{
	"gpus", "p50_tpot_ms", "total_token_throughput_per_gpu", "output_throughput",
	"mean_ttft_ms", "p50_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "p90_tpot_ms", "p99_tpot_ms", "p50_e2el_ms", "p90_e2el_ms", "p99_e2el_ms",
}

// tableMetrics are the metric columns of the points table, with headings
// and the decimals they are shown with.
var tableMetrics = []struct {
	col, head string
	prec      int
}{
	{"gpus", "GPUs", 0},
	{"output_throughput", "output tok/s", 1},
	{"total_token_throughput_per_gpu", "tok/s/GPU", 1},
	{"interactivity", "tok/s/user", 1},
	{"mean_ttft_ms", "mean TTFT ms", 2},
	{"p90_ttft_ms", "p90 TTFT ms", 2},
	{"mean_tpot_ms", "mean TPOT ms", 2},
	{"p99_tpot_ms", "p99 TPOT ms", 2},
	{"p99_e2el_ms", "p99 E2EL ms", 1},
	{"failed", "failed", 0},
}

// point is one store row as the report reads it.
type point struct {
	index              int
	id, status, reason string
	values             []string  // by axis key (t.Keys), as text
	num                []float64 // by axis key, NaN where not a number
	m                  map[string]float64
}

// Load reads the store in dir and builds its report.
func Load(dir string) (*report.Document, error) {
	t, err := store.Load(dir)
	if err != nil {
		return nil, err
	}
	doc, err := Build(t)
	if ie, ok := err.(*scenario.InputError); ok && ie.File == "" {
		ie.File = dir
	}
	return doc, err
}

// Build is the report of a store: t as store.Load reads it. Its bytes
// depend only on t, never on where the store is.
func Build(t *store.Table) (*report.Document, error) {
	pts, err := readPoints(t)
	if err != nil {
		return nil, err
	}
	xKey, xAt, byLoad := xAxis(t, pts)
	var cfgAt []int // the axes naming a configuration: all but x
	for i := range t.Keys {
		if i != xAt {
			cfgAt = append(cfgAt, i)
		}
	}
	// A configuration is named by the axes whose value varies; the rest
	// are common to every point, with the scenario settings every point
	// shares.
	var varying []int
	for _, i := range cfgAt {
		if distinct(pts, i) > 1 {
			varying = append(varying, i)
		}
	}
	common := commonSettings(t, pts, xKey)

	cfgName := func(p point) string {
		var kv []string
		for _, i := range varying {
			kv = append(kv, t.Keys[i]+"="+p.values[i])
		}
		if len(kv) == 0 {
			return "all points"
		}
		return strings.Join(kv, " ")
	}
	// Configurations in first-seen (index) order.
	var configs []string
	byCfg := map[string][]point{}
	for _, p := range pts {
		if p.status != store.StatusOK {
			continue
		}
		n := cfgName(p)
		if _, ok := byCfg[n]; !ok {
			configs = append(configs, n)
		}
		byCfg[n] = append(byCfg[n], p)
	}
	info := func(p point) []report.KV {
		kv := []report.KV{{Key: "point", Value: strconv.Itoa(p.index) + " (" + p.id + ")"}}
		for i, k := range t.Keys {
			kv = append(kv, report.KV{Key: k, Value: p.values[i]})
		}
		for _, m := range tableMetrics {
			kv = append(kv, report.KV{Key: m.head, Value: format(p.m[m.col], m.prec)})
		}
		return kv
	}
	label := func(p point) string {
		var kv []string
		for i, k := range t.Keys {
			kv = append(kv, k+"="+p.values[i])
		}
		return strings.Join(kv, " ")
	}

	// 1. Throughput per GPU against interactivity, InferenceX's chart.
	var runs []plan.Run
	for _, n := range configs {
		for _, p := range byCfg[n] {
			runs = append(runs, plan.Run{Config: n, X: p.m["interactivity"], Y: p.m["total_token_throughput_per_gpu"], Label: label(p), Info: info(p)})
		}
	}
	pareto := plan.ParetoChart(report.Chart{ID: "pareto", Title: "Throughput per GPU vs interactivity",
		XLabel: "Interactivity (tok/s/user = 1000 / median TPOT)", YLabel: "Throughput per GPU (total tok/s/GPU)", Common: common}, runs)

	// 2–5. Each metric against the load (or the first numeric axis).
	xLabel, against := "point index", "against the point index (the grid has no numeric axis)"
	if xKey != "" {
		xLabel = xKey
		against = "against " + xKey
		if !byLoad {
			against += " (the grid has no load axis: its first numeric axis)"
		}
	}
	logX := spansDecade(pts, xAt)
	xOf := func(p point) float64 {
		if xAt < 0 {
			return float64(p.index)
		}
		return p.num[xAt]
	}
	vsLoad := func(id, title, yLabel string, stats ...[2]string) report.Chart {
		title, yLabel = strings.ReplaceAll(title, "%p", stats[0][1]), strings.ReplaceAll(yLabel, "%p", stats[0][1])
		c := report.Chart{ID: id, Title: title + " " + against, XLabel: xLabel, YLabel: yLabel, LogX: logX, Common: common}
		for ci, n := range configs {
			ps := slices.Clone(byCfg[n])
			slices.SortStableFunc(ps, func(a, b point) int { return cmp.Compare(xOf(a), xOf(b)) })
			for si, st := range stats {
				s := report.Series{Name: n, Color: report.Palette[ci%len(report.Palette)]}
				if len(stats) > 1 {
					s.Name += " — " + st[1]
				}
				if si > 0 {
					s.Style = report.Dashed
				}
				for _, p := range ps {
					s.Points = append(s.Points, report.Point{X: xOf(p), Y: p.m[st[0]], Label: label(p), Info: info(p)})
				}
				c.Series = append(c.Series, s)
			}
		}
		return c
	}
	charts := []report.Chart{
		vsLoad("ttft", "TTFT (%p, mean dashed)", "TTFT (ms)", percentile(pts, "ttft", "p90", "p99"), [2]string{"mean_ttft_ms", "mean"}),
		vsLoad("tpot", "TPOT (%p, mean dashed)", "TPOT (ms)", percentile(pts, "tpot", "p99", "p90"), [2]string{"mean_tpot_ms", "mean"}),
		vsLoad("throughput", "Output throughput", "Output throughput (tok/s)", [2]string{"output_throughput", "output"}),
		vsLoad("e2el", "E2E latency (%p)", "%p E2E latency (ms)", percentile(pts, "e2el", "p99", "p90")),
	}

	ok, infeasible, unserved := 0, 0, 0
	for _, p := range pts {
		switch p.status {
		case store.StatusOK:
			ok++
		case store.StatusInfeasible:
			infeasible++
		default:
			unserved++
		}
	}
	summary := fmt.Sprintf("%d of the grid's %d points stored: %d ok, %d infeasible, %d unserved.", len(pts), t.Info.Points, ok, infeasible, unserved)
	if t.Info.Shard != "" {
		summary = "Shard " + t.Info.Shard + ". " + summary
	}
	cfgText := "One series per configuration: the axis settings that vary, but the load."
	if len(configs) <= 1 {
		cfgText = "One configuration: every point differs only in the load."
	}

	return &report.Document{Title: t.Info.Name, Subtitle: summary, Sections: []report.Section{
		{
			Heading: "Pareto frontier",
			Text:    cfgText + " x = 1000 / median TPOT (InferenceX's median_intvty), y = total (input + output) tokens/s per GPU; the frontier joins the points no other point beats on both axes. Infeasible and unserved points are only in the table below.",
			Charts:  []report.Chart{pareto},
		},
		{Heading: "Latency and throughput " + against, Text: offAxis(pts, xKey, xAt), Charts: charts},
		{Heading: "Points", Text: "Every stored point, infeasible and unserved ones with the reason.", Table: pointsTable(t, pts)},
		{Heading: "Grid file", Table: gridTable(t.Info.Text)},
	}}, nil
}

// readPoints reads the store's rows; a store without the columns the
// report needs is not one this BLIS wrote.
func readPoints(t *store.Table) ([]point, error) {
	at := map[string]int{}
	for _, c := range append([]string{"idx", "id", "status", "reason", "failed", "interactivity"}, metricCols...) {
		i := t.Col(c)
		if i < 0 {
			return nil, &scenario.InputError{Msg: "not a sweep store of this BLIS: no column " + c}
		}
		at[c] = i
	}
	var pts []point
	for _, r := range t.Rows {
		p := point{index: int(store.Num(r[at["idx"]])), id: store.Text(r[at["id"]]), status: store.Text(r[at["status"]]), reason: store.Text(r[at["reason"]]), m: map[string]float64{}}
		for _, k := range t.Keys {
			v := r[t.Col(k)]
			p.values = append(p.values, store.Text(v))
			p.num = append(p.num, store.Num(v))
		}
		for c, i := range at {
			if c != "idx" && c != "id" && c != "status" && c != "reason" {
				p.m[c] = store.Num(r[i])
			}
		}
		if p.status != store.StatusOK {
			for c := range p.m {
				p.m[c] = math.NaN()
			}
		}
		pts = append(pts, p)
	}
	return pts, nil
}

// percentile is the column and name of the percentile a chart draws for
// metric (ttft, tpot, e2el): the first of want that some ok point has, else
// the median (every run has one); want[0] when no point has any. A grid's
// metric-percentiles may leave p90 or p99 out (vllm bench serve computes
// only those it is asked for; the store holds NULL for the rest), and a
// chart of nothing but NULLs would show empty series.
func percentile(pts []point, metric string, want ...string) [2]string {
	for _, p := range append(want, "p50") {
		col := p + "_" + metric + "_ms"
		for _, pt := range pts {
			if v := pt.m[col]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				return [2]string{col, p}
			}
		}
	}
	return [2]string{want[0] + "_" + metric + "_ms", want[0]}
}

// xAxis picks the charts' x: the load axis when the grid has one, else the
// first axis whose every value is a number and that has two or more (an
// axis of one value would stack every point at one x); at is its place in
// t.Keys (-1: none, the point index is x).
func xAxis(t *store.Table, pts []point) (key string, at int, load bool) {
	for i, k := range t.Keys {
		if slices.Contains(plan.LoadKeys, k) {
			return k, i, true
		}
	}
	for i, k := range t.Keys {
		numeric := distinct(pts, i) > 1
		for _, p := range pts {
			numeric = numeric && !math.IsNaN(p.num[i])
		}
		if numeric {
			return k, i, false
		}
	}
	return "", -1, false
}

// offAxis says which ok points the charts against the load cannot place:
// those whose x is infinite, as vllm bench serve's request-rate inf (send
// every request at once) is. The tables list them.
func offAxis(pts []point, xKey string, xAt int) string {
	if xAt < 0 {
		return ""
	}
	var vals []string
	n := 0
	for _, p := range pts {
		if p.status == store.StatusOK && math.IsInf(p.num[xAt], 0) {
			n++
			if !slices.Contains(vals, p.values[xAt]) {
				vals = append(vals, p.values[xAt])
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d ok points at %s=%s have no place on the x axis: they are in the charts' data tables and the points table, not on the charts.", n, xKey, strings.Join(vals, ", "))
}

// spansDecade reports whether axis at's positive values span 10× or more:
// the charts then start with a log x axis.
func spansDecade(pts []point, at int) bool {
	if at < 0 {
		return false
	}
	lo, hi := math.Inf(1), 0.0
	for _, p := range pts {
		if v := p.num[at]; v > 0 && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return hi >= 10*lo
}

func distinct(pts []point, at int) int {
	seen := map[string]bool{}
	for _, p := range pts {
		seen[p.values[at]] = true
	}
	return len(seen)
}

// commonSettings are the scenario settings every stored point shares (the
// top-level keys of the points' scenario files with one value in all of
// them), but the x axis and the seed (each point has its own).
func commonSettings(t *store.Table, pts []point, xKey string) []report.KV {
	at := t.Col("scenario")
	if at < 0 || len(t.Rows) == 0 {
		return nil
	}
	var keys []string
	vals := map[string]string{}
	shared := map[string]bool{}
	for ri, r := range t.Rows {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(store.Text(r[at])), &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return nil
		}
		m := doc.Content[0]
		here := map[string]string{}
		for i := 0; i+1 < len(m.Content); i += 2 {
			here[m.Content[i].Value] = nodeText(m.Content[i+1])
		}
		if ri == 0 {
			for i := 0; i+1 < len(m.Content); i += 2 {
				k := m.Content[i].Value
				keys = append(keys, k)
				vals[k], shared[k] = here[k], true
			}
			continue
		}
		for _, k := range keys {
			if v, ok := here[k]; !ok || v != vals[k] {
				shared[k] = false
			}
		}
	}
	var out []report.KV
	for _, k := range keys {
		if shared[k] && k != xKey && k != "seed" {
			out = append(out, report.KV{Key: k, Value: vals[k]})
		}
	}
	return out
}

// nodeText is a YAML value on one line: a scalar as written, a structure
// in flow style.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	c := *n
	c.Style = yaml.FlowStyle
	b, err := yaml.Marshal(&c)
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// pointsTable lists every stored point: index, ID, status, reason, the
// axis values and the metrics ("-" where a point has none).
func pointsTable(t *store.Table, pts []point) *report.Table {
	cols := []string{"point", "id", "status", "reason"}
	cols = append(cols, t.Keys...)
	for _, m := range tableMetrics {
		cols = append(cols, m.head)
	}
	tbl := &report.Table{Columns: cols}
	for _, p := range pts {
		row := []string{strconv.Itoa(p.index), p.id, p.status, p.reason}
		row = append(row, p.values...)
		for _, m := range tableMetrics {
			row = append(row, format(p.m[m.col], m.prec))
		}
		tbl.Rows = append(tbl.Rows, row)
	}
	return tbl
}

// gridTable is the grid file, one row per line; leading spaces become
// no-break spaces so the YAML's indentation survives HTML's whitespace
// collapsing.
func gridTable(src string) *report.Table {
	tbl := &report.Table{Columns: []string{"line", "grid file"}}
	for i, l := range strings.Split(strings.TrimSuffix(src, "\n"), "\n") {
		trimmed := strings.TrimLeft(l, " ")
		tbl.Rows = append(tbl.Rows, []string{strconv.Itoa(i + 1), strings.Repeat("\u00a0", len(l)-len(trimmed)) + trimmed})
	}
	return tbl
}

// format is a metric for the table and hovers: prec decimals, "-" when
// the point has none.
func format(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
