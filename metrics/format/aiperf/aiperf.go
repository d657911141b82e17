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
package aiperf

import (
	"bytes"
	"encoding/csv"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/numpy"
	"blis/metrics/internal/pytext"
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

func aiperfTimes(q *metrics.RequestResult) aiperfRecordTimes {
	t := aiperfRecordTimes{ttft: float64(q.TTFT), latency: float64(q.Latency)}
	if q.OutputTokens >= 2 {
		t.itl = float64(int64(q.Latency)-int64(q.TTFT)) / float64(q.OutputTokens-1)
		t.hasITL = true
	}
	return t
}

// aiperfMetrics computes profile_export_aiperf.json's metrics from the
// per-request records, in aiperfJSONOrder (then the injected ones).
func aiperfMetrics(r *metrics.Result, run *metrics.RunInfo) []aiperfMetric {
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
		minStart = min(minStart, run.UnixNano(q.Start))
		maxEnd = max(maxEnd, run.UnixNano(q.End))
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
				tag := "e2e_normalized_interactivity_p" + metrics.PercentileWord(p)
				add(aiperfScalar(tag, "E2E Normalized Interactivity p"+metrics.PercentileWord(p), "tokens/sec/user", 1/rp))
			}
		}
	}
	return out
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

// aiperfConversationID is the conversation id written for a request.
func aiperfConversationID(run *metrics.RunInfo, index int64) (string, int64, int) {
	conv, turn := run.ConversationOf(index)
	return strconv.FormatInt(conv, 10), conv, turn
}

// Encode renders the three aiperf files: the per-request records
// (RecordsFile), the aggregates (JSONFile) and their CSV (CSVFile). r must
// come from a Detailed recorder (the records carry every chunk gap).
func Encode(r *metrics.Result, run *metrics.RunInfo) (jsonl, agg, csvOut []byte, err error) {
	const msF = 1000.0 / 1e9
	var b bytes.Buffer
	var errOrder []string
	errCount := map[string]int{}
	for i := range r.Requests {
		q := &r.Requests[i]
		convID, conv, turn := aiperfConversationID(run, q.Index)
		md := jsonx.NewObj().
			Set("session_num", conv).
			Set("x_request_id", strconv.FormatInt(q.Index, 10)).
			Set("x_correlation_id", convID).
			Set("conversation_id", convID).
			Set("turn_index", turn).
			Set("request_start_ns", run.UnixNano(q.Start)).
			Set("request_ack_ns", nil).
			Set("request_end_ns", run.UnixNano(q.End)).
			Set("worker_id", "worker_blis").
			Set("record_processor_id", "record_processor_blis").
			Set("benchmark_phase", "profiling").
			Set("was_cancelled", false).
			Set("cancellation_time_ns", nil)
		mv := func(v any, unit string) *jsonx.Obj { return jsonx.NewObj().Set("value", v).Set("unit", unit) }
		recMetrics := jsonx.NewObj()
		var errObj any
		if q.Success {
			t := aiperfTimes(q)
			recMetrics.Set("input_sequence_length", mv(int64(q.InputTokens), "tokens"))
			recMetrics.Set("time_to_first_token", mv(t.ttft*msF, "ms"))
			recMetrics.Set("request_latency", mv(t.latency*msF, "ms"))
			recMetrics.Set("output_token_count", mv(int64(q.OutputTokens), "tokens"))
			if len(q.ITLs) > 0 {
				recMetrics.Set("time_to_second_token", mv(float64(q.ITLs[0])*msF, "ms"))
				gaps := make([]float64, len(q.ITLs))
				for j, g := range q.ITLs {
					gaps[j] = float64(g) * msF
				}
				recMetrics.Set("inter_chunk_latency", mv(gaps, "ms"))
			}
			recMetrics.Set("output_sequence_length", mv(int64(q.OutputTokens), "tokens"))
			if t.hasITL {
				recMetrics.Set("inter_token_latency", mv(t.itl*msF, "ms"))
				if conv := t.itl * aiperfNsToS; conv != 0 {
					recMetrics.Set("output_token_throughput_per_user", mv(1/conv, "tokens/sec/user"))
				}
			}
		} else {
			recMetrics.Set("error_isl", mv(int64(q.InputTokens), "tokens"))
			errObj = jsonx.NewObj().Set("code", 400).Set("type", "BadRequestError").Set("message", q.Error)
			if errCount[q.Error] == 0 {
				errOrder = append(errOrder, q.Error)
			}
			errCount[q.Error]++
		}
		rec := jsonx.NewObj().Set("metadata", md).Set("metrics", recMetrics).Set("error", errObj)
		jsonx.Encode(&b, rec, jsonx.OrjsonCompact)
		b.WriteByte('\n')
	}
	jsonl = slices.Clone(b.Bytes())

	ms := aiperfMetrics(r, run)
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
	for _, msg := range errOrder {
		summary = append(summary, jsonx.NewObj().
			Set("error_details", jsonx.NewObj().Set("code", 400).Set("type", "BadRequestError").Set("message", msg)).
			Set("count", errCount[msg]))
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
	agg = jb.Bytes()
	return jsonl, agg, encodeCSV(ms), nil
}

// requestSpan is the first send and the last end over all requests, in
// Unix nanoseconds.
func requestSpan(r *metrics.Result, run *metrics.RunInfo) (int64, int64, bool) {
	if len(r.Requests) == 0 {
		return 0, 0, false
	}
	s, e := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range r.Requests {
		s = min(s, run.UnixNano(r.Requests[i].Start))
		e = max(e, run.UnixNano(r.Requests[i].End))
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
