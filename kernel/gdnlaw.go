package kernel

import (
	"math"

	"blis/catalog"
)

// GDNShape is one rank's Gated DeltaNet layer: its heads (already divided
// by TP), head sizes, conv width and the bytes of one state element.
type GDNShape struct {
	KeyHeads, ValueHeads   float64
	KeyHeadDim, ValueDim   float64
	ConvKernel             float64
	ActBytes, SSMStateByte float64
}

// gdnRuleChunk is the chunk length of the chunked gated delta rule (FLA's
// and FlashInfer's 64).
const gdnRuleChunk = 64

// GDNTraffic is what one GDN kernel moves and computes for rows sequences
// of tokens new tokens: bytes (activations in and out, the state read and
// written once per sequence) and FLOPs (the chunked rule's matmuls: per
// token and value head, the state update and output, 4·dk·dv, and the
// intra-chunk attention, 2·64·(dk+dv); 0 for the conv and recurrent
// kernels, whose time is traffic).
func GDNTraffic(kernel string, sh GDNShape, rows, tokens float64) (bytes, flops float64) {
	qk := sh.KeyHeads * sh.KeyHeadDim
	v := sh.ValueHeads * sh.ValueDim
	switch kernel {
	case catalog.GDNConvPrefill, catalog.GDNConvDecode:
		ch := 2*qk + v
		return 2*tokens*ch*sh.ActBytes + 2*rows*(sh.ConvKernel-1)*ch*sh.ActBytes, 0
	}
	state := sh.ValueHeads * sh.KeyHeadDim * sh.ValueDim * sh.SSMStateByte
	bytes = tokens*(2*qk+2*v+2*sh.ValueHeads)*sh.ActBytes + 2*rows*state
	if kernel == catalog.GDNRulePrefill {
		flops = tokens * sh.ValueHeads * (4*sh.KeyHeadDim*sh.ValueDim + 2*gdnRuleChunk*(sh.KeyHeadDim+sh.ValueDim))
	}
	return bytes, flops
}

// GDNTime is the law's seconds for one call: a fixed cost, a cost per
// sequence, the traffic at a fraction of the bandwidth, and for the
// chunked rule its work at a fraction of the BF16 peak plus a sequential
// cost per chunk of the mean sequence (tokens/rows).
func GDNTime(l *catalog.GDNLaw, sh GDNShape, rows, tokens float64) float64 {
	bytes, flops := GDNTraffic(l.Kernel, sh, rows, tokens)
	t := l.T0 + rows*l.PerSeq + bytes/(l.BWEff*l.MemBW)
	if flops > 0 && l.FLOPEff > 0 {
		t += flops / (l.FLOPEff * l.PeakFLOPS)
	}
	if l.PerChunk > 0 && rows > 0 {
		t += math.Ceil(tokens/rows/gdnRuleChunk) * l.PerChunk
	}
	return t
}
