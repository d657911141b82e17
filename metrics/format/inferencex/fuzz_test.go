package inferencex

import (
	"testing"

	"blis/metrics/format/internal/formattest"
)

func FuzzParse(f *testing.F) {
	formattest.FuzzParser(f, func(data []byte) error { _, err := parse("f.json", data); return err },
		`{"hw": "H100", "conc": 8, "disagg": false, "tput_per_gpu": 2331.9, "output_tput_per_gpu": 95.3, "median_intvty": 44.4, "p90_e2e_intvty": 21.6}`)
}
