package render

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"blis/validate/page"
	"blis/validate/score"
)

// handPage is a page built by hand (no simulation), so its golden file
// changes only when rendering does.
func handPage() *page.Page {
	mkLevel := func(series string, level float64, meas, blis map[score.Metric]float64) page.LevelPage {
		l := page.LevelPage{Series: series, Level: score.Num(level), Text: levelText(level), Source: "runs/c" + levelText(level)}
		mv, bv := score.NoValues(), score.NoValues()
		for k, v := range meas {
			mv[k] = v
		}
		for k, v := range blis {
			bv[k] = v
		}
		l.SetValues(mv, bv)
		return l
	}
	files := &page.ArmPage{Name: "files", Label: "Arm with records", Kind: "files", Deployment: "m on H100, TP 1", LevelKey: "max-concurrency",
		Inputs: []string{"aiperf runs/c1 (max-concurrency 1)", "aiperf runs/c8 (max-concurrency 8)"}, StepModel: "fitted-v1",
		Provenance: []score.ProvRow{
			{Setting: "model", Measured: "m", Source: "script", BLIS: "m", Verdict: score.Match},
			{Setting: "engine-version", Measured: "0.10.2", Source: "log", BLIS: score.EngineVersionText, Verdict: score.Mismatch},
			{Setting: "max-num-seqs", Measured: "64", Source: "script", BLIS: "32", Verdict: score.Mismatch, Removable: true, Note: "a | pipe"},
			{Setting: "block-size", Measured: "unstated", BLIS: "16", Verdict: score.Unstated},
		},
		Levels: []page.LevelPage{
			mkLevel("", 1, map[score.Metric]float64{score.MTTFTMean: 20, score.MTPOTMean: 10, score.MOutputTokS: 100}, map[score.Metric]float64{score.MTTFTMean: 18, score.MTPOTMean: 9, score.MOutputTokS: 110}),
			mkLevel("", 8, map[score.Metric]float64{score.MTTFTMean: 40, score.MTPOTMean: 12, score.MOutputTokS: 700}, map[score.Metric]float64{score.MTTFTMean: 30, score.MTPOTMean: 12.5, score.MOutputTokS: 640}),
		},
		Pairing: &page.ArmPairing{PairBy: score.PairByOrder,
			Levels: []score.PairLevel{{Level: 1, Pairs: 40, Solo: 40, SameInFlight: 40, Shown: true, ITLSolo: -10, ITLSame: -10, LatencySolo: -8, TTFTSolo: -10},
				{Level: 8, Pairs: 80, Solo: 2, SameInFlight: 70, ITLSolo: score.NaN(), ITLSame: 4, LatencySolo: score.NaN(), TTFTSolo: score.NaN(), Unmatched: 1}},
			Bins:    []score.InFlightBin{{Lo: 0, Hi: 0, Label: "0-0", Pairs: 42, Median: -10}, {Lo: 4, Hi: 7, Label: "4-7", Pairs: 68, Median: 4.25}},
			Slopes:  score.Slopes{Pairs: 110, Measured: 0.5, BLIS: 0.75, Ratio: 1.5},
			Scatter: []page.ScatterPoint{{MIn: 0, BIn: 0, MITL: 10, BITL: 9}, {MIn: 7, BIn: 7, MITL: 12, BITL: 12.5}, {MIn: 6, BIn: 7, MITL: 11.5, BITL: 12}},
		},
		KV: &page.KVPool{BLISTokens: 450000, LoggedTokens: 410000, Ratio: score.Num(450000.0 / 410000), Log: "server.log:5"},
	}
	files.Population = page.Population(files.Levels)
	files.Verdict = score.ArmVerdict(files.Provenance, true)
	files.MakeExact = score.WhatWouldMakeExact(files.Provenance)
	agg := &page.ArmPage{Name: "agg", Label: "Aggregates", Kind: "inferencex", Deployment: "m2 on H100", LevelKey: "max-concurrency",
		Provenance: []score.ProvRow{{Setting: "chip", Measured: "h100_sxm", Source: "system column", BLIS: "h100", Verdict: score.Match}},
		Levels: []page.LevelPage{
			mkLevel("TP2 1024/1024", 4, map[score.Metric]float64{score.MTTFTMean: 100}, map[score.Metric]float64{score.MTTFTMean: 90}),
			mkLevel("TP2 1024/1024", 16, map[score.Metric]float64{score.MTTFTMean: 400}, map[score.Metric]float64{score.MTTFTMean: 300}),
			mkLevel("TP4 1024/1024", 4, map[score.Metric]float64{score.MTTFTMean: 50}, map[score.Metric]float64{score.MTTFTMean: 60}),
		},
		Unscored:    []score.Unscored{{Set: "m2 fp8 on h100_sxm: attention data parallel > 1", Rows: 3, Needed: "attention data parallelism in BLIS"}},
		PairingNote: "aggregates only", KVNote: "no KV figure",
	}
	agg.Population = page.Population(agg.Levels)
	agg.Verdict = score.ArmVerdict(agg.Provenance, true)
	return &page.Page{Name: "hand", Title: "Hand-built page", Description: "For the golden file.", BLISVersion: "v0.0.0-test",
		StepModels: []string{"fitted-v1"}, Manifest: "docs/validation/hand.yaml",
		Inputs:       []page.InputFile{{Path: "hand.yaml", SHA256: strings.Repeat("a", 64)}, {Path: "runs/c1/profile_export.jsonl", SHA256: strings.Repeat("b", 64)}},
		InputsSHA256: strings.Repeat("c", 64), TolerancePP: 1, VerdictRule: score.VerdictRule, Arms: []*page.ArmPage{files, agg},
		Unscored: []score.Unscored{{Set: "other", Rows: 2, Needed: "P/D"}}}
}

func TestRenderGolden(t *testing.T) {
	pg := handPage()
	goldenPage(t, "hand", pg)
	md := string(markdown(t, pg))
	for _, want := range []string{
		"### Arm with records: PARTIAL", "MISMATCH (removable)", "MISMATCH (not removable)", `a \| pipe`,
		"What would make it EXACT: a run on the vLLM release BLIS's engine mirrors (0.11), or BLIS modelling vLLM 0.10.2's engine; BLIS run with max-num-seqs = 64",
		"| Arm with records | 1 | 40 | -10.0% | 40 | -10.0% | -8.0% |", "levels omitted: 8 (2 solo)",
		"| Arm with records | 4-7 | 68 | +4.2% |", "| Arm with records | 1.50 | 0.5000 | 0.7500 | 110 |",
		"| Aggregates | TTFT mean | 3 | -- | -5.0% |", "| Arm with records | 450000 | 410000 | 1.10 | server.log:5 |",
		"- Aggregates: no KV figure", "### Other sets that cannot be scored",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(md, "\n\n\n") {
		t.Error("page has a double blank line")
	}
	// The JSON holds the page's numbers; "--" is null.
	var doc map[string]any
	if err := json.Unmarshal(pageJSON(t, pg), &doc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(pageJSON(t, pg), []byte(`"itl_solo_median_pct": null`)) {
		t.Error("NaN not written as null")
	}
	figs := Figures(pg)
	if len(figs) != 5 { // 3 metrics + ITL scatter for files, TTFT for agg
		t.Errorf("%d figures", len(figs))
	}
	for _, f := range figs {
		if !bytes.HasPrefix(f.Data, []byte("<svg ")) || !bytes.HasSuffix(f.Data, []byte("</svg>\n")) || bytes.Contains(f.Data, []byte("NaN")) {
			t.Errorf("%s: not a clean SVG", f.Name)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{pct(score.Num(6.66)), "+6.7%"}, {pct(score.Num(-0.04)), "+0.0%"}, {pct(score.NaN()), "--"}, {pct(score.Num(math.Inf(1))), "--"},
		{signedPct(score.Num(-0.0123), 3), "-0.012%"}, {signedPct(score.Num(-0.0004), 3), "+0.000%"}, {signedPct(score.Num(2), 3), "+2.000%"},
		{value(score.Num(1234.6)), "1235"}, {value(score.Num(6.4961)), "6.496"},
		{levelText(math.Inf(1)), "inf"}, {levelText(0.5), "0.5"}, {cell("a|b\nc"), `a\|b c`},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
