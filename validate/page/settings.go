package page

import (
	"fmt"
	"strconv"

	"blis/scenario"
)

// The scenario keys a manifest and its probes name, read and written
// through the scenario's own table of settings (the flags of blis run).

// settingNames are the scenario keys.
func settingNames() []string {
	s := scenario.Defaults()
	var out []string
	for _, st := range s.Settings() {
		out = append(out, st.Name)
	}
	return out
}

// settingOf is the scenario key name of s, bound to s.
func settingOf(s *scenario.Scenario, name string) (scenario.Setting, bool) {
	for _, st := range s.Settings() {
		if st.Name == name {
			return st, true
		}
	}
	return scenario.Setting{}, false
}

// groupOf is a scenario key's group: serve, bench or output ("" for no
// key).
func groupOf(name string) string {
	s := scenario.Defaults()
	st, _ := settingOf(&s, name)
	return st.Group
}

func isOutputSetting(name string) bool { return groupOf(name) == "output" }

func isServeSetting(name string) bool { return groupOf(name) == "serve" }

// trySet checks that a scenario key accepts value.
func trySet(name, value string) error {
	s := scenario.Defaults()
	return setKey(&s, name, value)
}

func setKey(s *scenario.Scenario, name, value string) error {
	st, ok := settingOf(s, name)
	if !ok {
		return fmt.Errorf("unknown setting %s", name)
	}
	return st.Value.Set(value)
}

func settingString(s *scenario.Scenario, name string) string {
	if st, ok := settingOf(s, name); ok {
		return st.Value.String()
	}
	return ""
}

// effective is the value BLIS simulated for a key: vLLM's resolved
// default where the scenario leaves 0 for "vLLM's default".
func effective(s *scenario.Scenario, res *scenario.Resolved, name string) string {
	if res != nil {
		switch name {
		case "max-num-seqs":
			return strconv.Itoa(res.Engine.MaxNumSeqs)
		case "max-num-batched-tokens":
			return strconv.Itoa(res.Engine.MaxNumBatchedTokens)
		case "max-model-len":
			return strconv.Itoa(res.Engine.MaxModelLen)
		case "block-size":
			return strconv.Itoa(res.Engine.BlockSize)
		}
	}
	return settingString(s, name)
}

// canonical spells a measured value as BLIS's setting prints it ("0.90"
// → "0.9", "True" → "true"); ok is false when BLIS cannot take it.
func canonical(name, value string) (string, bool) {
	s := scenario.Defaults()
	if err := setKey(&s, name, value); err != nil {
		return value, false
	}
	return settingString(&s, name), true
}

// effectiveKey is what a setting resolves to in BLIS, so candidates that
// simulate the same thing (0 and the chip's default, "auto" and the fitted
// pricer it picks) run once.
func effectiveKey(s *scenario.Scenario, res *scenario.Resolved, name string) string {
	if res != nil {
		switch name {
		case "compilation-config":
			mode := res.Deployment.CUDAGraphMode
			if mode == "" {
				mode = "FULL_AND_PIECEWISE"
			}
			return fmt.Sprintf("%s/%d/%v", mode, res.Deployment.MaxCUDAGraphCaptureSize, res.Deployment.CaptureSizes)
		case "step-model":
			return res.Pricer.Name()
		case "model":
			return res.Model.ID
		case "hardware":
			return res.Chip.Name
		}
	}
	return effective(s, res, name)
}
