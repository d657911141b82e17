package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"blis/report"
	"blis/scenario"
	"blis/sweep/sweepreport"
)

// reportName is the report blis sweep and blis sweep merge write into the
// store they end with.
const reportName = "report.html"

func newSweepReportCmd(stdout, stderr io.Writer) *cobra.Command {
	var htmlFile, svgDir, pngDir string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Write a sweep store's report: one self-contained HTML page of charts and every point (and SVG/PNG charts)",
		Long: `Write the report of a sweep store: one self-contained HTML page (no
network; interactive charts with a hover per point, series toggles and log
axes; the table of every point beneath) with throughput per GPU against
interactivity and its Pareto frontier, TTFT, TPOT, output throughput and
E2E latency against the load, one series per configuration. blis sweep and
blis sweep merge write DIR/` + reportName + ` themselves; this command rewrites it
(or writes it elsewhere with --html) and writes each chart as SVG (--svg DIR)
or PNG (--png DIR), one file per chart named by its id. docs/sweeps.md
describes the report.`,
		Args: exactArgs(1, "report takes one store directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, err := sweepreport.Load(args[0])
			if err != nil {
				return err
			}
			if htmlFile == "" {
				htmlFile = filepath.Join(args[0], reportName)
			}
			if err := writeOut(htmlFile, stdout, func(w io.Writer) error { return report.HTML(w, doc) }); err != nil {
				return err
			}
			written := htmlFile
			for _, out := range []struct {
				dir, ext string
				draw     func(io.Writer, *report.Chart) error
			}{{svgDir, ".svg", report.SVG}, {pngDir, ".png", report.PNG}} {
				if out.dir == "" {
					continue
				}
				if err := os.MkdirAll(out.dir, 0o755); err != nil {
					return &scenario.InputError{File: out.dir, Msg: "cannot create: " + err.Error()}
				}
				n := 0
				for _, s := range doc.Sections {
					for i := range s.Charts {
						c := &s.Charts[i]
						if err := writeOut(filepath.Join(out.dir, c.ID+out.ext), nil, func(w io.Writer) error { return out.draw(w, c) }); err != nil {
							return err
						}
						n++
					}
				}
				written += fmt.Sprintf(", %d charts in %s", n, out.dir)
			}
			if !quiet(cmd) {
				fmt.Fprintf(stderr, "blis sweep report: %s\n", written)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&htmlFile, "html", "", "write the HTML page here (default: DIR/"+reportName+"; - for stdout)")
	f.StringVar(&svgDir, "svg", "", "write each chart as SVG into this directory (CHART-ID.svg)")
	f.StringVar(&pngDir, "png", "", "write each chart as PNG into this directory (CHART-ID.png)")
	return cmd
}

// writeStoreReport writes the report of the store in dir to
// dir/report.html and returns its path. Its bytes depend only on the
// store's content, so a merged store's report is the unsharded sweep's.
// It runs after every point is stored: its error says the store is whole
// and how to write the report again, so nobody reruns a finished sweep.
func writeStoreReport(dir string) (string, error) {
	path := filepath.Join(dir, reportName)
	doc, err := sweepreport.Load(dir)
	if err == nil {
		err = writeOut(path, nil, func(w io.Writer) error { return report.HTML(w, doc) })
	}
	if err != nil {
		return "", fmt.Errorf("the points are stored in %s, but its report was not written (blis sweep report %s writes it): %w", dir, dir, err)
	}
	return path, nil
}
