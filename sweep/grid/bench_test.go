package grid

import "testing"

// BenchmarkExpandRamp expands a 1,000-step ramp (one fresh grid per
// iteration, so nothing is cached between them):
//
//	go test ./sweep/grid -run '^$' -bench BenchmarkExpandRamp -benchmem
func BenchmarkExpandRamp(b *testing.B) {
	text := []byte("base: {model: llama-3.1-70b, hardware: h100}\nload: {ramp: {from: 1, to: 1000, steps: 1000}}\n")
	for b.Loop() {
		b.StopTimer()
		g, err := Parse("g.yaml", text)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := g.Expand(); err != nil {
			b.Fatal(err)
		}
	}
}
