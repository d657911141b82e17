package scenario

import (
	"reflect"
	"strings"
	"testing"

	"blis/workload"
)

func TestStagesValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []workload.LoadStage
		err  string
	}{
		{"[{rate: 10, duration: 60}, {rate: 2.5, duration: 4}]", []workload.LoadStage{{Rate: 10, Duration: 60}, {Rate: 2.5, Duration: 4}}, ""},
		{`[{"rate": 1, "duration": 30}]`, []workload.LoadStage{{Rate: 1, Duration: 30}}, ""},
		{"- rate: 3\n  duration: 9\n", []workload.LoadStage{{Rate: 3, Duration: 9}}, ""},
		{"", nil, ""},
		{"[{rate: 10}]", nil, "stage 1: give both rate"},
		{"[{rate: 10, duration: 5, concurrency: 4}]", nil, "field concurrency not found"},
		{"{rate: 10, duration: 5}", nil, "not a list of {rate, duration} stages"},
		{"[{rate: fast, duration: 5}]", nil, "not a list"},
	} {
		var got []workload.LoadStage
		err := stagesValue{&got}.Set(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Set(%q): error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Set(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if again := (stagesValue{&got}).String(); c.want != nil {
			var back []workload.LoadStage
			if err := (stagesValue{&back}).Set(again); err != nil || !reflect.DeepEqual(back, c.want) {
				t.Errorf("String %q does not read back: %v, %v", again, back, err)
			}
		}
	}
}

// A scenario file writes the stages as inference-perf's config does, as a
// block list; the same run as the flag.
func TestStagesInScenarioFile(t *testing.T) {
	file := "dataset-name: random\nstages:\n  - rate: 5\n    duration: 4\n  - rate: 10\n    duration: 2\nload-type: poisson\nload-interval: 3\n"
	s := Defaults()
	if err := s.ApplyYAML("s.yaml", []byte(file), nil); err != nil {
		t.Fatal(err)
	}
	want := workload.LoadSpec{Type: "poisson", Interval: 3, Stages: []workload.LoadStage{{Rate: 5, Duration: 4}, {Rate: 10, Duration: 2}}}
	if !reflect.DeepEqual(s.Load, want) {
		t.Fatalf("load %+v, want %+v", s.Load, want)
	}
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var req workload.Request
	for r.Source.Next(&req) {
		n++
	}
	if n != 40 {
		t.Errorf("%d requests, want 20 + 20", n)
	}
	bad := Defaults()
	err = bad.ApplyYAML("s.yaml", []byte("stages:\n  - rate: 5\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:2: stages: stage 1: give both rate") {
		t.Errorf("missing duration: %v", err)
	}
	bad = Defaults()
	bad.Load.Stages = []workload.LoadStage{{Rate: 5, Duration: 4}}
	bad.NumPrompts = 3
	if _, err := bad.Resolve(); err == nil || !strings.Contains(err.Error(), "conflicts with --stages") {
		t.Errorf("--num-prompts with --stages: %v", err)
	}
}

func FuzzStagesValue(f *testing.F) {
	for _, s := range []string{"[{rate: 10, duration: 60}]", "- rate: 1\n  duration: 2\n", "[]", "{", "[{rate: .inf, duration: 1}]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var got []workload.LoadStage
		if err := (stagesValue{&got}).Set(in); err != nil {
			return
		}
		spec := workload.LoadSpec{Stages: got}
		_ = spec.Validate() // must not panic, whatever the numbers
	})
}
