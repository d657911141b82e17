package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"blis/plan"
	"blis/scenario"
	"blis/sweep/grid"
)

// applyLayout sets the scenario keys of one --layout item,
// "hardware=h100,tensor-parallel-size=4,replicas=2": any key of the
// settings table (the flags of blis run).
func applyLayout(s *scenario.Scenario, layout string) error {
	byName := map[string]scenario.Setting{}
	for _, st := range s.Settings() {
		byName[st.Name] = st
	}
	if strings.TrimSpace(layout) == "" {
		return &usageError{fmt.Errorf("--layout \"\": allowed: KEY=VALUE,... with keys of blis run's flags, e.g. hardware=h100,tensor-parallel-size=4,replicas=2")}
	}
	for _, kv := range strings.Split(layout, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = layoutKey(k)
		st, known := byName[k]
		switch {
		case !ok:
			return &usageError{fmt.Errorf("--layout %q: item %q is not KEY=VALUE", layout, kv)}
		case !known:
			return &usageError{fmt.Errorf("--layout %q: unknown key %q; allowed: the flags of blis run (blis flags lists them)", layout, k)}
		}
		if err := st.Value.Set(strings.TrimSpace(v)); err != nil {
			return &usageError{fmt.Errorf("--layout %q: %s=%q: %v", layout, k, strings.TrimSpace(v), err)}
		}
	}
	return nil
}

// layoutKey is a --layout item's key as the settings table names it:
// "--tensor_parallel_size " is tensor-parallel-size.
func layoutKey(k string) string {
	return strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(k), "--"), "_", "-")
}

// setsReplicas reports whether a layout names the replicas key.
func setsReplicas(layout string) bool {
	return slices.ContainsFunc(strings.Split(layout, ","), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return layoutKey(k) == "replicas"
	})
}

type minGPUsRow struct {
	Layout      string             `json:"layout"`
	GPUs        int                `json:"gpus,omitempty"`
	GPUsByChip  map[string]int     `json:"gpus_by_chip,omitempty"`
	CostPerHour *float64           `json:"usd_per_hour,omitempty"`
	SLOValuesMS map[string]float64 `json:"slo_values_ms,omitempty"`
	Result      string             `json:"result"` // pass, fail or infeasible
	Why         string             `json:"why,omitempty"`
}

type minGPUsResult struct {
	Load       string       `json:"load"`
	SLOs       []string     `json:"slos"`
	Minimize   string       `json:"minimize"`
	Candidates []minGPUsRow `json:"candidates"` // ranked
	Answer     string       `json:"answer"`
	Best       *minGPUsRow  `json:"best,omitempty"`
}

func newPlanMinGPUsCmd(stdout, stderr io.Writer) *cobra.Command {
	var b planBase
	var layouts []string
	var pricesFile, minimize, gridFile string
	var maxReplicas, jobs int
	cmd := &cobra.Command{
		Use:   "min-gpus [scenario.yaml] --slo ... --request-rate R|--max-concurrency C --layout K=V,... [--layout ...]",
		Short: "Find the cheapest layout that serves a target load under the SLOs",
		Long: `Run the scenario at the target load (--request-rate and/or --max-concurrency,
as vllm bench serve takes them) on each candidate layout and pick the one
that meets every SLO with the fewest GPUs (--minimize gpus) or the lowest
price per hour (--minimize cost).

A layout is a comma-separated list of blis run's settings that replace the
scenario's: --layout 'hardware=h100,tensor-parallel-size=4,replicas=2'
(repeat --layout for each candidate), and/or --layouts GRID.yaml, a sweep
grid file (blis sweep's: axes over any scenario key, no load axis) whose
points are the candidates; flags given on the command line win over the
grid's values. GPUs count every pool's replicas ×
data-parallel × tensor-parallel × pipeline-parallel ranks. A layout that
cannot run (the model does not fit, TP does not divide the heads) is listed
as infeasible with the reason.

With --max-replicas N each layout is scaled out: the fewest replicas from 1 to
N that meet the SLOs, found by bisection (assuming more replicas never serve
the load worse), is the candidate (replicas=R joins its name); a layout that
fails with N replicas is listed as failing at N.

Prices are US dollars per GPU-hour by chip: an embedded default of public
on-demand list prices (each number's source is in plan/prices.yaml; edit
your own copy) or --prices FILE with the same shape:
  usd_per_gpu_hour:
    h100: 3.00
    b200: 6.03`,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, slos, err := b.load(cmd, args, true)
			if err != nil {
				return err
			}
			if minimize != plan.MinimizeGPUs && minimize != plan.MinimizeCost {
				return &usageError{fmt.Errorf("--minimize %q: allowed: gpus, cost", minimize)}
			}
			if s.MaxConcurrency == 0 && s.RequestRate > 1e300 && len(s.Load.Stages) == 0 {
				return &usageError{fmt.Errorf("give the target load: --request-rate R (requests/s) or --max-concurrency C (requests in flight)")}
			}
			if len(layouts) == 0 && gridFile == "" {
				return &usageError{fmt.Errorf("give the candidate layouts: --layout 'hardware=h100,tensor-parallel-size=4,replicas=2' (repeatable) or --layouts GRID.yaml")}
			}
			prices := plan.DefaultPrices()
			if pricesFile != "" {
				data, err := os.ReadFile(pricesFile)
				if err != nil {
					return &scenario.InputError{File: pricesFile, Msg: "cannot read the price table: " + err.Error()}
				}
				if prices, err = plan.ParsePrices(pricesFile, data); err != nil {
					return err
				}
			}
			scens := make([]scenario.Scenario, len(layouts))
			for i, l := range layouts {
				scens[i] = s
				if err := applyLayout(&scens[i], l); err != nil {
					return err
				}
			}
			if gridFile != "" {
				fs := cmd.Flags()
				changed := func(name string) bool { return fs.Changed(name) || fs.Changed("no-"+name) }
				more, names, err := gridLayouts(gridFile, s, slos, changed)
				if err != nil {
					return err
				}
				scens, layouts = append(scens, more...), append(layouts, names...)
			}
			cands := make([]plan.Candidate, len(layouts))
			runs := make([]planRun, len(layouts))
			if maxReplicas < 0 || maxReplicas > scenario.MaxReplicas {
				return &usageError{fmt.Errorf("--max-replicas %d: allowed: 0 (each layout as given) to %d", maxReplicas, scenario.MaxReplicas)}
			}
			for i := range scens {
				// The search sets replicas itself: one set anywhere else (the
				// layout, the scenario file, --replicas) would be lost.
				if maxReplicas > 0 && (setsReplicas(layouts[i]) || scens[i].Replicas != 1) {
					return &usageError{fmt.Errorf("--layout %q sets replicas (%d, by the layout, the scenario or --replicas), which --max-replicas searches: drop one", layouts[i], scens[i].Replicas)}
				}
			}
			if jobs < 0 {
				return &usageError{fmt.Errorf("--jobs %d: allowed: 0 (one per CPU) or more", jobs)}
			}
			prs, names := make([]planRun, len(scens)), make([]string, len(scens))
			err = forEachParallel(len(scens), jobs, func(i int) error {
				var err error
				if prs[i], names[i], err = runCandidate(scens[i], layouts[i], slos, maxReplicas); err != nil {
					return fmt.Errorf("--layout %q: %w", layouts[i], err)
				}
				return nil
			})
			if err != nil {
				return err
			}
			for i := range scens {
				pr, name := prs[i], names[i]
				c := plan.Candidate{Layout: name, Infeasible: pr.Infeasible, GPUs: pr.GPUs, GPUsByChip: pr.GPUsByChip, Verdict: pr.Verdict}
				if pr.Infeasible == "" {
					cost, err := prices.Cost(pr.GPUsByChip)
					switch {
					case err != nil && minimize == plan.MinimizeCost:
						return fmt.Errorf("--layout %q: %w", layouts[i], err)
					case err != nil:
						c.CostPerHour = -1 // unknown: shown as "-"
					default:
						c.CostPerHour = cost
					}
				}
				cands[i], runs[i] = c, pr
			}
			out := minGPUsResult{Load: loadText(s), SLOs: sloStrings(slos), Minimize: minimize}
			for _, i := range plan.Rank(cands, minimize) {
				c, pr := cands[i], runs[i]
				row := minGPUsRow{Layout: c.Layout, GPUs: c.GPUs, GPUsByChip: c.GPUsByChip}
				if c.Infeasible == "" && c.CostPerHour >= 0 {
					v := c.CostPerHour
					row.CostPerHour = &v
				}
				switch {
				case c.Infeasible != "":
					row.Result, row.Why = "infeasible", c.Infeasible
				case c.Verdict.Pass:
					row.Result = "pass"
					row.SLOValuesMS = sloValues(slos, c.Verdict)
				default:
					row.Result, row.Why = "fail", pr.Verdict.Why
					row.SLOValuesMS = sloValues(slos, c.Verdict)
				}
				out.Candidates = append(out.Candidates, row)
			}
			if first := out.Candidates[0]; first.Result == "pass" {
				out.Best = &first
				out.Answer = fmt.Sprintf("%s: %d GPUs%s", first.Layout, first.GPUs, costText(first.CostPerHour))
			} else {
				out.Answer = "no candidate layout meets the SLOs at " + out.Load
			}
			if b.asJSON {
				return writeJSON(stdout, out)
			}
			fmt.Fprintf(stdout, "Cheapest layout (by %s) serving %s under %s.\n", minimize, out.Load, strings.Join(out.SLOs, ", "))
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "rank\tlayout\tGPUs\t$/h%s\tresult\n", sloHeader(slos))
			for i, row := range out.Candidates {
				cells := strings.Repeat("\t-", len(slos))
				if row.SLOValuesMS != nil {
					cells = ""
					for _, o := range slos {
						cells += fmt.Sprintf("\t%.2f", row.SLOValuesMS[o.Name()])
					}
				}
				gpus := "-"
				if row.Result != "infeasible" {
					gpus = fmt.Sprint(row.GPUs)
				}
				cost := "-"
				if row.CostPerHour != nil {
					cost = fmt.Sprintf("%.2f", *row.CostPerHour)
				}
				res := row.Result
				if row.Why != "" {
					res += ": " + row.Why
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s%s\t%s\n", i+1, row.Layout, gpus, cost, cells, res)
			}
			tw.Flush()
			fmt.Fprintln(stdout, "Answer:", out.Answer)
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&layouts, "layout", nil, "a candidate layout: blis run settings as KEY=VALUE,..., e.g. hardware=h100,tensor-parallel-size=4,replicas=2; repeatable")
	fs.IntVar(&maxReplicas, "max-replicas", 0, "for each layout, find the fewest replicas (1 to this) that meet the SLOs; 0 runs each layout as given")
	fs.IntVar(&jobs, "jobs", 0, "candidates simulated at once (0: one per CPU this process may use)")
	fs.StringVar(&gridFile, "layouts", "", "a sweep grid file whose points are candidate layouts (no load axis)")
	fs.StringVar(&pricesFile, "prices", "", "price table (YAML usd_per_gpu_hour: {CHIP: USD}) in place of the embedded default")
	fs.StringVar(&minimize, "minimize", plan.MinimizeGPUs, "what the cheapest layout minimizes: gpus or cost ($/h)")
	b.bind(fs, true)
	cmd.SetUsageFunc(planUsage)
	return cmd
}

func costText(c *float64) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", $%.2f/h", *c)
}

// loadText is the target load in vllm bench serve's flags, or
// inference-perf's --stages.
func loadText(s scenario.Scenario) string {
	var parts []string
	if len(s.Load.Stages) > 0 {
		for _, st := range s.Settings() {
			if st.Name == "stages" {
				parts = append(parts, "--stages "+st.Value.String())
			}
		}
	}
	if s.RequestRate <= 1e300 {
		parts = append(parts, fmt.Sprintf("--request-rate %g", s.RequestRate))
	}
	if s.MaxConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("--max-concurrency %d", s.MaxConcurrency))
	}
	return strings.Join(parts, " ")
}

// gridLayouts expands a sweep grid into candidate scenarios: each point's
// settings over s, the command line's flags (changed) and the scenario's
// seed kept, and the statistics the SLOs name computed (a point sets the
// store's percentiles, which need not hold them). A load axis is refused:
// min-gpus holds the load fixed.
func gridLayouts(file string, s scenario.Scenario, slos []plan.SLO, changed func(string) bool) ([]scenario.Scenario, []string, error) {
	g, err := grid.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	for _, k := range g.Keys() {
		if slices.Contains(loadKeys, k) {
			return nil, nil, &scenario.InputError{File: file, Key: k, Msg: "min-gpus holds the load fixed (--request-rate, --max-concurrency): the candidates' grid may not vary it"}
		}
	}
	if err := g.CheckSize(grid.DefaultMaxPoints, false); err != nil {
		return nil, nil, err
	}
	points, err := g.Expand()
	if err != nil {
		return nil, nil, err
	}
	if len(points) == 0 {
		return nil, nil, &scenario.InputError{File: file, Key: "exclude", Msg: "the exclusions leave no candidate layout; allowed: rules that keep at least one point"}
	}
	// Every candidate serves the same requests (the scenario's seed), not
	// the seed the grid derives per point, unless the grid sets one: a
	// fair comparison of layouts.
	keep := func(name string) bool { return changed(name) || (name == "seed" && !g.SetsSeed) }
	var scens []scenario.Scenario
	var names []string
	for _, p := range points {
		c := s
		if err := c.ApplyYAML(fmt.Sprintf("%s point %d", file, p.Index), p.Scenario, keep); err != nil {
			return nil, nil, err
		}
		plan.ApplyNeeds(&c, slos)
		var kv []string
		for _, v := range p.Values {
			kv = append(kv, v.Key+"="+v.Value)
		}
		name := strings.Join(kv, ",")
		if name == "" {
			name = file + " (base)"
		}
		scens, names = append(scens, c), append(names, name)
	}
	return scens, names, nil
}

// runCandidate runs one candidate layout; with maxReplicas > 0 it finds the
// fewest replicas (1 to maxReplicas) meeting the SLOs and names the
// candidate with them.
func runCandidate(s scenario.Scenario, name string, slos []plan.SLO, maxReplicas int) (planRun, string, error) {
	if maxReplicas == 0 {
		pr, err := runPlanned(s, slos)
		return pr, name, err
	}
	runs := map[int]planRun{}
	eval := func(n int) (bool, error) {
		c := s
		c.Replicas = n
		pr, err := runPlanned(c, slos)
		if err != nil {
			return false, err
		}
		runs[n] = pr
		return pr.Infeasible == "" && pr.Verdict.Pass, nil
	}
	best, found, _, err := plan.MinPassing(1, maxReplicas, eval)
	if err != nil {
		return planRun{}, name, err
	}
	if !found {
		best = maxReplicas
	}
	pr := runs[best]
	if pr.Infeasible != "" {
		return pr, name, nil
	}
	return pr, fmt.Sprintf("%s,replicas=%d", name, best), nil
}
