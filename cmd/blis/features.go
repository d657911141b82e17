package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"blis/engine"
	"blis/kernel"
	"blis/scenario"
)

// specJSON is the result file's speculative decoding block: vLLM's
// SpecDecodingStats counters (vllm/v1/spec_decode/metrics.py, v0.10–v0.12)
// over the whole run, warm-ups included, and the ratios its
// SpecDecodingLogging derives from them.
type specJSON struct {
	NumDrafts            int64 `json:"num_drafts"`
	NumDraftTokens       int64 `json:"num_draft_tokens"`
	NumAcceptedTokens    int64 `json:"num_accepted_tokens"`
	NumSpeculativeTokens int   `json:"num_speculative_tokens"`
	// AcceptanceRate is accepted / drafted tokens (vLLM logs it as "Avg
	// Draft acceptance rate", in percent).
	AcceptanceRate float64 `json:"acceptance_rate"`
	// MeanAcceptanceLength counts the bonus token: 1 + accepted / drafts.
	MeanAcceptanceLength float64 `json:"mean_acceptance_length"`
	// AcceptedPerPosition is num_accepted_tokens_per_pos; the rates divide
	// it by num_drafts, as the log's per-position acceptance rate does.
	AcceptedPerPosition       []int64   `json:"accepted_per_position"`
	AcceptanceRatePerPosition []float64 `json:"acceptance_rate_per_position"`
	// AcceptedPerS and DraftedPerS are the log's accepted and drafted
	// throughputs over the whole simulated run (0 in a replica's block).
	AcceptedPerS float64 `json:"accepted_throughput,omitempty"`
	DraftedPerS  float64 `json:"drafted_throughput,omitempty"`
	// DraftTimeShare is the proposer's share of the timed steps' time
	// (kernel.Breakdown.Draft / Total).
	DraftTimeShare float64 `json:"draft_time_share"`
}

// offloadJSON is the result file's KV offload block: vLLM's connector
// prefix-cache counters (vllm:external_prefix_cache_queries / _hits, in
// tokens) and the offload transfers, over the whole run.
type offloadJSON struct {
	Queries int64   `json:"external_prefix_cache_queries"`
	Hits    int64   `json:"external_prefix_cache_hits"`
	HitRate float64 `json:"hit_rate"`
	// TierHits counts chunks loaded from each tier: the CPU tier first,
	// then the secondary tiers in order (a fourth entry sums any later).
	TierHits    []int64  `json:"tier_hits"`
	TierNames   []string `json:"tier_names"`
	StoredBytes int64    `json:"stored_bytes"`
	LoadedBytes int64    `json:"loaded_bytes"`
	Stores      int64    `json:"stores"`
	Loads       int64    `json:"loads"`
	MeanLoadMs  float64  `json:"mean_load_ms"`
	// LoadsInStep: the connector (LMCache) loads inside the step, on its
	// critical path, so a load has no wait of its own (MeanLoadMs 0).
	LoadsInStep   bool  `json:"loads_in_step,omitempty"`
	TierEvictions int64 `json:"tier_evictions"`
}

// specOf reports speculative decoding for counters st of engines drafting k
// tokens per step, whose timed steps took steps, over elapsed simulated
// time (0: no throughput). It is nil when speculative decoding was off.
func specOf(st engine.Stats, k int, steps kernel.Breakdown, elapsed time.Duration) *specJSON {
	if k == 0 && st.SpecDrafts == 0 {
		return nil
	}
	// vLLM keeps one counter per position up to num_speculative_tokens;
	// with pools of different k, positions past the largest stay empty.
	for j := len(st.SpecAcceptedPerPos) - 1; j >= k; j-- {
		if st.SpecAcceptedPerPos[j] != 0 {
			k = j + 1
			break
		}
	}
	s := &specJSON{
		NumDrafts: st.SpecDrafts, NumDraftTokens: st.SpecDraftTokens, NumAcceptedTokens: st.SpecAccepted,
		NumSpeculativeTokens: k, MeanAcceptanceLength: st.SpecMeanAcceptanceLength(),
		AcceptedPerPosition:       append([]int64{}, st.SpecAcceptedPerPos[:k]...),
		AcceptanceRatePerPosition: make([]float64, k),
	}
	if st.SpecDraftTokens > 0 {
		s.AcceptanceRate = float64(st.SpecAccepted) / float64(st.SpecDraftTokens)
	}
	if st.SpecDrafts > 0 {
		for j := range k {
			s.AcceptanceRatePerPosition[j] = float64(st.SpecAcceptedPerPos[j]) / float64(st.SpecDrafts)
		}
	}
	if sec := elapsed.Seconds(); sec > 0 {
		s.AcceptedPerS = float64(st.SpecAccepted) / sec
		s.DraftedPerS = float64(st.SpecDraftTokens) / sec
	}
	if steps.Total > 0 {
		s.DraftTimeShare = float64(steps.Draft) / float64(steps.Total)
	}
	return s
}

// offloadOf reports KV offload for counters st of engines whose offload
// configuration is cfg (nil: none known). It is nil when offload was off.
func offloadOf(st engine.Stats, cfg *engine.OffloadConfig) *offloadJSON {
	names := offloadTierNames(cfg)
	if cfg == nil && st.ExternalPrefixQueries == 0 && st.OffloadStores == 0 && st.OffloadLoads == 0 {
		return nil
	}
	n := len(names)
	for i := len(st.OffloadTierHits) - 1; i >= n; i-- {
		if st.OffloadTierHits[i] != 0 {
			n = i + 1
			break
		}
	}
	for i := len(names); i < n; i++ {
		names = append(names, defaultTierName(i))
	}
	o := &offloadJSON{
		Queries: st.ExternalPrefixQueries, Hits: st.ExternalPrefixHits,
		TierHits: append([]int64{}, st.OffloadTierHits[:n]...), TierNames: names[:n],
		StoredBytes: st.OffloadStoredBytes, LoadedBytes: st.OffloadLoadedBytes,
		Stores: st.OffloadStores, Loads: st.OffloadLoads, TierEvictions: st.OffloadTierEvictions,
	}
	if st.ExternalPrefixQueries > 0 {
		o.HitRate = float64(st.ExternalPrefixHits) / float64(st.ExternalPrefixQueries)
	}
	o.LoadsInStep = cfg != nil && cfg.Connector == engine.OffloadLMCache
	if st.OffloadLoads > 0 && !o.LoadsInStep {
		o.MeanLoadMs = float64(st.OffloadLoadTime) / float64(st.OffloadLoads) / 1e6
	}
	return o
}

// offloadTierNames names the tiers engine.Stats.OffloadTierHits counts:
// the CPU tier, then each secondary tier by its name, the fourth slot
// standing for every tier from the fourth on.
func offloadTierNames(cfg *engine.OffloadConfig) []string {
	names := []string{"CPU"}
	if cfg == nil {
		return names
	}
	names[0] = cmp.Or(cfg.Name, "CPU")
	for i, t := range cfg.Secondary {
		if i+1 == len(engine.Stats{}.OffloadTierHits)-1 && len(cfg.Secondary) > i+1 {
			names = append(names, defaultTierName(i+1))
			break
		}
		names = append(names, cmp.Or(t.Name, defaultTierName(i+1)))
	}
	return names
}

// defaultTierName names secondary tier i (from 1) when its config names
// none; the last slot of OffloadTierHits counts every tier from it on.
func defaultTierName(i int) string {
	if i == len(engine.Stats{}.OffloadTierHits)-1 {
		return fmt.Sprintf("tiers %d+", i)
	}
	return fmt.Sprintf("tier %d", i)
}

// specK is the largest num_speculative_tokens of the run's pools (a
// resolved scenario always has one, its top-level deployment's when it
// names none).
func specK(r *scenario.Resolved) int {
	k := 0
	for _, p := range r.Pools {
		k = max(k, p.Engine.Spec.NumTokens)
	}
	return k
}

// offloadConfig is the first pool's KV offload configuration that is set,
// nil when no pool offloads.
func offloadConfig(r *scenario.Resolved) *engine.OffloadConfig {
	for _, p := range r.Pools {
		if p.Engine.Offload != nil {
			return p.Engine.Offload
		}
	}
	return nil
}

// printSpec writes the line vLLM's server logs every 10 s with speculative
// decoding (SpecDecodingLogging.log, vllm/v1/spec_decode/metrics.py,
// v0.10–v0.12), for the whole run, and the draft passes' share of the step
// time, which vLLM does not log.
func printSpec(w io.Writer, s *specJSON) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "%s\n", centre(" Speculative decoding ", 78))
	rates := make([]string, len(s.AcceptanceRatePerPosition))
	for j, u := range s.AcceptanceRatePerPosition {
		rates[j] = fmt.Sprintf("%.3f", u)
	}
	avg := "nan" // vLLM's float("nan") with no draft token, as %.1f prints it
	if s.NumDraftTokens > 0 {
		avg = fmt.Sprintf("%.1f", 100*s.AcceptanceRate)
	}
	fmt.Fprintf(w, "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f tokens/s, Drafted throughput: %.2f tokens/s, "+
		"Accepted: %d tokens, Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %s%%\n",
		s.MeanAcceptanceLength, s.AcceptedPerS, s.DraftedPerS, s.NumAcceptedTokens, s.NumDraftTokens, strings.Join(rates, ", "), avg)
	fmt.Fprintf(w, "Draft passes: %.1f%% of step time\n", 100*s.DraftTimeShare)
	fmt.Fprintln(w, strings.Repeat("=", 78))
}

// printOffload writes the KV connector's figures: the external prefix
// cache hit rate as vLLM's periodic log line words it (LoggingStatLogger,
// vllm/v1/metrics/loggers.py), then the offload transfers.
func printOffload(w io.Writer, o *offloadJSON) {
	if o == nil {
		return
	}
	fmt.Fprintf(w, "%s\n", centre(" KV offload ", 78))
	fmt.Fprintf(w, "External prefix cache hit rate: %.1f%% (%d of %d tokens)\n", 100*o.HitRate, o.Hits, o.Queries)
	hits := make([]string, len(o.TierHits))
	for i, h := range o.TierHits {
		hits[i] = fmt.Sprintf("%s %d", o.TierNames[i], h)
	}
	fmt.Fprintf(w, "Tier hits (chunks): %s\n", strings.Join(hits, ", "))
	load := fmt.Sprintf("mean load %.3f ms", o.MeanLoadMs)
	if o.LoadsInStep {
		load = "inside the steps"
	}
	fmt.Fprintf(w, "Stored: %.3f GB in %d stores; loaded: %.3f GB in %d loads, %s; tier evictions: %d chunks\n",
		float64(o.StoredBytes)/1e9, o.Stores, float64(o.LoadedBytes)/1e9, o.Loads, load, o.TierEvictions)
	fmt.Fprintln(w, strings.Repeat("=", 78))
}
