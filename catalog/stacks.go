package catalog

import (
	"embed"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"
)

// One YAML file per serving stack (today: vLLM): the host-side and frontend
// facts that no per-operator kernel table gives, each with its source, so a
// measured fact lives beside its provenance rather than as a literal in code.
//
//go:embed stacks/*.yaml
var stackFS embed.FS

// Stack is one serving stack's engine-host and frontend facts.
type Stack struct {
	Name string
	// HostStepGraphed is the engine's CPU time for a step replayed as one
	// full CUDA graph.
	HostStepGraphed time.Duration
	// HostPiecewisePerLayer is what a step run as piecewise CUDA graphs
	// costs the CPU on top of HostStepGraphed, per decoder layer.
	HostPiecewisePerLayer time.Duration
	// PiecewiseGapPerLayer is the GPU's idle time per decoder layer between
	// piecewise graphs when the GPU is the bottleneck.
	PiecewiseGapPerLayer time.Duration
	// HostStepEager is the engine's CPU time for a fully eager step.
	HostStepEager time.Duration
	// HostPerSampledToken is sampling and output handling per row that
	// produces a token.
	HostPerSampledToken time.Duration
	// ElementwiseFloor is the shortest a memory-bound kernel runs.
	ElementwiseFloor time.Duration
	// HostDraftPass is the CPU time of one speculative draft pass beside
	// its graph replays: the proposer's eager tensor updates, attention
	// metadata, logits and argmax.
	HostDraftPass time.Duration
	// HostNgramPerRow is a CPU-side proposer's (n-gram, suffix) lookup
	// per row that samples.
	HostNgramPerRow time.Duration
	// CustomAllReduceMaxBytes is the largest all-reduce the stack's custom
	// kernel handles; larger ones go to NCCL.
	CustomAllReduceMaxBytes float64
	// FrontendLatency is what the frontend (HTTP, API server, IPC,
	// streaming) adds to each request's TTFT and E2E beyond the engine.
	FrontendLatency time.Duration
	// Sources maps each field's Go name to where its value comes from.
	Sources map[string]string
}

type stackFile struct {
	Name                    string  `yaml:"name"`
	HostStepGraphed         sourced `yaml:"host_step_graphed_s"`
	HostPiecewisePerLayer   sourced `yaml:"host_piecewise_per_layer_s"`
	PiecewiseGapPerLayer    sourced `yaml:"piecewise_gap_per_layer_s"`
	HostStepEager           sourced `yaml:"host_step_eager_s"`
	HostPerSampledToken     sourced `yaml:"host_per_sampled_token_s"`
	ElementwiseFloor        sourced `yaml:"elementwise_floor_s"`
	HostDraftPass           sourced `yaml:"host_draft_pass_s"`
	HostNgramPerRow         sourced `yaml:"host_ngram_per_row_s"`
	CustomAllReduceMaxBytes sourced `yaml:"custom_allreduce_max_bytes"`
	FrontendLatency         sourced `yaml:"frontend_latency_s"`
}

// ParseStack decodes one stack YAML file strictly: unknown keys, missing
// values or sources and out-of-range numbers are errors naming the file and
// the key.
func ParseStack(name string, data []byte) (*Stack, error) {
	var f stackFile
	if err := decodeStrictYAML(name, data, &f); err != nil {
		return nil, err
	}
	if strings.TrimSpace(f.Name) == "" || f.Name != strings.ToLower(f.Name) {
		return nil, fmt.Errorf("%s: key \"name\": want a non-empty lower-case name, got %q", name, f.Name)
	}
	s := &Stack{Name: f.Name, Sources: map[string]string{}}
	durations := []struct {
		key, goName string
		v           sourced
		dst         *time.Duration
	}{
		{"host_step_graphed_s", "HostStepGraphed", f.HostStepGraphed, &s.HostStepGraphed},
		{"host_piecewise_per_layer_s", "HostPiecewisePerLayer", f.HostPiecewisePerLayer, &s.HostPiecewisePerLayer},
		{"piecewise_gap_per_layer_s", "PiecewiseGapPerLayer", f.PiecewiseGapPerLayer, &s.PiecewiseGapPerLayer},
		{"host_step_eager_s", "HostStepEager", f.HostStepEager, &s.HostStepEager},
		{"host_per_sampled_token_s", "HostPerSampledToken", f.HostPerSampledToken, &s.HostPerSampledToken},
		{"elementwise_floor_s", "ElementwiseFloor", f.ElementwiseFloor, &s.ElementwiseFloor},
		{"host_draft_pass_s", "HostDraftPass", f.HostDraftPass, &s.HostDraftPass},
		{"host_ngram_per_row_s", "HostNgramPerRow", f.HostNgramPerRow, &s.HostNgramPerRow},
		{"frontend_latency_s", "FrontendLatency", f.FrontendLatency, &s.FrontendLatency},
	}
	for _, d := range durations {
		v, err := checkSourced(name, d.key, d.v, 0, 60)
		if err != nil {
			return nil, err
		}
		*d.dst = time.Duration(math.Round(v * float64(time.Second)))
		s.Sources[d.goName] = d.v.Source
	}
	v, err := checkSourced(name, "custom_allreduce_max_bytes", f.CustomAllReduceMaxBytes, 0, 1<<40)
	if err != nil {
		return nil, err
	}
	s.CustomAllReduceMaxBytes = v
	s.Sources["CustomAllReduceMaxBytes"] = f.CustomAllReduceMaxBytes.Source
	return s, nil
}

// checkSourced returns a sourced number after checking it has a value in
// [lo, hi] and a source.
func checkSourced(file, key string, v sourced, lo, hi float64) (float64, error) {
	if v.Value == nil {
		return 0, fmt.Errorf("%s: key %q: missing value", file, key)
	}
	if strings.TrimSpace(v.Source) == "" {
		return 0, fmt.Errorf("%s: key %q: missing source (every number says where it comes from)", file, key)
	}
	if x := *v.Value; math.IsNaN(x) || x < lo || x > hi {
		return 0, fmt.Errorf("%s: key %q: %g is outside [%g, %g]", file, key, x, lo, hi)
	}
	return *v.Value, nil
}

var (
	stackOnce sync.Once
	stackReg  map[string]*Stack
	stackErr  error
)

// LookupStack returns a serving stack's facts by name ("vllm"). The result
// is a fresh copy.
func LookupStack(name string) (*Stack, error) {
	stackOnce.Do(func() {
		var list []*Stack
		list, stackErr = loadNamedYAML(stackFS, "stacks/*.yaml", "name", ParseStack, func(s *Stack) string { return s.Name })
		stackReg = map[string]*Stack{}
		for _, s := range list {
			stackReg[s.Name] = s
		}
	})
	if stackErr != nil {
		return nil, stackErr
	}
	s, ok := stackReg[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		names := make([]string, 0, len(stackReg))
		for n := range stackReg {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown serving stack %q; known: %s", name, strings.Join(names, ", "))
	}
	cp := *s
	cp.Sources = make(map[string]string, len(s.Sources))
	for k, v := range s.Sources {
		cp.Sources[k] = v
	}
	return &cp, nil
}
