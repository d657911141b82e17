package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"blis/metrics"
	"blis/plan"
	"blis/report"
	"blis/scenario"
	"blis/sweep/grid"
	"blis/sweep/store"
)

const statusOK = "ok"

// loadKeys are the load axis's keys: a configuration is a point's settings
// without them.
var loadKeys = plan.LoadKeys

type paretoPoint struct {
	Index  int    `json:"index"` // the grid point's place in the expansion
	ID     string `json:"id"`
	Config string `json:"config"` // the axis values but the load's
	Load   string `json:"load"`   // e.g. max-concurrency=64
	// Status is ok, infeasible (the deployment cannot exist) or unserved
	// (it ran and served nothing); Reason says why a point is not ok, and
	// its numbers are then 0.
	Status            string  `json:"status"`
	Reason            string  `json:"reason,omitempty"`
	GPUs              int     `json:"gpus,omitempty"`
	MedianTPOTMs      float64 `json:"median_tpot_ms,omitempty"`
	Interactivity     float64 `json:"median_intvty"`
	TputPerGPU        float64 `json:"tput_per_gpu"`
	OutputTputPerGPU  float64 `json:"output_tput_per_gpu"`
	RequestThroughput float64 `json:"request_throughput,omitempty"`
	Failed            int     `json:"failed,omitempty"`
	Frontier          bool    `json:"frontier"`
}

type paretoResult struct {
	Grid   string        `json:"grid"`
	Name   string        `json:"name"`
	Y      string        `json:"y"`
	Points []paretoPoint `json:"points"`
}

func newPlanParetoCmd(stdout, stderr io.Writer) *cobra.Command {
	var yAxis, htmlFile, svgFile, pngFile string
	var asJSON, force bool
	var maxPoints, jobs int
	cmd := &cobra.Command{
		Use:   "pareto GRID.yaml|STORE_DIR",
		Short: "Throughput per GPU against interactivity, one curve per configuration, with the Pareto frontier",
		Long: `Run every point of a sweep grid (the grid file of blis sweep: axes over any
scenario key, a load axis of max-concurrency or request-rate values) and
draw it as InferenceX draws its frontiers:
  x: interactivity, tokens/s per user = 1000 / median TPOT (ms): InferenceX's
     median_intvty (its utils/process_result.py derives intvty = 1000 / tpot
     for each TPOT statistic; the chart uses the median);
  y: throughput per GPU = total (input + output) tokens/s ÷ GPUs, InferenceX's
     tput_per_gpu; --y output uses output tokens/s ÷ GPUs
     (output_tput_per_gpu; InferenceX divides a disaggregated run's by its
     decode GPUs only, BLIS by all of them).
A configuration is a point's settings without the load; its points, across
the load axis, make one curve. The frontier is every point no other point
(of any configuration) beats on both axes. Points that cannot run (the model
does not fit, TP does not divide the heads) are listed with the reason.

Given a blis sweep results store (its folder) in place of a grid file, pareto
reads the points' summaries from it instead of running them.

--html writes a self-contained interactive page (chart and table), --svg and
--png the chart alone.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("pareto takes one grid file or sweep store folder, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if yAxis != "total" && yAxis != "output" {
				return &usageError{fmt.Errorf("--y %q: allowed: total, output", yAxis)}
			}
			if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
				out, err := paretoFromStore(args[0], yAxis)
				if err != nil {
					return err
				}
				return finishPareto(stdout, out, asJSON, htmlFile, svgFile, pngFile)
			}
			g, points, err := grid.ReadPoints(args[0], maxPoints, force)
			if err != nil {
				return err
			}
			if jobs < 0 {
				return &usageError{fmt.Errorf("--jobs %d: allowed: 0 (one per CPU) or more", jobs)}
			}
			out := paretoResult{Grid: args[0], Name: cmp.Or(g.Name, args[0]), Y: yAxis, Points: make([]paretoPoint, len(points))}
			var mu sync.Mutex
			err = forEachParallel(len(points), jobs, func(i int) error {
				p := points[i]
				pp, err := runParetoPoint(g, p)
				if err != nil {
					return err
				}
				out.Points[i] = pp
				if !quiet(cmd) {
					what := fmt.Sprintf("%.1f tok/s/user, %.1f tok/s/GPU", pp.Interactivity, pp.TputPerGPU)
					if pp.Status != statusOK {
						what = pp.Status
					}
					mu.Lock()
					fmt.Fprintf(stderr, "blis plan pareto: point %d of %d: %s %s: %s\n", p.Index+1, len(points), pp.Config, pp.Load, what)
					mu.Unlock()
				}
				return nil
			})
			if err != nil {
				return err
			}
			return finishPareto(stdout, out, asJSON, htmlFile, svgFile, pngFile)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&yAxis, "y", "total", "throughput per GPU of total (input + output) or output tokens")
	fs.StringVar(&htmlFile, "html", "", "write an interactive HTML page of the chart and table")
	fs.StringVar(&svgFile, "svg", "", "write the chart as SVG")
	fs.StringVar(&pngFile, "png", "", "write the chart as PNG")
	fs.BoolVar(&asJSON, "json", false, "print the points as JSON instead of a table")
	fs.IntVar(&maxPoints, "max-points", grid.DefaultMaxPoints, "refuse a grid with more points than this unless --force")
	fs.BoolVar(&force, "force", false, "run a grid over --max-points")
	fs.IntVar(&jobs, "jobs", 0, "points simulated at once (0: one per CPU this process may use)")
	return cmd
}

func finishPareto(stdout io.Writer, out paretoResult, asJSON bool, htmlFile, svgFile, pngFile string) error {
	markFrontier(out.Points, out.Y)
	if err := writeParetoCharts(out, htmlFile, svgFile, pngFile); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, out)
	}
	return writeParetoTable(stdout, out)
}

// paretoFromStore reads the points of a blis sweep results store (its
// summary columns) instead of running them: every point the store holds,
// in index order.
func paretoFromStore(dir, y string) (paretoResult, error) {
	t, err := store.Load(dir)
	if err != nil {
		return paretoResult{}, err
	}
	out := paretoResult{Grid: dir, Name: cmp.Or(t.Info.Name, dir), Y: y}
	col := func(name string) (int, error) {
		i := t.Col(name)
		if i < 0 {
			return 0, &scenario.InputError{File: dir, Msg: "not a sweep store of this BLIS: no column " + name}
		}
		return i, nil
	}
	var at [10]int
	for k, name := range []string{"idx", "id", "status", "reason", "gpus", "p50_tpot_ms", "total_token_throughput_per_gpu", "output_throughput_per_gpu", "request_throughput", "failed"} {
		if at[k], err = col(name); err != nil {
			return out, err
		}
	}
	num := func(v any) float64 {
		switch x := v.(type) {
		case int64:
			return float64(x)
		case float64:
			return x
		}
		return 0
	}
	for _, row := range t.Rows {
		var cfg, load []string
		for _, k := range t.Keys {
			kv := k + "=" + store.Text(row[t.Col(k)])
			if slices.Contains(loadKeys, k) {
				load = append(load, kv)
			} else {
				cfg = append(cfg, kv)
			}
		}
		pp := paretoPoint{Index: int(num(row[at[0]])), ID: store.Text(row[at[1]]), Status: store.Text(row[at[2]]), Reason: store.Text(row[at[3]]),
			Config: cmp.Or(strings.Join(cfg, ","), "(base)"), Load: strings.Join(load, ",")}
		if pp.Status == statusOK {
			pp.GPUs, pp.MedianTPOTMs = int(num(row[at[4]])), num(row[at[5]])
			pp.Interactivity = metrics.Interactivity(pp.MedianTPOTMs)
			pp.TputPerGPU, pp.OutputTputPerGPU = num(row[at[6]]), num(row[at[7]])
			pp.RequestThroughput, pp.Failed = num(row[at[8]]), int(num(row[at[9]]))
		}
		out.Points = append(out.Points, pp)
	}
	return out, nil
}

// runParetoPoint runs one grid point as blis run would run its scenario.
func runParetoPoint(g *grid.Grid, p grid.Point) (paretoPoint, error) {
	var cfg, load []string
	for _, kv := range p.Values {
		if slices.Contains(loadKeys, kv.Key) {
			load = append(load, kv.Key+"="+kv.Value)
		} else {
			cfg = append(cfg, kv.Key+"="+kv.Value)
		}
	}
	pp := paretoPoint{Index: p.Index, ID: p.ID, Config: cmp.Or(strings.Join(cfg, ","), "(base)"), Load: strings.Join(load, ",")}
	s := scenario.Defaults()
	if err := s.ApplyYAML(fmt.Sprintf("%s point %d", g.File, p.Index), p.Scenario, nil); err != nil {
		return pp, err
	}
	s.SaveResult, s.SaveDetailed, s.Export = false, false, ""
	pr, err := runPlanned(s, nil)
	if err != nil {
		return pp, fmt.Errorf("%s point %d (%s %s): %w", g.File, p.Index, pp.Config, pp.Load, err)
	}
	if pr.Infeasible != "" {
		pp.Status, pp.Reason = "infeasible", pr.Infeasible
		return pp, nil
	}
	r := pr.Summary
	if r.Completed == 0 {
		pp.Status, pp.Reason = "unserved", pr.Verdict.Why
		return pp, nil
	}
	pp.Status = statusOK
	pp.GPUs, pp.MedianTPOTMs, pp.Failed = pr.GPUs, r.TPOT.Median, r.Failed
	pp.Interactivity = metrics.Interactivity(r.TPOT.Median)
	pp.TputPerGPU = r.TotalTokenThroughput / float64(pr.GPUs)
	pp.OutputTputPerGPU = r.OutputThroughput / float64(pr.GPUs)
	pp.RequestThroughput = r.RequestThroughput
	return pp, nil
}

func paretoY(p paretoPoint, y string) float64 {
	if y == "output" {
		return p.OutputTputPerGPU
	}
	return p.TputPerGPU
}

// markFrontier marks the points on the Pareto frontier over every
// configuration; infeasible points and points with no TPOT (no request of
// two tokens or more) are off the chart.
func markFrontier(pts []paretoPoint, y string) {
	var on []int
	var xy []plan.Point
	for i, p := range pts {
		if p.Status == statusOK && p.Interactivity > 0 {
			on = append(on, i)
			xy = append(xy, plan.Point{X: p.Interactivity, Y: paretoY(p, y)})
		}
	}
	for _, k := range plan.Frontier(xy) {
		pts[on[k]].Frontier = true
	}
}

func writeParetoTable(w io.Writer, out paretoResult) error {
	yName := "tput_per_gpu"
	if out.Y == "output" {
		yName = "output_tput_per_gpu"
	}
	fmt.Fprintf(w, "Throughput per GPU (%s, tok/s/GPU) against interactivity (median_intvty = 1000 / median TPOT, tok/s/user); * = on the Pareto frontier.\n", yName)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "config\tload\tGPUs\tmedian TPOT ms\ttok/s/user\t%s\tfrontier\n", yName)
	for _, p := range out.Points {
		if p.Status != statusOK {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t%s: %s\n", p.Config, p.Load, p.Status, p.Reason)
			continue
		}
		mark := ""
		if p.Frontier {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.1f\t%.1f\t%s\n", p.Config, p.Load, p.GPUs, p.MedianTPOTMs, p.Interactivity, paretoY(p, out.Y), mark)
	}
	return tw.Flush()
}

// paretoChart is one series per configuration (its points in increasing
// load) and the frontier, as a report chart.
func paretoChart(out paretoResult) report.Chart {
	yLabel := "Throughput per GPU (total tok/s/GPU)"
	if out.Y == "output" {
		yLabel = "Throughput per GPU (output tok/s/GPU)"
	}
	c := report.Chart{ID: "pareto", Title: "Throughput per GPU vs interactivity: " + out.Name,
		XLabel: "Interactivity (tok/s/user = 1000 / median TPOT)", YLabel: yLabel}
	var runs []plan.Run
	for _, p := range out.Points {
		if p.Status != statusOK {
			continue
		}
		runs = append(runs, plan.Run{Config: p.Config, X: p.Interactivity, Y: paretoY(p, out.Y), Label: p.Config + " " + p.Load, Info: []report.KV{
			{Key: "config", Value: p.Config}, {Key: "load", Value: p.Load}, {Key: "GPUs", Value: fmt.Sprint(p.GPUs)},
			{Key: "median TPOT ms", Value: fmt.Sprintf("%.2f", p.MedianTPOTMs)}, {Key: "point", Value: p.ID},
		}})
	}
	return plan.ParetoChart(c, runs)
}

func writeParetoCharts(out paretoResult, htmlFile, svgFile, pngFile string) error {
	if htmlFile == "" && svgFile == "" && pngFile == "" {
		return nil
	}
	c := paretoChart(out)
	write := func(path string, render func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return &scenario.InputError{File: path, Msg: "cannot write: " + err.Error()}
		}
		if err := render(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	if err := write(htmlFile, func(w io.Writer) error { return report.HTML(w, paretoDocument(out, c)) }); err != nil {
		return err
	}
	if err := write(svgFile, func(w io.Writer) error { return report.SVG(w, &c) }); err != nil {
		return err
	}
	return write(pngFile, func(w io.Writer) error { return report.PNG(w, &c) })
}

// paretoDocument is the --html page: the chart c and the table of every
// point.
func paretoDocument(out paretoResult, c report.Chart) *report.Document {
	tbl := &report.Table{Columns: []string{"config", "load", "GPUs", "median TPOT ms", "tok/s/user", "tok/s/GPU", "frontier"}}
	for _, p := range out.Points {
		row := []string{p.Config, p.Load, "-", "-", "-", "-", p.Status + ": " + p.Reason}
		if p.Status == statusOK {
			mark := ""
			if p.Frontier {
				mark = "*"
			}
			row = []string{p.Config, p.Load, fmt.Sprint(p.GPUs), fmt.Sprintf("%.2f", p.MedianTPOTMs), fmt.Sprintf("%.1f", p.Interactivity), fmt.Sprintf("%.1f", paretoY(p, out.Y)), mark}
		}
		tbl.Rows = append(tbl.Rows, row)
	}
	return &report.Document{Title: "blis plan pareto", Subtitle: out.Grid, Sections: []report.Section{{
		Heading: "Throughput per GPU against interactivity",
		Text:    "One curve per configuration across the load axis; the frontier joins the points no other point beats on both axes. x = 1000 / median TPOT (InferenceX's median_intvty); y = tokens/s per GPU.",
		Charts:  []report.Chart{c}, Table: tbl,
	}}}
}
