package scenario

import (
	"math"
	"strings"
	"testing"
	"time"

	"blis/cluster"
)

func TestClientSettingsResolve(t *testing.T) {
	s := Defaults()
	y := []byte("concurrency-mode: lanes\nmax-concurrency: 4\nwarmup-requests-per-lane: 10\n" +
		"trajectory-start-min-ratio: 0.25\ntrajectory-start-max-ratio: 0.75\ntrace-idle-gap-cap-seconds: 300\n" +
		"system-idle-gap-cap-seconds: 10\ncache-bust: first_turn_prefix\nbenchmark-duration: 3600\nbenchmark-grace-period: inf\n")
	if err := s.ApplyYAML("x.yaml", y, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(); err != nil {
		t.Fatal(err)
	}
	if !s.Lanes() || !math.IsInf(s.BenchmarkGracePeriod, 1) || Seconds(s.BenchmarkGracePeriod) != -1 ||
		Seconds(s.TraceIdleGapCapSeconds) != 300*time.Second || Seconds(s.RequestTimeoutSeconds) != 6*time.Hour {
		t.Fatalf("got %+v", s)
	}
}

func TestConcurrencyModeAuto(t *testing.T) {
	s := Defaults()
	if s.Lanes() {
		t.Fatal("the default is vllm bench's per-request cap")
	}
	s.WarmupRequestsPerLane = 2
	if !s.Lanes() {
		t.Fatal("--warmup-requests-per-lane asks for lanes")
	}
	s.ConcurrencyMode = "requests"
	if s.Lanes() {
		t.Fatal("an explicit mode wins")
	}
}

func TestClientSettingsErrors(t *testing.T) {
	cases := []struct {
		set  func(*Scenario)
		want string
	}{
		{func(s *Scenario) { s.ConcurrencyMode = "tokens" }, "--concurrency-mode"},
		{func(s *Scenario) { s.CacheBust = "everything" }, "--cache-bust"},
		{func(s *Scenario) { s.WarmupRequestsPerLane = -1 }, "--warmup-requests-per-lane"},
		{func(s *Scenario) { s.TrajectoryStartMaxRatio = 1.5 }, "must be in [0, 1]"},
		{func(s *Scenario) { s.TrajectoryStartMinRatio, s.TrajectoryStartMaxRatio = 0.8, 0.5 }, "must be ≤ --trajectory-start-max-ratio"},
		{func(s *Scenario) { s.BenchmarkDuration = -1 }, "--benchmark-duration"},
		{func(s *Scenario) { s.SystemIdleGapCapSeconds = 2e9 }, "--system-idle-gap-cap-seconds"},
		{func(s *Scenario) { s.BenchmarkGracePeriod = -3 }, "--benchmark-grace-period"},
		{func(s *Scenario) { s.ConcurrencyMode, s.MaxConcurrency = "lanes", 0 }, "number of lanes"},
		{func(s *Scenario) { s.ConcurrencyMode, s.MaxConcurrency, s.NumWarmups = "lanes", 4, 2 }, "--warmup-requests-per-lane"},
		{func(s *Scenario) { s.ConcurrencyMode, s.MaxConcurrency, s.RequestRate = "lanes", 4, 3 }, "closed loops"},
	}
	for i, c := range cases {
		s := Defaults()
		c.set(&s)
		_, err := s.Resolve()
		if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: got %v, want %q", i, err, c.want)
		}
	}
	s := Defaults()
	if err := s.ApplyYAML("x.yaml", []byte("benchmark-grace-period: soon\n"), nil); err == nil || !strings.Contains(err.Error(), "seconds or inf") {
		t.Errorf("grace period: got %v", err)
	}
}

// Every caller gets the client keys: idle-gap caps, lanes, the cap, the
// corpus reopener and the frontend latency.
func TestClientConfigCarriesEveryClientKey(t *testing.T) {
	s := Defaults()
	s.TraceIdleGapCapSeconds, s.SystemIdleGapCapSeconds, s.ConcurrencyMode, s.MaxConcurrency = 300, 30, "lanes", 4
	s.FrontendLatencyMs = 2.5
	res, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cfg := res.ClientConfig()
	if cfg.TraceIdleGapCap != 300*time.Second || cfg.SystemIdleGapCap != 30*time.Second || cfg.MaxConcurrency != 4 ||
		cfg.Reopen == nil || cfg.Mode != cluster.Lanes || cfg.FrontendLatency != 2500*time.Microsecond {
		t.Errorf("%+v", cfg)
	}
}
