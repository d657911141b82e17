package inferencex

import (
	"regexp"
	"strings"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
)

// vllmSecondsKey matches vLLM bench's statistics keys without the _ms
// suffix, which InferenceX writes in seconds.
var vllmSecondsKey = regexp.MustCompile(`^(mean|median|std|p[0-9.]+)_(ttft|tpot|itl|e2el)$`)

// Read reads an InferenceX agg result: every number is a metric
// (booleans and strings describe the run and are skipped); tput_per_gpu
// and output_tput_per_gpu are required.
func Read(path string) (*metrics.MeasuredRun, error) {
	data, err := metrics.ReadResultFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

// unitOf is the unit of an InferenceX agg key.
func unitOf(k string) string {
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

func parse(file string, data []byte) (*metrics.MeasuredRun, error) {
	r := &jsonx.Reader{File: file, Data: data}
	root, err := jsonx.Parse(data)
	if err != nil {
		return nil, r.Syntax(err)
	}
	r.Obj(root, "$")
	r.Req(root, "$", "tput_per_gpu")
	r.Req(root, "$", "output_tput_per_gpu")
	if r.Err != nil {
		return nil, r.Err
	}
	run := &metrics.MeasuredRun{Format: Name, Path: file}
	for i, k := range root.Keys {
		v := root.Vals[i]
		switch v.Kind {
		case jsonx.Number:
			run.Metrics = append(run.Metrics, metrics.MeasuredMetric{Name: k, Unit: unitOf(k), Value: r.Num(v, jsonx.PathKey("$", k))})
		case jsonx.String, jsonx.Bool, jsonx.Null:
		default:
			r.Fail(v, jsonx.PathKey("$", k), "want a number, string or boolean, got %s", v.KindName())
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return run, nil
}
