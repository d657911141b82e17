package kernel

import (
	"fmt"
	"time"

	"blis/catalog"
)

// Pipeline parallelism as vLLM v1 runs it (v0.11–main, late 2025):
//   - vllm/distributed/utils.py get_pp_indices splits the decoder layers
//     into PP contiguous stages (PPLayerPartition); the embedding lives on
//     the first stage, the final norm and LM head on the last
//     (models/utils.py PPMissingLayer);
//   - each stage sends its hidden states and residual to the next as
//     IntermediateTensors (gpu_model_runner.py, parallel_state.py
//     send_tensor_dict: every TP rank sends its 1/TP slice to its peer);
//   - the engine core keeps up to PP batches in flight
//     (v1/engine/core.py step_with_batch_queue, batch_queue_size =
//     executor.max_concurrent_batches = PP in multiproc_executor.py).

// ppSize is the number of pipeline stages (at least 1).
func (d Deployment) ppSize() int { return max(d.PP, 1) }

// PPLayerPartition is vLLM's default split of layers decoder layers over pp
// stages (get_pp_indices without VLLM_PP_LAYER_PARTITION): layers/pp each,
// the remainder one layer each to the stages before the last, from the
// second-to-last backwards (the last holds the LM head, the first the
// embedding). pp < 1 is taken as 1.
func PPLayerPartition(layers, pp int) []int {
	pp = max(pp, 1)
	parts := make([]int, pp)
	for i := range parts {
		parts[i] = layers / pp
	}
	for i := 2; i < layers%pp+2; i++ {
		parts[pp-i]++
	}
	return parts
}

// stageLayers is the [start, end) range of decoder layers of d's stage.
func (d Deployment) stageLayers() (start, end int) {
	parts := PPLayerPartition(d.Model.NumLayers, d.ppSize())
	st := min(max(d.PPStage, 0), len(parts)-1)
	for i := 0; i < st; i++ {
		start += parts[i]
	}
	return start, start + parts[st]
}

func (d Deployment) firstStage() bool { return d.ppSize() == 1 || d.PPStage <= 0 }
func (d Deployment) lastStage() bool  { return d.ppSize() == 1 || d.PPStage >= d.ppSize()-1 }

// stageLayerKinds lists, for a model with a stored operator graph, the kind
// of every decoder layer of d's stage, bottom to top (nil without a graph).
func stageLayerKinds(d Deployment, g *catalog.Graph) []string {
	if g == nil {
		return nil
	}
	all := g.LayerKinds()
	start, end := d.stageLayers()
	if end > len(all) {
		return nil
	}
	return all[start:end]
}

// restrictShape narrows s, a whole model's shape, to d's pipeline stage:
// its layers' counts (from the operator graph's layer order when the model
// has one; else leading dense layers and the config's sliding-window
// table), the embedding on the first stage only, the final norm and LM
// head on the last only.
func restrictShape(d Deployment, s *shape) {
	if d.ppSize() == 1 {
		return
	}
	m := d.Model
	start, end := d.stageLayers()
	var moe, sw int
	g, err := catalog.LookupGraph(m.ID)
	if kinds := stageLayerKinds(d, g); err == nil && kinds != nil {
		for _, name := range kinds {
			k := g.Kind(name)
			if k == nil {
				continue
			}
			if k.MoE() != nil {
				moe++
			}
			if a := k.Attention(); a != nil && a.Window > 0 {
				sw++
			}
		}
	} else {
		firstMoE := m.NumLayers - m.NumMoELayers
		moe = max(0, end-max(start, firstMoE))
		for i := start; i < end; i++ {
			if i < len(m.SlidingLayers) && m.SlidingLayers[i] {
				sw++
			}
		}
		if len(m.SlidingLayers) == 0 && m.SlidingWindowLayers == m.NumLayers {
			sw = end - start
		}
	}
	s.L = float64(end - start)
	s.Lmoe = float64(moe)
	s.Ldense = s.L - s.Lmoe
	s.Lsw = float64(sw)
	s.Lfull = s.L - s.Lsw
	if !d.firstStage() {
		s.embed, s.vision, s.positions = 0, 0, 0 // OPTDecoder's embed_positions sits with embed_tokens
	}
	if !d.lastStage() {
		s.lmHead, s.lmHeadGEMM, s.finalNorm = 0, 0, 0
	}
}

// Pipeline prices a step of a pipeline-parallel deployment stage by stage.
// As a Pricer its StepTime is one batch alone in the pipeline: every
// stage's time and every send in sequence; an engine that keeps several
// batches in flight asks StageTimes and overlaps them itself.
type Pipeline struct {
	Stages []Pricer
	// Per stage boundary i → i+1: the send's fixed seconds and seconds per
	// token of the step (none past their length: a Pipeline built from
	// stages alone, as tests do, sends for free).
	sendFixed, sendPerToken []float64
}

// NewPipeline builds one pricer per stage of d with build (NewRoofline or
// NewFitted), each seeing only its stage's layers, and prices the sends
// between stages as vLLM's send_tensor_dict / recv_tensor_dict with
// all_gather_group = the TP group do them: each TP rank sends its 1/TP of
// the hidden states and the residual (2 × hidden × dtype bytes per token)
// to the same rank of the next stage, over NVLink, or over the inter-node
// network (the fabric's, when d names one) when the two ranks sit on
// different nodes, plus the link's latency; the next stage then
// all-gathers the slices over its TP group.
func NewPipeline(d Deployment, build func(Deployment) (Pricer, error)) (*Pipeline, error) {
	if err := Validate(d); err != nil {
		return nil, err
	}
	pp := d.ppSize()
	p := &Pipeline{Stages: make([]Pricer, pp), sendFixed: make([]float64, pp-1), sendPerToken: make([]float64, pp-1)}
	for i := range p.Stages {
		ds := d
		ds.PPStage = i
		st, err := build(ds)
		if err != nil {
			return nil, err
		}
		p.Stages[i] = st
	}
	s := newShape(d)
	nl, c := d.nodeLink(), d.Chip
	perRank := 2 * s.H * s.dtypeB / float64(d.TP)
	for i := range p.sendFixed {
		bw, lat := c.NVLinkBW, c.P2PLatency
		if nl.perNode > 0 && nl.bandwidth > 0 {
			for r := i * d.TP; r < (i+1)*d.TP; r++ {
				if r/nl.perNode != (r+d.TP)/nl.perNode {
					bw, lat = nl.bandwidth, nl.latency
					break
				}
			}
		}
		p.sendFixed[i], p.sendPerToken[i] = lat, perRank/bw
		if d.TP > 1 {
			// The receiving stage all-gathers the slices over its TP group
			// (recv_tensor_dict's all_gather_group): a ring moving
			// (TP−1)/TP of the whole tensor.
			n := float64(d.TP)
			gbw, glat := d.ringLink(d.TP)
			p.sendFixed[i] += glat
			p.sendPerToken[i] += (n - 1) / n * 2 * s.H * s.dtypeB / gbw
		}
	}
	return p, nil
}

// NewPipelineOf is a pipeline of the given stage pricers with a fixed send
// after every stage but the last (for callers that price stages their own
// way, and tests that check the pipeline by hand).
func NewPipelineOf(stages []Pricer, send time.Duration) *Pipeline {
	p := &Pipeline{Stages: stages}
	for range max(len(stages)-1, 0) {
		p.sendFixed = append(p.sendFixed, send.Seconds())
		p.sendPerToken = append(p.sendPerToken, 0)
	}
	return p
}

// SendTime is the send of a step of tokens new tokens from stage i to
// stage i + 1 (0 after the last stage).
func (p *Pipeline) SendTime(i, tokens int) time.Duration {
	if i < 0 || i >= len(p.sendFixed) || tokens <= 0 {
		return 0
	}
	return seconds(p.sendFixed[i] + float64(tokens)*p.sendPerToken[i])
}

// Name is the stages' pricer's name.
func (p *Pipeline) Name() string { return p.Stages[0].Name() }

// StageTimes fills dst (grown as needed) with each stage's time for b,
// the send to the next stage included, and returns it. Stages before the
// last sample nothing: their batch has no sampled rows. b is left as it
// was given.
func (p *Pipeline) StageTimes(b *Batch, dst []Breakdown) []Breakdown {
	dst = dst[:0]
	// b itself, its Sampled zeroed for the stages before the last and put
	// back: a copy would escape to the heap through the Pricer interface.
	sampled := b.Sampled
	defer func() { b.Sampled = sampled }()
	for i, st := range p.Stages {
		var bd Breakdown
		b.Sampled = 0
		if i == len(p.Stages)-1 {
			b.Sampled = sampled
			bd = st.StepTime(b)
		} else {
			bd = st.StepTime(b)
			if send := p.SendTime(i, b.Tokens()); send > 0 {
				bd.Comm += send
				bd.Total += send
			}
		}
		dst = append(dst, bd)
	}
	return dst
}

// StepTime is one batch alone in the pipeline: the stages' times summed.
func (p *Pipeline) StepTime(b *Batch) Breakdown {
	var out Breakdown
	var buf [8]Breakdown
	for _, bd := range p.StageTimes(b, buf[:0]) {
		out.Add(bd)
	}
	return out
}

// validatePP checks --pipeline-parallel-size as vLLM would refuse it.
func validatePP(d Deployment) error {
	switch {
	case d.PP < 0:
		return fmt.Errorf("--pipeline-parallel-size %d must be ≥ 1", d.PP)
	case d.ppSize() > d.Model.NumLayers:
		return fmt.Errorf("--pipeline-parallel-size %d exceeds the %d decoder layers of %s: every stage needs at least one layer", d.PP, d.Model.NumLayers, d.Model.ID)
	case d.PPStage < 0 || d.PPStage >= d.ppSize():
		return fmt.Errorf("pipeline stage %d outside 0..%d", d.PPStage, d.ppSize()-1)
	}
	return nil
}
