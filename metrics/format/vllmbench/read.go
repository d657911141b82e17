// Package vllmbench reads vLLM bench's result JSON, the file `vllm bench
// serve --save-result` writes (vllm/benchmarks/serve.py of
// vllm-project/vllm main @ 009e6d4a1cd6; BLIS writes it with
// metrics.WriteJSON): every top-level number is an aggregate; with
// --save-detailed the per-request arrays (input_lens, output_lens, ttfts,
// itls, latencies, errors, and start_times where present; times in
// seconds) give the requests. It also reads the trimmed copies InferenceX
// keeps (same keys, latencies in seconds without the _ms suffix).
package vllmbench

import (
	"math"
	"regexp"
	"strconv"

	"blis/metrics"
	"blis/metrics/format/internal/jsonx"
)

// Name is the format's name, as --export takes it.
const Name = "vllm"

// ResultFile is the file the export writes.
const ResultFile = "vllm_bench_result.json"

// Read reads a vLLM bench result file.
func Read(path string) (*metrics.MeasuredRun, error) {
	data, err := metrics.ReadResultFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

var vllmSecondsKey = regexp.MustCompile(`^(mean|median|std|p[0-9.]+)_(ttft|tpot|itl|e2el)$`)

// vllmUnit is the unit of a vLLM result key.
func vllmUnit(k string) string {
	switch k {
	case "duration":
		return "s"
	case "completed", "failed", "num_prompts", "total_input_tokens", "total_output_tokens",
		"max_concurrency", "max_concurrent_requests", "gpu_kv_cache_tokens", "num_preemptions", "good_completed":
		return "count"
	case "request_rate", "request_throughput", "request_goodput":
		return "req/s"
	case "output_throughput", "total_token_throughput", "input_throughput", "max_output_tokens_per_s":
		return "tok/s"
	}
	if len(k) > 3 && k[len(k)-3:] == "_ms" {
		return "ms"
	}
	if vllmSecondsKey.MatchString(k) {
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
	if r.Err != nil {
		return nil, r.Err
	}
	run := &metrics.MeasuredRun{Format: Name, Path: file}
	for i, k := range root.Keys {
		v := root.Vals[i]
		switch {
		case v.Kind == jsonx.Number:
			run.Metrics = append(run.Metrics, metrics.MeasuredMetric{Name: k, Unit: vllmUnit(k), Value: r.Num(v, jsonx.PathKey("$", k))})
		case k == "request_rate" && v.Kind == jsonx.String:
			if v.Str != "inf" {
				r.Fail(v, jsonx.PathKey("$", k), `want a number or "inf", got %q`, v.Str)
			}
			run.Metrics = append(run.Metrics, metrics.MeasuredMetric{Name: k, Unit: "req/s", Value: math.Inf(1)})
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	if root.Field("ttfts") == nil {
		return run, nil
	}
	// --save-detailed arrays, all of one length.
	names := []string{"input_lens", "output_lens", "ttfts", "itls", "latencies", "errors"}
	cols := map[string][]*jsonx.Node{}
	n := -1
	for _, k := range append(names, "start_times") {
		v := root.Field(k)
		if v == nil && k == "start_times" {
			continue
		}
		a := r.Arr(r.Req(root, "$", k), jsonx.PathKey("$", k))
		if r.Err != nil {
			return nil, r.Err
		}
		if n >= 0 && len(a) != n {
			r.Fail(v, jsonx.PathKey("$", k), "want %d entries (as %s has), got %d", n, names[0], len(a))
			return nil, r.Err
		}
		n = len(a)
		cols[k] = a
	}
	for i := range n {
		p := func(k string) string { return jsonx.PathIdx(jsonx.PathKey("$", k), i) }
		q := metrics.MeasuredRequest{ID: strconv.Itoa(i)}
		q.Error = r.Str(cols["errors"][i], p("errors"))
		q.Success = q.Error == ""
		q.InputTokens = r.Count(cols["input_lens"][i], p("input_lens"))
		q.OutputTokens = r.Count(cols["output_lens"][i], p("output_lens"))
		ttft := r.Num(cols["ttfts"][i], p("ttfts"))
		lat := r.Num(cols["latencies"][i], p("latencies"))
		gaps := r.Arr(cols["itls"][i], p("itls"))
		if r.Err != nil {
			return nil, r.Err
		}
		for j, g := range gaps {
			q.ITLs = append(q.ITLs, metrics.FromSeconds(r.Num(g, jsonx.PathIdx(p("itls"), j))))
		}
		if st := cols["start_times"]; st != nil {
			q.Start = int64(metrics.FromSeconds(r.Num(st[i], p("start_times"))))
		}
		if r.Err != nil {
			return nil, r.Err
		}
		if ttft < 0 || lat < 0 {
			r.Fail(cols["ttfts"][i], p("ttfts"), "negative time: ttft %v, latency %v", ttft, lat)
			return nil, r.Err
		}
		q.End = q.Start + int64(metrics.FromSeconds(lat))
		if q.Success {
			q.TTFT = metrics.FromSeconds(ttft)
			if q.OutputTokens > 1 {
				q.TPOTms = (lat - ttft) / float64(q.OutputTokens-1) * 1000
			}
		}
		run.Requests = append(run.Requests, q)
	}
	return run, nil
}
