package kernel

import (
	"fmt"
	"math"
	"time"
)

// Engram tables (catalog.Engram) as vLLM places and reads them
// (vllm/config/engram.py EngramConfig as of vLLM's DeepSeek-V4.1 support,
// Sept 2026, and the placement PRs it documents: #56512 async prefetch and
// DP sharding, #57651 DP shared memory, #57910 the feature page):
//
//   - cpu_offload (default true, VLLM_PLE_CPU_OFFLOAD): the tables sit in
//     pinned host memory and a Triton kernel gathers the rows over UVA
//     (the GPU reads host memory over its host link); the GPU keeps none of
//     the table bytes, so the KV cache gets them.
//   - cpu_offload false: the tables are weights in HBM.
//   - Tensor parallelism splits the hash heads over the TP ranks (each rank
//     gathers its heads' rows for every token).
//   - enable_engram_dp_sharding (default true) with DP > 1: the hash heads
//     are further split over the node-local DP ranks (the "engram DP"
//     group); each step all-gathers the token ids over that group and sends
//     every rank's looked-up rows back to the rank owning the token.
//   - enable_engram_dp_shared_memory (needs cpu_offload and DP > 1): one
//     /dev/shm copy per node serves every DP rank, TP sharding unchanged.
//
// The lookups of every Engram layer are launched at the start of the
// forward pass on a side stream (the hash indices depend only on the token
// ids); the main stream waits at an Engram layer only if its rows have not
// arrived by then. BLIS takes the main stream's time before layer l as
// l/L of the step's GPU time, and charges the step the largest wait.

// EngramPlacement is vLLM's --engram-config.
type EngramPlacement struct {
	CPUOffload     bool // cpu_offload
	DPSharding     bool // enable_engram_dp_sharding
	DPSharedMemory bool // enable_engram_dp_shared_memory
}

// DefaultEngramPlacement is EngramConfig's defaults.
func DefaultEngramPlacement() EngramPlacement {
	return EngramPlacement{CPUOffload: true, DPSharding: true}
}

// Engram lookup assumptions, each with its reason.
const (
	// engramUVAEfficiency is the fraction of the host link's bandwidth a
	// UVA gather of 264-byte rows reaches: each row is two PCIe read
	// completions (a 256-byte payload and a short one) whose headers and
	// request round trips take about half the link. An assumption; no
	// public measurement of vLLM's Engram gather rate was found.
	engramUVAEfficiency = 0.5
	// engramLookupLatency is the fixed cost of one lookup wave: a host
	// read round trip over PCIe (≈1–2 µs) plus the kernel launch on the
	// side stream. An assumption.
	engramLookupLatency = 3 * time.Microsecond
)

// engramCost is one deployment's Engram numbers per rank, precomputed.
type engramCost struct {
	on bool
	// layerFrac[i] is the fraction of the step's GPU time the main stream
	// spends before Engram layer i.
	layerFrac []float64
	// bytesPerToken[i] is what one token's lookup at Engram layer i reads
	// on this rank; perByte the seconds per byte on the path the rows take
	// (host link over UVA, or HBM).
	bytesPerToken []float64
	perByte       float64
	// exchangePerByte is the seconds per byte of the engram-DP exchange
	// (0 without DP sharding).
	exchangePerByte float64
	edp             int
}

// engramDPLocal is the number of DP ranks of one replica that share a node:
// the "node-local" engram DP group.
func engramDPLocal(d Deployment) int {
	dp := d.dpSize()
	if dp <= 1 {
		return 1
	}
	perNode := max(1, d.Chip.GPUsPerNode/max(1, d.TP))
	return max(1, min(dp, perNode))
}

// engramShards is how many ways the tables are split: TP ranks times the
// engram DP group when the heads are DP-sharded.
func engramShards(d Deployment) (tp, edp int) {
	tp, edp = max(1, d.TP), 1
	p := d.engramPlacement()
	if d.dpSize() > 1 && p.DPSharding && !p.DPSharedMemory {
		edp = engramDPLocal(d)
	}
	return
}

// engramPlacement is the deployment's placement, or vLLM's defaults.
func (d Deployment) engramPlacement() EngramPlacement {
	if d.Engram != nil {
		return *d.Engram
	}
	return DefaultEngramPlacement()
}

// engramStageTables lists the indices (into Engram.Layers) of the Engram
// layers d's pipeline stage holds (all of them without PP).
func engramStageTables(d Deployment) []int {
	start, end := d.stageLayers()
	var out []int
	for i, l := range d.Model.Engram.Layers {
		if l >= start && l < end {
			out = append(out, i)
		}
	}
	return out
}

// EngramGPUBytes is the Engram table bytes one GPU holds (0 with
// cpu_offload or without Engram): its share of its pipeline stage's tables.
func EngramGPUBytes(d Deployment) float64 {
	e := d.Model.Engram
	if e == nil || d.engramPlacement().CPUOffload {
		return 0
	}
	tp, edp := engramShards(d)
	var rows float64
	for _, i := range engramStageTables(d) {
		rows += float64(e.Rows[i])
	}
	return rows * e.RowBytes() / float64(tp*edp)
}

// engramProjBytes is the Engram modules' key/value projection weights on
// one GPU (its stage's layers; row-parallel over TP, in the attention
// linears' format): small beside the tables, but always on the GPU.
func engramProjBytes(d Deployment) float64 {
	e := d.Model.Engram
	if e == nil {
		return 0
	}
	per := 2 * float64(d.Model.HiddenSize) * float64(e.EmbedDim()) * d.Model.AttnWeightBytesPerParam / float64(max(1, d.TP))
	return float64(len(engramStageTables(d))) * per
}

// EngramHostBytesPerNode is the pinned host memory one node gives the
// Engram tables of one replica's ranks on it (0 when they are on the GPU):
// one copy per node with DP shared memory or DP sharding, else one per
// node-local DP rank.
func EngramHostBytesPerNode(d Deployment) float64 {
	e := d.Model.Engram
	p := d.engramPlacement()
	if e == nil || !p.CPUOffload {
		return 0
	}
	copies := 1
	if d.dpSize() > 1 && !p.DPSharedMemory && !p.DPSharding {
		copies = engramDPLocal(d)
	}
	ranksPerNode := min(d.Chip.GPUsPerNode, max(1, d.TP))
	if d.TP > d.Chip.GPUsPerNode && d.Chip.GPUsPerNode > 0 {
		// A TP group spanning nodes: each node holds its ranks' heads.
		return float64(copies) * e.TableBytes() * float64(ranksPerNode) / float64(d.TP)
	}
	return float64(copies) * e.TableBytes()
}

// validateEngram checks the placement as vLLM's EngramConfig does.
func validateEngram(d Deployment) error {
	if d.Engram == nil {
		return nil
	}
	if d.Model.Engram == nil {
		return fmt.Errorf("--engram-config: model %s has no Engram layers (vLLM accepts the setting only for models with non-empty engram_layer_ids)", d.Model.ID)
	}
	p := *d.Engram
	if p.DPSharedMemory && !p.CPUOffload {
		return fmt.Errorf("--engram-config: enable_engram_dp_shared_memory requires cpu_offload true")
	}
	if p.DPSharedMemory && d.dpSize() <= 1 {
		return fmt.Errorf("--engram-config: enable_engram_dp_shared_memory requires --data-parallel-size > 1")
	}
	return nil
}

// newEngramCost precomputes the lookup cost of d's Engram layers (off when
// the model has none).
func newEngramCost(d Deployment) engramCost {
	e := d.Model.Engram
	if e == nil {
		return engramCost{}
	}
	tables := engramStageTables(d)
	if len(tables) == 0 {
		return engramCost{}
	}
	tp, edp := engramShards(d)
	c := engramCost{on: true, edp: edp}
	start, end := d.stageLayers()
	L := float64(max(1, end-start))
	row := e.RowBytes()
	for _, i := range tables {
		c.layerFrac = append(c.layerFrac, float64(e.Layers[i]-start)/L)
		// This rank's heads of the layer, for every token it serves.
		c.bytesPerToken = append(c.bytesPerToken, float64(e.HashHeads())*row/float64(tp*edp))
	}
	if d.engramPlacement().CPUOffload {
		c.perByte = 1 / (d.Chip.HostLinkBW * engramUVAEfficiency)
	} else {
		c.perByte = 1 / (d.Chip.MemBW * d.Chip.MemBWEfficiency)
	}
	if edp > 1 {
		// The looked-up rows of the other ranks' tokens go back to them
		// over NVLink (the engram DP group is node-local).
		c.exchangePerByte = 1 / d.Chip.NVLinkBW
	}
	return c
}

// stall is how long the main stream waits for Engram rows in a step of
// tokens new tokens (groupTokens: the engram DP group's, when sharded)
// whose GPU work takes gpu.
func (c *engramCost) stall(tokens, groupTokens int, gpu time.Duration) time.Duration {
	if !c.on || tokens == 0 {
		return 0
	}
	served := float64(tokens)
	if c.edp > 1 {
		// Each rank looks up its heads for the whole group's tokens.
		served = float64(max(groupTokens, tokens))
	}
	var arrived, worst float64
	for i, b := range c.bytesPerToken {
		arrived += served * b * c.perByte
		wait := arrived + engramLookupLatency.Seconds()
		if c.edp > 1 {
			// Rows for other ranks' tokens return before this rank's own
			// tokens can use the layer's full set.
			wait += served * b * float64(c.edp-1) / float64(c.edp) * c.exchangePerByte
		}
		if w := wait - c.layerFrac[i]*gpu.Seconds(); w > worst {
			worst = w
		}
	}
	return time.Duration(math.Round(worst * 1e9))
}

// EngramPlan is one line for --dry-run: where d's Engram tables live,
// what they take on each GPU and node, and what one token's lookup reads
// on one GPU (empty without Engram).
func EngramPlan(d Deployment) string {
	e := d.Model.Engram
	if e == nil {
		return ""
	}
	const gib = 1 << 30
	p := d.engramPlacement()
	tp, edp := engramShards(d)
	perToken := float64(len(e.Layers)*e.HashHeads()) * e.RowBytes() / float64(tp*edp)
	where := "pinned host memory (cpu_offload), rows read over the host link by UVA"
	if !p.CPUOffload {
		where = "GPU memory (cpu_offload false)"
	}
	onGPU := d
	onGPU.Engram = &EngramPlacement{DPSharding: p.DPSharding}
	s := fmt.Sprintf("%.2f GiB of tables (layers %v, %d hash heads each) in %s: %.2f GiB per GPU (%.2f GiB were they on the GPU), %.2f GiB of host memory per node",
		e.TableBytes()/gib, e.Layers, e.HashHeads(), where, EngramGPUBytes(d)/gib, EngramGPUBytes(onGPU)/gib, EngramHostBytesPerNode(d)/gib)
	if edp > 1 {
		s += fmt.Sprintf("; hash heads split over %d node-local DP ranks (enable_engram_dp_sharding)", edp)
	} else if p.DPSharedMemory {
		s += "; one shared /dev/shm copy per node (enable_engram_dp_shared_memory)"
	}
	return s + fmt.Sprintf("; a token's lookup reads %.0f B per GPU on a side stream before the forward", perToken)
}
