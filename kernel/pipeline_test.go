package kernel

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// vLLM's get_pp_indices split, the remainder from the second-to-last stage
// backwards (vllm/distributed/utils.py; 61 layers: the docs' DeepSeek-V3
// example).
func TestPPLayerPartition(t *testing.T) {
	tests := []struct {
		layers, pp int
		want       []int
	}{
		{80, 1, []int{80}},
		{32, 2, []int{16, 16}},
		{32, 4, []int{8, 8, 8, 8}},
		{22, 4, []int{5, 6, 6, 5}},
		{5, 3, []int{2, 2, 1}},
		{61, 2, []int{31, 30}},
		{61, 4, []int{15, 15, 16, 15}},
		{7, 4, []int{2, 2, 2, 1}},
		{4, 4, []int{1, 1, 1, 1}},
	}
	for _, tc := range tests {
		if got := PPLayerPartition(tc.layers, tc.pp); !slices.Equal(got, tc.want) {
			t.Errorf("PPLayerPartition(%d, %d) = %v, want %v", tc.layers, tc.pp, got, tc.want)
		}
	}
}

func TestValidatePP(t *testing.T) {
	d := deploy(t, "llama-3.1-8b", "h100", 1)
	for _, tc := range []struct {
		pp, stage int
		want      string
	}{
		{-1, 0, "--pipeline-parallel-size -1 must be ≥ 1"},
		{33, 0, "--pipeline-parallel-size 33 exceeds the 32 decoder layers"},
		{2, 2, "pipeline stage 2 outside 0..1"},
		{32, 31, ""},
	} {
		d.PP, d.PPStage = tc.pp, tc.stage
		err := Validate(d)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PP %d stage %d: error %v, want %q", tc.pp, tc.stage, err, tc.want)
		}
	}
}

// At PP = 2 each stage's GPUs hold half the layers: the weights per GPU
// halve (the embedding on the first stage, the LM head on the last), the
// stages' weights sum to the whole model's (the RoPE cache, a buffer every
// stage builds, counted once more), and the KV pool is the smaller stage's.
func TestPlanMemoryPP(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "qwen3-30b-a3b", "gpt-oss-120b"} {
		d := deploy(t, model, "h200", 1)
		one, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		d.PP = 2
		two, err := PlanMemory(d)
		if err != nil {
			t.Fatal(err)
		}
		var sum float64
		blocks := math.MaxInt
		for st := 0; st < 2; st++ {
			ds := d
			ds.PPStage = st
			w, _ := WeightBytes(ds)
			sum += w
			p, err := planStage(ds, DefaultMemoryAssumptions)
			if err != nil {
				t.Fatal(err)
			}
			blocks = min(blocks, p.NumBlocks)
			if r := w / one.WeightBytes; r < 0.4 || r > 0.6 {
				t.Errorf("%s stage %d: %.2f GiB weights per GPU, %.2f of PP 1's", model, st, w/gib, r)
			}
		}
		rope := newShape(d).ropeCache
		if math.Abs(sum-rope-one.WeightBytes) > 1 {
			t.Errorf("%s: stages' weights %.0f B − RoPE cache %.0f B ≠ PP 1's %.0f B", model, sum, rope, one.WeightBytes)
		}
		if two.NumBlocks != blocks {
			t.Errorf("%s: PP 2 plan has %d blocks, min over stages %d", model, two.NumBlocks, blocks)
		}
		if two.KVTokens < 2*one.KVTokens {
			t.Errorf("%s: PP 2 KV %d tokens, want at least twice PP 1's %d (half the layers, more free memory)", model, two.KVTokens, one.KVTokens)
		}
	}
}

// Each stage prices only its layers: with the roofline, the stages'
// compute and memory times add up to the whole model's (within rounding),
// the embedding's and LM head's shares on the first and last stage.
func TestPipelineStagesSplitTheStep(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3"} {
		d := deploy(t, model, "h200", 8)
		whole, err := NewRoofline(d)
		if err != nil {
			t.Fatal(err)
		}
		d.PP = 2
		pl, err := NewPipeline(d, NewRoofline)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []Batch{
			{NumDecode: 64, DecodeTokens: 64, DecodeContext: 64 * 2000, Sampled: 64},
			{NumPrefill: 1, PrefillTokens: 4096, PrefillAttnPairs: 4096 * 4097 / 2, Sampled: 1},
		} {
			w := whole.StepTime(&b)
			st := pl.StageTimes(&b, nil)
			// Non-last stages sample nothing (no LM head): price the whole
			// with the LM head's compute added back on the last stage only.
			comp := st[0].Compute + st[1].Compute
			if diff := (comp - w.Compute).Abs(); diff > 2*time.Nanosecond {
				t.Errorf("%s: stages' compute %v + %v ≠ whole %v", model, st[0].Compute, st[1].Compute, w.Compute)
			}
			// Memory: the first stage reads no LM head.
			mem := st[0].Memory + st[1].Memory
			if diff := (mem - w.Memory).Abs(); diff > 2*time.Nanosecond {
				t.Errorf("%s: stages' memory %v + %v ≠ whole %v", model, st[0].Memory, st[1].Memory, w.Memory)
			}
		}
	}
}

// The send between stages: each TP rank's 1/TP of the hidden states and
// residual over NVLink inside a node, over the network when the next
// stage's GPUs are on another node (PP × TP > GPUs per node), then the
// receiving stage's all-gather over its TP group on NVLink.
func TestPipelineSend(t *testing.T) {
	for _, tc := range []struct {
		tp      int
		network bool
	}{{4, false}, {8, true}} {
		d := deploy(t, "llama-3.1-70b", "h100", tc.tp)
		d.PP = 2
		pl, err := NewPipeline(d, NewRoofline)
		if err != nil {
			t.Fatal(err)
		}
		c := d.Chip
		bw, lat := c.NVLinkBW, c.P2PLatency
		if tc.network {
			bw, lat = c.InterNode, c.P2PLatency
			if nl := d.nodeLink(); nl.bandwidth > 0 {
				bw, lat = nl.bandwidth, nl.latency
			}
		}
		tp := float64(tc.tp)
		tensor := 2 * float64(d.Model.HiddenSize) * 2 // hidden states + residual, bf16
		perTok := tensor/tp/bw + (tp-1)/tp*tensor/c.NVLinkBW
		lat += c.P2PLatency // the receiving stage's all-gather
		if math.Abs(pl.sendPerToken[0]-perTok) > 1e-18 || math.Abs(pl.sendFixed[0]-lat) > 1e-15 {
			t.Errorf("TP %d: send %g s + %g s/token, want %g + %g", tc.tp, pl.sendFixed[0], pl.sendPerToken[0], lat, perTok)
		}
		// One batch alone crosses both stages and the send.
		b := Batch{NumDecode: 8, DecodeTokens: 8, DecodeContext: 8000, Sampled: 8}
		st := pl.StageTimes(&b, nil)
		one := pl.StepTime(&b)
		send := seconds(lat + 8*perTok)
		if one.Total != st[0].Total+st[1].Total || st[0].Comm < send {
			t.Errorf("TP %d: alone %v, stages %v + %v, send %v", tc.tp, one.Total, st[0].Total, st[1].Total, send)
		}
	}
}

// The fitted pricer walks the operator graph: each stage adds its layers'
// operators (by kind, in the graph's stack order), the embedding on the
// first and the head on the last, so the stages' operator times add up to
// the whole model's.
func TestFittedStagesWalkTheGraph(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "deepseek-v3"} {
		d := deploy(t, model, "h200", 8)
		whole, err := NewFitted(d)
		if err != nil {
			t.Fatal(err)
		}
		d.PP = 2
		pl, err := NewPipeline(d, NewFitted)
		if err != nil {
			t.Fatal(err)
		}
		b := Batch{NumDecode: 64, DecodeTokens: 64, DecodeContext: 64 * 2000, Sampled: 64}
		w := whole.StepTime(&b)
		st := pl.StageTimes(&b, nil)
		comp := st[0].Compute + st[1].Compute
		if diff := (comp - w.Compute).Abs(); diff > 4*time.Nanosecond {
			t.Errorf("%s: stages' compute %v + %v ≠ whole %v", model, st[0].Compute, st[1].Compute, w.Compute)
		}
		if st[0].Compute == 0 || st[1].Compute == 0 {
			t.Errorf("%s: a stage computes nothing: %v, %v", model, st[0].Compute, st[1].Compute)
		}
	}
}

// BenchmarkPipelineStageTimes prices a decode step stage by stage (four
// stages of Llama-3.1-70B, fitted pricer); it allocates nothing.
//
//	go test ./kernel -run '^$' -bench PipelineStageTimes -benchmem
func BenchmarkPipelineStageTimes(b *testing.B) {
	d := deploy(b, "llama-3.1-70b", "h100", 2)
	d.PP = 4
	pl, err := NewPipeline(d, NewFitted)
	if err != nil {
		b.Fatal(err)
	}
	bt := Batch{NumDecode: 256, DecodeTokens: 256, DecodeContext: 256 * 1500, Sampled: 256}
	buf := pl.StageTimes(&bt, nil)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = pl.StageTimes(&bt, buf)
	}
}
