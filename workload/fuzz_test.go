package workload

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// fuzzDrain reads a source built from fuzzed input and checks what every
// source promises: no panic, invariants on each request, errors that match
// ErrBadInput (an in-memory reader has no I/O errors).
func fuzzDrain(t *testing.T, src Source, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrBadInput) {
			t.Fatalf("constructor error %q does not match ErrBadInput", err)
		}
		checkMessage(t, err)
		return
	}
	var r Request
	for i := int64(0); src.Next(&r); i++ {
		if msg := checkRequest(r, i); msg != "" {
			t.Fatalf("request %d: %s: %+v", i, msg, r)
		}
		if i > 1<<20 {
			t.Fatal("too many requests from a small input")
		}
	}
	if err := Err(src); err != nil {
		if !errors.Is(err, ErrBadInput) {
			t.Fatalf("error %q does not match ErrBadInput", err)
		}
		checkMessage(t, err)
	}
}

// checkMessage: no raw control or non-UTF-8 bytes of the input reach a
// terminal through an error message.
func checkMessage(t *testing.T, err error) {
	t.Helper()
	if m := err.Error(); !utf8.ValidString(m) || strings.ContainsFunc(m, unicode.IsControl) {
		t.Fatalf("raw bytes in the message %q", m)
	}
}

func seedFile(f *testing.F, path string) {
	if b, err := os.ReadFile(path); err == nil {
		f.Add(b)
	}
}

func FuzzMooncake(f *testing.F) {
	seedFile(f, "testdata/mooncake_conversation_head200.jsonl")
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 40, "hash_ids": [1, 2]}
{"session_id": "a", "timestamp": 3.5, "input_length": 10, "output_length": 4}
{"session_id": "a", "delay": 2, "text_input": "h\u00e9llo", "output_length": 4, "extra": {"a": [1, {"b": null}]}}`))
	f.Add([]byte(`{"input_length": 5, "output_length": 1}`))
	f.Add([]byte(`{"timestamp": 1e300, "input_length": -0, "output_length": 1, "hash_ids": [-9223372036854775808]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []TraceSpec{{}, {Lenient: true, FixedScheduleAutoOffset: true, FixedScheduleSpeedup: 3, ISLBlockSize: 16}} {
			src, err := NewMooncake(bytes.NewReader(data), "fuzz", spec)
			fuzzDrain(t, src, err)
		}
	})
}

func FuzzAzure(f *testing.F) {
	seedFile(f, "testdata/azure_conv_head200.csv")
	f.Add([]byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04,1,1"))
	f.Add([]byte("ContextTokens,TIMESTAMP,GeneratedTokens\r\n5,2024-02-29T23:59:59.123456789,7\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []TraceSpec{{}, {Lenient: true, FixedScheduleStartOffset: 10, FixedScheduleEndOffset: 100000}} {
			src, err := NewAzure(bytes.NewReader(data), "fuzz", spec)
			fuzzDrain(t, src, err)
		}
	})
}

func FuzzShareGPT(f *testing.F) {
	seedFile(f, "testdata/sharegpt_small.json")
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "a longer prompt here"}, {"from": "gpt", "value": "a reply of some length"}]}]`))
	f.Add([]byte(`[{"conversations": null}, {}, {"conversations": [1, 2]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []TraceSpec{{NumPrompts: 7}, {NumPrompts: 3, DisableShuffle: true, ShareGPTOutputLen: 9, RequestRate: 5}} {
			src, err := NewShareGPT(bytes.NewReader(data), "fuzz", spec)
			fuzzDrain(t, src, err)
		}
	})
}

func FuzzSessions(f *testing.F) {
	seedFile(f, "testdata/sessions_example.jsonl")
	var b bytes.Buffer
	if err := WriteAgentic(&b, AgenticSpec{NumSessions: 3, SessionRate: 1, SystemPromptTokens: 100, MeanTurns: 4,
		MaxContextTokens: 5000, SubagentProb: 0.5, ForkProb: 0.5, SubagentSystemPromptTokens: 10}, 1); err == nil {
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"turns": [{"input_tokens": 5, "output_tokens": 5, "branches": [{"context": "fresh", "turns": [{"input_tokens": 1, "output_tokens": 1}]}]}, {"input_tokens": 5, "output_tokens": 5}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []TraceSpec{{}, {FixedSchedule: true, FixedScheduleSpeedup: 0.5, RequestRate: 3}} {
			src, err := NewSessions(bytes.NewReader(data), "fuzz", spec)
			fuzzDrain(t, src, err)
		}
	})
}

func FuzzLMBench(f *testing.F) {
	seedFile(f, "../metrics/format/lmbench/testdata/sharegpt_small.csv")
	seedFile(f, "../metrics/format/lmbench/testdata/multiround_small.csv")
	f.Add([]byte("prompt_tokens,generation_tokens,ttft,generation_time,user_id,question_id,launch_time,finish_time\n76,20,0.1,0.5,7,1,100,101\n125,20,0.1,0.5,7,2,110,111\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, spec := range []TraceSpec{{}, {NumPrompts: 2, FixedScheduleSpeedup: 3}} {
			src, err := NewLMBench(bytes.NewReader(data), "fuzz", spec)
			fuzzDrain(t, src, err)
		}
	})
}
