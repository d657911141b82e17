package llmd

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParse(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parse("f.yaml", data); return err },
		"version: \"0.2\"\nrun:\n  uid: a\nresults:\n  request_performance:\n    aggregate:\n      requests: {total: 3, failures: 0}\n      latency:\n        time_to_first_token: {units: ms, mean: 1.5e+3, p50: 1_000, p99: .inf}\n",
		"version: '0.2'\nrun: {uid: a}\nresults: &a {x: *a}\n",
		"version: '0.2'\nrun: {uid: 1}\nresults: {x: [1, 2, {y: 0x10}]}\n")
}
