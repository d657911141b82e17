package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"blis/internal/parallel"
	"blis/metrics"
	"blis/plan"
	"blis/scenario"
)

func newPlanCmd(stdout, stderr io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "plan",
		Short: "Capacity planning: the highest load under SLOs, the cheapest layout for a load, throughput per GPU against interactivity",
		Long: `Capacity planning over simulated vllm bench serve runs. Every probe is a
full simulation of the scenario, exactly as ` + "`blis run`" + ` would run it with the
same flags.

SLOs are written --slo METRIC:STAT<=VALUE (repeat the flag or separate
items with commas): ` + plan.SLOSyntax + `.
The SLOs judge the run's summary statistics (vllm bench serve's Mean/Median/
P99 lines); a run where any request failed does not pass.`,
	}
	c.AddCommand(newPlanGoodputCmd(stdout, stderr), newPlanMinGPUsCmd(stdout, stderr), newPlanParetoCmd(stdout, stderr))
	return c
}

// planBase is what every plan subcommand shares: the scenario (file and
// run flags) and the SLOs.
type planBase struct {
	s      scenario.Scenario
	slos   []string
	asJSON bool
}

func (b *planBase) bind(fs *pflag.FlagSet, needSLO bool) {
	b.s = scenario.Defaults()
	fs.SortFlags = false
	if needSLO {
		fs.StringSliceVar(&b.slos, "slo", nil, "service-level objective METRIC:STAT<=VALUE[ms|s], e.g. ttft:p90<=2000ms; repeatable")
	}
	fs.BoolVar(&b.asJSON, "json", false, "print the result as JSON instead of a table")
	bindSettings(fs, &b.s)
}

// planUsage is blis run's flag help (the settings in their groups) with
// the plan's own flags under "Other flags".
func planUsage(cmd *cobra.Command) error {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Usage:\n  %s\n", cmd.UseLine())
	writeFlagHelp(w, runExtraFlags(cmd), 100)
	return nil
}

// load applies the scenario file (flags win, as in blis run) and parses
// the SLOs, making the runs compute the statistics they name.
func (b *planBase) load(cmd *cobra.Command, args []string, needSLO bool) (scenario.Scenario, []plan.SLO, error) {
	s := b.s
	if len(args) > 1 {
		return s, nil, &usageError{fmt.Errorf("%s takes at most one scenario file, got %d arguments: %s", cmd.Name(), len(args), strings.Join(args, " "))}
	}
	if len(args) == 1 {
		file := args[0]
		data, err := os.ReadFile(file)
		if err != nil {
			return s, nil, &scenario.InputError{File: file, Msg: "cannot read the scenario: " + errors.Unwrap(err).Error()}
		}
		fs := cmd.Flags()
		changed := func(name string) bool { return fs.Changed(name) || fs.Changed("no-"+name) }
		if err := s.ApplyYAML(file, data, changed); err != nil {
			return s, nil, err
		}
	}
	var slos []plan.SLO
	for _, item := range b.slos {
		o, err := plan.ParseSLO(item)
		if err != nil {
			return s, nil, err
		}
		slos = append(slos, o)
	}
	if needSLO && len(slos) == 0 {
		return s, nil, &usageError{errors.New("give at least one --slo, e.g. --slo ttft:p90<=2000ms --slo tpot:p99<=50ms")}
	}
	// The plan's runs write nothing of their own.
	s.SaveResult, s.SaveDetailed, s.Export = false, false, ""
	plan.ApplyNeeds(&s, slos)
	return s, slos, nil
}

// planRun is one simulated run judged against the SLOs.
type planRun struct {
	// Infeasible is why the scenario cannot run (bad layout for the model:
	// does not fit, TP does not divide the heads); the run fields are then
	// empty.
	Infeasible string
	Summary    *metrics.Result
	Verdict    plan.Verdict
	GPUs       int
	GPUsByChip map[string]int
}

// runPlanned resolves and simulates s as blis run does and judges it.
// A scenario that does not resolve is infeasible, not an error: the
// caller decides whether that is fatal.
func runPlanned(s scenario.Scenario, slos []plan.SLO) (planRun, error) {
	res, err := s.Resolve()
	if err != nil {
		if scenario.IsInputError(err) {
			return planRun{Infeasible: err.Error()}, nil
		}
		return planRun{}, err
	}
	gpus := gpusOf(res)
	pr := planRun{GPUs: gpus.total, GPUsByChip: gpus.byChip}
	run, err := simulate(s, res, simOptions{})
	if err != nil {
		return planRun{}, err
	}
	if err := checkServed(io.Discard, s, run.Out); err != nil {
		if scenario.IsInputError(err) {
			return planRun{}, err
		}
		pr.Summary, pr.Verdict = run.Summary, plan.Verdict{Values: make([]float64, len(slos)), Why: err.Error()}
		return pr, nil
	}
	pr.Summary = run.Summary
	pr.Verdict, err = plan.Judge(slos, run.Summary)
	return pr, err
}

// parseTolerance reads "2%" or "0.02".
func parseTolerance(v string) (float64, error) {
	t := strings.TrimSpace(v)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSuffix(t, "%"), 0.01
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	f *= scale
	if err != nil || !(f > 0 && f < 1) {
		return 0, &usageError{fmt.Errorf("--tolerance %q: allowed: a relative tolerance above 0 and below 1, as a fraction (0.02) or a percentage (2%%)", v)}
	}
	return f, nil
}

// sloHeader is the SLO statistics' column names.
func sloHeader(slos []plan.SLO) string {
	var b strings.Builder
	for _, o := range slos {
		b.WriteString("\t" + o.Name())
	}
	return b.String()
}

func sloCells(v plan.Verdict) string {
	var b strings.Builder
	for _, x := range v.Values {
		fmt.Fprintf(&b, "\t%.2f", x)
	}
	return b.String()
}

func verdictText(pr planRun) string {
	switch {
	case pr.Infeasible != "":
		return "infeasible: " + pr.Infeasible
	case pr.Verdict.Pass:
		return "pass"
	}
	return "fail: " + pr.Verdict.Why
}

func sloValues(slos []plan.SLO, v plan.Verdict) map[string]float64 {
	m := map[string]float64{}
	for i, o := range slos {
		if i < len(v.Values) {
			m[o.Name()] = v.Values[i]
		}
	}
	return m
}

func sloStrings(slos []plan.SLO) []string {
	out := make([]string, len(slos))
	for i, o := range slos {
		out[i] = o.String()
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// ---- goodput ----

const (
	searchRate        = "request-rate"
	searchConcurrency = "max-concurrency"
)

type goodputProbe struct {
	Load              float64            `json:"load"`
	SLOValuesMS       map[string]float64 `json:"slo_values_ms"`
	Pass              bool               `json:"pass"`
	Why               string             `json:"why,omitempty"`
	Completed         int                `json:"completed"`
	Failed            int                `json:"failed"`
	RequestThroughput float64            `json:"request_throughput"`
	OutputThroughput  float64            `json:"output_throughput"`
}

type goodputResult struct {
	Search    string         `json:"search"`
	SLOs      []string       `json:"slos"`
	Tolerance float64        `json:"tolerance"`
	Probes    []goodputProbe `json:"probes"`
	Found     bool           `json:"found"`
	NoneMeets bool           `json:"none_meets"`
	AtCap     bool           `json:"at_cap"`
	Best      float64        `json:"best,omitempty"`
	FirstFail float64        `json:"first_fail,omitempty"`
	Answer    string         `json:"answer"`
}

func newPlanGoodputCmd(stdout, stderr io.Writer) *cobra.Command {
	var b planBase
	var search, tol string
	var lo, hi, maxLoad float64
	cmd := &cobra.Command{
		Use:   "goodput [scenario.yaml] --slo ... [--search request-rate|max-concurrency]",
		Short: "Find the highest request rate or concurrency whose run meets the SLOs",
		Long: `Find the highest load that meets every SLO, by bisection.

The load is one of vllm bench serve's knobs, the rest of the scenario held:
  --search request-rate     the client's --request-rate (requests per second,
                            Poisson arrivals shaped by --burstiness) sending
                            --num-prompts requests; --max-concurrency, if
                            given, still caps the requests in flight.
  --search max-concurrency  the client's --max-concurrency (requests in
                            flight; whole numbers), with --request-rate as
                            given (inf by default: a closed loop that keeps
                            that many requests in flight).
Each probe is a full simulated run of --num-prompts requests at that load.

The search probes --lo, then doubles it until a load fails (or, with --hi,
probes --hi), then bisects until the lowest failing load is within the
tolerance of the highest passing one. It ASSUMES SLO attainment is monotone
in the load (if a load fails, every higher load fails), which holds for
queueing delay to first order but not for every scenario: read the probes.
If even --lo fails, no load meets the SLOs (exit 0); if no load up to --max
(or the given --hi) fails, the answer is that cap and says so.

Every probe sends the same requests (--seed). Above capacity the queue grows
for as long as requests arrive, so a short run (few --num-prompts) can pass a
load a longer one fails: give enough prompts for the queue to settle.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, slos, err := b.load(cmd, args, true)
			if err != nil {
				return err
			}
			t, err := parseTolerance(tol)
			if err != nil {
				return err
			}
			sr := plan.Search{Lo: lo, Hi: hi, Max: maxLoad, Tolerance: t}
			switch search {
			case searchRate:
				if !cmd.Flags().Changed("max") {
					sr.Max = 1024
				}
			case searchConcurrency:
				sr.Integer = true
				if !cmd.Flags().Changed("max") {
					// More in flight than requests sent is no cap at all.
					sr.Max = float64(cmp.Or(s.NumPrompts, scenario.DefaultNumPrompts))
				}
			default:
				return &usageError{fmt.Errorf("--search %q: allowed: %s, %s", search, searchRate, searchConcurrency)}
			}
			if err := checkSearch(sr); err != nil {
				return err
			}
			if len(s.Load.Stages) > 0 {
				return &usageError{errors.New("--stages sets the load stage by stage; plan goodput searches one --request-rate or --max-concurrency: drop --stages")}
			}
			out := goodputResult{Search: search, SLOs: sloStrings(slos), Tolerance: t}
			var tw *tabwriter.Writer
			if !b.asJSON {
				fmt.Fprintf(stdout, "Highest --%s meeting %s, to within %g%%.\n", search, strings.Join(out.SLOs, ", "), t*100)
				fmt.Fprintln(stdout, "Assumes SLO attainment is monotone in the load: a load above one that fails also fails.")
				tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintf(tw, "probe\t%s%s\tcompleted\trequest/s\toutput tok/s\tresult\n", search, sloHeader(slos))
			}
			eval := func(x float64) (bool, error) {
				p := s
				if sr.Integer {
					p.MaxConcurrency = int(x)
				} else {
					p.RequestRate = x
				}
				pr, err := runPlanned(p, slos)
				if err != nil {
					return false, err
				}
				if pr.Infeasible != "" {
					return false, &scenario.InputError{Msg: pr.Infeasible}
				}
				gp := goodputProbe{Load: x, SLOValuesMS: sloValues(slos, pr.Verdict), Pass: pr.Verdict.Pass, Why: pr.Verdict.Why,
					Completed: pr.Summary.Completed, Failed: pr.Summary.Failed,
					RequestThroughput: pr.Summary.RequestThroughput, OutputThroughput: pr.Summary.OutputThroughput}
				out.Probes = append(out.Probes, gp)
				if tw != nil {
					fmt.Fprintf(tw, "%d\t%g%s\t%d\t%.2f\t%.1f\t%s\n", len(out.Probes), x, sloCells(pr.Verdict), gp.Completed, gp.RequestThroughput, gp.OutputThroughput, verdictText(pr))
				}
				if !quiet(cmd) {
					fmt.Fprintf(stderr, "blis plan goodput: probe %d: --%s %g: %s\n", len(out.Probes), search, x, verdictText(pr))
				}
				return pr.Verdict.Pass, nil
			}
			o, err := sr.Run(eval)
			if err != nil {
				return err
			}
			out.Found, out.NoneMeets, out.AtCap, out.Best, out.FirstFail = o.Found, o.NoneMeets, o.AtCap, o.Best, o.FirstFail
			switch {
			case o.NoneMeets:
				out.Answer = fmt.Sprintf("no load meets the SLOs: even --%s %g fails", search, o.FirstFail)
				if !sr.Integer || o.FirstFail > 1 {
					out.Answer += " (a lower --lo may pass)"
				}
			case o.AtCap:
				out.Answer = fmt.Sprintf("--%s %g meets the SLOs and is the cap of the search (--max or --hi): the highest load may be higher", search, o.Best)
			default:
				out.Answer = fmt.Sprintf("--%s %g meets the SLOs; %g does not (within %g%%: %g ≤ %g × %g)", search, o.Best, o.FirstFail, t*100, o.FirstFail, o.Best, 1+t)
				if sr.Integer && o.FirstFail == o.Best+1 {
					out.Answer = fmt.Sprintf("--%s %g meets the SLOs; %g does not (exact)", search, o.Best, o.FirstFail)
				}
			}
			if b.asJSON {
				return writeJSON(stdout, out)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(stdout, "Answer:", out.Answer)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&search, "search", searchRate, "the load to search: request-rate or max-concurrency")
	fs.Float64Var(&lo, "lo", 1, "the lowest load probed (requests/s, or requests in flight)")
	fs.Float64Var(&hi, "hi", 0, "the upper end of the bracket; 0 doubles --lo until a load fails")
	fs.Float64Var(&maxLoad, "max", 0, "the highest load the bracketing probes (default 1024 requests/s, or --num-prompts in flight)")
	fs.StringVar(&tol, "tolerance", "2%", "relative tolerance of the answer: 2% or 0.02")
	b.bind(fs, true)
	cmd.SetUsageFunc(planUsage)
	return cmd
}

func checkSearch(sr plan.Search) error {
	switch {
	case !(sr.Lo > 0) || math.IsInf(sr.Lo, 0):
		return &usageError{fmt.Errorf("--lo %g: allowed: a positive finite load", sr.Lo)}
	case sr.Hi != 0 && !(sr.Hi > sr.Lo):
		return &usageError{fmt.Errorf("--hi %g: allowed: 0 (bracket by doubling) or a load above --lo %g", sr.Hi, sr.Lo)}
	case !(sr.Max >= sr.Lo) || math.IsInf(sr.Max, 0):
		return &usageError{fmt.Errorf("--max %g: allowed: a finite load at least --lo %g", sr.Max, sr.Lo)}
	case sr.Integer && (sr.Lo != math.Floor(sr.Lo) || sr.Hi != math.Floor(sr.Hi) || sr.Max != math.Floor(sr.Max)):
		return &usageError{fmt.Errorf("--search max-concurrency takes whole numbers: --lo %g, --hi %g, --max %g", sr.Lo, sr.Hi, sr.Max)}
	}
	return nil
}

// forEachParallel calls f(0..n-1) on jobs goroutines (0: GOMAXPROCS, the
// CPUs this process may use, as blis sweep counts them: in a pod its CPU
// limit, where runtime.NumCPU would count the node's) and returns the
// first error by index. Each f writes only its own result slot, so the
// output is the same whatever the interleaving.
func forEachParallel(n, jobs int, f func(i int) error) error {
	errs := make([]error, n)
	parallel.Each(jobs, n, func(i int) { errs[i] = f(i) })
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
