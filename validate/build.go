package validate

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"blis/catalog"
	"blis/cluster"
	"blis/internal/buildinfo"
	"blis/metrics"
	"blis/metrics/format"
	"blis/metrics/format/aiperf"
	"blis/metrics/format/inferenceperf"
	"blis/scenario"
)

// Building a page: read every measured input the manifest names, replay
// each level in BLIS, and compute the tables. Levels run on Jobs workers;
// the page does not depend on Jobs.

// PageOptions configure BuildPage.
type PageOptions struct {
	// Version names the BLIS build (cmd/blis's buildVersion).
	Version string
	// Jobs is how many simulations run at once (0 = GOMAXPROCS).
	Jobs int
	// Build stamps the page with the binary it describes (nil: Version
	// alone).
	Build *buildinfo.Stamp
	// Probes, when set, overrides every arm's probes: (--probes).
	Probes *ProbeSpec
}

// EngineVersion is the vLLM release whose engine core BLIS's engine
// mirrors (engine/engine.go: vLLM's v1 core as of main after v0.11). A
// measured engine version of the same minor release is a MATCH.
const EngineVersion = "0.11"

// engineVersionText is BLIS's side of the engine-version row.
const engineVersionText = "vLLM v1 core after v0.11 (engine/engine.go)"

// BuildPage computes a manifest's page.
func BuildPage(m *Manifest, opts PageOptions) (*Page, error) {
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	b := &builder{m: m, jobs: jobs, csv: map[string][]InferenceXRow{}, hashed: map[string]bool{}, probes: opts.Probes}
	pg := &Page{Name: m.Name, Title: m.Title, Description: m.Description, BLISVersion: opts.Version,
		Manifest: filepath.ToSlash(m.File), TolerancePP: m.TolerancePP, VerdictRule: VerdictRule}
	if pg.BLISVersion == "" {
		pg.BLISVersion = "(unknown)"
	}
	pg.Build = opts.Build
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
	if pg.probesAsked() {
		pg.ProbeRule = ProbeRule
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

type builder struct {
	m      *Manifest
	jobs   int
	csv    map[string][]InferenceXRow
	inputs []InputFile
	hashed map[string]bool
	probes *ProbeSpec // --probes (nil: the manifest's)
}

// rel is a path as the page cites it: relative to the manifest.
func (b *builder) rel(path string) string {
	if r, err := filepath.Rel(b.m.Dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(path)
}

func (b *builder) addInputBytes(rel string, data []byte) {
	if b.hashed[rel] {
		return
	}
	b.hashed[rel] = true
	sum := sha256.Sum256(data)
	b.inputs = append(b.inputs, InputFile{Path: rel, SHA256: hex.EncodeToString(sum[:])})
}

// addInput hashes a file read for the page (each once).
func (b *builder) addInput(path string) error {
	rel := b.rel(path)
	if b.hashed[rel] {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	b.hashed[rel] = true
	b.inputs = append(b.inputs, InputFile{Path: rel, SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

// inputErr is bad input found while building: the manifest's file and
// line, the key, and the underlying problem.
func (b *builder) inputErr(line int, key, value string, err error) error {
	msg := err.Error()
	var pe *os.PathError
	if errors.As(err, &pe) {
		msg = "cannot read " + pe.Path + ": " + pe.Err.Error()
	}
	return &scenario.InputError{File: b.m.File, Line: line, Key: key, Value: value, Msg: msg}
}

// parallel runs f(0..n-1) on b.jobs workers.
func (b *builder) parallel(n int, f func(i int)) {
	jobs := min(b.jobs, max(1, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// levelMaps turns Values into the page's per-metric maps.
func levelMaps(meas, blis Values) (m, bl, e map[string]Num) {
	m, bl, e = map[string]Num{}, map[string]Num{}, map[string]Num{}
	for k := Metric(0); k < NumMetrics; k++ {
		key := k.Info().Key
		if !math.IsNaN(meas[k]) {
			m[key] = Num(meas[k])
		}
		if !math.IsNaN(blis[k]) {
			bl[key] = Num(blis[k])
		}
		if !math.IsNaN(meas[k]) && !math.IsNaN(blis[k]) {
			e[key] = Num(SignedError(blis[k], meas[k]))
		}
	}
	return m, bl, e
}

// population computes each metric stated on both sides at some level.
func population(levels []LevelPage) []MetricPop {
	var out []MetricPop
	for k := Metric(0); k < NumMetrics; k++ {
		var pts []Point
		for _, l := range levels {
			if l.Failed != "" || math.IsNaN(l.meas[k]) || math.IsNaN(l.blis[k]) {
				continue
			}
			pts = append(pts, Point{Series: l.Series, Level: float64(l.Level), Measured: l.meas[k], BLIS: l.blis[k]})
		}
		if len(pts) == 0 {
			continue
		}
		info := k.Info()
		out = append(out, MetricPop{Metric: info.Name, Key: info.Key, TTFT: info.TTFT, PopStats: Population(pts), id: k, points: pts})
	}
	return out
}

// ---- arms with measured result files ----

// fileLevel is one simulated level of a file arm.
type fileLevel struct {
	run    *metrics.MeasuredRun
	sc     scenario.Scenario
	res    *scenario.Resolved
	result *metrics.Result
	simErr error
}

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

func setKey(s *scenario.Scenario, name, value string) error {
	for _, st := range s.Settings() {
		if st.Name == name {
			return st.Value.Set(value)
		}
	}
	return fmt.Errorf("unknown setting %s", name)
}

func settingString(s *scenario.Scenario, name string) string {
	for _, st := range s.Settings() {
		if st.Name == name {
			return st.Value.String()
		}
	}
	return ""
}

func isServeSetting(name string) bool {
	s := scenario.Defaults()
	for _, st := range s.Settings() {
		if st.Name == name {
			return st.Group == "serve"
		}
	}
	return false
}

// effective is the value BLIS simulated for a key: vLLM's resolved
// default where the scenario leaves 0 for "vLLM's default".
func effective(s *scenario.Scenario, res *scenario.Resolved, name string) string {
	if res != nil {
		switch name {
		case "max-num-seqs":
			return strconv.Itoa(res.Engine.MaxNumSeqs)
		case "max-num-batched-tokens":
			return strconv.Itoa(res.Engine.MaxNumBatchedTokens)
		case "max-model-len":
			return strconv.Itoa(res.Engine.MaxModelLen)
		case "block-size":
			return strconv.Itoa(res.Engine.BlockSize)
		}
	}
	return settingString(s, name)
}

// canonical spells a measured value as BLIS's setting prints it ("0.90"
// → "0.9", "True" → "true"); ok is false when BLIS cannot take it.
func canonical(name, value string) (string, bool) {
	s := scenario.Defaults()
	if err := setKey(&s, name, value); err != nil {
		return value, false
	}
	return settingString(&s, name), true
}

func (b *builder) fileArm(ai int, a *Arm) (*ArmPage, error) {
	path := fmt.Sprintf("arms[%d]", ai)
	ap := &ArmPage{Name: a.Name, Label: a.Label, Kind: "files", LevelKey: a.LevelKey}
	var log *ServerLog
	if a.ServerLog != "" {
		p := b.m.Path(a.ServerLog)
		f, err := os.Open(p)
		if err != nil {
			return nil, b.inputErr(a.ServerLogLine, path+".server-log", a.ServerLog, err)
		}
		log, err = ReadServerLog(p, bufio.NewReader(f))
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

	var allPairs []Pair
	pairing := &ArmPairing{PairBy: a.PairBy}
	scored := 0
	for i, l := range a.Levels {
		x := &lv[i]
		lp := LevelPage{Level: Num(l.Value), Text: l.Text, Source: b.rel(b.m.Path(l.Path))}
		if x.simErr != nil {
			lp.Failed = x.simErr.Error()
			lp.meas, lp.blis = noValues(), noValues()
			lp.Measured, lp.BLIS, lp.Errors = levelMaps(lp.meas, lp.blis)
			ap.Levels = append(ap.Levels, lp)
			continue
		}
		scored++
		lp.KVTokens = x.res.Memory.KVTokens
		if len(x.run.Requests) > 0 {
			mReqs := ReqsFromMeasured(x.run)
			bReqs := ReqsFromResult(x.result, turnsOf(x.result))
			lp.meas, lp.blis = RecordValues(mReqs), RecordValues(bReqs)
			po, err := PairRequests(mReqs, bReqs, a.PairBy)
			if err != nil {
				return nil, b.inputErr(a.Line, path+".pair-by", a.PairBy, err)
			}
			pairing.Levels = append(pairing.Levels, SummarizePairs(l.Value, po, a.PairBy))
			allPairs = append(allPairs, po.Pairs...)
		} else {
			lp.meas, lp.blis = AggregateValues(x.run), ResultValues(x.result)
		}
		lp.Measured, lp.BLIS, lp.Errors = levelMaps(lp.meas, lp.blis)
		ap.Levels = append(ap.Levels, lp)
	}
	b.bindArm(a, ap, lv, pairing)
	if err := b.coldPrefill(ai, a, ap, lv); err != nil {
		return nil, err
	}
	ap.Population = population(ap.Levels)
	b.fileProbes(a, ap, lv)      // probes.go
	b.fileSensitivity(a, ap, lv) // sensitivity.go
	if len(pairing.Levels) > 0 {
		pairing.Bins = ITLByInFlight(allPairs)
		pairing.Slopes = ITLSlopes(allPairs)
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
	ap.Verdict = ArmVerdict(ap.Provenance, reproducible)
	ap.MakeExact = WhatWouldMakeExact(ap.Provenance)
	for i, x := range lv {
		if x.simErr != nil {
			ap.Unscored = append(ap.Unscored, Unscored{Set: fmt.Sprintf("%s %s %s", a.Label, a.LevelKey, a.Levels[i].Text),
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
			Ratio: Num(float64(res0.Memory.KVTokens) / float64(log.KVTokens)),
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

// turnsOf gives each of r's requests its session and turn.
func turnsOf(r *metrics.Result) func(int64) (string, int, bool) {
	t := map[int64]*metrics.RequestResult{}
	for i := range r.Requests {
		if q := &r.Requests[i]; q.Session != 0 {
			t[q.Index] = q
		}
	}
	return func(i int64) (string, int, bool) {
		if q, ok := t[i]; ok {
			return strconv.FormatUint(q.Session, 10), q.Turn, true
		}
		// BLIS's exports write a request outside any session as its own
		// conversation, numbered by its index, turn 0.
		return strconv.FormatInt(i, 10), 0, true
	}
}

// simulateLevel resolves and runs one level. A panic inside the simulator
// (a bug) fails the level, not the page.
func simulateLevel(x *fileLevel) {
	defer func() {
		if v := recover(); v != nil {
			x.simErr = fmt.Errorf("internal error: %v", v)
		}
	}()
	res, err := x.sc.Resolve()
	if err != nil {
		x.simErr = err
		return
	}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{
		Percentiles: x.sc.MetricPercentiles,
		Detailed:    len(x.run.Requests) > 0,
	})
	if err != nil {
		x.simErr = err
		return
	}
	out, err := cluster.Run(res.ClientConfig(), res.Source, rec)
	if err != nil {
		x.simErr = err
		return
	}
	x.res = res
	x.result = rec.Summarize(metrics.SummaryInput{
		Duration: out.Duration, Backend: "vllm", ModelID: res.Model.ID,
		NumPrompts: x.sc.NumPrompts, RequestRate: x.sc.RequestRate, Burstiness: x.sc.Burstiness,
		MaxConcurrency: x.sc.MaxConcurrency, GPUKVCacheTokens: res.Memory.KVTokens,
		NumPreemptions: int(out.Engine.Preemptions),
	})
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
func fileProvenance(a *Arm, s *scenario.Scenario, res *scenario.Resolved, rejected map[string]string, log *ServerLog) []ProvRow {
	var rows []ProvRow
	blisOverride := map[string]bool{}
	for _, st := range a.BLIS {
		blisOverride[st.Name] = true
	}
	d := a.Deployment
	// model and chip compare catalog identities.
	ident := func(st Stated, key string, blisVal string, lookup func(string) (string, error)) ProvRow {
		r := ProvRow{Setting: st.Name, BLIS: blisVal}
		if st.Unstated {
			r.Measured, r.Verdict, r.Note = "unstated", Unstated, "BLIS simulates the manifest's assumption (blis: "+key+")"
			return r
		}
		r.Measured, r.Source = st.Value, st.Source
		id, err := lookup(st.Value)
		switch {
		case err != nil:
			r.Verdict, r.Note = Mismatch, "not in BLIS's catalog"
		case id == blisVal:
			r.Verdict = Match
		default:
			r.Verdict, r.Removable, r.Note = Mismatch, true, "the manifest's blis: "+key+" overrides it"
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
	er := ProvRow{Setting: "engine-version", BLIS: engineVersionText}
	if ev.Unstated {
		er.Measured, er.Verdict = "unstated", Unstated
	} else {
		v := strings.TrimPrefix(ev.Value, "v")
		er.Measured, er.Source = v, ev.Source
		if v == EngineVersion || strings.HasPrefix(v, EngineVersion+".") {
			er.Verdict = Match
		} else {
			er.Verdict, er.Note = Mismatch, "BLIS prices one engine behaviour; the scheduler of other releases is not modelled"
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
			blisVal = notModelled
		}
		r := settingRow(st, blisVal, effective(s, res, st.Name), rejected)
		if blisOverride[st.Name] && r.Verdict == Mismatch && r.Removable {
			r.Note = "the manifest's blis: " + st.Name + " overrides it"
		}
		rows = append(rows, r)
	}
	// Serve settings the manifest assumes without the run stating them.
	for _, st := range a.BLIS {
		if isServeSetting(st.Name) && !stated[st.Name] && st.Name != "model" && st.Name != "hardware" && st.Name != "tensor-parallel-size" {
			rows = append(rows, ProvRow{Setting: st.Name, Measured: "not stated", BLIS: effective(s, res, st.Name),
				Verdict: Unstated, Note: "assumed by the manifest (blis:)"})
		}
	}
	for _, st := range a.Workload {
		r := settingRow(st, effective(s, res, st.Name), effective(s, res, st.Name), nil)
		if blisOverride[st.Name] && r.Verdict == Mismatch {
			r.Note = "the manifest's blis: " + st.Name + " overrides it"
		}
		rows = append(rows, r)
	}
	var lv []string
	for _, l := range a.Levels {
		lv = append(lv, l.Text)
	}
	rows = append(rows, ProvRow{Setting: a.LevelKey, Measured: strings.Join(lv, ", "), Source: "the manifest's levels",
		BLIS: strings.Join(lv, ", "), Verdict: Match})
	return rows
}

// settingRow compares one stated setting with BLIS's value. cmpVal is
// BLIS's value in the setting's canonical spelling.
func settingRow(st Stated, blisVal, cmpVal string, rejected map[string]string) ProvRow {
	r := ProvRow{Setting: st.Name, BLIS: blisVal}
	if st.Unstated {
		r.Measured, r.Verdict = "unstated", Unstated
		return r
	}
	r.Measured, r.Source = st.Value, st.Source
	if why, ok := rejected[st.Name]; ok {
		r.Verdict, r.Note = Mismatch, why
		return r
	}
	want, ok := canonical(st.Name, st.Value)
	switch {
	case !ok:
		r.Verdict, r.Note = Mismatch, "BLIS cannot take this value"
	case want == cmpVal:
		r.Verdict = Match
	default:
		r.Verdict, r.Removable = Mismatch, true
	}
	return r
}
