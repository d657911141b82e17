package catalog

import (
	"math"
	"testing"
)

// TestDSV4Params checks the DeepSeek-V4 parameter counts against the
// published sizes: V4-Flash ≈284 B total / 13 B active, V4-Pro ≈1.6 T /
// 49 B active (sglang-jax#1678; huggingface/blog#3363).
func TestDSV4Params(t *testing.T) {
	for _, c := range []struct {
		id                  string
		total, active, tolT float64 // billions; relative tolerance
	}{
		{"deepseek-ai/DeepSeek-V4-Flash", 284, 13, 0.01},
		{"deepseek-ai/DeepSeek-V4-Pro", 1600, 49, 0.02},
	} {
		m, err := LookupModel(c.id)
		if err != nil {
			t.Fatal(err)
		}
		total, active := m.DSV4Params()
		t.Logf("%s: %.2f B total, %.2f B active", c.id, total/1e9, active/1e9)
		if math.Abs(total/1e9-c.total)/c.total > c.tolT {
			t.Errorf("%s: %.2f B total, want %.0f B ± %.0f%%", c.id, total/1e9, c.total, 100*c.tolT)
		}
		if math.Abs(active/1e9-c.active)/c.active > 0.08 {
			t.Errorf("%s: %.2f B active, want %.0f B ± 8%%", c.id, active/1e9, c.active)
		}
	}
}
