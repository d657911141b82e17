// Package aiperf writes and reads ai-dynamo/aiperf's profile exports, so
// that aiperf's own readers and dashboards work on BLIS output. The
// exports are mirrored from ai-dynamo/aiperf main (2026; JSON export
// schema 1.4: src/aiperf/common/models/export_models.py JsonExportData and
// JsonMetricResult, record_models.py MetricRecordMetadata, the metric
// classes under src/aiperf/metrics/types/, exporters/metrics_json_exporter.py
// and metrics_csv_exporter.py, constants.py STAT_KEYS), and the record
// layout of docs/tutorials/working-with-profile-exports.md at db4f6397:
//
//   - profile_export.jsonl: one orjson line per request: metadata
//     (session_num, x_request_id, x_correlation_id, conversation_id,
//     turn_index, request_start_ns, request_ack_ns, request_end_ns,
//     worker_id, record_processor_id, benchmark_phase, was_cancelled,
//     cancellation_time_ns), metrics {tag: {value, unit}} in display units,
//     error {code, type, message} or null.
//   - profile_export_aiperf.json: orjson, indent 2, None fields dropped:
//     schema_version, aiperf_version, benchmark_id, each metric tag's
//     {unit, avg, p1…p99, min, max, std, count, sum} (count and sum only
//     for record metrics), input_config, run_info, was_cancelled,
//     error_summary, start_time, end_time, then the injected
//     e2e_normalized_interactivity_p75/p90.
//   - profile_export_aiperf.csv: record metrics sorted by tag under
//     "Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std", a blank
//     row, then the others under "Metric,Value"; names "Header (unit)"
//     (no unit for count/requests); numbers "%.2f" — the CSV keeps two
//     decimals.
//
// Record metrics are computed in base units (ns for times) and converted
// to display units by multiplying with aiperf's factor (ns→ms: 1000/1e9),
// as to_display_unit does; statistics are numpy's (np.mean, np.std with
// ddof 0, np.percentile linear), sum is a running sum in record order.
//
// Records are written as requests finish, in completion order, as aiperf
// writes them (src/aiperf/post_processors/record_export_results_processor.py
// @ 017c63d2: process_result hands each record to the buffered JSONL
// writer as the records manager receives it), and the aggregates run over
// them in that order. The Writer streams the JSONL and keeps, per request,
// a few varints for the aggregates, plus every chunk gap for
// inter_chunk_latency (a varint each).
package aiperf

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
	"blis/metrics/internal/pytext"
	"blis/metrics/internal/vlog"
)

// Name is the format's name, as --export takes it.
const Name = "aiperf"

// Files the export writes.
const (
	RecordsFile = "profile_export.jsonl"
	JSONFile    = "profile_export_aiperf.json"
	CSVFile     = "profile_export_aiperf.csv"
)

// aiperfPercentiles are the percentiles aiperf reports (STAT_KEYS).
var aiperfPercentiles = [9]float64{1, 5, 10, 25, 50, 75, 90, 95, 99}

var aiperfPctNames = [9]string{"p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}

// aiperfMetric is one entry of profile_export_aiperf.json.
type aiperfMetric struct {
	Tag, Header, Unit string
	Record            bool // a distribution over records; else a scalar in Avg
	Avg               float64
	Min, Max, Sum     float64
	Std               float64
	P                 [9]float64
	Count             int
}

func aiperfScalar(tag, header, unit string, v float64) aiperfMetric {
	return aiperfMetric{Tag: tag, Header: header, Unit: unit, Avg: v}
}

// aiperfJSONOrder is JsonExportData's declared metric fields, in order;
// other tags follow them (pydantic dumps extras last).
var aiperfJSONOrder = []string{
	"request_throughput", "request_latency", "request_count", "time_to_first_token",
	"time_to_second_token", "inter_token_latency", "output_token_throughput",
	"output_token_throughput_per_user", "output_sequence_length", "input_sequence_length",
	"goodput", "good_request_count", "output_token_count", "reasoning_token_count",
	"min_request_timestamp", "max_response_timestamp", "inter_chunk_latency",
	"total_output_tokens", "total_reasoning_tokens", "benchmark_duration", "total_isl",
	"total_osl", "error_request_count", "error_isl", "total_error_isl",
}

const aiperfNsToS = 1.0 / 1e9 // MetricTimeUnit ns → sec factor

// aiperfRecordTimes is one successful request in aiperf's base units.
type aiperfRecordTimes struct {
	ttft, latency float64 // ns
	itl           float64 // ns, (latency − ttft)/(osl − 1); valid when osl ≥ 2
	hasITL        bool
}

func aiperfTimes(ttft, latency int64, osl int) aiperfRecordTimes {
	t := aiperfRecordTimes{ttft: float64(ttft), latency: float64(latency)}
	if osl >= 2 {
		t.itl = float64(latency-ttft) / float64(osl-1)
		t.hasITL = true
	}
	return t
}

// aggregator keeps what profile_export_aiperf.json is computed from: per
// successful request its TTFT, latency, time to second token and lengths,
// every chunk gap, and per failed request its input length — varints in
// record order — with the error counts and the span.
type aggregator struct {
	run              *metrics.RunInfo
	ok               vlog.Log // ttft ns, latency ns, ttst ns (−1: none), osl, isl
	icl              vlog.Log // chunk gaps, ns
	errISL           vlog.Log
	nOK, nErr        int
	nICL, nTTST      int
	nITL, nTPS, nE2E int
	minStart, maxEnd int64
	totalOSL         int64
	totalISL         int64
	totalErrISL      int64
	errOrder         []string
	errCount         map[string]int
}

func newAggregator(run *metrics.RunInfo) *aggregator {
	return &aggregator{run: run, minStart: math.MaxInt64, maxEnd: math.MinInt64, errCount: map[string]int{}}
}

// spill moves the logs beyond vlog.MemLimit each to temporary files in
// dir: every chunk gap of a long run would not fit in memory.
func (a *aggregator) spill(dir string) {
	for _, l := range []*vlog.Log{&a.ok, &a.icl, &a.errISL} {
		l.Spill(dir, vlog.MemLimit)
	}
}

// err is the first error of the logs' spill files.
func (a *aggregator) err() error {
	return errors.Join(a.ok.Err(), a.icl.Err(), a.errISL.Err())
}

func (a *aggregator) close() {
	a.ok.Close()
	a.icl.Close()
	a.errISL.Close()
}

func (a *aggregator) add(q *metrics.RequestResult) {
	if !q.Success {
		a.nErr++
		a.errISL.Int(int64(q.InputTokens))
		a.totalErrISL += int64(q.InputTokens)
		if a.errCount[q.Error] == 0 {
			a.errOrder = append(a.errOrder, q.Error)
		}
		a.errCount[q.Error]++
		return
	}
	a.nOK++
	ttst := int64(-1)
	if len(q.ITLs) > 0 {
		ttst = int64(q.ITLs[0])
		a.nTTST++
	}
	a.ok.Int(int64(q.TTFT))
	a.ok.Int(int64(q.Latency))
	a.ok.Int(ttst)
	a.ok.Int(int64(q.OutputTokens))
	a.ok.Int(int64(q.InputTokens))
	for _, g := range q.ITLs {
		a.icl.Int(int64(g))
	}
	a.nICL += len(q.ITLs)
	if t := aiperfTimes(int64(q.TTFT), int64(q.Latency), q.OutputTokens); t.hasITL {
		a.nITL++
		if t.itl*aiperfNsToS != 0 {
			a.nTPS++
		}
	}
	if q.Latency > 0 && q.OutputTokens > 0 && q.TTFT > 0 && q.InputTokens > 0 {
		a.nE2E++
	}
	a.totalOSL += int64(q.OutputTokens)
	a.totalISL += int64(q.InputTokens)
	a.minStart = min(a.minStart, a.run.UnixNano(q.Start))
	a.maxEnd = max(a.maxEnd, a.run.UnixNano(q.End))
}

// okRow is one successful request as the aggregator logged it.
type okRow struct {
	ttft, latency, ttst int64
	osl, isl            int
}

// seq is the sequence of one value per successful request (n of them;
// keep false skips a request).
func (a *aggregator) seq(n int, value func(r *okRow) (float64, bool)) numpy.Seq {
	return numpy.Seq{N: n, Open: func() func() float64 {
		rd := a.ok.Reader()
		var row okRow
		return func() float64 {
			for {
				row.ttft, row.latency, row.ttst = rd.Int(), rd.Int(), rd.Int()
				row.osl, row.isl = int(rd.Int()), int(rd.Int())
				if v, keep := value(&row); keep {
					return v
				}
			}
		}
	}}
}

func logSeq(l *vlog.Log, n int) numpy.Seq {
	return numpy.Seq{N: n, Open: func() func() float64 {
		rd := l.Reader()
		return func() float64 { return float64(rd.Int()) }
	}}
}

// aiperfDist is a record metric over values in base units, shown in
// display units (value · factor).
func aiperfDist(tag, header, unit string, values numpy.Seq, factor float64, buf []float64) aiperfMetric {
	m := aiperfMetric{Tag: tag, Header: header, Unit: unit, Record: true, Count: values.N}
	if values.N == 0 {
		return m
	}
	s := values.Order(buf, aiperfPercentiles[:])
	sum := 0.0
	next := values.Open()
	for range values.N {
		sum += next()
	}
	conv := func(v float64) float64 {
		if factor == 1 {
			return v
		}
		return v * factor
	}
	m.Min, m.Max = conv(s.At(0)), conv(s.At(s.Len()-1))
	mean, std := values.MeanStd()
	m.Avg, m.Sum, m.Std = conv(mean), conv(sum), conv(std)
	for i, p := range aiperfPercentiles {
		m.P[i] = conv(s.Percentile(p))
	}
	return m
}

// metrics computes profile_export_aiperf.json's metrics, in
// aiperfJSONOrder (then the injected ones).
func (a *aggregator) metrics() []aiperfMetric {
	const msF = 1000.0 / 1e9
	var out []aiperfMetric
	var buf []float64
	add := func(m aiperfMetric) { out = append(out, m) }
	dist := func(tag, header, unit string, values numpy.Seq, factor float64) {
		if cap(buf) < values.N {
			buf = numpy.Buffer(values.N) // nil where Order would not sort in an array
		}
		add(aiperfDist(tag, header, unit, values, factor, buf))
	}
	all := func(f func(r *okRow) float64) numpy.Seq {
		return a.seq(a.nOK, func(r *okRow) (float64, bool) { return f(r), true })
	}
	var durS float64
	if a.nOK > 0 {
		durS = float64(a.maxEnd-a.minStart) * aiperfNsToS
		if durS > 0 {
			add(aiperfScalar("request_throughput", "Request Throughput", "requests/sec", float64(a.nOK)/durS))
		}
		dist("request_latency", "Request Latency", "ms", all(func(r *okRow) float64 { return float64(r.latency) }), msF)
		add(aiperfScalar("request_count", "Request Count", "requests", float64(a.nOK)))
		dist("time_to_first_token", "Time to First Token", "ms", all(func(r *okRow) float64 { return float64(r.ttft) }), msF)
		if a.nTTST > 0 {
			dist("time_to_second_token", "Time to Second Token", "ms",
				a.seq(a.nTTST, func(r *okRow) (float64, bool) { return float64(r.ttst), r.ttst >= 0 }), msF)
		}
		if a.nITL > 0 {
			dist("inter_token_latency", "Inter Token Latency", "ms", a.seq(a.nITL, func(r *okRow) (float64, bool) {
				t := aiperfTimes(r.ttft, r.latency, r.osl)
				return t.itl, t.hasITL
			}), msF)
		}
		if durS > 0 {
			add(aiperfScalar("output_token_throughput", "Output Token Throughput", "tokens/sec", float64(a.totalOSL)/durS))
		}
		if a.nTPS > 0 {
			dist("output_token_throughput_per_user", "Output Token Throughput Per User", "tokens/sec/user",
				a.seq(a.nTPS, func(r *okRow) (float64, bool) {
					t := aiperfTimes(r.ttft, r.latency, r.osl)
					conv := t.itl * aiperfNsToS
					return 1 / conv, t.hasITL && conv != 0
				}), 1)
		}
		dist("output_sequence_length", "Output Sequence Length", "tokens", all(func(r *okRow) float64 { return float64(r.osl) }), 1)
		dist("input_sequence_length", "Input Sequence Length", "tokens", all(func(r *okRow) float64 { return float64(r.isl) }), 1)
		dist("output_token_count", "Output Token Count", "tokens", all(func(r *okRow) float64 { return float64(r.osl) }), 1)
		add(aiperfScalar("min_request_timestamp", "Minimum Request Timestamp", "ns", float64(a.minStart)))
		add(aiperfScalar("max_response_timestamp", "Maximum Response Timestamp", "ns", float64(a.maxEnd)))
		if a.nICL > 0 {
			dist("inter_chunk_latency", "Inter Chunk Latency", "ms", logSeq(&a.icl, a.nICL), msF)
		}
		add(aiperfScalar("total_output_tokens", "Total Output Tokens", "tokens", float64(a.totalOSL)))
		add(aiperfScalar("benchmark_duration", "Benchmark Duration", "sec", durS))
		add(aiperfScalar("total_isl", "Total Input Sequence Length", "tokens", float64(a.totalISL)))
		add(aiperfScalar("total_osl", "Total Output Sequence Length", "tokens", float64(a.totalOSL)))
	}
	if a.nErr > 0 {
		add(aiperfScalar("error_request_count", "Error Request Count", "requests", float64(a.nErr)))
		dist("error_isl", "Error Input Sequence Length", "tokens", logSeq(&a.errISL, a.nErr), 1)
		add(aiperfScalar("total_error_isl", "Total Error Input Sequence Length", "tokens", float64(a.totalErrISL)))
	}
	// Injected post-aggregation: 1 / np.percentile(latency_s / OSL, p)
	// (aiperf e2e_normalized_interactivity_analyzer.py).
	if a.nE2E > 0 {
		ratios := a.seq(a.nE2E, func(r *okRow) (float64, bool) {
			return float64(r.latency) / 1e9 / float64(r.osl), r.latency > 0 && r.osl > 0 && r.ttft > 0 && r.isl > 0
		})
		s := ratios.Order(buf, []float64{75, 90})
		for _, p := range []float64{75, 90} {
			if rp := s.Percentile(p); rp > 0 && !math.IsInf(1/rp, 0) {
				tag := "e2e_normalized_interactivity_p" + metrics.PercentileWord(p)
				add(aiperfScalar(tag, "E2E Normalized Interactivity p"+metrics.PercentileWord(p), "tokens/sec/user", 1/rp))
			}
		}
	}
	return out
}

// aiperfMetrics computes the aggregates of r's requests, taken in
// completion order (Seq), as the Writer sees them.
func aiperfMetrics(r *metrics.Result, run *metrics.RunInfo) []aiperfMetric {
	a := newAggregator(run)
	for _, q := range r.InCompletionOrder() {
		a.add(q)
	}
	return a.metrics()
}

func (m *aiperfMetric) jsonObj() *jsonx.Obj {
	o := jsonx.NewObj().Set("unit", m.Unit)
	if !m.Record {
		return o.Set("avg", m.Avg)
	}
	if m.Count == 0 {
		return o.Set("count", m.Count)
	}
	o.Set("avg", m.Avg)
	for i, n := range aiperfPctNames {
		o.Set(n, m.P[i])
	}
	o.Set("min", m.Min).Set("max", m.Max).Set("std", m.Std).Set("count", m.Count).Set("sum", m.Sum)
	return o
}

// appendRecord appends q's profile_export.jsonl line (orjson, one line).
func appendRecord(e *jsonx.Enc, run *metrics.RunInfo, q *metrics.RequestResult) {
	const msF = 1000.0 / 1e9
	conv, turn := run.ConversationOf(q)
	e.Obj()
	e.Key("metadata")
	e.Obj()
	e.Key("session_num")
	e.Int(conv)
	e.Key("x_request_id")
	e.IntString(q.Index)
	e.Key("x_correlation_id")
	e.IntString(conv)
	e.Key("conversation_id")
	e.IntString(conv)
	e.Key("turn_index")
	e.Int(int64(turn))
	e.Key("request_start_ns")
	e.Int(run.UnixNano(q.Start))
	e.Key("request_ack_ns")
	e.Null()
	e.Key("request_end_ns")
	e.Int(run.UnixNano(q.End))
	e.Key("worker_id")
	e.Str("worker_blis")
	e.Key("record_processor_id")
	e.Str("record_processor_blis")
	e.Key("benchmark_phase")
	e.Str("profiling")
	e.Key("was_cancelled")
	e.Bool(false)
	e.Key("cancellation_time_ns")
	e.Null()
	e.EndObj()
	e.Key("metrics")
	e.Obj()
	intMetric := func(k string, v int64, unit string) {
		e.Key(k)
		e.Obj()
		e.Key("value")
		e.Int(v)
		e.Key("unit")
		e.Str(unit)
		e.EndObj()
	}
	floatMetric := func(k string, v float64, unit string) {
		e.Key(k)
		e.Obj()
		e.Key("value")
		e.Float(v)
		e.Key("unit")
		e.Str(unit)
		e.EndObj()
	}
	// A whole number of ns in ms: the float nearest ns/1e6 as often as not.
	msMetric := func(k string, ns int64) {
		e.Key(k)
		e.Obj()
		e.Key("value")
		e.FloatRatio(float64(ns)*msF, ns, 6)
		e.Key("unit")
		e.Str("ms")
		e.EndObj()
	}
	if q.Success {
		t := aiperfTimes(int64(q.TTFT), int64(q.Latency), q.OutputTokens)
		intMetric("input_sequence_length", int64(q.InputTokens), "tokens")
		msMetric("time_to_first_token", int64(q.TTFT))
		msMetric("request_latency", int64(q.Latency))
		intMetric("output_token_count", int64(q.OutputTokens), "tokens")
		if len(q.ITLs) > 0 {
			msMetric("time_to_second_token", int64(q.ITLs[0]))
			e.Key("inter_chunk_latency")
			e.Obj()
			e.Key("value")
			e.Arr()
			for _, g := range q.ITLs {
				e.FloatRatio(float64(g)*msF, int64(g), 6)
			}
			e.EndArr()
			e.Key("unit")
			e.Str("ms")
			e.EndObj()
		}
		intMetric("output_sequence_length", int64(q.OutputTokens), "tokens")
		if t.hasITL {
			floatMetric("inter_token_latency", t.itl*msF, "ms")
			if conv := t.itl * aiperfNsToS; conv != 0 {
				floatMetric("output_token_throughput_per_user", 1/conv, "tokens/sec/user")
			}
		}
	} else {
		intMetric("error_isl", int64(q.InputTokens), "tokens")
	}
	e.EndObj()
	e.Key("error")
	if q.Success {
		e.Null()
	} else {
		e.Obj()
		e.Key("code")
		e.Int(400)
		e.Key("type")
		e.Str("BadRequestError")
		e.Key("message")
		e.Str(q.Error)
		e.EndObj()
	}
	e.EndObj()
	e.B = append(e.B, '\n')
}

// Writer streams the aiperf export into a directory: each request's
// record goes to RecordsFile as it finishes; Close writes the aggregates
// (JSONFile, CSVFile). Requests must come from a Detailed recorder (the
// records carry every chunk gap).
type Writer struct {
	dir string
	run metrics.RunInfo
	out *jsonx.File
	agg *aggregator
}

// NewWriter creates RecordsFile in dir.
func NewWriter(dir string, run metrics.RunInfo) (*Writer, error) {
	out, err := jsonx.CreateFile(filepath.Join(dir, RecordsFile), jsonx.OrjsonCompact, 0)
	if err != nil {
		return nil, err
	}
	w := &Writer{dir: dir, run: run, out: out}
	w.agg = newAggregator(&w.run)
	w.agg.spill(dir)
	return w, nil
}

// Request writes q's record (see metrics.Sink).
func (w *Writer) Request(q *metrics.RequestResult) error {
	appendRecord(w.out.Enc, &w.run, q)
	if err := w.out.Write(); err != nil {
		return err
	}
	w.agg.add(q)
	return w.agg.err()
}

// Close finishes RecordsFile and writes JSONFile and CSVFile for r, whose
// requests were all given to Request. It returns the files written.
func (w *Writer) Close(r *metrics.Result) ([]string, error) {
	defer w.agg.close()
	if err := w.out.Close(""); err != nil {
		return nil, err
	}
	agg, csvOut := w.agg.documents(r)
	if err := w.agg.err(); err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(w.dir, RecordsFile), filepath.Join(w.dir, JSONFile), filepath.Join(w.dir, CSVFile)}
	if err := os.WriteFile(paths[1], agg, 0o644); err != nil {
		return paths[:1], err
	}
	if err := os.WriteFile(paths[2], csvOut, 0o644); err != nil {
		return paths[:2], err
	}
	return paths, nil
}

// Abort closes RecordsFile without writing the aggregates.
func (w *Writer) Abort() {
	w.out.Abort()
	w.agg.close()
}

// Encode renders the three aiperf files from r's requests (taken in
// completion order): the per-request records (RecordsFile), the aggregates
// (JSONFile) and their CSV (CSVFile). r must come from a Detailed recorder.
func Encode(r *metrics.Result, run *metrics.RunInfo) (jsonl, agg, csvOut []byte, err error) {
	a := newAggregator(run)
	e := jsonx.NewEnc(jsonx.OrjsonCompact, 0)
	for _, q := range r.InCompletionOrder() {
		appendRecord(e, run, q)
		a.add(q)
	}
	agg, csvOut = a.documents(r)
	return e.B, agg, csvOut, nil
}

// documents renders JSONFile and CSVFile.
func (a *aggregator) documents(r *metrics.Result) (agg, csvOut []byte) {
	run := a.run
	ms := a.metrics()
	byTag := map[string]*aiperfMetric{}
	for i := range ms {
		byTag[ms[i].Tag] = &ms[i]
	}
	doc := jsonx.NewObj().
		Set("schema_version", "1.4").
		Set("aiperf_version", run.ToolVersion()).
		Set("benchmark_id", run.RunID(r))
	for _, tag := range aiperfJSONOrder {
		if m := byTag[tag]; m != nil {
			doc.Set(tag, m.jsonObj())
		}
	}
	streaming := true
	loadgen := jsonx.NewObj()
	if r.MaxConcurrency > 0 {
		loadgen.Set("concurrency", r.MaxConcurrency)
	}
	if !math.IsInf(r.RequestRate, 1) && r.RequestRate > 0 {
		loadgen.Set("request_rate", r.RequestRate)
	}
	loadgen.Set("request_count", r.Completed+r.Failed)
	doc.Set("input_config", jsonx.NewObj().
		Set("endpoint", jsonx.NewObj().Set("model_names", []any{run.ModelName(r)}).Set("type", "completions").Set("streaming", streaming)).
		Set("input", jsonx.NewObj().Set("prompt", jsonx.NewObj().
			Set("input_tokens", jsonx.NewObj().Set("mean", run.ISL)).
			Set("output_tokens", jsonx.NewObj().Set("mean", run.OSL)))).
		Set("loadgen", loadgen))
	doc.Set("run_info", jsonx.NewObj().
		Set("benchmark_id", run.RunID(r)).
		Set("random_seed", run.Seed).
		Set("trial", 0).
		Set("run_label", "run_0001").
		Set("variation_label", "base").
		Set("variation_index", 0).
		Set("variation_values", jsonx.NewObj()))
	doc.Set("was_cancelled", false)
	summary := []any{}
	for _, msg := range a.errOrder {
		summary = append(summary, jsonx.NewObj().
			Set("error_details", jsonx.NewObj().Set("code", 400).Set("type", "BadRequestError").Set("message", msg)).
			Set("count", a.errCount[msg]))
	}
	doc.Set("error_summary", summary)
	if s, e, ok := run.RequestSpan(r); ok {
		doc.Set("start_time", pytext.ISOFormat(s)).Set("end_time", pytext.ISOFormat(e))
	}
	for i := range ms {
		if !slices.Contains(aiperfJSONOrder, ms[i].Tag) {
			doc.Set(ms[i].Tag, ms[i].jsonObj())
		}
	}
	var jb bytes.Buffer
	jsonx.Encode(&jb, doc, jsonx.OrjsonIndent2)
	return jb.Bytes(), encodeCSV(ms)
}

// aiperfCSVName is MetricsCsvExporter._format_metric_name.
func aiperfCSVName(m *aiperfMetric) string {
	if u := strings.ToLower(m.Unit); m.Unit != "" && u != "count" && u != "requests" {
		return m.Header + " (" + m.Unit + ")"
	}
	return m.Header
}

var aiperfCSVStats = []string{"avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}

func (m *aiperfMetric) stat(name string) (float64, bool) {
	switch name {
	case "avg":
		return m.Avg, !m.Record || m.Count > 0
	case "min":
		return m.Min, m.Record && m.Count > 0
	case "max":
		return m.Max, m.Record && m.Count > 0
	case "sum":
		return m.Sum, m.Record && m.Count > 0
	case "std":
		return m.Std, m.Record && m.Count > 0
	}
	for i, n := range aiperfPctNames {
		if n == name {
			return m.P[i], m.Record && m.Count > 0
		}
	}
	return 0, false
}

// encodeCSV is MetricsCsvExporter's two sections (Python csv module:
// "\r\n" line ends, minimal quoting).
func encodeCSV(ms []aiperfMetric) []byte {
	var rec, sys []*aiperfMetric
	for i := range ms {
		if ms[i].Record && ms[i].Count > 0 {
			rec = append(rec, &ms[i])
		} else if !ms[i].Record {
			sys = append(sys, &ms[i])
		}
	}
	byTag := func(a, b *aiperfMetric) int { return strings.Compare(a.Tag, b.Tag) }
	slices.SortStableFunc(rec, byTag)
	slices.SortStableFunc(sys, byTag)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.UseCRLF = true
	if len(rec) > 0 {
		_ = w.Write(append([]string{"Metric"}, aiperfCSVStats...))
		for _, m := range rec {
			row := []string{aiperfCSVName(m)}
			for _, s := range aiperfCSVStats {
				v, _ := m.stat(s)
				row = append(row, pytext.Fixed2(v))
			}
			_ = w.Write(row)
		}
		if len(sys) > 0 {
			w.Flush()
			b.WriteString("\r\n")
		}
	}
	if len(sys) > 0 {
		_ = w.Write([]string{"Metric", "Value"})
		for _, m := range sys {
			_ = w.Write([]string{aiperfCSVName(m), pytext.Fixed2(m.Avg)})
		}
	}
	w.Flush()
	return b.Bytes()
}
