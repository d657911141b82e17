package workload

import "testing"

func TestShortest(t *testing.T) {
	for _, c := range []struct {
		name        string
		spec        TraceSpec
		prompt, out int
		ok          bool
	}{
		{"random fixed", TraceSpec{Random: RandomSpec{InputLen: 1024, OutputLen: 128}}, 1024, 128, true},
		{"random spread", TraceSpec{Random: RandomSpec{InputLen: 1000, OutputLen: 100, RangeRatio: 0.5, PrefixLen: 10, NumSpecialTokens: 1}}, 1 + 10 + 499, 50, true},
		{"random legacy", TraceSpec{Random: RandomSpec{InputLen: 1000, OutputLen: 100, RangeRatio: 0, RangeStyle: RangeStyleLegacy}}, 1, 1, true},
		{"prefix_repetition", TraceSpec{DatasetName: DatasetPrefixRepetition}, 512, 128, true},
		{"shared_prefix", TraceSpec{DatasetName: DatasetSharedPrefix, SharedPrefix: SharedPrefixSpec{QuestionLen: 7}}, 107, 50, true},
		{"trace", TraceSpec{DatasetName: DatasetMooncake, DatasetPath: "x.jsonl"}, 0, 0, false},
		{"bad name", TraceSpec{DatasetName: "bogus"}, 0, 0, false},
	} {
		p, o, ok := Shortest(c.spec)
		if p != c.prompt || o != c.out || ok != c.ok {
			t.Errorf("%s: got %d, %d, %v; want %d, %d, %v", c.name, p, o, ok, c.prompt, c.out, c.ok)
		}
	}
}
