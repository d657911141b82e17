package inferencex

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// argText spells one setting as a command line would.
func argText(flag, value string) string {
	switch {
	case flag == "enable-prefix-caching" && value == "false":
		return "--no-enable-prefix-caching"
	case flag == "enable-prefix-caching" && value == "true":
		return "--enable-prefix-caching"
	}
	return "--" + flag + " " + value
}

func orBlank(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteText writes the report as text: the settings applied, one line per
// simulated row, the statistics per group, and the skipped rows by reason
// (with every row when verbose).
func (r *Report) WriteText(w io.Writer, verbose bool) error {
	b := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }

	p("BLIS vs InferenceX: %s\n", r.File)
	p("Rows: %d in the file, %d filtered out (--model/--hardware), %d simulated, %d skipped.\n",
		r.Total, r.Filtered, len(r.Rows), len(r.Skipped))
	p("Compared: BLIS %s TTFT and TPOT vs silicon_ttft_ms and silicon_tpot_ms (--statistic %s). Which statistic\n", r.Statistic, r.Statistic)
	p("  InferenceX stored is not documented; the rows' TTFT growth with concurrency says mean (data/e2e/PROVENANCE.md).\n")
	step := r.StepModel
	if step == "" {
		step = "-"
	}
	p("Step model: %s. err = 100·(BLIS/measured − 1): positive = BLIS predicts a longer time than measured.\n", step)

	if len(r.Rows) > 0 {
		r.writeSettings(b)
	}

	p("\nPer row (times in ms):\n")
	p("%5s  %-22s %-5s %-5s %3s %5s %5s %5s  %10s %10s %8s  %8s %8s %8s  %-26s %s\n",
		"line", "model", "prec", "chip", "tp", "isl", "osl", "conc",
		"TTFT meas", "TTFT BLIS", "err%", "TPOT meas", "TPOT BLIS", "err%", "settings", "id")
	for i := range r.Rows {
		x := &r.Rows[i]
		row := x.Plan.Row
		p("%5d  %-22s %-5s %-5s %3d %5d %5d %5d  %10.1f %10.1f %+8.1f  %8.2f %8.2f %+8.1f  %-26s %s\n",
			row.Line, shortModel(row.ModelPath), orBlank(row.Precision), x.Plan.Chip, row.Agg.TP, row.ISL, row.OSL,
			x.Plan.Concurrency, row.TTFTms, x.TTFTms, x.TTFTError, row.TPOTms, x.TPOTms, x.TPOTError, x.Plan.Recipe.Key, row.ID)
	}

	p("\nError per (model, chip, backend), percent:\n")
	p("%-26s %-8s %-5s %-13s %4s  %9s %9s %9s  %9s %9s %9s\n", "model", "prec", "chip", "backend", "n",
		"TTFT MAPE", "med APE", "signed", "TPOT MAPE", "med APE", "signed")
	line := func(g GroupStats) {
		p("%-26s %-8s %-5s %-13s %4d  %9.1f %9.1f %+9.1f  %9.1f %9.1f %+9.1f\n", shortModel(g.Model), orBlank(g.Precision),
			g.Chip, g.Backend, g.TTFT.N, g.TTFT.MAPE, g.TTFT.MedianAPE, g.TTFT.SignedMean, g.TPOT.MAPE, g.TPOT.MedianAPE, g.TPOT.SignedMean)
	}
	for _, g := range r.Groups {
		line(g)
	}
	if len(r.Groups) > 1 {
		line(r.Overall)
	}

	if len(r.Regimes) > 0 {
		p("\nError per regime (model, input-length bucket, concurrency bucket; every chip), percent:\n")
		p("%-26s %-8s %-5s %-6s %4s  %9s %9s %9s  %9s %9s %9s\n", "model", "prec", "isl", "conc", "n",
			"TTFT MAPE", "med APE", "signed", "TPOT MAPE", "med APE", "signed")
		for _, g := range r.Regimes {
			p("%-26s %-8s %-5s %-6s %4d  %9.1f %9.1f %+9.1f  %9.1f %9.1f %+9.1f\n", shortModel(g.Model), orBlank(g.Precision),
				g.ISL, g.Concurrency, g.TTFT.N, g.TTFT.MAPE, g.TTFT.MedianAPE, g.TTFT.SignedMean, g.TPOT.MAPE, g.TPOT.MedianAPE, g.TPOT.SignedMean)
		}
	}

	p("\nSkipped rows: %d\n", len(r.Skipped))
	counts := map[string]int{}
	for _, s := range r.Skipped {
		counts[s.Reason]++
	}
	order := slices.Sorted(maps.Keys(counts))
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	for _, reason := range order {
		p("%6d  %s\n", counts[reason], reason)
		if !verbose {
			continue
		}
		for _, s := range r.Skipped {
			if s.Reason == reason {
				p("        line %d %s: %s\n", s.Row.Line, s.Row.ID, s.Detail)
			}
		}
	}
	if !verbose && len(r.Skipped) > 0 {
		p("(--verbose lists every skipped row with its detail)\n")
	}
	return b.Flush()
}

// writeSettings prints the client and each serve recipe used, marking
// assumed values with *.
func (r *Report) writeSettings(b *bufio.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\nSettings applied (* = assumed: not confirmed from InferenceX's scripts):\n")
	p("  client (InferenceX's benchmark_serving.py): --dataset-name random --random-range-ratio 0.8 --random-range-style legacy\n")
	p("    --num-prompts 10×CONC --max-concurrency CONC --request-rate inf --ignore-eos; --num-warmups 2×CONC from 2026-01-21, none before\n")
	p("  serve: what a group does not list takes vLLM's default for the chip (as `blis run` resolves it). CONC = the row's\n")
	p("    concurrency; GEN = ISL+OSL+200 (ISL+OSL+256 from 2026-04-20), InferenceX's $MAX_MODEL_LEN; 2*ISL; ISL+OSL+20/200 =\n")
	p("    ISL+OSL+20, or +200 when ISL or OSL is 8192\n")

	for _, rc := range r.Recipes {
		var rows []*RowResult
		for i := range r.Rows {
			if r.Rows[i].Plan.Recipe == rc {
				rows = append(rows, &r.Rows[i])
			}
		}
		p("  [%s] %d rows", rc.Key, len(rows))
		if rc.Model != "" {
			prec := orBlank(rc.Precision)
			if prec == "*" {
				prec = "any precision"
			}
			ver := rc.Version
			if ver == "" {
				ver = "(no version in the CSV)"
			}
			p(": %s %s on %s, vLLM %s", rc.Model, prec, orBlank(rc.System), ver)
			if rc.From != "" || rc.To != "" {
				p(", measured %s..%s", rc.From, rc.To)
			}
		}
		p("\n")
		ckpt := rc.Checkpoint
		if ckpt == "" {
			seen := map[string]bool{}
			var ids []string
			for _, x := range rows {
				if !seen[x.Plan.Checkpoint] {
					seen[x.Plan.Checkpoint] = true
					ids = append(ids, x.Plan.Checkpoint)
				}
			}
			ckpt = strings.Join(ids, ", ")
		}
		p("    served: %s", ckpt)
		if rc.Image != "" {
			p(" (%s)", rc.Image)
		}
		p("\n")
		var parts []string
		for _, a := range rc.Args {
			t := argText(a.Flag, a.Value)
			if a.Assumed {
				t += "*"
			}
			parts = append(parts, t)
		}
		if len(parts) > 0 {
			p("    serve: %s\n", strings.Join(parts, " "))
		}
		for _, a := range rc.Args {
			if a.Why != "" {
				p("      %s: %s\n", argText(a.Flag, a.Value), a.Why)
			}
		}
		// Row-level assumptions (client settings, wip rows, quantization)
		// beyond the recipe's own starred values.
		starred := map[string]bool{}
		for _, a := range rc.Args {
			starred[a.Flag] = a.Assumed
		}
		assumed := map[string]int{}
		notes := map[string]int{}
		for _, x := range rows {
			seen := map[string]bool{}
			for _, a := range x.Plan.Args {
				if a.Assumed && !seen[a.Flag] && !starred[a.Flag] {
					seen[a.Flag] = true
					assumed[a.Flag]++
				}
			}
			for _, n := range x.Plan.Notes {
				notes[n]++
			}
		}
		if len(assumed) > 0 {
			var as []string
			for _, f := range slices.Sorted(maps.Keys(assumed)) {
				as = append(as, fmt.Sprintf("--%s (%d of %d rows)", f, assumed[f], len(rows)))
			}
			p("    assumed: %s\n", strings.Join(as, ", "))
		}
		for _, n := range slices.Sorted(maps.Keys(notes)) {
			p("    note (%d rows): %s\n", notes[n], n)
		}
		if len(rc.Unmodelled) > 0 {
			p("    not modelled: %s\n", strings.Join(rc.Unmodelled, "; "))
		}
		p("    source: %s\n", rc.Source)
		if rc.Note != "" {
			p("    note: %s\n", rc.Note)
		}
	}
}

type jsonRow struct {
	Line           int        `json:"line"`
	ID             string     `json:"id"`
	ModelPath      string     `json:"model_path"`
	Precision      string     `json:"precision"`
	System         string     `json:"system"`
	Backend        string     `json:"backend"`
	BackendVersion string     `json:"backend_version"`
	MeasuredDate   string     `json:"measured_date"`
	Chip           string     `json:"chip"`
	Checkpoint     string     `json:"checkpoint"`
	SimulatedAs    string     `json:"simulated_as,omitempty"`
	Recipe         string     `json:"settings"`
	TP             int        `json:"tp"`
	ISL            int        `json:"isl"`
	OSL            int        `json:"osl"`
	Concurrency    int        `json:"concurrency"`
	Args           []Arg      `json:"args"`
	Notes          []string   `json:"notes,omitempty"`
	MeasuredTTFT   float64    `json:"measured_ttft_ms"`
	MeasuredTPOT   float64    `json:"measured_tpot_ms"`
	BLIS           Prediction `json:"blis"`
	ComparedTTFT   float64    `json:"compared_ttft_ms"`
	ComparedTPOT   float64    `json:"compared_tpot_ms"`
	TTFTError      float64    `json:"ttft_error_pct"`
	TPOTError      float64    `json:"tpot_error_pct"`
}

type jsonSkip struct {
	Line   int    `json:"line"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// WriteJSON writes every number of the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	doc := struct {
		File      string        `json:"file"`
		Statistic string        `json:"statistic"`
		StepModel string        `json:"step_model"`
		Total     int           `json:"rows_in_file"`
		Filtered  int           `json:"filtered_out"`
		Simulated int           `json:"simulated"`
		NSkipped  int           `json:"skipped_count"`
		Filter    Filter        `json:"filter"`
		Backend   string        `json:"backend"`
		EPAsTP    bool          `json:"ep_as_tp"`
		Seed      int64         `json:"seed"`
		Limit     int           `json:"limit"`
		Recipes   []*Recipe     `json:"settings"`
		Rows      []jsonRow     `json:"rows"`
		Groups    []GroupStats  `json:"groups"`
		Regimes   []RegimeStats `json:"regimes"`
		Overall   GroupStats    `json:"overall"`
		Skipped   []jsonSkip    `json:"skipped"`
	}{
		File: r.File, Statistic: r.Statistic, StepModel: r.StepModel, Total: r.Total, Filtered: r.Filtered,
		Simulated: len(r.Rows), NSkipped: len(r.Skipped), Filter: r.Options.Filter, Backend: r.Options.Backend,
		EPAsTP: r.Options.EPAsTP, Seed: r.Options.Seed, Limit: r.Options.Limit,
		Recipes: r.Recipes, Groups: r.Groups, Regimes: r.Regimes, Overall: r.Overall,
		Rows: []jsonRow{}, Skipped: []jsonSkip{},
	}
	if doc.Backend == "" {
		doc.Backend = BackendVLLM
	}
	for i := range r.Rows {
		x := &r.Rows[i]
		row := x.Plan.Row
		doc.Rows = append(doc.Rows, jsonRow{
			Line: row.Line, ID: row.ID, ModelPath: row.ModelPath, Precision: row.Precision, System: row.System,
			Backend: row.Backend, BackendVersion: row.BackendVersion, MeasuredDate: row.MeasuredDate(),
			Chip: x.Plan.Chip, Checkpoint: x.Plan.Checkpoint, SimulatedAs: x.Plan.SimulatedAs, Recipe: x.Plan.Recipe.Key,
			TP: row.Agg.TP, ISL: row.ISL, OSL: row.OSL, Concurrency: x.Plan.Concurrency,
			Args: x.Plan.Args, Notes: x.Plan.Notes,
			MeasuredTTFT: row.TTFTms, MeasuredTPOT: row.TPOTms, BLIS: x.BLIS,
			ComparedTTFT: x.TTFTms, ComparedTPOT: x.TPOTms, TTFTError: x.TTFTError, TPOTError: x.TPOTError,
		})
	}
	for _, s := range r.Skipped {
		doc.Skipped = append(doc.Skipped, jsonSkip{Line: s.Row.Line, ID: s.Row.ID, Reason: s.Reason, Detail: s.Detail})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
