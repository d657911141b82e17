package metrics

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"blis/metrics/internal/numpy"
)

// InferenceX's per-point fields, mirrored from SemiAnalysisAI/InferenceX
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

// InferenceXPoint is one InferenceX result point.
type InferenceXPoint struct {
	TputPerGPU       float64 // total tokens/s per GPU
	OutputTputPerGPU float64 // output tokens/s per GPU
	InputTputPerGPU  float64 // input tokens/s per GPU
	// Interactivity is 1000/(TPOT ms + 1e-8) of each TPOT statistic, in
	// vLLM's key order: mean, median, std, then the percentiles.
	Interactivity []InferenceXStat
	// E2EInteractivity is 1/pNN(E2E s / output tokens) in tokens/s/user,
	// for p75, p90 and the Result's percentiles, ascending.
	E2EInteractivity []InferenceXStat
}

// InferenceXStat is one statistic: Key is the field name InferenceX
// writes ("median_intvty", "p99_intvty", "p90_e2e_intvty").
type InferenceXStat struct {
	Key   string
	Value float64
}

// InferenceX computes the per-point fields from r over gpus GPUs (the
// denominator of the per-GPU throughputs; InferenceX uses TP on one node,
// prefill+decode GPUs across nodes).
func InferenceX(r *Result, gpus int) InferenceXPoint {
	g := float64(max(gpus, 1))
	p := InferenceXPoint{
		TputPerGPU:       r.TotalTokenThroughput / g,
		OutputTputPerGPU: r.OutputThroughput / g,
		InputTputPerGPU:  (r.TotalTokenThroughput - r.OutputThroughput) / g,
	}
	intvty := func(k string, v float64) {
		p.Interactivity = append(p.Interactivity, InferenceXStat{k + "_intvty", 1000.0 / (v + 1e-8)})
	}
	intvty("mean", r.TPOT.Mean)
	intvty("median", r.TPOT.Median)
	intvty("std", r.TPOT.Std)
	for i, q := range r.Percentiles {
		intvty("p"+percentileWord(q), r.TPOT.Percentiles[i])
	}
	var ratio []float64
	for i := range r.Requests {
		q := &r.Requests[i]
		if q.Success && q.Latency > 0 && q.OutputTokens > 0 && q.TTFT > 0 && q.InputTokens > 0 {
			ratio = append(ratio, seconds(q.Latency)/float64(q.OutputTokens))
		}
	}
	if len(ratio) > 0 {
		slices.Sort(ratio)
		pcts := append([]float64{75, 90}, r.Percentiles...)
		slices.Sort(pcts)
		pcts = slices.Compact(pcts)
		for _, q := range pcts {
			if rp := numpy.PercentileSorted(ratio, q); rp > 0 && !math.IsInf(1/rp, 0) {
				p.E2EInteractivity = append(p.E2EInteractivity, InferenceXStat{"p" + percentileWord(q) + "_e2e_intvty", 1 / rp})
			}
		}
	}
	return p
}

// inferenceXDoc is process_result.py's agg JSON: the run description,
// the per-GPU throughputs, then each vLLM *_ms key in seconds (with
// interactivity after each TPOT key), then BLIS's E2E interactivity.
func inferenceXDoc(r *Result, run *RunInfo) *jObj {
	pt := InferenceX(r, run.gpus())
	o := newObj().
		set("hw", run.Chip).set("conc", r.MaxConcurrency).set("image", run.version()).
		set("model", run.model(r)).set("infmax_model_prefix", "").set("framework", "vllm").
		set("precision", run.Precision).set("spec_decoding", "none").set("disagg", false).
		set("isl", run.ISL).set("osl", run.OSL).set("is_multinode", false).
		set("tp", orOne(run.TP)).set("ep", orOne(run.EP)).set("dp_attention", "false").
		set("tput_per_gpu", pt.TputPerGPU).set("output_tput_per_gpu", pt.OutputTputPerGPU).
		set("input_tput_per_gpu", pt.InputTputPerGPU)
	ii := 0
	for _, m := range r.shownMetrics() {
		st := r.stat(m)
		keys := []string{"mean_" + m, "median_" + m, "std_" + m}
		vals := []float64{st.Mean, st.Median, st.Std}
		for i, p := range r.Percentiles {
			keys = append(keys, "p"+percentileWord(p)+"_"+m)
			vals = append(vals, st.Percentiles[i])
		}
		for i, k := range keys {
			o.set(k, vals[i]/1000.0)
			if m == MetricTPOT {
				o.set(strings.Replace(k, "tpot", "intvty", 1), pt.Interactivity[ii].Value)
				ii++
			}
		}
	}
	for _, e := range pt.E2EInteractivity {
		o.set(e.Key, e.Value)
	}
	return o
}

func encodeInferenceX(r *Result, run *RunInfo) []byte {
	var b bytes.Buffer
	encodeJSON(&b, inferenceXDoc(r, run), pyJSONIndent2)
	return b.Bytes()
}

// ReadInferenceX reads an InferenceX agg result: every number is a metric
// (booleans and strings describe the run and are skipped); tput_per_gpu
// and output_tput_per_gpu are required.
func ReadInferenceX(path string) (*MeasuredRun, error) {
	data, err := readFileBounded(path)
	if err != nil {
		return nil, err
	}
	return parseInferenceX(path, data)
}

// inferenceXUnit is the unit of an InferenceX agg key.
func inferenceXUnit(k string) string {
	switch {
	case strings.HasSuffix(k, "tput_per_gpu"):
		return "tok/s/gpu"
	case strings.HasSuffix(k, "_intvty"):
		return "tok/s/user"
	case vllmSecondsKey.MatchString(k), strings.HasSuffix(k, "_client_queue_time"),
		strings.HasSuffix(k, "_e2el_including_client_queue"):
		return "s"
	}
	return ""
}

func parseInferenceX(file string, data []byte) (*MeasuredRun, error) {
	r := &jReader{file: file, data: data}
	root, err := parseJSONTree(data)
	if err != nil {
		return nil, r.syntax(err)
	}
	r.obj(root, "$")
	r.req(root, "$", "tput_per_gpu")
	r.req(root, "$", "output_tput_per_gpu")
	if r.err != nil {
		return nil, r.err
	}
	run := &MeasuredRun{Format: FormatInferenceX, Path: file}
	for i, k := range root.keys {
		v := root.vals[i]
		switch v.kind {
		case 'n':
			run.Metrics = append(run.Metrics, MeasuredMetric{Name: k, Unit: inferenceXUnit(k), Value: r.num(v, pathKey("$", k))})
		case 's', 'b', 'z':
		default:
			r.fail(v, pathKey("$", k), "want a number, string or boolean, got %s", v.kindName())
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return run, nil
}
