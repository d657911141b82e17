package kernel

import "testing"

// The shape's weight formula follows the architecture: OPT's non-gated MLP
// (fc1, fc2) holds 2·H·I, not a SwiGLU's 3·H·I; its learned position table
// replaces the RoPE cache; its LayerNorms carry a weight and a bias.
func TestShapeWeightsFollowMLPKind(t *testing.T) {
	tests := []struct {
		model    string
		mats     float64 // MLP matrices
		params   float64 // parameters weightBytes counts (biases aside), 0 = not checked
		rope     bool    // a RoPE cos/sin cache
		position float64 // learned position-table parameters
	}{
		// facebook/opt-125m: Hugging Face's 125,239,296 less the 82,944
		// biases, plus the 32 rows vLLM pads the vocabulary (50272 → 50304)
		// by: 38,633,472 embedding + 1,574,400 positions + 12 × (2,359,296
		// attention + 4,718,592 MLP + 3,072 LayerNorm) + 1,536 final LayerNorm.
		{model: "facebook/opt-125m", mats: 2, params: 125_180_928, position: 2050 * 768},
		{model: "meta-llama/Llama-3.1-8B-Instruct", mats: 3, rope: true},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			d := deploy(t, tt.model, "h100", 1)
			s := newShape(d)
			m := d.Model
			if want := tt.mats * s.H * float64(m.IntermediateSize); s.denseMLP != want {
				t.Errorf("dense MLP %g parameters, want %g", s.denseMLP, want)
			}
			if (s.ropeCache > 0) != tt.rope || s.positions != tt.position {
				t.Errorf("RoPE cache %g B, position table %g, want RoPE %v and %g", s.ropeCache, s.positions, tt.rope, tt.position)
			}
			if tt.params > 0 {
				if got := s.weightBytes(); got != tt.params*s.dtypeB {
					t.Errorf("weights %g B, want %g B (%g parameters × %g)", got, tt.params*s.dtypeB, tt.params, s.dtypeB)
				}
			}
		})
	}
}
