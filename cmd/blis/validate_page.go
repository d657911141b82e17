package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"blis/internal/buildinfo"
	"blis/scenario"
	"blis/validate/page"
	"blis/validate/render"
)

func newValidatePageCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		out           string
		record, check bool
		html          bool
		jobs          int
		probes        string
	)
	cmd := &cobra.Command{
		Use:   "page MANIFEST.yaml",
		Short: "Replay a validation manifest's measured runs and write its validation page",
		Long: `Read a validation manifest (docs/validation/README.md), read every measured
input it names, replay each level in BLIS, and write the validation page:
NAME.md (Markdown, in the sections of the validation pages it follows:
sources, provenance verdict, paired requests, population metrics, TTFT, KV
pool, every level), NAME.json
(every number on the page) and figures/NAME/*.svg, into --out (default: the
manifest's directory); with --html also NAME.html, the same page as one
self-contained file with interactive charts (hover a point for its level,
values and the arm's settings; toggle series and log axes) and its tables.
Prints each arm's verdict and headline errors.

--record also pins the headline errors (MAPE and signed mean per arm and
metric) in NAME.baseline.json. --check writes nothing: it recomputes the
page and exits 1 when a MAPE grows beyond the manifest's tolerance-pp over
the baseline, or an arm scores fewer points.

--probes auto re-runs each arm once per candidate value of every setting its
provenance table shows as a removable MISMATCH or UNSTATED (the "Gap
re-checks" section; never part of the headline or the gate); off skips them;
a comma list re-checks only those settings.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("validate page takes one manifest file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			if html && check {
				return &usageError{errors.New("--html and --check exclude each other: --check writes nothing")}
			}
			if record && check {
				return &usageError{errors.New("--record and --check exclude each other: record a baseline, or check against one")}
			}
			if jobs < 0 {
				return &usageError{errors.New("--jobs must be ≥ 0")}
			}
			var probeSpec *page.ProbeSpec
			if probes != "" {
				spec, err := page.ParseProbes(probes)
				if err != nil {
					return &usageError{fmt.Errorf("--probes %q: %v", probes, err)}
				}
				probeSpec = &spec
			}
			file := args[0]
			data, err := os.ReadFile(file)
			if err != nil {
				return &scenario.InputError{File: file, Msg: "cannot read the manifest: " + errors.Unwrap(err).Error()}
			}
			m, err := page.ParseManifest(file, data)
			if err != nil {
				return err
			}
			dir := out
			if dir == "" {
				dir = m.Dir
			}
			basePath := filepath.Join(dir, m.Name+".baseline.json")
			var base *page.Baseline
			if check {
				b, err := os.ReadFile(basePath)
				if err != nil {
					return &scenario.InputError{File: basePath, Msg: "no baseline to check against: record one with --record"}
				}
				if base, err = page.ReadBaseline(basePath, b); err != nil {
					return err
				}
			}
			start := time.Now()
			stamp := buildinfo.Current()
			pg, err := page.Build(m, page.Options{Version: buildVersion(), Jobs: jobs, Stamp: &stamp, Probes: probeSpec})
			if err != nil {
				return err
			}
			if err := writeSummary(stdout, pg); err != nil {
				return err
			}
			if check {
				res := page.Check(base, pg, m.TolerancePP)
				if err := res.WriteText(stdout, m.Name); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "Checked in %.1f s.\n", time.Since(start).Seconds())
				if !res.OK() {
					return fmt.Errorf("validate page %s: %d headline errors regressed beyond %g percentage points", m.Name, len(res.Failures), m.TolerancePP)
				}
				return nil
			}
			if err := writePage(dir, pg, html); err != nil {
				return err
			}
			if record {
				if err := writeFileAtomic(basePath, page.NewBaseline(pg).WriteJSON); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "Baseline written to %s\n", basePath)
			}
			fmt.Fprintf(stderr, "Page written to %s in %.1f s.\n", filepath.Join(dir, m.Name+".md"), time.Since(start).Seconds())
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "directory of the page, its JSON, figures and baseline (default: the manifest's directory)")
	fs.BoolVar(&record, "record", false, "also pin the headline errors in NAME.baseline.json")
	fs.BoolVar(&html, "html", false, "also write NAME.html: the page with interactive charts and its tables in one self-contained file")
	fs.BoolVar(&check, "check", false, "write nothing; exit 1 when a headline error regressed beyond tolerance against NAME.baseline.json")
	fs.IntVar(&jobs, "jobs", 0, "simulations run in parallel (0 = number of CPUs); the page does not depend on it")
	fs.StringVar(&probes, "probes", "", "gap re-checks for every arm, overriding the manifest's probes: off, auto, or a comma list of settings (default: the manifest's)")
	return cmd
}

// writePage writes NAME.md, NAME.json and figures/NAME/, replacing the
// figures of an earlier page of the same name, and NAME.html when html.
func writePage(dir string, pg *page.Page, html bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, pg.Name+".md"), func(w io.Writer) error { return render.Markdown(w, pg) }); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, pg.Name+".json"), pg.WriteJSON); err != nil {
		return err
	}
	if html {
		if err := writeFileAtomic(filepath.Join(dir, pg.Name+".html"), func(w io.Writer) error { return render.HTML(w, pg) }); err != nil {
			return err
		}
	}
	figDir := filepath.Join(dir, filepath.FromSlash(render.FigureDir(pg.Name)))
	if old, err := filepath.Glob(filepath.Join(figDir, "*.svg")); err == nil {
		for _, f := range old {
			os.Remove(f)
		}
	}
	if err := os.MkdirAll(figDir, 0o755); err != nil {
		return err
	}
	for _, f := range render.Figures(pg) {
		data := f.Data
		if err := writeFileAtomic(filepath.Join(figDir, f.Name), func(w io.Writer) error {
			_, err := io.Copy(w, bytes.NewReader(data))
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// writeSummary prints each arm's verdict and headline errors.
func writeSummary(w io.Writer, pg *page.Page) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", pg.Title)
	for _, a := range pg.Arms {
		fmt.Fprintf(&b, "  %-40s %s\n", a.Label, a.Verdict)
		for _, mp := range a.Population {
			fmt.Fprintf(&b, "    %-24s points %4d  MAPE %7.1f%%  signed mean %+7.1f%%  %s\n",
				mp.Metric, mp.Points, mp.MAPE.F(), mp.SignedMean.F(), mp.Sign)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
