package suggest

import (
	"reflect"
	"testing"
)

func TestCloseMatches(t *testing.T) {
	cands := []Candidate{{"max-num-seqs", "max-num-seqs"}, {"max-model-len", "max-model-len"},
		{"llama-3.1-8b", "meta-llama/Llama-3.1-8B"}, {"llama3-8b", "meta-llama/Llama-3.1-8B"}, {"qwen3-32b", "Qwen/Qwen3-32B"}}
	cases := []struct {
		q    string
		want []string
	}{
		{"max-num-seq", []string{"max-num-seqs"}},                   // substring ranks first
		{"llama3-7b", []string{"meta-llama/Llama-3.1-8B"}},          // edit distance 1, one entry despite two spellings
		{"qwen", []string{"Qwen/Qwen3-32B"}},                        // contained
		{"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", []string{}}, // nothing near
	}
	for _, c := range cases {
		got := CloseMatches(c.q, cands, 3)
		if len(got) == 0 && len(c.want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %v want %v", c.q, got, c.want)
		}
	}
}
