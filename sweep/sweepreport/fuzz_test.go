package sweepreport

import (
	"io"
	"testing"

	"blis/report"
	"blis/sweep/store"
)

// FuzzBuild: whatever a store holds (axis values of any text or number,
// any scenario text, any metric) the report builds and writes without a
// panic: go test ./sweep/sweepreport -run XXX -fuzz FuzzBuild
func FuzzBuild(f *testing.F) {
	f.Add("bf16", "64", "model: m\n", 10.0, 100.0, true)
	f.Add("", "inf", "{", -1.0, 0.0, false)
	f.Add("</script>", "1e400", "a: [1, {b: 2}]\n", 0.0, 1e308, true)
	f.Fuzz(func(t *testing.T, axis, load, scen string, tpot, out float64, ok bool) {
		status := store.StatusOK
		if !ok {
			status = store.StatusUnserved
		}
		tab := table([]string{"dtype", "max-concurrency"}, [][]any{
			{store.StatusOK, axis, load, tpot, out},
			{status, "x", int64(2), 5.0, 50.0},
		})
		tab.Rows[0][tab.Col("scenario")] = scen
		doc, err := Build(tab)
		if err != nil {
			t.Fatal(err)
		}
		if err := report.HTML(io.Discard, doc); err != nil {
			t.Fatal(err)
		}
		for _, s := range doc.Sections {
			for i := range s.Charts {
				if err := report.SVG(io.Discard, &s.Charts[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
