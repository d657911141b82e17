package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"blis/plan"
	"blis/report"
	"blis/scenario"
	"blis/sweep/grid"
)

// loadKeys are the load axis's keys: a configuration is a point's settings
// without them.
var loadKeys = []string{"max-concurrency", "request-rate"}

type paretoPoint struct {
	Index  int    `json:"index"` // the grid point's place in the expansion
	ID     string `json:"id"`
	Config string `json:"config"` // the axis values but the load's
	Load   string `json:"load"`   // e.g. max-concurrency=64
	// Infeasible is why the point cannot run; the numbers are then 0.
	Infeasible        string  `json:"infeasible,omitempty"`
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
	var maxPoints int
	cmd := &cobra.Command{
		Use:   "pareto GRID.yaml",
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

--html writes a self-contained interactive page (chart and table), --svg and
--png the chart alone.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("pareto takes one grid file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if yAxis != "total" && yAxis != "output" {
				return &usageError{fmt.Errorf("--y %q: allowed: total, output", yAxis)}
			}
			if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
				return &usageError{fmt.Errorf("%s is a folder: plan pareto reads a grid file (GRID.yaml) and runs its points", args[0])}
			}
			g, err := grid.ReadFile(args[0])
			if err != nil {
				return err
			}
			if err := g.CheckSize(maxPoints, force); err != nil {
				return err
			}
			points, err := g.Expand()
			if err != nil {
				return err
			}
			out := paretoResult{Grid: args[0], Name: cmp.Or(g.Name, args[0]), Y: yAxis}
			for _, p := range points {
				pp, err := runParetoPoint(g, p)
				if err != nil {
					return err
				}
				if !quiet(cmd) {
					what := fmt.Sprintf("%.1f tok/s/user, %.1f tok/s/GPU", pp.Interactivity, pp.TputPerGPU)
					if pp.Infeasible != "" {
						what = "infeasible"
					}
					fmt.Fprintf(stderr, "blis plan pareto: point %d of %d: %s %s: %s\n", p.Index+1, len(points), pp.Config, pp.Load, what)
				}
				out.Points = append(out.Points, pp)
			}
			markFrontier(out.Points, yAxis)
			if err := writeParetoCharts(out, htmlFile, svgFile, pngFile); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(stdout, out)
			}
			return writeParetoTable(stdout, out)
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
	return cmd
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
		pp.Infeasible = pr.Infeasible
		return pp, nil
	}
	r := pr.Summary
	pp.GPUs, pp.MedianTPOTMs, pp.Failed = pr.GPUs, r.TPOT.Median, r.Failed
	pp.Interactivity = plan.Interactivity(r.TPOT.Median)
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
		if p.Infeasible == "" && p.Interactivity > 0 {
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
		if p.Infeasible != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\tinfeasible: %s\n", p.Config, p.Load, p.Infeasible)
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
	var configs []string
	byConfig := map[string][]report.Point{}
	var frontier []report.Point
	for _, p := range out.Points {
		if p.Infeasible != "" || p.Interactivity <= 0 {
			continue
		}
		rp := report.Point{X: p.Interactivity, Y: paretoY(p, out.Y), Label: p.Config + " " + p.Load, Info: []report.KV{
			{Key: "config", Value: p.Config}, {Key: "load", Value: p.Load}, {Key: "GPUs", Value: fmt.Sprint(p.GPUs)},
			{Key: "median TPOT ms", Value: fmt.Sprintf("%.2f", p.MedianTPOTMs)}, {Key: "point", Value: p.ID},
		}}
		if _, ok := byConfig[p.Config]; !ok {
			configs = append(configs, p.Config)
		}
		byConfig[p.Config] = append(byConfig[p.Config], rp)
		if p.Frontier {
			frontier = append(frontier, rp)
		}
	}
	for _, name := range configs {
		c.Series = append(c.Series, report.Series{Name: name, Points: byConfig[name]})
	}
	slices.SortStableFunc(frontier, func(a, b report.Point) int { return cmp.Compare(a.X, b.X) })
	c.Series = append(c.Series, report.Series{Name: "Pareto frontier", Style: report.Frontier, Points: frontier})
	return c
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
	if err := write(htmlFile, func(w io.Writer) error {
		tbl := &report.Table{Columns: []string{"config", "load", "GPUs", "median TPOT ms", "tok/s/user", "tok/s/GPU", "frontier"}}
		for _, p := range out.Points {
			row := []string{p.Config, p.Load, "-", "-", "-", "-", "infeasible: " + p.Infeasible}
			if p.Infeasible == "" {
				mark := ""
				if p.Frontier {
					mark = "*"
				}
				row = []string{p.Config, p.Load, fmt.Sprint(p.GPUs), fmt.Sprintf("%.2f", p.MedianTPOTMs), fmt.Sprintf("%.1f", p.Interactivity), fmt.Sprintf("%.1f", paretoY(p, out.Y)), mark}
			}
			tbl.Rows = append(tbl.Rows, row)
		}
		doc := &report.Document{Title: "blis plan pareto", Subtitle: out.Grid, Sections: []report.Section{{
			Heading: "Throughput per GPU against interactivity",
			Text:    "One curve per configuration across the load axis; the frontier joins the points no other point beats on both axes. x = 1000 / median TPOT (InferenceX's median_intvty); y = tokens/s per GPU.",
			Charts:  []report.Chart{c}, Table: tbl,
		}}}
		return report.HTML(w, doc)
	}); err != nil {
		return err
	}
	if err := write(svgFile, func(w io.Writer) error { return report.SVG(w, &c) }); err != nil {
		return err
	}
	return write(pngFile, func(w io.Writer) error { return report.PNG(w, &c) })
}
