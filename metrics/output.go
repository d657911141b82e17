package metrics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"blis/metrics/internal/pytext"
	"blis/metrics/internal/reorder"
	"blis/metrics/internal/spool"
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
	if len(r.Stages) > 0 {
		b.WriteString(stageTable(r.Stages))
	}
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

// JSONOptions configure a JSONWriter.
type JSONOptions struct {
	// Detailed adds the arrays vLLM bench writes only with
	// --save-detailed (input_lens, output_lens, ttfts, itls, start_times,
	// generated_texts, errors) and BLIS's cached_tokens and preemptions;
	// it needs requests from a Detailed recorder for the itls.
	Detailed bool
	// EpochUnixNano is the wall-clock time of simulated time 0, written as
	// "date"; 0 means DefaultEpochUnixNano.
	EpochUnixNano int64
	// TempDir holds the spooled per-request columns of a long run; ""
	// means the system's temporary directory.
	TempDir string
}

// JSONWriter streams vLLM bench's result file (--save-result): the
// per-request arrays are written to spools as requests finish (in Index
// order, as vLLM lists its outputs; a request that finishes ahead of a
// lower index waits in a reorder buffer), and Close writes the document
// around them. Its memory is the reorder buffer and the spools' buffers,
// whatever the run's length.
//
// The document is one line of Python json.dump output (separators ", " and
// ": ", ASCII-only strings, floats as Python's repr) with vLLM's keys in
// vLLM's order (vllm/benchmarks/serve.py main_async and benchmark(),
// vllm-project/vllm main @ 009e6d4a1cd6), then a newline:
//
//	date, endpoint_type, backend, label, model_id, tokenizer_id,
//	num_prompts, the --metadata keys, request_rate, burstiness,
//	max_concurrency, duration, completed, failed, total_input_tokens,
//	total_output_tokens, request_throughput, request_goodput,
//	output_throughput, total_token_throughput, [input_lens, output_lens,
//	ttfts, itls], latencies, [start_times], queue_times, [generated_texts,
//	errors], max_output_tokens_per_s, max_concurrent_requests, rtfx, then
//	mean/median/std/pNN of each shown metric
//
// (bracketed: only when Detailed; vLLM deletes them without
// --save-detailed and keeps latencies and queue_times). Where BLIS
// differs: date is the simulated run's start (EpochUnixNano) formatted as
// vLLM formats the wall clock ("%Y%m%d-%H%M%S"), in UTC rather than local
// time, so the bytes depend only on the inputs; rtfx, vLLM's audio
// RTFx, is 0.0 (no audio input); generated_texts holds an empty string per
// request (BLIS generates no text); non-finite floats are written null
// (vLLM would write NaN). After vLLM's keys come BLIS's:
// itl_percentile_relative_accuracy, gpu_kv_cache_tokens, num_preemptions,
// prefix_cache_hit_rate, mean_batch_size, deployment, and with Detailed
// cached_tokens and preemptions.
type JSONWriter struct {
	w     io.Writer
	opt   JSONOptions
	order reorder.Buffer[jsonRow]
	cols  []*jsonColumn
	n     int64
	err   error
	b     []byte
}

// jsonRow is one request's entries in the per-request arrays.
type jsonRow struct {
	in, out, cached, pre    int
	ttft, lat, start, queue time.Duration
	itls                    []time.Duration
	err                     string
}

// jsonColumn is one per-request array, spooled.
type jsonColumn struct {
	key   string
	sp    *spool.Spool
	write func(b []byte, q *jsonRow) []byte
}

// NewJSONWriter returns a writer of the result file to w.
func NewJSONWriter(w io.Writer, opt JSONOptions) *JSONWriter {
	j := &JSONWriter{w: w, opt: opt}
	col := func(key string, write func(b []byte, q *jsonRow) []byte) {
		j.cols = append(j.cols, &jsonColumn{key: key, sp: spool.New(opt.TempDir, 0), write: write})
	}
	sec := func(b []byte, d time.Duration) []byte { return pytext.AppendFloatRatio(b, Seconds(d), int64(d), 9) }
	if opt.Detailed {
		col("input_lens", func(b []byte, q *jsonRow) []byte { return strconv.AppendInt(b, int64(q.in), 10) })
		col("output_lens", func(b []byte, q *jsonRow) []byte { return strconv.AppendInt(b, int64(q.out), 10) })
		col("ttfts", func(b []byte, q *jsonRow) []byte { return sec(b, q.ttft) })
		col("itls", func(b []byte, q *jsonRow) []byte {
			b = append(b, '[')
			for i, g := range q.itls {
				if i > 0 {
					b = append(b, ", "...)
				}
				b = sec(b, g)
			}
			return append(b, ']')
		})
	}
	col("latencies", func(b []byte, q *jsonRow) []byte { return sec(b, q.lat) })
	if opt.Detailed {
		col("start_times", func(b []byte, q *jsonRow) []byte { return sec(b, q.start) })
	}
	col("queue_times", func(b []byte, q *jsonRow) []byte { return sec(b, q.queue) })
	if opt.Detailed {
		col("errors", func(b []byte, q *jsonRow) []byte { return pytext.AppendJSONString(b, q.err, true) })
		col("cached_tokens", func(b []byte, q *jsonRow) []byte { return strconv.AppendInt(b, int64(q.cached), 10) })
		col("preemptions", func(b []byte, q *jsonRow) []byte { return strconv.AppendInt(b, int64(q.pre), 10) })
	}
	return j
}

// Request adds one finished request (any order; see Sink).
func (j *JSONWriter) Request(q *RequestResult) error {
	if j.err != nil {
		return j.err
	}
	row := jsonRow{in: q.InputTokens, out: q.OutputTokens, cached: q.CachedTokens, pre: q.Preemptions,
		ttft: q.TTFT, lat: q.Latency, start: q.Start, queue: q.QueueTime, err: q.Error}
	if j.opt.Detailed { // only the itls column lists the gaps
		row.itls = q.ITLs
		if !j.order.InOrder(q.Index) {
			row.itls = slices.Clone(row.itls) // held: q's gaps are reused once Request returns
		}
	}
	j.order.Push(q.Index, row, j.emit)
	return j.err
}

func (j *JSONWriter) emit(q jsonRow) {
	if j.err != nil {
		return
	}
	for _, c := range j.cols {
		j.b = j.b[:0]
		if j.n > 0 {
			j.b = append(j.b, ", "...)
		}
		j.b = c.write(j.b, &q)
		if _, err := c.sp.Write(j.b); err != nil {
			j.err = err
			return
		}
	}
	j.n++
}

// Close writes the document for r, whose requests were all given to
// Request, and releases the spools. It does not close the underlying
// writer.
func (j *JSONWriter) Close(r *Result) error {
	defer func() {
		for _, c := range j.cols {
			c.sp.Close()
		}
	}()
	if j.opt.Detailed && !r.Detailed {
		return fmt.Errorf("metrics: detailed JSON needs a recorder made with RecorderOptions.Detailed")
	}
	j.order.Flush(j.emit)
	if j.err != nil {
		return j.err
	}
	columns := map[string]*jsonColumn{}
	for _, c := range j.cols {
		columns[c.key] = c
	}
	spliced := func(key string) pySplice {
		c := columns[key]
		return func(w *bufio.Writer) error {
			w.WriteByte('[')
			if err := c.sp.WriteTo(w, 0, nil); err != nil {
				return err
			}
			return w.WriteByte(']')
		}
	}
	n := j.n
	var o pyObject
	// main_async(): run description.
	epoch := j.opt.EpochUnixNano
	if epoch == 0 {
		epoch = DefaultEpochUnixNano
	}
	o.set("date", time.Unix(0, epoch).UTC().Format("20060102-150405"))
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
	detailed := j.opt.Detailed
	if detailed {
		for _, k := range []string{"input_lens", "output_lens", "ttfts", "itls"} {
			o.set(k, spliced(k))
		}
	}
	o.set("latencies", spliced("latencies"))
	if detailed {
		o.set("start_times", spliced("start_times"))
	}
	o.set("queue_times", spliced("queue_times"))
	if detailed {
		o.set("generated_texts", pySplice(func(w *bufio.Writer) error { return writeRepeated(w, `""`, n) }))
		o.set("errors", spliced("errors"))
	}
	o.set("max_output_tokens_per_s", r.MaxOutputTokensPerS)
	o.set("max_concurrent_requests", int64(r.MaxConcurrentRequests))
	o.set("rtfx", 0.0)
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
	if len(r.Stages) > 0 {
		o.set("stages", stagesJSON(r.Stages))
	}
	if detailed {
		o.set("cached_tokens", spliced("cached_tokens"))
		o.set("preemptions", spliced("preemptions"))
	}
	return o.encodeTo(j.w)
}

// writeRepeated writes "[v, v, …]" with n copies of v.
func writeRepeated(w *bufio.Writer, v string, n int64) error {
	w.WriteByte('[')
	for i := range n {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(v)
	}
	return w.WriteByte(']')
}

// WriteJSON writes r as vLLM bench's result file (see JSONWriter), from
// r.Requests, with the default epoch. With detailed (--save-detailed) it
// needs a Result from a Detailed recorder.
func WriteJSON(w io.Writer, r *Result, detailed bool) error {
	j := NewJSONWriter(w, JSONOptions{Detailed: detailed})
	for i := range r.Requests {
		if err := j.Request(&r.Requests[i]); err != nil {
			j.Close(r)
			return err
		}
	}
	return j.Close(r)
}

// CreateResultFile opens path for a result file, making its directory. In
// append mode (vLLM's --append-result) it appends to what the file holds,
// as vLLM opens it with mode "a+": a file that does not end in a newline
// gets one first, so the file holds one JSON document per line.
func CreateResultFile(path string, appendMode bool) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if !appendMode {
		return os.Create(path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err = f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			_, err = f.Write([]byte{'\n'})
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
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

// pySplice is a value that writes itself, a spooled per-request array,
// into encodeTo's buffer (a bufio.Writer keeps its first error, so only
// the last write need be checked).
type pySplice func(w *bufio.Writer) error

// encodeTo writes the object, then a newline, through a buffer flushed
// before each spliced value.
func (o *pyObject) encodeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var b []byte
	b = append(b, '{')
	for i, k := range o.keys {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = pytext.AppendJSONString(b, k, true)
		b = append(b, ": "...)
		if sp, ok := o.vals[i].(pySplice); ok {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
			if err := sp(bw); err != nil {
				return err
			}
			continue
		}
		b = appendPyValue(b, o.vals[i])
	}
	b = append(b, '}', '\n')
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}

// pyRaw is JSON text already in Python's json.dump form.
type pyRaw []byte

func appendPyValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float64:
		return appendPyFloat(b, x)
	case string:
		return pytext.AppendJSONString(b, x, true)
	case pyRaw:
		return append(b, x...)
	default: // unreachable: only this file builds values
		return append(b, "null"...)
	}
}

// appendPyFloat appends Python's float repr; NaN and ±Inf as null.
func appendPyFloat(b []byte, x float64) []byte {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return append(b, "null"...)
	}
	return pytext.AppendFloat(b, x)
}

// pyMarshal encodes v with encoding/json (so struct tags, map key order and
// Marshalers apply), then respaces it and re-escapes its strings in
// json.dump's style. Numbers keep Go's spelling. It runs once per file.
func pyMarshal(v any) (pyRaw, error) {
	compact, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var b []byte
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
			b = pytext.AppendJSONString(b, s, true)
			i = j + 1
		case ',':
			b = append(b, ", "...)
			i++
		case ':':
			b = append(b, ": "...)
			i++
		default:
			b = append(b, c)
			i++
		}
	}
	return pyRaw(b), nil
}
