package aiperf

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

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
)

// Read reads an aiperf artifact directory: the per-request records
// of profile_export.jsonl (required) and the aggregates of
// profile_export_aiperf.json and profile_export_aiperf.csv (each when
// present; CSV metrics are named "csv:<row>.<column>" and keep two
// decimals). Records of a phase other than "profiling" (warm-up) are
// skipped, as InferenceX's loader does.
func Read(dir string) (*metrics.MeasuredRun, error) {
	p := filepath.Join(dir, RecordsFile)
	data, err := metrics.ReadResultFile(p)
	if err != nil {
		return nil, err
	}
	run, err := parseRecords(p, data)
	if err != nil {
		return nil, err
	}
	run.Path = dir
	for _, name := range []string{JSONFile, CSVFile} {
		p := filepath.Join(dir, name)
		data, err := metrics.ReadResultFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var ms []metrics.MeasuredMetric
		if name == JSONFile {
			ms, err = parseJSON(p, data)
		} else {
			ms, err = parseCSV(p, data)
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

func parseRecords(file string, data []byte) (*metrics.MeasuredRun, error) {
	reqs, err := parseRecordLines(file, data, false)
	if err != nil {
		return nil, err
	}
	return &metrics.MeasuredRun{Format: Name, Path: file, Requests: reqs}, nil
}

// parseRecordLines reads the records of profile_export.jsonl of the phase
// asked for (profiling, or with warmup any other), in file order; blank
// lines are skipped.
func parseRecordLines(file string, data []byte, warmup bool) ([]metrics.MeasuredRequest, error) {
	var out []metrics.MeasuredRequest
	for lineNo := 1; len(data) > 0; lineNo++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		q, keep, err := parseRecord(file, lineNo, line, warmup)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, q)
		}
	}
	return out, nil
}

// parseRecord reads one MetricRecordInfo line; keep reports whether
// it is of the phase asked for (profiling, or with warmup any other).
func parseRecord(file string, lineNo int, line []byte, warmup bool) (metrics.MeasuredRequest, bool, error) {
	r := &jsonx.Reader{File: file, Data: line, Line: lineNo}
	var q metrics.MeasuredRequest
	root, err := jsonx.Parse(line)
	if err != nil {
		return q, false, r.Syntax(err)
	}
	r.Obj(root, "$")
	md := r.Obj(r.Req(root, "$", "metadata"), "$.metadata")
	mt := r.Obj(r.Req(root, "$", "metrics"), "$.metrics")
	errN := r.Req(root, "$", "error")
	if r.Err != nil {
		return q, false, r.Err
	}
	profiling := true
	if ph := r.Opt(md, "benchmark_phase"); ph != nil {
		profiling = r.Str(ph, "$.metadata.benchmark_phase") == "profiling"
	}
	if profiling == warmup {
		return q, false, r.Err
	}
	q.ID = r.OptStr(md.Field("x_request_id"), "$.metadata.x_request_id")
	q.Conversation = r.OptStr(md.Field("conversation_id"), "$.metadata.conversation_id")
	if t := r.Opt(md, "turn_index"); t != nil {
		q.Turn = r.Count(t, "$.metadata.turn_index")
	}
	q.Start = r.Integer(r.Req(md, "$.metadata", "request_start_ns"), "$.metadata.request_start_ns")
	q.End = r.Integer(r.Req(md, "$.metadata", "request_end_ns"), "$.metadata.request_end_ns")
	if r.Err == nil && q.End < q.Start {
		r.Fail(md.Field("request_end_ns"), "$.metadata.request_end_ns", "end %d before start %d", q.End, q.Start)
	}
	value := func(tag string) (*jsonx.Node, string, bool) {
		m := r.Opt(mt, tag)
		if m == nil {
			return nil, "", false
		}
		p := jsonx.PathKey("$.metrics", tag)
		r.Obj(m, p)
		unit := r.Str(r.Req(m, p, "unit"), jsonx.PathKey(p, "unit"))
		v := r.Req(m, p, "value")
		return v, unit, r.Err == nil
	}
	tokens := func(tag string) int {
		v, unit, ok := value(tag)
		if !ok {
			return 0
		}
		if unit != "tokens" {
			r.Fail(v, jsonx.PathKey(jsonx.PathKey("$.metrics", tag), "unit"), `want "tokens", got %q`, unit)
		}
		return r.Count(v, jsonx.PathKey(jsonx.PathKey("$.metrics", tag), "value"))
	}
	dur := func(tag string, v *jsonx.Node, unit string, path string) time.Duration {
		f, ok := aiperfUnitNS(unit)
		if !ok {
			r.Fail(v, jsonx.PathKey(jsonx.PathKey("$.metrics", tag), "unit"), `want a time unit ("ns", "us", "ms", "sec"), got %q`, unit)
			return 0
		}
		x := r.Num(v, path)
		if r.Err == nil && x < 0 {
			r.Fail(v, path, "negative time %v", x)
		}
		if f == 1e6 {
			return msToDuration(x)
		}
		return time.Duration(math.Round(x * f))
	}
	if errN.Kind == jsonx.Null {
		q.Success = true
		q.InputTokens = tokens("input_sequence_length")
		q.OutputTokens = tokens("output_sequence_length")
		if _, _, ok := value("output_sequence_length"); !ok && r.Err == nil {
			q.OutputTokens = tokens("output_token_count")
		}
		if v, unit, ok := value("time_to_first_token"); ok {
			q.TTFT = dur("time_to_first_token", v, unit, "$.metrics.time_to_first_token.value")
		}
		if v, unit, ok := value("inter_chunk_latency"); ok {
			p := "$.metrics.inter_chunk_latency.value"
			for j, g := range r.Arr(v, p) {
				q.ITLs = append(q.ITLs, dur("inter_chunk_latency", g, unit, jsonx.PathIdx(p, j)))
			}
		}
		if v, unit, ok := value("inter_token_latency"); ok {
			p := "$.metrics.inter_token_latency.value"
			if f, ok := aiperfUnitNS(unit); !ok {
				r.Fail(v, "$.metrics.inter_token_latency.unit", `want a time unit ("ns", "us", "ms", "sec"), got %q`, unit)
			} else {
				if q.TPOTms = r.Num(v, p); f != 1e6 {
					q.TPOTms = q.TPOTms * f / 1e6
				}
			}
		}
	} else {
		e := r.Obj(errN, "$.error")
		q.Error = r.OptStr(r.Opt(e, "message"), "$.error.message")
		if q.Error == "" {
			q.Error = r.OptStr(r.Opt(e, "type"), "$.error.type")
		}
		if q.Error == "" {
			q.Error = "error"
		}
		q.InputTokens = tokens("error_isl")
	}
	return q, true, r.Err
}

// parseJSON reads profile_export_aiperf.json: every top-level object
// with a "unit" is a metric block (JsonMetricResult.project_summary_dict);
// its statistics become "<tag>.<stat>".
func parseJSON(file string, data []byte) ([]metrics.MeasuredMetric, error) {
	r := &jsonx.Reader{File: file, Data: data}
	root, err := jsonx.Parse(data)
	if err != nil {
		return nil, r.Syntax(err)
	}
	r.Obj(root, "$")
	var out []metrics.MeasuredMetric
	for i, tag := range root.Keys {
		v := root.Vals[i]
		if r.Err != nil {
			break
		}
		if v.Kind != jsonx.Object || v.Field("unit") == nil {
			continue
		}
		p := jsonx.PathKey("$", tag)
		unit := r.Str(v.Field("unit"), jsonx.PathKey(p, "unit"))
		for j, k := range v.Keys {
			if k == "unit" {
				continue
			}
			sv := v.Vals[j]
			if sv.Kind == jsonx.Null {
				continue
			}
			switch k {
			case "count":
				out = append(out, metrics.MeasuredMetric{Name: tag + ".count", Unit: "count", Value: float64(r.Count(sv, jsonx.PathKey(p, k)))})
			case "avg", "min", "max", "std", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99",
				"adj_p50", "adj_p90", "adj_p95", "adj_p99":
				out = append(out, metrics.MeasuredMetric{Name: tag + "." + k, Unit: unit, Value: r.Num(sv, jsonx.PathKey(p, k))})
			}
		}
	}
	return out, r.Err
}

// parseCSV reads profile_export_aiperf.csv's metric sections; a GPU
// telemetry section (header starting "Endpoint") ends the metrics.
func parseCSV(file string, data []byte) ([]metrics.MeasuredMetric, error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	var header []string
	var out []metrics.MeasuredMetric
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
			out = append(out, metrics.MeasuredMetric{Name: "csv:" + name + "." + col, Unit: unit, Value: v})
		}
	}
}

// ReadWarmups reads the warm-up records of an aiperf export
// directory: the profile_export.jsonl lines whose benchmark_phase is not
// "profiling", in file order. Read leaves them out, as InferenceX's
// loader does; a validation needs them for the run's first request, the
// cold full prefill (often a warm-up primer).
func ReadWarmups(dir string) ([]metrics.MeasuredRequest, error) {
	p := filepath.Join(dir, RecordsFile)
	data, err := metrics.ReadResultFile(p)
	if err != nil {
		return nil, err
	}
	return parseRecordLines(p, data, true)
}

// msToDuration recovers nanoseconds from a millisecond value written by
// nsToMS (or by vLLM's seconds·1000): exact for integral nanosecond
// values below about 18 days.
func msToDuration(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }
