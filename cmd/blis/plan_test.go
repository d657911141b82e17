package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"blis/plan"
	"blis/scenario"
	"blis/sweep/grid"
)

// planSmall is a small model and workload that each plan probe runs fast.
var planSmall = []string{"-q", "--model", "qwen2.5-7b", "--num-prompts", "200"}

// TestPlanGoodputSearch runs a real search and checks its claim: the answer
// meets the SLOs and answer × (1 + tolerance) does not, each checked by a
// run of its own; the output is byte-identical on a second run.
func TestPlanGoodputSearch(t *testing.T) {
	for _, tc := range []struct {
		search string
		slos   []string
	}{
		{"request-rate", []string{"ttft:p90<=200ms", "tpot:p99<=20ms"}},
		{"max-concurrency", []string{"ttft:p90<=200ms,tpot:p99<=20ms"}},
	} {
		t.Run(tc.search, func(t *testing.T) {
			args := append([]string{"plan", "goodput", "--search", tc.search, "--tolerance", "2%", "--json"}, planSmall...)
			for _, o := range tc.slos {
				args = append(args, "--slo", o)
			}
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var r goodputResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			if !r.Found || r.Best <= 1 || len(r.Probes) < 3 {
				t.Fatalf("no answer: %s", out)
			}
			if _, out2, _ := runCLI(t, args...); out2 != out {
				t.Fatal("a second search printed something else")
			}
			var slos []plan.SLO
			for _, item := range []string{"ttft:p90<=200ms", "tpot:p99<=20ms"} {
				o, _ := plan.ParseSLO(item)
				slos = append(slos, o)
			}
			at := func(load float64) bool {
				s := scenario.Defaults()
				s.Model, s.NumPrompts = "qwen2.5-7b", 200
				plan.ApplyNeeds(&s, slos)
				if tc.search == "max-concurrency" {
					s.MaxConcurrency = int(load)
				} else {
					s.RequestRate = load
				}
				pr, err := runPlanned(s, slos)
				if err != nil || pr.Infeasible != "" {
					t.Fatal(err, pr.Infeasible)
				}
				return pr.Verdict.Pass
			}
			above := r.Best * (1 + r.Tolerance)
			if tc.search == "max-concurrency" {
				above = max(r.Best+1, float64(int(above)))
			}
			if !at(r.Best) || at(above) {
				t.Fatalf("answer %g should pass and %g fail: %s", r.Best, above, r.Answer)
			}
		})
	}
}

func TestPlanGoodputEdges(t *testing.T) {
	code, out, errs := runCLI(t, append([]string{"plan", "goodput", "--slo", "ttft:p90<=1ms"}, planSmall...)...)
	if code != 0 || !strings.Contains(out, "Answer: no load meets the SLOs: even --request-rate 1 fails (a lower --lo may pass)") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, append([]string{"plan", "goodput", "--slo", "ttft:p90<=60s", "--max", "8"}, planSmall...)...)
	if code != 0 || !strings.Contains(out, "--request-rate 8 meets the SLOs and is the cap") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	if !strings.Contains(out, "Assumes SLO attainment is monotone") {
		t.Fatalf("the search does not state its assumption: %s", out)
	}
}

// TestPlanMinGPUs: the answer is the passing candidate with the fewest
// GPUs, or with --minimize cost and the user's prices the cheapest; a
// layout that cannot run is listed as infeasible.
func TestPlanMinGPUs(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.yaml")
	os.WriteFile(prices, []byte("usd_per_gpu_hour: {h100: 1, b200: 10, h200: 0.5}\n"), 0o644)
	base := []string{"plan", "min-gpus", "-q", "--model", "llama-3.1-70b", "--num-prompts", "200", "--request-rate", "8",
		"--slo", "ttft:p90<=1000ms", "--slo", "tpot:p99<=50ms", "--json",
		"--layout", "hardware=h100,tensor-parallel-size=8", "--layout", "hardware=h100,tensor-parallel-size=4",
		"--layout", "hardware=b200,tensor-parallel-size=2", "--layout", "hardware=h100,tensor-parallel-size=3",
		"--layout", "hardware=h200,tensor-parallel-size=2"}
	for _, tc := range []struct {
		extra []string
		best  string
	}{
		{nil, "hardware=b200,tensor-parallel-size=2"},
		{[]string{"--minimize", "cost", "--prices", prices}, "hardware=h100,tensor-parallel-size=4"},
	} {
		code, out, errs := runCLI(t, append(slices.Clone(base), tc.extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var r minGPUsResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Best == nil || r.Best.Layout != tc.best {
			t.Fatalf("%v: best %+v, want %s\n%s", tc.extra, r.Best, tc.best, out)
		}
		results := map[string]string{}
		for _, c := range r.Candidates {
			results[c.Layout] = c.Result
		}
		if results["hardware=h100,tensor-parallel-size=3"] != "infeasible" || results["hardware=h200,tensor-parallel-size=2"] != "fail" {
			t.Fatalf("results %v", results)
		}
		// No passing candidate is cheaper than the answer.
		for _, c := range r.Candidates {
			if c.Result == "pass" && (c.GPUs < r.Best.GPUs && r.Minimize == "gpus" || *c.CostPerHour < *r.Best.CostPerHour && r.Minimize == "cost") {
				t.Fatalf("%s is cheaper than the answer %s", c.Layout, r.Best.Layout)
			}
		}
	}
}

// A --layouts grid's points set the store's percentiles (50, 90, 99); the
// candidates still compute every percentile the SLOs name.
func TestPlanMinGPUsGridComputesSLOPercentiles(t *testing.T) {
	g := filepath.Join(t.TempDir(), "layouts.yaml")
	os.WriteFile(g, []byte("name: l\nbase: {model: qwen2.5-7b}\naxes:\n  hardware: [h100]\n"), 0o644)
	code, out, errs := runCLI(t, "plan", "min-gpus", "-q", "--num-prompts", "30", "--request-rate", "2", "--json",
		"--slo", "ttft:p95<=10s", "--slo", "tpot:p99.9<=1s", "--layouts", g)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r minGPUsResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if c := r.Candidates[0]; c.Result != "pass" || c.SLOValuesMS["p95_ttft_ms"] <= 0 || c.SLOValuesMS["p99.9_tpot_ms"] <= 0 {
		t.Fatalf("candidate %+v", c)
	}
}

// A target load given as --stages is named as such.
func TestPlanMinGPUsStagesLoad(t *testing.T) {
	code, out, errs := runCLI(t, "plan", "min-gpus", "-q", "--model", "qwen2.5-7b", "--stages", "[{rate: 2, duration: 3}]",
		"--slo", "ttft:p90<=10s", "--layout", "hardware=h100")
	if code != 0 || !strings.HasPrefix(out, "Cheapest layout (by gpus) serving --stages [{rate: 2, duration: 3}] under ") {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
}

// TestPlanPareto runs a small grid: every feasible point's frontier mark
// agrees with plan.Frontier, and the HTML, SVG and PNG files are written.
func TestPlanPareto(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "grid.yaml")
	os.WriteFile(g, []byte("name: t\nbase: {model: qwen2.5-7b, num-prompts: 100}\naxes:\n  tensor-parallel-size: [1, 2]\nload:\n  max-concurrency: [1, 8, 32]\n"), 0o644)
	html, svg, png := filepath.Join(dir, "p.html"), filepath.Join(dir, "p.svg"), filepath.Join(dir, "p.png")
	code, out, errs := runCLI(t, "plan", "pareto", "-q", g, "--json", "--html", html, "--svg", svg, "--png", png)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r paretoResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 6 {
		t.Fatalf("%d points", len(r.Points))
	}
	var xy []plan.Point
	for _, p := range r.Points {
		if p.Status != "ok" || p.Interactivity <= 0 || p.TputPerGPU <= 0 {
			t.Fatalf("point %+v", p)
		}
		xy = append(xy, plan.Point{X: p.Interactivity, Y: p.TputPerGPU})
	}
	front := plan.Frontier(xy)
	for i, p := range r.Points {
		if p.Frontier != slices.Contains(front, i) {
			t.Fatalf("point %d frontier %v, want %v", i, p.Frontier, !p.Frontier)
		}
	}
	if len(front) == 0 {
		t.Fatal("empty frontier")
	}
	for _, f := range []string{html, svg, png} {
		if st, err := os.Stat(f); err != nil || st.Size() < 500 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), "Pareto frontier") || !strings.Contains(string(page), "tensor-parallel-size=2") {
		t.Fatal("the page lacks the frontier or a configuration")
	}
}

func TestPlanInputErrors(t *testing.T) {
	dir := t.TempDir()
	badPrices := filepath.Join(dir, "p.yaml")
	os.WriteFile(badPrices, []byte("usd_per_gpu_hour: {tpu9: 1}\n"), 0o644)
	noLayouts := filepath.Join(dir, "none.yaml")
	os.WriteFile(noLayouts, []byte("name: none\naxes: {hardware: [h100]}\nexclude: [{hardware: h100}]\n"), 0o644)
	mg := []string{"plan", "min-gpus", "--request-rate", "4", "--slo", "ttft:p90<=1s"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "goodput"}, "give at least one --slo"},
		{[]string{"plan", "goodput", "--slo", "ttft:p90<2000"}, `--slo "ttft:p90<2000": no '<=' before the bound`},
		{[]string{"plan", "goodput", "--slo", "ttft:p90<=1s", "--search", "rate"}, `--search "rate": allowed: request-rate, max-concurrency`},
		{[]string{"plan", "goodput", "--slo", "ttft:p90<=1s", "--tolerance", "200%"}, `--tolerance "200%": allowed`},
		{[]string{"plan", "goodput", "--slo", "ttft:p90<=1s", "--search", "max-concurrency", "--lo", "1.5"}, "takes whole numbers"},
		{[]string{"plan", "goodput", "--slo", "ttft:p90<=1s", "--lo", "4", "--hi", "2"}, "--hi 2: allowed"},
		{[]string{"plan", "goodput", "--slo", "ttft:p90<=1s", "--stages", "[{rate: 1, duration: 10}]"}, "drop --stages"},
		{[]string{"plan", "min-gpus", "--slo", "ttft:p90<=1s", "--layout", "hardware=h100"}, "give the target load"},
		{append(slices.Clone(mg), "--layout", "hardware=h100,tp=4"), `unknown key "tp"`},
		{append(slices.Clone(mg), "--layout", "hardware=h100,tensor-parallel-size=four"), `tensor-parallel-size="four"`},
		{append(slices.Clone(mg), "--layout", "hardware"), `item "hardware" is not KEY=VALUE`},
		{append(slices.Clone(mg), "--layout", "hardware=h100", "--prices", badPrices), `usd_per_gpu_hour.tpu9: unknown chip "tpu9"`},
		{append(slices.Clone(mg), "--layout", "hardware=h100", "--minimize", "watts"), `--minimize "watts": allowed: gpus, cost`},
		{slices.Clone(mg), "give the candidate layouts"},
		{append(slices.Clone(mg), "--layouts", noLayouts), "exclude: the exclusions leave no candidate layout"},
		{append(slices.Clone(mg), "--max-replicas", "4", "--layout", "hardware=h100, --replicas=2"), "which --max-replicas searches"},
		{append(slices.Clone(mg), "--max-replicas", "4", "--layout", "hardware=h100", "--replicas", "2"), "which --max-replicas searches"},
		{[]string{"plan", "pareto", dir}, "not a sweep store"},
		{[]string{"plan", "pareto", badPrices, "--y", "input"}, `--y "input": allowed: total, output`},
	} {
		code, _, errs := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 with %q", tc.args, code, errs, tc.want)
		}
	}
}

// The grids docs/planning.md runs parse, and the layouts grid has no load
// axis (min-gpus refuses one).
func TestPlanExampleGrids(t *testing.T) {
	for _, f := range []string{"../../examples/plan/llama-3.1-70b-layouts.yaml", "../../examples/plan/llama-3.1-70b-pareto.yaml"} {
		g, err := grid.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		hasLoad := slices.ContainsFunc(g.Keys(), func(k string) bool { return slices.Contains(loadKeys, k) })
		if hasLoad != strings.HasSuffix(f, "pareto.yaml") {
			t.Errorf("%s: load axis %v", f, hasLoad)
		}
	}
}

func FuzzApplyLayout(f *testing.F) {
	for _, s := range []string{"hardware=h100,tensor-parallel-size=4,replicas=2", "tp=4", "hardware", "=,", "max-num-seqs=-1", "--hardware=b200"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, layout string) {
		s := scenario.Defaults()
		if err := applyLayout(&s, layout); err != nil {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "--layout ") {
				t.Fatalf("%q: %v", layout, err)
			}
		}
	})
}

func FuzzParseTolerance(f *testing.F) {
	for _, s := range []string{"2%", "0.02", "100%", "-1", "nan", "1e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		tol, err := parseTolerance(v)
		if err == nil && !(tol > 0 && tol < 1) {
			t.Fatalf("%q: %g", v, tol)
		}
	})
}

// The plan's tables are byte-identical from run to run.
func TestPlanOutputIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "grid.yaml")
	os.WriteFile(g, []byte("base: {model: qwen2.5-7b, num-prompts: 50}\naxes:\n  tensor-parallel-size: [1, 2]\nload:\n  request-rate: [2, 20]\n"), 0o644)
	layouts := filepath.Join(dir, "l.yaml")
	os.WriteFile(layouts, []byte("axes:\n  tensor-parallel-size: [1, 2, 3]\n"), 0o644)
	for _, args := range [][]string{
		{"plan", "pareto", "-q", g},
		append([]string{"plan", "min-gpus", "--request-rate", "10", "--slo", "ttft:p99<=500ms", "--layouts", layouts}, planSmall...),
	} {
		c1, o1, e1 := runCLI(t, args...)
		c2, o2, _ := runCLI(t, args...)
		if c1 != 0 || c1 != c2 || o1 != o2 || o1 == "" {
			t.Fatalf("%v: exit %d/%d, %s\n%s\n---\n%s", args, c1, c2, e1, o1, o2)
		}
	}
}

// pareto of a blis sweep store gives the table pareto of the same grid
// gives by running it.
func TestPlanParetoFromStore(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "grid.yaml")
	os.WriteFile(g, []byte("name: t\nbase: {model: qwen2.5-7b, num-prompts: 60}\naxes:\n  tensor-parallel-size: [1, 2, 3]\nload:\n  max-concurrency: [2, 16]\n"), 0o644)
	st := filepath.Join(dir, "store")
	if code, _, errs := runCLI(t, "sweep", "-q", g, "--out", st); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, errs)
	}
	c1, fromStore, e1 := runCLI(t, "plan", "pareto", "-q", st)
	c2, fromGrid, e2 := runCLI(t, "plan", "pareto", "-q", g)
	if c1 != 0 || c2 != 0 {
		t.Fatalf("exit %d %d: %s %s", c1, c2, e1, e2)
	}
	if fromStore != fromGrid || !strings.Contains(fromGrid, "*") || !strings.Contains(fromGrid, "infeasible: ") {
		t.Fatalf("store:\n%s\ngrid:\n%s", fromStore, fromGrid)
	}
}

// BenchmarkPlanParetoExample runs docs/planning.md's pareto grid (36
// points of Llama-3.1-70B, 400 requests each).
func BenchmarkPlanParetoExample(b *testing.B) {
	for b.Loop() {
		if code := run([]string{"plan", "pareto", "-q", "../../examples/plan/llama-3.1-70b-pareto.yaml"}, io.Discard, io.Discard); code != 0 {
			b.Fatal("exit", code)
		}
	}
}

// min-gpus --max-replicas scales each layout out to the fewest replicas
// that meet the SLOs: one replica fewer fails.
func TestPlanMinGPUsReplicas(t *testing.T) {
	base := []string{"-q", "--model", "llama-3.1-70b", "--num-prompts", "300", "--request-rate", "20",
		"--slo", "ttft:p90<=1000ms", "--slo", "tpot:p99<=40ms"}
	code, out, errs := runCLI(t, append([]string{"plan", "min-gpus", "--json", "--max-replicas", "8",
		"--layout", "hardware=h100,tensor-parallel-size=4", "--layout", "hardware=b200,tensor-parallel-size=2"}, base...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r minGPUsResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	for _, c := range r.Candidates {
		name, reps, ok := strings.Cut(c.Layout, ",replicas=")
		if !ok || c.Result != "pass" || reps == "1" {
			t.Fatalf("candidate %+v: want a pass with more than one replica", c)
		}
		n := 0
		fmt.Sscan(reps, &n)
		code, out, _ := runCLI(t, append([]string{"plan", "min-gpus", "--json", "--layout", fmt.Sprintf("%s,replicas=%d", name, n-1)}, base...)...)
		if code != 0 || !strings.Contains(out, `"result": "fail"`) {
			t.Fatalf("%s with %d replicas: exit %d, %s", name, n-1, code, out)
		}
	}
	if code, _, errs := runCLI(t, append([]string{"plan", "min-gpus", "--max-replicas", "4", "--layout", "hardware=h100,replicas=2"}, base...)...); code != 2 || !strings.Contains(errs, "sets replicas") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// docs/planning.md shows real output: every "$ blis plan ..." block is run
// and must print what the block shows, and the chart it writes must be
// the SVG the page embeds.
func TestPlanningDocIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every example of docs/planning.md")
	}
	doc, err := os.ReadFile("../../docs/planning.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```\n$ ")
	if len(blocks) < 4 {
		t.Fatalf("%d examples in docs/planning.md", len(blocks)-1)
	}
	dir := t.TempDir()
	for _, b := range blocks[1:] {
		b, _, _ = strings.Cut(b, "\n```")
		var cmdLine strings.Builder
		lines := strings.Split(b, "\n")
		i := 0
		for ; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			cmdLine.WriteString(strings.TrimSuffix(l, "\\") + " ")
			if !strings.HasSuffix(l, "\\") {
				break
			}
		}
		want := strings.Join(lines[i+1:], "\n") + "\n"
		args := strings.Fields(strings.ReplaceAll(cmdLine.String(), "'", ""))
		if args[0] != "blis" {
			t.Fatalf("example %q", cmdLine.String())
		}
		args = args[1:]
		svgAt := -1
		for k, a := range args {
			if strings.HasPrefix(a, "examples/") {
				args[k] = "../../" + a
			}
			if a == "--svg" {
				svgAt = k + 1
			}
		}
		var docSVG string
		if svgAt > 0 {
			docSVG, args[svgAt] = "../../"+args[svgAt], filepath.Join(dir, "chart.svg")
		}
		code, out, errs := runCLI(t, args...)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d %s\ngot:\n%s\ndocs/planning.md shows:\n%s", cmdLine.String(), code, errs, out, want)
		}
		if docSVG != "" {
			got, _ := os.ReadFile(args[svgAt])
			if old, _ := os.ReadFile(docSVG); string(got) != string(old) {
				t.Errorf("%s is stale: rerun %s", docSVG, cmdLine.String())
			}
		}
	}
}

// --jobs changes nothing but the time.
func TestPlanJobsGiveTheSameOutput(t *testing.T) {
	args := []string{"plan", "pareto", "-q", "../../examples/plan/llama-3.1-70b-pareto.yaml"}
	_, one, _ := runCLI(t, append(slices.Clone(args), "--jobs", "1")...)
	_, four, _ := runCLI(t, append(slices.Clone(args), "--jobs", "4")...)
	if one == "" || one != four {
		t.Fatalf("--jobs 1:\n%s\n--jobs 4:\n%s", one, four)
	}
}
