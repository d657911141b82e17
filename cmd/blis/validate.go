package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"blis/internal/progress"
	"blis/scenario"
	"blis/validate/inferencex"
)

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Score BLIS's predictions against measured benchmark runs",
	}
	cmd.AddCommand(newValidateInferenceXCmd(stdout, stderr), newValidatePageCmd(stdout, stderr))
	return cmd
}

func newValidateInferenceXCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		opts     inferencex.Options
		jsonPath string
		verbose  bool
	)
	cmd := &cobra.Command{
		Use:   "inferencex FILE.csv",
		Short: "Simulate every row of an InferenceX sweep and report BLIS's TTFT and TPOT errors",
		Long: `Simulate every row of an InferenceX sweep CSV (the format of
data/e2e/inferencex_calibration.csv) as InferenceX ran it: its client
(random dataset, --random-range-ratio 0.8 in the legacy sense, --num-prompts
10×CONC, --max-concurrency CONC, --request-rate inf, --num-warmups 2×CONC from
2026-01-21) and the vllm serve arguments of its launch scripts per model, chip
and date (validate/inferencex/recipes.yaml; "*" marks values that are assumed).

Prints, per row, measured vs predicted TTFT and TPOT with the signed error
100·(BLIS/measured − 1), then MAPE, median APE and signed mean per (model,
chip, backend), then the rows BLIS cannot simulate, grouped by reason.
The output does not depend on --jobs.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("validate inferencex takes one CSV file, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch opts.Backend {
			case "vllm", "sglang", "trtllm", "all":
			default:
				return &usageError{fmt.Errorf("--backend %q: allowed: vllm, sglang, trtllm, all", opts.Backend)}
			}
			switch opts.Statistic {
			case inferencex.StatMedian, inferencex.StatMean:
			default:
				return &usageError{fmt.Errorf("--statistic %q: allowed: median, mean", opts.Statistic)}
			}
			if opts.Limit < 0 || opts.Jobs < 0 {
				return &usageError{errors.New("--limit and --jobs must be ≥ 0")}
			}
			file := args[0]
			f, err := os.Open(file)
			if err != nil {
				return &scenario.InputError{File: file, Msg: "cannot read: " + errors.Unwrap(err).Error()}
			}
			rows, err := inferencex.Read(file, bufio.NewReader(f))
			f.Close()
			if err != nil {
				return err
			}
			if err := checkInferenceXFilter(file, rows, opts); err != nil {
				return err
			}
			start := time.Now()
			bar := progress.New(stderr, "blis validate", "rows", 0, quiet(cmd))
			opts.Progress = func(done, total int) { bar.Update(int64(done), 0) }
			rep, err := inferencex.Validate(file, rows, opts)
			bar.Done()
			if err != nil {
				return err
			}
			elapsed := time.Since(start)
			if err := rep.WriteText(stdout, verbose); err != nil {
				return err
			}
			if jsonPath != "" {
				if err := writeFileAtomic(jsonPath, rep.WriteJSON); err != nil {
					return err
				}
				fmt.Fprintf(stderr, "Report written to %s\n", jsonPath)
			}
			jobs := opts.Jobs
			if jobs == 0 {
				jobs = runtime.GOMAXPROCS(0)
			}
			fmt.Fprintf(stderr, "Simulated %d rows in %.1f s with %d workers.\n", len(rep.Rows), elapsed.Seconds(), jobs)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.Model, "model", "", "only rows whose model_path contains this (case-insensitive), or a catalog alias of it")
	fs.StringVar(&opts.Hardware, "hardware", "", "only rows on this chip (h100, b200, h100_sxm, ...)")
	fs.StringVar(&opts.Backend, "backend", "vllm", "backend rows to simulate: vllm, sglang, trtllm, or all (non-vLLM rows are simulated as if vLLM served them, labelled)")
	fs.StringVar(&opts.Statistic, "statistic", inferencex.StatMean, "BLIS statistic compared with silicon_ttft_ms/silicon_tpot_ms: median or mean")
	fs.BoolVar(&opts.EPAsTP, "ep-as-tp", true, "simulate rows with expert parallel = tensor parallel and attention DP 1 with --enable-expert-parallel; false skips them")
	fs.IntVar(&opts.Limit, "limit", 0, "simulate only the first N simulable rows (0 = all)")
	fs.IntVar(&opts.Jobs, "jobs", 0, "rows simulated in parallel (0 = number of CPUs); the output does not depend on it")
	fs.Int64Var(&opts.Seed, "seed", 0, "random seed of every simulated run")
	fs.StringVar(&jsonPath, "json", "", "also write every number (settings, predictions, errors, skips) to this JSON file")
	fs.BoolVar(&verbose, "verbose", false, "list every skipped row with its detail")
	return cmd
}

// writeFileAtomic writes path through a temporary file in the same
// directory, so a failed write leaves no half-written file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".blis-*.tmp")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(tmp)
	if err := write(w); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	// CreateTemp makes the file private; results are ordinary files.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// checkInferenceXFilter refuses a --model, --hardware or --backend that
// selects no row of the file, naming the values the file has: a run that
// simulates nothing is a mistake, not a result.
func checkInferenceXFilter(file string, rows []inferencex.Row, opts inferencex.Options) error {
	distinct := func(f func(*inferencex.Row) string) string {
		seen := map[string]bool{}
		var out []string
		for i := range rows {
			if v := f(&rows[i]); v != "" && !seen[v] {
				seen[v] = true
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return strings.Join(out, ", ")
	}
	if len(rows) > 0 && (opts.Model != "" || opts.Hardware != "") {
		if !slices.ContainsFunc(rows, func(r inferencex.Row) bool { return opts.Filter.Keep(&r) }) {
			key, val, what := "--hardware", opts.Hardware, "systems: "+distinct(func(r *inferencex.Row) string { return r.System })
			with := ""
			if opts.Model != "" {
				key, val, what = "--model", opts.Model, "models: "+distinct(func(r *inferencex.Row) string { return r.ModelPath })
				if opts.Hardware != "" {
					with = "with --hardware " + strconv.Quote(opts.Hardware) + " "
				}
			}
			return &scenario.InputError{File: file, Key: key, Value: val, Msg: with + "selects no row; the file's " + what}
		}
	}
	if opts.Backend != inferencex.BackendAll && !slices.ContainsFunc(rows, func(r inferencex.Row) bool { return r.Backend == opts.Backend }) {
		return &scenario.InputError{File: file, Key: "--backend", Value: opts.Backend,
			Msg: "selects no row; the file's backends: " + distinct(func(r *inferencex.Row) string { return r.Backend }) + " (or all)"}
	}
	return nil
}
