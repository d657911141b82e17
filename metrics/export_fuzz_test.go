package metrics

import "testing"

// Fuzz tests for every export reader: no input may panic, and a reader is
// a pure function of the bytes. The seeds are small hand-made files of
// each format (the full examples and goldens are read by the unit tests;
// as seeds they slow the fuzzer to a crawl).

func fuzzParser(f *testing.F, parse func(data []byte) error, seeds ...string) {
	for _, s := range append(seeds, "", "{}", "[]", "null") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err1 := parse(data)
		err2 := parse(data)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %v vs %v", err1, err2)
		}
	})
}

func FuzzReadAIPerfRecords(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseAIPerfRecords("f.jsonl", data); return err },
		`{"metadata":{"session_num":0,"x_request_id":"0","x_correlation_id":"0","conversation_id":"0","turn_index":0,"request_start_ns":1767225600000318499,"request_ack_ns":null,"request_end_ns":1767225600853549454,"benchmark_phase":"profiling"},"metrics":{"input_sequence_length":{"value":983,"unit":"tokens"},"time_to_first_token":{"value":119.28738,"unit":"ms"},"output_token_count":{"value":3,"unit":"tokens"},"inter_chunk_latency":{"value":[32.8,8.7],"unit":"ms"},"output_sequence_length":{"value":3,"unit":"tokens"},"inter_token_latency":{"value":23.6,"unit":"ms"}},"error":null}
{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{"error_isl":{"value":192,"unit":"tokens"}},"error":{"code":400,"type":"BadRequestError","message":"too long"}}
`,
		`{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{"inter_chunk_latency":{"value":[1e308,-1],"unit":"sec"}},"error":null}`)
}

func FuzzReadAIPerfJSON(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseAIPerfJSON("f.json", data); return err },
		`{"schema_version": "1.4", "request_latency": {"unit": "ms", "avg": 668.3, "p1": 67.7, "p99": 1010.3, "min": 22.8, "max": 1013.3, "std": 283.3, "count": 12, "sum": 8020.7}, "request_count": {"unit": "requests", "avg": 12.0}, "error_summary": []}`)
}

func FuzzReadAIPerfCSV(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseAIPerfCSV("f.csv", data); return err },
		"Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\nTime to First Token (ms),156.07,22.86,281.07,1872.86,25.35,35.29,49.57,111.10,184.30,201.36,212.61,243.99,273.66,72.39\r\n\r\nMetric,Value\r\nRequest Count,12.00\r\n",
		"Endpoint,GPU_Index\r\nx,1\r\n")
}

func FuzzReadGuideLLM(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseGuideLLM("f.json", data); return err },
		`{"benchmarks":[{"metrics":{"request_totals":{"successful":1},"time_to_first_token_ms":{"successful":{"mean":1.5,"count":1,"percentiles":{"p50":1.5},"pdf":null}}},"requests":{"successful":[{"request_id":"0","info":{"conversation_id":"0","turn_index":0,"timings":{"request_start":1.0,"request_end":2.0,"first_token_iteration":1.5,"last_token_iteration":2.0,"token_iterations":3}},"input_metrics":{"text_tokens":5},"output_metrics":{"text_tokens":3}}],"errored":[{"request_id":"1","info":{"error":"x","timings":{"resolve_start":1.0,"resolve_end":1.0}}}],"incomplete":[],"total":null},"start_time":1.0,"end_time":2.0,"duration":1.0}]}`)
}

func FuzzReadLLMD(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseLLMD("f.yaml", data); return err },
		"version: \"0.2\"\nrun:\n  uid: a\nresults:\n  request_performance:\n    aggregate:\n      requests: {total: 3, failures: 0}\n      latency:\n        time_to_first_token: {units: ms, mean: 1.5e+3, p50: 1_000, p99: .inf}\n",
		"version: '0.2'\nrun: {uid: a}\nresults: &a {x: *a}\n",
		"version: '0.2'\nrun: {uid: 1}\nresults: {x: [1, 2, {y: 0x10}]}\n")
}

func FuzzReadVLLM(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseVLLM("f.json", data); return err },
		`{"request_rate": "inf", "duration": 1.5, "mean_ttft_ms": 3.5, "input_lens": [1, 2], "output_lens": [3, 0], "ttfts": [0.1, 0.0], "itls": [[0.01, 0.02], []], "latencies": [0.2, 0.0], "start_times": [0.0, 0.5], "errors": ["", "bad"]}`,
		`{"median_ttft": 1.6, "request_rate": "inf", "max_concurrency": 4}`)
}

func FuzzReadInferenceX(f *testing.F) {
	fuzzParser(f, func(data []byte) error { _, err := parseInferenceX("f.json", data); return err },
		`{"hw": "H100", "conc": 8, "disagg": false, "tput_per_gpu": 2331.9, "output_tput_per_gpu": 95.3, "median_intvty": 44.4, "p90_e2e_intvty": 21.6}`)
}
