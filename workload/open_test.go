package workload

import (
	"errors"
	"fmt"
	"testing"
)

func TestOpenByName(t *testing.T) {
	// "random" is NewRandom, unchanged.
	rs := DefaultRandomSpec()
	rs.NumPrompts = 20
	src, err := Open(TraceSpec{Random: rs, Seed: 4})
	viaOpen := mustDrain(t, src, err)
	direct, err := NewRandom(rs, 4)
	if want := mustDrain(t, direct, err); fmt.Sprint(viaOpen) != fmt.Sprint(want) {
		t.Error(`Open("random") differs from NewRandom`)
	}

	// aiperf's spelling: --input-file + --custom-dataset-type.
	src, err = Open(TraceSpec{InputFile: "testdata/mooncake_synthetic_head200.jsonl", CustomDatasetType: DatasetMooncake})
	if reqs := mustDrain(t, src, err); len(reqs) != 200 {
		t.Errorf("%d requests, want 200", len(reqs))
	}
	src, err = Open(TraceSpec{DatasetName: DatasetMooncake, CustomDatasetType: DatasetMooncake,
		DatasetPath: "testdata/mooncake_synthetic_head200.jsonl", InputFile: "testdata/mooncake_synthetic_head200.jsonl"})
	mustDrain(t, src, err)

	for _, c := range []struct {
		spec TraceSpec
		want string
	}{
		{TraceSpec{DatasetName: "burstgpt"}, "--dataset-name burstgpt: must be one of random, sharegpt, prefix_repetition, shared_prefix, mooncake_trace, azure, sessions, agentic, lmbench"},
		{TraceSpec{DatasetName: DatasetShareGPT, CustomDatasetType: DatasetMooncake}, "--custom-dataset-type mooncake_trace: conflicts with --dataset-name sharegpt"},
		{TraceSpec{DatasetName: DatasetMooncake}, `--dataset-path "": a file is needed for --dataset-name mooncake_trace`},
		{TraceSpec{DatasetName: DatasetAzure, DatasetPath: "a.csv", InputFile: "b.csv"}, "--input-file b.csv: conflicts with --dataset-path a.csv"},
		{TraceSpec{DatasetName: DatasetPrefixRepetition, DatasetPath: "x"}, "--dataset-path x: --dataset-name prefix_repetition reads no file"},
		{TraceSpec{DatasetName: DatasetSessions, DatasetPath: "testdata/nope.jsonl"}, "testdata/nope.jsonl: cannot open: no such file or directory"},
	} {
		_, err := Open(c.spec)
		wantBadInput(t, err, c.want)
	}
	// A failed constructor returns a nil Source, not a typed nil.
	for _, spec := range []TraceSpec{
		{DatasetName: DatasetShareGPT, DatasetPath: "testdata/sessions_example.jsonl"},
		{DatasetName: DatasetMooncake, DatasetPath: "testdata/sessions_example.jsonl", FixedScheduleSpeedup: -1},
		{DatasetName: DatasetAzure, DatasetPath: "testdata/azure_code_head200.csv", NumPrompts: -1},
		{DatasetName: DatasetSessions, DatasetPath: "testdata/sessions_example.jsonl", RequestRate: -1},
		{DatasetName: DatasetPrefixRepetition, NumPrompts: -5},
		{DatasetName: DatasetSharedPrefix, Load: LoadSpec{Type: "x"}},
		{DatasetName: DatasetRandom, Load: LoadSpec{Stages: []LoadStage{{Rate: 1, Duration: 0.5}}}},
		{DatasetName: DatasetAzure, DatasetPath: "testdata/azure_code_head200.csv", Load: LoadSpec{Stages: []LoadStage{{Rate: 1, Duration: 5}}}},
		{DatasetName: DatasetAgentic, Agentic: AgenticSpec{NumSessions: -1}},
		{Random: RandomSpec{}},
	} {
		src, err := Open(spec)
		if err == nil || src != nil || !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: Open = %v, %v; want nil and a bad-input error", spec.DatasetName, src, err)
		}
	}
}

func TestScan(t *testing.T) {
	st, err := Scan(TraceSpec{DatasetName: DatasetSessions, DatasetPath: "testdata/sessions_example.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	want := TraceStats{Requests: 11, Sessions: 5, Branches: 2, InputTokens: 920 + 40 + 60 + 12400 + 3500 + 3250 + 6000 + 200 + 700 + 2200 + 2800,
		OutputTokens: 300 + 250 + 120 + 90 + 60 + 80 + 400 + 150 + 1200 + 80 + 500, LastArrival: 2e9}
	if st != want {
		t.Errorf("Scan = %+v, want %+v", st, want)
	}
	// An error deep in a file comes back with its line.
	_, err = Scan(TraceSpec{DatasetName: DatasetSessions, DatasetPath: "testdata/sharegpt_small.json"})
	var te *TraceError
	if !errors.As(err, &te) || te.Line != 1 || !errors.Is(err, ErrBadInput) {
		t.Errorf("Scan of a JSON array as sessions: %v", err)
	}
}

func TestTraceErrorText(t *testing.T) {
	for _, c := range []struct {
		e    TraceError
		want string
	}{
		{TraceError{File: "trace.jsonl", Line: 17, Field: `"input_length"`, Value: "-5", Allowed: "must be ≥ 1"}, `trace.jsonl:17: "input_length": -5: must be ≥ 1`},
		{TraceError{File: "sg.json", Entry: 3, Allowed: "bad"}, "sg.json: entry 3: bad"},
		{TraceError{Allowed: "bad"}, "input: bad"},
	} {
		if got := c.e.Error(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
