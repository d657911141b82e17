package cluster_test

import (
	"fmt"
	"testing"

	"blis/scenario"
)

// BenchmarkPD serves the same load — random 1024 in / 256 out on
// Llama-3.1-8B, one H100 per replica, Poisson arrivals at 40 req/s — from
// 10 replicas two ways: aggregated behind llm-d's default router, and
// disaggregated into 8 prefill + 2 decode replicas behind llm-d's
// pd-epp-config (every request disaggregated, its KV moved over the
// H100's own fabric). The target: the disaggregated run costs at
// most 1.5× the aggregated one.
//
//	go test ./cluster -run '^$' -bench 'PD/' -benchmem -benchtime 1x
func BenchmarkPD(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, pd := range []bool{false, true} {
			name := fmt.Sprintf("layout=aggregated/requests=%d", n)
			if pd {
				name = fmt.Sprintf("layout=8p2d/requests=%d", n)
			}
			b.Run(name, func(b *testing.B) { benchPD(b, pd, n) })
		}
	}
}

func benchPD(b *testing.B, pd bool, n int) {
	s := scenario.Defaults()
	s.Model, s.Hardware = "meta-llama/Llama-3.1-8B", "h100"
	s.RandomInputLen, s.RandomOutputLen, s.NumPrompts, s.RequestRate = 1024, 256, n, 40
	if pd {
		s.PrefillReplicas, s.DecodeReplicas = 8, 2
	} else {
		s.Replicas, s.Router = 10, "llm-d"
	}
	res, err := s.Resolve()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		out, sum := benchRandom(b, res.ClientConfig(), res.Random, int64(i), n)
		if pd && out.Pools[1].Decoded != int64(n) {
			b.Fatalf("decoded after a transfer: %d of %d", out.Pools[1].Decoded, n)
		}
		b.ReportMetric(float64(out.Engine.Steps), "steps")
		b.ReportMetric(sum.TTFT.Mean, "sim_ttft_mean")
		b.ReportMetric(sum.TPOT.Mean, "sim_tpot_mean")
		if pd {
			b.ReportMetric(float64(out.Pools[1].TransferMean)/1e6, "sim_kv_transfer_ms")
		}
	}
}
