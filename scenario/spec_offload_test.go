package scenario

import (
	"math"
	"strings"
	"testing"

	"blis/engine"
	"blis/kvtier"
)

func resolveWith(t *testing.T, mod func(*Scenario)) (*Resolved, error) {
	t.Helper()
	s := Defaults()
	s.Model, s.Hardware = "llama-3.1-8b", "h100"
	mod(&s)
	return s.Resolve()
}

func TestSpeculationResolves(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mod      func(*Scenario)
		k        int
		method   string
		meanLen  float64 // the schedule's mean acceptance length
		lookhead bool
	}{
		{"eagle3 with a preset", func(s *Scenario) {
			s.SpeculativeConfig = `{"method":"eagle3","model":"RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3","num_speculative_tokens":3}`
			s.SpecAcceptance = "vllm-test-llama8b"
		}, 3, "eagle3", 1 + 0.7296 + 0.5208 + 0.3545, true},
		{"eagle3, preset found for the target", func(s *Scenario) {
			s.Model = "meta-llama/Llama-3.1-8B-Instruct"
			s.SpeculativeConfig = `{"method":"eagle3","model":"RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3","num_speculative_tokens":3}`
		}, 3, "eagle3", 1 + 0.7296 + 0.5208 + 0.3545, true},
		{"ngram with a mean length", func(s *Scenario) {
			s.SpeculativeConfig = `{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4}`
			s.SpecAcceptance = "mean:2.5"
		}, 4, "ngram", 2.5, false},
	} {
		r, err := resolveWith(t, tc.mod)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		d, e := r.Deployment.Spec, r.Engine.Spec
		if d.Method != tc.method || d.NumTokens != tc.k || e.NumTokens != tc.k || e.Lookahead != tc.lookhead || e.DropLastHitBlock != (tc.method == "eagle3") {
			t.Errorf("%s: kernel %+v engine k %d lookahead %v", tc.name, d, e.NumTokens, e.Lookahead)
		}
		if got := e.Acceptance.MeanLength(); math.Abs(got-tc.meanLen) > 1e-6 {
			t.Errorf("%s: mean acceptance length %v, want %v", tc.name, got, tc.meanLen)
		}
	}
}

func TestSpeculationBadInput(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Scenario)
		want string
	}{
		{func(s *Scenario) { s.SpecAcceptance = "mean:2" }, "--spec-acceptance \"mean:2\": needs --speculative-config"},
		{func(s *Scenario) { s.SpeculativeConfig = `{"method":"eagle3","num_speculative_tokens":3,"bogus":1}` }, "--speculative-config"},
		{func(s *Scenario) {
			s.SpeculativeConfig = `{"method":"ngram","num_speculative_tokens":3}`
		}, "--spec-acceptance: required: no measured acceptance preset"},
		{func(s *Scenario) {
			s.SpeculativeConfig = `{"method":"ngram","num_speculative_tokens":3}`
			s.SpecAcceptance = "mean:9"
		}, "--spec-acceptance \"mean:9\""},
		{func(s *Scenario) { s.SpeculativeConfig = `{"method":"mtp","num_speculative_tokens":1}` }, "--speculative-config"},
		// EAGLE-1 is not EAGLE-3: the target's eagle3 presets do not stand in.
		{func(s *Scenario) {
			s.Model = "meta-llama/Llama-3.1-8B-Instruct"
			s.SpeculativeConfig = `{"method":"eagle","model":"yuhuili/EAGLE-LLaMA3.1-Instruct-8B","num_speculative_tokens":3}`
		}, "no measured acceptance preset for meta-llama/Llama-3.1-8B-Instruct with method eagle"},
	} {
		_, err := resolveWith(t, tc.mod)
		if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want input error containing %q", err, tc.want)
		}
	}
}

func TestOffloadResolves(t *testing.T) {
	// Llama-3.1-8B, TP1: 32 layers × 8 KV heads × 128 × 2 × 2 bytes = 128 KiB per token.
	const perToken = 131072.0
	for _, tc := range []struct {
		name      string
		mod       func(*Scenario)
		conn      engine.OffloadConnector
		perChunk  int // GPU blocks per chunk
		chunks    int
		store     engine.OffloadStore
		policy    kvtier.Policy
		secondary int
	}{
		// vLLM's OffloadingSpec defaults offload_prompt_only to true.
		{"--kv-offloading-size", func(s *Scenario) { s.KVOffloadingSize = 10 }, engine.OffloadNative, 1, int(10 * (1 << 30) / (perToken * 16)), engine.StorePromptOnly, kvtier.LRU, 0},
		{"OffloadingConnector with a 64-token block and ARC", func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":10737418240,"block_size":64,"eviction_policy":"arc"}}`
		}, engine.OffloadNative, 4, int(10 * (1 << 30) / (perToken * 64)), engine.StorePromptOnly, kvtier.ARC, 0},
		{"OffloadingConnector storing output too", func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":10737418240,"offload_prompt_only":false}}`
		}, engine.OffloadNative, 1, int(10 * (1 << 30) / (perToken * 16)), engine.StoreAll, kvtier.LRU, 0},
		{"MultiConnector, NIXL and CPU, prompt only", func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"num_cpu_blocks":500,"offload_prompt_only":true}}]}}`
		}, engine.OffloadNative, 1, 500, engine.StorePromptOnly, kvtier.LRU, 0},
		{"LMCache with 40 GB per worker", func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
			s.LMCacheMaxLocalCPUSize = 40
		}, engine.OffloadLMCache, 16, int(40 * (1 << 30) / (perToken * 256)), engine.StorePromptOnly, kvtier.LRU, 0},
		{"a filesystem tier behind the CPU", func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":10737418240,"block_size":256,"secondary_tiers":[{"type":"fs","root_dir":"/mnt/kv"}]}}`
			s.KVOffloadStorage = "capacity_gib=100,read_gbps=4,write_gbps=2,latency_ms=0.5"
		}, engine.OffloadNative, 16, int(10 * (1 << 30) / (perToken * 256)), engine.StorePromptOnly, kvtier.LRU, 1},
	} {
		r, err := resolveWith(t, tc.mod)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		o := r.Engine.Offload
		if o == nil {
			t.Fatalf("%s: no offload", tc.name)
		}
		if o.Connector != tc.conn || o.BlocksPerChunk != tc.perChunk || o.CPUChunks != tc.chunks || o.Store != tc.store || o.Policy != tc.policy || len(o.Secondary) != tc.secondary {
			t.Errorf("%s: got %+v", tc.name, *o)
		}
		if o.BlockBytes != int64(perToken*16) || o.LinkBW != r.Chip.HostLinkBW {
			t.Errorf("%s: block bytes %d link %v", tc.name, o.BlockBytes, o.LinkBW)
		}
		if tc.secondary > 0 {
			st := o.Secondary[0]
			if want := int(100 * (1 << 30) / (perToken * 256)); st.Chunks != want || st.ReadBW != 4e9 || st.WriteBW != 2e9 {
				t.Errorf("%s: storage tier %+v, want %d chunks", tc.name, st, want)
			}
			// Each run gets one fresh storage tier its engines share.
			a, b := withStorage(r.Engine, 4), withStorage(r.Engine, 4)
			if a.Offload.Secondary[0].Tier == nil || a.Offload.Secondary[0].Tier == b.Offload.Secondary[0].Tier || o.Secondary[0].Tier != nil {
				t.Errorf("%s: storage tiers not fresh per run", tc.name)
			}
		}
	}
}

func TestOffloadBadInput(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Scenario)
		want string
	}{
		{func(s *Scenario) { s.KVOffloadingBackend = "native" }, "needs --kv-offloading-size"},
		{func(s *Scenario) { s.KVOffloadingSize, s.KVOffloadingBackend = 10, "disk" }, "--kv-offloading-backend \"disk\""},
		{func(s *Scenario) { s.KVOffloadingSize = -1 }, "--kv-offloading-size"},
		{func(s *Scenario) { s.LMCacheMaxLocalCPUSize = 10 }, "needs LMCache"},
		{func(s *Scenario) {
			s.KVOffloadingSize = 10
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1e10}}`
		}, "not both"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`
		}, "cpu_bytes_to_use (or num_cpu_blocks) is required"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1e10,"block_size":24}}`
		}, "multiple of --block-size 16"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1e10,"block_size":64,"blocks_per_chunk":4}}`
		}, "block_size and blocks_per_chunk"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1e10,"secondary_tiers":[{"type":"fs"}]}}`
		}, "--kv-offload-storage: required"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1e10,"secondary_tiers":[{"type":"fs"}]}}`
			s.KVOffloadStorage = "capacity_gib=100,read_gbps=4"
		}, "write_gbps missing"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"LMCacheConnectorV1"},{"kv_connector":"OffloadingConnector","kv_connector_extra_config":{"num_cpu_blocks":5}}]}}`
		}, "two offload connectors"},
		{func(s *Scenario) {
			s.KVOffloadingSize = 10
			s.EnablePrefixCaching = false
		}, "prefix caching"},
	} {
		_, err := resolveWith(t, tc.mod)
		if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want input error containing %q", err, tc.want)
		}
	}
}

func FuzzKVOffloadStorage(f *testing.F) {
	for _, s := range []string{"capacity_gib=100,read_gbps=4,write_gbps=2,latency_ms=0.5", "", "capacity_gib=-1", "a=b=c,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStorage(s, true)
		if err == nil && (st.ReadBW <= 0 || st.WriteBW <= 0 || st.Latency < 0) {
			t.Fatalf("%q accepted as %+v", s, st)
		}
	})
}
