package scenario

import (
	"strings"
	"testing"

	"blis/engine"
	"blis/kvtier"
)

const mooncakeConn = `{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}`

func TestParseMooncakeConfig(t *testing.T) {
	for _, tc := range []struct {
		text          string
		segment, buf  int64
		protocol      string
		enableOffload bool
	}{
		{`{"mode":"embedded","global_segment_size":"80GB","local_buffer_size":"4GB","protocol":"rdma","metadata_server":"P2PHANDSHAKE","master_server_address":"mooncake-master:50051","device_name":""}`, 80 << 30, 4 << 30, "rdma", false},
		{`{}`, 4 << 30, 4 << 30, "rdma", false},
		{`{"global_segment_size":1073741824,"local_buffer_size":" 512 mb ","protocol":"tcp","enable_offload":true}`, 1 << 30, 512 << 20, "tcp", true},
		{`{"global_segment_size":"1.5GB","local_buffer_size":"4096"}`, 3 << 29, 4096, "rdma", false},
		{`{"global_segment_size":"2Gb","local_hostname":"10.0.0.1"}`, 2 << 30, 4 << 30, "rdma", false},
	} {
		c, err := parseMooncakeConfig(tc.text)
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		if c.GlobalSegmentSize != tc.segment || c.LocalBufferSize != tc.buf || c.Protocol != tc.protocol || c.EnableOffload != tc.enableOffload || c.Mode != "embedded" {
			t.Errorf("%s: got %+v", tc.text, c)
		}
	}
}

func TestParseMooncakeConfigErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{``, "not a JSON object"},
		{`[]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{`{} {}`, "text after"},
		{`{"global_segmet_size":"80GB"}`, `unknown key "global_segmet_size"`},
		{`{"global_segment_size":"80 GiB"}`, `global_segment_size "80 GiB"`},
		{`{"global_segment_size":"1.2.3GB"}`, `global_segment_size "1.2.3GB"`},
		{`{"global_segment_size":-5}`, "global_segment_size -5"},
		{`{"global_segment_size":"0"}`, "global_segment_size 0"},
		{`{"global_segment_size":true}`, "global_segment_size true"},
		{`{"local_buffer_size":0}`, "local_buffer_size 0"},
		{`{"mode":"standalone-store","global_segment_size":0}`, "mode standalone-store"},
		{`{"mode":"cluster"}`, `mode "cluster"`},
		{`{"protocol":"nvmeof"}`, `protocol "nvmeof"`},
		{`{"protocol":5}`, "protocol 5: a string"},
		{`{"protocol":null}`, "protocol null"},
		{`{"enable_offload":"yes"}`, "enable_offload"},
	} {
		_, err := parseMooncakeConfig(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one containing %q", tc.text, err, tc.want)
		}
	}
}

func FuzzMooncakeConfig(f *testing.F) {
	for _, s := range []string{`{"mode":"embedded","global_segment_size":"80GB","local_buffer_size":"4GB","protocol":"rdma"}`, `{}`, `{"global_segment_size":1e30}`, `{"local_buffer_size":"9999999999999GB"}`, `{"a":1}`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseMooncakeConfig(s)
		if err == nil && (c.GlobalSegmentSize <= 0 || c.LocalBufferSize <= 0 || c.Mode != "embedded" || (c.Protocol != "rdma" && c.Protocol != "tcp")) {
			t.Fatalf("%q accepted as %+v", s, c)
		}
	})
}

func TestMooncakeResolves(t *testing.T) {
	// Llama-3.1-8B: 128 KiB per token, so a 16-token block is 2 MiB per GPU.
	const blockBytes = 2 << 20
	for _, tc := range []struct {
		name      string
		mod       func(*Scenario)
		perEngine int
		engines   int
	}{
		{"80GB segments, TP1", func(s *Scenario) {
			s.KVTransferConfig = mooncakeConn
			s.MooncakeConfig = `{"mode":"embedded","global_segment_size":"80GB","local_buffer_size":"4GB","protocol":"rdma"}`
		}, 80 << 30 / blockBytes, 4},
		{"vLLM's default segment, inside a MultiConnector with NIXL", func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"NixlConnector","kv_role":"kv_both"},{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_connector_extra_config":{"load_async":true}}]}}`
			s.MooncakeConfig = `{}`
		}, 4 << 30 / blockBytes, 2},
		{"TP2: each rank's segment holds its half of a block", func(s *Scenario) {
			s.TensorParallelSize = 2
			s.KVTransferConfig = mooncakeConn
			s.MooncakeConfig = `{"global_segment_size":"8GB"}`
		}, 8 << 30 / (blockBytes / 2), 3},
	} {
		r, err := resolveWith(t, tc.mod)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		o := r.Engine.Offload
		if o == nil {
			t.Fatalf("%s: no offload", tc.name)
		}
		if o.Connector != engine.OffloadNative || o.BlocksPerChunk != 1 || o.Store != engine.StorePromptOnly || o.Policy != kvtier.LRU || len(o.Secondary) != 0 || o.LinkBW != r.Chip.InterNode {
			t.Errorf("%s: got %+v", tc.name, *o)
		}
		p, ok := o.CPU.(*pooledTier)
		if !ok || p.perEngine != tc.perEngine || o.CPUChunks != tc.perEngine {
			t.Fatalf("%s: store %+v, want %d blocks per engine", tc.name, o.CPU, tc.perEngine)
		}
		// Each run gets one fresh store of every engine's segments.
		a, b := withStorage(r.Engine, tc.engines), withStorage(r.Engine, tc.engines)
		if a.Offload.CPU == b.Offload.CPU || a.Offload.CPU == o.CPU {
			t.Errorf("%s: Mooncake store not fresh per run", tc.name)
		}
		if _, pooled := a.Offload.CPU.(*pooledTier); pooled {
			t.Errorf("%s: run's store still the resolve-time one", tc.name)
		}
		if !strings.Contains(strings.Join(r.Notes, "\n"), "MooncakeStoreConnector") {
			t.Errorf("%s: no note on the Mooncake store: %v", tc.name, r.Notes)
		}
		// The run's store holds engines × per-engine blocks and no more.
		hs := make([]uint64, tc.perEngine*tc.engines+1)
		for i := range hs {
			hs[i] = uint64(i + 1)
		}
		stored, _, ok := a.Offload.CPU.PrepareStore(hs[:len(hs)-1], nil)
		if !ok || len(stored) != len(hs)-1 {
			t.Fatalf("%s: store of %d blocks took %d (ok %v)", tc.name, len(hs)-1, len(stored), ok)
		}
		a.Offload.CPU.CompleteStore(stored)
		if _, evicted, _ := a.Offload.CPU.PrepareStore(hs[len(hs)-1:], nil); evicted != 1 {
			t.Errorf("%s: a full store evicted %d for one more block, want 1", tc.name, evicted)
		}
	}
}

func TestLMCacheDiskResolves(t *testing.T) {
	// LMCache's 256-token chunk of Llama-3.1-8B: 32 MiB per GPU.
	const chunkBytes = 32 << 20
	r, err := resolveWith(t, func(s *Scenario) {
		s.KVTransferConfig = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
		s.LMCacheMaxLocalCPUSize = 20
		s.LMCacheMaxLocalDiskSize = 1120
		s.KVOffloadStorage = "read_gbps=6,write_gbps=3,latency_ms=0.1"
	})
	if err != nil {
		t.Fatal(err)
	}
	o := r.Engine.Offload
	if o == nil || o.Connector != engine.OffloadLMCache || len(o.Secondary) != 1 {
		t.Fatalf("got %+v", o)
	}
	d := o.Secondary[0]
	if d.Name != lmcacheDiskTier || d.Chunks != 1120<<30/chunkBytes || d.ReadBW != 6e9 || d.WriteBW != 3e9 || d.Latency.Microseconds() != 100 || d.Tier != nil {
		t.Errorf("disk tier %+v", d)
	}
	// LMCache's disk is each engine's own: a run leaves it to the engine.
	if a := withStorage(r.Engine, 4); a.Offload.Secondary[0].Tier != nil || a.Offload.CPU != nil {
		t.Errorf("LMCache's disk or CPU tier shared between engines: %+v", a.Offload)
	}
	if _, err := engine.New(withStorage(r.Engine, 1)); err != nil {
		t.Errorf("engine refused the config: %v", err)
	}
}

func TestMooncakeAndDiskBadInput(t *testing.T) {
	lmcache := func(s *Scenario) { s.KVTransferConfig = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}` }
	for _, tc := range []struct {
		mod  func(*Scenario)
		want string
	}{
		{func(s *Scenario) { s.KVTransferConfig = mooncakeConn }, "--mooncake-config: required with MooncakeStoreConnector"},
		{func(s *Scenario) {
			s.KVTransferConfig = mooncakeConn
			s.MooncakeConfig = `{"global_segment_size":"80GiB"}`
		}, `--mooncake-config`},
		{func(s *Scenario) {
			s.KVTransferConfig = mooncakeConn
			s.MooncakeConfig = `{"global_segment_size":"1MB"}`
		}, "holds no 16-token block"},
		{func(s *Scenario) { s.MooncakeConfig = `{}` }, "--mooncake-config"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_connector_extra_config":{"load_async":false}}`
			s.MooncakeConfig = `{}`
		}, "load_async false"},
		{func(s *Scenario) {
			s.KVTransferConfig = mooncakeConn
			s.MooncakeConfig = `{}`
			s.KVOffloadingSize = 10
		}, "not both"},
		{func(s *Scenario) {
			s.KVTransferConfig = `{"kv_connector":"MultiConnector","kv_role":"kv_both","kv_connector_extra_config":{"connectors":[{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"},{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}]}}`
			s.MooncakeConfig = `{}`
		}, "two offload connectors"},
		{func(s *Scenario) { s.LMCacheMaxLocalDiskSize = 100 }, `--lmcache-max-local-disk-size "100": needs LMCache`},
		{func(s *Scenario) { lmcache(s); s.LMCacheMaxLocalDiskSize = -1 }, `--lmcache-max-local-disk-size "-1"`},
		{func(s *Scenario) { lmcache(s); s.LMCacheMaxLocalDiskSize = 100 }, "--kv-offload-storage: required with --lmcache-max-local-disk-size"},
		{func(s *Scenario) {
			lmcache(s)
			s.LMCacheMaxLocalDiskSize = 100
			s.KVOffloadStorage = "capacity_gib=100,read_gbps=4,write_gbps=2,latency_ms=0.5"
		}, "sized by --lmcache-max-local-disk-size"},
		{func(s *Scenario) {
			lmcache(s)
			s.LMCacheMaxLocalDiskSize = 0.001
			s.KVOffloadStorage = "read_gbps=4,write_gbps=2,latency_ms=0.5"
		}, "holds no 256-token chunk"},
	} {
		_, err := resolveWith(t, tc.mod)
		if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want input error containing %q", err, tc.want)
		}
	}
}

// TestMooncakeStoreSharedAcrossReplicas: under round-robin routing a
// group's shared prompt reaches every replica; with a per-engine CPU tier
// each replica first computes it itself (its own GPU cache serves the
// repeats), while the Mooncake store one replica wrote serves the others'
// first visits as external hits.
func TestMooncakeStoreSharedAcrossReplicas(t *testing.T) {
	base := Defaults()
	base.Model, base.Hardware = "llama-3.1-8b", "h100"
	base.Replicas = 4
	base.Router = "round-robin"
	base.MaxConcurrency = 4
	base.DatasetName = "shared_prefix"
	base.SharedPrefix.NumGroups = 6
	base.SharedPrefix.NumPromptsPerGroup = 12
	base.SharedPrefix.SystemPromptLen = 3000
	base.SharedPrefix.QuestionLen = 200
	base.SharedPrefix.OutputLen = 16

	native, moon := base, base
	native.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":8589934592}}`
	moon.KVTransferConfig = mooncakeConn
	moon.MooncakeConfig = `{"global_segment_size":"8GB"}`
	nOut, nRes := runScenario(t, native)
	mOut, mRes := runScenario(t, moon)
	nh, mh := nOut.Engine.ExternalPrefixHits, mOut.Engine.ExternalPrefixHits
	t.Logf("external hit tokens: CPU tier %d, Mooncake %d; mean TTFT %.1f vs %.1f ms", nh, mh, nRes.TTFT.Mean, mRes.TTFT.Mean)
	// Each group's prompt is new to 3 of the 4 replicas after its first
	// request: about 3 × 6 × 3000 tokens the store can serve.
	if mh < 3*6*3000/2 || mh <= 2*nh {
		t.Errorf("Mooncake external hits %d tokens, want most of %d and well above the CPU tier's %d", mh, 3*6*3000, nh)
	}
	if mRes.TTFT.Mean >= nRes.TTFT.Mean {
		t.Errorf("Mooncake mean TTFT %.1f ms should beat the per-engine CPU tier's %.1f ms", mRes.TTFT.Mean, nRes.TTFT.Mean)
	}
}

func TestMooncakeNotes(t *testing.T) {
	for _, tc := range []struct {
		conn, config, want string
	}{
		{`{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_consumer"}`, `{}`, "kv_role kv_consumer"},
		{mooncakeConn, `{"enable_offload":true}`, "enable_offload (Mooncake's SSD tier)"},
		{`{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both","kv_connector_extra_config":{"cache_prefix":"a","replica_num":2}}`, `{}`, "not modelled: replica_num"},
	} {
		r, err := resolveWith(t, func(s *Scenario) { s.KVTransferConfig, s.MooncakeConfig = tc.conn, tc.config })
		if err != nil {
			t.Fatalf("%s: %v", tc.conn, err)
		}
		if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, tc.want) {
			t.Errorf("%s %s: notes %q, want %q", tc.conn, tc.config, notes, tc.want)
		}
	}
}
