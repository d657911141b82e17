package page

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"blis/cluster"
	"blis/internal/parallel"
	"blis/metrics"
	"blis/scenario"
	"blis/validate/inferencex"
	"blis/validate/score"
)

type builder struct {
	m      *Manifest
	jobs   int // Options.Jobs
	csv    map[string][]inferencex.Row
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
func (b *builder) parallel(n int, f func(i int)) { parallel.Each(b.jobs, n, f) }

// fileLevel is one simulated level of a file arm.
type fileLevel struct {
	run    *metrics.MeasuredRun
	sc     scenario.Scenario
	res    *scenario.Resolved
	result *metrics.Result
	simErr error
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

// fileBLISValues is BLIS's side of a simulated file level, computed as
// the page computes it: from records where the measured run has them.
func fileBLISValues(x *fileLevel) score.Values {
	if len(x.run.Requests) > 0 {
		return score.RecordValues(score.ReqsFromResult(x.result))
	}
	return score.ResultValues(x.result)
}
