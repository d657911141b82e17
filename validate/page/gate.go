package page

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"blis/scenario"
	"blis/validate/score"
)

// The regression gate: a page's headline errors — per arm and metric, the
// MAPE, the signed mean and the number of points — pinned in a small JSON
// file beside the page. Check recomputes the page and fails when a MAPE
// grows by more than the manifest's tolerance (percentage points), when a
// headline disappears or loses points, or when a MAPE that was computable
// no longer is. Improvements pass, with a note to re-record.

// Baseline is the pinned file.
type Baseline struct {
	Validation  string     `json:"validation"`
	TolerancePP float64    `json:"tolerance_pp"`
	Headlines   []Headline `json:"headlines"`
}

// NewBaseline pins pg's headlines.
func NewBaseline(pg *Page) *Baseline {
	return &Baseline{Validation: pg.Name, TolerancePP: pg.TolerancePP, Headlines: pg.Headlines()}
}

// WriteJSON writes the baseline.
func (b *Baseline) WriteJSON(w io.Writer) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// ReadBaseline reads a baseline file strictly (unknown fields are errors).
func ReadBaseline(file string, data []byte) (*Baseline, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var raw struct {
		Validation  string  `json:"validation"`
		TolerancePP float64 `json:"tolerance_pp"`
		Headlines   []struct {
			Arm        string   `json:"arm"`
			Metric     string   `json:"metric"`
			Points     int      `json:"points"`
			MAPE       *float64 `json:"mape_pct"`
			SignedMean *float64 `json:"signed_mean_pct"`
		} `json:"headlines"`
	}
	if err := dec.Decode(&raw); err != nil {
		return nil, &scenario.InputError{File: file, Msg: "not a baseline (re-record it with --record): " + err.Error()}
	}
	b := &Baseline{Validation: raw.Validation, TolerancePP: raw.TolerancePP}
	for _, h := range raw.Headlines {
		x := Headline{Arm: h.Arm, Metric: h.Metric, Points: h.Points, MAPE: score.NaN(), SignedMean: score.NaN()}
		if h.MAPE != nil {
			x.MAPE = score.Num(*h.MAPE)
		}
		if h.SignedMean != nil {
			x.SignedMean = score.Num(*h.SignedMean)
		}
		b.Headlines = append(b.Headlines, x)
	}
	return b, nil
}

// CheckResult is the outcome of Check.
type CheckResult struct {
	Failures []string
	Improved []string
	Checked  int
}

// OK reports whether nothing regressed.
func (c *CheckResult) OK() bool { return len(c.Failures) == 0 }

// Check compares pg's headlines with the baseline; tolerance is in
// percentage points of MAPE.
func Check(base *Baseline, pg *Page, tolerance float64) *CheckResult {
	cur := map[string]Headline{}
	for _, h := range pg.Headlines() {
		cur[h.Arm+"\x00"+h.Metric] = h
	}
	res := &CheckResult{}
	for _, b := range base.Headlines {
		name := b.Arm + " " + b.Metric
		h, ok := cur[b.Arm+"\x00"+b.Metric]
		res.Checked++
		switch {
		case !ok:
			res.Failures = append(res.Failures, name+": no longer scored")
		case h.Points < b.Points:
			res.Failures = append(res.Failures, fmt.Sprintf("%s: %d points, baseline %d", name, h.Points, b.Points))
		case math.IsNaN(h.MAPE.F()) && !math.IsNaN(b.MAPE.F()):
			res.Failures = append(res.Failures, name+": MAPE no longer computable")
		case h.MAPE.F() > b.MAPE.F()+tolerance:
			res.Failures = append(res.Failures, fmt.Sprintf("%s: MAPE %s%%, baseline %s%% (+%s pp > %s pp tolerance)",
				name, h.MAPE.Fixed(2), b.MAPE.Fixed(2), (h.MAPE-b.MAPE).Fixed(2), strconv.FormatFloat(tolerance, 'f', -1, 64)))
		case h.MAPE.F() < b.MAPE.F()-tolerance:
			res.Improved = append(res.Improved, fmt.Sprintf("%s: MAPE %s%%, baseline %s%%", name, h.MAPE.Fixed(2), b.MAPE.Fixed(2)))
		}
	}
	return res
}

// WriteText reports a check.
func (c *CheckResult) WriteText(w io.Writer, page string) error {
	var b strings.Builder
	if c.OK() {
		fmt.Fprintf(&b, "%s: %d headline errors within tolerance of the baseline.\n", page, c.Checked)
	} else {
		fmt.Fprintf(&b, "%s: %d of %d headline errors regressed:\n", page, len(c.Failures), c.Checked)
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	if len(c.Improved) > 0 {
		fmt.Fprintf(&b, "Improved beyond tolerance (re-record the baseline with --record to keep the gain):\n")
		for _, f := range c.Improved {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
