package validate

import "blis/internal/buildinfo"

// The numbers of one validation page. Render writes them as Markdown,
// the JSON file is this tree as encoding/json writes it, and the figures
// are drawn from it: the page shows nothing that is not here.

// Page is one validation.
type Page struct {
	Name        string `json:"validation"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	// BLISVersion is the build that computed the page (blis version).
	BLISVersion string   `json:"blis_version"`
	StepModels  []string `json:"step_models"`
	Manifest    string   `json:"manifest"`
	// Inputs are every file read, with its SHA-256; InputsSHA256 digests
	// the list.
	Inputs       []InputFile `json:"inputs"`
	InputsSHA256 string      `json:"inputs_sha256"`
	TolerancePP  float64     `json:"tolerance_pp"`
	VerdictRule  string      `json:"verdict_rule"`
	Arms         []*ArmPage  `json:"arms"`
	// Unscored lists measured sets the page's sources hold that no arm
	// scores, with what is missing.
	Unscored []Unscored `json:"unscored,omitempty"`

	// Build is the binary's stamp (buildinfo.go); nil when not given.
	Build *buildinfo.Stamp `json:"build,omitempty"`
	// The gap re-checks' verdict rule (probes.go).
	PageProbes
}

// InputFile is one file the page was computed from.
type InputFile struct {
	Path   string `json:"path"` // relative to the manifest, slash-separated
	SHA256 string `json:"sha256"`
}

// ArmPage is one arm's section of every table.
type ArmPage struct {
	Name       string    `json:"name"`
	Label      string    `json:"label"`
	Kind       string    `json:"kind"` // "files" or "inferencex"
	Deployment string    `json:"deployment"`
	Inputs     []string  `json:"measured_inputs"`
	StepModel  string    `json:"step_model,omitempty"`
	Provenance []ProvRow `json:"provenance"`
	Verdict    string    `json:"verdict"`
	MakeExact  []string  `json:"what_would_make_it_exact,omitempty"`
	// Unscored are this arm's measured sets BLIS cannot score.
	Unscored []Unscored `json:"unscored,omitempty"`
	Notes    []string   `json:"notes,omitempty"`

	LevelKey   string      `json:"level_key"`
	Levels     []LevelPage `json:"levels"`
	Population []MetricPop `json:"population"`

	Pairing     *ArmPairing `json:"pairing,omitempty"`
	PairingNote string      `json:"pairing_note,omitempty"`
	KV          *KVPool     `json:"kv_pool,omitempty"`
	KVNote      string      `json:"kv_pool_note,omitempty"`

	// Binding and the cold full prefill (binding.go, coldprefill.go).
	Binding         []LevelBinding `json:"binding,omitempty"`
	BindingNote     string         `json:"binding_note,omitempty"`
	ColdPrefill     *ColdPrefill   `json:"cold_prefill,omitempty"`
	ColdPrefillNote string         `json:"cold_prefill_note,omitempty"`

	// Gap re-checks, brackets and sensitivity runs (probes.go).
	ProbeData
}

// LevelPage is one level (of one series): both sides' values and the
// signed errors, by metric key.
type LevelPage struct {
	Series   string         `json:"series,omitempty"`
	Level    Num            `json:"level"`
	Text     string         `json:"level_text"`
	Source   string         `json:"source"` // the measured file or CSV row
	Measured map[string]Num `json:"measured"`
	BLIS     map[string]Num `json:"blis"`
	Errors   map[string]Num `json:"signed_error_pct"`
	KVTokens int            `json:"blis_kv_tokens,omitempty"`
	// Failed is set when BLIS could not simulate the level.
	Failed string `json:"failed,omitempty"`

	meas, blis Values
}

// MetricPop is one metric's population statistics over an arm's levels.
type MetricPop struct {
	Metric string `json:"metric"`
	Key    string `json:"key"`
	TTFT   bool   `json:"ttft_section"`
	PopStats
	id     Metric
	points []Point
}

// ArmPairing is an arm's request-level comparison.
type ArmPairing struct {
	PairBy string        `json:"pair_by"`
	Levels []PairLevel   `json:"levels"`
	Bins   []InFlightBin `json:"itl_by_in_flight"`
	Slopes Slopes        `json:"itl_slopes"`
	// Scatter holds each same-in-flight pair's in-flight count and ITL
	// on both sides, for the ITL-vs-load figure (not in the JSON: the
	// bins and slopes summarise it).
	Scatter []ScatterPoint `json:"-"`
}

// ScatterPoint is one pair in the ITL-vs-load figure.
type ScatterPoint struct {
	MIn, BIn   int
	MITL, BITL float64
}

// KVPool compares BLIS's KV pool with the one vLLM logged.
type KVPool struct {
	BLISTokens   int    `json:"blis_tokens"`
	LoggedTokens int    `json:"vllm_logged_tokens"`
	Ratio        Num    `json:"ratio"`
	Log          string `json:"log"`
}

// Headline is one gated number: an arm's MAPE and signed mean for one
// metric over its points.
type Headline struct {
	Arm        string `json:"arm"`
	Metric     string `json:"metric"`
	Points     int    `json:"points"`
	MAPE       Num    `json:"mape_pct"`
	SignedMean Num    `json:"signed_mean_pct"`
}

// Headlines lists the page's gated numbers in page order.
func (p *Page) Headlines() []Headline {
	var out []Headline
	for _, a := range p.Arms {
		for _, mp := range a.Population {
			out = append(out, Headline{Arm: a.Name, Metric: mp.Metric, Points: mp.Points, MAPE: mp.MAPE, SignedMean: mp.SignedMean})
		}
	}
	return out
}
