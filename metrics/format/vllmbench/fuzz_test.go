package vllmbench

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParse(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parse("f.json", data); return err },
		`{"request_rate": "inf", "duration": 1.5, "mean_ttft_ms": 3.5, "input_lens": [1, 2], "output_lens": [3, 0], "ttfts": [0.1, 0.0], "itls": [[0.01, 0.02], []], "latencies": [0.2, 0.0], "start_times": [0.0, 0.5], "errors": ["", "bad"]}`,
		`{"median_ttft": 1.6, "request_rate": "inf", "max_concurrency": 4}`)
}
