package page

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"blis/catalog"
	"blis/internal/buildinfo"
	"blis/metrics/format"
	"blis/metrics/format/aiperf"
	"blis/metrics/format/inferenceperf"
	"blis/scenario"
	"blis/validate/inferencex"
	"blis/validate/score"
)

// Building a page: read every measured input the manifest names, replay
// each level in BLIS, and compute the tables. Levels run on Jobs workers;
// the page does not depend on Jobs.

// Options configure Build.
type Options struct {
	// Version names the BLIS build (cmd/blis's buildVersion).
	Version string
	// Jobs is how many simulations run at once (0 = GOMAXPROCS).
	Jobs int
	// Stamp stamps the page with the binary it describes (nil: Version
	// alone).
	Stamp *buildinfo.Stamp
	// Probes, when set, overrides every arm's probes: (--probes).
	Probes *ProbeSpec
}

// Build computes a manifest's page.
func Build(m *Manifest, opts Options) (*Page, error) {
	b := &builder{m: m, jobs: opts.Jobs, csv: map[string][]inferencex.Row{}, hashed: map[string]bool{}, probes: opts.Probes}
	pg := &Page{Name: m.Name, Title: m.Title, Description: m.Description, BLISVersion: opts.Version,
		Manifest: filepath.ToSlash(m.File), TolerancePP: m.TolerancePP, VerdictRule: score.VerdictRule}
	if pg.BLISVersion == "" {
		pg.BLISVersion = "(unknown)"
	}
	pg.Stamp = opts.Stamp
	b.addInputBytes(filepath.Base(m.File), m.Data)
	covered := map[string]bool{} // csv path + row line of every row an arm scores
	for i := range m.Arms {
		a := &m.Arms[i]
		var ap *ArmPage
		var err error
		if a.InferenceX != nil {
			ap, err = b.ixArm(i, a, covered)
		} else {
			ap, err = b.fileArm(i, a)
		}
		if err != nil {
			return nil, err
		}
		pg.Arms = append(pg.Arms, ap)
		if ap.StepModel != "" && !slices.Contains(pg.StepModels, ap.StepModel) {
			pg.StepModels = append(pg.StepModels, ap.StepModel)
		}
	}
	if pg.ProbesAsked() {
		pg.ProbeRule = ProbeVerdictRule
	}
	if m.Unscored != nil {
		u, err := b.ixUnscored(m.Unscored, covered)
		if err != nil {
			return nil, err
		}
		pg.Unscored = u
	}
	slices.Sort(pg.StepModels)
	pg.Inputs = b.inputs
	h := sha256.New()
	for _, in := range b.inputs {
		fmt.Fprintf(h, "%s  %s\n", in.SHA256, in.Path)
	}
	pg.InputsSHA256 = hex.EncodeToString(h.Sum(nil))
	return pg, nil
}

// ---- arms with measured result files ----

// baseScenario is what BLIS simulates for an arm before the level: the
// stated deployment, then the workload, then the manifest's assumptions.
// It returns which stated serve args BLIS could not take, and why.
func baseScenario(a *Arm) (scenario.Scenario, map[string]string) {
	s := scenario.Defaults()
	s.MetricPercentiles = []float64{50, 90}
	s.PercentileMetrics = "ttft,tpot,itl,e2el"
	rejected := map[string]string{}
	set := func(name, value string) error { return setKey(&s, name, value) }
	d := a.Deployment
	for _, st := range []Stated{d.Model, d.Chip, d.TP} {
		if !st.Unstated {
			name := map[string]string{"model": "model", "chip": "hardware", "tensor-parallel-size": "tensor-parallel-size"}[st.Name]
			if err := set(name, st.Value); err != nil {
				rejected[st.Name] = err.Error()
			}
		}
	}
	for _, st := range d.ServeArgs {
		if st.Unstated {
			continue
		}
		if !isServeSetting(st.Name) {
			rejected[st.Name] = "BLIS has no --" + st.Name
			continue
		}
		if err := set(st.Name, st.Value); err != nil {
			rejected[st.Name] = err.Error()
		}
	}
	for _, list := range [][]Stated{a.Workload, a.BLIS} {
		for _, st := range list {
			if !st.Unstated {
				_ = set(st.Name, st.Value) // checked when the manifest was read
			}
		}
	}
	return s, rejected
}

func (b *builder) fileArm(ai int, a *Arm) (*ArmPage, error) {
	path := fmt.Sprintf("arms[%d]", ai)
	ap := &ArmPage{Name: a.Name, Label: a.Label, Kind: "files", LevelKey: a.LevelKey}
	var log *score.ServerLog
	if a.ServerLog != "" {
		p := b.m.Path(a.ServerLog)
		f, err := os.Open(p)
		if err != nil {
			return nil, b.inputErr(a.ServerLogLine, path+".server-log", a.ServerLog, err)
		}
		log, err = score.ReadServerLog(p, bufio.NewReader(f))
		f.Close()
		if err != nil {
			return nil, err
		}
		if err := b.addInput(p); err != nil {
			return nil, b.inputErr(a.ServerLogLine, path+".server-log", a.ServerLog, err)
		}
	}
	base, rejected := baseScenario(a)

	// Read every measured file first: bad input fails before any
	// simulation runs.
	lv := make([]fileLevel, len(a.Levels))
	for i, l := range a.Levels {
		p := b.m.Path(l.Path)
		run, err := format.Read(l.Format, p)
		if err != nil {
			return nil, b.inputErr(l.Line, fmt.Sprintf("%s.levels[%d].measured", path, i), l.Path, err)
		}
		lv[i].run = run
		files := []string{p}
		if st, err := os.Stat(p); err == nil && st.IsDir() && l.Format == format.InferencePerf {
			files = inferenceperf.Files(p)
		}
		if l.Format == format.AIPerf {
			files = nil
			for _, name := range []string{aiperf.RecordsFile, aiperf.JSONFile, aiperf.CSVFile} {
				if _, err := os.Stat(filepath.Join(p, name)); err == nil {
					files = append(files, filepath.Join(p, name))
				}
			}
		}
		for _, f := range files {
			if err := b.addInput(f); err != nil {
				return nil, b.inputErr(l.Line, fmt.Sprintf("%s.levels[%d].measured", path, i), l.Path, err)
			}
		}
		ap.Inputs = append(ap.Inputs, fmt.Sprintf("%s %s (%s %s)", l.Format, b.rel(p), a.LevelKey, l.Text))
		s := base
		s.MetricPercentiles = slices.Clone(base.MetricPercentiles)
		_ = setKey(&s, a.LevelKey, l.Text)
		for _, st := range l.BLIS {
			if !st.Unstated {
				_ = setKey(&s, st.Name, st.Value)
			}
		}
		lv[i].sc = s
	}
	if log != nil {
		ap.Inputs = append(ap.Inputs, "vLLM server log "+b.rel(log.File))
	}

	b.parallel(len(lv), func(i int) { simulateLevel(&lv[i]) })

	// Provenance from the first level BLIS resolved.
	var res0 *scenario.Resolved
	var sc0 *scenario.Scenario
	for i := range lv {
		if lv[i].res != nil {
			res0, sc0 = lv[i].res, &lv[i].sc
			break
		}
	}
	if sc0 == nil {
		sc0 = &lv[0].sc
	}
	ap.Provenance = fileProvenance(a, sc0, res0, rejected, log)
	ap.Deployment = deploymentText(a, res0)
	if res0 != nil {
		ap.StepModel = res0.Pricer.Name()
	}

	var allPairs []score.Pair
	pairing := &ArmPairing{PairBy: a.PairBy}
	scored := 0
	for i, l := range a.Levels {
		x := &lv[i]
		lp := LevelPage{Level: score.Num(l.Value), Text: l.Text, Source: b.rel(b.m.Path(l.Path))}
		if x.simErr != nil {
			lp.Failed = x.simErr.Error()
			lp.SetValues(score.NoValues(), score.NoValues())
			ap.Levels = append(ap.Levels, lp)
			continue
		}
		scored++
		lp.KVTokens = x.res.Memory.KVTokens
		if len(x.run.Requests) > 0 {
			mReqs := score.ReqsFromMeasured(x.run)
			bReqs := score.ReqsFromResult(x.result)
			lp.SetValues(score.RecordValues(mReqs), score.RecordValues(bReqs))
			po, err := score.PairRequests(mReqs, bReqs, a.PairBy)
			if err != nil {
				return nil, b.inputErr(a.Line, path+".pair-by", a.PairBy, err)
			}
			pairing.Levels = append(pairing.Levels, score.SummarizePairs(l.Value, po, a.PairBy))
			allPairs = append(allPairs, po.Pairs...)
		} else {
			lp.SetValues(score.AggregateValues(x.run), score.ResultValues(x.result))
		}
		ap.Levels = append(ap.Levels, lp)
	}
	b.bindArm(a, ap, lv, pairing)
	if err := b.coldPrefill(ai, a, ap, lv); err != nil {
		return nil, err
	}
	ap.Population = Population(ap.Levels)
	b.fileProbes(a, ap, lv)      // probes.go
	b.fileSensitivity(a, ap, lv) // sensitivity.go
	if len(pairing.Levels) > 0 {
		pairing.Bins = score.ITLByInFlight(allPairs)
		pairing.Slopes = score.ITLSlopes(allPairs)
		for _, p := range allPairs {
			if p.SameInFlight() {
				mi, bi := p.M.ITLms(), p.B.ITLms()
				if !math.IsNaN(mi) && !math.IsNaN(bi) {
					pairing.Scatter = append(pairing.Scatter, ScatterPoint{MIn: p.MFl.Mean, BIn: p.BFl.Mean, MITL: mi, BITL: bi})
				}
			}
		}
		ap.Pairing = pairing
	} else {
		ap.PairingNote = "The measured results are aggregates only (no per-request records), so no request is paired."
	}

	reproducible := scored > 0
	ap.Verdict = score.ArmVerdict(ap.Provenance, reproducible)
	ap.MakeExact = score.WhatWouldMakeExact(ap.Provenance)
	for i, x := range lv {
		if x.simErr != nil {
			ap.Unscored = append(ap.Unscored, score.Unscored{Set: fmt.Sprintf("%s %s %s", a.Label, a.LevelKey, a.Levels[i].Text),
				Needed: neededForSimErr(x.simErr)})
		}
	}

	switch {
	case log == nil:
		ap.KVNote = "No vLLM server log is given for this arm, so no KV-pool ratio is reported."
	case log.KVLines == 0:
		ap.KVNote = "The server log has no \"GPU KV cache size\" line, so no KV-pool ratio is reported."
	case res0 == nil:
		ap.KVNote = "BLIS could not size the deployment, so no KV-pool ratio is reported."
	default:
		ap.KV = &KVPool{BLISTokens: res0.Memory.KVTokens, LoggedTokens: log.KVTokens,
			Ratio: score.Num(float64(res0.Memory.KVTokens) / float64(log.KVTokens)),
			Log:   fmt.Sprintf("%s:%d", b.rel(log.File), log.KVLine)}
	}
	return ap, nil
}

// neededForSimErr says what an arm BLIS could not simulate needs.
func neededForSimErr(err error) string {
	var ie *scenario.InputError
	if errors.As(err, &ie) && ie.Key == "--model" {
		return "a catalog entry for " + ie.Value + " (config.json + graph.yaml)"
	}
	if errors.As(err, &ie) && ie.Key == "--hardware" {
		return "a catalog entry for chip " + ie.Value
	}
	return "BLIS accepting the deployment: " + err.Error()
}

func deploymentText(a *Arm, res *scenario.Resolved) string {
	d := a.Deployment
	val := func(st Stated) string {
		if st.Unstated {
			return "unstated"
		}
		return st.Value
	}
	s := fmt.Sprintf("%s on %s, TP %s", val(d.Model), val(d.Chip), val(d.TP))
	if !d.EngineVersion.Unstated {
		s += ", vLLM " + strings.TrimPrefix(d.EngineVersion.Value, "v")
	}
	return s
}

// fileProvenance builds the table of a file arm.
func fileProvenance(a *Arm, s *scenario.Scenario, res *scenario.Resolved, rejected map[string]string, log *score.ServerLog) []score.ProvRow {
	var rows []score.ProvRow
	blisOverride := map[string]bool{}
	for _, st := range a.BLIS {
		blisOverride[st.Name] = true
	}
	d := a.Deployment
	// model and chip compare catalog identities.
	ident := func(st Stated, key string, blisVal string, lookup func(string) (string, error)) score.ProvRow {
		r := score.ProvRow{Setting: st.Name, BLIS: blisVal}
		if st.Unstated {
			r.Measured, r.Verdict, r.Note = "unstated", score.Unstated, "BLIS simulates the manifest's assumption (blis: "+key+")"
			return r
		}
		r.Measured, r.Source = st.Value, st.Source
		id, err := lookup(st.Value)
		switch {
		case err != nil:
			r.Verdict, r.Note = score.Mismatch, "not in BLIS's catalog"
		case id == blisVal:
			r.Verdict = score.Match
		default:
			r.Verdict, r.Removable, r.Note = score.Mismatch, true, "the manifest's blis: "+key+" overrides it"
		}
		return r
	}
	modelID, chipName, tp := settingString(s, "model"), settingString(s, "hardware"), settingString(s, "tensor-parallel-size")
	if res != nil {
		modelID, chipName, tp = res.Model.ID, res.Chip.Name, strconv.Itoa(res.Deployment.TP)
	}
	rows = append(rows, ident(d.Model, "model", modelID, func(v string) (string, error) {
		m, err := catalog.LookupModel(v)
		if err != nil {
			return "", err
		}
		return m.ID, nil
	}))
	rows = append(rows, ident(d.Chip, "hardware", chipName, func(v string) (string, error) {
		c, err := catalog.LookupChip(v)
		if err != nil {
			return "", err
		}
		return c.Name, nil
	}))
	rows = append(rows, settingRow(d.TP, tp, tp, rejected))

	// Engine version: stated, else from the server log.
	ev := d.EngineVersion
	if ev.Unstated && log != nil && log.Version != "" {
		ev = Stated{Name: ev.Name, Value: log.Version, Source: fmt.Sprintf("server log line %d", log.VersionLine)}
	}
	er := score.ProvRow{Setting: "engine-version", BLIS: score.EngineVersionText}
	if ev.Unstated {
		er.Measured, er.Verdict = "unstated", score.Unstated
	} else {
		v := strings.TrimPrefix(ev.Value, "v")
		er.Measured, er.Source = v, ev.Source
		if score.EngineMatches(v) {
			er.Verdict = score.Match
		} else {
			er.Verdict, er.Note = score.Mismatch, score.EngineMismatchNote
		}
		if log != nil && log.Version != "" && strings.TrimPrefix(log.Version, "v") != v {
			er.Note = strings.TrimSpace(er.Note + fmt.Sprintf(" server log says %s (line %d)", log.Version, log.VersionLine))
		}
	}
	rows = append(rows, er)

	stated := map[string]bool{}
	for _, st := range d.ServeArgs {
		stated[st.Name] = true
		blisVal := ""
		if isServeSetting(st.Name) {
			blisVal = effective(s, res, st.Name)
		} else {
			blisVal = score.NotModelled
		}
		r := settingRow(st, blisVal, effective(s, res, st.Name), rejected)
		if blisOverride[st.Name] && r.Verdict == score.Mismatch && r.Removable {
			r.Note = "the manifest's blis: " + st.Name + " overrides it"
		}
		rows = append(rows, r)
	}
	// Serve settings the manifest assumes without the run stating them.
	for _, st := range a.BLIS {
		if isServeSetting(st.Name) && !stated[st.Name] && st.Name != "model" && st.Name != "hardware" && st.Name != "tensor-parallel-size" {
			rows = append(rows, score.ProvRow{Setting: st.Name, Measured: "not stated", BLIS: effective(s, res, st.Name),
				Verdict: score.Unstated, Note: "assumed by the manifest (blis:)"})
		}
	}
	for _, st := range a.Workload {
		r := settingRow(st, effective(s, res, st.Name), effective(s, res, st.Name), nil)
		if blisOverride[st.Name] && r.Verdict == score.Mismatch {
			r.Note = "the manifest's blis: " + st.Name + " overrides it"
		}
		rows = append(rows, r)
	}
	var lv []string
	for _, l := range a.Levels {
		lv = append(lv, l.Text)
	}
	rows = append(rows, score.ProvRow{Setting: a.LevelKey, Measured: strings.Join(lv, ", "), Source: "the manifest's levels",
		BLIS: strings.Join(lv, ", "), Verdict: score.Match})
	return rows
}

// settingRow compares one stated setting with BLIS's value. cmpVal is
// BLIS's value in the setting's canonical spelling.
func settingRow(st Stated, blisVal, cmpVal string, rejected map[string]string) score.ProvRow {
	r := score.ProvRow{Setting: st.Name, BLIS: blisVal}
	if st.Unstated {
		r.Measured, r.Verdict = "unstated", score.Unstated
		return r
	}
	r.Measured, r.Source = st.Value, st.Source
	if why, ok := rejected[st.Name]; ok {
		r.Verdict, r.Note = score.Mismatch, why
		return r
	}
	want, ok := canonical(st.Name, st.Value)
	switch {
	case !ok:
		r.Verdict, r.Note = score.Mismatch, "BLIS cannot take this value"
	case want == cmpVal:
		r.Verdict = score.Match
	default:
		r.Verdict, r.Removable = score.Mismatch, true
	}
	return r
}
