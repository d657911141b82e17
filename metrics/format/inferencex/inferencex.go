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
	"slices"
	"strings"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
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
// prefill+decode GPUs across nodes).
func Compute(r *metrics.Result, gpus int) Point {
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
	var ratio []float64
	for i := range r.Requests {
		q := &r.Requests[i]
		if q.Success && q.Latency > 0 && q.OutputTokens > 0 && q.TTFT > 0 && q.InputTokens > 0 {
			ratio = append(ratio, metrics.Seconds(q.Latency)/float64(q.OutputTokens))
		}
	}
	if len(ratio) > 0 {
		slices.Sort(ratio)
		pcts := append([]float64{75, 90}, r.Percentiles...)
		slices.Sort(pcts)
		pcts = slices.Compact(pcts)
		for _, q := range pcts {
			if rp := numpy.PercentileSorted(ratio, q); rp > 0 && !math.IsInf(1/rp, 0) {
				p.E2EInteractivity = append(p.E2EInteractivity, Stat{"p" + metrics.PercentileWord(q) + "_e2e_intvty", 1 / rp})
			}
		}
	}
	return p
}

// doc is process_result.py's agg JSON: the run description,
// the per-GPU throughputs, then each vLLM *_ms key in seconds (with
// interactivity after each TPOT key), then BLIS's E2E interactivity.
func doc(r *metrics.Result, run *metrics.RunInfo) *jsonx.Obj {
	pt := Compute(r, run.GPUCount())
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
	var b bytes.Buffer
	jsonx.Encode(&b, doc(r, run), jsonx.PyIndent2)
	return b.Bytes()
}
