package scenario

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"blis/engine"
	"blis/kvtier"
)

// KV offload, as vLLM configures it (vllm/config/vllm.py
// _post_init_kv_transfer_config and vllm/v1/kv_offload/cpu/spec.py, main
// of late 2026; LMCache's vLLM v1 adapter):
//
//   - --kv-offloading-size G [--kv-offloading-backend native]: the
//     OffloadingConnector with cpu_bytes_to_use = G·2^30, the CPU memory of
//     the whole replica (CPUOffloadingSpec divides it by the world size);
//   - --kv-offloading-backend lmcache --kv-offloading-size G: LMCache with
//     G/(TP·PP) GiB of local CPU cache per worker;
//   - --kv-transfer-config with OffloadingConnector (kv_connector_extra_config
//     cpu_bytes_to_use or num_cpu_blocks, block_size or blocks_per_chunk,
//     eviction_policy lru|arc, offload_prompt_only, spec_name
//     TieringOffloadingSpec with secondary_tiers), LMCacheConnectorV1 (with
//     --lmcache-max-local-cpu-size, LMCACHE_MAX_LOCAL_CPU_SIZE, and its local
//     disk: --lmcache-max-local-disk-size, LMCACHE_MAX_LOCAL_DISK_SIZE),
//     MooncakeStoreConnector (mooncake.go, --mooncake-config), or any of
//     them inside a MultiConnector beside NIXL (llm-d's P/D prefill pods).
//
// Transfers to and from host memory use the chip's host link
// (catalog.Chip.HostLinkBW: PCIe, NVLink-C2C on GB200) in each direction.

// dsv4FullBlockTokens is the block size of vLLM's DeepSeek-V4
// compressed-cache (full-attention) group: the C4 page of 256/4 entries
// sets it (kernel/dsv4.go), and vllm#43142 serves the model with
// --block-size 256.
const dsv4FullBlockTokens = 256

// offloadConn is an offload connector named in --kv-transfer-config.
type offloadConn struct {
	kind  engine.OffloadConnector
	name  string
	role  string // kv_role (empty inside a MultiConnector that sets none)
	extra map[string]any
}

// lmcacheChunkTokens is LMCache's default chunk_size (lmcache/v1/config.py),
// the granularity it stores and retrieves KV in.
const lmcacheChunkTokens = 256

// lmcacheDefaultCPUGB is LMCache's default max_local_cpu_size (GB per worker).
const lmcacheDefaultCPUGB = 5.0

// hostCopyLatency is the fixed cost of one host-link transfer: a
// cudaMemcpyAsync batch's launch and DMA setup (assumption, the order of
// the chip catalog's 10 µs p2p latency; no measured figure for it).
const hostCopyLatency = 10 * time.Microsecond

// offloadKeys are the kv_connector_extra_config keys of the
// OffloadingConnector BLIS reads; others are noted as not modelled.
var offloadKeys = []string{"block_size", "blocks_per_chunk", "cpu_bytes_to_use", "eviction_policy", "num_cpu_blocks", "offload_prompt_only", "secondary_tiers", "spec_name"}

// resolveOffload builds the engine's offload config (nil: off) from the
// flags and the connector, for the resolved deployment and memory plan.
func (r *Resolved) resolveOffload() (*engine.OffloadConfig, error) {
	s := &r.Scenario
	conn := r.connector.offload
	size, backend := s.KVOffloadingSize, s.KVOffloadingBackend
	lmcache := backend == "lmcache" || (conn != nil && conn.kind == engine.OffloadLMCache)
	notSize := func(x float64) bool { return x < 0 || math.IsNaN(x) || math.IsInf(x, 0) }
	switch {
	case notSize(size):
		return nil, bad("kv-offloading-size", fmt.Sprint(size), "GiB of CPU memory: a number ≥ 0")
	case backend != "" && backend != "native" && backend != "lmcache":
		return nil, bad("kv-offloading-backend", backend, "native or lmcache")
	case backend != "" && size == 0:
		return nil, bad("kv-offloading-backend", backend, "needs --kv-offloading-size (vLLM turns offloading on with the size)")
	case size > 0 && conn != nil:
		return nil, bad("kv-offloading-size", fmt.Sprint(size), "--kv-transfer-config already names the offload connector "+conn.name+": set its size there (cpu_bytes_to_use, or --lmcache-max-local-cpu-size for LMCache), not both")
	case notSize(s.LMCacheMaxLocalCPUSize):
		return nil, bad("lmcache-max-local-cpu-size", fmt.Sprint(s.LMCacheMaxLocalCPUSize), "GB per GPU worker: a number ≥ 0")
	case s.LMCacheMaxLocalCPUSize > 0 && !lmcache:
		return nil, bad("lmcache-max-local-cpu-size", fmt.Sprint(s.LMCacheMaxLocalCPUSize), `needs LMCache: '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}' in --kv-transfer-config`)
	case notSize(s.LMCacheMaxLocalDiskSize):
		return nil, bad("lmcache-max-local-disk-size", fmt.Sprint(s.LMCacheMaxLocalDiskSize), "GB of local disk per GPU worker: a number ≥ 0")
	case s.LMCacheMaxLocalDiskSize > 0 && !lmcache:
		return nil, bad("lmcache-max-local-disk-size", fmt.Sprint(s.LMCacheMaxLocalDiskSize), `needs LMCache: '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}' in --kv-transfer-config`)
	case s.MooncakeConfig != "" && (conn == nil || conn.name != mooncakeConnector):
		return nil, bad("mooncake-config", s.MooncakeConfig, `needs '{"kv_connector":"MooncakeStoreConnector","kv_role":"kv_both"}' in --kv-transfer-config`)
	}
	if size == 0 && conn == nil {
		return nil, nil
	}
	bs := r.Engine.BlockSize
	blockBytes := r.Memory.KVBytesPerToken * float64(bs) // one GPU block on one rank
	if r.Memory.KVCache.Groups > 1 {
		// A hybrid cache's connector moves each group's blocks under its
		// own key (engine/hybridoffload.go): a pool block, one page of
		// each of the group's layers, is what one key holds.
		blockBytes = r.Memory.BlockBytes
	}
	if blockBytes <= 0 {
		return nil, &InputError{Msg: "KV offload: the memory plan has no KV bytes per token"}
	}
	if conn != nil && conn.name == mooncakeConnector {
		return r.resolveMooncake(conn, blockBytes)
	}
	d := r.Deployment
	world := float64(max(d.TP, 1) * max(d.PP, 1))
	bw := r.Chip.HostLinkBW
	oc := &engine.OffloadConfig{
		BlockBytes: int64(math.Ceil(blockBytes)), LinkBW: bw, LinkLatency: hostCopyLatency, Policy: kvtier.LRU,
	}
	if lmcache {
		oc.Connector = engine.OffloadLMCache
		oc.Store = engine.StorePromptOnly
		oc.BlocksPerChunk = max(lmcacheChunkTokens/bs, 1)
		gb := lmcacheDefaultCPUGB
		switch {
		case size > 0:
			gb = size / world // vLLM hands LMCache the per-worker share
		case s.LMCacheMaxLocalCPUSize > 0:
			gb = s.LMCacheMaxLocalCPUSize
		default:
			r.Notes = append(r.Notes, fmt.Sprintf("INFO LMCache: no --lmcache-max-local-cpu-size, so LMCache's default local CPU cache of %g GB per GPU worker", lmcacheDefaultCPUGB))
		}
		// LMCache sizes its local CPU buffer in GiB (max_local_cpu_size ×
		// 1024³); each worker keeps its own shard of every chunk.
		oc.CPUChunks = int(gb * (1 << 30) / (blockBytes * float64(oc.BlocksPerChunk)))
		if oc.CPUChunks < 1 {
			return nil, bad("lmcache-max-local-cpu-size", fmt.Sprint(gb), fmt.Sprintf("holds no %d-token chunk of %.0f bytes per GPU", lmcacheChunkTokens, blockBytes*float64(oc.BlocksPerChunk)))
		}
		r.Notes = append(r.Notes, fmt.Sprintf("INFO KV offload: LMCache, %g GB of CPU cache per GPU worker = %d chunks of %d tokens (%d tokens); loads and saves on the step, over %.0f GB/s",
			gb, oc.CPUChunks, oc.BlocksPerChunk*bs, oc.CPUChunks*oc.BlocksPerChunk*bs, bw/1e9))
		if s.LMCacheMaxLocalDiskSize > 0 {
			disk, err := r.lmcacheDisk(blockBytes * float64(oc.BlocksPerChunk))
			if err != nil {
				return nil, err
			}
			oc.Secondary = append(oc.Secondary, disk)
		}
		return oc, nil
	}
	oc.Connector = engine.OffloadNative
	oc.BlocksPerChunk = 1
	// OffloadingSpec's offload_prompt_only defaults to true
	// (vllm/v1/kv_offload/base.py): the output's chunks are not stored.
	oc.Store = engine.StorePromptOnly
	cpuBytes := size * (1 << 30)
	var numBlocks int
	if conn != nil {
		var err error
		if cpuBytes, numBlocks, err = r.nativeExtra(conn, oc); err != nil {
			return nil, err
		}
	}
	chunkBytes := blockBytes * float64(oc.BlocksPerChunk)
	if ct := oc.BlocksPerChunk * bs; r.Deployment.Model.IsDSV4() && dsv4FullBlockTokens > ct && dsv4FullBlockTokens%ct == 0 {
		// vLLM's DeepSeek-V4 compressed-cache group has blocks of 256
		// tokens, its sliding groups smaller ones: the connector stores a
		// sliding group's blocks only where a load can hit them (the
		// window before each 256-token boundary).
		oc.AlignTokens = dsv4FullBlockTokens
	}
	if numBlocks > 0 {
		oc.CPUChunks = numBlocks
	} else {
		oc.CPUChunks = int(cpuBytes / (chunkBytes * world))
	}
	if oc.CPUChunks < 1 {
		return nil, bad("kv-offloading-size", fmt.Sprint(cpuBytes/(1<<30)), fmt.Sprintf("GiB: holds no offloaded chunk (%.0f bytes over the replica's %g GPUs)", chunkBytes*world, world))
	}
	store := "every full chunk as it fills"
	if oc.Store == engine.StorePromptOnly {
		store = "the prompt's chunks only"
	}
	if l := r.Memory.KVCache; l.Groups > 1 {
		// Each group's chunk is its own entry (vLLM's offload key is the
		// block hash with the group).
		r.Notes = append(r.Notes, fmt.Sprintf("INFO KV offload: vLLM's OffloadingConnector, CPU tier of %d chunk entries of %d tokens, one per KV cache group (%d groups, %d sliding), %s eviction, storing %s, over %.0f GB/s each way",
			oc.CPUChunks, oc.BlocksPerChunk*bs, l.Groups, bits.OnesCount64(l.Sliding), oc.Policy, store, bw/1e9))
		return oc, nil
	}
	r.Notes = append(r.Notes, fmt.Sprintf("INFO KV offload: vLLM's OffloadingConnector, CPU tier of %d chunks of %d tokens (%d tokens), %s eviction, storing %s, over %.0f GB/s each way",
		oc.CPUChunks, oc.BlocksPerChunk*bs, oc.CPUChunks*oc.BlocksPerChunk*bs, oc.Policy, store, bw/1e9))
	return oc, nil
}

// nativeExtra reads the OffloadingConnector's kv_connector_extra_config
// into oc: the chunk size, policy and store rule, and the CPU tier's size
// as bytes over the replica (cpu_bytes_to_use) or blocks (num_cpu_blocks).
func (r *Resolved) nativeExtra(conn *offloadConn, oc *engine.OffloadConfig) (cpuBytes float64, numBlocks int, err error) {
	key := "kv-transfer-config"
	val := r.Scenario.KVTransferConfig
	fail := func(msg string) (float64, int, error) {
		return 0, 0, bad(key, val, conn.name+" kv_connector_extra_config: "+msg)
	}
	num := func(k string) (float64, bool, error) {
		v, ok := conn.extra[k]
		if !ok {
			return 0, false, nil
		}
		switch x := v.(type) {
		case float64:
			return x, true, nil
		case string: // YAML and env-substituted configs carry numbers as text
			f, err := strconv.ParseFloat(x, 64)
			if err != nil {
				return 0, true, fmt.Errorf("%s %q: not a number", k, x)
			}
			return f, true, nil
		}
		return 0, true, fmt.Errorf("%s %v: not a number", k, v)
	}
	bs := r.Engine.BlockSize
	// vLLM's build_offloading_config (vllm/v1/kv_offload) takes the chunk
	// as tokens (block_size) or GPU blocks (blocks_per_chunk), and
	// refuses both.
	_, hasSize := conn.extra["block_size"]
	if _, hasBlocks := conn.extra["blocks_per_chunk"]; hasSize && hasBlocks {
		return fail("block_size and blocks_per_chunk: give only one (vLLM rejects both)")
	}
	if v, ok, err := num("block_size"); err != nil {
		return fail(err.Error())
	} else if ok {
		if v < float64(bs) || math.Mod(v, float64(bs)) != 0 {
			return fail(fmt.Sprintf("block_size %g: the offloaded block size must be a multiple of --block-size %d", v, bs))
		}
		oc.BlocksPerChunk = int(v) / bs
	}
	if v, ok, err := num("blocks_per_chunk"); err != nil {
		return fail(err.Error())
	} else if ok {
		if v < 1 || v != math.Trunc(v) {
			return fail(fmt.Sprintf("blocks_per_chunk %g: a whole number ≥ 1", v))
		}
		oc.BlocksPerChunk = int(v)
	}
	if v, ok, err := num("cpu_bytes_to_use"); err != nil {
		return fail(err.Error())
	} else if ok {
		cpuBytes = v
	}
	if v, ok, err := num("num_cpu_blocks"); err != nil {
		return fail(err.Error())
	} else if ok {
		if v < 1 || v != math.Trunc(v) {
			return fail(fmt.Sprintf("num_cpu_blocks %g: a whole number ≥ 1", v))
		}
		numBlocks = int(v)
	}
	if cpuBytes <= 0 && numBlocks == 0 {
		return fail("cpu_bytes_to_use (or num_cpu_blocks) is required, as vLLM's CPUOffloadingSpec requires it")
	}
	if v, ok := conn.extra["eviction_policy"]; ok {
		p, err := kvtier.ParsePolicy(fmt.Sprint(v))
		if err != nil {
			return fail(err.Error())
		}
		oc.Policy = p
	}
	if v, ok := conn.extra["offload_prompt_only"]; ok {
		if b, isBool := v.(bool); !isBool {
			return fail(fmt.Sprintf("offload_prompt_only %v: true or false", v))
		} else if !b {
			oc.Store = engine.StoreAll
		}
	}
	switch spec := fmt.Sprint(conn.extra["spec_name"]); {
	case conn.extra["spec_name"] == nil, spec == "CPUOffloadingSpec":
		if _, ok := conn.extra["secondary_tiers"]; ok {
			return fail("secondary_tiers needs spec_name TieringOffloadingSpec")
		}
	case spec == "TieringOffloadingSpec":
		tiers, ok := conn.extra["secondary_tiers"].([]any)
		if !ok || len(tiers) == 0 {
			return fail("TieringOffloadingSpec needs secondary_tiers, a list of tier configs")
		}
		for i, t := range tiers {
			m, _ := t.(map[string]any)
			kind := fmt.Sprint(m["type"])
			if m == nil || m["type"] == nil {
				return fail(fmt.Sprintf("secondary_tiers[%d]: a tier config with a type (fs, …)", i))
			}
			st, err := r.storageTier(kind, oc)
			if err != nil {
				return 0, 0, err
			}
			oc.Secondary = append(oc.Secondary, st)
		}
	default:
		return fail(fmt.Sprintf("spec_name %q: CPUOffloadingSpec or TieringOffloadingSpec", spec))
	}
	var other []string
	for k := range conn.extra {
		if !slices.Contains(offloadKeys, k) {
			other = append(other, k)
		}
	}
	if len(other) > 0 {
		sort.Strings(other)
		r.Notes = append(r.Notes, "INFO --kv-transfer-config: OffloadingConnector settings accepted and not modelled: "+strings.Join(other, ", "))
	}
	return cpuBytes, numBlocks, nil
}

// storageTier is a secondary tier of kind (fs, …) sized by
// --kv-offload-storage: its capacity, bandwidths and latency are the
// storage's, which no vLLM setting states. The tier holds every rank's
// shard of a chunk, as the CPU tier does.
func (r *Resolved) storageTier(kind string, oc *engine.OffloadConfig) (engine.OffloadTier, error) {
	spec := r.Scenario.KVOffloadStorage
	if spec == "" {
		return engine.OffloadTier{}, bad("kv-offload-storage", "", "required with secondary_tiers ("+kind+"): the storage's capacity_gib, read_gbps, write_gbps and latency_ms, e.g. capacity_gib=4096,read_gbps=4,write_gbps=2,latency_ms=0.5")
	}
	st, err := parseStorage(spec, true)
	if err != nil {
		return engine.OffloadTier{}, bad("kv-offload-storage", spec, err.Error())
	}
	d := r.Deployment
	chunkBytes := float64(oc.BlockBytes) * float64(oc.BlocksPerChunk) * float64(max(d.TP, 1)*max(d.PP, 1))
	st.Chunks = int(float64(st.Chunks) * (1 << 30) / chunkBytes)
	if st.Chunks < 1 {
		return engine.OffloadTier{}, bad("kv-offload-storage", r.Scenario.KVOffloadStorage, fmt.Sprintf("capacity_gib holds no offloaded chunk of %.0f bytes", chunkBytes))
	}
	st.Name = kind
	return st, nil
}

// parseStorage reads capacity_gib=…,read_gbps=…,write_gbps=…,latency_ms=…
// (every key required; without capacity, capacity_gib is not allowed: the
// tier is sized elsewhere). Chunks holds the capacity in GiB for the
// caller to turn into chunks.
func parseStorage(s string, capacity bool) (engine.OffloadTier, error) {
	want := []string{"read_gbps", "write_gbps", "latency_ms"}
	if capacity {
		want = append([]string{"capacity_gib"}, want...)
	}
	got := map[string]float64{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == "capacity_gib" && !capacity {
			return engine.OffloadTier{}, fmt.Errorf("capacity_gib: LMCache's disk is sized by --lmcache-max-local-disk-size; give only read_gbps, write_gbps and latency_ms")
		}
		if !ok || !slices.Contains(want, k) {
			return engine.OffloadTier{}, fmt.Errorf("%q: want key=value with keys %s", part, strings.Join(want, ", "))
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || (f == 0 && k != "latency_ms") {
			return engine.OffloadTier{}, fmt.Errorf("%s %q: a positive number", k, v)
		}
		got[k] = f
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			return engine.OffloadTier{}, fmt.Errorf("%s missing: give all of %s", k, strings.Join(want, ", "))
		}
	}
	return engine.OffloadTier{
		Chunks: int(got["capacity_gib"]), ReadBW: got["read_gbps"] * 1e9, WriteBW: got["write_gbps"] * 1e9,
		Latency: time.Duration(got["latency_ms"] * float64(time.Millisecond)),
	}, nil
}

// lmcacheDiskTier names LMCache's local disk tier (LocalDiskBackend),
// which each engine keeps for itself.
const lmcacheDiskTier = "local_disk"

// lmcacheDisk is LMCache's local disk tier behind its CPU cache
// (LMCACHE_LOCAL_DISK with LMCACHE_MAX_LOCAL_DISK_SIZE, lmcache/v1/
// storage_backend/local_disk_backend.py): every chunk put to the CPU cache
// is written on to the disk too, and a chunk missing from the CPU cache is
// read from the disk. The size is GB per worker, counted in GiB as the CPU
// cache's; chunkBytes is one worker's shard of a chunk. The disk's
// bandwidths and latency are --kv-offload-storage's, per worker.
func (r *Resolved) lmcacheDisk(chunkBytes float64) (engine.OffloadTier, error) {
	s := &r.Scenario
	gb := s.LMCacheMaxLocalDiskSize
	if s.KVOffloadStorage == "" {
		return engine.OffloadTier{}, bad("kv-offload-storage", "", "required with --lmcache-max-local-disk-size: the disk's read_gbps, write_gbps and latency_ms per GPU worker, e.g. read_gbps=4,write_gbps=2,latency_ms=0.1")
	}
	st, err := parseStorage(s.KVOffloadStorage, false)
	if err != nil {
		return engine.OffloadTier{}, bad("kv-offload-storage", s.KVOffloadStorage, err.Error())
	}
	st.Name, st.Policy = lmcacheDiskTier, kvtier.LRU
	st.Chunks = int(gb * (1 << 30) / chunkBytes)
	if st.Chunks < 1 {
		return engine.OffloadTier{}, bad("lmcache-max-local-disk-size", fmt.Sprint(gb), fmt.Sprintf("holds no %d-token chunk of %.0f bytes per GPU", lmcacheChunkTokens, chunkBytes))
	}
	r.Notes = append(r.Notes, fmt.Sprintf("INFO KV offload: LMCache's local disk, %g GB per GPU worker = %d chunks, written behind the CPU cache, read at %.1f GB/s and written at %.1f GB/s per worker",
		gb, st.Chunks, st.ReadBW/1e9, st.WriteBW/1e9))
	return st, nil
}

// withStorage gives one run's engines of a pool, engines of them, fresh
// tiers they share: a storage tier (a filesystem on a shared volume, a
// remote store) is one for all the pool's replicas, its capacity and
// bandwidth theirs together, and a Mooncake store (pooledTier) is one of
// every engine's segments together. The CPU tier and LMCache's local disk
// stay each engine's own. A run must not inherit the previous run's
// contents, so every run gets new ones.
func withStorage(c engine.Config, engines int) engine.Config {
	if c.Offload == nil {
		return c
	}
	oc := *c.Offload
	if p, ok := oc.CPU.(*pooledTier); ok {
		tier, err := kvtier.New(p.perEngine*max(engines, 1), p.policy)
		if err == nil {
			oc.CPU = tier
		}
	}
	oc.Secondary = append([]engine.OffloadTier(nil), oc.Secondary...)
	for i := range oc.Secondary {
		t := &oc.Secondary[i]
		if t.Tier != nil || t.Name == lmcacheDiskTier {
			continue
		}
		tier, err := kvtier.New(t.Chunks, t.Policy)
		if err != nil {
			continue // the engine reports the same error when it builds its own
		}
		t.Tier = tier
		t.Read = &kvtier.Link{BW: t.ReadBW, Latency: t.Latency}
		t.Write = &kvtier.Link{BW: t.WriteBW, Latency: t.Latency}
	}
	c.Offload = &oc
	return c
}
