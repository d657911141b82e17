package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"blis/kernel"
)

// engramKeys are vllm/config/engram.py EngramConfig's fields (vLLM's
// DeepSeek-V4.1 support, Sept 2026) and what BLIS does with each.
var engramKeys = map[string]string{
	"cpu_offload":                    "tables in pinned host memory, read over UVA (default true)",
	"enable_engram_dp_sharding":      "hash heads split over the node-local DP ranks (default true)",
	"enable_engram_dp_shared_memory": "one host copy per node for every DP rank (default false)",
	"embedding_across_dp":            "Qwen4Exp only; no effect on DeepSeek-V4.1's Engram",
}

// parseEngramConfig reads --engram-config, vLLM's EngramConfig as JSON
// (e.g. '{"cpu_offload":true}'), strictly: unknown keys and non-boolean
// values are errors. Unset keys keep vLLM's defaults. "" means the flag is
// absent (nil: the defaults).
func parseEngramConfig(flag string) (*kernel.EngramPlacement, error) {
	if strings.TrimSpace(flag) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(flag)))
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil || dec.More() || raw == nil {
		msg := "not a JSON object"
		if err != nil {
			msg = "not a JSON object: " + err.Error()
		}
		return nil, bad("engram-config", flag, msg+` (vLLM's EngramConfig, e.g. '{"cpu_offload":true}')`)
	}
	p := kernel.DefaultEngramPlacement()
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if _, known := engramKeys[k]; !known {
			return nil, bad("engram-config", flag, fmt.Sprintf("unknown key %q (allowed: %s)", k, strings.Join(slices.Sorted(maps.Keys(engramKeys)), ", ")))
		}
		v, ok := raw[k].(bool)
		if !ok {
			return nil, bad("engram-config", flag, fmt.Sprintf("%s is %v, want true or false", k, raw[k]))
		}
		switch k {
		case "cpu_offload":
			p.CPUOffload = v
		case "enable_engram_dp_sharding":
			p.DPSharding = v
		case "enable_engram_dp_shared_memory":
			p.DPSharedMemory = v
		}
	}
	return &p, nil
}
