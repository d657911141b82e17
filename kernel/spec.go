package kernel

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"blis/catalog"
)

// Speculative decoding as vLLM v1 runs it (v0.11+; proposer
// vllm/v1/spec_decode/eagle.py EagleProposer.propose @008603a3, runner
// vllm/v1/worker/gpu_model_runner.py propose_draft_token_ids):
//
//   - the target's forward verifies every scheduled token: a row carrying
//     s drafts schedules 1 + s query tokens (Batch.SpecTokens, already in
//     DecodeTokens), priced as any step;
//   - then, on the last pipeline stage, the proposer drafts k =
//     num_speculative_tokens tokens for every request of the batch
//     (batch_size = next_token_ids.shape[0], partial prefills included,
//     their drafts discarded):
//   - eagle, eagle3, mtp, draft_model: a first draft pass over every
//     scheduled token (the draft reads the target's hidden states of all
//     of them; logits only at each request's last token), then k − 1
//     passes of one token per request, the context one longer each time.
//     Every pass is padded to the next CUDA-graph capture size and replayed
//     as PIECEWISE graphs when it fits (num_tokens ≤
//     max_cudagraph_capture_size and the cudagraph mode has PIECEWISE),
//     else run eagerly; compute_logits and argmax run eagerly after it;
//   - dspark (vllm/v1/worker/gpu/spec_decode/dspark/speculator.py@02957b5a,
//     on DFlash's machinery): the target's fused hidden states of every
//     scheduled token are projected into the draft's context KV (main_proj
//     and each stage's K/V projection, catalog.DSparkDraft.Context), then
//     ONE forward of the stage stack over a block of k query positions per
//     request (the anchor and k − 1 noise tokens: sample_from_anchor), the
//     LM head over all of them, and k sequential Markov steps of one row
//     per request; the block forward and the Markov loop are one FULL CUDA
//     graph when the decode cudagraph mode is FULL and the block's tokens
//     fit a capture size (the list rounded to multiples of k), else eager;
//   - ngram, suffix: no GPU pass; a CPU lookup per request that samples.

// maxSpecTokens bounds num_speculative_tokens: vLLM sets no hard limit, but
// acceptance falls geometrically with depth and no published proposer
// drafts more than a few tens of tokens.
const maxSpecTokens = 32

// SpecMethods are the --speculative-config methods the kernel prices. Each
// call returns a fresh slice.
func SpecMethods() []string {
	return []string{"mtp", "eagle", "eagle3", "draft_model", "dspark", "ngram", "suffix"}
}

// specK is num_speculative_tokens when speculative decoding is on, else 0.
func (d Deployment) specK() int {
	if d.Spec.Method == "" {
		return 0
	}
	return max(d.Spec.NumTokens, 0)
}

// draftTP is the draft's tensor-parallel size (draft_tensor_parallel_size,
// default the target's).
func (d Deployment) draftTP() int {
	if d.Spec.DraftTP > 0 {
		return d.Spec.DraftTP
	}
	return d.TP
}

// validateSpec refuses a --speculative-config vLLM would refuse or the
// kernel cannot price (vllm/config/speculative.py SpeculativeConfig).
func validateSpec(d Deployment) error {
	s := d.Spec
	if s == (Speculation{}) {
		return nil
	}
	if s.Method == "" {
		return fmt.Errorf("--speculative-config num_speculative_tokens %d without a method (allowed: %v)", s.NumTokens, SpecMethods())
	}
	if !slices.Contains(SpecMethods(), s.Method) {
		return fmt.Errorf("--speculative-config method %q is not supported (allowed: %v)", s.Method, SpecMethods())
	}
	if s.NumTokens < 1 || s.NumTokens > maxSpecTokens {
		return fmt.Errorf("--speculative-config num_speculative_tokens %d must be in 1..%d", s.NumTokens, maxSpecTokens)
	}
	if s.DraftTP < 0 {
		return fmt.Errorf("--speculative-config draft_tensor_parallel_size %d must be ≥ 1", s.DraftTP)
	}
	if s.DraftTP > 0 && s.DraftTP != 1 && s.DraftTP != d.TP {
		return fmt.Errorf("--speculative-config draft_tensor_parallel_size %d cannot be other than 1 or --tensor-parallel-size %d (vllm/config/speculative.py)", s.DraftTP, d.TP)
	}
	switch s.Method {
	case "ngram", "suffix":
		if s.DraftModel != "" {
			return fmt.Errorf("--speculative-config method %s runs no draft model; drop model %q", s.Method, s.DraftModel)
		}
		return nil
	case "mtp":
		if !draftIsTarget(d) {
			return fmt.Errorf("--speculative-config method mtp runs the target's own MTP layers: model %q must be empty or the target %s", s.DraftModel, d.Model.ID)
		}
		g, err := catalog.LookupGraph(d.Model.ID)
		if err != nil {
			return err
		}
		if g.Draft == nil || g.Draft.Method != "mtp" || len(g.Draft.Layers) == 0 {
			return fmt.Errorf("--speculative-config method mtp: %s has no MTP layers (num_nextn_predict_layers, mtp_num_hidden_layers); models that have: %v", d.Model.ID, catalog.MTPModels())
		}
		if n := g.Draft.NumLayers(); n > 0 && s.NumTokens > n && s.NumTokens%n != 0 {
			return fmt.Errorf("--speculative-config num_speculative_tokens %d: above the %d MTP layers of %s it must be a multiple of them (vllm/config/speculative.py)", s.NumTokens, n, d.Model.ID)
		}
	case "dspark":
		// vLLM points a DeepSeek DSpark draft at the target checkpoint,
		// which ships the stages (SpeculativeConfig.__post_init__).
		if !draftIsTarget(d) {
			return fmt.Errorf("--speculative-config method dspark runs the DSpark stages the target's checkpoint ships: model %q must be empty or the target %s", s.DraftModel, d.Model.ID)
		}
		g, err := catalog.LookupGraph(d.Model.ID)
		if err != nil {
			return err
		}
		if _, err := catalog.DeriveDSparkDraft(g); err != nil {
			return fmt.Errorf("--speculative-config method dspark: %w", err)
		}
	case "eagle", "eagle3":
		// The head's checkpoint (model, e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B)
		// is not read: the catalog holds no EAGLE heads, and the head is
		// derived from the target (catalog.DeriveEagleDraft).
		g, err := catalog.LookupGraph(d.Model.ID)
		if err != nil {
			return err
		}
		if _, err := catalog.DeriveEagleDraft(g, s.Method, eagleDraftVocab(s.Method, g)); err != nil {
			return fmt.Errorf("--speculative-config method %s: %w", s.Method, err)
		}
	case "draft_model":
		if s.DraftModel == "" {
			return fmt.Errorf("--speculative-config method draft_model needs a draft model (model: a catalog id)")
		}
		dm, err := catalog.LookupModel(s.DraftModel)
		if err != nil {
			return fmt.Errorf("--speculative-config model: %w", err)
		}
		if _, err := catalog.LookupGraph(dm.ID); err != nil {
			return fmt.Errorf("--speculative-config model %s: %w", dm.ID, err)
		}
		if dm.VocabSize != d.Model.VocabSize {
			return fmt.Errorf("--speculative-config model %s has vocab_size %d, the target %s %d: a draft model must share the target's tokenizer", dm.ID, dm.VocabSize, d.Model.ID, d.Model.VocabSize)
		}
		if tp := d.draftTP(); dm.NumHeads%tp != 0 || (dm.NumKVHeads >= tp && dm.NumKVHeads%tp != 0) || (dm.NumKVHeads < tp && tp%dm.NumKVHeads != 0) {
			return fmt.Errorf("--speculative-config draft_tensor_parallel_size %d does not divide the heads (%d/%d) of draft model %s", tp, dm.NumHeads, dm.NumKVHeads, dm.ID)
		}
	}
	return nil
}

// draftIsTarget reports whether --speculative-config model is empty or
// names the target itself, as a method that drafts with layers the
// target's checkpoint ships (mtp, dspark) requires.
func draftIsTarget(d Deployment) bool {
	if d.Spec.DraftModel == "" {
		return true
	}
	dm, err := catalog.LookupModel(d.Spec.DraftModel)
	return err == nil && dm.ID == d.Model.ID
}

// eagleDraftVocab is the LM-head rows of an EAGLE head for target g: an
// EAGLE-3 head's draft_vocab_size (catalog.EagleThreeDraftVocab) when the
// target's vocabulary is larger, else the target's (0).
func eagleDraftVocab(method string, g *catalog.Graph) int {
	if method == "eagle3" && g.Vocab > catalog.EagleThreeDraftVocab {
		return catalog.EagleThreeDraftVocab
	}
	return 0
}

// specCaptureSizes is vllm/config/compilation.py
// adjust_cudagraph_sizes_for_spec_decode, applied when the decode
// cudagraph mode is FULL and 1 + k > 1: every capture size rounded up to a
// multiple of q = 1 + k, those above maxCap dropped, duplicates merged;
// [q] when none is left but q fits, else vLLM's start-up error.
func specCaptureSizes(sizes []int, q, maxCap int) ([]int, error) {
	var out []int
	for _, s := range sizes {
		r := (s + q - 1) / q * q
		if r <= maxCap && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	sort.Ints(out)
	if len(out) == 0 && q <= maxCap {
		out = []int{q}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no CUDA-graph capture size is left after rounding to a multiple of num_speculative_tokens + 1 = %d (largest allowed %d): lower num_speculative_tokens or raise --max-cudagraph-capture-size / --max-num-batched-tokens", q, maxCap)
	}
	return out, nil
}

// draftGraph is what the proposer runs, resolved for one deployment: the
// draft's deployment (its model, TP and quantization), the ops of one pass
// (embedding, layer kinds with the count each pass runs, head), the ops
// run once per step before the first pass, and the decoder layers of one
// pass (its piecewise graphs).
type draftGraph struct {
	d           Deployment
	embed, head []catalog.Op
	layers      []catalog.LayerKind
	counts      []int
	combine     []catalog.Op
	layersAPass int
	description string
	// block: one pass over k query positions per request (dspark), then
	// markov, run k times over one row per request.
	block  bool
	markov []catalog.Op
}

// resolveDraft finds the draft graph of d's proposer (nil for ngram and
// suffix, which have none). g is the target's graph.
func resolveDraft(d Deployment, g *catalog.Graph) (*draftGraph, error) {
	dd := d
	dd.TP, dd.PP, dd.PPStage, dd.Spec = d.draftTP(), 0, 0, Speculation{}
	out := &draftGraph{d: dd}
	switch d.Spec.Method {
	case "mtp":
		if g.Draft == nil || len(g.Draft.Layers) == 0 {
			return nil, fmt.Errorf("%s has no MTP layers", d.Model.ID)
		}
		// One MTP module per pass (DeepSeekMTP.forward: spec_step_idx %
		// num_mtp_layers); the modules are alike, so any one prices a pass.
		out.layers = g.Draft.Layers[:1]
		out.counts = []int{1}
		out.layersAPass = 1
		out.description = fmt.Sprintf("mtp (%s)", g.Draft.Layers[0].Name)
	case "eagle", "eagle3":
		dr, err := catalog.DeriveEagleDraft(g, d.Spec.Method, eagleDraftVocab(d.Spec.Method, g))
		if err != nil {
			return nil, err
		}
		// The head's weights are its own checkpoint's, unquantized
		// (get_draft_quant_config reads the draft's config).
		out.d.Quantization = ""
		out.layers, out.counts, out.combine, out.layersAPass = dr.Layers, []int{1}, dr.Combine, 1
		out.description = d.Spec.Method + " head"
	case "dspark":
		dr, err := catalog.DeriveDSparkDraft(g)
		if err != nil {
			return nil, err
		}
		out.embed, out.head, out.combine, out.markov = dr.Embed, dr.Head, dr.Context, dr.Markov
		out.layers, out.counts = []catalog.LayerKind{dr.Stage}, []int{dr.Stage.Count}
		out.layersAPass, out.block = dr.Stage.Count, true
		out.description = fmt.Sprintf("dspark (%d × %s stages, Markov head rank %d)", dr.Stage.Count, g.Draft.Layers[0].Name, catalog.DSparkMarkovRank)
	case "draft_model":
		dm, err := catalog.LookupModel(d.Spec.DraftModel)
		if err != nil {
			return nil, err
		}
		dg, err := catalog.LookupGraph(dm.ID)
		if err != nil {
			return nil, err
		}
		out.d.Model, out.d.Quantization = dm, ""
		out.d.DP, out.d.ExpertParallel, out.d.All2AllBackend = 0, false, ""
		out.embed, out.head, out.layers = dg.Embed, dg.Head, dg.Layers
		out.counts = make([]int, len(dg.Layers))
		for i, k := range dg.Layers {
			out.counts[i] = k.Count
		}
		out.layersAPass = dg.NumLayers()
		out.description = "draft model " + dm.ID
	default:
		return nil, nil
	}
	return out, nil
}

// fittedDraft prices the proposer's passes of one step with the fitted
// laws. Host: a pass is launched inside the engine step, not scheduled as
// one: the CPU launches its piecewise graphs (vLLM's per-layer piecewise
// cost, catalog.Stack.HostPiecewisePerLayer, per draft layer) and its eager
// ops (catalog.Stack.HostDraftPass) while the GPU runs them, so a pass
// lasts the longer of its GPU work and its launch; the GPU's wait is
// charged as Launch, never less than the piecewise gaps between its
// graphs. With --async-scheduling the passes are GPU time like the rest.
type fittedDraft struct {
	f, combine   *fitted // the draft's terms per pass; the once-a-step ops (nil: none)
	markov       *fitted // dspark: one Markov step (nil: not a block drafter)
	block        bool    // dspark: one block pass (specBlock) instead of k passes
	k            int
	dp           int
	graphs       bool // the drafter replays PIECEWISE graphs (eagle.py use_cuda_graph)
	captureSizes []int
	passCPU      float64 // seconds of CPU launching one pass
	passGap      float64 // seconds of GPU idle between one pass's piecewise graphs
	eagerCPU     float64 // dspark: passCPU and passGap of a block pass too
	eagerGap     float64 // large for its graphs, run eagerly
	hostPerRow   time.Duration
	name         string
}

// newFittedDraft builds the proposer pricer for d on top of the target's
// pricer f (whose capture sizes the drafter shares); nil without
// speculative decoding.
func newFittedDraft(d Deployment, co *catalog.Coefficients, f *fitted, g *catalog.Graph) (*fittedDraft, error) {
	k := d.specK()
	if k == 0 {
		return nil, nil
	}
	s := &fittedDraft{k: k, dp: d.dpSize(), captureSizes: f.captureSizes, name: d.Spec.Method}
	dg, err := resolveDraft(d, g)
	if err != nil {
		return nil, err
	}
	if dg == nil {
		s.hostPerRow = f.a.HostNgramPerRow
		return s, nil
	}
	s.graphs = f.mode == "FULL_AND_PIECEWISE" || f.mode == "PIECEWISE"
	s.passCPU = (time.Duration(dg.layersAPass)*f.a.HostPiecewisePerLayer + f.a.HostDraftPass).Seconds()
	s.passGap = (time.Duration(dg.layersAPass) * f.a.PiecewiseGapPerLayer).Seconds()
	s.name, s.block = dg.description, dg.block
	s.eagerCPU, s.eagerGap = s.passCPU, s.passGap
	if dg.block {
		s.graphs, s.passCPU, s.passGap = blockGraphs(f.mode, dg.layersAPass, f.a.HostPiecewisePerLayer, f.a.HostDraftPass, f.a.PiecewiseGapPerLayer)
		// The drafter's CudaGraphManager (decode_query_len k, the block's
		// queries per request) rounds the capture sizes once more, to
		// multiples of k (adjust_cudagraph_sizes_for_spec_decode).
		if c := f.captureSizes; s.graphs && len(c) > 0 {
			if s.captureSizes, err = specCaptureSizes(c, k, c[len(c)-1]); err != nil {
				s.graphs, s.captureSizes, err = false, nil, nil
			}
		}
	}
	newTerms := func(embed []catalog.Op, layers []catalog.LayerKind, counts []int, head []catalog.Op) (*fitted, error) {
		df := &fitted{memBW: f.memBW, a: f.a, mode: f.mode, elemFloor: f.elemFloor}
		if err := resolveTerms(dg.d, co, df, embed, layers, counts, head, true); err != nil {
			return nil, fmt.Errorf("speculative draft (%s): %w", dg.description, err)
		}
		for _, sub := range df.subs {
			f.subs = append(f.subs, "draft: "+sub)
		}
		return df, nil
	}
	if s.f, err = newTerms(dg.embed, dg.layers, dg.counts, dg.head); err != nil {
		return nil, err
	}
	if len(dg.combine) > 0 {
		if s.combine, err = newTerms(dg.combine, nil, nil, nil); err != nil {
			return nil, err
		}
	}
	if len(dg.markov) > 0 {
		if s.markov, err = newTerms(dg.markov, nil, nil, nil); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// blockGraphs is how a DSpark step replays CUDA graphs under the target's
// cudagraph mode (DFlashSpeculator.init_cudagraph_manager,
// vllm/v1/worker/gpu/spec_decode/dflash/speculator.py@00746147, which
// DSparkSpeculator inherits): when the decode mode is FULL (FULL,
// FULL_AND_PIECEWISE, FULL_DECODE_ONLY) the whole draft step (block
// forward and Markov loop) is one FULL_DECODE_ONLY graph, launched once
// with no gaps; PIECEWISE is not supported and, like NONE, runs the draft
// eagerly, its launches costed as the other drafters' per-layer ones. It
// returns whether graphs replay, the CPU seconds of launching the step
// and the GPU gap seconds inside it.
func blockGraphs(mode string, layers int, perLayer, pass, gapPerLayer time.Duration) (graphs bool, cpu, gap float64) {
	switch mode {
	case "FULL_AND_PIECEWISE", "FULL", "FULL_DECODE_ONLY":
		return true, pass.Seconds(), 0
	}
	return false, (time.Duration(layers)*perLayer + pass).Seconds(), (time.Duration(layers) * gapPerLayer).Seconds()
}

// draftGraphMode is the cudagraph mode d runs under, as the fitted pricer
// resolves it: NONE when eager, vLLM's FULL_AND_PIECEWISE when unset.
func draftGraphMode(d Deployment) string {
	switch {
	case d.EnforceEager, d.a2aDisablesGraphs():
		return "NONE"
	case d.CUDAGraphMode == "":
		return "FULL_AND_PIECEWISE"
	}
	return d.CUDAGraphMode
}

// specBlock is a DSpark step's two shapes: the block pass, reqs rows of k
// query tokens each (the anchor and k − 1 noise tokens) attending to the
// request's context, every position sampling (one LM-head row each); and
// one Markov step, one row per request. Like the target's verification
// rows, a row's k queries read its context once.
func specBlock(b *Batch, k int) (blk, markov Batch, reqs int) {
	reqs = max(b.NumDecode, 0) + max(b.NumPrefill, 0)
	base := max(b.DecodeContext, 0) + max(b.PrefillContext, 0) + int64(max(b.PrefillTokens, 0))
	blk = Batch{NumDecode: reqs, DecodeTokens: reqs * k, Sampled: reqs * k, DecodeContext: base + int64(reqs)*int64(k)}
	markov = Batch{NumDecode: reqs, DecodeTokens: reqs, Sampled: reqs}
	return blk, markov, reqs
}

// pad is the tokens a pass of n runs at and whether it replays graphs
// (EagleProposer.propose: pad_for_cudagraph when n ≤
// max_cudagraph_capture_size).
func (s *fittedDraft) pad(n int) (int, bool) {
	c := s.captureSizes
	if !s.graphs || len(c) == 0 || n > c[len(c)-1] {
		return n, false
	}
	return c[sort.SearchInts(c, n)], true
}

// group is the tokens a pass's MoE layers see in a data-parallel group
// (every rank padded alike); 0 without DP.
func (s *fittedDraft) group(m int) int {
	if s.dp > 1 {
		return s.dp * m
	}
	return 0
}

// specPasses are the two shapes of a step's draft passes: the first over
// every scheduled token (b itself, every request sampling), the other
// k − 1 of one token per request, priced once at their mean context
// (k/2 tokens past the step's) and counted k − 1 times.
func specPasses(b *Batch, k int) (first, rest Batch, reqs int) {
	reqs = max(b.NumDecode, 0) + max(b.NumPrefill, 0)
	first = *b
	first.Sampled = reqs
	first.SpecRows, first.SpecTokens = 0, 0 // the draft's logits: one row per request
	// Each request's sequence after this step: decode rows' context
	// (their verified tokens included) and prefill rows' cached context
	// plus their new chunk.
	base := max(b.DecodeContext, 0) + max(b.PrefillContext, 0) + int64(max(b.PrefillTokens, 0))
	rest = Batch{NumDecode: reqs, DecodeTokens: reqs, Sampled: reqs,
		DecodeContext: base + int64(reqs)*int64(k)/2}
	return first, rest, reqs
}

// add adds the proposer's time for step b to out, resource by resource,
// and to out.Draft. It allocates nothing.
func (s *fittedDraft) add(b *Batch, out *Breakdown) {
	if s.f == nil {
		h := time.Duration(max(b.Sampled, 0)) * s.hostPerRow
		out.Host += h
		out.Draft += h
		return
	}
	tokens := b.Tokens()
	if s.block {
		s.addBlock(b, tokens, out)
		return
	}
	first, rest, reqs := specPasses(b, s.k)
	if reqs <= 0 || tokens <= 0 {
		return
	}
	m, graphed := s.pad(tokens)
	first.GroupTokens = s.group(m)
	compute, memory, comm := s.f.work(&first, m, graphed)
	if s.combine != nil {
		// combine_hidden_states runs eagerly before the graphed forward.
		c, me, co := s.combine.work(&first, tokens, false)
		compute, memory, comm = compute+c, memory+me, comm+co
	}
	launch := math.Max(s.passGap, s.passCPU-(compute+memory+comm))
	if n := float64(s.k - 1); n > 0 {
		m, graphed := s.pad(reqs)
		rest.GroupTokens = s.group(m)
		c, me, co := s.f.work(&rest, m, graphed)
		compute, memory, comm = compute+n*c, memory+n*me, comm+n*co
		launch += n * math.Max(s.passGap, s.passCPU-(c+me+co))
	}
	dc, dm, dco, dl := seconds(compute), seconds(memory), seconds(comm), seconds(launch)
	out.Compute += dc
	out.Memory += dm
	out.Comm += dco
	out.Launch += dl
	out.Draft += dc + dm + dco + dl
}

// addBlock is add for DSpark: the context projection over every
// scheduled token (eager, before the graph), then one block pass padded
// to a capture size and k Markov steps inside the same graph.
func (s *fittedDraft) addBlock(b *Batch, tokens int, out *Breakdown) {
	blk, mk, reqs := specBlock(b, s.k)
	if reqs <= 0 || tokens <= 0 {
		return
	}
	m, graphed := s.pad(blk.DecodeTokens)
	blk.GroupTokens = s.group(m)
	compute, memory, comm := s.f.work(&blk, m, graphed)
	if s.combine != nil {
		first := *b
		first.Sampled, first.SpecRows, first.SpecTokens = 0, 0, 0
		c, me, co := s.combine.work(&first, tokens, false)
		compute, memory, comm = compute+c, memory+me, comm+co
	}
	if s.markov != nil {
		c, me, co := s.markov.work(&mk, reqs, graphed)
		n := float64(s.k)
		compute, memory, comm = compute+n*c, memory+n*me, comm+n*co
	}
	cpu, gap := s.passCPU, s.passGap
	if !graphed {
		cpu, gap = s.eagerCPU, s.eagerGap
	}
	launch := math.Max(gap, cpu-(compute+memory+comm))
	dc, dm, dco, dl := seconds(compute), seconds(memory), seconds(comm), seconds(launch)
	out.Compute += dc
	out.Memory += dm
	out.Comm += dco
	out.Launch += dl
	out.Draft += dc + dm + dco + dl
}

// rooflineDraft prices the proposer's passes with the roofline's formulas
// applied to the draft's operator graph (every GEMM, attention, MoE,
// elementwise op and TP collective of one pass, per rank): per pass
// max(compute, memory) + collectives, the passes' launch waits as in
// fittedDraft. Prefill-only MLA ops (kv_b_proj) are left out, their
// decode forms kept: a pass is decode-shaped after the first. DP
// collectives of a MoE draft layer are not priced.
type rooflineDraft struct {
	k                 int
	secPerToken       float64 // GEMMs on every token
	secPerSampled     float64 // the LM head per sampled row
	secPerCtx         float64 // attention per decode context token
	secPerPair        float64 // attention per prefill query×key pair
	bytesWeights      float64 // weights every pass reads
	bytesLMHead       float64 // read when a row samples
	bytesPerExpert    float64 // one routed expert, all MoE ops of a pass
	experts, topK     float64
	bytesPerCtx       float64 // KV read per context token
	bytesPerToken     float64 // activations, KV writes, gathers per token
	bytesPerSampled   float64 // elementwise work per sampled row
	secPerByte        float64
	commFixed         float64 // per pass: collectives' latencies
	commPerToken      float64
	commSampledFixed  float64
	commPerSampled    float64
	passCPU, passGap  float64
	hostPerRow        time.Duration
	name              string
	combinePerToken   float64 // seconds per token of the once-a-step ops
	combineBytesFixed float64
	// combineBytesPerToken: their elementwise bytes per scheduled token.
	combineBytesPerToken float64
	block                bool           // dspark: one block pass (specBlock)
	markov               *rooflineDraft // dspark: one Markov step's ops
}

// bytesPerParam is the storage of a graph dtype.
func bytesPerParam(dtype string) float64 {
	switch dtype {
	case "fp8", "int8":
		return 1
	case "nvfp4", "fp4", "mxfp4", "int4":
		return 0.5
	case "fp32":
		return 4
	}
	return 2
}

// draftGEMMDtype is the dtype a draft GEMM runs in on draft deployment
// dd: vLLM's online fp8 quantization (--quantization fp8) turns the
// bf16/fp16 weights of every GEMM but the LM head to fp8.
func draftGEMMDtype(dd Deployment, op catalog.Op) string {
	if dd.Quantization == "fp8" && (op.Dtype == "bf16" || op.Dtype == "fp16") && op.Rows != catalog.RowsSampled {
		return "fp8"
	}
	return op.Dtype
}

// gemmRateDtype is the roofline's GEMM dtype class of a graph dtype.
func gemmRateDtype(dtype string) string {
	switch dtype {
	case "fp8":
		return "fp8"
	case "nvfp4", "fp4", "mxfp4":
		return "fp4"
	}
	return "bfloat16"
}

// newRooflineDraft builds the roofline's proposer pricer; nil without
// speculative decoding.
func newRooflineDraft(d Deployment, a RooflineAssumptions) (*rooflineDraft, error) {
	k := d.specK()
	if k == 0 {
		return nil, nil
	}
	s := &rooflineDraft{k: k, name: d.Spec.Method}
	g, err := catalog.LookupGraph(d.Model.ID)
	if err != nil {
		return nil, err
	}
	dg, err := resolveDraft(d, g)
	if err != nil {
		return nil, err
	}
	if dg == nil {
		s.hostPerRow = a.HostNgramPerRow
		return s, nil
	}
	s.name = dg.description
	s.passCPU = (time.Duration(dg.layersAPass)*a.HostPiecewisePerLayer + a.HostDraftPass).Seconds()
	s.passGap = (time.Duration(dg.layersAPass) * a.PiecewiseGapPerLayer).Seconds()
	dd, c := dg.d, d.Chip
	tp := dd.TP
	s.secPerByte = 1 / (c.MemBW * c.MemBWEfficiency)
	kvB, _ := kvDtypeBytes(dd.KVCacheDtype, dd.Model.DtypeBytes)
	bw, lat := dd.ringLink(tp)
	n := float64(tp)
	dst := s
	add := func(op catalog.Op, count float64, combine bool) {
		switch op.Kind {
		case catalog.OpGEMM:
			if op.Phase == catalog.PhasePrefill {
				return
			}
			batch, nn, kk := op.RankShape(tp)
			params := float64(max(batch, 1)) * float64(nn) * float64(kk)
			dt := draftGEMMDtype(dd, op)
			sec := count * 2 * params / (peakFLOPS(c, gemmRateDtype(dt)) * a.GEMMEfficiency)
			w := count * params * bytesPerParam(dt)
			switch {
			case combine:
				dst.combinePerToken += sec
				dst.combineBytesFixed += w
			case op.Rows == catalog.RowsSampled:
				dst.secPerSampled += sec
				dst.bytesLMHead += w
			default:
				dst.secPerToken += sec
				dst.bytesWeights += w
			}
		case catalog.OpEmbedding, catalog.OpElementwise:
			b := op.BytesPerToken
			if op.Shard == catalog.ShardSplit || op.Shard == catalog.ShardColumn {
				b /= n
			}
			switch {
			case op.Rows == catalog.RowsSampled:
				dst.bytesPerSampled += count * b
			case combine:
				dst.combineBytesPerToken += count * b
			default:
				dst.bytesPerToken += count * b
			}
		case catalog.OpAttention:
			at := op.Attn
			heads := float64(at.Heads) / n
			var perCtx, perPair float64
			if at.Kind == "mla" || at.Kind == "dsa" {
				kvl, rope := float64(at.KVLoraRank), float64(at.QKRopeHeadDim)
				perCtx = 2 * ((kvl + rope) + kvl) * heads
				perPair = 2 * (float64(at.HeadDim) + float64(at.VHeadDim)) * heads
			} else {
				perCtx = 4 * float64(at.HeadDim) * heads
				perPair = perCtx
			}
			rate := c.BF16FLOPS * a.AttnEfficiency
			if at.EntryBytes > 0 && at.CompressRatio == 0 {
				// DeepSeek-V4's sliding-window-only MTP layer: each draft
				// token reads its window (the context is longer in every
				// step that drafts past the prompt's first window).
				w := float64(at.Window)
				s.secPerToken += count * 4 * float64(at.HeadDim) * heads * w / rate
				s.bytesPerToken += count * float64(at.EntryBytes) * (w + 1)
				return
			}
			kvTok := float64(at.KVCacheElemsPerRank(tp)) * kvB
			dst.secPerCtx += count * perCtx / rate
			dst.secPerPair += count * perPair / rate
			dst.bytesPerCtx += count * kvTok
			dst.bytesPerToken += count * kvTok // the new token's KV write
		case catalog.OpMoE:
			m := op.MoE
			ways := float64(tp * dd.dpSize())
			per := 3 * float64(m.Hidden) * float64(m.Inter) / ways
			dst.secPerToken += count * 2 * float64(m.TopK) * per / (peakFLOPS(c, gemmRateDtype(m.Dtype)) * a.GEMMEfficiency)
			dst.bytesPerExpert += count * per * bytesPerParam(m.Dtype)
			dst.experts, dst.topK = float64(m.Experts), float64(m.TopK)
		case catalog.OpCollective:
			if op.Group != catalog.GroupTP || tp <= 1 {
				return
			}
			moved := (n - 1) / n * op.BytesPerToken / bw
			if op.Collective == "all_reduce" {
				moved *= 2
			}
			if op.Rows == catalog.RowsSampled {
				dst.commSampledFixed += count * lat
				dst.commPerSampled += count * moved
				return
			}
			dst.commFixed += count * lat
			dst.commPerToken += count * moved
		}
	}
	for _, op := range dg.embed {
		add(op, 1, false)
	}
	for i := range dg.layers {
		for _, op := range dg.layers[i].Ops {
			add(op, float64(dg.counts[i]), false)
		}
	}
	for _, op := range dg.head {
		add(op, 1, false)
	}
	for _, op := range dg.combine {
		add(op, 1, true)
	}
	if dg.block {
		s.block = true
		_, s.passCPU, s.passGap = blockGraphs(draftGraphMode(d), dg.layersAPass, a.HostPiecewisePerLayer, a.HostDraftPass, a.PiecewiseGapPerLayer)
		s.markov = &rooflineDraft{secPerByte: s.secPerByte}
		dst = s.markov
		for _, op := range dg.markov {
			add(op, 1, false)
		}
	}
	return s, nil
}

// pass is one draft pass of b's shape at T tokens: its GPU seconds.
func (s *rooflineDraft) pass(b *Batch, T float64) (compute, memory, comm float64) {
	S := float64(max(b.Sampled, 0))
	ctx := float64(max(b.DecodeContext, 0) + max(b.PrefillContext, 0))
	pairs := math.Max(b.PrefillAttnPairs, 0)
	compute = T*s.secPerToken + S*s.secPerSampled + ctx*s.secPerCtx + pairs*s.secPerPair
	bytes := s.bytesWeights + ctx*s.bytesPerCtx + T*s.bytesPerToken + S*s.bytesPerSampled
	if S > 0 {
		bytes += s.bytesLMHead
		comm += s.commSampledFixed + S*s.commPerSampled
	}
	if s.experts > 0 {
		bytes += s.experts * (1 - math.Pow(1-s.topK/s.experts, T)) * s.bytesPerExpert
	}
	memory = bytes * s.secPerByte
	comm += s.commFixed + T*s.commPerToken
	return compute, memory, comm
}

// add adds the proposer's time for step b to out (see Breakdown.Draft) and
// returns what it adds to the step's Total: each pass's roofline
// max(compute, memory) plus its collectives and launch wait (Launch), its
// compute, memory and collectives also shown in those resources; an
// n-gram lookup's host time. It allocates nothing.
func (s *rooflineDraft) add(b *Batch, out *Breakdown) (total time.Duration) {
	if s.hostPerRow > 0 {
		h := time.Duration(max(b.Sampled, 0)) * s.hostPerRow
		out.Host += h
		out.Draft += h
		return h
	}
	tokens := b.Tokens()
	if s.block {
		return s.addBlock(b, tokens, out)
	}
	first, rest, reqs := specPasses(b, s.k)
	if reqs <= 0 || tokens <= 0 {
		return 0
	}
	T := float64(tokens)
	c, m, co := s.pass(&first, T)
	c += T * s.combinePerToken
	m += (s.combineBytesFixed + T*s.combineBytesPerToken) * s.secPerByte
	gpu := math.Max(c, m) + co
	launch := math.Max(s.passGap, s.passCPU-gpu)
	busy := gpu
	compute, memory, comm := c, m, co
	if n := float64(s.k - 1); n > 0 {
		c, m, co := s.pass(&rest, float64(reqs))
		gpu := math.Max(c, m) + co
		busy += n * gpu
		launch += n * math.Max(s.passGap, s.passCPU-gpu)
		compute, memory, comm = compute+n*c, memory+n*m, comm+n*co
	}
	out.Compute += seconds(compute)
	out.Memory += seconds(memory)
	out.Comm += seconds(comm)
	out.Launch += seconds(launch)
	d := seconds(busy) + seconds(launch)
	out.Draft += d
	return d
}

// addBlock is add for DSpark: the context projection over every
// scheduled token, one block pass of reqs × k tokens and k Markov steps of
// one row per request, each at its roofline, one launch wait for the step.
func (s *rooflineDraft) addBlock(b *Batch, tokens int, out *Breakdown) time.Duration {
	blk, mk, reqs := specBlock(b, s.k)
	if reqs <= 0 || tokens <= 0 {
		return 0
	}
	c, m, co := s.pass(&blk, float64(blk.DecodeTokens))
	c += float64(tokens) * s.combinePerToken
	m += (s.combineBytesFixed + float64(tokens)*s.combineBytesPerToken) * s.secPerByte
	gpu := math.Max(c, m) + co
	compute, memory, comm := c, m, co
	if s.markov != nil {
		c, m, co := s.markov.pass(&mk, float64(reqs))
		n := float64(s.k)
		gpu += n * (math.Max(c, m) + co)
		compute, memory, comm = compute+n*c, memory+n*m, comm+n*co
	}
	launch := math.Max(s.passGap, s.passCPU-gpu)
	out.Compute += seconds(compute)
	out.Memory += seconds(memory)
	out.Comm += seconds(comm)
	out.Launch += seconds(launch)
	d := seconds(gpu) + seconds(launch)
	out.Draft += d
	return d
}

// draftMemory is what the proposer adds to one GPU of the last pipeline
// stage at start-up: its weights, and the KV bytes its attention layers
// add per token, on its draft_tensor_parallel_size ranks. vLLM loads the
// draft beside the target (EagleProposer.load_model): an EAGLE or MTP
// draft shares the target's token embedding (one pipeline stage), an
// EAGLE-1 head also its LM head; an EAGLE-3 head and each MTP module keep
// their own heads; a draft model holds everything. Prefill-only and
// decode-only MLA GEMMs count once (kv_b_proj; its absorbed forms are
// views of it), as the target's weights do. ngram and suffix add nothing.
func draftMemory(d Deployment) (weights, kvPerToken float64, attnLayers int, err error) {
	if d.specK() == 0 || !d.lastStage() {
		return 0, 0, 0, nil
	}
	g, err := catalog.LookupGraph(d.Model.ID)
	if err != nil {
		return 0, 0, 0, err
	}
	dg, err := resolveDraft(d, g)
	if err != nil || dg == nil {
		return 0, 0, 0, err
	}
	dd := dg.d
	tp := dd.TP
	kvB, _ := kvDtypeBytes(dd.KVCacheDtype, dd.Model.DtypeBytes)
	ownHead := d.Spec.Method != "eagle"
	ownEmbed := d.Spec.Method == "draft_model"
	add := func(op catalog.Op, count float64) {
		switch op.Kind {
		case catalog.OpGEMM:
			if op.Phase == catalog.PhaseDecode || (op.Rows == catalog.RowsSampled && !ownHead) {
				return
			}
			batch, n, k := op.RankShape(tp)
			weights += count * float64(max(batch, 1)) * float64(n) * float64(k) * bytesPerParam(draftGEMMDtype(dd, op))
		case catalog.OpEmbedding:
			if ownEmbed {
				_, n, k := op.RankShape(tp)
				weights += count * float64(n) * float64(k) * bytesPerParam(op.Dtype)
			}
		case catalog.OpMoE:
			m := op.MoE
			weights += count * float64(m.Experts) * 3 * float64(m.Hidden) * float64(m.Inter) / float64(tp*dd.dpSize()) * bytesPerParam(m.Dtype)
		case catalog.OpAttention:
			kvPerToken += count * float64(op.Attn.KVCacheElemsPerRank(tp)) * kvB
			attnLayers += int(count)
		}
	}
	for _, op := range dg.embed {
		add(op, 1)
	}
	for i := range dg.layers {
		for _, op := range dg.layers[i].Ops {
			add(op, float64(dg.counts[i]))
		}
	}
	for _, op := range dg.head {
		add(op, 1)
	}
	for _, op := range dg.combine {
		if op.Name == "context_kv_proj" {
			continue // a view of each stage's own K/V projection weights
		}
		add(op, 1)
	}
	for _, op := range dg.markov {
		add(op, 1)
	}
	if dg.block {
		// The Markov head's token embedding W₁ (vocabulary × rank, the
		// activation dtype), assumed replicated on every rank.
		weights += float64(dd.Model.VocabSize) * catalog.DSparkMarkovRank * bytesPerParam(g.Dtype)
	}
	if d.Spec.Method == "mtp" {
		// Every MTP module is loaded, one per pass runs.
		n := g.Draft.NumLayers()
		weights *= float64(n)
		kvPerToken *= float64(n)
		attnLayers *= n
	}
	return weights, kvPerToken, attnLayers, nil
}
