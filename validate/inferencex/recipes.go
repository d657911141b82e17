package inferencex

import (
	"fmt"
	"strconv"
	"strings"
)

// The `vllm serve` arguments InferenceX used, per model, chip, vLLM version
// and measurement date: the launch recipes of recipes.yaml, each read from
// a script of SemiAnalysisAI/InferenceX at the commit current on the rows'
// measurement date. Every recipe carries its source and every setting its
// provenance: read from the script, or Assumed (the report prints it so).

// ServeArg is one `vllm serve` argument of a recipe. Value is literal or
// one of the row-dependent forms: CONC (the row's concurrency), 2*ISL,
// GEN (InferenceX's sweep generator: ISL+OSL+200, ISL+OSL+256 for runs
// from 2026-04-20), ISL+OSL+20/200 (+20 for 1k/1k, +200 when ISL or OSL
// is 8192, as the B200 docker scripts of 2025 set it).
type ServeArg struct {
	Flag    string `json:"flag"`
	Value   string `json:"value"`
	Assumed bool   `json:"assumed,omitempty"`
	Why     string `json:"why,omitempty"` // why it is assumed, or where a default comes from
}

// Recipe is one group of InferenceX runs that shared a launch script
// (recipes.yaml documents each field).
type Recipe struct {
	Key string `json:"key"`
	// Match: model_path, system, precision and backend_version as the CSV
	// writes them (a Version ending in "*" matches by prefix), and the
	// measured= date window, inclusive ("" = open).
	Model     string `json:"model,omitempty"`
	System    string `json:"system,omitempty"`
	Precision string `json:"precision,omitempty"`
	Version   string `json:"backend_version,omitempty"`
	From      string `json:"measured_from,omitempty"`
	To        string `json:"measured_to,omitempty"`
	// GapAnalysis matches only rows from aiconfigurator's gap-analysis
	// collections (not InferenceX runs).
	GapAnalysis bool `json:"gap_analysis,omitempty"`

	// Checkpoint is the Hugging Face id InferenceX served ("" = the
	// catalog's checkpoint of model_path for the row's precision).
	Checkpoint string     `json:"checkpoint,omitempty"`
	Image      string     `json:"image,omitempty"`
	Args       []ServeArg `json:"args"`
	// Unmodelled lists launch settings BLIS does not model (they change
	// kernels or scheduling overheads the roofline does not see).
	Unmodelled []string `json:"not_modelled,omitempty"`
	Source     string   `json:"source"`
	Note       string   `json:"note,omitempty"`
	// NoAttentionDP, when set, says why the recipe's script cannot start
	// attention DP, so that rows the dump labels attention_dp_size N with
	// moe_ep_size N × TP ran as TP with --enable-expert-parallel.
	NoAttentionDP string `json:"no_attention_dp,omitempty"`
	// DPAttention, when set, says the recipe's script launches a sweep
	// entry with dp-attn as InferenceX's MiniMax scripts do.
	DPAttention *DPLaunch `json:"dp_attention,omitempty"`
}

// DPLaunch is how an InferenceX script starts a dp-attn entry of TP GPUs:
// --tensor-parallel-size 1 --data-parallel-size TP --enable-expert-parallel
// (benchmarks/single_node/minimaxm2.5_fp4_b200.sh @ a52c31a2). The dump
// writes such a row as tp_size = attention_dp_size = TP, moe_ep_size = TP².
type DPLaunch struct {
	From    string `json:"measured_from"` // rows measured before it are not known to have run so
	Why     string `json:"why"`
	Assumed bool   `json:"assumed,omitempty"`
}

// matches reports whether recipe r covers row.
func (r *Recipe) matches(row *Row) bool {
	if r.GapAnalysis != row.GapAnalysis() {
		return false
	}
	if r.Model != row.ModelPath || (r.System != "" && r.System != row.System) {
		return false
	}
	if r.Precision != "*" && r.Precision != row.Precision {
		return false
	}
	if v, ok := strings.CutSuffix(r.Version, "*"); ok {
		if !strings.HasPrefix(row.BackendVersion, v) {
			return false
		}
	} else if r.Version != row.BackendVersion {
		return false
	}
	d := row.MeasuredDate()
	if (r.From != "" || r.To != "") && d == "" {
		return false
	}
	return (r.From == "" || d >= r.From) && (r.To == "" || d <= r.To)
}

// expandValue turns a recipe value into the flag value for one row.
func expandValue(v string, row *Row, conc int) (string, error) {
	switch v {
	case "CONC":
		return strconv.Itoa(conc), nil
	case "2*ISL":
		return strconv.Itoa(2 * row.ISL), nil
	case "GEN":
		return strconv.Itoa(row.ISL + row.OSL + genMargin(row.MeasuredDate())), nil
	case "ISL+OSL+20/200":
		m := 20
		if row.ISL == 8192 || row.OSL == 8192 {
			m = 200
		}
		return strconv.Itoa(row.ISL + row.OSL + m), nil
	}
	if strings.ContainsAny(v, "+*") || strings.Contains(v, "ISL") || strings.Contains(v, "OSL") || v == "" {
		return "", fmt.Errorf("validate: recipe value %q is not a known form", v)
	}
	return v, nil
}

// genMargin is the margin InferenceX's sweep generator adds to ISL+OSL for
// $MAX_MODEL_LEN: 200, and 256 from 2026-04-20 (SemiAnalysisAI/InferenceX
// utils/matrix_logic/generate_sweep_configs.py).
func genMargin(date string) int {
	if date != "" && date >= "2026-04-20" {
		return 256
	}
	return 200
}
