package main

import (
	"reflect"
	"testing"

	"blis/scenario"
)

// simulate keeps every inter-token gap of a staged run whatever the caller
// asks, since its per-stage statistics need them: a plan's probe, a sweep
// point and `blis run` of one staged scenario give the same summary.
func TestSimulateStagedKeepsITL(t *testing.T) {
	s := scenario.Defaults()
	if err := s.ApplyYAML("staged.yaml", []byte("stages: [{rate: 20, duration: 1}, {rate: 40, duration: 1}]\nrandom-input-len: 128\nrandom-output-len: 8\n"), nil); err != nil {
		t.Fatal(err)
	}
	// A Resolved is spent by one run (its request source): one each.
	run := func(opt simOptions) simRun {
		t.Helper()
		res, err := s.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		r, err := simulate(s, res, opt)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	bare, detailed := run(simOptions{}), run(simOptions{Detailed: true})
	if len(bare.Summary.Stages) != 2 {
		t.Fatalf("%d stages, want 2", len(bare.Summary.Stages))
	}
	for i, st := range bare.Summary.Stages {
		if !st.HasITL || !reflect.DeepEqual(st.ITL, detailed.Summary.Stages[i].ITL) {
			t.Errorf("stage %d: ITL %+v (has %v), want %+v as with Detailed", i, st.ITL, st.HasITL, detailed.Summary.Stages[i].ITL)
		}
	}
	if bare.Summary.Detailed != detailed.Summary.Detailed {
		t.Error("the summaries differ in Detailed")
	}
}
