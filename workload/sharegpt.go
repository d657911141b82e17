package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"blis/sim"
)

// vllm bench serve --dataset-name sharegpt. Mirrors vLLM
// vllm/benchmarks/datasets/sharegpt.py ShareGPTDataset (@237145e, 2026) and
// utils.is_valid_sequence:
//
//   - the file is a JSON array of entries; entries without "conversations"
//     or with fewer than two turns are dropped;
//   - prompt = conversations[0].value, reply = conversations[1].value
//     (whoever spoke them);
//   - prompt_len = tokens of the prompt, output_len = tokens of the reply
//     or --sharegpt-output-len;
//   - a pair is used only if prompt_len ≥ 4, output_len ≥ 4 (not checked
//     with --sharegpt-output-len), prompt_len ≤ 1024 and
//     prompt_len + output_len ≤ 2048;
//   - the entries are shuffled with the seed (unless --disable-shuffle),
//     the first --num-prompts usable ones taken, and, when there are fewer,
//     random ones repeated until there are --num-prompts (vLLM's
//     oversampling);
//   - arrivals: vllm bench serve's request process over those requests.
//
// Tokens are counted by ApproxTokens (BLIS has no tokenizer). Each prompt is
// one segment named by a hash of its text, so repeated prompts share cache
// content as they would on a real server. vLLM shuffles with Python's
// random; BLIS uses its own seeded shuffle, so the same seed picks other
// conversations.
//
// Memory: the array is decoded one entry at a time (encoding/json's token
// API); about 20 bytes are kept per usable conversation (all of them, since the
// shuffle needs them; with --disable-shuffle, at most --num-prompts).
type shareGPTSource struct {
	items []sgItem
	order []int32 // nil: items in order
	n     int64
	next  int64
	arr   *arrivals
	seg   [1]Segment
}

type sgItem struct {
	id      uint64
	in, out int32
}

// vLLM's is_valid_sequence defaults.
const (
	sgMinLen       = 4
	sgMaxPromptLen = 1024
	sgMaxTotalLen  = 2048
)

// NewShareGPT reads a ShareGPT JSON array from r (name labels errors) and
// returns vllm bench's sharegpt requests. It reads r to the end (or, with
// DisableShuffle, until NumPrompts usable conversations).
func NewShareGPT(r io.Reader, name string, spec TraceSpec) (Source, error) {
	src, err := newShareGPT(r, name, spec)
	if err != nil {
		return nil, err // a nil Source, not a typed nil
	}
	return src, nil
}

type sgTurn struct {
	Value *string `json:"value"`
}

type sgEntry struct {
	Conversations json.RawMessage `json:"conversations"`
}

func newShareGPT(r io.Reader, name string, spec TraceSpec) (*shareGPTSource, error) {
	n := spec.NumPrompts
	if n == 0 {
		n = 1000 // vllm bench serve --num-prompts default
	}
	if n < 1 {
		return nil, badInput("--num-prompts", strconv.Itoa(spec.NumPrompts), "must be ≥ 1")
	}
	outOverride := spec.ShareGPTOutputLen
	if outOverride < 0 || outOverride > MaxTokens {
		return nil, badInput("--sharegpt-output-len", strconv.Itoa(outOverride), fmt.Sprintf("must be in [1, %d], or 0 for the reply's length", MaxTokens))
	}
	if _, _, err := checkRate(spec.RequestRate, spec.Burstiness); err != nil {
		return nil, err
	}

	dec := json.NewDecoder(r)
	entry := int64(0)
	fail := func(allowed string) error {
		return &TraceError{File: name, Entry: entry, Allowed: allowed}
	}
	syntaxErr := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &TraceError{File: name, Entry: entry, Allowed: fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, se.Error())}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return &TraceError{File: name, Entry: entry, Allowed: "invalid JSON: unexpected end of file"}
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &TraceError{File: name, Entry: entry, Field: te.Field, Allowed: "must not be a JSON " + te.Value}
		}
		return &TraceError{File: name, Entry: entry, Allowed: "invalid JSON: " + err.Error()}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxErr(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fail("expected a JSON array of conversations")
	}
	var items []sgItem
	early := false
	for dec.More() {
		entry++
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntaxErr(err)
		}
		if len(raw) == 0 || raw[0] != '{' {
			return nil, fail("expected an object with \"conversations\"")
		}
		var e sgEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, syntaxErr(err)
		}
		if len(e.Conversations) == 0 || string(e.Conversations) == "null" {
			continue // vLLM drops entries without conversations
		}
		var turns []json.RawMessage
		if err := json.Unmarshal(e.Conversations, &turns); err != nil {
			return nil, &TraceError{File: name, Entry: entry, Field: `"conversations"`, Allowed: "must be a list of turns"}
		}
		if len(turns) < 2 {
			continue // vLLM keeps entries with at least two turns
		}
		var texts [2]string
		for k := range 2 {
			var t sgTurn
			if len(turns[k]) == 0 || turns[k][0] != '{' || json.Unmarshal(turns[k], &t) != nil || t.Value == nil {
				return nil, &TraceError{File: name, Entry: entry, Field: fmt.Sprintf(`"conversations"[%d]`, k),
					Allowed: `must be an object with a string "value"`}
			}
			texts[k] = *t.Value
		}
		in := ApproxTokens(texts[0])
		out := outOverride
		if out == 0 {
			out = ApproxTokens(texts[1])
		}
		if in < sgMinLen || (outOverride == 0 && out < sgMinLen) || in > sgMaxPromptLen || in+out > sgMaxTotalLen {
			continue
		}
		items = append(items, sgItem{id: splitmix64(fnv64(texts[0]) ^ tagText), in: int32(in), out: int32(out)})
		if spec.DisableShuffle && len(items) >= n {
			early = true // in file order, the rest is not needed
			break
		}
	}
	if !early {
		if _, err := dec.Token(); err != nil { // the closing ']'
			return nil, syntaxErr(err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, fail("unexpected data after the JSON array")
		}
	}
	if len(items) == 0 {
		return nil, &TraceError{File: name, Allowed: fmt.Sprintf(
			"no usable conversation: vLLM keeps entries with ≥ 2 turns whose prompt has %d..%d tokens, reply ≥ %d tokens "+
				"and both ≤ %d tokens (counted here as ⌈UTF-8 bytes/4⌉)", sgMinLen, sgMaxPromptLen, sgMinLen, sgMaxTotalLen)}
	}

	s := &shareGPTSource{items: items, n: int64(n)}
	rng := sim.RNG(spec.Seed, "workload.sharegpt")
	if !spec.DisableShuffle {
		s.order = make([]int32, len(items))
		for i := range s.order {
			s.order[i] = int32(i)
		}
		rng.Shuffle(len(s.order), func(i, j int) { s.order[i], s.order[j] = s.order[j], s.order[i] })
		if len(s.order) > n {
			s.order = s.order[:n]
		}
	}
	if len(items) < n || (s.order != nil && len(s.order) < n) {
		// maybe_oversample_requests: random.choice from the samples.
		if s.order == nil {
			s.order = make([]int32, len(items))
			for i := range s.order {
				s.order[i] = int32(i)
			}
		}
		base := len(s.order)
		for len(s.order) < n {
			s.order = append(s.order, s.order[rng.IntN(base)])
		}
	}
	if s.arr, err = newArrivals(spec.RequestRate, spec.Burstiness, s.n, spec.Seed, "workload.arrivals"); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *shareGPTSource) Next(r *Request) bool {
	if s.next >= s.n {
		return false
	}
	i := s.next
	k := int(i)
	if s.order != nil {
		k = int(s.order[i])
	}
	it := s.items[k]
	s.next++
	s.seg[0] = Segment{ID: it.id, Len: int(it.in)}
	*r = Request{Index: i, Arrival: s.arr.next(), InputLen: int(it.in), OutputLen: int(it.out), Prompt: s.seg[:]}
	return true
}

func (s *shareGPTSource) Err() error   { return nil }
func (s *shareGPTSource) Close() error { return nil }
