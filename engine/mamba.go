package engine

import "fmt"

// Gated DeltaNet (mamba-style) state groups, for hybrid-linear models
// (Qwen3.5). Mirrors vLLM @1936cf38 vllm/v1/core/single_type_kv_cache_manager.py
// MambaManager with mamba_block_size = max_model_len (prefix caching off):
// a request holds exactly one block in every mamba group from its first
// step to its end, whatever its length; the block is one page of every
// layer in the group, the page padded to the attention page
// (kernel/mamba.go). Admission and preemption weigh it with the attention
// groups' blocks, as the one block pool's coordinator does; preemption
// frees it with the request's other blocks (the state is recomputed).

// mambaGroup marks a mamba group in hybridState.windows.
const mambaGroup = -1

// validateMamba checks a layout with mamba groups: at least one attention
// group beside them, no sliding-window groups, and no prefix caching
// (vLLM's MambaModelConfig turns it off for Qwen3.5).
func (c Config) validateMamba() error {
	l := c.KVCache
	all := uint64(1)<<uint(l.Groups) - 1 // 64 groups: the shift gives 0, so every bit
	switch {
	case l.Mamba&^all != 0:
		return fmt.Errorf("KV cache groups: mamba mask %#x names groups beyond the %d", l.Mamba, l.Groups)
	case l.Mamba == all:
		return fmt.Errorf("%d KV cache groups: a hybrid model needs an attention group beside its mamba groups", l.Groups)
	case l.Sliding != 0:
		return fmt.Errorf("KV cache groups: mamba groups with sliding-window groups are not modelled")
	case c.EnablePrefixCaching:
		return fmt.Errorf("--enable-prefix-caching: vLLM serves this hybrid model with prefix caching off (no mamba prefix-caching support)")
	}
	return nil
}

// mambaBlocksToAllocate is MambaManager.get_num_blocks_to_allocate: the
// request's state blocks (one, plus one per speculative position) for a
// request that holds none yet in the group, else none.
func (e *Engine) mambaBlocksToAllocate(k *reqGroup) int {
	if len(k.blocks) == 0 {
		return e.mambaBlocks()
	}
	return 0
}

// mambaBlocks is the blocks a request holds in each mamba group.
func (e *Engine) mambaBlocks() int { return 1 + e.cfg.KVCache.MambaSpecBlocks }
