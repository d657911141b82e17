package sweepreport

import (
	"testing"

	"blis/report"
	"blis/sweep/store"
)

// BenchmarkBuild1000 builds and writes the report of a 1,000-point sweep
// (10 TP × 10 batch configurations × 10 concurrencies, a tenth infeasible):
// go test ./sweep/sweepreport -run XXX -bench . -benchmem
func BenchmarkBuild1000(b *testing.B) {
	var rows [][]any
	for i := range 1000 {
		tp, seqs, conc := int64(1+i/100), int64(32*(1+i/10%10)), int64(1<<(i%10))
		if i%10 == 9 {
			rows = append(rows, []any{store.StatusInfeasible, tp, seqs, conc})
			continue
		}
		rows = append(rows, []any{store.StatusOK, tp, seqs, conc, 5 + float64(i%10), float64(100 * (i%10 + 1))})
	}
	tab := table([]string{"tensor-parallel-size", "max-num-seqs", "max-concurrency"}, rows)
	b.ReportAllocs()
	for b.Loop() {
		doc, err := Build(tab)
		if err != nil {
			b.Fatal(err)
		}
		var n counter
		if err := report.HTML(&n, doc); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n), "page-bytes")
	}
}

// counter counts the bytes written to it.
type counter int

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }
