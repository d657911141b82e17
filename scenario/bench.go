package scenario

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"blis/metrics"
)

// The `vllm bench serve` flags below are those of vllm/benchmarks/serve.py
// add_cli_args (vllm-project/vllm main @ 009e6d4a1cd6): a pasted command
// line parses. Those with a meaning in a simulation are honoured; the rest
// are accepted and named once on stderr as having no effect.

// KV is one --metadata KEY=VALUE pair, as the result JSON writes it.
type KV = metrics.KV

// SLO is one --goodput KEY:VALUE objective (Metric ttft, tpot or e2el, MS
// the bound in milliseconds), as the summary counts good requests by it.
type SLO = metrics.SLO

// Backends are the --backend values BLIS simulates: vLLM's request
// functions for text generation (ASYNC_REQUEST_FUNCS in
// vllm/benchmarks/lib/endpoint_request_func.py; vllm and openai are the
// Completions API, openai-chat the Chat Completions API).
func Backends() []string { return []string{"vllm", "openai", "openai-chat"} }

// otherBackends are vLLM's --backend values for tasks BLIS does not
// simulate, with the task.
var otherBackends = map[string]string{
	"openai-audio": "speech recognition", "openai-embeddings": "embeddings", "openai-embeddings-chat": "embeddings",
	"openai-embeddings-clip": "embeddings", "openai-embeddings-vlm2vec": "embeddings", "infinity-embeddings": "embeddings",
	"infinity-embeddings-clip": "embeddings", "vllm-pooling": "pooling", "vllm-rerank": "reranking",
}

// ParseGoodput parses one --goodput item the way vLLM's parse_goodput and
// check_goodput_args do: KEY:VALUE with exactly one colon, a metric in
// ttft, tpot, e2el and a non-negative number of milliseconds. The errors
// are vLLM's. NaN is refused (vLLM would count no request as good).
func ParseGoodput(item string) (SLO, error) {
	name, val, ok := strings.Cut(item, ":")
	f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
	if !ok || strings.Contains(val, ":") || err != nil || math.IsNaN(f) {
		return SLO{}, fmt.Errorf(`invalid format found for service level objectives %s: specify them as "KEY:VALUE" pairs, where the key is a metric name, and the value is a number in milliseconds`, quote(item))
	}
	switch name {
	case "ttft", "tpot", "e2el":
	default:
		return SLO{}, fmt.Errorf("invalid metric name found, %s: the service level objective name should be one of ttft, tpot, e2el", quote(item))
	}
	if f < 0 {
		return SLO{}, fmt.Errorf("invalid value found, %s: the service level objective value should be non-negative", quote(item))
	}
	return SLO{Metric: name, MS: f}, nil
}

// ParseMetadata parses one --metadata item as vLLM does: KEY=VALUE split at
// the first "=", both sides trimmed.
func ParseMetadata(item string) (KV, error) {
	k, v, ok := strings.Cut(item, "=")
	if !ok {
		return KV{}, fmt.Errorf("invalid metadata format %s: please use KEY=VALUE format", quote(item))
	}
	return KV{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)}, nil
}

// MultiValueFlags are the flags vLLM takes several words for (argparse
// nargs "*" or "+"), each word of the shape sep says; the CLI splits
// `--goodput ttft:100 tpot:50` into one flag per word.
var MultiValueFlags = map[string]string{"metadata": "=", "goodput": ":", "header": "="}

// goodputValue collects --goodput items; each Set adds one.
type goodputValue struct{ p *[]SLO }

func (v goodputValue) String() string {
	parts := make([]string, len(*v.p))
	for i, s := range *v.p {
		parts[i] = s.Metric + ":" + strconv.FormatFloat(s.MS, 'g', -1, 64)
	}
	return strings.Join(parts, " ")
}
func (v goodputValue) Type() string { return "KEY:MS ..." }
func (v goodputValue) Set(s string) error {
	slo, err := ParseGoodput(s)
	if err != nil {
		return err
	}
	*v.p = append(*v.p, slo)
	return nil
}

// metadataValue collects --metadata items; each Set adds one.
type metadataValue struct{ p *[]KV }

func (v metadataValue) String() string {
	parts := make([]string, len(*v.p))
	for i, kv := range *v.p {
		parts[i] = kv.Key + "=" + kv.Value
	}
	return strings.Join(parts, " ")
}
func (v metadataValue) Type() string { return "KEY=VALUE ..." }
func (v metadataValue) Set(s string) error {
	kv, err := ParseMetadata(s)
	if err != nil {
		return err
	}
	*v.p = append(*v.p, kv)
	return nil
}

// noEffect is a vllm bench serve flag a simulation cannot honour: its type
// (the value is checked as vLLM's argparse would), its default and why it
// changes nothing.
type noEffect struct {
	name, typ, def, why string
}

const (
	whyNoServer   = "no server is contacted"
	whyTokens     = "BLIS works in tokens and tokenizes no text"
	whySampling   = "sampling parameters change which tokens are generated, not how many, and BLIS generates exactly the requested output length"
	whyNoProgress = "BLIS draws no progress bar or plot"
)

// noEffectFlags lists them in help order.
var noEffectFlags = []noEffect{
	{"base-url", "string", "", whyNoServer},
	{"host", "string", "127.0.0.1", whyNoServer},
	{"port", "int", "8000", whyNoServer},
	{"header", "KEY=VALUE ...", "", "HTTP headers change nothing BLIS models"},
	{"insecure", "bool", "", whyNoServer},
	{"ready-check-timeout-sec", "int", "0", whyNoServer},
	{"request-id-prefix", "string", "", "request ids are not reported"},
	{"served-model-name", "string", "", "the model is named by --model"},
	{"tokenizer-mode", "string", "auto", whyTokens},
	{"trust-remote-code", "bool", "", whyTokens},
	{"skip-tokenizer-init", "bool", "", whyTokens},
	{"skip-chat-template", "bool", "", whyTokens},
	{"no-stream", "bool", "", "BLIS streams every dataset"},
	{"temperature", "float", "", whySampling},
	{"top-p", "float", "", whySampling},
	{"top-k", "int", "", whySampling},
	{"min-p", "float", "", whySampling},
	{"frequency-penalty", "float", "", whySampling},
	{"presence-penalty", "float", "", whySampling},
	{"repetition-penalty", "float", "", whySampling},
	{"extra-body", "string", "", "request body fields are not modelled; output lengths are honoured exactly"},
	{"logprobs", "int", "", "the sampler's logprob computation is not priced"},
	{"disable-tqdm", "bool", "", whyNoProgress},
	{"profile", "bool", "", "no profiler runs in a simulation"},
	{"plot-timeline", "bool", "", whyNoProgress},
	{"timeline-itl-thresholds", "string", "25,50", whyNoProgress},
	{"plot-dataset-stats", "bool", "", whyNoProgress},
}

// noEffectValue stores a no-effect flag's value in Scenario.NoEffect after
// checking it has the flag's type.
type noEffectValue struct {
	m *map[string]string
	f noEffect
}

func (v noEffectValue) String() string {
	if x, ok := (*v.m)[v.f.name]; ok {
		return x
	}
	if v.f.typ == "bool" && v.f.def == "" {
		return "false"
	}
	return v.f.def
}
func (v noEffectValue) Type() string     { return v.f.typ }
func (v noEffectValue) IsBoolFlag() bool { return v.f.typ == "bool" }
func (v noEffectValue) Set(s string) error {
	s = strings.TrimSpace(s)
	var err error
	switch v.f.typ {
	case "int":
		_, err = parseInt(s, 64)
	case "float":
		_, err = strconv.ParseFloat(s, 64)
		if err != nil {
			err = fmt.Errorf("%s is not a number", quote(s))
		}
	case "bool":
		if _, e := strconv.ParseBool(s); e != nil {
			err = fmt.Errorf("%s is not a boolean (true or false)", quote(s))
		}
	}
	if err != nil {
		return err
	}
	if *v.m == nil {
		*v.m = map[string]string{}
	}
	if prev, ok := (*v.m)[v.f.name]; ok && strings.HasSuffix(v.f.typ, "...") {
		s = prev + " " + s
	}
	(*v.m)[v.f.name] = s
	return nil
}

// benchNotes are the INFO lines for the vllm bench serve flags given that
// change nothing in a simulation, in table order.
func (s Scenario) benchNotes() []string {
	var notes []string
	if s.Endpoint != Defaults().Endpoint {
		notes = append(notes, "INFO --endpoint has no effect in a simulation: "+whyNoServer+"; it is only checked against --backend as vLLM checks it")
	}
	for _, f := range noEffectFlags {
		if _, ok := s.NoEffect[f.name]; ok {
			notes = append(notes, "INFO --"+f.name+" has no effect in a simulation: "+f.why)
		}
	}
	return notes
}

// applyGenericLengths maps --input-len and --output-len onto the datasets'
// own length flags, as vllm bench serve's main_async does before sampling:
// --input-len sets --random-input-len; --output-len sets the random,
// sharegpt and prefix_repetition output lengths (and vLLM's custom, hf and
// spec_bench ones, which BLIS does not have).
func (s *Scenario) applyGenericLengths() error {
	if s.InputLen < 0 {
		return bad("input-len", strconv.Itoa(s.InputLen), "must be ≥ 1 (0: the dataset's own lengths)")
	}
	if s.OutputLen < 0 {
		return bad("output-len", strconv.Itoa(s.OutputLen), "must be ≥ 1 (0: the dataset's own lengths)")
	}
	if s.InputLen > 0 {
		s.RandomInputLen = s.InputLen
	}
	if s.OutputLen > 0 {
		s.RandomOutputLen, s.ShareGPTOutputLen, s.PrefixRepetition.OutputLen = s.OutputLen, s.OutputLen, s.OutputLen
	}
	return nil
}

// checkBackend refuses a --backend BLIS does not simulate, and an
// --endpoint the backend's request function would refuse
// (_validate_api_url: the Completions API URL ends in completions, the
// Chat Completions API URL in chat/completions, or either in profile).
func (s Scenario) checkBackend() error {
	switch s.Backend {
	case "vllm", "openai":
		if !strings.HasSuffix(s.Endpoint, "completions") && !strings.HasSuffix(s.Endpoint, "profile") {
			return bad("endpoint", s.Endpoint, "--backend "+s.Backend+" sends to the OpenAI Completions API: the URL must end with completions or profile")
		}
	case "openai-chat":
		if !strings.HasSuffix(s.Endpoint, "chat/completions") && !strings.HasSuffix(s.Endpoint, "profile") {
			return bad("endpoint", s.Endpoint, "--backend openai-chat sends to the OpenAI Chat Completions API: the URL must end with chat/completions or profile (e.g. --endpoint /v1/chat/completions)")
		}
	default:
		if task, ok := otherBackends[s.Backend]; ok {
			return bad("backend", s.Backend, "vLLM's backend for "+task+"; BLIS simulates text generation: "+strings.Join(Backends(), ", "))
		}
		return bad("backend", s.Backend, "allowed: "+strings.Join(Backends(), ", "))
	}
	return nil
}
