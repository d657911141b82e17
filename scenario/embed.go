package scenario

import _ "embed"

// DefaultYAML is the embedded default scenario (Llama-3.1-8B on one H100,
// random 1024 in / 256 out, 32 concurrent requests).
//
//go:embed default.yaml
var DefaultYAML []byte
