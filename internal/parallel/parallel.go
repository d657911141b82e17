// Package parallel runs independent simulations (the rows of an InferenceX
// sweep, the levels and probe runs of a validation page, the candidates and
// grid points of blis plan) on a bounded number of workers. Each call writes only its own result slot, so
// what the callers compute does not depend on the number of workers.
package parallel

import (
	"runtime"
	"sync"
)

// Each runs f(0..n-1) on at most jobs workers (GOMAXPROCS when jobs ≤ 0)
// and returns when every call has.
func Each(jobs, n int, f func(i int)) {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	jobs = min(jobs, max(1, n))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
