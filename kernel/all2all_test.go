package kernel

import (
	"math"
	"strings"
	"testing"
	"time"

	"blis/catalog"
)

// epDeploy is an expert-parallel MoE deployment of dp ranks of tp GPUs.
func epDeploy(t testing.TB, model, chip string, tp, dp int, backend string, fab *catalog.Fabric) Deployment {
	t.Helper()
	d := deploy(t, model, chip, tp)
	d.MaxNumSeqs, d.MaxModelLen, d.ExpertParallel, d.DP, d.All2AllBackend, d.Fabric = 256, 8192, true, dp, backend, fab
	return d
}

// chipFabric is a fabric with exactly the chip's own node numbers.
func chipFabric(c *catalog.Chip) *catalog.Fabric {
	return &catalog.Fabric{Name: "same-as-" + c.Name, GPUsPerNode: c.GPUsPerNode,
		NVLink:  catalog.Link{Kind: "nvlink", Bandwidth: c.NVLinkBW},
		Network: catalog.Link{Kind: "infiniband", Bandwidth: c.InterNode, Latency: time.Duration(math.Round(c.P2PLatency * 1e9))}}
}

// opTimes is Explain's time per operator name.
func opTimes(t testing.TB, p Pricer, b *Batch) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	for _, o := range p.(Explainer).Explain(b) {
		out[o.Name] += o.Time
	}
	return out
}

// Each backend's dispatch and combine for Qwen3-30B-A3B (hidden 2048,
// 128 experts, top-8, bf16, 48 MoE layers) on 4 H200s (DP 4, EP 4, one
// node), 128 decode tokens per rank (the group's 512 gathered), priced from
// the measured H200 NCCL tables (catalog/coeffs/h200.yaml):
//
//   - allgather_reducescatter: all_gather of 512 × 4352 B (hidden 4096 +
//     fp32 router logits 256) = 2,228,224 B, log-log between the 4-GPU
//     samples 2 MiB (18.73 µs) and 4 MiB (35.94 µs) = 19.8287 µs;
//     reduce_scatter of 512 × 4096 = 2 MiB, a sample: 17.83 µs;
//   - naive: 4 broadcasts of 128 × 4352 B, each as an all_gather of
//     512 × 4352 / 3 = 742,741 B (between 512 KiB, 10.62 µs, and 1 MiB,
//     13.52 µs) = 11.9898 µs; all-reduce (vLLM custom, under 8 MiB) of
//     2 MiB, a sample: 17.7968 µs;
//   - pplx, deepep_low_latency: 128 tokens × 8 copies × 4096 B = 4 MiB per
//     GPU, the 4-GPU all-to-all sample: 22.98 µs each way;
//   - deepep_high_throughput, flashinfer_all2allv: a token goes once to each
//     of the 4 ranks (32 experts each) holding one of its experts,
//     4·(1 − C(96,8)/C(128,8)) = 3.62901 copies: 128 × 3.62901 × 4096 =
//     1,902,647 B, between 1 MiB (15.03 µs) and 2 MiB (16.50 µs) = 16.2852 µs.
func TestAll2AllBackendPrices(t *testing.T) {
	const layers = 48
	b := Batch{NumDecode: 128, DecodeTokens: 128, DecodeContext: 128 * 1000, Sampled: 128, GroupTokens: 512}
	for _, tc := range []struct {
		backend           string
		dispatch, combine string
		wantD, wantC      float64 // seconds per layer
	}{
		{"", "experts.dispatch", "experts.combine", 19.8286563e-6, 17.83e-6},
		{"allgather_reducescatter", "experts.dispatch", "experts.combine", 19.8286563e-6, 17.83e-6},
		{"naive", "experts.dispatch (naive: broadcasts)", "experts.combine (naive: all_reduce)", 4 * 11.98982296e-6, 17.7968e-6},
		{"pplx", "experts.dispatch (pplx)", "experts.combine (pplx)", 22.98e-6, 22.98e-6},
		{"deepep_low_latency", "experts.dispatch (deepep_low_latency)", "experts.combine (deepep_low_latency)", 22.98e-6, 22.98e-6},
		{"deepep_high_throughput", "experts.dispatch (deepep_high_throughput)", "experts.combine (deepep_high_throughput)", 16.2852070e-6, 16.2852070e-6},
		{"flashinfer_all2allv", "experts.dispatch (flashinfer_all2allv)", "experts.combine (flashinfer_all2allv)", 16.2852070e-6, 16.2852070e-6},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			d := epDeploy(t, "Qwen/Qwen3-30B-A3B", "h200", 1, 4, tc.backend, nil)
			if m := d.Model; m.HiddenSize != 2048 || m.NumExperts != 128 || m.ExpertsPerToken != 8 || m.NumMoELayers != layers {
				t.Fatalf("model numbers changed: %+v", m)
			}
			p, err := NewFitted(d)
			if err != nil {
				t.Fatal(err)
			}
			ops := opTimes(t, p, &b)
			for _, c := range []struct {
				name string
				want float64
			}{{tc.dispatch, tc.wantD}, {tc.combine, tc.wantC}} {
				got, ok := ops[c.name]
				if !ok {
					t.Fatalf("no operator %q in %v", c.name, ops)
				}
				if want := layers * c.want; math.Abs(got.Seconds()-want) > 1e-6*want+2e-9 {
					t.Errorf("%s: %v, want %v", c.name, got, seconds(want))
				}
			}
		})
	}
}

// What DeepSeek-V3 (hidden 7168, 256 experts, top-8, block-FP8 experts)
// moves per GPU of a 16-GPU EP group over two H200 nodes, per token of the
// group: DeepEP LL and pplx dispatch FP8 plus a fp32 scale per 128 values
// (7392 B) to each of 8 experts; DeepEP HT once per holding rank,
// 16·(1 − C(240,8)/C(256,8)) = 6.52328 copies, one of them over RDMA to
// the other node with probability 1 − C(128,8)/C(256,8) = 0.99651.
func TestA2AKernelLegs(t *testing.T) {
	for _, tc := range []struct {
		backend                  string
		dispatch, combine        float64
		intraFrac, netFrac       float64
		dispatchName, combineSfx string
	}{
		{"deepep_low_latency", 8 * 7392.0 / 16, 8 * 14336.0 / 16, 0.5, 0.5, "experts.dispatch (deepep_low_latency)", ""},
		{"pplx", 8 * 7392.0 / 16, 8 * 14336.0 / 16, 0.5, 0.5, "experts.dispatch (pplx)", ""},
		{"deepep_high_throughput", 6.5232795335 * 7392 / 16, 6.5232795335 * 14336 / 16, 1, 0.99651005772 / 6.5232795335, "experts.dispatch (deepep_high_throughput)", ""},
	} {
		d := epDeploy(t, "deepseek-ai/DeepSeek-V3", "h200", 1, 16, tc.backend, nil)
		legs := a2aKernelLegs(d, 7168, 256, 8, "fp8")
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }
		if !near(legs[0].bytes, tc.dispatch) || !near(legs[1].bytes, tc.combine) || legs[0].gpus != 16 ||
			!near(legs[0].intraFrac, tc.intraFrac) || !near(legs[0].netFrac, tc.netFrac) || legs[0].name != tc.dispatchName {
			t.Errorf("%s: legs %+v, want dispatch %g B, combine %g B per group token, intra %g, net %g",
				tc.backend, legs, tc.dispatch, tc.combine, tc.intraFrac, tc.netFrac)
		}
	}
}

// DeepEP's published low-latency figures (deepseek-ai/DeepEP docs/legacy.md:
// H800, CX7 400 Gb/s, 128 tokens per rank, hidden 7168, top-8, FP8
// dispatch, BF16 combine; EP 16: dispatch 118 µs, combine 195 µs) against
// the LL backend at the same shape over two H200 nodes on a CX7 fabric.
// DeepEP measured pure RDMA (even to peers of the same node); vLLM lets LL
// use NVLink inside a node, so ours may be lower, within a factor 2.
func TestDeepEPLowLatencyNearPublished(t *testing.T) {
	cx7 := &catalog.Fabric{Name: "cx7", GPUsPerNode: 8, Network: catalog.Link{Kind: "infiniband", Bandwidth: 50e9, Latency: 10 * time.Microsecond}}
	d := epDeploy(t, "deepseek-ai/DeepSeek-V3", "h200", 1, 16, "deepep_low_latency", cx7)
	p, err := NewFitted(d)
	if err != nil {
		t.Fatal(err)
	}
	b := Batch{NumDecode: 128, DecodeTokens: 128, DecodeContext: 128 * 1000, Sampled: 128, GroupTokens: 16 * 128}
	ops := opTimes(t, p, &b)
	layers := float64(d.Model.NumMoELayers)
	for _, c := range []struct {
		name      string
		published time.Duration
	}{
		{"experts.dispatch (deepep_low_latency)", 118 * time.Microsecond},
		{"experts.combine (deepep_low_latency)", 195 * time.Microsecond},
	} {
		got := time.Duration(float64(ops[c.name]) / layers)
		if r := float64(got) / float64(c.published); r < 0.5 || r > 1.5 {
			t.Errorf("%s: %v per layer, DeepEP published %v (ratio %.2f)", c.name, got, c.published, r)
		}
	}
}

// Across nodes, small decode batches: DeepEP LL sends each token's 8 FP8
// copies, allgather_reducescatter pushes every rank's tokens through every
// NIC twice (DeepEP README: LL kernels are the decode kernels; vLLM's
// "use --all2all-backend deepep_low_latency ... for decode-optimized
// workloads"). Both pricers agree on the order.
func TestLowLatencyBeatsAllGatherAcrossNodes(t *testing.T) {
	for _, perRank := range []int{1, 8, 64} {
		b := Batch{NumDecode: perRank, DecodeTokens: perRank, DecodeContext: int64(perRank) * 2000, Sampled: perRank, GroupTokens: 16 * perRank}
		for _, mk := range []func(Deployment) (Pricer, error){NewFitted, NewRoofline} {
			comm := map[string]time.Duration{}
			for _, be := range []string{"", "deepep_low_latency"} {
				p, err := mk(epDeploy(t, "deepseek-ai/DeepSeek-V3", "h200", 1, 16, be, nil))
				if err != nil {
					t.Fatal(err)
				}
				comm[be] = p.StepTime(&b).Comm
			}
			if !(comm["deepep_low_latency"] < comm[""]) {
				t.Errorf("%d tokens per rank: deepep_low_latency %v, allgather_reducescatter %v", perRank, comm["deepep_low_latency"], comm[""])
			}
		}
	}
}

// The same deployment on a fabric whose nodes hold the whole group, and on
// one whose nodes hold half of it: crossing costs more, in both pricers,
// for the EP all-to-all, the DP group's gather/scatter and a TP all-reduce.
func TestCrossingNodesCostsMore(t *testing.T) {
	fab := func(perNode int) *catalog.Fabric {
		return &catalog.Fabric{Name: "test", GPUsPerNode: perNode, Network: catalog.Link{Kind: "infiniband", Bandwidth: 50e9, Latency: 10 * time.Microsecond}}
	}
	dec := func(n int) Batch {
		return Batch{NumDecode: n, DecodeTokens: n, DecodeContext: int64(n) * 1000, Sampled: n, GroupTokens: 16 * n}
	}
	for _, tc := range []struct {
		name  string
		model string
		tp    int
		dp    int
		be    string
	}{
		{"EP all-to-all", "deepseek-ai/DeepSeek-V3", 1, 16, "deepep_low_latency"},
		{"EP pplx", "deepseek-ai/DeepSeek-V3", 1, 16, "pplx"},
		{"EP deepep HT", "deepseek-ai/DeepSeek-V3", 1, 16, "deepep_high_throughput"},
		{"DP gather/scatter", "Qwen/Qwen3-30B-A3B", 8, 2, ""},
		{"TP all-reduce", "meta-llama/Llama-3.1-70B-Instruct", 16, 1, ""},
	} {
		for _, mk := range []struct {
			name string
			new  func(Deployment) (Pricer, error)
		}{{"fitted", NewFitted}, {"roofline", NewRoofline}} {
			t.Run(tc.name+"/"+mk.name, func(t *testing.T) {
				var comm [2]time.Duration
				for i, per := range []int{16, 8} {
					d := epDeploy(t, tc.model, "h200", tc.tp, tc.dp, tc.be, fab(per))
					if tc.dp == 1 {
						d.ExpertParallel = false
					}
					p, err := mk.new(d)
					if err != nil {
						t.Fatal(err)
					}
					for _, n := range []int{4, 256} {
						b := dec(n)
						comm[i] += p.StepTime(&b).Comm
					}
				}
				if !(comm[1] > comm[0]) {
					t.Errorf("crossing nodes %v, inside one %v", comm[1], comm[0])
				}
			})
		}
	}
}

// A fabric with the chip's own node numbers prices every step exactly as no
// fabric; a slower network slows only what crosses a node.
func TestFabricReplacesTheChipsNetwork(t *testing.T) {
	c, _ := catalog.LookupChip("h200")
	slow := chipFabric(c)
	slow.Network.Bandwidth /= 4
	batches := []Batch{
		{NumDecode: 16, DecodeTokens: 16, DecodeContext: 16 * 1000, Sampled: 16, GroupTokens: 256},
		mixedBatch(),
	}
	for _, tc := range []struct {
		name    string
		model   string
		tp, dp  int
		be      string
		crosses bool
	}{
		{"TP 16", "meta-llama/Llama-3.1-70B-Instruct", 16, 1, "", true},
		{"DP 2 × TP 8", "Qwen/Qwen3-30B-A3B", 8, 2, "", true},
		{"DP 16 LL", "deepseek-ai/DeepSeek-V3", 1, 16, "deepep_low_latency", true},
		{"DP 16 naive", "deepseek-ai/DeepSeek-V3", 1, 16, "naive", true},
		{"DP 4 × TP 2 HT", "Qwen/Qwen3-30B-A3B", 2, 4, "deepep_high_throughput", false},
		{"DP 4 flashinfer", "Qwen/Qwen3-30B-A3B", 1, 4, "flashinfer_all2allv", false},
	} {
		for _, mk := range []struct {
			name string
			new  func(Deployment) (Pricer, error)
		}{{"fitted", NewFitted}, {"roofline", NewRoofline}} {
			t.Run(tc.name+"/"+mk.name, func(t *testing.T) {
				price := func(f *catalog.Fabric) []Breakdown {
					d := epDeploy(t, tc.model, "h200", tc.tp, tc.dp, tc.be, f)
					d.ExpertParallel = tc.dp > 1
					p, err := mk.new(d)
					if err != nil {
						t.Fatal(err)
					}
					var out []Breakdown
					for i := range batches {
						out = append(out, p.StepTime(&batches[i]))
					}
					return out
				}
				none, same, slower := price(nil), price(chipFabric(c)), price(slow)
				for i := range batches {
					if same[i] != none[i] {
						t.Errorf("batch %d: chip's own fabric %+v, no fabric %+v", i, same[i], none[i])
					}
					if tc.crosses && !(slower[i].Comm > none[i].Comm) {
						t.Errorf("batch %d: a 4× slower network %v, the chip's %v", i, slower[i].Comm, none[i].Comm)
					}
					if !tc.crosses && slower[i] != none[i] {
						t.Errorf("batch %d: inside a node, a slower network changed %+v to %+v", i, none[i], slower[i])
					}
				}
			})
		}
	}
}

// vLLM turns CUDA graphs off for DeepEP's high-throughput kernels with
// DP > 1: a decode step runs eagerly, its host time the eager one.
func TestDeepEPHighThroughputRunsEager(t *testing.T) {
	b := Batch{NumDecode: 32, DecodeTokens: 32, DecodeContext: 32 * 1000, Sampled: 32, GroupTokens: 128}
	host := map[string]time.Duration{}
	for _, be := range []string{"deepep_low_latency", "deepep_high_throughput"} {
		for _, mk := range []func(Deployment) (Pricer, error){NewFitted, NewRoofline} {
			p, err := mk(epDeploy(t, "Qwen/Qwen3-30B-A3B", "h200", 1, 4, be, nil))
			if err != nil {
				t.Fatal(err)
			}
			host[be+p.Name()] = p.StepTime(&b).Host
		}
	}
	for _, n := range []string{"fitted-v1", "roofline-v1"} {
		if !(host["deepep_high_throughput"+n] > host["deepep_low_latency"+n]) {
			t.Errorf("%s: HT host %v, LL host %v", n, host["deepep_high_throughput"+n], host["deepep_low_latency"+n])
		}
	}
}

func TestValidateAll2All(t *testing.T) {
	for _, tc := range []struct {
		name   string
		model  string
		change func(*Deployment)
		want   string // "" = valid
	}{
		{"default", "Qwen/Qwen3-30B-A3B", func(d *Deployment) {}, ""},
		{"unknown", "Qwen/Qwen3-30B-A3B", func(d *Deployment) { d.All2AllBackend = "deepep" },
			`--all2all-backend "deepep": allowed [allgather_reducescatter naive pplx deepep_high_throughput deepep_low_latency flashinfer_all2allv]`},
		{"kernels need EP", "Qwen/Qwen3-30B-A3B", func(d *Deployment) { d.ExpertParallel, d.All2AllBackend = false, "pplx" },
			"--all2all-backend pplx needs --enable-expert-parallel"},
		{"naive without EP", "Qwen/Qwen3-30B-A3B", func(d *Deployment) { d.ExpertParallel, d.All2AllBackend = false, "naive" }, ""},
		{"dense model", "meta-llama/Llama-3.1-8B", func(d *Deployment) { d.ExpertParallel, d.All2AllBackend = false, "deepep_low_latency" }, ""},
		{"one DP rank", "Qwen/Qwen3-30B-A3B", func(d *Deployment) { d.DP, d.ExpertParallel, d.All2AllBackend = 1, false, "pplx" }, ""},
		{"flashinfer across nodes", "Qwen/Qwen3-30B-A3B", func(d *Deployment) { d.DP, d.All2AllBackend = 16, "flashinfer_all2allv" },
			"--all2all-backend flashinfer_all2allv moves tokens over (multi-node) NVLink only: the expert-parallel group of 16 GPUs spans more than one NVLink domain of 8 GPUs (h200)"},
		{"flashinfer in an NVL72 domain", "Qwen/Qwen3-30B-A3B", func(d *Deployment) {
			d.DP, d.All2AllBackend = 16, "flashinfer_all2allv"
			d.Fabric = &catalog.Fabric{Name: "nvl72", GPUsPerNode: 72, Network: catalog.Link{Bandwidth: 50e9}}
		}, ""},
		{"fabric without nodes", "Qwen/Qwen3-30B-A3B", func(d *Deployment) {
			d.Fabric = &catalog.Fabric{Name: "broken", Network: catalog.Link{Bandwidth: 50e9}}
		},
			`fabric "broken": gpus per node 0 must be ≥ 1`},
		{"fabric without network", "Qwen/Qwen3-30B-A3B", func(d *Deployment) { d.Fabric = &catalog.Fabric{Name: "broken", GPUsPerNode: 8} },
			`fabric "broken": gpus per node 8 must be ≥ 1, network bandwidth 0 B/s > 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := epDeploy(t, tc.model, "h200", 1, 4, "", nil)
			if !d.Model.IsMoE() {
				d.ExpertParallel = false
			}
			tc.change(&d)
			err := Validate(d)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if tc.want != "" {
				if _, err := NewFitted(d); err == nil {
					t.Errorf("NewFitted accepted it")
				}
				if _, err := NewRoofline(d); err == nil {
					t.Errorf("NewRoofline accepted it")
				}
			}
		})
	}
}

// Every name vLLM's flag takes is accepted and priced by both pricers.
func TestEveryAll2AllBackendPrices(t *testing.T) {
	b := Batch{NumDecode: 8, DecodeTokens: 8, DecodeContext: 8000, Sampled: 8, GroupTokens: 32}
	for _, be := range All2AllBackends() {
		d := epDeploy(t, "Qwen/Qwen3-30B-A3B", "h200", 1, 4, be, nil)
		for _, mk := range []func(Deployment) (Pricer, error){NewFitted, NewRoofline} {
			p, err := mk(d)
			if err != nil {
				t.Fatalf("%s: %v", be, err)
			}
			if bd := p.StepTime(&b); bd.Comm <= 0 || bd.Total <= bd.Comm {
				t.Errorf("%s %s: %+v", be, p.Name(), bd)
			}
		}
	}
}

func TestA2AGroupStepTimeDoesNotAllocate(t *testing.T) {
	for _, be := range []string{"deepep_low_latency", "naive"} {
		p, err := NewFitted(epDeploy(t, "deepseek-ai/DeepSeek-V3", "h200", 1, 16, be, nil))
		if err != nil {
			t.Fatal(err)
		}
		bs := make([]Batch, 16)
		for i := range bs {
			bs[i] = Batch{NumDecode: i, DecodeTokens: i, DecodeContext: int64(i) * 1000, Sampled: i}
		}
		gp := p.(GroupPricer)
		if n := testing.AllocsPerRun(50, func() { gp.GroupStepTime(bs) }); n != 0 {
			t.Fatalf("%s: GroupStepTime allocates %v times", be, n)
		}
	}
}

// Uniform routing: the chance a token's k experts miss a rank's e of E.
func TestHoldProb(t *testing.T) {
	for _, tc := range []struct {
		E, k, e, want float64
	}{
		{8, 2, 4, 1 - (4.0/8)*(3.0/7)}, // Mixtral over 2 ranks
		{8, 2, 8, 1},
		{8, 2, 0, 0},
		{128, 8, 32, 1 - 0.09274726889357488}, // Qwen3-30B-A3B over 4 ranks: C(96,8)/C(128,8)
	} {
		if got := holdProb(tc.E, tc.k, tc.e); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("holdProb(%g, %g, %g) = %v, want %v", tc.E, tc.k, tc.e, got, tc.want)
		}
	}
	if got := distinctHolders(128, 8, 1); got != 1 {
		t.Errorf("one rank holds %v", got)
	}
}

// BenchmarkGroupStepTimeA2A prices a 16-rank DeepSeek-V3 decode step with
// DeepEP LL's cross-node all-to-all.
func BenchmarkGroupStepTimeA2A(b *testing.B) {
	p, err := NewFitted(epDeploy(b, "deepseek-ai/DeepSeek-V3", "h200", 1, 16, "deepep_low_latency", nil))
	if err != nil {
		b.Fatal(err)
	}
	bs := make([]Batch, 16)
	for i := range bs {
		bs[i] = Batch{NumDecode: 32, DecodeTokens: 32, DecodeContext: 32 * 2000, Sampled: 32}
	}
	gp := p.(GroupPricer)
	b.ReportAllocs()
	for b.Loop() {
		gp.GroupStepTime(bs)
	}
}
