package catalog

import "fmt"

// GDNLaw prices one Gated DeltaNet kernel (kernel.GDNTime), fitted on the
// linear_attention/vllm/0.24.0/gdn_perf tables: one law per kernel_source
// (causal_conv1d_fn and chunk_gated_delta_rule_flashinfer for prefill
// chunks, causal_conv1d_update and fused_recurrent_gated_delta_rule_packed_decode
// for decode tokens).
type GDNLaw struct {
	Kernel    string  `yaml:"kernel"` // the kernel_source
	Phase     string  `yaml:"phase"`  // "context" or "generation"
	PeakFLOPS float64 `yaml:"-"`      // bf16_flops
	MemBW     float64 `yaml:"-"`
	T0        float64 `yaml:"t0_s"`
	// BWEff is the fraction of the chip's bandwidth the kernel's traffic
	// (activations in and out, each sequence's state read and written)
	// moves at.
	BWEff float64 `yaml:"bw_eff"`
	// FLOPEff is the fraction of the BF16 peak the chunked rule's matmuls
	// reach (0 for the other kernels, whose work is traffic).
	FLOPEff float64 `yaml:"flop_eff"`
	// PerSeq is the fixed cost of one sequence (its state's setup).
	PerSeq float64 `yaml:"per_seq_s"`
	// PerChunk is the chunked rule's sequential cost of one 64-token chunk
	// of a sequence (the chunks of a sequence run one after another, the
	// sequences and heads side by side); 0 for the other kernels.
	PerChunk   float64    `yaml:"per_chunk_s"`
	Provenance Provenance `yaml:"provenance"`
}

func (l *GDNLaw) provenance() *Provenance { return &l.Provenance }

// GDN kernel sources, as the measured tables name them.
const (
	GDNConvPrefill = "causal_conv1d_fn"
	GDNConvDecode  = "causal_conv1d_update"
	GDNRulePrefill = "chunk_gated_delta_rule_flashinfer"
	GDNRuleDecode  = "fused_recurrent_gated_delta_rule_packed_decode"
)

// GDNFor returns the law of a GDN kernel source.
func (c *Coefficients) GDNFor(kernel string) (*GDNLaw, error) {
	return lawFor(c, "gdn", "kernel", c.GDN, func(l *GDNLaw) []string { return []string{l.Kernel} }, kernel)
}

func (c *Coefficients) validateGDN(k *checker, dup func(section, id string)) {
	for i, l := range c.GDN {
		p := fmt.Sprintf("gdn[%d]", i)
		switch l.Kernel {
		case GDNConvPrefill, GDNRulePrefill:
			if l.Phase != "context" {
				k.failf(p+".phase", "%q for %s, want context", l.Phase, l.Kernel)
			}
		case GDNConvDecode, GDNRuleDecode:
			if l.Phase != "generation" {
				k.failf(p+".phase", "%q for %s, want generation", l.Phase, l.Kernel)
			}
		default:
			k.failf(p+".kernel", "%q is not one of %s, %s, %s, %s", l.Kernel, GDNConvPrefill, GDNConvDecode, GDNRulePrefill, GDNRuleDecode)
		}
		dup("gdn", l.Kernel)
		k.num(p+".t0_s", l.T0, 0, maxSeconds)
		k.num(p+".bw_eff", l.BWEff, 1e-6, maxEff)
		k.num(p+".flop_eff", l.FLOPEff, 0, maxEff)
		k.num(p+".per_seq_s", l.PerSeq, 0, maxSeconds)
		k.num(p+".per_chunk_s", l.PerChunk, 0, maxSeconds)
		k.prov(p+".provenance", l.Provenance)
	}
}
