package scenario

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"blis/engine"
	"blis/router"
)

// Prefill/decode disaggregation settings: --prefill-replicas and
// --decode-replicas build a prefill pool and a decode pool of the
// top-level deployment (--prefill-serve and --decode-serve override its
// serve settings per pool), --kv-transfer-config is vLLM's connector
// config, --fabric the network the KV crosses. cluster/pd.go runs the
// requests.

// serveKVsValue is --prefill-serve / --decode-serve: vllm serve settings
// as KEY=VALUE pairs separated by commas (commas inside brackets, braces
// or quotes belong to the value, so a JSON value fits).
type serveKVsValue struct{ p *[]KV }

func (v serveKVsValue) Type() string { return "settings" }

func (v serveKVsValue) String() string {
	parts := make([]string, len(*v.p))
	for i, kv := range *v.p {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, ",")
}

func (v serveKVsValue) Set(s string) error {
	var out []KV
	seen := map[string]bool{}
	for _, item := range splitTopLevel(s) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, val, ok := strings.Cut(item, "=")
		key := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(k), "--"), "_", "-")
		if !ok || key == "" {
			return fmt.Errorf("%s: each setting is KEY=VALUE, e.g. tensor-parallel-size=2", quote(item))
		}
		if seen[key] {
			return fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		val = strings.TrimSpace(val)
		if err := checkServeSetting(key, val); err != nil {
			return err
		}
		out = append(out, KV{Key: key, Value: val})
	}
	*v.p = out
	return nil
}

// splitTopLevel splits s at commas outside brackets, braces and quotes.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	var inQuote rune
	for i, c := range s {
		switch {
		case inQuote != 0:
			if c == inQuote {
				inQuote = 0
			}
		case c == '"' || c == '\'':
			inQuote = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// checkServeSetting checks that key is a vllm serve setting a pool may
// override and that val is a value it takes.
func checkServeSetting(key, val string) error {
	if key == "model" {
		return fmt.Errorf("model: every pool serves the scenario's model (set model at the top level)")
	}
	names := poolServeNames()
	if !slices.Contains(names, key) {
		return fmt.Errorf("unknown vllm serve key %s%s", quote(key), suggest(key, names))
	}
	if err := checkServeValue(key, val); err != nil {
		return fmt.Errorf("%s: %v", key, err)
	}
	return nil
}

// poolServeNames are the vllm serve settings a pool may override: the
// serve group but model, which every pool shares.
func poolServeNames() []string {
	var probe Scenario
	var names []string
	for _, st := range probe.Settings() {
		if st.Group == "serve" && st.Name != "model" {
			names = append(names, st.Name)
		}
	}
	return names
}

// checkServeValue sets key to val on a scratch scenario, so a bad value
// is caught where the pool writes it rather than when the pool is built.
func checkServeValue(key, val string) error {
	scratch := Defaults()
	return setNamed(scratch.Settings(), key, val)
}

// setNamed sets the setting called key to val; a key no setting has is
// left alone.
func setNamed(sets []Setting, key, val string) error {
	for _, st := range sets {
		if st.Name == key {
			if err := st.Value.Set(val); err != nil {
				return err
			}
		}
	}
	return nil
}

// pdPools turns --prefill-replicas / --decode-replicas into the pools
// they stand for, or checks that none of those flags is given.
func (s *Scenario) pdPools() error {
	if s.PrefillReplicas == 0 && s.DecodeReplicas == 0 {
		switch {
		case len(s.PrefillServe) > 0:
			return bad("prefill-serve", serveKVsValue{&s.PrefillServe}.String(), "needs --prefill-replicas and --decode-replicas")
		case len(s.DecodeServe) > 0:
			return bad("decode-serve", serveKVsValue{&s.DecodeServe}.String(), "needs --prefill-replicas and --decode-replicas")
		}
		return nil
	}
	for _, c := range []struct {
		key string
		n   int
	}{{"prefill-replicas", s.PrefillReplicas}, {"decode-replicas", s.DecodeReplicas}} {
		if c.n < 1 || c.n > MaxReplicas {
			return bad(c.key, fmt.Sprint(c.n), fmt.Sprintf("an integer from 1 to %d; disaggregation needs both --prefill-replicas and --decode-replicas", MaxReplicas))
		}
	}
	switch {
	case len(s.Pools) > 0:
		return bad("prefill-replicas", fmt.Sprint(s.PrefillReplicas), "give either --pools or --prefill-replicas/--decode-replicas, not both")
	case s.Replicas != 1:
		return bad("replicas", fmt.Sprint(s.Replicas), "give either --replicas or --prefill-replicas/--decode-replicas")
	}
	s.Pools = []PoolSpec{
		{Name: "prefill", Replicas: s.PrefillReplicas, Role: "prefill", Serve: s.PrefillServe},
		{Name: "decode", Replicas: s.DecodeReplicas, Role: "decode", Serve: s.DecodeServe},
	}
	return nil
}

// kvTransfer is vLLM's KVTransferConfig (vllm/config/kv_transfer.py,
// v0.11), every field, so a config vLLM accepts parses and a misspelt key
// does not.
type kvTransfer struct {
	KVConnector           string         `json:"kv_connector"`
	EngineID              string         `json:"engine_id"`
	KVBufferDevice        string         `json:"kv_buffer_device"`
	KVBufferSize          float64        `json:"kv_buffer_size"`
	KVRole                string         `json:"kv_role"`
	KVRank                *int           `json:"kv_rank"`
	KVParallelSize        int            `json:"kv_parallel_size"`
	KVIP                  string         `json:"kv_ip"`
	KVPort                int            `json:"kv_port"`
	KVConnectorExtra      map[string]any `json:"kv_connector_extra_config"`
	KVConnectorModulePath string         `json:"kv_connector_module_path"`
	EnablePermuteLocalKV  bool           `json:"enable_permute_local_kv"`
	KVLoadFailurePolicy   string         `json:"kv_load_failure_policy"`
}

// kvConnectors are the connectors vLLM's KVConnectorFactory registers
// (v0.11; MooncakeStoreConnector since), by what BLIS does with them.
var (
	pdConnectors      = []string{"NixlConnector", "P2pNcclConnector", "MooncakeConnector"}
	offloadConnectors = []string{"LMCacheConnectorV1", "OffloadingConnector", "MooncakeStoreConnector", "SharedStorageConnector", "LMCacheMPConnector"}
)

// connectorInfo is what a --kv-transfer-config means to BLIS: whether it
// moves KV between prefill and decode replicas, and notes on what it does
// that BLIS does not model.
type connectorInfo struct {
	pd      bool
	offload *offloadConn // an offload connector (offload.go)
	notes   []string
}

// parseKVTransfer parses --kv-transfer-config strictly.
func parseKVTransfer(s string) (connectorInfo, error) {
	var info connectorInfo
	if strings.TrimSpace(s) == "" {
		return info, nil
	}
	err := info.add(s, []byte(s), 0)
	return info, err
}

func (info *connectorInfo) add(flag string, data []byte, depth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c kvTransfer
	if err := dec.Decode(&c); err != nil {
		return bad("kv-transfer-config", flag, "not vLLM's KVTransferConfig JSON (keys kv_connector, kv_role, kv_connector_extra_config, …): "+err.Error())
	}
	roles := []string{"kv_producer", "kv_consumer", "kv_both"}
	switch {
	case c.KVConnector == "":
		return bad("kv-transfer-config", flag, "kv_connector is missing: one of "+strings.Join(knownConnectors(), ", "))
	case c.KVRole == "" && depth == 0:
		return bad("kv-transfer-config", flag, "kv_role is missing (vLLM requires it with kv_connector): one of "+strings.Join(roles, ", "))
	case c.KVRole != "" && !slices.Contains(roles, c.KVRole):
		return bad("kv-transfer-config", flag, "kv_role "+quote(c.KVRole)+": one of "+strings.Join(roles, ", "))
	}
	switch {
	case c.KVConnector == "MultiConnector":
		raw, ok := c.KVConnectorExtra["connectors"].([]any)
		if !ok || len(raw) == 0 {
			return bad("kv-transfer-config", flag, `MultiConnector needs kv_connector_extra_config.connectors, a list of connector configs`)
		}
		for _, sub := range raw {
			b, _ := json.Marshal(sub)
			if err := info.add(flag, b, depth+1); err != nil {
				return err
			}
		}
	case c.KVConnectorModulePath != "":
		info.notes = append(info.notes, fmt.Sprintf("INFO --kv-transfer-config: connector %s from %s is not modelled: BLIS moves disaggregated KV as NixlConnector does", c.KVConnector, c.KVConnectorModulePath))
		info.pd = true
	case c.KVConnector == "NixlConnector":
		info.pd = true
	case slices.Contains(pdConnectors, c.KVConnector):
		info.pd = true
		info.notes = append(info.notes, fmt.Sprintf("INFO --kv-transfer-config: %s is simulated as NixlConnector's transfer (the decode engine reads the prompt's blocks after the prefill)", c.KVConnector))
	case c.KVConnector == "OffloadingConnector" || c.KVConnector == "LMCacheConnectorV1" || c.KVConnector == mooncakeConnector:
		if info.offload != nil {
			return bad("kv-transfer-config", flag, "two offload connectors ("+info.offload.name+", "+c.KVConnector+"): vLLM's MultiConnector runs at most one that loads a request's KV")
		}
		kind := engine.OffloadNative
		if c.KVConnector == "LMCacheConnectorV1" {
			kind = engine.OffloadLMCache
		}
		info.offload = &offloadConn{kind: kind, name: c.KVConnector, role: c.KVRole, extra: c.KVConnectorExtra}
	case slices.Contains(offloadConnectors, c.KVConnector):
		info.notes = append(info.notes, fmt.Sprintf("INFO --kv-transfer-config: %s (KV offload to CPU or storage) is accepted and not modelled", c.KVConnector))
	default:
		return bad("kv-transfer-config", flag, "kv_connector "+quote(c.KVConnector)+": one of "+strings.Join(knownConnectors(), ", ")+" (or a custom one with kv_connector_module_path)")
	}
	return nil
}

func knownConnectors() []string {
	out := append(append([]string{"MultiConnector"}, pdConnectors...), offloadConnectors...)
	sort.Strings(out)
	return out
}

// pdEPPConfig is llm-d's P/D EndpointPickerConfig, the router a
// scenario with a prefill pool gets when it names none:
// llm-d-inference-scheduler deploy/config/pd-epp-config.yaml @ 520af478
// (Apache-2.0).
//
//go:embed pd-epp-config.yaml
var pdEPPConfig []byte

// PDRouterName is how reports name that default.
const PDRouterName = "llm-d P/D (pd-epp-config)"

func loadPDRouter() (*router.Config, error) { return router.Load(pdEPPConfig, "builtin:pd-epp-config") }
