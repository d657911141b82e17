package kernel

import (
	"fmt"
	"math"
	"slices"
)

// KV-cache dtypes vLLM's --kv-cache-dtype accepts that the kernel models.
var kvCacheDtypes = []string{"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"}

// Validate checks a deployment the way vLLM checks its engine arguments at
// start-up (vllm/config/parallel.py, model.py, scheduler.py, cache.py,
// v0.11): every error names the vLLM flag, the value and what is allowed.
func Validate(d Deployment) error {
	if d.Model == nil {
		return fmt.Errorf("deployment has no model (--model)")
	}
	if d.Chip == nil {
		return fmt.Errorf("deployment has no chip (--hardware)")
	}
	m := d.Model
	if m.NumLayers < 1 || m.HiddenSize < 1 || m.NumHeads < 1 || m.NumKVHeads < 1 || m.HeadDim < 1 || m.VocabSize < 1 {
		return fmt.Errorf("model %s has incomplete architecture numbers (layers %d, hidden %d, heads %d/%d, head_dim %d, vocab %d)",
			m.ID, m.NumLayers, m.HiddenSize, m.NumHeads, m.NumKVHeads, m.HeadDim, m.VocabSize)
	}
	if err := validateHybridLinear(d); err != nil {
		return err
	}
	if d.TP < 1 {
		return fmt.Errorf("--tensor-parallel-size %d must be ≥ 1", d.TP)
	}
	if err := validatePP(d); err != nil {
		return err
	}
	if err := validateEngram(d); err != nil {
		return err
	}
	if d.DP < 0 {
		return fmt.Errorf("--data-parallel-size %d must be ≥ 1", d.DP)
	}
	if d.CUDAGraphMode != "" && !slices.Contains(CUDAGraphModes(), d.CUDAGraphMode) {
		return fmt.Errorf("--compilation-config cudagraph_mode %q: allowed %v", d.CUDAGraphMode, CUDAGraphModes())
	}
	if d.MaxCUDAGraphCaptureSize < 0 {
		return fmt.Errorf("--max-cudagraph-capture-size %d must be ≥ 0", d.MaxCUDAGraphCaptureSize)
	}
	for _, c := range d.CaptureSizes {
		if c < 1 {
			return fmt.Errorf("--compilation-config cudagraph_capture_sizes: %d must be ≥ 1", c)
		}
	}
	if m.NumHeads%d.TP != 0 {
		return fmt.Errorf("--tensor-parallel-size %d does not divide num_attention_heads %d of %s", d.TP, m.NumHeads, m.ID)
	}
	// vLLM's QKVParallelLinear splits KV heads across ranks when there are
	// at least TP of them, and replicates them otherwise, which needs TP to
	// be a multiple of their number. MLA's single latent is replicated.
	if !m.IsMLA() {
		kv := m.NumKVHeads
		if kv >= d.TP && kv%d.TP != 0 {
			return fmt.Errorf("--tensor-parallel-size %d does not divide num_key_value_heads %d of %s", d.TP, kv, m.ID)
		}
		if kv < d.TP && d.TP%kv != 0 {
			return fmt.Errorf("--tensor-parallel-size %d is not a multiple of num_key_value_heads %d of %s (vLLM replicates KV heads only in whole copies)", d.TP, kv, m.ID)
		}
	}
	for _, f := range []struct {
		flag string
		v    int
	}{
		{"--max-num-batched-tokens", d.MaxNumBatchedTokens},
		{"--max-num-seqs", d.MaxNumSeqs},
		{"--max-model-len", d.MaxModelLen},
		{"--block-size", d.BlockSize},
	} {
		if f.v < 1 {
			return fmt.Errorf("%s %d must be ≥ 1", f.flag, f.v)
		}
	}
	if d.MaxModelLen > m.MaxPositions {
		return fmt.Errorf("--max-model-len %d exceeds max_position_embeddings %d of %s", d.MaxModelLen, m.MaxPositions, m.ID)
	}
	if d.MaxNumBatchedTokens < d.MaxNumSeqs {
		return fmt.Errorf("--max-num-batched-tokens %d must be ≥ --max-num-seqs %d (vLLM SchedulerConfig)", d.MaxNumBatchedTokens, d.MaxNumSeqs)
	}
	if d.NumGPUBlocksOverride < 0 {
		return fmt.Errorf("--num-gpu-blocks-override %d must be ≥ 0 (0 = size the pool from memory)", d.NumGPUBlocksOverride)
	}
	if u := d.GPUMemoryUtilization; math.IsNaN(u) || u <= 0 || u > 1 {
		return fmt.Errorf("--gpu-memory-utilization %g must be in (0, 1]", u)
	}
	if _, ok := kvDtypeBytes(d.KVCacheDtype, m.DtypeBytes); !ok {
		return fmt.Errorf("--kv-cache-dtype %q is not supported (allowed: %v)", d.KVCacheDtype, kvCacheDtypes)
	}
	switch d.Quantization {
	case "", "none":
	case "fp8":
		// vLLM refuses a --quantization that differs from the checkpoint's
		// own (vllm/config/model.py _verify_quantization).
		if m.QuantMethod != "" && m.WeightDtype != "fp8" {
			return fmt.Errorf("--quantization fp8 conflicts with %s's own %s (%s) quantization; omit --quantization", m.ID, m.QuantMethod, m.WeightDtype)
		}
	default:
		return fmt.Errorf("--quantization %q is not supported (allowed: \"\" or none for the checkpoint's own weights, fp8)", d.Quantization)
	}
	c := d.Chip
	if !(c.VisibleMemBytes > 0 && c.MemBW > 0 && c.BF16FLOPS > 0 && c.MemBWEfficiency > 0 && c.NVLinkBW > 0) {
		return fmt.Errorf("chip %s lacks memory, bandwidth or FLOP/s numbers", c.Name)
	}
	// vLLM refuses a checkpoint format the chip has no kernel for when it
	// builds the model's layers.
	if _, err := ResolveQuant(m, c); err != nil {
		return err
	}
	if err := validateSpec(d); err != nil {
		return err
	}
	return validateAll2All(d)
}

// kvDtypeBytes is the size of one cached element: "auto" (or "") is the
// model dtype, as in vLLM's CacheConfig.
func kvDtypeBytes(kvDtype string, modelBytes float64) (float64, bool) {
	switch kvDtype {
	case "", "auto":
		return modelBytes, true
	case "bfloat16", "float16":
		return 2, true
	case "fp8", "fp8_e4m3", "fp8_e5m2":
		return 1, true
	}
	return 0, false
}
