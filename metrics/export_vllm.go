package metrics

import (
	"math"
	"regexp"
	"strconv"
)

// Reader of vLLM bench's result JSON (vllm/benchmarks/serve.py, the file
// WriteJSON writes): every top-level number is an aggregate; with
// --save-detailed the per-request arrays (input_lens, output_lens, ttfts,
// itls, latencies, errors, and start_times where present; times in
// seconds) give the requests. It also reads the trimmed copies InferenceX
// keeps (same keys, latencies in seconds without the _ms suffix).

// ReadVLLM reads a vLLM bench result file.
func ReadVLLM(path string) (*MeasuredRun, error) {
	data, err := readFileBounded(path)
	if err != nil {
		return nil, err
	}
	return parseVLLM(path, data)
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

func parseVLLM(file string, data []byte) (*MeasuredRun, error) {
	r := &jReader{file: file, data: data}
	root, err := parseJSONTree(data)
	if err != nil {
		return nil, r.syntax(err)
	}
	r.obj(root, "$")
	if r.err != nil {
		return nil, r.err
	}
	run := &MeasuredRun{Format: FormatVLLM, Path: file}
	for i, k := range root.keys {
		v := root.vals[i]
		switch {
		case v.kind == 'n':
			run.Metrics = append(run.Metrics, MeasuredMetric{Name: k, Unit: vllmUnit(k), Value: r.num(v, pathKey("$", k))})
		case k == "request_rate" && v.kind == 's':
			if v.str != "inf" {
				r.fail(v, pathKey("$", k), `want a number or "inf", got %q`, v.str)
			}
			run.Metrics = append(run.Metrics, MeasuredMetric{Name: k, Unit: "req/s", Value: math.Inf(1)})
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if root.field("ttfts") == nil {
		return run, nil
	}
	// --save-detailed arrays, all of one length.
	names := []string{"input_lens", "output_lens", "ttfts", "itls", "latencies", "errors"}
	cols := map[string][]*jNode{}
	n := -1
	for _, k := range append(names, "start_times") {
		v := root.field(k)
		if v == nil && k == "start_times" {
			continue
		}
		a := r.arr(r.req(root, "$", k), pathKey("$", k))
		if r.err != nil {
			return nil, r.err
		}
		if n >= 0 && len(a) != n {
			r.fail(v, pathKey("$", k), "want %d entries (as %s has), got %d", n, names[0], len(a))
			return nil, r.err
		}
		n = len(a)
		cols[k] = a
	}
	for i := range n {
		p := func(k string) string { return pathIdx(pathKey("$", k), i) }
		q := MeasuredRequest{ID: strconv.Itoa(i)}
		q.Error = r.str(cols["errors"][i], p("errors"))
		q.Success = q.Error == ""
		q.InputTokens = r.count(cols["input_lens"][i], p("input_lens"))
		q.OutputTokens = r.count(cols["output_lens"][i], p("output_lens"))
		ttft := r.num(cols["ttfts"][i], p("ttfts"))
		lat := r.num(cols["latencies"][i], p("latencies"))
		gaps := r.arr(cols["itls"][i], p("itls"))
		if r.err != nil {
			return nil, r.err
		}
		for j, g := range gaps {
			q.ITLs = append(q.ITLs, sToDuration(r.num(g, pathIdx(p("itls"), j))))
		}
		if st := cols["start_times"]; st != nil {
			q.Start = int64(sToDuration(r.num(st[i], p("start_times"))))
		}
		if r.err != nil {
			return nil, r.err
		}
		if ttft < 0 || lat < 0 {
			r.fail(cols["ttfts"][i], p("ttfts"), "negative time: ttft %v, latency %v", ttft, lat)
			return nil, r.err
		}
		q.End = q.Start + int64(sToDuration(lat))
		if q.Success {
			q.TTFT = sToDuration(ttft)
			if q.OutputTokens > 1 {
				q.TPOTms = (lat - ttft) / float64(q.OutputTokens-1) * 1000
			}
		}
		run.Requests = append(run.Requests, q)
	}
	return run, nil
}
