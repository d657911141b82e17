package page

import (
	"math"
	"slices"
	"strings"
	"testing"

	"blis/validate/internal/fixture"
	"blis/validate/score"
)

// cand builds a probe candidate with hand-set MAPEs and moves (keys
// ttft_mean_ms and tpot_mean_ms).
func cand(value string, head, measured bool, ttftMAPE, tpotMAPE, ttftMove, tpotMove float64) ProbeCandidate {
	c := ProbeCandidate{Value: value, Headline: head, Measured: measured,
		MAPE: map[string]score.Num{"ttft_mean_ms": score.Num(ttftMAPE), "tpot_mean_ms": score.Num(tpotMAPE)}}
	if !head {
		c.MaxMove = map[string]score.Num{"ttft_mean_ms": score.Num(ttftMove), "tpot_mean_ms": score.Num(tpotMove)}
	}
	return c
}

func TestJudgeProbe(t *testing.T) {
	keys := []string{"ttft_mean_ms", "tpot_mean_ms"}
	mismatch := score.Mismatch + " (removable)"
	identical := cand("b", false, true, 20, 10, 0, 0)
	identical.Identical = true
	for _, c := range []struct {
		name       string
		provenance string
		cands      []ProbeCandidate
		want       string
		detail     string
	}{
		// Headline mean MAPE (20+10)/2 = 15; at the measured value
		// (5+8)/2 = 6.5: falls 8.5 pp > 1, neither metric rises.
		{"confirmed", mismatch, []ProbeCandidate{cand("a", true, false, 20, 10, 0, 0), cand("b", false, true, 5, 8, 30, 4)},
			ProbeConfirmed, "15.0% -> 6.5%"},
		// Mean falls 15 -> (2+12.5)/2 = 7.25, but TPOT rises 2.5 pp > 1.
		{"confirmed partial", mismatch, []ProbeCandidate{cand("a", true, false, 20, 10, 0, 0), cand("b", false, true, 2, 12.5, 30, 4)},
			ProbeConfirmedPartial, "worse: TPOT mean"},
		// Moves TTFT by 30 %, but the mean MAPE rises 15 -> 25.
		{"refuted (worse)", mismatch, []ProbeCandidate{cand("a", true, false, 20, 10, 0, 0), cand("b", false, true, 40, 10, 30, 0.5)},
			ProbeRefuted, "15.0% -> 25.0%"},
		// Moves by 5 % but the mean falls only 15 -> 14.5 (0.5 pp <= 1).
		{"refuted (not toward)", mismatch, []ProbeCandidate{cand("a", true, false, 20, 10, 0, 0), cand("b", false, true, 19, 10, 5, 0)},
			ProbeRefuted, ""},
		// Every move <= 1 %: immaterial even though the MAPE would fall.
		{"immaterial", mismatch, []ProbeCandidate{cand("a", true, false, 20, 10, 0, 0), cand("b", false, true, 19.5, 9.5, 0.9, 1)},
			ProbeImmaterial, "largest move 1.00% (TPOT mean at b)"},
		{"identical", mismatch, []ProbeCandidate{cand("a", true, false, 20, 10, 0, 0), identical},
			ProbeImmaterial, "identical results"},
		// Unstated: no measured value; material names the closest candidate.
		{"unstated material", score.Unstated, []ProbeCandidate{cand("16", true, false, 20, 10, 0, 0), cand("64", false, false, 8, 6, 12, 3)},
			ProbeMaterial, "closest to the measurement: 64 (mean headline MAPE 7.0%)"},
		{"unstated immaterial", score.Unstated, []ProbeCandidate{cand("16", true, false, 20, 10, 0, 0), cand("64", false, false, 20, 10, 0.2, 0.1)},
			ProbeImmaterial, ""},
		{"only failures", score.Unstated, []ProbeCandidate{cand("16", true, false, 20, 10, 0, 0), {Value: "64", Failed: "boom"}},
			ProbeNotRun, "could not simulate 64 (boom)"},
		{"nothing to run", score.Unstated, []ProbeCandidate{cand("16", true, false, 20, 10, 0, 0)},
			ProbeNotRun, "every candidate simulates what the headline ran"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Probe{Setting: "s", Provenance: c.provenance, Metrics: keys, Candidates: c.cands}
			judgeProbe(&p, 1)
			if p.Verdict != c.want || !strings.Contains(p.Detail, c.detail) {
				t.Errorf("verdict %q detail %q; want %q containing %q", p.Verdict, p.Detail, c.want, c.detail)
			}
		})
	}
}

// summarizeCandidate computes per-level errors, MAPE and the largest move
// from hand-set values.
func TestSummarizeCandidate(t *testing.T) {
	lv := func(meas float64) LevelPage {
		l := LevelPage{Level: 1, Text: "1", meas: score.NoValues()}
		l.meas[score.MTTFTMean] = meas
		return l
	}
	levels := []LevelPage{lv(100), lv(200), {Level: 3, Text: "3", Failed: "x", meas: score.NoValues()}}
	val := func(x float64) score.Values { v := score.NoValues(); v[score.MTTFTMean] = x; return v }
	head := []score.Values{val(110), val(180), score.NoValues()}
	c := ProbeCandidate{vals: []score.Values{val(121), val(190), score.NoValues()}}
	summarizeCandidate(&c, head, levels, []score.Metric{score.MTTFTMean})
	// Errors +21 % and -5 %: MAPE 13, signed mean 8; moves 10 % and 5.56 %.
	if got := c.MAPE["ttft_mean_ms"].F(); math.Abs(got-13) > 1e-9 {
		t.Errorf("MAPE %v", got)
	}
	if got := c.SignedMean["ttft_mean_ms"].F(); math.Abs(got-8) > 1e-9 {
		t.Errorf("signed mean %v", got)
	}
	if got := c.MaxMove["ttft_mean_ms"].F(); math.Abs(got-10) > 1e-9 {
		t.Errorf("max move %v", got)
	}
	if c.Identical || len(c.Levels) != 3 || c.Levels[2].Failed == "" || math.Abs(c.Levels[0].Errors["ttft_mean_ms"].F()-21) > 1e-9 {
		t.Errorf("%+v", c)
	}
	same := ProbeCandidate{vals: []score.Values{val(110), val(180), score.NoValues()}}
	summarizeCandidate(&same, head, levels, []score.Metric{score.MTTFTMean})
	if !same.Identical || same.MaxMove["ttft_mean_ms"] != 0 {
		t.Errorf("identical run: %+v", same)
	}
}

func TestProbeTargets(t *testing.T) {
	rows := []score.ProvRow{
		{Setting: "model", Measured: "meta-llama/Llama-3.1-8B", BLIS: "meta-llama/Llama-3.1-8B", Verdict: score.Match},
		{Setting: "engine-version", Measured: "0.10.2", Verdict: score.Mismatch},
		{Setting: "max-num-seqs", Measured: "64", BLIS: "32", Verdict: score.Mismatch, Removable: true},
		{Setting: "trust-remote-code", Measured: "true", BLIS: score.NotModelled, Verdict: score.Mismatch},
		{Setting: "block-size", Measured: "unstated", BLIS: "16", Verdict: score.Unstated},
		{Setting: "enable-prefix-caching", Measured: "not stated", BLIS: "false", Verdict: score.Unstated},
		{Setting: "random-range-ratio", Measured: "not stated", BLIS: "0.8", Verdict: score.Unstated}, // no candidates
		{Setting: "gap-recipe: kv-cache-dtype", Measured: "not stated", BLIS: "auto", Verdict: score.Unstated},
		{Setting: "chip", Measured: "H200", BLIS: "H100", Verdict: score.Mismatch, Removable: true},
		{Setting: "enable-chunked-prefill", Measured: "Yes", BLIS: "true", Verdict: score.Mismatch, Removable: true}, // not canonical
	}
	names := func(ts []probeTarget) []string {
		var out []string
		for _, t := range ts {
			var vs []string
			for _, c := range t.cands {
				vs = append(vs, c.Value)
			}
			out = append(out, t.setting+"="+strings.Join(vs, "|"))
		}
		return out
	}
	for _, c := range []struct {
		spec ProbeSpec
		want []string
	}{
		{ProbeSpec{Mode: ProbesOff}, nil},
		{ProbeSpec{Mode: ProbesAuto}, []string{"max-num-seqs=32|64", "block-size=16|16|64", "enable-prefix-caching=false|true|false",
			"kv-cache-dtype=auto|auto|fp8", "hardware=H100|H200"}},
		{ProbeSpec{Mode: ProbesList, Settings: []string{"block-size", "step-model", "num-prompts"}},
			[]string{"block-size=16|16|64", "step-model=|auto|fitted|roofline"}},
	} {
		got := names(probeTargets(rows, c.spec))
		if !slices.Equal(got, c.want) {
			t.Errorf("%+v:\n got %q\nwant %q", c.spec, got, c.want)
		}
	}
	ts := probeTargets(rows, ProbeSpec{Mode: ProbesAuto})
	if ts[0].provenance != "MISMATCH (removable)" || !ts[0].cands[0].Headline || !ts[0].cands[1].Measured || ts[3].label != "gap-recipe: kv-cache-dtype" {
		t.Errorf("%+v", ts)
	}
}

func TestParseProbes(t *testing.T) {
	for _, c := range []struct {
		in, mode string
		settings []string
		err      string
	}{
		{"auto", ProbesAuto, nil, ""},
		{"off", ProbesOff, nil, ""},
		{"block_size, --kv-cache-dtype", ProbesList, []string{"block-size", "kv-cache-dtype"}, ""},
		{"", "", nil, "expected off, auto, or a list"},
		{"sometimes", "", nil, `"sometimes" is not a setting`},
		{"export", "", nil, `"export" is not a setting`},
		{"block-size,block-size", "", nil, "listed twice"},
	} {
		s, err := ParseProbes(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || s.Mode != c.mode || !slices.Equal(s.Settings, c.settings) {
			t.Errorf("%q: %+v %v", c.in, s, err)
		}
	}
}

func nearNum(x score.Num, want float64) bool { return math.Abs(x.F()-want) < 1e-9 }

// bracketStats over three hand-made runs of two levels.
func TestBracketStats(t *testing.T) {
	run := func(b1, b2 float64) []score.Point {
		return []score.Point{{Level: 1, Measured: 100, BLIS: b1}, {Level: 2, Measured: 200, BLIS: b2}}
	}
	// Errors: run A +10/-10 (signed 0, MAPE 10); B +30/+10 (20, 20);
	// C -20/-20 (-20, 20).
	sLo, sHi, mLo, mHi, levels := bracketStats([][]score.Point{run(110, 180), run(130, 220), run(80, 160)})
	if !nearNum(sLo, -20) || !nearNum(sHi, 20) || !nearNum(mLo, 10) || !nearNum(mHi, 20) {
		t.Errorf("signed %v..%v MAPE %v..%v", sLo, sHi, mLo, mHi)
	}
	if len(levels) != 2 || levels[0].BLISLow != 80 || levels[0].BLISHigh != 130 || levels[1].BLISLow != 160 || levels[1].BLISHigh != 220 {
		t.Errorf("levels %+v", levels)
	}
	sLo, sHi, _, _, levels = bracketStats(nil)
	if !math.IsNaN(sLo.F()) || !math.IsNaN(sHi.F()) || levels != nil {
		t.Error("empty bracket")
	}
}

func TestBracketsSkipMismatchProbes(t *testing.T) {
	lv := LevelPage{Level: 1, Text: "1", meas: score.NoValues()}
	lv.meas[score.MTTFTMean] = 100
	head := score.NoValues()
	head[score.MTTFTMean] = 110
	alt := score.NoValues()
	alt[score.MTTFTMean] = 90
	pop := []MetricPop{{Metric: "TTFT mean", Key: "ttft_mean_ms", TTFT: true, ID: score.MTTFTMean}}
	mk := func(prov string) []Probe {
		return []Probe{{Setting: "x", Provenance: prov, Candidates: []ProbeCandidate{{Headline: true, vals: []score.Values{head}}, {vals: []score.Values{alt}}}}}
	}
	if br := brackets(pop, mk(score.Mismatch+" (removable)"), []LevelPage{lv}, []score.Values{head}); br != nil {
		t.Errorf("a mismatch probe bracketed: %+v", br)
	}
	br := brackets(pop, mk(score.Unstated), []LevelPage{lv}, []score.Values{head})
	if len(br) != 1 || br[0].Runs != 2 || !nearNum(br[0].SignedMeanLow, -10) || !nearNum(br[0].SignedMeanHigh, 10) || !nearNum(br[0].MAPELow, 10) || !nearNum(br[0].MAPEHigh, 10) {
		t.Errorf("%+v", br)
	}
}

// InferenceX arms: the assumed recipe arguments of the gap-analysis rows
// are re-checked on the rows that assume them; a list spec on an arm
// keeps only its settings.
func TestProbesInferenceX(t *testing.T) {
	const man = `validation: ixp
title: IX probes
probes: auto
arms:
  - name: qwen
    label: Qwen3-32B FP8
    inferencex: {csv: inferencex_small.csv, model: Qwen/Qwen3-32B, hardware: h100, precision: fp8, recipe: qwen3-32b-h100-gap}
  - name: minimax
    label: MiniMax
    probes: [enable-prefix-caching]
    inferencex: {csv: inferencex_small.csv, model: MiniMaxAI/MiniMax-M2.5, hardware: h100}
`
	m, err := ParseManifest(fixture.Path("ixp.yaml"), []byte(man))
	if err != nil {
		t.Fatal(err)
	}
	pg, err := Build(m, Options{Version: "test", Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	settings := func(a *ArmPage) []string {
		var out []string
		for _, p := range a.Probes {
			if p.Varied != 1 || p.Provenance != score.Unstated || len(p.Candidates) < 2 || p.Verdict == "" {
				t.Errorf("%s: %+v", a.Name, p)
			}
			out = append(out, p.Setting)
		}
		return out
	}
	if got := settings(pg.Arms[0]); !slices.Equal(got, []string{"gpu-memory-utilization", "kv-cache-dtype", "enable-prefix-caching", "async-scheduling"}) {
		t.Errorf("qwen probes %q", got)
	}
	if got := settings(pg.Arms[1]); !slices.Equal(got, []string{"enable-prefix-caching"}) {
		t.Errorf("minimax probes %q", got)
	}
	if pg.ProbeRule == "" || len(pg.Arms[0].Brackets) != 2 {
		t.Errorf("rule %q, brackets %+v", pg.ProbeRule, pg.Arms[0].Brackets)
	}
}
