package scenario

import (
	"strings"
	"testing"

	"blis/kernel"
)

// --pipeline-parallel-size reaches the deployment, the engine's batch queue
// and the pricer (one stage per pipeline stage); async scheduling goes off
// as vLLM has it; bad values are input errors naming the flag.
func TestPipelineParallelSize(t *testing.T) {
	s := Defaults()
	s.Model, s.Hardware, s.TensorParallelSize, s.PipelineParallelSize = "meta-llama/Llama-3.1-70B", "h100", 4, 2
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	pl, ok := r.Pricer.(*kernel.Pipeline)
	if !ok || len(pl.Stages) != 2 || r.Deployment.PP != 2 || r.Engine.MaxConcurrentBatches != 2 || r.Engine.AsyncScheduling || r.Deployment.AsyncScheduling {
		t.Fatalf("pricer %T, PP %d, batches %d, async %v/%v", r.Pricer, r.Deployment.PP, r.Engine.MaxConcurrentBatches, r.Engine.AsyncScheduling, r.Deployment.AsyncScheduling)
	}
	s.PipelineParallelSize = 1
	one, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := one.Pricer.(*kernel.Pipeline); ok || one.Engine.MaxConcurrentBatches != 1 || !one.Engine.AsyncScheduling {
		t.Fatalf("PP 1: pricer %T, batches %d, async %v", one.Pricer, one.Engine.MaxConcurrentBatches, one.Engine.AsyncScheduling)
	}
	if r.Memory.KVTokens <= one.Memory.KVTokens {
		t.Fatalf("PP 2 KV %d tokens, PP 1 %d: half the layers per GPU should leave more", r.Memory.KVTokens, one.Memory.KVTokens)
	}
	for _, tc := range []struct {
		pp, dp int
		want   string
	}{
		{0, 1, `--pipeline-parallel-size "0": must be ≥ 1`},
		{81, 1, `"81": at most the 80 decoder layers`},
		{2, 2, "--data-parallel-size > 1"},
	} {
		s.PipelineParallelSize, s.DataParallelSize = tc.pp, tc.dp
		_, err := s.Resolve()
		if err == nil || !IsInputError(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PP %d DP %d: %v, want an input error with %q", tc.pp, tc.dp, err, tc.want)
		}
	}
}
