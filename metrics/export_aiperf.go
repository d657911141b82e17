package metrics

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"blis/metrics/internal/numpy"
	"blis/metrics/internal/pytext"
)

// aiperf's exports, mirrored from ai-dynamo/aiperf main (2026; JSON export
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

// aiperfDist is a record metric over values in base units, shown in
// display units (value · factor).
func aiperfDist(tag, header, unit string, values []float64, factor float64) aiperfMetric {
	m := aiperfMetric{Tag: tag, Header: header, Unit: unit, Record: true, Count: len(values)}
	if len(values) == 0 {
		return m
	}
	s := slices.Clone(values)
	slices.Sort(s)
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	conv := func(v float64) float64 {
		if factor == 1 {
			return v
		}
		return v * factor
	}
	m.Min, m.Max = conv(s[0]), conv(s[len(s)-1])
	m.Avg, m.Sum, m.Std = conv(numpy.Mean(values)), conv(sum), conv(numpy.Std(values))
	for i, p := range aiperfPercentiles {
		m.P[i] = conv(numpy.PercentileSorted(s, p))
	}
	return m
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

func aiperfTimes(q *RequestResult) aiperfRecordTimes {
	t := aiperfRecordTimes{ttft: float64(q.TTFT), latency: float64(q.Latency)}
	if q.OutputTokens >= 2 {
		t.itl = float64(int64(q.Latency)-int64(q.TTFT)) / float64(q.OutputTokens-1)
		t.hasITL = true
	}
	return t
}

// aiperfMetrics computes profile_export_aiperf.json's metrics from the
// per-request records, in aiperfJSONOrder (then the injected ones).
func aiperfMetrics(r *Result, run *RunInfo) []aiperfMetric {
	var ttft, ttst, lat, itl, icl, tps, osl, isl, otc, errISL []float64
	var e2eRatio []float64
	var minStart, maxEnd int64 = math.MaxInt64, math.MinInt64
	var totalOSL, totalISL, totalErrISL int64
	nOK, nErr := 0, 0
	for i := range r.Requests {
		q := &r.Requests[i]
		if !q.Success {
			nErr++
			errISL = append(errISL, float64(q.InputTokens))
			totalErrISL += int64(q.InputTokens)
			continue
		}
		nOK++
		t := aiperfTimes(q)
		ttft = append(ttft, t.ttft)
		lat = append(lat, t.latency)
		if len(q.ITLs) > 0 {
			ttst = append(ttst, float64(q.ITLs[0]))
		}
		for _, g := range q.ITLs {
			icl = append(icl, float64(g))
		}
		if t.hasITL {
			itl = append(itl, t.itl)
			if conv := t.itl * aiperfNsToS; conv != 0 {
				tps = append(tps, 1/conv)
			}
		}
		osl = append(osl, float64(q.OutputTokens))
		otc = append(otc, float64(q.OutputTokens))
		isl = append(isl, float64(q.InputTokens))
		totalOSL += int64(q.OutputTokens)
		totalISL += int64(q.InputTokens)
		minStart = min(minStart, run.unixNano(q.Start))
		maxEnd = max(maxEnd, run.unixNano(q.End))
		if q.Latency > 0 && q.OutputTokens > 0 && q.TTFT > 0 && q.InputTokens > 0 {
			e2eRatio = append(e2eRatio, float64(q.Latency)/1e9/float64(q.OutputTokens))
		}
	}
	const msF = 1000.0 / 1e9
	var out []aiperfMetric
	add := func(m aiperfMetric) { out = append(out, m) }
	var durS float64
	if nOK > 0 {
		durS = float64(maxEnd-minStart) * aiperfNsToS
		if durS > 0 {
			add(aiperfScalar("request_throughput", "Request Throughput", "requests/sec", float64(nOK)/durS))
		}
		add(aiperfDist("request_latency", "Request Latency", "ms", lat, msF))
		add(aiperfScalar("request_count", "Request Count", "requests", float64(nOK)))
		add(aiperfDist("time_to_first_token", "Time to First Token", "ms", ttft, msF))
		if len(ttst) > 0 {
			add(aiperfDist("time_to_second_token", "Time to Second Token", "ms", ttst, msF))
		}
		if len(itl) > 0 {
			add(aiperfDist("inter_token_latency", "Inter Token Latency", "ms", itl, msF))
		}
		if durS > 0 {
			add(aiperfScalar("output_token_throughput", "Output Token Throughput", "tokens/sec", float64(totalOSL)/durS))
		}
		if len(tps) > 0 {
			add(aiperfDist("output_token_throughput_per_user", "Output Token Throughput Per User", "tokens/sec/user", tps, 1))
		}
		add(aiperfDist("output_sequence_length", "Output Sequence Length", "tokens", osl, 1))
		add(aiperfDist("input_sequence_length", "Input Sequence Length", "tokens", isl, 1))
		add(aiperfDist("output_token_count", "Output Token Count", "tokens", otc, 1))
		add(aiperfScalar("min_request_timestamp", "Minimum Request Timestamp", "ns", float64(minStart)))
		add(aiperfScalar("max_response_timestamp", "Maximum Response Timestamp", "ns", float64(maxEnd)))
		if len(icl) > 0 {
			add(aiperfDist("inter_chunk_latency", "Inter Chunk Latency", "ms", icl, msF))
		}
		add(aiperfScalar("total_output_tokens", "Total Output Tokens", "tokens", float64(totalOSL)))
		add(aiperfScalar("benchmark_duration", "Benchmark Duration", "sec", durS))
		add(aiperfScalar("total_isl", "Total Input Sequence Length", "tokens", float64(totalISL)))
		add(aiperfScalar("total_osl", "Total Output Sequence Length", "tokens", float64(totalOSL)))
	}
	if nErr > 0 {
		add(aiperfScalar("error_request_count", "Error Request Count", "requests", float64(nErr)))
		add(aiperfDist("error_isl", "Error Input Sequence Length", "tokens", errISL, 1))
		add(aiperfScalar("total_error_isl", "Total Error Input Sequence Length", "tokens", float64(totalErrISL)))
	}
	// Injected post-aggregation: 1 / np.percentile(latency_s / OSL, p)
	// (aiperf e2e_normalized_interactivity_analyzer.py).
	if len(e2eRatio) > 0 {
		s := slices.Clone(e2eRatio)
		slices.Sort(s)
		for _, p := range []float64{75, 90} {
			if rp := numpy.PercentileSorted(s, p); rp > 0 && !math.IsInf(1/rp, 0) {
				tag := "e2e_normalized_interactivity_p" + percentileWord(p)
				add(aiperfScalar(tag, "E2E Normalized Interactivity p"+percentileWord(p), "tokens/sec/user", 1/rp))
			}
		}
	}
	return out
}

func (m *aiperfMetric) jsonObj() *jObj {
	o := newObj().set("unit", m.Unit)
	if !m.Record {
		return o.set("avg", m.Avg)
	}
	if m.Count == 0 {
		return o.set("count", m.Count)
	}
	o.set("avg", m.Avg)
	for i, n := range aiperfPctNames {
		o.set(n, m.P[i])
	}
	o.set("min", m.Min).set("max", m.Max).set("std", m.Std).set("count", m.Count).set("sum", m.Sum)
	return o
}

// aiperfConversationID is the conversation id written for a request.
func aiperfConversationID(run *RunInfo, index int64) (string, int64, int) {
	conv, turn := run.conversation(index)
	return itoa(conv), conv, turn
}

// encodeAIPerf renders the three aiperf files.
func encodeAIPerf(r *Result, run *RunInfo) (jsonl, agg, csvOut []byte, err error) {
	const msF = 1000.0 / 1e9
	var b bytes.Buffer
	var errOrder []string
	errCount := map[string]int{}
	for i := range r.Requests {
		q := &r.Requests[i]
		convID, conv, turn := aiperfConversationID(run, q.Index)
		md := newObj().
			set("session_num", conv).
			set("x_request_id", itoa(q.Index)).
			set("x_correlation_id", convID).
			set("conversation_id", convID).
			set("turn_index", turn).
			set("request_start_ns", run.unixNano(q.Start)).
			set("request_ack_ns", nil).
			set("request_end_ns", run.unixNano(q.End)).
			set("worker_id", "worker_blis").
			set("record_processor_id", "record_processor_blis").
			set("benchmark_phase", "profiling").
			set("was_cancelled", false).
			set("cancellation_time_ns", nil)
		mv := func(v any, unit string) *jObj { return newObj().set("value", v).set("unit", unit) }
		metrics := newObj()
		var errObj any
		if q.Success {
			t := aiperfTimes(q)
			metrics.set("input_sequence_length", mv(int64(q.InputTokens), "tokens"))
			metrics.set("time_to_first_token", mv(t.ttft*msF, "ms"))
			metrics.set("request_latency", mv(t.latency*msF, "ms"))
			metrics.set("output_token_count", mv(int64(q.OutputTokens), "tokens"))
			if len(q.ITLs) > 0 {
				metrics.set("time_to_second_token", mv(float64(q.ITLs[0])*msF, "ms"))
				gaps := make([]float64, len(q.ITLs))
				for j, g := range q.ITLs {
					gaps[j] = float64(g) * msF
				}
				metrics.set("inter_chunk_latency", mv(gaps, "ms"))
			}
			metrics.set("output_sequence_length", mv(int64(q.OutputTokens), "tokens"))
			if t.hasITL {
				metrics.set("inter_token_latency", mv(t.itl*msF, "ms"))
				if conv := t.itl * aiperfNsToS; conv != 0 {
					metrics.set("output_token_throughput_per_user", mv(1/conv, "tokens/sec/user"))
				}
			}
		} else {
			metrics.set("error_isl", mv(int64(q.InputTokens), "tokens"))
			errObj = newObj().set("code", 400).set("type", "BadRequestError").set("message", q.Error)
			if errCount[q.Error] == 0 {
				errOrder = append(errOrder, q.Error)
			}
			errCount[q.Error]++
		}
		rec := newObj().set("metadata", md).set("metrics", metrics).set("error", errObj)
		encodeJSON(&b, rec, orjsonCompact)
		b.WriteByte('\n')
	}
	jsonl = slices.Clone(b.Bytes())

	ms := aiperfMetrics(r, run)
	byTag := map[string]*aiperfMetric{}
	for i := range ms {
		byTag[ms[i].Tag] = &ms[i]
	}
	doc := newObj().
		set("schema_version", "1.4").
		set("aiperf_version", run.version()).
		set("benchmark_id", run.benchmarkID(r))
	for _, tag := range aiperfJSONOrder {
		if m := byTag[tag]; m != nil {
			doc.set(tag, m.jsonObj())
		}
	}
	streaming := true
	loadgen := newObj()
	if r.MaxConcurrency > 0 {
		loadgen.set("concurrency", r.MaxConcurrency)
	}
	if !math.IsInf(r.RequestRate, 1) && r.RequestRate > 0 {
		loadgen.set("request_rate", r.RequestRate)
	}
	loadgen.set("request_count", r.Completed+r.Failed)
	doc.set("input_config", newObj().
		set("endpoint", newObj().set("model_names", []any{run.model(r)}).set("type", "completions").set("streaming", streaming)).
		set("input", newObj().set("prompt", newObj().
			set("input_tokens", newObj().set("mean", run.ISL)).
			set("output_tokens", newObj().set("mean", run.OSL)))).
		set("loadgen", loadgen))
	doc.set("run_info", newObj().
		set("benchmark_id", run.benchmarkID(r)).
		set("random_seed", run.Seed).
		set("trial", 0).
		set("run_label", "run_0001").
		set("variation_label", "base").
		set("variation_index", 0).
		set("variation_values", newObj()))
	doc.set("was_cancelled", false)
	summary := []any{}
	for _, msg := range errOrder {
		summary = append(summary, newObj().
			set("error_details", newObj().set("code", 400).set("type", "BadRequestError").set("message", msg)).
			set("count", errCount[msg]))
	}
	doc.set("error_summary", summary)
	if s, e, ok := requestSpan(r, run); ok {
		doc.set("start_time", pytext.ISOFormat(s)).set("end_time", pytext.ISOFormat(e))
	}
	for i := range ms {
		if !slices.Contains(aiperfJSONOrder, ms[i].Tag) {
			doc.set(ms[i].Tag, ms[i].jsonObj())
		}
	}
	var jb bytes.Buffer
	encodeJSON(&jb, doc, orjsonIndent2)
	agg = jb.Bytes()
	return jsonl, agg, encodeAIPerfCSV(ms), nil
}

// requestSpan is the first send and the last end over all requests, in
// Unix nanoseconds.
func requestSpan(r *Result, run *RunInfo) (int64, int64, bool) {
	if len(r.Requests) == 0 {
		return 0, 0, false
	}
	s, e := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range r.Requests {
		s = min(s, run.unixNano(r.Requests[i].Start))
		e = max(e, run.unixNano(r.Requests[i].End))
	}
	return s, e, true
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

// encodeAIPerfCSV is MetricsCsvExporter's two sections (Python csv module:
// "\r\n" line ends, minimal quoting).
func encodeAIPerfCSV(ms []aiperfMetric) []byte {
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

// --- reading ---

// ReadAIPerf reads an aiperf artifact directory: the per-request records
// of profile_export.jsonl (required) and the aggregates of
// profile_export_aiperf.json and profile_export_aiperf.csv (each when
// present; CSV metrics are named "csv:<row>.<column>" and keep two
// decimals). Records of a phase other than "profiling" (warm-up) are
// skipped, as InferenceX's loader does.
func ReadAIPerf(dir string) (*MeasuredRun, error) {
	p := filepath.Join(dir, AIPerfRecordsFile)
	data, err := readFileBounded(p)
	if err != nil {
		return nil, err
	}
	run, err := parseAIPerfRecords(p, data)
	if err != nil {
		return nil, err
	}
	run.Path = dir
	for _, name := range []string{AIPerfJSONFile, AIPerfCSVFile} {
		p := filepath.Join(dir, name)
		data, err := readFileBounded(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var ms []MeasuredMetric
		if name == AIPerfJSONFile {
			ms, err = parseAIPerfJSON(p, data)
		} else {
			ms, err = parseAIPerfCSV(p, data)
		}
		if err != nil {
			return nil, err
		}
		run.Metrics = append(run.Metrics, ms...)
	}
	return run, nil
}

// aiperfUnitNS is the nanoseconds in one unit of an aiperf time unit.
func aiperfUnitNS(unit string) (float64, bool) {
	switch unit {
	case "ns":
		return 1, true
	case "us":
		return 1e3, true
	case "ms":
		return 1e6, true
	case "sec":
		return 1e9, true
	}
	return 0, false
}

func parseAIPerfRecords(file string, data []byte) (*MeasuredRun, error) {
	run := &MeasuredRun{Format: FormatAIPerf, Path: file}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		q, keep, err := parseAIPerfRecord(file, lineNo, line, false)
		if err != nil {
			return nil, err
		}
		if keep {
			run.Requests = append(run.Requests, q)
		}
	}
	return run, nil
}

// parseAIPerfRecord reads one MetricRecordInfo line; keep reports whether
// it is of the phase asked for (profiling, or with warmup any other).
func parseAIPerfRecord(file string, lineNo int, line []byte, warmup bool) (MeasuredRequest, bool, error) {
	r := &jReader{file: file, data: line, line: lineNo}
	var q MeasuredRequest
	root, err := parseJSONTree(line)
	if err != nil {
		return q, false, r.syntax(err)
	}
	r.obj(root, "$")
	md := r.obj(r.req(root, "$", "metadata"), "$.metadata")
	mt := r.obj(r.req(root, "$", "metrics"), "$.metrics")
	errN := r.req(root, "$", "error")
	if r.err != nil {
		return q, false, r.err
	}
	profiling := true
	if ph := r.opt(md, "benchmark_phase"); ph != nil {
		profiling = r.str(ph, "$.metadata.benchmark_phase") == "profiling"
	}
	if profiling == warmup {
		return q, false, r.err
	}
	q.ID = r.optStr(md.field("x_request_id"), "$.metadata.x_request_id")
	q.Conversation = r.optStr(md.field("conversation_id"), "$.metadata.conversation_id")
	if t := r.opt(md, "turn_index"); t != nil {
		q.Turn = r.count(t, "$.metadata.turn_index")
	}
	q.Start = r.integer(r.req(md, "$.metadata", "request_start_ns"), "$.metadata.request_start_ns")
	q.End = r.integer(r.req(md, "$.metadata", "request_end_ns"), "$.metadata.request_end_ns")
	if r.err == nil && q.End < q.Start {
		r.fail(md.field("request_end_ns"), "$.metadata.request_end_ns", "end %d before start %d", q.End, q.Start)
	}
	value := func(tag string) (*jNode, string, bool) {
		m := r.opt(mt, tag)
		if m == nil {
			return nil, "", false
		}
		p := pathKey("$.metrics", tag)
		r.obj(m, p)
		unit := r.str(r.req(m, p, "unit"), pathKey(p, "unit"))
		v := r.req(m, p, "value")
		return v, unit, r.err == nil
	}
	tokens := func(tag string) int {
		v, unit, ok := value(tag)
		if !ok {
			return 0
		}
		if unit != "tokens" {
			r.fail(v, pathKey(pathKey("$.metrics", tag), "unit"), `want "tokens", got %q`, unit)
		}
		return r.count(v, pathKey(pathKey("$.metrics", tag), "value"))
	}
	dur := func(tag string, v *jNode, unit string, path string) time.Duration {
		f, ok := aiperfUnitNS(unit)
		if !ok {
			r.fail(v, pathKey(pathKey("$.metrics", tag), "unit"), `want a time unit ("ns", "us", "ms", "sec"), got %q`, unit)
			return 0
		}
		x := r.num(v, path)
		if r.err == nil && x < 0 {
			r.fail(v, path, "negative time %v", x)
		}
		if f == 1e6 {
			return msToDuration(x)
		}
		return time.Duration(math.Round(x * f))
	}
	if errN.kind == 'z' {
		q.Success = true
		q.InputTokens = tokens("input_sequence_length")
		q.OutputTokens = tokens("output_sequence_length")
		if _, _, ok := value("output_sequence_length"); !ok && r.err == nil {
			q.OutputTokens = tokens("output_token_count")
		}
		if v, unit, ok := value("time_to_first_token"); ok {
			q.TTFT = dur("time_to_first_token", v, unit, "$.metrics.time_to_first_token.value")
		}
		if v, unit, ok := value("inter_chunk_latency"); ok {
			p := "$.metrics.inter_chunk_latency.value"
			for j, g := range r.arr(v, p) {
				q.ITLs = append(q.ITLs, dur("inter_chunk_latency", g, unit, pathIdx(p, j)))
			}
		}
		if v, unit, ok := value("inter_token_latency"); ok {
			p := "$.metrics.inter_token_latency.value"
			if f, ok := aiperfUnitNS(unit); !ok {
				r.fail(v, "$.metrics.inter_token_latency.unit", `want a time unit ("ns", "us", "ms", "sec"), got %q`, unit)
			} else {
				if q.TPOTms = r.num(v, p); f != 1e6 {
					q.TPOTms = q.TPOTms * f / 1e6
				}
			}
		}
	} else {
		e := r.obj(errN, "$.error")
		q.Error = r.optStr(r.opt(e, "message"), "$.error.message")
		if q.Error == "" {
			q.Error = r.optStr(r.opt(e, "type"), "$.error.type")
		}
		if q.Error == "" {
			q.Error = "error"
		}
		q.InputTokens = tokens("error_isl")
	}
	return q, true, r.err
}

// parseAIPerfJSON reads profile_export_aiperf.json: every top-level object
// with a "unit" is a metric block (JsonMetricResult.project_summary_dict);
// its statistics become "<tag>.<stat>".
func parseAIPerfJSON(file string, data []byte) ([]MeasuredMetric, error) {
	r := &jReader{file: file, data: data}
	root, err := parseJSONTree(data)
	if err != nil {
		return nil, r.syntax(err)
	}
	r.obj(root, "$")
	var out []MeasuredMetric
	for i, tag := range root.keys {
		v := root.vals[i]
		if r.err != nil {
			break
		}
		if v.kind != 'o' || v.field("unit") == nil {
			continue
		}
		p := pathKey("$", tag)
		unit := r.str(v.field("unit"), pathKey(p, "unit"))
		for j, k := range v.keys {
			if k == "unit" {
				continue
			}
			sv := v.vals[j]
			if sv.kind == 'z' {
				continue
			}
			switch k {
			case "count":
				out = append(out, MeasuredMetric{Name: tag + ".count", Unit: "count", Value: float64(r.count(sv, pathKey(p, k)))})
			case "avg", "min", "max", "std", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
				"adj_p50", "adj_p90", "adj_p95", "adj_p99":
				out = append(out, MeasuredMetric{Name: tag + "." + k, Unit: unit, Value: r.num(sv, pathKey(p, k))})
			}
		}
	}
	return out, r.err
}

// parseAIPerfCSV reads profile_export_aiperf.csv's metric sections; a GPU
// telemetry section (header starting "Endpoint") ends the metrics.
func parseAIPerfCSV(file string, data []byte) ([]MeasuredMetric, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	var header []string
	var out []MeasuredMetric
	for {
		row, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		line, _ := cr.FieldPos(0)
		switch {
		case row[0] == "Metric":
			if len(row) < 2 {
				return nil, fmt.Errorf("%s:%d: header %q: want \"Metric\" and at least one statistic", file, line, strings.Join(row, ","))
			}
			header = slices.Clone(row)
			continue
		case row[0] == "Endpoint":
			return out, nil
		case header == nil:
			return nil, fmt.Errorf("%s:%d: row %q before a \"Metric,...\" header", file, line, row[0])
		}
		if len(row) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields: want %d (as the header has)", file, line, len(row), len(header))
		}
		name, unit := row[0], ""
		if i := strings.LastIndex(name, " ("); i >= 0 && strings.HasSuffix(name, ")") {
			unit = name[i+2 : len(name)-1]
		}
		for j := 1; j < len(row); j++ {
			if row[j] == "" {
				continue
			}
			v, err := strconv.ParseFloat(row[j], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s:%d: %s, column %s: want a number, got %q", file, line, name, header[j], row[j])
			}
			col := header[j]
			if col == "Value" {
				col = "avg"
			}
			out = append(out, MeasuredMetric{Name: "csv:" + name + "." + col, Unit: unit, Value: v})
		}
	}
}
