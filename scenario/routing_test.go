package scenario

import (
	"testing"

	"blis/cluster"
	"blis/metrics"
)

// runScenario resolves s and runs it through the cluster loop.
func runScenario(t *testing.T, s Scenario) (cluster.Result, *metrics.Result) {
	t.Helper()
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := metrics.NewRecorder(metrics.RecorderOptions{Percentiles: []float64{50}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	out, err := cluster.Run(r.ClientConfig(), r.Source, rec)
	if err != nil {
		t.Fatal(err)
	}
	return out, rec.Summarize(metrics.SummaryInput{Duration: out.Duration})
}

func hitRate(out cluster.Result) float64 {
	if out.Engine.PrefixQueries == 0 {
		return 0
	}
	return float64(out.Engine.PrefixHits) / float64(out.Engine.PrefixQueries)
}

// TestPrefixAwareRoutingBeatsRoundRobin: on a shared-prefix load, a
// prefix-aware router keeps each group's system prompt on one replica, so
// its prefix-cache hit rate approaches the share of prompt tokens that are
// a group's shared prefix (every request but each group's first on each
// replica it lands on) while round-robin rebuilds each prefix on every
// replica; TTFT falls with the prefill tokens saved. With no shared prefix
// the prefix scorer has nothing to find: prefix-aware routing is its load
// scorer alone, as good as a least-requests balancer and no better
// (round-robin is worse there: under a closed loop it ignores which replica
// just freed a slot).
func TestPrefixAwareRoutingBeatsRoundRobin(t *testing.T) {
	base := Defaults()
	base.Replicas = 4
	base.MaxConcurrency = 8
	base.DatasetName = "shared_prefix"
	base.SharedPrefix.NumGroups = 8
	base.SharedPrefix.NumPromptsPerGroup = 12
	base.SharedPrefix.SystemPromptLen = 3000
	base.SharedPrefix.QuestionLen = 200
	base.SharedPrefix.OutputLen = 32

	aware, rr := base, base
	aware.Router, rr.Router = "prefix-aware", "round-robin"
	awareOut, awareRes := runScenario(t, aware)
	rrOut, rrRes := runScenario(t, rr)

	// Ideal: one miss per group; the shared share of a prompt's blocks.
	n := float64(base.SharedPrefix.NumGroups * base.SharedPrefix.NumPromptsPerGroup)
	shared := float64(base.SharedPrefix.SystemPromptLen) / float64(base.SharedPrefix.SystemPromptLen+base.SharedPrefix.QuestionLen)
	ideal := shared * (n - float64(base.SharedPrefix.NumGroups)) / n
	ha, hr := hitRate(awareOut), hitRate(rrOut)
	t.Logf("hit rate: prefix-aware %.3f, round-robin %.3f, ideal %.3f; mean TTFT %.1f vs %.1f ms",
		ha, hr, ideal, awareRes.TTFT.Mean, rrRes.TTFT.Mean)
	if ha < 0.9*ideal {
		t.Errorf("prefix-aware hit rate %.3f, want ≥ 90%% of the ideal %.3f", ha, ideal)
	}
	if hr >= ha-0.05 {
		t.Errorf("round-robin hit rate %.3f should be clearly below prefix-aware's %.3f", hr, ha)
	}
	if awareRes.TTFT.Mean >= rrRes.TTFT.Mean {
		t.Errorf("prefix-aware TTFT %.1f ms should beat round-robin's %.1f ms", awareRes.TTFT.Mean, rrRes.TTFT.Mean)
	}

	// No shared prefix: no hits either way, and the same latency within a few per cent.
	plain := Defaults()
	// A Poisson load: a closed loop of equal requests would keep
	// perfectly balanced replicas in lockstep (every prefill batched with
	// its twin), which is a property of that load, not of the routers.
	plain.Replicas, plain.RequestRate, plain.NumPrompts = 4, 40, 400
	plain.RandomInputLen, plain.RandomOutputLen = 2000, 32
	pa, pr := plain, plain
	pa.Router, pr.Router = "prefix-aware", "least-requests"
	paOut, paRes := runScenario(t, pa)
	prOut, prRes := runScenario(t, pr)
	if hitRate(paOut) > 0.01 || hitRate(prOut) > 0.01 {
		t.Errorf("no shared prefix, yet hit rates %.3f / %.3f", hitRate(paOut), hitRate(prOut))
	}
	if d := paRes.TTFT.Mean/prRes.TTFT.Mean - 1; d < -0.1 || d > 0.1 {
		t.Errorf("no shared prefix: prefix-aware TTFT %.1f ms vs least-requests %.1f ms (%.0f%%)", paRes.TTFT.Mean, prRes.TTFT.Mean, 100*d)
	}
}
