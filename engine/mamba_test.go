package engine

import (
	"strings"
	"testing"
	"time"

	"blis/kernel"
)

// mambaLayout is one attention group and n mamba groups, 4-token blocks.
func mambaCfg(budget, seqs, blocks, n int) Config {
	c := cfg(budget, seqs, blocks, 4)
	c.EnablePrefixCaching = false
	c.KVCache = kernel.KVCacheLayout{Groups: 1 + n, Mamba: (1<<uint(n) - 1) << 1}
	return c
}

// A request holds cdiv(tokens, block) attention blocks and one block per
// mamba group for its whole life, whatever its length.
func TestMambaGroupsHoldOneBlock(t *testing.T) {
	tests := []struct {
		name        string
		mamba       int
		prompt, out int
		wantAfter   []int // attention blocks after prefill, then after each decode step
	}{
		{"one mamba group", 1, 8, 6, []int{2, 3, 3, 3, 3, 4}},
		{"three mamba groups", 3, 5, 4, []int{2, 2, 2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(mambaCfg(64, 4, 64, tt.mamba))
			if err != nil {
				t.Fatal(err)
			}
			var now time.Duration
			r := req(1, tt.out, seg(1, tt.prompt))
			e.Add(r, now)
			for i, want := range tt.wantAfter {
				step(t, e, &now)
				if r.Status == StatusFinished {
					break
				}
				for g := 1; g <= tt.mamba; g++ {
					if held(r, g) != 1 {
						t.Fatalf("step %d: mamba group %d holds %d blocks, want 1", i, g, held(r, g))
					}
				}
				if held(r, 0) != want || e.HeldBlocks() != want+tt.mamba {
					t.Fatalf("step %d: attention %d held %d, want %d + %d", i, held(r, 0), e.HeldBlocks(), want, tt.mamba)
				}
			}
			for e.HasWork() {
				step(t, e, &now)
			}
			if e.HeldBlocks() != 0 {
				t.Fatalf("held %d after finishing", e.HeldBlocks())
			}
		})
	}
}

// Admission weighs the mamba blocks: 7 usable blocks fit one 8-token
// prompt (2 attention + 3 mamba) but not a second beside it.
func TestMambaAdmissionCountsStateBlocks(t *testing.T) {
	e, _ := New(mambaCfg(64, 4, 8, 3))
	var now time.Duration
	a, b := req(1, 2, seg(1, 8)), req(2, 2, seg(2, 8))
	e.Add(a, now)
	e.Add(b, now)
	step(t, e, &now)
	if e.HeldBlocks() != 5 || held(b, 0) != 0 {
		t.Fatalf("held %d, second request attention %d: want one request admitted", e.HeldBlocks(), held(b, 0))
	}
}

func TestMambaConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		l      kernel.KVCacheLayout
		prefix bool
		want   string
	}{
		{kernel.KVCacheLayout{Groups: 2, Mamba: 4}, false, "beyond"},
		{kernel.KVCacheLayout{Groups: 2, Mamba: 3}, false, "attention group"},
		{kernel.KVCacheLayout{Groups: 64, Mamba: ^uint64(0)}, false, "attention group"},
		{kernel.KVCacheLayout{Groups: 3, Mamba: 2, Sliding: 4, Window: 8}, false, "sliding"},
		{kernel.KVCacheLayout{Groups: 2, Mamba: 2}, true, "prefix caching"},
	} {
		c := cfg(64, 4, 64, 4)
		c.KVCache, c.EnablePrefixCaching = tc.l, tc.prefix
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
}

// Under speculative decoding a request holds 1 + num_speculative_tokens
// state blocks in each mamba group (vLLM's MambaSpec
// num_speculative_blocks), and admission counts them: with 2 spec blocks an
// 8-token prompt holds 2 attention + 3 state blocks, so 12 blocks admit
// two such requests, not three.
func TestMambaSpecBlocks(t *testing.T) {
	c := mambaCfg(64, 4, 12, 1)
	c.KVCache.MambaSpecBlocks = 2
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var now time.Duration
	a, b, d := req(1, 2, seg(1, 8)), req(2, 2, seg(2, 8)), req(3, 2, seg(3, 8))
	e.Add(a, now)
	e.Add(b, now)
	e.Add(d, now)
	step(t, e, &now)
	if held(a, 1) != 3 || held(b, 1) != 3 || held(d, 1) != 0 || e.HeldBlocks() != 10 {
		t.Fatalf("state blocks %d/%d/%d, held %d: want 3, 3, 0 (two requests admitted)", held(a, 1), held(b, 1), held(d, 1), e.HeldBlocks())
	}
	if l := c.KVCache; l.MaxBlocks(1, 100) != 3 {
		t.Errorf("MaxBlocks of a mamba group %d, want 3", l.MaxBlocks(1, 100))
	}
}
