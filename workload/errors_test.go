package workload

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Messages never carry raw control or non-UTF-8 bytes from a file.
func TestErrorMessagesEscapeBinary(t *testing.T) {
	for _, err := range []error{
		&TraceError{File: "t.csv", Line: 2, Field: "TIMESTAMP", Value: "\x01\x02\xff\xfe", Allowed: "must be a time"},
		&TraceError{File: "t.jsonl", Line: 1, Allowed: "unknown key \x1b[31mred"},
		&InputError{Flag: "--dataset-name", Value: "\xff", Allowed: "must be one of random"},
	} {
		m := err.Error()
		if !utf8.ValidString(m) || strings.ContainsFunc(m, unicode.IsControl) {
			t.Errorf("raw bytes in %q", m)
		}
	}
	e := &TraceError{File: "t.csv", Line: 2, Field: "TIMESTAMP", Value: "\x01\xff", Allowed: "must be a time"}
	if got, want := e.Error(), `t.csv:2: TIMESTAMP: "\x01\xff": must be a time`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// Each name is blamed on the flag that gave it.
func TestDatasetNameErrorsNameTheirFlag(t *testing.T) {
	for _, c := range []struct {
		spec TraceSpec
		want string
	}{
		{TraceSpec{CustomDatasetType: "bogus"}, "--custom-dataset-type bogus: must be one of"},
		{TraceSpec{DatasetName: "bogus"}, "--dataset-name bogus: must be one of"},
		{TraceSpec{DatasetName: DatasetAgentic, Agentic: AgenticSpec{NumSessions: -1, SessionRate: 1}}, "--agentic-num-sessions -1"},
		{TraceSpec{DatasetName: DatasetSharedPrefix, SharedPrefix: SharedPrefixSpec{NumGroups: 2, NumPromptsPerGroup: 1 << 24}}, "--shared-prefix-num-groups × --shared-prefix-num-prompts-per-group"},
	} {
		_, err := Open(c.spec)
		wantBadInput(t, err, c.want)
	}
}

// An integer too large for the parser is out of range, not "not an
// integer".
func TestOutOfRangeIntegers(t *testing.T) {
	az := "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,99999999999999999999,44\n"
	src, err := newAzure(strings.NewReader(az), nil, "a.csv", TraceSpec{})
	if err == nil {
		var r Request
		for src.Next(&r) {
		}
		err = src.Err()
	}
	wantBadInput(t, err, "a.csv:2: ContextTokens: 99999999999999999999: must be an integer in [1, ")
	ss := `{"session_id": "a", "turns": [{"input_tokens": 99999999999999999999, "output_tokens": 2}]}` + "\n"
	s2, err := newSessions(strings.NewReader(ss), nil, "s.jsonl", TraceSpec{})
	if err == nil {
		var r Request
		for s2.Next(&r) {
		}
		err = s2.Err()
	}
	wantBadInput(t, err, "s.jsonl:1: turns.input_tokens: 99999999999999999999: out of range: at most ")
}
