package aiperf

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"blis/metrics"
	"blis/metrics/format/internal/formattest"
	"blis/metrics/format/internal/jsonx"
	"blis/metrics/internal/pytext"
)

// exportTo writes the aiperf files of formattest.Result into a fresh
// directory.
func exportTo(t *testing.T) (string, *metrics.Result, metrics.RunInfo) {
	t.Helper()
	res, run := formattest.Result(t)
	records, agg, csv, err := Encode(res, &run)
	if err != nil {
		t.Fatal(err)
	}
	return formattest.Dir(t, map[string][]byte{RecordsFile: records, JSONFile: agg, CSVFile: csv}), res, run
}

// aiperfWant flattens aiperfMetrics as the JSON reader names them.
func aiperfWant(res *metrics.Result, run *metrics.RunInfo) []metrics.MeasuredMetric {
	var out []metrics.MeasuredMetric
	ms := aiperfMetrics(res, run)
	order := append(slices.Clone(aiperfJSONOrder), "")
	for _, tag := range order {
		for i := range ms {
			m := &ms[i]
			if tag == "" && slices.Contains(aiperfJSONOrder, m.Tag) || tag != "" && m.Tag != tag {
				continue
			}
			if !m.Record {
				out = append(out, metrics.MeasuredMetric{Name: m.Tag + ".avg", Unit: m.Unit, Value: m.Avg})
				continue
			}
			out = append(out, metrics.MeasuredMetric{Name: m.Tag + ".avg", Unit: m.Unit, Value: m.Avg})
			for j, n := range aiperfPctNames {
				out = append(out, metrics.MeasuredMetric{Name: m.Tag + "." + n, Unit: m.Unit, Value: m.P[j]})
			}
			out = append(out, metrics.MeasuredMetric{Name: m.Tag + ".min", Unit: m.Unit, Value: m.Min}, metrics.MeasuredMetric{Name: m.Tag + ".max", Unit: m.Unit, Value: m.Max},
				metrics.MeasuredMetric{Name: m.Tag + ".std", Unit: m.Unit, Value: m.Std}, metrics.MeasuredMetric{Name: m.Tag + ".count", Unit: "count", Value: float64(m.Count)},
				metrics.MeasuredMetric{Name: m.Tag + ".sum", Unit: m.Unit, Value: m.Sum})
		}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	dir, res, run := exportTo(t)
	m, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	epoch := run.Epoch()
	inSeq := formattest.InSeq(res) // aiperf writes records in completion order
	formattest.CheckRequests(t, m.Requests, inSeq, run, epoch, 0, true)
	for i, q := range m.Requests {
		w := inSeq.Requests[i]
		if w.Success && w.OutputTokens > 1 {
			tpot := float64(int64(w.Latency)-int64(w.TTFT)) / float64(w.OutputTokens-1) * (1000.0 / 1e9)
			if q.TPOTms != tpot {
				t.Errorf("request %d: inter_token_latency %v ms, want %v", i, q.TPOTms, tpot)
			}
		}
	}
	formattest.SameSummary(t, formattest.Resummarize(t, m, epoch, res.Percentiles), res)

	var jsonMs, csvMs []metrics.MeasuredMetric
	for _, x := range m.Metrics {
		if strings.HasPrefix(x.Name, "csv:") {
			csvMs = append(csvMs, x)
		} else {
			jsonMs = append(jsonMs, x)
		}
	}
	want := aiperfWant(res, &run)
	if !slices.Equal(jsonMs, want) {
		t.Errorf("JSON metrics read back differ:\ngot  %v\nwant %v", jsonMs, want)
	}
	// The CSV keeps two decimals: compare at that precision.
	byName := map[string]metrics.MeasuredMetric{}
	for _, x := range csvMs {
		byName[x.Name] = x
	}
	ms := aiperfMetrics(res, &run)
	n := 0
	for i := range ms {
		am := &ms[i]
		for _, s := range aiperfCSVStats {
			v, ok := am.stat(s)
			if !ok || !am.Record && s != "avg" {
				continue
			}
			got, found := byName["csv:"+aiperfCSVName(am)+"."+s]
			if !found || pytext.Fixed2(got.Value) != pytext.Fixed2(v) {
				t.Errorf("csv %s %s = %v (%v), want %s", am.Tag, s, got.Value, found, pytext.Fixed2(v))
			}
			n++
		}
	}
	if n != len(csvMs) {
		t.Errorf("csv has %d values, want %d", len(csvMs), n)
	}
}

func TestRecordShape(t *testing.T) {
	dir, _, _ := exportTo(t)
	data, err := os.ReadFile(filepath.Join(dir, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	// The first successful record with a second token, and the first error.
	okLine, errLine := "", ""
	for _, l := range lines {
		switch {
		case okLine == "" && strings.Contains(l, "time_to_second_token"):
			okLine = l
		case errLine == "" && strings.Contains(l, `"error":{`):
			errLine = l
		}
	}
	keys := func(s string, path ...string) []string {
		n, err := jsonx.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range path {
			n = n.Field(p)
		}
		return n.Keys
	}
	ex, err := os.ReadFile(filepath.Join("testdata", "aiperf_profile_export_record_success.json"))
	if err != nil {
		t.Fatal(err)
	}
	exErr, err := os.ReadFile(filepath.Join("testdata", "aiperf_profile_export_record_error.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Same metadata keys in the same order as aiperf's own examples.
	if got, want := keys(okLine, "metadata"), keys(string(ex), "metadata"); !slices.Equal(got, want) {
		t.Errorf("metadata keys %v, want %v", got, want)
	}
	if got, want := keys(okLine), keys(string(ex)); !slices.Equal(got, want) {
		t.Errorf("record keys %v, want %v", got, want)
	}
	if got, want := keys(errLine, "metrics"), keys(string(exErr), "metrics"); !slices.Equal(got, want) {
		t.Errorf("error record metrics %v, want %v", got, want)
	}
	if got, want := keys(errLine, "error"), keys(string(exErr), "error"); !slices.Equal(got, want) {
		t.Errorf("error keys %v, want %v", got, want)
	}
	// Every metric tag of a BLIS record is one aiperf's example uses.
	exTags := keys(string(ex), "metrics")
	for _, tag := range keys(okLine, "metrics") {
		if !slices.Contains(exTags, tag) && tag != "time_to_second_token" {
			t.Errorf("metric %q is not in aiperf's example record %v", tag, exTags)
		}
	}
	if strings.Contains(lines[0], " ") {
		t.Errorf("records are not compact orjson: %s", lines[0])
	}
}

func TestReadExamples(t *testing.T) {
	var jsonl bytes.Buffer
	for _, f := range []string{"aiperf_profile_export_record_success.json", "aiperf_profile_export_record_error.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&jsonl, data); err != nil {
			t.Fatal(err)
		}
		jsonl.WriteByte('\n')
	}
	m, err := parseRecords("profile_export.jsonl", jsonl.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Requests) != 2 {
		t.Fatalf("%d requests", len(m.Requests))
	}
	ok, bad := m.Requests[0], m.Requests[1]
	if !ok.Success || ok.ID != "7609a2e7-aa53-4ab1-98f4-f35ecafefd25" || ok.Conversation != "77aa5b0e-b305-423f-88d5-c00da1892599" ||
		ok.Start != 1759813207532900363 || ok.End != 1759813207838764604 || ok.InputTokens != 550 || ok.OutputTokens != 9 ||
		len(ok.ITLs) != 8 || ok.ITLs[0] != 4898437 || ok.TPOTms != 5.2048325 {
		t.Errorf("success record %+v", ok)
	}
	// The example repeats time_to_first_token; the last value wins, as in Python.
	if ok.TTFT != 4898437 {
		t.Errorf("TTFT %v, want the last of the repeated key (4.898437 ms)", ok.TTFT)
	}
	if bad.Success || bad.Error != "Request was cancelled after 0.000 seconds" || bad.InputTokens != 550 {
		t.Errorf("error record %+v", bad)
	}
}

func TestReadWarmups(t *testing.T) {
	dir, _, _ := exportTo(t)
	p := filepath.Join(dir, RecordsFile)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	first := data[:bytes.IndexByte(data, '\n')+1]
	warm := bytes.Replace(first, []byte(`"benchmark_phase":"profiling"`), []byte(`"benchmark_phase":"warmup"`), 1)
	if bytes.Equal(warm, first) {
		t.Fatal("no benchmark_phase in the record")
	}
	before, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(warm, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ReadWarmups(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Requests) != len(before.Requests) || len(w) != 1 || w[0].ID != before.Requests[0].ID {
		t.Errorf("%d profiling records (was %d), warm-ups %+v", len(after.Requests), len(before.Requests), w)
	}
	if _, err := ReadWarmups(filepath.Join(dir, "missing")); err == nil {
		t.Error("no error for a missing directory")
	}
}

// The readers name the file, line, JSON path, what they found and what
// they want.
func TestReadErrorsNameFileLineAndPath(t *testing.T) {
	dir, _, _ := exportTo(t)
	formattest.ReadErrors(t, readWith(parseRecords),
		formattest.BadFile{What: "start not an integer", Path: formattest.Mutate(t, dir, RecordsFile, `"request_start_ns":`, `"request_start_ns":"x","y":`, 2),
			Want: []string{RecordsFile + ":1:", "$.metadata.request_start_ns", "want an integer, got a string"}},
		formattest.BadFile{What: "bad unit", Path: formattest.Mutate(t, dir, RecordsFile, `"unit":"ms"`, `"unit":"fortnights"`, 1),
			Want: []string{RecordsFile + ":1:", "$.metrics.time_to_first_token.unit", "fortnights"}},
		formattest.BadFile{What: "syntax", Path: formattest.Mutate(t, dir, RecordsFile, "}\n{", "}\n{{", 1),
			Want: []string{RecordsFile + ":2:", "invalid JSON"}})
	formattest.ReadErrors(t, readWith(parseJSON),
		formattest.BadFile{What: "json stat", Path: formattest.Mutate(t, dir, JSONFile, `"p50": `, `"p50": "median", "x": `, 1),
			Want: []string{JSONFile + ":", ".p50", "want a number, got a string"}})
	formattest.ReadErrors(t, readWith(parseCSV),
		formattest.BadFile{What: "csv number", Path: formattest.Mutate(t, dir, CSVFile, ",", ",abc,", 3),
			Want: []string{CSVFile + ":2:", "want"}})
}

// readWith is a reader of one file that parses with parse.
func readWith[T any](parse func(file string, data []byte) (T, error)) func(path string) error {
	return func(path string) error {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = parse(path, data)
		return err
	}
}

// refRecord is a record built as a document, the reference appendRecord's
// token-by-token writing must match.
func refRecord(run *metrics.RunInfo, q *metrics.RequestResult) []byte {
	const msF = 1000.0 / 1e9
	conv, turn := run.ConversationOf(q)
	convID := strconv.FormatInt(conv, 10)
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
		t := aiperfTimes(int64(q.TTFT), int64(q.Latency), q.OutputTokens)
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
	}
	var b bytes.Buffer
	jsonx.Encode(&b, jsonx.NewObj().Set("metadata", md).Set("metrics", recMetrics).Set("error", errObj), jsonx.OrjsonCompact)
	b.WriteByte('\n')
	return b.Bytes()
}

// The streamed records are the documents the tool's fields describe, byte
// for byte, and the Writer writes what Encode renders.
func TestRecordEncoderMatchesDocument(t *testing.T) {
	res, run := formattest.Result(t)
	e := jsonx.NewEnc(jsonx.OrjsonCompact, 0)
	for _, multi := range []bool{false, true} {
		run.MultiTurn = multi
		for i := range res.Requests {
			q := res.Requests[i]
			for _, session := range []uint64{0, q.Session} {
				q.Session = session
				e.Reset()
				appendRecord(e, &run, &q)
				if want := refRecord(&run, &q); !bytes.Equal(e.B, want) {
					t.Fatalf("request %d:\ngot  %s\nwant %s", q.Index, e.B, want)
				}
			}
		}
	}
	run.MultiTurn = true
	jsonl, agg, csv, err := Encode(res, &run)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w, err := NewWriter(dir, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range formattest.InSeq(res).Requests {
		if err := w.Request(&q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(res); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{RecordsFile: jsonl, JSONFile: agg, CSVFile: csv} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the Writer's file differs from Encode's (%v)", name, err)
		}
	}
}

func TestRecordEncoderAllocationFree(t *testing.T) {
	res, run := formattest.Result(t)
	e := jsonx.NewEnc(jsonx.OrjsonCompact, 0)
	q := &res.Requests[0]
	appendRecord(e, &run, q)
	if n := testing.AllocsPerRun(100, func() {
		e.Reset()
		appendRecord(e, &run, q)
	}); n != 0 {
		t.Errorf("appendRecord allocates %v times per record, want 0", n)
	}
}
