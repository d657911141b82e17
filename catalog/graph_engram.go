package catalog

import "slices"

// engramOps is one Engram module (arXiv 2601.07372; vLLM's DeepSeek-V4.1
// Engram layer) at the start of its decoder layer, on the main stream: the
// gathered rows of all hash heads (EmbedDim values a token, fp8 with block
// scales, dequantised by the lookup kernel) are projected to a key and a
// value of the hidden size (one fused GEMM; the hash heads are split over
// the TP ranks, so the projection is row-parallel and all-reduced), then
// gated into each of the hc_mult residual streams — RMSNorm of the stream
// and of the key, their scaled dot product through a sigmoid, the gated
// value through a depthwise causal convolution of kernel max_ngram_size —
// and added. The gate, convolution and add are fused into one memory-bound
// op reading the streams, key and value and writing the streams
// ((3·hc_mult + 3) · hidden values a token; an estimate: vLLM's fused
// kernel is not public in full). The row gather itself runs on a side
// stream before the forward and is priced by the kernel's Engram lookup
// (kernel/engram.go), not here.
func (b *builder) engramOps() []Op {
	e, H, hc := b.m.Engram, b.H, max(b.m.HCMult, 1)
	proj := gemm("engram.kv_proj", 2*H, e.EmbedDim(), b.attnDt, ShardRow)
	proj.Parts = []int{H, H}
	return []Op{
		proj,
		collective("engram.kv_proj.all_reduce", GroupTP, "all_reduce", b.bytes(2*H)),
		elementwise("engram.gate_conv_add", b.bytes((3*hc+3)*H), ShardReplicated),
	}
}

// isEngramLayer reports whether decoder layer i carries an Engram module.
func (m *Model) isEngramLayer(i int) bool {
	return m.Engram != nil && slices.Contains(m.Engram.Layers, i)
}
