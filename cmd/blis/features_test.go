package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"blis/engine"
	"blis/kernel"
)

// specStats are the counters of vLLM's test_acceptance_length baseline
// for Llama-3.1-8B with EAGLE-3 at k = 3, scaled to 1,000 drafts.
func specStats() engine.Stats {
	var st engine.Stats
	st.SpecDrafts, st.SpecDraftTokens, st.SpecAccepted = 1000, 3000, 1605
	st.SpecAcceptedPerPos[0], st.SpecAcceptedPerPos[1], st.SpecAcceptedPerPos[2] = 730, 521, 354
	return st
}

func TestSpecOf(t *testing.T) {
	steps := kernel.Breakdown{Total: 10 * time.Second, Draft: 1250 * time.Millisecond}
	tests := []struct {
		name    string
		st      engine.Stats
		k       int
		elapsed time.Duration
		want    *specJSON
	}{
		{"off", engine.Stats{}, 0, time.Second, nil},
		{"run", specStats(), 3, 2 * time.Second, &specJSON{
			NumDrafts: 1000, NumDraftTokens: 3000, NumAcceptedTokens: 1605, NumSpeculativeTokens: 3,
			AcceptanceRate: 0.535, MeanAcceptanceLength: 2.605,
			AcceptedPerPosition: []int64{730, 521, 354}, AcceptanceRatePerPosition: []float64{0.73, 0.521, 0.354},
			AcceptedPerS: 802.5, DraftedPerS: 1500, DraftTimeShare: 0.125,
		}},
		// A replica's block: no throughput. A k smaller than the counters
		// (pools of different k) still shows every counted position.
		{"replica", specStats(), 2, 0, &specJSON{
			NumDrafts: 1000, NumDraftTokens: 3000, NumAcceptedTokens: 1605, NumSpeculativeTokens: 3,
			AcceptanceRate: 0.535, MeanAcceptanceLength: 2.605,
			AcceptedPerPosition: []int64{730, 521, 354}, AcceptanceRatePerPosition: []float64{0.73, 0.521, 0.354},
			DraftTimeShare: 0.125,
		}},
		// Speculation on but no request drafted (every output one token).
		{"no drafts", engine.Stats{}, 2, time.Second, &specJSON{
			NumSpeculativeTokens: 2, AcceptedPerPosition: []int64{0, 0}, AcceptanceRatePerPosition: []float64{0, 0},
			DraftTimeShare: 0.125,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := specOf(tt.st, tt.k, steps, tt.elapsed)
			if !jsonEqual(t, got, tt.want) {
				t.Errorf("specOf = %s, want %s", mustJSON(t, got), mustJSON(t, tt.want))
			}
		})
	}
}

func TestPrintSpec(t *testing.T) {
	tests := []struct {
		name string
		s    *specJSON
		want string
	}{
		{"off", nil, ""},
		{"run", specOf(specStats(), 3, kernel.Breakdown{Total: 8 * time.Second, Draft: time.Second}, 2*time.Second),
			"============================ Speculative decoding ============================\n" +
				"SpecDecoding metrics: Mean acceptance length: 2.60, Accepted throughput: 802.50 tokens/s, Drafted throughput: 1500.00 tokens/s, " +
				"Accepted: 1605 tokens, Drafted: 3000 tokens, Per-position acceptance rate: 0.730, 0.521, 0.354, Avg Draft acceptance rate: 53.5%\n" +
				"Draft passes: 12.5% of step time\n" +
				strings.Repeat("=", 78) + "\n"},
		// vLLM prints nan for the rate with no draft token.
		{"no drafts", specOf(engine.Stats{}, 1, kernel.Breakdown{}, time.Second),
			"============================ Speculative decoding ============================\n" +
				"SpecDecoding metrics: Mean acceptance length: 0.00, Accepted throughput: 0.00 tokens/s, Drafted throughput: 0.00 tokens/s, " +
				"Accepted: 0 tokens, Drafted: 0 tokens, Per-position acceptance rate: 0.000, Avg Draft acceptance rate: nan%\n" +
				"Draft passes: 0.0% of step time\n" +
				strings.Repeat("=", 78) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printSpec(&b, tt.s)
			if b.String() != tt.want {
				t.Errorf("printSpec wrote\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func offloadStats() engine.Stats {
	var st engine.Stats
	st.ExternalPrefixQueries, st.ExternalPrefixHits = 40000, 10000
	st.OffloadTierHits = [4]int64{50, 12, 0, 0}
	st.OffloadStores, st.OffloadLoads = 300, 20
	st.OffloadStoredBytes, st.OffloadLoadedBytes = 3_000_000_000, 1_250_000_000
	st.OffloadTierEvictions = 7
	st.OffloadLoadTime = 50 * time.Millisecond
	return st
}

func TestOffloadOf(t *testing.T) {
	disk := &engine.OffloadConfig{Secondary: []engine.OffloadTier{{Name: "fs"}}}
	many := &engine.OffloadConfig{Secondary: []engine.OffloadTier{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}}
	base := offloadJSON{Queries: 40000, Hits: 10000, HitRate: 0.25, StoredBytes: 3_000_000_000, LoadedBytes: 1_250_000_000,
		Stores: 300, Loads: 20, MeanLoadMs: 2.5, TierEvictions: 7}
	with := func(hits []int64, names ...string) *offloadJSON {
		o := base
		o.TierHits, o.TierNames = hits, names
		return &o
	}
	var lateHit engine.Stats
	lateHit.OffloadTierHits[3], lateHit.OffloadLoads = 2, 1
	tests := []struct {
		name string
		st   engine.Stats
		cfg  *engine.OffloadConfig
		want *offloadJSON
	}{
		{"off", engine.Stats{}, nil, nil},
		{"configured, idle", engine.Stats{}, &engine.OffloadConfig{}, &offloadJSON{TierHits: []int64{0}, TierNames: []string{"CPU"}}},
		{"cpu and fs", offloadStats(), disk, with([]int64{50, 12}, "CPU", "fs")},
		// Counters with no configuration known: tiers up to the last hit.
		{"no config", offloadStats(), nil, with([]int64{50, 12}, "CPU", "tier 1")},
		{"four secondaries", offloadStats(), many, with([]int64{50, 12, 0, 0}, "CPU", "a", "b", "tiers 3+")},
		{"late tier", lateHit, nil, &offloadJSON{Loads: 1, TierHits: []int64{0, 0, 0, 2}, TierNames: []string{"CPU", "tier 1", "tier 2", "tiers 3+"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := offloadOf(tt.st, tt.cfg)
			if !jsonEqual(t, got, tt.want) {
				t.Errorf("offloadOf = %s, want %s", mustJSON(t, got), mustJSON(t, tt.want))
			}
		})
	}
}

func TestPrintOffload(t *testing.T) {
	var b bytes.Buffer
	printOffload(&b, nil)
	if b.Len() != 0 {
		t.Errorf("printOffload(nil) wrote %q", b.String())
	}
	printOffload(&b, offloadOf(offloadStats(), &engine.OffloadConfig{Secondary: []engine.OffloadTier{{Name: "fs"}}}))
	want := "================================= KV offload =================================\n" +
		"External prefix cache hit rate: 25.0% (10000 of 40000 tokens)\n" +
		"Tier hits (chunks): CPU 50, fs 12\n" +
		"Stored: 3.000 GB in 300 stores; loaded: 1.250 GB in 20 loads, mean load 2.500 ms; tier evictions: 7 chunks\n" +
		strings.Repeat("=", 78) + "\n"
	if b.String() != want {
		t.Errorf("printOffload wrote\n%s\nwant\n%s", b.String(), want)
	}
}

// TestDeploymentJSONOmitsOffFeatures checks the result file's deployment
// keeps its keys when neither feature ran, and names them when they did.
func TestDeploymentJSONOmitsOffFeatures(t *testing.T) {
	var d deployment
	d.Replicas = []replicaResult{{Name: "r0"}}
	off := mustJSON(t, d)
	for _, k := range []string{"speculative_decoding", "kv_offload"} {
		if strings.Contains(off, k) {
			t.Errorf("deployment without the features has %q: %s", k, off)
		}
	}
	d.Spec = specOf(specStats(), 3, kernel.Breakdown{}, time.Second)
	d.Offload = offloadOf(offloadStats(), nil)
	d.Replicas[0].Spec, d.Replicas[0].Offload = d.Spec, d.Offload
	on := mustJSON(t, d)
	for _, k := range []string{`"speculative_decoding":{"num_drafts":1000,`, `"mean_acceptance_length":2.605`,
		`"accepted_per_position":[730,521,354]`, `"kv_offload":{"external_prefix_cache_queries":40000,`, `"tier_hits":[50,12]`, `"mean_load_ms":2.5`} {
		if strings.Count(on, k) != 2 {
			t.Errorf("deployment and its replica should each have %s: %s", k, on)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonEqual compares got and want as the result file would write them,
// floats within rounding.
func jsonEqual(t *testing.T, got, want any) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(mustJSON(t, got)), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(mustJSON(t, want)), &w); err != nil {
		t.Fatal(err)
	}
	return near(g, w)
}

func near(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (x-y < 1e-9 && y-x < 1e-9))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !near(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !near(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}
