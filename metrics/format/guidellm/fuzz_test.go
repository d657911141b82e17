package guidellm

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParse(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parse("f.json", data); return err },
		`{"benchmarks":[{"metrics":{"request_totals":{"successful":1},"time_to_first_token_ms":{"successful":{"mean":1.5,"count":1,"percentiles":{"p50":1.5},"pdf":null}}},"requests":{"successful":[{"request_id":"0","info":{"conversation_id":"0","turn_index":0,"timings":{"request_start":1.0,"request_end":2.0,"first_token_iteration":1.5,"last_token_iteration":2.0,"token_iterations":3}},"input_metrics":{"text_tokens":5},"output_metrics":{"text_tokens":3}}],"errored":[{"request_id":"1","info":{"error":"x","timings":{"resolve_start":1.0,"resolve_end":1.0}}}],"incomplete":[],"total":null},"start_time":1.0,"end_time":2.0,"duration":1.0}]}`)
}
