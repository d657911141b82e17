// Package page builds validation pages: it reads a validation manifest
// (what was measured, and how BLIS replays it), replays every level of
// every arm in BLIS — measured result files, or InferenceX rows through
// package inferencex — and computes the page's numbers with package
// score: provenance, population errors, request pairing, binding, the
// cold full prefill, gap re-checks, brackets and sensitivity runs. It
// pins a page's headline errors in a baseline and checks a page against
// it (the regression gate). Package render writes the page.
package page

import (
	"encoding/json"
	"io"
	"math"

	"blis/internal/buildinfo"
	"blis/validate/score"
)

// The numbers of one validation page. Package render writes them as
// Markdown and draws the figures from them, and the JSON file is this
// tree as encoding/json writes it: the page shows nothing that is not
// here.

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
	Unscored []score.Unscored `json:"unscored,omitempty"`

	// Stamp names the binary that computed the page (internal/buildinfo); nil
	// when not given.
	Stamp *buildinfo.Stamp `json:"build,omitempty"`
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
	Name       string          `json:"name"`
	Label      string          `json:"label"`
	Kind       string          `json:"kind"` // "files" or "inferencex"
	Deployment string          `json:"deployment"`
	Inputs     []string        `json:"measured_inputs"`
	StepModel  string          `json:"step_model,omitempty"`
	Provenance []score.ProvRow `json:"provenance"`
	Verdict    string          `json:"verdict"`
	MakeExact  []string        `json:"what_would_make_it_exact,omitempty"`
	// Unscored are this arm's measured sets BLIS cannot score.
	Unscored []score.Unscored `json:"unscored,omitempty"`
	Notes    []string         `json:"notes,omitempty"`

	LevelKey   string      `json:"level_key"`
	Levels     []LevelPage `json:"levels"`
	Population []MetricPop `json:"population"`

	Pairing     *ArmPairing `json:"pairing,omitempty"`
	PairingNote string      `json:"pairing_note,omitempty"`
	KV          *KVPool     `json:"kv_pool,omitempty"`
	KVNote      string      `json:"kv_pool_note,omitempty"`

	// Binding (package score) and the cold full prefill (coldprefill.go).
	Binding         []score.LevelBinding `json:"binding,omitempty"`
	BindingNote     string               `json:"binding_note,omitempty"`
	ColdPrefill     *ColdPrefill         `json:"cold_prefill,omitempty"`
	ColdPrefillNote string               `json:"cold_prefill_note,omitempty"`

	// Gap re-checks, brackets and sensitivity runs (probes.go).
	ProbeData
}

// LevelPage is one level (of one series): both sides' values and the
// signed errors, by metric key.
type LevelPage struct {
	Series   string               `json:"series,omitempty"`
	Level    score.Num            `json:"level"`
	Text     string               `json:"level_text"`
	Source   string               `json:"source"` // the measured file or CSV row
	Measured map[string]score.Num `json:"measured"`
	BLIS     map[string]score.Num `json:"blis"`
	Errors   map[string]score.Num `json:"signed_error_pct"`
	KVTokens int                  `json:"blis_kv_tokens,omitempty"`
	// Failed is set when BLIS could not simulate the level.
	Failed string `json:"failed,omitempty"`

	meas, blis score.Values
}

// SetValues sets both sides' values of the level and the per-metric maps
// the page prints: a side's value where it states the metric, the signed
// error where both do.
func (l *LevelPage) SetValues(meas, blis score.Values) {
	l.meas, l.blis = meas, blis
	l.Measured, l.BLIS, l.Errors = map[string]score.Num{}, map[string]score.Num{}, map[string]score.Num{}
	for k := score.Metric(0); k < score.NumMetrics; k++ {
		key := k.Info().Key
		if !math.IsNaN(meas[k]) {
			l.Measured[key] = score.Num(meas[k])
		}
		if !math.IsNaN(blis[k]) {
			l.BLIS[key] = score.Num(blis[k])
		}
		if !math.IsNaN(meas[k]) && !math.IsNaN(blis[k]) {
			l.Errors[key] = score.Num(score.SignedError(blis[k], meas[k]))
		}
	}
}

// blisValues is BLIS's side of each level as the page scored it (NaN where
// the level failed): the headline run that probes and sensitivity runs
// are compared with.
func blisValues(levels []LevelPage) []score.Values {
	out := make([]score.Values, len(levels))
	for i := range levels {
		out[i] = levels[i].blis
	}
	return out
}

// Population computes the statistics of each metric stated on both sides
// at some level.
func Population(levels []LevelPage) []MetricPop {
	var out []MetricPop
	for k := score.Metric(0); k < score.NumMetrics; k++ {
		var pts []score.Point
		for _, l := range levels {
			if l.Failed != "" || math.IsNaN(l.meas[k]) || math.IsNaN(l.blis[k]) {
				continue
			}
			pts = append(pts, score.Point{Series: l.Series, Level: float64(l.Level), Measured: l.meas[k], BLIS: l.blis[k]})
		}
		if len(pts) == 0 {
			continue
		}
		info := k.Info()
		out = append(out, MetricPop{Metric: info.Name, Key: info.Key, TTFT: info.TTFT, PopStats: score.Population(pts), ID: k, Compared: pts})
	}
	return out
}

// MetricPop is one metric's population statistics over an arm's levels.
type MetricPop struct {
	Metric string `json:"metric"`
	Key    string `json:"key"`
	TTFT   bool   `json:"ttft_section"`
	score.PopStats
	// ID is the metric; Compared the points its statistics summarise
	// (drawn in its figure; not in the JSON).
	ID       score.Metric  `json:"-"`
	Compared []score.Point `json:"-"`
}

// ArmPairing is an arm's request-level comparison.
type ArmPairing struct {
	PairBy string              `json:"pair_by"`
	Levels []score.PairLevel   `json:"levels"`
	Bins   []score.InFlightBin `json:"itl_by_in_flight"`
	Slopes score.Slopes        `json:"itl_slopes"`
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
	BLISTokens   int       `json:"blis_tokens"`
	LoggedTokens int       `json:"vllm_logged_tokens"`
	Ratio        score.Num `json:"ratio"`
	Log          string    `json:"log"`
}

// Headline is one gated number: an arm's MAPE and signed mean for one
// metric over its points.
type Headline struct {
	Arm        string    `json:"arm"`
	Metric     string    `json:"metric"`
	Points     int       `json:"points"`
	MAPE       score.Num `json:"mape_pct"`
	SignedMean score.Num `json:"signed_mean_pct"`
}

// Headlines lists the page's gated numbers in page order.
func (pg *Page) Headlines() []Headline {
	var out []Headline
	for _, a := range pg.Arms {
		for _, mp := range a.Population {
			out = append(out, Headline{Arm: a.Name, Metric: mp.Metric, Points: mp.Points, MAPE: mp.MAPE, SignedMean: mp.SignedMean})
		}
	}
	return out
}

// ProbesAsked reports whether any arm asked for probes.
func (pg *Page) ProbesAsked() bool {
	for _, a := range pg.Arms {
		if a.Probes != nil || a.ProbeNote != "" {
			return true
		}
	}
	return false
}

// WriteJSON writes every number of the page.
func (pg *Page) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(pg, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// ProbeData are an arm's gap re-checks and brackets (embedded in ArmPage).
type ProbeData struct {
	Probes []Probe `json:"gap_rechecks,omitempty"`
	// ProbeNote says why an arm that asked for probes has none.
	ProbeNote string    `json:"gap_recheck_note,omitempty"`
	Brackets  []Bracket `json:"brackets,omitempty"`
	// Sensitivity are the arm's sensitivity runs (sensitivity.go).
	Sensitivity []SensitivityPage `json:"sensitivity_runs,omitempty"`
}

// PageProbes is the page-level part (embedded in Page).
type PageProbes struct {
	ProbeRule string `json:"probe_rule,omitempty"`
}

// Probe is one gap re-check: one setting, every candidate value.
type Probe struct {
	Setting string `json:"setting"`
	// Provenance is the row's verdict ("MISMATCH (removable)",
	// "UNSTATED"), or "assumed" for a listed setting with no row.
	Provenance string `json:"provenance"`
	Measured   string `json:"measured,omitempty"`
	// Metrics are the headline metric keys compared.
	Metrics []string `json:"headline_metrics"`
	// Varied counts the levels the setting was varied on (an InferenceX
	// arm varies an assumed argument only on the rows that assume it).
	Varied     int              `json:"levels_varied"`
	Candidates []ProbeCandidate `json:"candidates"`
	Verdict    string           `json:"verdict"`
	Detail     string           `json:"detail"`
}

// ProbeCandidate is one value of a probe and what it did.
type ProbeCandidate struct {
	Value    string `json:"value"`
	Why      string `json:"why"`
	Headline bool   `json:"headline,omitempty"` // the value the page's headline ran
	Measured bool   `json:"measured,omitempty"` // the measured run's value
	Failed   string `json:"failed,omitempty"`
	// MAPE and SignedMean per headline metric key over the levels.
	MAPE       map[string]score.Num `json:"mape_pct,omitempty"`
	SignedMean map[string]score.Num `json:"signed_mean_pct,omitempty"`
	// MaxMove is, per headline metric, the largest |BLIS value / the
	// headline run's - 1| over the levels, in percent.
	MaxMove   map[string]score.Num `json:"max_move_pct,omitempty"`
	Identical bool                 `json:"identical_to_headline,omitempty"`
	Levels    []ProbeLevel         `json:"levels,omitempty"`

	vals []score.Values // per arm level; NaN where the level failed
}

// ProbeLevel is one level of a candidate run.
type ProbeLevel struct {
	Series string               `json:"series,omitempty"`
	Level  score.Num            `json:"level"`
	Text   string               `json:"level_text"`
	BLIS   map[string]score.Num `json:"blis"`
	Errors map[string]score.Num `json:"signed_error_pct"`
	Failed string               `json:"failed,omitempty"`
	// Stated marks a level where the run states the setting, so the
	// probe kept the stated value (InferenceX rows that do not assume it).
	Stated bool `json:"stated_here,omitempty"`
}

// Bracket is one metric of one arm over the candidate runs.
type Bracket struct {
	Metric string `json:"metric"`
	Key    string `json:"key"`
	TTFT   bool   `json:"ttft_section"`
	// Over names the unstated settings varied; Runs counts the runs (the
	// headline included).
	Over           []string       `json:"bracketed_over"`
	Runs           int            `json:"runs"`
	SignedMeanLow  score.Num      `json:"signed_mean_low_pct"`
	SignedMeanHigh score.Num      `json:"signed_mean_high_pct"`
	MAPELow        score.Num      `json:"mape_low_pct"`
	MAPEHigh       score.Num      `json:"mape_high_pct"`
	Levels         []BracketLevel `json:"levels"`
}

// BracketLevel is BLIS's range at one level over the runs.
type BracketLevel struct {
	Series   string    `json:"series,omitempty"`
	Level    score.Num `json:"level"`
	BLISLow  score.Num `json:"blis_low"`
	BLISHigh score.Num `json:"blis_high"`
}

// ColdPrefill is an arm's cold full prefill on both sides.
type ColdPrefill struct {
	Level score.Num `json:"level"`
	Text  string    `json:"level_text"`
	// What says which request it is ("warm-up primer", "first request",
	// "first benchmark request after N warm-ups").
	What          string    `json:"what"`
	MeasuredID    string    `json:"measured_request"`
	MeasuredInput int       `json:"measured_input_tokens"`
	MeasuredTTFT  score.Num `json:"measured_ttft_ms"`
	BLISInput     int       `json:"blis_input_tokens"`
	BLISTTFT      score.Num `json:"blis_ttft_ms"`
	// Error is the signed TTFT error; null when the two requests' input
	// token counts differ (not the same request).
	Error score.Num `json:"signed_error_pct"`
	Note  string    `json:"note,omitempty"`
}

// SensitivityNote labels every sensitivity run on the page.
const SensitivityNote = "This is a sensitivity run, not a like-for-like comparison."

// SensitivityPage is one sensitivity run's numbers.
type SensitivityPage struct {
	Label    string   `json:"label"`
	Settings []string `json:"settings"` // key=value, as applied
	Note     string   `json:"note"`
	Metrics  []string `json:"metrics"`
	// MAPE and SignedMean of the sensitivity run; ReplayMAPE the as-replayed
	// (headline) run's, over the same levels.
	MAPE       map[string]score.Num `json:"mape_pct"`
	SignedMean map[string]score.Num `json:"signed_mean_pct"`
	ReplayMAPE map[string]score.Num `json:"as_replayed_mape_pct"`
	// Identical says the run changed nothing (the workload has no gap the
	// setting touches).
	Identical bool         `json:"identical_to_replay,omitempty"`
	Failed    string       `json:"failed,omitempty"`
	Levels    []ProbeLevel `json:"levels"`
}
