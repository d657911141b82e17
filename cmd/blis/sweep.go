package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/spf13/cobra"

	"blis/metrics"
	"blis/scenario"
	"blis/sweep"
	"blis/sweep/grid"
	"blis/sweep/store"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		out                    string
		jobs                   int
		shardIndex, shardCount int
		maxPoints              int
		force, verbose         bool
	)
	cmd := &cobra.Command{
		Use:   "sweep GRID.yaml",
		Short: "Run every point of a grid of scenarios into a results store and its report.html (show, export, merge, report read it)",
		Long: `Run a sweep: every combination of a grid's axes (any scenario key, and a
load axis of concurrencies, rates or a rate ramp), each point simulated as
` + "`blis run`" + ` would, on a pool of workers, into a store directory: an SQLite
database of every point's settings and summary metrics, and each point's
result JSON in points/. Points already in the store are skipped, so an
interrupted sweep resumes where it stopped. Infeasible points (the model
does not fit, TP does not divide the heads, ...) are recorded with the
reason. At the end the store gets its report, DIR/report.html: one
self-contained page of charts and every point (blis sweep report rewrites
it, and draws its charts as SVG or PNG). docs/sweeps.md describes the grid
file, the store and the report.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return &usageError{fmt.Errorf("sweep takes one grid file (or show, export, merge, report, k8s), got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			shard, err := shardOf(cmd, shardIndex, shardCount)
			if err != nil {
				return err
			}
			if maxPoints < 1 {
				return &usageError{fmt.Errorf("--max-points %d: must be at least 1", maxPoints)}
			}
			if jobs < 0 {
				return &usageError{fmt.Errorf("--jobs %d: must be at least 1 (0: one per CPU)", jobs)}
			}
			g, points, err := grid.ReadPoints(args[0], maxPoints, force)
			if err != nil {
				return err
			}
			if out == "" {
				out = g.Name
				if shard.Count > 1 {
					out = fmt.Sprintf("%s-shard-%d-of-%d", g.Name, shard.Index, shard.Count)
				}
			}
			st, err := store.Open(out, g, len(points), shard)
			if err != nil {
				return err
			}
			stats, err := sweep.Run(st, points, runPoint, sweep.Options{
				Jobs: jobs, Shard: shard, Log: stderr, Quiet: quiet(cmd), Verbose: verbose,
			})
			if cerr := st.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := store.Finalize(out); err != nil {
				return err
			}
			rep, err := writeStoreReport(out)
			if err != nil {
				return err
			}
			what := "points"
			if shard.Count > 1 {
				what = fmt.Sprintf("points of shard %d of %d", shard.Index, shard.Count)
			}
			fmt.Fprintf(stderr, "blis sweep: %d %s in %s (%d run now, %d already there, %d infeasible) in %s; report: %s\n",
				stats.Total, what, out, stats.Ran, stats.Skipped, stats.Infeasible, stats.Elapsed.Round(100*time.Millisecond), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "the store's directory (default: the grid's name, with -shard-I-of-N for a shard)")
	f.IntVar(&jobs, "jobs", 0, "points simulated at once (0: one per CPU this process may use)")
	f.IntVar(&shardIndex, "shard-index", 0, "run only the points with index % --shard-count == this (default: $JOB_COMPLETION_INDEX when --shard-count is set)")
	f.IntVar(&shardCount, "shard-count", 0, "shards the grid is split into (round-robin by point index)")
	f.IntVar(&maxPoints, "max-points", grid.DefaultMaxPoints, "refuse a grid of more points than this (before exclusions) unless --force")
	f.BoolVar(&force, "force", false, "run a grid over --max-points")
	f.BoolVarP(&verbose, "verbose", "v", false, "log every point (when stderr is not a terminal)")
	cmd.AddCommand(newSweepShowCmd(stdout), newSweepExportCmd(stdout), newSweepMergeCmd(stderr), newSweepReportCmd(stdout, stderr), newSweepK8sCmd(stdout, stderr))
	return cmd
}

// shardOf reads --shard-index/--shard-count, the index defaulting to
// Kubernetes' JOB_COMPLETION_INDEX (an Indexed Job's pods get it).
func shardOf(cmd *cobra.Command, index, count int) (store.Shard, error) {
	if count == 0 {
		if cmd.Flags().Changed("shard-index") {
			return store.Shard{}, &usageError{errors.New("--shard-index needs --shard-count")}
		}
		return store.Shard{}, nil
	}
	if count < 1 {
		return store.Shard{}, &usageError{fmt.Errorf("--shard-count %d: must be at least 1", count)}
	}
	if !cmd.Flags().Changed("shard-index") {
		env, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !ok {
			return store.Shard{}, &usageError{errors.New("--shard-count needs --shard-index (or JOB_COMPLETION_INDEX in the environment)")}
		}
		i, err := strconv.Atoi(strings.TrimSpace(env))
		if err != nil {
			return store.Shard{}, &usageError{fmt.Errorf("JOB_COMPLETION_INDEX %q: not an integer", env)}
		}
		index = i
	}
	if index < 0 || index >= count {
		return store.Shard{}, &usageError{fmt.Errorf("shard index %d: must be from 0 to %d (--shard-count %d)", index, count-1, count)}
	}
	return store.Shard{Index: index, Count: count}, nil
}

// runPoint simulates one point exactly as `blis run` of its scenario file
// with --save-result does: the same scenario (the point's file read with
// ApplyYAML), the same simulate, the same result JSON writer and options.
// A deployment that cannot exist (Resolve's input error) is infeasible; a
// run that served nothing is unserved; any other error stops the sweep.
func runPoint(p grid.Point) (sweep.Outcome, error) {
	s := scenario.Defaults()
	name := fmt.Sprintf("point-%d.yaml", p.Index)
	if err := s.ApplyYAML(name, p.Scenario, nil); err != nil {
		return sweep.Outcome{}, err
	}
	res, err := s.Resolve()
	if err != nil {
		if scenario.IsInputError(err) {
			return sweep.Outcome{Status: store.StatusInfeasible, Reason: err.Error()}, nil
		}
		return sweep.Outcome{}, err
	}
	stages := res.Stages()
	detailed := s.SaveDetailed || len(stages) > 0
	var buf bytes.Buffer
	jw := metrics.NewJSONWriter(&buf, metrics.JSONOptions{Detailed: s.SaveDetailed, TempDir: os.TempDir()})
	run, err := simulate(s, res, simOptions{Sinks: []metrics.Sink{jw}, Detailed: detailed})
	if err != nil {
		if scenario.IsInputError(err) {
			return sweep.Outcome{Status: store.StatusInfeasible, Reason: err.Error()}, nil
		}
		return sweep.Outcome{}, err
	}
	if err := checkServed(io.Discard, s, run.Out); err != nil {
		return sweep.Outcome{Status: store.StatusUnserved, Reason: err.Error()}, nil
	}
	if err := jw.Close(run.Summary); err != nil {
		return sweep.Outcome{}, err
	}
	return sweep.Outcome{Status: store.StatusOK, JSON: buf.Bytes(), Metrics: store.MetricsOf(run.Summary, gpusOf(res).total)}, nil
}

// showColumns are the metrics `blis sweep show` lists per point.
var showColumns = []struct{ col, head, format string }{
	{"output_throughput", "out tok/s", "%.0f"},
	{"gpus", "GPUs", "%d"},
	{"output_throughput_per_gpu", "tok/s/GPU", "%.0f"},
	{"interactivity", "tok/s/user", "%.1f"},
	{"p90_ttft_ms", "p90 TTFT ms", "%.1f"},
	{"p99_tpot_ms", "p99 TPOT ms", "%.2f"},
	{"p99_e2el_ms", "p99 E2EL ms", "%.0f"},
}

func newSweepShowCmd(stdout io.Writer) *cobra.Command {
	var point int
	var scen bool
	cmd := &cobra.Command{
		Use:   "show DIR",
		Short: "List a sweep store's points: axis values, key metrics and status (--point N: one in full)",
		Args:  exactArgs(1, "show takes one store directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := store.Load(args[0])
			if err != nil {
				return err
			}
			if scen && !cmd.Flags().Changed("point") {
				return &usageError{errors.New("--scenario needs --point N")}
			}
			w := bufio.NewWriter(stdout)
			if cmd.Flags().Changed("point") {
				if err := showPoint(w, args[0], t, point, scen); err != nil {
					return err
				}
			} else {
				showTable(w, t)
			}
			return w.Flush()
		},
	}
	cmd.Flags().IntVar(&point, "point", 0, "show this point (its index) in full")
	cmd.Flags().BoolVar(&scen, "scenario", false, "with --point: print only the point's scenario file, to re-run it with blis run")
	return cmd
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return &usageError{fmt.Errorf("%s, got %d arguments", what, len(args))}
		}
		return nil
	}
}

func showTable(w io.Writer, t *store.Table) {
	ok, bad := 0, 0
	for _, r := range t.Rows {
		if r[t.Col("status")] == store.StatusOK {
			ok++
		} else {
			bad++
		}
	}
	shard := ""
	if t.Info.Shard != "" {
		shard = " (shard " + t.Info.Shard + ")"
	}
	fmt.Fprintf(w, "sweep %s%s: %d of %d points stored, %d ok, %d infeasible or unserved\n\n", t.Info.Name, shard, len(t.Rows), t.Info.Points, ok, bad)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"point"}
	head = append(head, t.Keys...)
	for _, c := range showColumns {
		head = append(head, c.head)
	}
	// The status is past the last tab: left-aligned, outside the columns.
	head = append(head, "  status")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range t.Rows {
		line := []string{store.Text(r[0])}
		for _, k := range t.Keys {
			line = append(line, store.Text(r[t.Col(k)]))
		}
		for _, c := range showColumns {
			v := r[t.Col(c.col)]
			if v == nil {
				line = append(line, "-")
				continue
			}
			line = append(line, fmt.Sprintf(c.format, v))
		}
		status := r[t.Col("status")].(string)
		if reason := r[t.Col("reason")].(string); reason != "" {
			status += ": " + firstLine(reason, 70)
		}
		line = append(line, "  "+status)
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	tw.Flush()
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func showPoint(w io.Writer, dir string, t *store.Table, point int, scenOnly bool) error {
	for _, r := range t.Rows {
		if r[0].(int64) != int64(point) {
			continue
		}
		if scenOnly {
			_, err := io.WriteString(w, r[t.Col("scenario")].(string))
			return err
		}
		for i, c := range t.Columns {
			if c == "scenario" {
				continue
			}
			fmt.Fprintf(w, "%-32s %s\n", c, store.Text(r[i]))
		}
		fmt.Fprintf(w, "\nscenario (blis sweep show %s --point %d --scenario > p.yaml; blis run p.yaml):\n", dir, point)
		for _, l := range strings.Split(strings.TrimSuffix(r[t.Col("scenario")].(string), "\n"), "\n") {
			fmt.Fprintln(w, "  "+l)
		}
		return nil
	}
	return &scenario.InputError{Key: "--point", Value: strconv.Itoa(point), Msg: fmt.Sprintf("no such point in the store (it holds %d of the grid's %d points)", len(t.Rows), t.Info.Points)}
}

func newSweepExportCmd(stdout io.Writer) *cobra.Command {
	var csvPath, pqPath string
	cmd := &cobra.Command{
		Use:   "export DIR",
		Short: "Write a sweep store's points table as CSV (--csv FILE, - for stdout) or Parquet (--parquet FILE)",
		Args:  exactArgs(1, "export takes one store directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if csvPath == "" && pqPath == "" {
				return &usageError{errors.New("export needs --csv FILE (or -) or --parquet FILE")}
			}
			t, err := store.Load(args[0])
			if err != nil {
				return err
			}
			if csvPath != "" {
				if err := writeOut(csvPath, stdout, func(w io.Writer) error { return writeCSV(w, t) }); err != nil {
					return err
				}
			}
			if pqPath != "" {
				if pqPath == "-" {
					return &usageError{errors.New("--parquet needs a file name, not -")}
				}
				if err := writeOut(pqPath, stdout, func(w io.Writer) error { return writeParquet(w, t) }); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&csvPath, "csv", "", "write the points as CSV to this file (- for stdout)")
	cmd.Flags().StringVar(&pqPath, "parquet", "", "write the points as Parquet to this file")
	return cmd
}

// writeOut writes to path ("-": stdout) through a temporary file renamed
// into place (writeFileAtomic), so a failed export leaves no half file; a
// directory it cannot write in, or a path it cannot replace (a directory),
// is an input error naming the path.
func writeOut(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	err := writeFileAtomic(path, write)
	var pe *fs.PathError
	var le *os.LinkError
	if errors.As(err, &pe) && pe.Op == "createtemp" || errors.As(err, &le) && le.Op == "rename" {
		return &scenario.InputError{File: path, Msg: "cannot write: " + err.Error()}
	}
	return err
}

// writeCSV writes the points table: the columns as the store names them,
// the scenario last column included, one row per point in index order.
func writeCSV(w io.Writer, t *store.Table) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(t.Columns); err != nil {
		return err
	}
	rec := make([]string, len(t.Columns))
	for _, r := range t.Rows {
		for i, v := range r {
			rec[i] = store.Text(v)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeParquet writes the points table with one optional column per store
// column: INT64 for integers, DOUBLE for reals, STRING otherwise (an axis
// column holding both numbers and text is written as text).
func writeParquet(w io.Writer, t *store.Table) error {
	kinds := make([]byte, len(t.Columns)) // 'i', 'f' or 's'
	for i := range t.Columns {
		kinds[i] = columnKind(t, i)
	}
	group := parquet.Group{}
	for i, c := range t.Columns {
		switch kinds[i] {
		case 'i':
			group[c] = parquet.Optional(parquet.Int(64))
		case 'f':
			group[c] = parquet.Optional(parquet.Leaf(parquet.DoubleType))
		default:
			group[c] = parquet.Optional(parquet.String())
		}
	}
	schema := parquet.NewSchema("points", group)
	// A group's fields are in name order: map each to the table column.
	fields := schema.Fields()
	at := make([]int, len(fields))
	for j, f := range fields {
		at[j] = t.Col(f.Name())
	}
	pw := parquet.NewWriter(w, schema)
	rows := make([]parquet.Row, 0, len(t.Rows))
	for _, r := range t.Rows {
		row := make(parquet.Row, len(fields))
		for j := range fields {
			i := at[j]
			v := r[i]
			if v == nil {
				row[j] = parquet.Value{}.Level(0, 0, j)
				continue
			}
			var pv parquet.Value
			switch kinds[i] {
			case 'i':
				pv = parquet.Int64Value(v.(int64))
			case 'f':
				f, _ := toFloat(v)
				pv = parquet.DoubleValue(f)
			default:
				pv = parquet.ByteArrayValue([]byte(store.Text(v)))
			}
			row[j] = pv.Level(0, 1, j)
		}
		rows = append(rows, row)
	}
	if _, err := pw.WriteRows(rows); err != nil {
		return err
	}
	return pw.Close()
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// columnKind is a column's Parquet kind from the values it holds.
func columnKind(t *store.Table, i int) byte {
	kind := byte(0)
	for _, r := range t.Rows {
		switch r[i].(type) {
		case nil:
		case int64:
			if kind == 0 {
				kind = 'i'
			}
		case float64:
			if kind == 0 || kind == 'i' {
				kind = 'f'
			}
		default:
			kind = 's'
		}
	}
	if kind == 0 {
		// No value: the declared type (metrics are REAL or INTEGER).
		switch t.Columns[i] {
		case "idx", "seed", "completed", "failed", "gpus", "preemptions", "kv_cache_tokens":
			return 'i'
		case "id", "status", "reason", "scenario", "result":
			return 's'
		}
		return 'f'
	}
	return kind
}

func newSweepMergeCmd(stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "merge OUT SHARD...",
		Short: "Combine shard stores of one grid into one store OUT (the same as the unsharded sweep's)",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 2 {
				return &usageError{fmt.Errorf("merge takes the output directory and at least one shard store, got %d arguments", len(args))}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			t, err := store.Merge(args[0], args[1:])
			if err != nil {
				return err
			}
			rep, err := writeStoreReport(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "blis sweep merge: %d of %d points of %s in %s; report: %s\n", len(t.Rows), t.Info.Points, t.Info.Name, args[0], rep)
			if missing := t.Info.Points - len(t.Rows); missing > 0 {
				fmt.Fprintf(stderr, "blis sweep merge: %d points missing; `blis sweep GRID --out %s` runs them\n", missing, args[0])
			}
			return nil
		},
	}
}
