package page

import (
	"fmt"
	"slices"
	"strings"
)

// Probe modes of a manifest's probes: key and of --probes.
const (
	ProbesOff  = "off"
	ProbesAuto = "auto"
	ProbesList = "list"
)

// ProbeSpec says which settings an arm re-checks: none (off), every
// toggleable provenance row (auto), or the listed settings (list): their
// toggleable provenance rows, plus those with no row that the candidate
// table knows (BLIS's own assumptions such as step-model).
type ProbeSpec struct {
	Mode     string
	Settings []string
	Line     int
}

// probeCandidate is one value a probe tries for an unstated setting.
type probeCandidate struct{ value, why string }

// probeCandidates lists, per setting a run may leave unstated, vLLM's
// default first and then the values launch scripts plausibly used instead.
// The why of each is printed on the page, so a reader sees what was tried
// and why.
var probeCandidates = []struct {
	setting string
	cands   []probeCandidate
}{
	// vLLM's V1 engine caches prefixes unless told not to; most benchmark
	// scripts switch it off for random prompts.
	{"enable-prefix-caching", []probeCandidate{{"true", "vLLM's default (V1 engine)"}, {"false", "off, as most benchmark scripts launch vLLM"}}},
	// V1 always chunks prefills; off is the pre-V1 behaviour.
	{"enable-chunked-prefill", []probeCandidate{{"true", "vLLM's default (V1 engine)"}, {"false", "off (pre-V1 scheduling)"}}},
	// An FP8 KV cache doubles the pool and changes attention reads; it is
	// the usual choice with FP8 checkpoints.
	{"kv-cache-dtype", []probeCandidate{{"auto", "vLLM's default: the model's dtype"}, {"fp8", "FP8 KV cache, usual with FP8 checkpoints"}}},
	// The step token budget: vLLM's default depends on the chip; 2048 is
	// the small-GPU default, 16384 a common throughput setting.
	{"max-num-batched-tokens", []probeCandidate{{"0", "vLLM's default for the chip (8192 on >= 70 GiB GPUs, else 2048)"},
		{"2048", "vLLM's small-GPU default"}, {"16384", "a common throughput setting"}}},
	// 256 is the small-GPU default and what many scripts pass.
	{"max-num-seqs", []probeCandidate{{"0", "vLLM's default for the chip (1024 on >= 70 GiB GPUs, else 256)"},
		{"256", "vLLM's small-GPU default, common in launch scripts"}}},
	// Async scheduling is off by default but on in most recent scripts.
	{"async-scheduling", []probeCandidate{{"false", "vLLM's default"}, {"true", "on, as recent launch scripts run it"}}},
	// FULL_AND_PIECEWISE became the default in vLLM 0.11 (vllm#25444);
	// PIECEWISE was the default before.
	{"compilation-config", []probeCandidate{{`{"cudagraph_mode":"FULL_AND_PIECEWISE"}`, "vLLM's default from 0.11"},
		{`{"cudagraph_mode":"PIECEWISE"}`, "vLLM's default before 0.11"}}},
	{"enforce-eager", []probeCandidate{{"false", "vLLM's default (CUDA graphs)"}, {"true", "no CUDA graphs"}}},
	// Expert parallelism is opt-in; MoE launch scripts often enable it.
	{"enable-expert-parallel", []probeCandidate{{"false", "vLLM's default"}, {"true", "experts split whole across the TP group"}}},
	// 16 is vLLM's CUDA default; some attention backends force 64.
	{"block-size", []probeCandidate{{"16", "vLLM's default"}, {"64", "what MLA / FlashInfer backends force"}}},
	// 0.9 is vLLM's default; scripts often raise it.
	{"gpu-memory-utilization", []probeCandidate{{"0.9", "vLLM's default"}, {"0.95", "common in launch scripts"}}},
	// BLIS's own assumption: which step pricer prices the steps.
	{"step-model", []probeCandidate{{"auto", "BLIS's default"}, {"fitted", "fitted kernel coefficients"}, {"roofline", "roofline pricing"}}},
}

// candidatesFor is the candidate list of setting (nil when the table has
// none).
func candidatesFor(setting string) []probeCandidate {
	for _, c := range probeCandidates {
		if c.setting == setting {
			return c.cands
		}
	}
	return nil
}

// probeSettingNames lists the settings the candidate table knows.
func probeSettingNames() []string {
	var out []string
	for _, c := range probeCandidates {
		out = append(out, c.setting)
	}
	return out
}

// ParseProbes reads a probes value as the manifest key and --probes take
// it: off, auto, or a comma-separated list of scenario keys.
func ParseProbes(value string) (ProbeSpec, error) {
	v := strings.TrimSpace(value)
	switch v {
	case ProbesOff, ProbesAuto:
		return ProbeSpec{Mode: v}, nil
	case "":
		return ProbeSpec{}, fmt.Errorf("expected off, auto, or a list of settings (%s)", strings.Join(probeSettingNames(), ", "))
	}
	spec := ProbeSpec{Mode: ProbesList}
	known := settingNames()
	for _, s := range strings.Split(v, ",") {
		name := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "--"), "_", "-")
		if !slices.Contains(known, name) || isOutputSetting(name) {
			return ProbeSpec{}, fmt.Errorf("%q is not a setting BLIS can toggle; expected off, auto, or a list of blis run keys such as %s",
				name, strings.Join(probeSettingNames(), ", "))
		}
		if slices.Contains(spec.Settings, name) {
			return ProbeSpec{}, fmt.Errorf("%q listed twice", name)
		}
		spec.Settings = append(spec.Settings, name)
	}
	return spec, nil
}
