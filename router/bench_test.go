package router

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"blis/workload"
)

// BenchmarkRoute measures one request's routing cost: Submit + Ready +
// Finished, with one endpoint scraped per request, for prompts drawn from
// 64 shared 1024-token prefixes with unique 128-token suffixes.
//
//	go test -run XXX -bench BenchmarkRoute -benchmem ./router
func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{16, 1000} {
		for _, name := range []string{"round-robin", "llm-d", "prefix-aware"} {
			b.Run(fmt.Sprintf("endpoints=%d/%s", n, name), func(b *testing.B) {
				r, err := Named(name)
				if err != nil {
					b.Fatal(err)
				}
				eps := testEndpoints(n)
				for i := range eps {
					eps[i].KVBlocks = 4096
				}
				if err := r.Start(eps, 1); err != nil {
					b.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(1, 1))
				reqs := make([]Request, 4096)
				for i := range reqs {
					reqs[i] = Request{ID: int64(i), PromptLen: 1152, MaxTokens: 128,
						Prompt: []workload.Segment{{ID: uint64(rng.IntN(64) + 1), Len: 1024}, {ID: rng.Uint64(), Len: 128}}}
				}
				run := func(i int) {
					now := time.Duration(i) * time.Millisecond
					q := &reqs[i%len(reqs)]
					r.Scrape(now, i%n, Metrics{Waiting: i % 7, Running: 3, KVUsage: 0.5})
					r.Ready(now)
					r.Submit(now, q)
					for _, a := range r.Ready(now) {
						r.Finished(now, a.Req, a.Endpoint)
					}
				}
				for i := range 2 * len(reqs) { // warm the indexes and buffers
					run(i)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					run(i)
				}
			})
		}
	}
}
