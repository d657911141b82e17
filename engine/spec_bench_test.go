package engine

import (
	"fmt"
	"testing"
	"time"

	"blis/kernel"
	"blis/specdecode"
	"blis/workload"
)

// BenchmarkScheduleSpec is one steady-state decode step (Schedule +
// Complete) of 128 running requests, finished ones replaced by fresh
// ones, without speculation and with k = 3 drafts (EAGLE-style lookahead
// slots, the vllm-test-llama8b schedule); tokens/op is the output tokens a
// step streams:
//
//	go test ./engine -run '^$' -bench ScheduleSpec -benchmem
func BenchmarkScheduleSpec(b *testing.B) {
	p, err := specdecode.Preset("vllm-test-llama8b")
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range []int{0, 3} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			c := Config{
				MaxNumSeqs: 128, MaxNumBatchedTokens: 8192, EnableChunkedPrefill: true, EnablePrefixCaching: true,
				BlockSize: 16, NumGPUBlocks: 1 << 14, MaxModelLen: 1 << 14,
			}
			if k > 0 {
				c.Spec = Speculation{NumTokens: k, Lookahead: true, Acceptance: p.Schedule.Resize(k), Seed: 1}
			}
			e, err := New(c)
			if err != nil {
				b.Fatal(err)
			}
			reqs := make([]*Request, 128)
			var now time.Duration
			for i := range reqs {
				reqs[i] = &Request{ID: int64(i), Prompt: []workload.Segment{{ID: uint64(i + 1), Len: 256}},
					PromptLen: 256, MaxTokens: 64 + i*4, OutputID: uint64(1<<20 + i), Private: true}
				e.Add(reqs[i], now)
			}
			id := int64(len(reqs))
			var bt kernel.Batch
			tokens := 0
			step := func() {
				e.Schedule(now, &bt)
				now += time.Millisecond
				for _, s := range e.Complete(now) {
					tokens += s.Tokens
					if s.Done {
						r := s.Req
						r.Reset()
						id++
						r.ID, r.PromptLen, r.MaxTokens, r.OutputID, r.Private = id, 256, 64+int(id%128)*4, uint64(1<<20+id), true
						r.Prompt = append(r.Prompt, workload.Segment{ID: uint64(id + 1), Len: 256})
						e.Add(r, now)
					}
				}
			}
			for range 2000 { // reach the steady state
				step()
			}
			b.ReportAllocs()
			b.ResetTimer()
			tokens = 0
			for range b.N {
				step()
			}
			b.ReportMetric(float64(tokens)/float64(b.N), "tokens/op")
		})
	}
}
