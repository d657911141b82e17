package scenario

import (
	"time"

	"blis/cluster"
)

// ClientConfig is the benchmark client and serving frontend the scenario
// describes, for cluster.Run: every caller (blis run, blis validate) builds
// it here so the same keys replay the same way everywhere.
func (r *Resolved) ClientConfig() cluster.Config {
	s := &r.Scenario
	cfg := cluster.Config{
		Engine: r.Engine, Pricer: r.Pricer,
		DataParallel: s.DataParallelSize, Lockstep: r.Model.IsMoE(),
		MaxConcurrency: s.MaxConcurrency, NumWarmups: s.NumWarmups, Seed: s.Seed,
		WarmupRequestsPerLane: s.WarmupRequestsPerLane,
		TrajectoryStartMin:    s.TrajectoryStartMinRatio,
		TrajectoryStartMax:    s.TrajectoryStartMaxRatio,
		TraceIdleGapCap:       Seconds(s.TraceIdleGapCapSeconds),
		SystemIdleGapCap:      Seconds(s.SystemIdleGapCapSeconds),
		BenchmarkDuration:     Seconds(s.BenchmarkDuration),
		GracePeriod:           Seconds(s.BenchmarkGracePeriod),
		RequestTimeout:        Seconds(s.RequestTimeoutSeconds),
		FrontendLatency:       time.Duration(s.FrontendLatencyMs * float64(time.Millisecond)),
		Reopen:                r.Reopen,
		Fabric:                r.TransferFabric,
	}
	if len(r.Scenario.Pools) > 0 || r.Scenario.Replicas > 1 {
		cfg.Pools = r.clusterPools() // each pool's engine with its own fresh tiers
	} else {
		// The cluster runs Engine itself only without pools.
		cfg.Engine = withStorage(r.Engine, max(s.DataParallelSize, 1))
	}
	// Resolve built one already, so this cannot fail.
	cfg.Router, _ = r.NewRouter()
	if s.Lanes() {
		cfg.Mode = cluster.Lanes
	}
	switch s.CacheBust {
	case "first_turn_prefix":
		cfg.CacheBust = cluster.CacheBustFirstTurnPrefix
	case "system_prefix":
		cfg.CacheBust = cluster.CacheBustSystemPrefix
	}
	return cfg
}
