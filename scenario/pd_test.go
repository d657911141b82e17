package scenario

import (
	"strings"
	"testing"
)

func TestPDFlagsBuildPools(t *testing.T) {
	s := Defaults()
	yml := `model: llama-3.1-8b
hardware: h100
prefill-replicas: 2
decode-replicas: 1
prefill-serve: 'max-num-batched-tokens=16384,compilation-config={"cudagraph_mode": "NONE", "cudagraph_capture_sizes": [1, 2]}'
decode-serve: tensor-parallel-size=2
kv-transfer-config: '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
`
	if err := s.ApplyYAML("c.yaml", []byte(yml), nil); err != nil {
		t.Fatal(err)
	}
	if len(s.PrefillServe) != 2 || s.PrefillServe[1].Key != "compilation-config" || !strings.HasSuffix(s.PrefillServe[1].Value, "[1, 2]}") {
		t.Fatalf("prefill-serve = %+v", s.PrefillServe)
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Pools) != 2 || r.Pools[0].Spec.Role != "prefill" || r.Pools[0].Spec.Replicas != 2 || r.Pools[1].Spec.Role != "decode" {
		t.Fatalf("pools %+v", r.Pools)
	}
	if r.Pools[0].Engine.MaxNumBatchedTokens != 16384 || r.Pools[1].Deployment.TP != 2 || r.Pools[0].Deployment.TP != 1 {
		t.Fatalf("per-pool overrides not applied")
	}
	if r.RouterName() != PDRouterName || r.TransferFabric == nil || r.TransferFabric.GPUsPerNode < 1 {
		t.Fatalf("router %q fabric %+v", r.RouterName(), r.TransferFabric)
	}
	cp := r.clusterPools()
	if cp[1].GPUs != 2 || cp[1].KVBlockBytes <= 0 {
		t.Fatalf("cluster pools %+v", cp)
	}
	// Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes per token.
	if want := 131072.0 * float64(cp[0].Engine.BlockSize); cp[0].KVBlockBytes != want {
		t.Errorf("KV block bytes %v, want %v", cp[0].KVBlockBytes, want)
	}
}

func TestPDBadInput(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Scenario)
		want string
	}{
		{func(s *Scenario) { s.PrefillReplicas = 1 }, "--prefill-replicas"},
		{func(s *Scenario) { s.PrefillReplicas, s.DecodeReplicas = 1, -1 }, "--decode-replicas \"-1\""},
		{func(s *Scenario) { s.PrefillReplicas, s.DecodeReplicas, s.Replicas = 1, 1, 2 }, "either --replicas or --prefill-replicas"},
		{func(s *Scenario) {
			s.PrefillReplicas, s.DecodeReplicas = 1, 1
			s.Pools = []PoolSpec{{Name: "a", Replicas: 1, Role: "both"}}
		}, "either --pools or --prefill-replicas"},
		{func(s *Scenario) { s.DecodeServe = []KV{{Key: "max-num-seqs", Value: "8"}} }, "--decode-serve"},
		{func(s *Scenario) { s.KVTransferConfig = `{"kv_connector":"NixlConnector"}` }, "kv_role is missing"},
		{func(s *Scenario) { s.KVTransferConfig = `{"kv_connector":"Nixl","kv_role":"kv_both"}` }, `kv_connector "Nixl": one of`},
		{func(s *Scenario) { s.KVTransferConfig = `{"kv_connector":"NixlConnector","kv_role":"both"}` }, `kv_role "both"`},
		{func(s *Scenario) { s.KVTransferConfig = `{"kv_connector":"NixlConnector","kv_rol":"kv_both"}` }, `unknown field "kv_rol"`},
		{func(s *Scenario) { s.KVTransferConfig = `{"kv_connector":"MultiConnector","kv_role":"kv_both"}` }, "connectors"},
		{func(s *Scenario) { s.KVTransferConfig = `nixl` }, "not vLLM's KVTransferConfig JSON"},
		{func(s *Scenario) { s.All2AllBackend = "deepep" }, "--all2all-backend \"deepep\": one of"},
		{func(s *Scenario) {
			s.PrefillReplicas, s.DecodeReplicas = 1, 1
			s.KVTransferConfig = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
		}, "pools.prefill.kv-transfer-config"},
	} {
		s := Defaults()
		tc.mod(&s)
		_, err := s.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !IsInputError(err) {
			t.Errorf("err %v, want input error %q", err, tc.want)
		}
	}
}

func TestKVTransferConfigAccepted(t *testing.T) {
	for _, tc := range []struct {
		cfg     string
		pd      bool
		offload string // the offload connector found
		note    string
	}{
		{`{"kv_connector":"NixlConnector","kv_role":"kv_both"}`, true, "", ""},
		{`{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}]}}`, true, "LMCacheConnectorV1", ""},
		{`{"kv_connector":"P2pNcclConnector","kv_role":"kv_producer","kv_port":21001,"kv_connector_extra_config":{"proxy_port":30001}}`, true, "", "simulated as NixlConnector"},
		{`{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"num_cpu_blocks":1000}}`, false, "OffloadingConnector", ""},
		{`{"kv_connector":"SharedStorageConnector","kv_role":"kv_both"}`, false, "", "not modelled"},
	} {
		info, err := parseKVTransfer(tc.cfg)
		name := ""
		if info.offload != nil {
			name = info.offload.name
		}
		if err != nil || info.pd != tc.pd || name != tc.offload || (tc.note != "" && !strings.Contains(strings.Join(info.notes, "|"), tc.note)) {
			t.Errorf("%s: info %+v err %v", tc.cfg, info, err)
		}
	}
}

func FuzzKVTransferConfig(f *testing.F) {
	for _, s := range []string{`{"kv_connector":"NixlConnector","kv_role":"kv_both"}`, `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"MultiConnector","kv_connector_extra_config":{"connectors":[1]}}]}}`, "{}", "[]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		info, err := parseKVTransfer(s)
		if err != nil && !IsInputError(err) {
			t.Fatalf("%q: %v is not an input error", s, err)
		}
		_ = info
	})
}

func FuzzServeSettings(f *testing.F) {
	for _, s := range []string{"tensor-parallel-size=2", "a=1,b=2", `compilation-config={"a": [1,2]}`, "=", ",,", "max-num-seqs=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var kv []KV
		if err := (serveKVsValue{&kv}).Set(s); err != nil {
			return
		}
		var again []KV
		if err := (serveKVsValue{&again}).Set(serveKVsValue{&kv}.String()); err != nil || len(again) != len(kv) {
			t.Fatalf("%q: round trip %v %v", s, again, err)
		}
	})
}
