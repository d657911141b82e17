// Package inferencex writes and reads InferenceX's result points, so that
// a BLIS run can stand on InferenceX's throughput/interactivity plots.
// The per-point fields are mirrored from SemiAnalysisAI/InferenceX
// utils/process_result.py (@ 77f3e680, single-node branch), which turns a
// `vllm bench serve` result into one point of its throughput/interactivity
// Pareto plots:
//
//	tput_per_gpu        = total_token_throughput / GPUs
//	output_tput_per_gpu = output_throughput / GPUs
//	input_tput_per_gpu  = (total_token_throughput − output_throughput) / GPUs
//	<key without _ms>   = value / 1000 for every *_ms key (seconds)
//	<stat>_intvty       = 1000 / (<stat>_tpot_ms + 1e-8) for every TPOT key
//
// Interactivity is 1000 divided by each TPOT statistic — 1/median(TPOT),
// not the median of the per-request 1000/TPOT (InferenceX's "1/p(x), not
// p(1/x)" slow-tail convention); std_intvty is 1000/std(TPOT), a quirk
// kept as InferenceX writes it. The agentic (AgentX) E2E-normalised
// interactivity, as aiperf injects it for InferenceX
// (e2e_normalized_interactivity_analyzer.py), is 1 / np.percentile of the
// per-request seconds per output token E2E/OSL, over requests with
// positive latency, output, TTFT and input; BLIS writes it as
// p<NN>_e2e_intvty (its own name) for p75, p90 and the configured
// percentiles.
package inferencex

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
	"blis/metrics/internal/vlog"
)

// Name is the format's name, as --export takes it.
const Name = "inferencex"

// ResultFile is the file the export writes.
const ResultFile = "inferencex_agg.json"

// Point is one InferenceX result point.
type Point struct {
	TputPerGPU       float64 // total tokens/s per GPU
	OutputTputPerGPU float64 // output tokens/s per GPU
	InputTputPerGPU  float64 // input tokens/s per GPU
	// Interactivity is 1000/(TPOT ms + 1e-8) of each TPOT statistic, in
	// vLLM's key order: mean, median, std, then the percentiles.
	Interactivity []Stat
	// E2EInteractivity is 1/pNN(E2E s / output tokens) in tokens/s/user,
	// for p75, p90 and the Result's percentiles, ascending.
	E2EInteractivity []Stat
}

// Stat is one statistic: Key is the field name InferenceX
// writes ("median_intvty", "p99_intvty", "p90_e2e_intvty").
type Stat struct {
	Key   string
	Value float64
}

// Compute computes the per-point fields from r over gpus GPUs (the
// denominator of the per-GPU throughputs; InferenceX uses TP on one node,
// prefill+decode GPUs across nodes), with the E2E interactivity from r's
// requests.
func Compute(r *metrics.Result, gpus int) Point {
	return compute(r, gpus, ratiosOf(r))
}

// ratioLog keeps each qualifying request's latency and output tokens (a
// few varints), for the E2E interactivity percentiles.
type ratioLog struct {
	log vlog.Log
	n   int
}

// ratiosOf logs r's requests.
func ratiosOf(r *metrics.Result) *ratioLog {
	l := &ratioLog{}
	for i := range r.Requests {
		l.add(&r.Requests[i])
	}
	return l
}

func (l *ratioLog) add(q *metrics.RequestResult) {
	if q.Success && q.Latency > 0 && q.OutputTokens > 0 && q.TTFT > 0 && q.InputTokens > 0 {
		l.log.Int(int64(q.Latency))
		l.log.Int(int64(q.OutputTokens))
		l.n++
	}
}

// seq is the requests' seconds per output token, E2E/OSL.
func (l *ratioLog) seq() numpy.Seq {
	return numpy.Seq{N: l.n, Open: func() func() float64 {
		rd := l.log.Reader()
		return func() float64 {
			lat := time.Duration(rd.Int())
			return metrics.Seconds(lat) / float64(rd.Int())
		}
	}}
}

func compute(r *metrics.Result, gpus int, ratios *ratioLog) Point {
	g := float64(max(gpus, 1))
	p := Point{
		TputPerGPU:       r.TotalTokenThroughput / g,
		OutputTputPerGPU: r.OutputThroughput / g,
		InputTputPerGPU:  (r.TotalTokenThroughput - r.OutputThroughput) / g,
	}
	intvty := func(k string, v float64) {
		p.Interactivity = append(p.Interactivity, Stat{k + "_intvty", 1000.0 / (v + 1e-8)})
	}
	intvty("mean", r.TPOT.Mean)
	intvty("median", r.TPOT.Median)
	intvty("std", r.TPOT.Std)
	for i, q := range r.Percentiles {
		intvty("p"+metrics.PercentileWord(q), r.TPOT.Percentiles[i])
	}
	if ratios.n > 0 {
		pcts := append([]float64{75, 90}, r.Percentiles...)
		slices.Sort(pcts)
		pcts = slices.Compact(pcts)
		s := ratios.seq().Order(nil, pcts)
		for _, q := range pcts {
			if rp := s.Percentile(q); rp > 0 && !math.IsInf(1/rp, 0) {
				p.E2EInteractivity = append(p.E2EInteractivity, Stat{"p" + metrics.PercentileWord(q) + "_e2e_intvty", 1 / rp})
			}
		}
	}
	return p
}

// doc is process_result.py's agg JSON: the run description,
// the per-GPU throughputs, then each vLLM *_ms key in seconds (with
// interactivity after each TPOT key), then BLIS's E2E interactivity.
func doc(r *metrics.Result, run *metrics.RunInfo, ratios *ratioLog) *jsonx.Obj {
	pt := compute(r, run.GPUCount(), ratios)
	tp, _, ep, _ := run.Parallelism()
	o := jsonx.NewObj().
		Set("hw", run.Chip).Set("conc", r.MaxConcurrency).Set("image", run.ToolVersion()).
		Set("model", run.ModelName(r)).Set("infmax_model_prefix", "").Set("framework", "vllm").
		Set("precision", run.Precision).Set("spec_decoding", "none").Set("disagg", false).
		Set("isl", run.ISL).Set("osl", run.OSL).Set("is_multinode", false).
		Set("tp", tp).Set("ep", ep).Set("dp_attention", "false").
		Set("tput_per_gpu", pt.TputPerGPU).Set("output_tput_per_gpu", pt.OutputTputPerGPU).
		Set("input_tput_per_gpu", pt.InputTputPerGPU)
	ii := 0
	for _, m := range r.ShownMetrics() {
		st := r.Stat(m)
		keys := []string{"mean_" + m, "median_" + m, "std_" + m}
		vals := []float64{st.Mean, st.Median, st.Std}
		for i, p := range r.Percentiles {
			keys = append(keys, "p"+metrics.PercentileWord(p)+"_"+m)
			vals = append(vals, st.Percentiles[i])
		}
		for i, k := range keys {
			o.Set(k, vals[i]/1000.0)
			if m == metrics.MetricTPOT {
				o.Set(strings.Replace(k, "tpot", "intvty", 1), pt.Interactivity[ii].Value)
				ii++
			}
		}
	}
	for _, e := range pt.E2EInteractivity {
		o.Set(e.Key, e.Value)
	}
	return o
}

// Encode renders the result point (ResultFile).
func Encode(r *metrics.Result, run *metrics.RunInfo) []byte {
	return encode(r, run, ratiosOf(r))
}

func encode(r *metrics.Result, run *metrics.RunInfo, ratios *ratioLog) []byte {
	var b bytes.Buffer
	jsonx.Encode(&b, doc(r, run, ratios), jsonx.PyIndent2)
	return b.Bytes()
}

// Writer writes ResultFile into a directory, keeping of each request only
// what the E2E interactivity needs.
type Writer struct {
	dir    string
	run    metrics.RunInfo
	ratios ratioLog
}

// NewWriter returns a writer of ResultFile in dir.
func NewWriter(dir string, run metrics.RunInfo) *Writer {
	w := &Writer{dir: dir, run: run}
	w.ratios.log.Spill(dir, vlog.MemLimit)
	return w
}

// Request notes q (see metrics.Sink).
func (w *Writer) Request(q *metrics.RequestResult) error {
	w.ratios.add(q)
	return w.ratios.log.Err()
}

// Close writes ResultFile for r and returns its path.
func (w *Writer) Close(r *metrics.Result) ([]string, error) {
	defer w.ratios.log.Close()
	p := filepath.Join(w.dir, ResultFile)
	b := encode(r, &w.run, &w.ratios)
	if err := w.ratios.log.Err(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		return nil, err
	}
	return []string{p}, nil
}

// Abort releases what the writer kept: Close writes the file.
func (w *Writer) Abort() { w.ratios.log.Close() }
