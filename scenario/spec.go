package scenario

import (
	"fmt"
	"strings"

	"blis/catalog"
	"blis/engine"
	"blis/kernel"
	"blis/specdecode"
)

// Speculative decoding: --speculative-config is vLLM's SpeculativeConfig
// JSON (specdecode.ParseConfig); --spec-acceptance is BLIS's, how often the
// target accepts the drafts (a measured preset, a mean acceptance length,
// per-position rates or counts). The kernel prices the proposer's draft
// passes (kernel.Deployment.Spec), the engine schedules and verifies the
// drafts (engine.Config.Spec).

// specPlan is a resolved speculative decoding setup (zero: off).
type specPlan struct {
	cfg    specdecode.Config
	method string
	k      int
	sched  specdecode.Schedule
	mode   specdecode.Mode
	source string // where the acceptance schedule came from, for the notes
}

// resolveSpec parses --speculative-config (nothing when it is empty);
// acceptance then resolves --spec-acceptance for the model.
func (s Scenario) resolveSpec() (specPlan, error) {
	if strings.TrimSpace(s.SpeculativeConfig) == "" {
		if s.SpecAcceptance != "" {
			return specPlan{}, bad("spec-acceptance", s.SpecAcceptance, "needs --speculative-config: without speculative decoding there are no drafts to accept")
		}
		return specPlan{}, nil
	}
	cfg, err := specdecode.ParseConfig(s.SpeculativeConfig)
	if err != nil {
		return specPlan{}, bad("speculative-config", s.SpeculativeConfig, err.Error())
	}
	return specPlan{cfg: cfg, method: *cfg.Method, k: *cfg.NumSpeculativeTokens}, nil
}

// acceptance resolves the plan's acceptance schedule: --spec-acceptance,
// else the config's synthetic sampler, else the preset measured for the
// model with the method.
func (p *specPlan) acceptance(s Scenario, model *catalog.Model) ([]string, error) {
	if p.k == 0 {
		return nil, nil
	}
	cfg := p.cfg
	var notes []string
	switch {
	case s.SpecAcceptance != "":
		acc, err := specdecode.ParseAcceptance(s.SpecAcceptance)
		if err != nil {
			return nil, bad("spec-acceptance", s.SpecAcceptance, err.Error())
		}
		if p.sched, err = acc.ForK(p.k); err != nil {
			return nil, bad("spec-acceptance", s.SpecAcceptance, err.Error())
		}
		p.mode, p.source = acc.Mode, s.SpecAcceptance
	default:
		if sched, ok := cfg.SyntheticSchedule(); ok {
			p.sched, p.source = sched.Resize(p.k), "the config's synthetic rejection sampler"
			break
		}
		pr, ok := matchPreset(model.ID, p.method)
		if !ok {
			return nil, bad("spec-acceptance", "", fmt.Sprintf("required: no measured acceptance preset for %s with method %s; give a preset (%s), mean:LENGTH, rates:U1,U2,… or counts:…, or put rejection_sample_method \"synthetic\" with synthetic_acceptance_length or synthetic_acceptance_rates in --speculative-config",
				model.ID, p.method, strings.Join(specdecode.PresetNames(), ", ")))
		}
		p.sched, p.source = pr.Schedule.Resize(p.k), "preset "+pr.Name
		notes = append(notes, fmt.Sprintf("INFO --spec-acceptance unset: using the preset measured for %s with %s, %s (%s, %s, temperature %s)",
			model.ID, p.method, pr.Name, pr.Dataset, pr.Engine, pr.Temperature))
	}
	notes = append(notes, fmt.Sprintf("INFO speculative decoding: %s, %d draft tokens per step, acceptance from %s: per position %s, mean acceptance length %.2f",
		p.method, p.k, p.source, p.sched, p.sched.MeanLength()))
	if cfg.RejectionSampleMethod == "block" {
		notes = append(notes, "INFO speculative decoding: rejection_sample_method block (joint block verification) is modelled with the per-position acceptance schedule of the standard rejection sampler")
	}
	if p.method == "ngram" || p.method == "suffix" {
		notes = append(notes, "INFO speculative decoding: the "+p.method+" proposer is modelled as proposing every draft each step; its acceptance schedule carries how often a lookup finds nothing useful")
	}
	return notes, nil
}

// matchPreset is the measured preset for model with method, when one
// names that target: per-position measurements before mean-only ones,
// then by name.
func matchPreset(model, method string) (specdecode.Profile, bool) {
	var best specdecode.Profile
	found := false
	for _, pr := range specdecode.Presets() { // sorted by name
		if !strings.EqualFold(pr.TargetModel, model) || presetMethod(pr.Method) != method {
			continue
		}
		if !found || (best.FromMean && !pr.FromMean) {
			best, found = pr, true
		}
	}
	return best, found
}

// presetMethod is the vLLM method a preset measured: the first word of
// its Method ("mtp (MRv2)" is mtp), EAGLE-1's "eagle1" being vLLM's
// eagle. A whole-word match keeps an eagle3 preset from standing in for
// eagle.
func presetMethod(m string) string {
	f := strings.Fields(strings.ToLower(m))
	switch {
	case len(f) == 0:
		return ""
	case f[0] == "eagle1":
		return "eagle"
	}
	return f[0]
}

// kernelSpec is what the step pricer needs: the proposer, k and the draft.
func (p specPlan) kernelSpec() (kernel.Speculation, error) {
	if p.k == 0 {
		return kernel.Speculation{}, nil
	}
	ks := kernel.Speculation{Method: p.method, NumTokens: p.k}
	if p.cfg.DraftTensorParallelSize != nil {
		ks.DraftTP = *p.cfg.DraftTensorParallelSize
	}
	if p.method == "draft_model" && p.cfg.Model != nil {
		m, err := catalog.LookupModel(*p.cfg.Model)
		if err != nil {
			return ks, bad("speculative-config", *p.cfg.Model, "draft model: "+err.Error())
		}
		ks.DraftModel = m.ID
	}
	return ks, nil
}

// engineSpec is the engine's side; the cluster gives each engine its own
// acceptance stream.
func (p specPlan) engineSpec(seed int64) engine.Speculation {
	if p.k == 0 {
		return engine.Speculation{}
	}
	// vLLM drops a prefix-cache hit's last block for EAGLE-style
	// proposers, whose drafter must recompute that block's hidden states
	// (use_eagle_block_drop: eagle, eagle3, mtp, dspark, unless
	// disable_eagle_block_drop).
	eagle := p.method == "eagle" || p.method == "eagle3" || p.method == "mtp" || p.method == "dspark"
	return engine.Speculation{
		NumTokens: p.k, Lookahead: specdecode.LookaheadSlots(p.method),
		Acceptance: p.sched, Mode: p.mode, Seed: uint64(seed),
		DropLastHitBlock: eagle && !p.cfg.DisableEagleBlockDrop,
		DraftSlots:       p.cfg.DraftSlots(),
	}
}
