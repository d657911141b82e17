package report

import (
	"io"
	"strconv"
	"testing"
)

// sweepDoc: a sweep-sized document, n points in 10 series, each point
// with 12 Info entries (a scenario's settings and metrics).
func sweepDoc(n int) *Document {
	c := Chart{ID: "sweep", Title: "sweep", XLabel: "tokens/s per user", YLabel: "tokens/s per GPU"}
	for s := range 10 {
		sr := Series{Name: "config " + strconv.Itoa(s)}
		for i := range n / 10 {
			p := Point{X: float64(i + 1), Y: float64((s + 1) * (i + 1)), Label: "point " + strconv.Itoa(i)}
			for k := range 12 {
				p.Info = append(p.Info, KV{"key" + strconv.Itoa(k), strconv.Itoa(k * i)})
			}
			sr.Points = append(sr.Points, p)
		}
		c.Series = append(c.Series, sr)
	}
	return &Document{Title: "sweep", Sections: []Section{{Charts: []Chart{c}}}}
}

// go test ./report -run XXX -bench . -benchmem
func BenchmarkHTML1000(b *testing.B) {
	d := sweepDoc(1000)
	for b.Loop() {
		if err := HTML(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSVG1000(b *testing.B) {
	d := sweepDoc(1000)
	for b.Loop() {
		if err := SVG(io.Discard, &d.Sections[0].Charts[0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPNG1000(b *testing.B) {
	d := sweepDoc(1000)
	for b.Loop() {
		if err := PNG(io.Discard, &d.Sections[0].Charts[0]); err != nil {
			b.Fatal(err)
		}
	}
}
