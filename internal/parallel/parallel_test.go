package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
)

// Every index runs once, and no more than jobs calls run at a time.
func TestEach(t *testing.T) {
	for _, c := range []struct{ jobs, n int }{{0, 0}, {1, 0}, {1, 5}, {3, 10}, {8, 2}, {0, 7}} {
		counts := make([]int, c.n)
		var mu sync.Mutex
		var inFlight, most atomic.Int64
		Each(c.jobs, c.n, func(i int) {
			cur := inFlight.Add(1)
			mu.Lock()
			counts[i]++
			most.Store(max(most.Load(), cur))
			mu.Unlock()
			inFlight.Add(-1)
		})
		for i, k := range counts {
			if k != 1 {
				t.Errorf("jobs %d, n %d: index %d ran %d times", c.jobs, c.n, i, k)
			}
		}
		if c.jobs > 0 && most.Load() > int64(c.jobs) {
			t.Errorf("jobs %d, n %d: %d calls at once", c.jobs, c.n, most.Load())
		}
	}
}
