package aiperf

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParseRecords(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parseRecords("f.jsonl", data); return err },
		`{"metadata":{"session_num":0,"x_request_id":"0","x_correlation_id":"0","conversation_id":"0","turn_index":0,"request_start_ns":1767225600000318499,"request_ack_ns":null,"request_end_ns":1767225600853549454,"benchmark_phase":"profiling"},"metrics":{"input_sequence_length":{"value":983,"unit":"tokens"},"time_to_first_token":{"value":119.28738,"unit":"ms"},"output_token_count":{"value":3,"unit":"tokens"},"inter_chunk_latency":{"value":[32.8,8.7],"unit":"ms"},"output_sequence_length":{"value":3,"unit":"tokens"},"inter_token_latency":{"value":23.6,"unit":"ms"}},"error":null}
{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{"error_isl":{"value":192,"unit":"tokens"}},"error":{"code":400,"type":"BadRequestError","message":"too long"}}
`,
		`{"metadata":{"request_start_ns":1,"request_end_ns":2},"metrics":{"inter_chunk_latency":{"value":[1e308,-1],"unit":"sec"}},"error":null}`)
}

func FuzzParseJSON(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parseJSON("f.json", data); return err },
		`{"schema_version": "1.4", "request_latency": {"unit": "ms", "avg": 668.3, "p1": 67.7, "p99": 1010.3, "min": 22.8, "max": 1013.3, "std": 283.3, "count": 12, "sum": 8020.7}, "request_count": {"unit": "requests", "avg": 12.0}, "error_summary": []}`)
}

func FuzzParseCSV(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parseCSV("f.csv", data); return err },
		"Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\nTime to First Token (ms),156.07,22.86,281.07,1872.86,25.35,35.29,49.57,111.10,184.30,201.36,212.61,243.99,273.66,72.39\r\n\r\nMetric,Value\r\nRequest Count,12.00\r\n",
		"Endpoint,GPU_Index\r\nx,1\r\n")
}
