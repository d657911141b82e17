package inferenceperf

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParseFile(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parseFile("f.json", data); return err },
		`[{"start_time": 1.0, "end_time": 2.0, "session_id": "s", "info": {"request_metrics": {"text": {"input_tokens": 3}}, "response_metrics": {"output_tokens": 3, "server_usage": {}, "chunk_times": [1.5, 2.0], "output_token_times": [1.5, 1.5, 2.0]}}, "error": null}, {"start_time": 1.0, "end_time": 1.0, "info": {"input_tokens": 2, "output_token_times": []}, "error": {"error_type": "HTTP Error 400", "error_msg": "x"}}]`,
		`{"benchmark_time_seconds": 1.0, "load_summary": {"count": 2, "schedule_delay": null}, "successes": {"count": 1, "latency": {"time_to_first_token": {"mean": 0.5, "p99.9": 0.5}, "inter_token_latency": null}, "throughput": {"requests_per_sec": 1.0}}, "failures": {"count": 1, "by_label": {"400 - other": {"count": 1, "messages": [{"message": "x", "session_ids": ["s"]}]}}}}`)
}
