package kernel

import (
	"fmt"
	"math"
	"slices"
)

// All2AllBackends are the names --all2all-backend accepts that the kernel
// prices (vllm/config/parallel.py All2AllBackend; the managers in
// vllm/distributed/device_communicators/all2all.py and the prepare/finalize
// kernels in vllm/model_executor/layers/fused_moe/), as vLLM v0.11 runs
// them. "" is vLLM's default, allgather_reducescatter (ParallelConfig).
// vLLM main (@00193b82) has dropped naive and pplx (it warns and runs
// allgather_reducescatter) and added deepep_v2, mori_*, nixl_ep and
// flashinfer_nvlink_*, which are not priced. Each call returns a fresh
// slice.
func All2AllBackends() []string {
	return []string{a2aAgRs, a2aNaive, a2aPPLX, a2aDeepEPHT, a2aDeepEPLL, a2aFlashInfer}
}

const (
	a2aAgRs       = "allgather_reducescatter"
	a2aNaive      = "naive"
	a2aPPLX       = "pplx"
	a2aDeepEPHT   = "deepep_high_throughput"
	a2aDeepEPLL   = "deepep_low_latency"
	a2aFlashInfer = "flashinfer_all2allv"
)

// all2allBackend is the deployment's backend with "" resolved to vLLM's
// default.
func (d Deployment) all2allBackend() string {
	if d.All2AllBackend == "" {
		return a2aAgRs
	}
	return d.All2AllBackend
}

// a2aDisablesGraphs reports whether vLLM turns CUDA graphs off for the
// backend: DeepEP's high-throughput kernels sync with the CPU and cannot be
// captured, so with DP > 1 vLLM sets cudagraph_mode to NONE ("WideEP:
// Disabling CUDA Graphs since DeepEP high-throughput kernels are optimized
// for prefill", vllm/platforms/cuda.py check_and_update_config).
func (d Deployment) a2aDisablesGraphs() bool {
	return d.all2allBackend() == a2aDeepEPHT && d.dpSize() > 1
}

// usesA2AKernels reports whether the MoE layers move tokens with
// all-to-all kernels (pplx, DeepEP, FlashInfer) rather than the DP group's
// all-gather / reduce-scatter (or naive broadcasts / all-reduce). vLLM runs
// those kernels only for expert-parallel layers with DP > 1
// (FusedMoEParallelConfig.use_all2all_kernels = dp_size > 1 and use_ep).
func (d Deployment) usesA2AKernels() bool {
	switch d.all2allBackend() {
	case a2aAgRs, a2aNaive:
		return false
	}
	return d.Model != nil && d.Model.IsMoE() && d.dpSize() > 1 && d.ExpertParallel
}

// nodeLink is the network between nodes as the deployment sees it: the
// fabric's when it names one, else the chip's own inter-node numbers.
type nodeLink struct {
	perNode   int     // GPUs sharing one NVLink domain
	bandwidth float64 // bytes/s per GPU, one direction, through its NIC
	latency   float64 // seconds per transfer
	name      string  // for substitution notes
}

func (d Deployment) nodeLink() nodeLink {
	if f := d.Fabric; f != nil {
		name := f.Name
		if name == "" {
			name = "fabric"
		}
		return nodeLink{perNode: f.GPUsPerNode, bandwidth: f.Network.Bandwidth, latency: f.Network.Latency.Seconds(), name: name}
	}
	c := d.Chip
	return nodeLink{perNode: c.GPUsPerNode, bandwidth: c.InterNode, latency: c.P2PLatency, name: c.Name}
}

// ringLink is the link a ring collective over a group spanning span GPUs
// rides: the chip's NVLink within a node, the network link when the group
// crosses nodes.
func (d Deployment) ringLink(span int) (bw, lat float64) {
	if nl := d.nodeLink(); span > nl.perNode && nl.bandwidth > 0 {
		return nl.bandwidth, nl.latency
	}
	return d.Chip.NVLinkBW, d.Chip.P2PLatency
}

// validateAll2All checks --all2all-backend and the fabric as vLLM (and the
// kernels it loads) would refuse them at start-up.
func validateAll2All(d Deployment) error {
	if f := d.Fabric; f != nil {
		if f.GPUsPerNode < 1 || !(f.Network.Bandwidth > 0) || f.Network.Latency < 0 {
			return fmt.Errorf("fabric %q: gpus per node %d must be ≥ 1, network bandwidth %g B/s > 0 and latency %v ≥ 0",
				f.Name, f.GPUsPerNode, f.Network.Bandwidth, f.Network.Latency)
		}
	}
	b := d.All2AllBackend
	if b != "" && !slices.Contains(All2AllBackends(), b) {
		return fmt.Errorf("--all2all-backend %q: allowed %v (\"\" = %s, vLLM's default)", b, All2AllBackends(), a2aAgRs)
	}
	m := d.Model
	if b == "" || b == a2aAgRs || b == a2aNaive || !m.IsMoE() || d.dpSize() <= 1 {
		return nil // the backend moves nothing in this deployment
	}
	if !d.ExpertParallel {
		// Without EP vLLM dispatches through the all2all manager, whose
		// pplx / DeepEP / FlashInfer managers implement no dispatch.
		return fmt.Errorf("--all2all-backend %s needs --enable-expert-parallel (vLLM runs its all-to-all kernels only for expert-parallel MoE layers)", b)
	}
	if n, nl := d.TP*d.dpSize(), d.nodeLink(); b == a2aFlashInfer && n > nl.perNode {
		return fmt.Errorf("--all2all-backend %s moves tokens over (multi-node) NVLink only: the expert-parallel group of %d GPUs spans more than one NVLink domain of %d GPUs (%s)",
			b, n, nl.perNode, nl.name)
	}
	return nil
}

// a2aLeg is one all-to-all kernel call of an expert-parallel MoE layer
// (dispatch or combine), per GPU of the EP group of gpus GPUs: it sends
// bytes per token of the DP group (Batch.GroupTokens), its own tokens'
// copies to every GPU that holds one of their experts (its own included,
// as nccl-tests sizes an all-to-all). Crossing nodes, intraFrac of that
// message goes over NVLink and netFrac through the NIC, both at once (the
// kernels send to every peer concurrently; DeepEP's README reports the
// bottleneck link's bandwidth); DeepEP HT forwards what arrives over RDMA
// on the destination node's NVLink, a pipeline that adds the network's
// latency to the slower hop (forward).
type a2aLeg struct {
	name               string
	gpus               int
	bytes              float64
	intraFrac, netFrac float64
	forward            bool // the network hop feeds an NVLink hop (DeepEP HT)
}

// a2aKernelLegs is what one MoE layer's dispatch and combine move under an
// all-to-all kernel backend, from vLLM's prepare/finalize kernels:
//
//   - pplx (PplxPrepareAndFinalize) and deepep_low_latency
//     (DeepEPLLPrepareAndFinalize) land tokens in per-expert buffers: one
//     copy per routed expert, top-k copies of each token (pplx-kernels
//     csrc/all_to_all/internode_dispatch.cu puts each token once per
//     top-k index), and top-k outputs back. DeepEP LL dispatches FP8 with one fp32 scale per 128 values
//     when the experts are block-FP8 (DEEPEP_QUANT_BLOCK_SHAPE); pplx
//     quantizes to FP8 before dispatch for any FP8 experts (per-token scale
//     unless block-quantized);
//   - deepep_high_throughput (DeepEPHTPrepareAndFinalize) and
//     flashinfer_all2allv (the TRT-LLM MNNVL all-to-all) send a token once
//     to each rank holding at least one of its experts; DeepEP HT crosses
//     nodes once per destination node (RDMA) and forwards over NVLink, and
//     dispatches block-FP8 like LL; FlashInfer dispatches NVFP4 (values plus
//     one FP8 scale per 16) for NVFP4 experts.
//
// Combines move the experts' bf16 (activation-dtype) outputs. Routing is
// taken as uniform over the experts (no group-limited routing, no EPLB);
// top-k ids and weights are not counted (< 2 % of a token's bytes).
func a2aKernelLegs(d Deployment, hidden, experts, topK int, expertDtype string) [2]a2aLeg {
	backend := d.all2allBackend()
	n := d.TP * d.dpSize()
	nl := d.nodeLink()
	H, E, k, N := float64(hidden), float64(experts), float64(topK), float64(n)
	act := d.Model.DtypeBytes
	if act <= 0 {
		act = 2
	}
	fp8 := expertDtype == "fp8" || (d.Quantization == "fp8" && (expertDtype == "bf16" || expertDtype == "fp16" || expertDtype == ""))
	block := d.Model.WeightBlock > 0
	disp := H * act
	switch {
	case (backend == a2aDeepEPLL || backend == a2aDeepEPHT || backend == a2aPPLX) && fp8 && block:
		disp = H + H/128*4
	case backend == a2aPPLX && fp8:
		disp = H + 4
	case backend == a2aFlashInfer && (expertDtype == "nvfp4" || expertDtype == "fp4"):
		disp = H/2 + H/16
	}
	comb := H * act

	copies := k // per-expert copies
	if backend == a2aDeepEPHT || backend == a2aFlashInfer {
		copies = distinctHolders(E, k, N)
	}
	intra, net := 1.0, 0.0
	if per := float64(nl.perNode); n > nl.perNode && nl.perNode >= 1 {
		intra, net = per/N, (N-per)/N
		if backend == a2aDeepEPHT {
			// One RDMA copy per remote destination node, every copy
			// delivered over the destination node's NVLink.
			nodes := N / per
			intra, net = 1, (nodes-1)*holdProb(E, k, E/nodes)/copies
		}
	}
	fwd := backend == a2aDeepEPHT
	return [2]a2aLeg{
		{name: "experts.dispatch (" + backend + ")", gpus: n, bytes: copies * disp / N, intraFrac: intra, netFrac: net, forward: fwd},
		{name: "experts.combine (" + backend + ")", gpus: n, bytes: copies * comb / N, intraFrac: intra, netFrac: net, forward: fwd},
	}
}

// holdProb is the chance that a token choosing k of E experts uniformly
// picks at least one of a given e of them: 1 − C(E−e, k)/C(E, k).
func holdProb(E, k, e float64) float64 {
	miss := 1.0
	for i := 0.0; i < k; i++ {
		if E-i <= 0 {
			break
		}
		miss *= math.Max(E-e-i, 0) / (E - i)
	}
	return 1 - miss
}

// distinctHolders is the expected number of the n ranks (E/n experts each)
// that hold at least one of a token's k experts.
func distinctHolders(E, k, n float64) float64 {
	if n <= 1 {
		return 1
	}
	return n * holdProb(E, k, E/n)
}
