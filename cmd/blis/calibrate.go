package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"blis/calibrate"
	"blis/internal/progress"
)

// newCalibrateCmd is `blis calibrate`: fitting the kernel's operator laws
// to measured data.
func newCalibrateCmd(stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{Use: "calibrate", Short: "Fit the kernel's operator laws to measured data"}
	var dataDir, outDir string
	var write bool
	ops := &cobra.Command{
		Use:   "ops",
		Short: "Fit the per-operator laws (GEMM, attention, MLA, MoE, collectives) to the per-operator tables",
		Long: `Fit every operator law of kernel/laws.go, per chip, to the measured
per-operator GPU timings under --data (data/ops: aiconfigurator's vLLM 0.24.0
collections, one folder per chip), and print the error table: per law family
and dtype, for each chip, the MAPE on the rows fitted, the MAPE on whole shapes
held out, and the row counts. With --write, rewrite the coefficient files
(catalog/coeffs/<chip>.yaml) the simulator embeds. The fit is deterministic:
the same tables give byte-identical files.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if st, err := os.Stat(dataDir); err != nil || !st.IsDir() {
				return &usageError{fmt.Errorf("--data %s: not a folder of per-chip tables (want data/ops)", dataDir)}
			}
			bar := progress.New(stderr, "blis calibrate", "chips", 0, quiet(cmd))
			rep, err := calibrate.FitProgress(dataDir, func(done, total int) { bar.Update(int64(done), 0) })
			bar.Done()
			if err != nil {
				return err
			}
			if err := rep.WriteTable(stdout); err != nil {
				return err
			}
			if !write {
				return nil
			}
			files, err := rep.Files()
			if err != nil {
				return err
			}
			names := make([]string, 0, len(files))
			for n := range files {
				names = append(names, n)
			}
			sort.Strings(names)
			if err := os.MkdirAll(outDir, 0o755); err != nil {
				return err
			}
			for _, n := range names {
				p := filepath.Join(outDir, n)
				if err := os.WriteFile(p, files[n], 0o644); err != nil {
					return err
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", p)
			}
			return nil
		},
	}
	ops.Flags().StringVar(&dataDir, "data", "data/ops", "folder of measured per-operator tables, one subfolder per chip")
	ops.Flags().BoolVar(&write, "write", false, "rewrite the coefficient files under --out")
	ops.Flags().StringVar(&outDir, "out", "catalog/coeffs", "where --write puts <chip>.yaml")
	c.AddCommand(ops)
	return c
}
