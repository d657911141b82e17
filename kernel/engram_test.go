package kernel

import (
	"math"
	"strings"
	"testing"
	"time"

	"blis/catalog"
)

// engramDeploy is a catalog model given DeepSeek-V4.1-Flash's Engram
// tables at layers 1 and 14.
func engramDeploy(t *testing.T, tp, dp int, p *EngramPlacement) Deployment {
	t.Helper()
	d := deploy(t, "llama-3.1-70b", "h200", tp)
	m := *d.Model
	m.Engram = &catalog.Engram{Layers: []int{1, 14}, Rows: []int64{384006168, 384016682},
		MaxNgram: 4, Heads: 8, HeadDim: 256, ValueBytes: 1, ScaleBytesPerRow: 8}
	d.Model, d.DP, d.Engram = &m, dp, p
	return d
}

func TestEngramPlacementMemory(t *testing.T) {
	const gib = 1 << 30
	onGPU := &EngramPlacement{CPUOffload: false, DPSharding: true}
	noShard := &EngramPlacement{CPUOffload: true}
	shared := &EngramPlacement{CPUOffload: true, DPSharedMemory: true}
	tests := []struct {
		name          string
		tp, dp        int
		p             *EngramPlacement
		gpuGiB, hostG float64 // per GPU; per node
	}{
		// vllm#57491: "47.2 GiB per rank at TP=4".
		{"tp4 on the GPU", 4, 1, onGPU, 47.21, 0},
		{"tp4 default: host memory", 4, 1, nil, 0, 188.83},
		{"tp8 on the GPU", 8, 1, onGPU, 23.60, 0},
		// DP 2 × TP 4 on an 8-GPU node: the heads split over both replicas.
		{"dp2 sharded on the GPU", 4, 2, onGPU, 23.60, 0},
		{"dp2 sharded in host memory", 4, 2, nil, 0, 188.83},
		{"dp2 unsharded in host memory: a copy per replica", 4, 2, noShard, 0, 2 * 188.83},
		{"dp2 shared memory: one copy per node", 4, 2, shared, 0, 188.83},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := engramDeploy(t, tc.tp, tc.dp, tc.p)
			if got := EngramGPUBytes(d) / gib; math.Abs(got-tc.gpuGiB) > 0.01 {
				t.Errorf("GPU %.2f GiB, want %.2f", got, tc.gpuGiB)
			}
			if got := EngramHostBytesPerNode(d) / gib; math.Abs(got-tc.hostG) > 0.01 {
				t.Errorf("host %.2f GiB per node, want %.2f", got, tc.hostG)
			}
		})
	}
	// The tables on the GPU come out of the KV pool.
	on, off := engramDeploy(t, 8, 1, onGPU), engramDeploy(t, 8, 1, nil)
	pOn, err := PlanMemory(on)
	if err != nil {
		t.Fatal(err)
	}
	pOff, err := PlanMemory(off)
	if err != nil {
		t.Fatal(err)
	}
	if diff := (pOn.WeightBytes - pOff.WeightBytes) / gib; math.Abs(diff-23.60) > 0.01 {
		t.Errorf("weights differ by %.2f GiB, want the 23.60 GiB of tables", diff)
	}
	if pOn.NumBlocks >= pOff.NumBlocks {
		t.Errorf("KV blocks %d with the tables on the GPU, %d without: want fewer", pOn.NumBlocks, pOff.NumBlocks)
	}
}

func TestEngramValidate(t *testing.T) {
	tests := []struct {
		name string
		d    func(t *testing.T) Deployment
		want string
	}{
		{"no engram layers", func(t *testing.T) Deployment {
			d := deploy(t, "llama-3.1-8b", "h200", 1)
			d.Engram = &EngramPlacement{CPUOffload: true}
			return d
		}, "has no Engram layers"},
		{"shared memory on the GPU", func(t *testing.T) Deployment {
			return engramDeploy(t, 4, 2, &EngramPlacement{DPSharedMemory: true})
		}, "requires cpu_offload true"},
		{"shared memory without DP", func(t *testing.T) Deployment {
			return engramDeploy(t, 4, 1, &EngramPlacement{CPUOffload: true, DPSharedMemory: true})
		}, "requires --data-parallel-size > 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.d(t))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
	if err := Validate(engramDeploy(t, 4, 1, nil)); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestEngramStall(t *testing.T) {
	d := engramDeploy(t, 4, 1, nil)
	c := newEngramCost(d)
	// Layer 1's rows on one TP4 rank: 6 heads × 264 B per token, read over
	// UVA at half the host link.
	perToken := 24.0 * 264 / 4
	read := func(tokens int) float64 {
		return float64(tokens) * perToken / (d.Chip.HostLinkBW * engramUVAEfficiency)
	}
	tests := []struct {
		name   string
		tokens int
		gpu    time.Duration
		want   time.Duration
	}{
		{"no tokens", 0, 10 * time.Millisecond, 0},
		{"decode batch: hidden behind layer 0", 64, 20 * time.Millisecond, 0},
		// 8192 tokens: 13 MB per layer; layer 1 starts 1/80 into the step.
		{"long prefill, fast step: layer 1 waits", 8192, 5 * time.Millisecond,
			time.Duration(math.Round((read(8192) + engramLookupLatency.Seconds() - 5e-3/80) * 1e9))},
		{"long prefill, slow step: hidden", 8192, 200 * time.Millisecond, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := c.stall(tc.tokens, tc.tokens, tc.gpu)
			if d := got - tc.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("stall %v, want %v", got, tc.want)
			}
		})
	}
	// On the GPU the rows come from HBM: far faster than over the host link.
	onGPU := newEngramCost(engramDeploy(t, 4, 1, &EngramPlacement{}))
	if a, b := onGPU.stall(8192, 8192, 5*time.Millisecond), c.stall(8192, 8192, 5*time.Millisecond); a >= b {
		t.Errorf("HBM-resident stall %v not below the UVA one %v", a, b)
	}
	if off := newEngramCost(deploy(t, "llama-3.1-8b", "h200", 1)); off.on || off.stall(8192, 8192, time.Millisecond) != 0 {
		t.Error("a model without Engram has a lookup cost")
	}
}

// Both pricers charge a step the Engram wait: with a short model whose
// first Engram layer comes early, a long prefill over the host link costs
// more than the same step with the tables in HBM.
func TestEngramPricers(t *testing.T) {
	b := Batch{NumPrefill: 1, PrefillTokens: 8192, PrefillAttnPairs: 8192 * 8193 / 2, Sampled: 1}
	for _, name := range []string{"fitted", "roofline"} {
		t.Run(name, func(t *testing.T) {
			price := func(p *EngramPlacement) Breakdown {
				d := engramDeploy(t, 8, 1, p)
				d.Model.Engram.Layers = []int{0, 1} // the rows needed at once
				var pr Pricer
				var err error
				if name == "fitted" {
					pr, err = NewFitted(d)
				} else {
					pr, err = NewRoofline(d)
				}
				if err != nil {
					t.Fatal(err)
				}
				return pr.StepTime(&b)
			}
			host, hbm := price(nil), price(&EngramPlacement{})
			if host.Total <= hbm.Total || host.Memory <= hbm.Memory {
				t.Errorf("host-resident step %v (memory %v) not above the HBM-resident %v (%v)", host.Total, host.Memory, hbm.Total, hbm.Memory)
			}
		})
	}
}
