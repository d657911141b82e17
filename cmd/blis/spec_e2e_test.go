package main

import (
	"math"
	"regexp"
	"strconv"
	"testing"

	"blis/kernel"
	"blis/scenario"
)

// TestSpeculationTPOTMatchesClosedForm runs EAGLE-3 with a replayed
// acceptance schedule one request at a time, through the whole stack, and
// checks TPOT against its closed form: each step verifies k drafts and
// runs the proposer (one priced step, t), and yields on average a tokens
// (the schedule's mean acceptance length), so TPOT = t / a. Zero
// acceptance must never beat no speculation.
func TestSpeculationTPOTMatchesClosedForm(t *testing.T) {
	const prompt, output = 512, 257
	base := []string{"run", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--hardware", "h100",
		"--dataset-name", "random", "--random-input-len", strconv.Itoa(prompt), "--random-output-len", strconv.Itoa(output),
		"--random-range-ratio", "0", "--num-prompts", "8", "--max-concurrency", "1", "--no-async-scheduling"}
	spec := `{"method":"eagle3","model":"RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3","num_speculative_tokens":3}`
	tpot := func(args ...string) float64 {
		t.Helper()
		code, out, errOut := runCLI(t, append(append([]string{}, base...), args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		m := regexp.MustCompile(`Mean TPOT \(ms\):\s+([0-9.]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no TPOT in\n%s", out)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}

	// The priced step: one decode row verifying 3 drafts at the run's
	// middle context, plus the proposer's passes.
	s := scenario.Defaults()
	s.Model, s.Hardware, s.SpeculativeConfig, s.SpecAcceptance = "meta-llama/Llama-3.1-8B-Instruct", "h100", spec, "rates:0.8,0.6,0.4@replay"
	s.AsyncScheduling = false
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	ctx := int64(prompt + output/2)
	step := r.Pricer.StepTime(&kernel.Batch{NumDecode: 1, DecodeTokens: 4, DecodeContext: ctx, Sampled: 1, SpecTokens: 3, SpecRows: 1})
	a := 1 + 0.8 + 0.6 + 0.4
	want := float64(step.Total) / 1e6 / a

	got := tpot("--speculative-config", spec, "--spec-acceptance", "rates:0.8,0.6,0.4@replay")
	t.Logf("TPOT %.3f ms, closed form %.3f ms", got, want)
	if math.Abs(got-want)/want > 0.04 {
		t.Errorf("TPOT %.3f ms, closed form t/a = %.3f/%.1f = %.3f ms", got, float64(step.Total)/1e6, a, want)
	}
	plain := tpot()
	zero := tpot("--speculative-config", spec, "--spec-acceptance", "rates:0,0,0")
	if zero < plain {
		t.Errorf("zero acceptance TPOT %.3f ms beats no speculation %.3f ms", zero, plain)
	}
	if got >= plain {
		t.Errorf("speculation with mean acceptance length %.1f is no faster: %.3f vs %.3f ms", a, got, plain)
	}
}
