// Command blis is the BLIS command line: parse, build, run, write. The logic
// lives in the packages; this file only wires them.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"blis/internal/buildinfo"
	"blis/scenario"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exit codes: 0 ok, 1 failure, 2 bad input.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(normalizeArgs(args))
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "blis:", err)
	var ue *usageError
	// cobra reports a mistyped subcommand only as text.
	if errors.As(err, &ue) || scenario.IsInputError(err) || strings.HasPrefix(err.Error(), "unknown command") {
		return 2
	}
	return 1
}

// usageError marks bad command-line input (unknown flag, bad value, wrong
// arguments).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// normalizeArgs accepts vLLM's spellings pflag cannot express: the two-letter
// short flags -tp and -dp (and -tp=N, -dp=N), underscores in long flag
// names, and the flags argparse gives several words (nargs "*" or "+",
// scenario.MultiValueFlags): `--goodput ttft:100 tpot:50` becomes one flag
// per word. A word joins the list when it has the item's shape (KEY=VALUE,
// KEY:VALUE) and is not a flag, so a scenario file after the list stays a
// file.
func normalizeArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "-tp":
			a = "--tensor-parallel-size"
		case strings.HasPrefix(a, "-tp="):
			a = "--tensor-parallel-size=" + strings.TrimPrefix(a, "-tp=")
		case a == "-pp":
			a = "--pipeline-parallel-size"
		case strings.HasPrefix(a, "-pp="):
			a = "--pipeline-parallel-size=" + strings.TrimPrefix(a, "-pp=")
		case a == "-dp":
			a = "--data-parallel-size"
		case strings.HasPrefix(a, "-dp="):
			a = "--data-parallel-size=" + strings.TrimPrefix(a, "-dp=")
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			name = strings.ReplaceAll(name, "_", "-")
			a = "--" + name
			if hasVal {
				a += "=" + val
				break
			}
			sep, multi := scenario.MultiValueFlags[name]
			if !multi || i+1 >= len(args) {
				break
			}
			out = append(out, a, args[i+1])
			i++
			for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && strings.Contains(args[i+1], sep) {
				out = append(out, a, args[i+1])
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "blis",
		Short:         "BLIS simulates vLLM / llm-d inference serving and predicts what a benchmark would measure",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentFlags().BoolP("quiet", "q", false, "no progress bar (it is drawn on stderr only when stderr is a terminal)")
	root.AddCommand(newRunCmd(stdout, stderr), newCatalogCmd(stdout), newValidateCmd(stdout, stderr), newCalibrateCmd(stdout, stderr), newVersionCmd(stdout), newFlagsCmd(stdout), newSpecCmd(stdout), newSweepCmd(stdout, stderr), newPlanCmd(stdout, stderr))
	return root
}

// quiet reports whether --quiet was given to cmd or a parent.
func quiet(cmd *cobra.Command) bool {
	q, _ := cmd.Flags().GetBool("quiet")
	return q
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the BLIS version and build",
		Args:  cobra.NoArgs,
		Run: func(*cobra.Command, []string) {
			fmt.Fprintln(stdout, "blis", buildinfo.Current().Text())
		},
	}
}
