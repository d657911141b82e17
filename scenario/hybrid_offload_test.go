package scenario

import (
	"math"
	"strings"
	"testing"

	"blis/engine"
)

// TestHybridOffloadResolves: a hybrid KV cache (gpt-oss: full plus
// sliding groups; DeepSeek-V4: a compressed full group plus 63 sliding
// ones) gets vLLM's OffloadingConnector with a pool block per group key,
// DeepSeek-V4 its 256-token full-block alignment; LMCache is refused.
func TestHybridOffloadResolves(t *testing.T) {
	for _, tc := range []struct {
		model, hw string
		tp        int
		backend   string
		align     int
		err       string
	}{
		{"openai/gpt-oss-120b", "h200", 1, "", 0, ""},
		{"deepseek-v4.1-flash", "h200", 8, "", 256, ""},
		{"openai/gpt-oss-120b", "h200", 1, "lmcache", 0, "LMCache with a hybrid KV cache"},
	} {
		t.Run(tc.model+"/"+tc.backend, func(t *testing.T) {
			r, err := resolveWith(t, func(s *Scenario) {
				s.Model, s.Hardware, s.TensorParallelSize = tc.model, tc.hw, tc.tp
				s.KVOffloadingSize = 100
				s.KVOffloadingBackend = tc.backend
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := r.Engine.Offload
			if o == nil || o.Connector != engine.OffloadNative {
				t.Fatalf("offload %+v", o)
			}
			if r.Memory.KVCache.Groups < 2 {
				t.Fatalf("%d KV cache groups: not a hybrid layout", r.Memory.KVCache.Groups)
			}
			// One key holds one group's pool block (a page of each of the
			// group's layers), not every layer's.
			if want := int64(math.Ceil(r.Memory.BlockBytes)); o.BlockBytes != want || want <= 0 {
				t.Errorf("block bytes %d: want the pool block %v", o.BlockBytes, r.Memory.BlockBytes)
			}
			if o.AlignTokens != tc.align {
				t.Errorf("alignment %d tokens, want %d", o.AlignTokens, tc.align)
			}
		})
	}
}
