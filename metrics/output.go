package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"blis/metrics/internal/pytext"
)

// metricInfo is how vLLM bench's process_one_metric names a metric: key
// infix, name in the line labels, section header.
var metricInfo = map[string][2]string{
	MetricTTFT:                     {"TTFT", "Time to First Token"},
	MetricTPOT:                     {"TPOT", "Time per Output Token (excl. 1st token)"},
	MetricITL:                      {"ITL", "Inter-token Latency"},
	MetricE2EL:                     {"E2EL", "End-to-end Latency"},
	MetricClientQueueTime:          {"Client Queue Time", "Client-side Queueing"},
	MetricE2ELIncludingClientQueue: {"E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency"},
}

// ShownMetrics is the metrics that get a section, in vLLM's order: those
// selected, the client-queue ones only with a concurrency cap, the
// queue-inclusive E2EL only with a finite request rate too.
func (r *Result) ShownMetrics() []string {
	var out []string
	for _, m := range r.Metrics {
		switch m {
		case MetricClientQueueTime:
			if r.MaxConcurrency <= 0 {
				continue
			}
		case MetricE2ELIncludingClientQueue:
			if r.MaxConcurrency <= 0 || math.IsInf(r.RequestRate, 1) {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// Stat is the statistics of metric m, one of the Metric* names.
func (r *Result) Stat(m string) *Stat {
	switch m {
	case MetricTTFT:
		return &r.TTFT
	case MetricTPOT:
		return &r.TPOT
	case MetricITL:
		return &r.ITL
	case MetricE2EL:
		return &r.E2EL
	case MetricClientQueueTime:
		return &r.ClientQueueTime
	default:
		return &r.E2ELIncludingClientQueue
	}
}

// PercentileWord is vLLM's p_word: "99" for 99.0, "99.9" for 99.9.
func PercentileWord(p float64) string {
	if p == math.Trunc(p) && math.Abs(p) < 1e15 {
		return strconv.FormatInt(int64(p), 10)
	}
	return pytext.Float(p)
}

// WriteTable prints vLLM bench's result table (benchmark() in
// vllm/benchmarks/serve.py): the same lines, labels and column widths
// ("{:<40} {:<10}" and "{:<40} {:<10.2f}", trailing spaces included), for a
// generation backend with a tokenizer. Percentile lines follow the
// configured percentiles; std is not printed, as in vLLM.
func WriteTable(w io.Writer, r *Result) error {
	var b strings.Builder
	intRow := func(label string, v int64) {
		fmt.Fprintf(&b, "%-40s %-10d\n", label, v)
	}
	fRow := func(label string, v float64) {
		fmt.Fprintf(&b, "%-40s %-10s\n", label, pytext.Fixed2(v))
	}
	b.WriteString(center(" Serving Benchmark Result ", '=') + "\n")
	intRow("Successful requests:", int64(r.Completed))
	intRow("Failed requests:", int64(r.Failed))
	if r.MaxConcurrency > 0 {
		intRow("Maximum request concurrency:", int64(r.MaxConcurrency))
	}
	if !math.IsInf(r.RequestRate, 1) {
		fRow("Request rate configured (RPS):", r.RequestRate)
	}
	fRow("Benchmark duration (s):", r.DurationS)
	intRow("Total input tokens:", r.TotalInputTokens)
	intRow("Total generated tokens:", r.TotalOutputTokens)
	fRow("Request throughput (req/s):", r.RequestThroughput)
	if r.HasGoodput {
		fRow("Request goodput (req/s):", r.RequestGoodput)
	}
	fRow("Output token throughput (tok/s):", r.OutputThroughput)
	fRow("Peak output token throughput (tok/s):", r.MaxOutputTokensPerS)
	fRow("Peak concurrent requests:", float64(r.MaxConcurrentRequests))
	fRow("Total token throughput (tok/s):", r.TotalTokenThroughput)
	for _, m := range r.ShownMetrics() {
		info, st := metricInfo[m], r.Stat(m)
		b.WriteString(center(info[1], '-') + "\n")
		fRow("Mean "+info[0]+" (ms):", st.Mean)
		fRow("Median "+info[0]+" (ms):", st.Median)
		for i, p := range r.Percentiles {
			fRow("P"+PercentileWord(p)+" "+info[0]+" (ms):", st.Percentiles[i])
		}
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// center is Python's "{s:{c}^{n}}" with n = 50: the extra fill goes right.
func center(s string, c byte) string {
	pad := 50 - len(s)
	if pad <= 0 {
		return s
	}
	return strings.Repeat(string(c), pad/2) + s + strings.Repeat(string(c), pad-pad/2)
}

// WriteJSON writes the result as vLLM bench's result file: one line of
// Python json.dump output (separators ", " and ": ", ASCII-only strings,
// floats as Python's repr), keys in vLLM's order, then a newline. Unlike
// vLLM it has no wall-clock fields (date), so the bytes depend only on the
// result. Non-finite floats are written as null (Summarize produces none;
// vLLM would write NaN). After vLLM's keys come BLIS's:
// itl_percentile_relative_accuracy, gpu_kv_cache_tokens, num_preemptions,
// prefix_cache_hit_rate, mean_batch_size and deployment.
//
// With detailed (--save-detailed) it adds vLLM's per-request arrays
// (input_lens, output_lens, ttfts, itls, latencies, start_times,
// queue_times, errors; times in seconds, requests in index order) and
// BLIS's cached_tokens and preemptions; that needs a Result from a Detailed
// recorder.
func WriteJSON(w io.Writer, r *Result, detailed bool) error {
	if detailed && !r.Detailed {
		return fmt.Errorf("metrics: detailed JSON needs a recorder made with RecorderOptions.Detailed")
	}
	var o pyObject
	// main_async(): run description.
	o.set("endpoint_type", nullable(r.Backend))
	o.set("backend", nullable(r.Backend))
	o.set("label", nullable(r.Label))
	o.set("model_id", nullable(r.ModelID))
	o.set("tokenizer_id", nullable(r.TokenizerID))
	o.set("num_prompts", int64(r.NumPrompts))
	for _, kv := range r.Metadata {
		o.set(kv.Key, kv.Value)
	}
	if r.RequestRate < math.Inf(1) {
		o.set("request_rate", r.RequestRate)
	} else {
		o.set("request_rate", "inf")
	}
	o.set("burstiness", r.Burstiness)
	if r.MaxConcurrency > 0 {
		o.set("max_concurrency", int64(r.MaxConcurrency))
	} else {
		o.set("max_concurrency", nil)
	}
	// benchmark(): the result dict, merged over the description.
	o.set("duration", r.DurationS)
	o.set("completed", int64(r.Completed))
	o.set("failed", int64(r.Failed))
	o.set("total_input_tokens", r.TotalInputTokens)
	o.set("total_output_tokens", r.TotalOutputTokens)
	o.set("request_throughput", r.RequestThroughput)
	if r.HasGoodput {
		o.set("request_goodput", r.RequestGoodput)
	} else {
		o.set("request_goodput", nil)
	}
	o.set("output_throughput", r.OutputThroughput)
	o.set("total_token_throughput", r.TotalTokenThroughput)
	if detailed {
		n := len(r.Requests)
		in, out := make([]int64, n), make([]int64, n)
		ttfts, lat, start, queue := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		itls := make([][]float64, n)
		errs := make([]string, n)
		for i, q := range r.Requests {
			in[i], out[i] = int64(q.InputTokens), int64(q.OutputTokens)
			ttfts[i], lat[i] = Seconds(q.TTFT), Seconds(q.Latency)
			start[i], queue[i] = Seconds(q.Start), Seconds(q.QueueTime)
			itls[i] = durationsToSeconds(q.ITLs)
			errs[i] = q.Error
		}
		o.set("input_lens", in)
		o.set("output_lens", out)
		o.set("ttfts", ttfts)
		o.set("itls", itls)
		o.set("latencies", lat)
		o.set("start_times", start)
		o.set("queue_times", queue)
		o.set("errors", errs)
	}
	o.set("max_output_tokens_per_s", r.MaxOutputTokensPerS)
	o.set("max_concurrent_requests", int64(r.MaxConcurrentRequests))
	for _, m := range r.ShownMetrics() {
		st := r.Stat(m)
		o.set("mean_"+m+"_ms", st.Mean)
		o.set("median_"+m+"_ms", st.Median)
		o.set("std_"+m+"_ms", st.Std)
		for i, p := range r.Percentiles {
			o.set("p"+PercentileWord(p)+"_"+m+"_ms", st.Percentiles[i])
		}
	}
	// BLIS.
	o.set("itl_percentile_relative_accuracy", r.ITLRelativeAccuracy)
	o.set("gpu_kv_cache_tokens", int64(r.GPUKVCacheTokens))
	o.set("num_preemptions", int64(r.NumPreemptions))
	o.set("prefix_cache_hit_rate", r.PrefixCacheHitRate)
	o.set("mean_batch_size", r.MeanBatchSize)
	dep, err := pyMarshal(r.Deployment)
	if err != nil {
		return fmt.Errorf("metrics: deployment: %w", err)
	}
	o.set("deployment", dep)
	if detailed {
		cached, pre := make([]int64, len(r.Requests)), make([]int64, len(r.Requests))
		for i, q := range r.Requests {
			cached[i], pre[i] = int64(q.CachedTokens), int64(q.Preemptions)
		}
		o.set("cached_tokens", cached)
		o.set("preemptions", pre)
	}

	var buf bytes.Buffer
	o.encode(&buf)
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}

func durationsToSeconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = Seconds(d)
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// pyObject is a Python dict: insertion-ordered, and setting an existing
// key replaces its value in place (as vLLM's result dict does when
// --metadata names a key it later writes).
type pyObject struct {
	keys []string
	vals []any
}

func (o *pyObject) set(k string, v any) {
	for i, kk := range o.keys {
		if kk == k {
			o.vals[i] = v
			return
		}
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

func (o *pyObject) encode(b *bytes.Buffer) {
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		writePyString(b, k)
		b.WriteString(": ")
		writePyValue(b, o.vals[i])
	}
	b.WriteByte('}')
}

// writePyList writes xs as json.dump does: "[a, b, c]".
func writePyList[T any](b *bytes.Buffer, xs []T, write func(T)) {
	b.WriteByte('[')
	for i, e := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		write(e)
	}
	b.WriteByte(']')
}

// pyRaw is JSON text already in Python's json.dump form.
type pyRaw []byte

func writePyValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		writePyFloat(b, x)
	case string:
		writePyString(b, x)
	case pyRaw:
		b.Write(x)
	case []int64:
		writePyList(b, x, func(e int64) { b.WriteString(strconv.FormatInt(e, 10)) })
	case []float64:
		writePyList(b, x, func(e float64) { writePyFloat(b, e) })
	case [][]float64:
		writePyList(b, x, func(e []float64) { writePyValue(b, e) })
	case []string:
		writePyList(b, x, func(e string) { writePyString(b, e) })
	default: // unreachable: only this file builds values
		b.WriteString("null")
	}
}

// writePyFloat writes Python's float repr; NaN and ±Inf as null.
func writePyFloat(b *bytes.Buffer, x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		b.WriteString("null")
		return
	}
	b.WriteString(pytext.Float(x))
}

// writePyString writes s as Python's json.dumps does with ensure_ascii.
func writePyString(b *bytes.Buffer, s string) { pytext.WriteJSONString(b, s, true) }

// pyMarshal encodes v with encoding/json (so struct tags, map key order and
// Marshalers apply), then respaces it and re-escapes its strings in
// json.dump's style. Numbers keep Go's spelling.
func pyMarshal(v any) (pyRaw, error) {
	compact, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i := 0; i < len(compact); {
		switch c := compact[i]; c {
		case '"':
			j := i + 1
			for j < len(compact) && compact[j] != '"' {
				if compact[j] == '\\' {
					j++
				}
				j++
			}
			var s string
			if err := json.Unmarshal(compact[i:j+1], &s); err != nil {
				return nil, err
			}
			writePyString(&b, s)
			i = j + 1
		case ',':
			b.WriteString(", ")
			i++
		case ':':
			b.WriteString(": ")
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return pyRaw(b.Bytes()), nil
}
