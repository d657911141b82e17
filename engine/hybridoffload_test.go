package engine

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"blis/kernel"
)

// hoffCfg is a hybrid engine (block 16, layout kinds, the given window)
// with a native connector of one-block chunks of 1 MiB and room for 4096
// keys in the CPU tier.
func hoffCfg(kinds string, window, blocks int) Config {
	c := cfg(2048, 16, blocks, 16)
	c.KVCache = layout(window, kinds)
	c.Offload = &OffloadConfig{Connector: OffloadNative, BlocksPerChunk: 1, CPUChunks: 4096,
		BlockBytes: 1 << 20, LinkBW: 25e9, LinkLatency: 10 * time.Microsecond}
	return c
}

// TestHybridOffloadReload stores a 1024-token document in every group,
// pushes it out of the GPU and asks for it again: the full groups load
// the whole prefix, the sliding groups only the blocks from the window of
// the cached tokens on (vLLM's update_state_after_alloc).
func TestHybridOffloadReload(t *testing.T) {
	tests := []struct {
		kinds  string
		window int
		align  int // OffloadConfig.AlignTokens
		want   int // blocks loaded over all groups
		stored int // keys stored over the run (0: every group's every chunk)
	}{
		// 1024 cached tokens = 64 blocks; a window of 128 skips
		// (1024−128+1)/16 = 56 blocks, leaving 8 to load.
		{"sf", 128, 0, 64 + 8, 0},
		{"fs", 128, 0, 64 + 8, 0},
		{"fss", 128, 0, 64 + 2*8, 0},
		{"ssf", 100, 0, 64 + 2*(64-57), 0}, // (1024−100+1)/16 = 57 skipped
		{"sff", 16, 0, 2*64 + 1, 0},        // a window of one block
		{"s", 128, 0, 8, 0},                // sliding layers only (Mistral-style)
		// 256-token full blocks (DeepSeek-V4): a sliding group of window
		// 32 stores the last 2 of every 16 chunks (vLLM's
		// alignment_block_count), 8 per document, and the 65th chunk of
		// the last request (after its load) not at all.
		{"sf", 32, 256, 64 + 2, 3*(64+8) + 1},
		{"fs", 128, 256, 64 + 8, 3*(64+4*8) + 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/window %d/align %d", tt.kinds, tt.window, tt.align), func(t *testing.T) {
			groups := len(tt.kinds)
			c := hoffCfg(tt.kinds, tt.window, 70*groups)
			c.Offload.AlignTokens = tt.align
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			drive(t, e, rereadArrivals())
			st := e.Stats()
			if st.PrefixHits != 0 {
				t.Fatalf("GPU prefix hit %d tokens: the pool kept the document", st.PrefixHits)
			}
			if st.OffloadLoads != 1 || st.ExternalPrefixHits != 1024 {
				t.Errorf("loads %d, external hit %d tokens: want 1 and 1024", st.OffloadLoads, st.ExternalPrefixHits)
			}
			if st.OffloadTierHits[0] != int64(tt.want) || st.OffloadLoadedBytes != int64(tt.want)<<20 {
				t.Errorf("loaded %d keys, %d bytes: want %d keys of 1 MiB", st.OffloadTierHits[0], st.OffloadLoadedBytes, tt.want)
			}
			// Every group stores every block of the four prompts as it
			// fills (all live then: the prompt fits one step), the last
			// request's after the load only.
			wantStored := int64(groups*(3*64+1)) << 20
			if tt.stored > 0 {
				wantStored = int64(tt.stored) << 20
			}
			if st.OffloadStoredBytes != wantStored {
				t.Errorf("stored %d bytes, want %d", st.OffloadStoredBytes, wantStored)
			}
		})
	}
}

// TestHybridOffloadHitRule checks vLLM's _lookup over groups: the full
// groups' longest stored prefix, then the sliding groups' last run of
// cdiv(window, chunk) stored chunks within it (or a shorter one from the
// first chunk looked up), the hit capped at num_tokens − 1.
func TestHybridOffloadHitRule(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	tests := []struct {
		name   string
		kinds  string
		stored [][]int // per group, chunks in the tier
		gpuTok int
		want   int
	}{
		{"all stored", "fs", [][]int{all, all}, 0, 159},
		{"last sliding chunk missing", "fs", [][]int{all, all[:9]}, 0, 144},
		{"full prefix shorter", "fs", [][]int{all[:6], all}, 0, 96},
		{"sliding run of the window inside", "fs", [][]int{all, {0, 1, 2, 3}}, 0, 64},
		{"sliding run from the start", "fs", [][]int{all, {0, 5, 9}}, 0, 16},
		{"sliding run too short in the middle", "fs", [][]int{all, {5, 9}}, 0, 0},
		{"no sliding chunk", "fs", [][]int{all, nil}, 0, 0},
		{"no full chunk", "fs", [][]int{nil, all}, 0, 0},
		{"after a GPU hit", "fs", [][]int{all, {0, 1}}, 32, 0},
		{"after a GPU hit, in window", "fs", [][]int{all, {6, 7}}, 32, 96},
		{"second sliding group shortens", "sfs", [][]int{all, all, all[:9]}, 0, 144},
		{"first sliding group shortens", "sfs", [][]int{{0, 1, 2, 3, 4, 5}, all, all}, 0, 96},
		{"less than a chunk beyond the GPU hit", "fs", [][]int{all, all}, 144, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(hoffCfg(tt.kinds, 32, 256)) // window 2 chunks
			if err != nil {
				t.Fatal(err)
			}
			base := make([]uint64, 10)
			for i := range base {
				base[i] = uint64(1000 + i)
			}
			o := e.off
			for g, cs := range tt.stored {
				var keys []uint64
				for _, k := range cs {
					keys = append(keys, gkey(base[k], g))
				}
				st, _, ok := o.cpu.PrepareStore(keys, nil)
				if !ok {
					t.Fatal("tier full")
				}
				o.cpu.CompleteStore(st)
			}
			if got := e.hybridHit(base, 160, tt.gpuTok); got != tt.want {
				t.Errorf("hit %d tokens, want %d", got, tt.want)
			}
		})
	}
}

// TestHybridOffloadWaitsForALoad: a request whose hit chunks another
// request is loading waits (vLLM delays it), then hits the GPU's cache.
func TestHybridOffloadWaitsForALoad(t *testing.T) {
	c := hoffCfg("sf", 128, 140)
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	// A second question about the first document with request 4's.
	as := append(rereadArrivals(), arrival{300 * time.Millisecond, req(5, 1, seg(1, 1024), seg(5, 16))})
	drive(t, e, as)
	st := e.Stats()
	if st.OffloadLoads != 1 {
		t.Errorf("%d loads, want 1: the second request waits for the first's", st.OffloadLoads)
	}
	if st.PrefixHits < 1008 {
		t.Errorf("GPU prefix hits %d tokens: the second request should hit the loaded blocks", st.PrefixHits)
	}
}

func TestHybridOffloadValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string // "" accepted
	}{
		{"native", func(c *Config) {}, ""},
		{"lmcache", func(c *Config) { c.Offload.Connector = OffloadLMCache }, "LMCache with a hybrid"},
		{"alignment", func(c *Config) { c.Offload.AlignTokens = 24 }, "alignment 24 tokens"},
		{"mamba", func(c *Config) {
			c.KVCache = kernel.KVCacheLayout{Groups: 2, Mamba: 2}
			c.EnablePrefixCaching = false
		}, "mamba"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := hoffCfg("sf", 128, 256)
			tt.edit(&c)
			_, err := New(c)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// BenchmarkEngineHybridOffload is BenchmarkEngineOffload's working set on
// a DeepSeek-V4-like layout (one full group, 63 sliding groups of a
// 128-token window) with and without the connector.
func BenchmarkEngineHybridOffload(b *testing.B) {
	kinds := "f" + strings.Repeat("s", 63)
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("offload=%v", on), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c := hoffCfg(kinds, 128, 64*80)
				c.Offload.AlignTokens = 256
				c.Offload.CPUChunks = 1 << 17
				if !on {
					c.Offload = nil
				}
				e, _ := New(c)
				drive(b, e, docs(64))
			}
		})
	}
}
