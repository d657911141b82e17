package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"blis/engine"
	"blis/kvtier"
)

// MooncakeStoreConnector, as vLLM runs it (vLLM main of late 2026,
// vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/:
// scheduler.py MooncakeStoreScheduler, worker.py MooncakeStoreConfig and
// the store worker; adapted upstream from vllm-ascend's kv_pool):
//
//   - The store is Mooncake's distributed KV pool. In mode "embedded" every
//     GPU worker (each TP/PP rank of each engine) mounts global_segment_size
//     bytes of its host DRAM into one pool; every worker reads and writes any
//     segment through Mooncake's transfer engine (RDMA from and to the
//     registered GPU KV cache, or TCP).
//   - Keys are one per vLLM block (ChunkedTokenDatabase over the scheduler's
//     block_size) and per rank (the key carries tp_rank/pp_rank): each rank
//     stores its shard of every block.
//   - Loads are asynchronous (load_async, default true; the worker asserts
//     it): get_num_new_matched_tokens returns (hit, load_async), so the
//     request waits for its KV, as with the OffloadingConnector.
//   - Stores: only the prompt's blocks (build_connector_meta skips a
//     request once num_computed_tokens reaches its prefill end), issued
//     after each step; a finished request's blocks are freed when its stores
//     are done (request_finished delays the free).
//
// BLIS models this with the engine's native connector semantics: chunks of
// one GPU block, prompt only, and the "CPU" tier replaced by the one store
// every engine of the pool shares (pooledTier), of capacity
// engines × global_segment_size per rank, read and written over each GPU's
// NIC (the chip's InterNode bandwidth) in each direction. Mooncake places a
// block in any worker's segment, so with N engines only 1/N of a request's
// blocks sit in its own segment; BLIS treats every segment as remote (the
// transfer engine moves local segments through the same transport), and
// does not model a remote NIC's contention or Mooncake's SSD offload.

// mooncakeConnector is the connector's name in --kv-transfer-config.
const mooncakeConnector = "MooncakeStoreConnector"

// mooncakeDefaultSegment and mooncakeDefaultBuffer are vLLM's defaults for
// global_segment_size and local_buffer_size (worker.py, 4 GiB each).
const (
	mooncakeDefaultSegment = 4 << 30
	mooncakeDefaultBuffer  = 4 << 30
)

// mooncakeConfig is mooncake_config.json (MOONCAKE_CONFIG_PATH), the
// fields vLLM's MooncakeStoreConfig.from_file reads plus Mooncake's own
// local_hostname.
type mooncakeConfig struct {
	MetadataServer      string
	MasterServerAddress string
	Protocol            string // rdma or tcp
	DeviceName          string
	LocalHostname       string
	Mode                string // embedded or standalone-store
	GlobalSegmentSize   int64  // bytes per GPU worker
	LocalBufferSize     int64  // bytes per GPU worker
	EnableOffload       bool   // Mooncake's SSD tier (not modelled)
}

// mooncakeKeys are mooncake_config.json's keys; any other is an error, so
// a misspelt size does not fall back to a default unnoticed.
var mooncakeKeys = []string{"device_name", "enable_offload", "global_segment_size", "local_buffer_size", "local_hostname", "master_server_address", "metadata_server", "mode", "protocol"}

// mooncakeSize is vLLM's _parse_size: a number with an optional unit
// gb, mb, kb or b (case-insensitive, binary multiples).
var mooncakeSize = regexp.MustCompile(`^\s*([0-9.]+)\s*(gb|mb|kb|b)?\s*$`)

// parseMooncakeSize reads a size: a JSON integer of bytes or a string
// such as "80GB".
func parseMooncakeSize(key string, raw json.RawMessage) (int64, error) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		v, err := n.Float64() // vLLM's int(value) truncates
		if err != nil || !(v >= 0) || v >= 1<<62 {
			return 0, fmt.Errorf("%s %s: a number of bytes ≥ 0, or a size such as \"80GB\"", key, raw)
		}
		return int64(v), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("%s %s: a number of bytes or a size such as \"80GB\"", key, raw)
	}
	m := mooncakeSize.FindStringSubmatch(strings.ToLower(s))
	f, mult := math.NaN(), 1.0
	if m != nil {
		if v, err := strconv.ParseFloat(m[1], 64); err == nil { // "1.2.3" stays NaN
			f = v
		}
		switch m[2] {
		case "gb":
			mult = 1 << 30
		case "mb":
			mult = 1 << 20
		case "kb":
			mult = 1 << 10
		}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f*mult >= 1<<62 {
		return 0, fmt.Errorf("%s %q: a size such as \"80GB\", \"512MB\" or a number of bytes (units gb, mb, kb, b)", key, s)
	}
	return int64(f * mult), nil
}

// parseMooncakeConfig reads mooncake_config.json's text strictly: unknown
// keys, wrong types and the combinations vLLM's MooncakeStoreConfig
// rejects are errors; absent keys take vLLM's defaults.
func parseMooncakeConfig(text string) (mooncakeConfig, error) {
	c := mooncakeConfig{Protocol: "rdma", Mode: "embedded", GlobalSegmentSize: mooncakeDefaultSegment, LocalBufferSize: mooncakeDefaultBuffer}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return c, fmt.Errorf("not a JSON object: %v", err)
	}
	if raw == nil {
		return c, fmt.Errorf("not a JSON object")
	}
	if dec.More() {
		return c, fmt.Errorf("text after the JSON object")
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	str := func(k string, dst *string) error {
		if err := json.Unmarshal(raw[k], dst); err != nil {
			return fmt.Errorf("%s %s: a string", k, raw[k])
		}
		return nil
	}
	for _, k := range keys {
		var err error
		if bytes.Equal(bytes.TrimSpace(raw[k]), []byte("null")) {
			return c, fmt.Errorf("%s null: give a value or leave the key out", k)
		}
		switch k {
		case "metadata_server":
			err = str(k, &c.MetadataServer)
		case "master_server_address":
			err = str(k, &c.MasterServerAddress)
		case "protocol":
			err = str(k, &c.Protocol)
		case "device_name":
			err = str(k, &c.DeviceName)
		case "local_hostname":
			err = str(k, &c.LocalHostname)
		case "mode":
			err = str(k, &c.Mode)
		case "global_segment_size":
			c.GlobalSegmentSize, err = parseMooncakeSize(k, raw[k])
		case "local_buffer_size":
			c.LocalBufferSize, err = parseMooncakeSize(k, raw[k])
		case "enable_offload":
			if e := json.Unmarshal(raw[k], &c.EnableOffload); e != nil {
				err = fmt.Errorf("%s %s: true or false", k, raw[k])
			}
		default:
			err = fmt.Errorf("unknown key %q: Mooncake's config keys are %s", k, strings.Join(mooncakeKeys, ", "))
		}
		if err != nil {
			return c, err
		}
	}
	switch {
	case c.Mode != "embedded" && c.Mode != "standalone-store":
		return c, fmt.Errorf("mode %q: embedded or standalone-store", c.Mode)
	case c.Mode == "standalone-store":
		return c, fmt.Errorf("mode standalone-store: the pool is a separate mooncake_client's memory, which this config does not size; BLIS models mode embedded (each GPU worker mounts global_segment_size)")
	case c.GlobalSegmentSize == 0:
		return c, fmt.Errorf("global_segment_size 0: mode embedded needs a segment > 0 (vLLM rejects it)")
	case c.LocalBufferSize <= 0:
		return c, fmt.Errorf("local_buffer_size %d: must be > 0 (vLLM rejects it)", c.LocalBufferSize)
	case c.Protocol != "rdma" && c.Protocol != "tcp":
		return c, fmt.Errorf("protocol %q: rdma or tcp (both cross the GPU's NIC)", c.Protocol)
	}
	return c, nil
}

// mooncakeExtraKeys are MooncakeStoreConnector's kv_connector_extra_config
// keys BLIS knows; load_async is the only one that changes the model.
var mooncakeExtraKeys = []string{"cache_prefix", "enable_lookup", "load_async", "lookup_async"}

// pooledTier is a tier every engine of a pool shares, each engine adding
// perEngine chunks to it (Mooncake's segments). The embedded tier is one
// engine's worth, for checks on a lone engine; withStorage gives every run
// a fresh one sized for the pool.
type pooledTier struct {
	kvtier.Tier
	perEngine int
	policy    kvtier.Policy
}

// resolveMooncake builds the engine's offload config for a
// MooncakeStoreConnector; blockBytes is one GPU block on one rank.
func (r *Resolved) resolveMooncake(conn *offloadConn, blockBytes float64) (*engine.OffloadConfig, error) {
	s := &r.Scenario
	if s.MooncakeConfig == "" {
		return nil, bad("mooncake-config", "", `required with MooncakeStoreConnector (vLLM reads MOONCAKE_CONFIG_PATH): the mooncake_config.json text, e.g. {"mode":"embedded","global_segment_size":"80GB","local_buffer_size":"4GB","protocol":"rdma"}`)
	}
	mc, err := parseMooncakeConfig(s.MooncakeConfig)
	if err != nil {
		return nil, bad("mooncake-config", s.MooncakeConfig, err.Error())
	}
	var other []string
	for k, v := range conn.extra {
		switch {
		case k == "load_async":
			if b, ok := v.(bool); !ok || !b {
				return nil, bad("kv-transfer-config", s.KVTransferConfig, fmt.Sprintf("MooncakeStoreConnector load_async %v: only true (vLLM's store worker asserts it)", v))
			}
		case k == "enable_lookup" && v == false:
			return nil, bad("kv-transfer-config", s.KVTransferConfig, "MooncakeStoreConnector enable_lookup false (a store-only engine that never loads) is not modelled")
		case !slices.Contains(mooncakeExtraKeys, k):
			other = append(other, k)
		}
	}
	if len(other) > 0 {
		sort.Strings(other)
		r.Notes = append(r.Notes, "INFO --kv-transfer-config: MooncakeStoreConnector settings accepted and not modelled: "+strings.Join(other, ", "))
	}
	bs := r.Engine.BlockSize
	// Each rank's segment holds that rank's shard of a block, so an
	// engine's ranks together add global_segment_size / (rank's block
	// bytes) whole blocks to the pool.
	perEngine := int(float64(mc.GlobalSegmentSize) / blockBytes)
	if perEngine < 1 {
		return nil, bad("mooncake-config", s.MooncakeConfig, fmt.Sprintf("global_segment_size %d bytes holds no %d-token block of %.0f bytes per GPU", mc.GlobalSegmentSize, bs, blockBytes))
	}
	one, err := kvtier.New(perEngine, kvtier.LRU)
	if err != nil {
		return nil, &InputError{Msg: err.Error()}
	}
	bw := r.Chip.InterNode
	oc := &engine.OffloadConfig{
		Connector: engine.OffloadNative, BlocksPerChunk: 1, CPUChunks: perEngine,
		BlockBytes: int64(math.Ceil(blockBytes)), LinkBW: bw,
		LinkLatency: time.Duration(math.Round(r.Chip.P2PLatency * float64(time.Second))),
		Store:       engine.StorePromptOnly, Policy: kvtier.LRU,
		CPU: &pooledTier{Tier: one, perEngine: perEngine, policy: kvtier.LRU}, Name: "mooncake",
	}
	r.Notes = append(r.Notes, fmt.Sprintf("INFO KV offload: MooncakeStoreConnector, a Mooncake store of %s per GPU worker (global_segment_size) = %d blocks of %d tokens per engine, one store shared by the pool's engines (replicas × %d blocks), LRU eviction; loads asynchronous, storing the prompt's blocks, over each GPU's NIC (%s, %.0f GB/s each way; every segment counted as remote)",
		gibText(mc.GlobalSegmentSize), perEngine, bs, perEngine, mc.Protocol, bw/1e9))
	if conn.role == "kv_consumer" {
		r.Notes = append(r.Notes, "INFO --kv-transfer-config: MooncakeStoreConnector with kv_role kv_consumer skips its saves in vLLM; BLIS stores the prompt's blocks as for kv_both")
	}
	if mc.EnableOffload {
		r.Notes = append(r.Notes, "INFO --mooncake-config: enable_offload (Mooncake's SSD tier) is accepted and not modelled")
	}
	return oc, nil
}

// gibText writes a byte count in GiB.
func gibText(b int64) string {
	return strconv.FormatFloat(float64(b)/(1<<30), 'g', 6, 64) + " GiB"
}
