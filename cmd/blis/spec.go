package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"blis/specdecode"
)

// newSpecCmd is `blis spec`: the speculative decoding acceptance presets
// that --spec-acceptance names.
func newSpecCmd(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{Use: "spec", Short: "Inspect the speculative decoding acceptance presets (--spec-acceptance)"}
	var asJSON bool
	presets := &cobra.Command{
		Use:   "presets",
		Short: "List the acceptance presets: published per-position acceptance measurements",
		Long: `List the acceptance presets --spec-acceptance PRESET names: each is a published
measurement of a proposer (method, draft) on a target model at k speculative
tokens, as per-position acceptance rates (accepted at position j / drafts,
vLLM's num_accepted_tokens_per_pos / num_drafts) and the mean acceptance
length 1 + Σ rates. Where only a mean was published, the rates are the
i.i.d. schedule of that mean at k (marked "from mean").`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error { return specPresets(stdout, specdecode.Presets(), asJSON) },
	}
	presets.Flags().BoolVar(&asJSON, "json", false, "print the presets as a JSON array")
	c.AddCommand(presets)
	return c
}

// presetJSON is a preset as `blis spec presets --json` prints it.
type presetJSON struct {
	Name                 string    `json:"name"`
	Method               string    `json:"method"`
	TargetModel          string    `json:"target_model"`
	DraftModel           string    `json:"draft_model"`
	NumSpeculativeTokens int       `json:"num_speculative_tokens"`
	MeanAcceptanceLength float64   `json:"mean_acceptance_length"`
	PerPosition          []float64 `json:"acceptance_rate_per_position"`
	FromMean             bool      `json:"from_mean"`
	Dataset              string    `json:"dataset"`
	Temperature          string    `json:"temperature"`
	Engine               string    `json:"engine"`
	Source               string    `json:"source"`
}

// specPresets writes ps as a table, or as JSON.
func specPresets(w io.Writer, ps []specdecode.Profile, asJSON bool) error {
	if asJSON {
		out := make([]presetJSON, len(ps))
		for i, p := range ps {
			out[i] = presetJSON{
				Name: p.Name, Method: p.Method, TargetModel: p.TargetModel, DraftModel: p.DraftModel,
				NumSpeculativeTokens: p.K, MeanAcceptanceLength: p.Schedule.MeanLength(), PerPosition: p.Schedule.Rates(),
				FromMean: p.FromMean, Dataset: p.Dataset, Temperature: p.Temperature, Engine: p.Engine, Source: p.Source,
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tmethod\ttarget\tk\tmean length\tper-position rates\tdataset\ttemperature\tsource")
	for _, p := range ps {
		rates := make([]string, 0, p.K)
		for _, u := range p.Schedule.Rates() {
			rates = append(rates, fmt.Sprintf("%.3f", u))
		}
		r := strings.Join(rates, ",")
		if p.FromMean {
			r += " (from mean)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.2f\t%s\t%s\t%s\t%s\n", p.Name, p.Method, p.TargetModel, p.K,
			p.Schedule.MeanLength(), r, oneLine(p.Dataset), oneLine(p.Temperature), oneLine(p.Source))
	}
	return tw.Flush()
}

// oneLine keeps a CSV field from breaking the table: newlines and tabs
// become spaces, and an empty field a dash.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return s
}
