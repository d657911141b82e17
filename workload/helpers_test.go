package workload

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// drain reads src to its end, copying prompts, and checks the invariants
// every source keeps: consecutive indices, InputLen == Σ segment lengths,
// segments of ≥ 1 token, lengths ≥ 1, arrivals ≥ 0, session fields
// consistent. It returns the requests and Err(src).
func drain(t testing.TB, src Source) ([]Request, error) {
	t.Helper()
	var out []Request
	var r Request
	for src.Next(&r) {
		c := r
		c.Prompt = slices.Clone(r.Prompt)
		if err := checkRequest(c, int64(len(out))); err != "" {
			t.Fatalf("request %d: %s: %+v", len(out), err, c)
		}
		out = append(out, c)
	}
	if src.Next(&r) {
		t.Fatal("Next returned true after returning false")
	}
	return out, Err(src)
}

func checkRequest(r Request, index int64) string {
	if r.Index != index {
		return "index out of order"
	}
	sum := 0
	for _, s := range r.Prompt {
		if s.Len < 1 {
			return "empty segment"
		}
		sum += s.Len
	}
	switch {
	case sum != r.InputLen:
		return "InputLen != Σ segments"
	case r.InputLen < 1 || r.OutputLen < 1:
		return "length < 1"
	case r.Arrival < 0 || r.Delay < 0:
		return "negative time"
	case r.SessionID == 0 && (r.Turn != 0 || r.PrevContext || r.ParentSession != 0 || r.WaitBranches != 0 || r.Delay != 0):
		return "session fields without a session"
	case !r.PrevContext && r.ContextLen != 0:
		return "ContextLen without PrevContext"
	case r.Turn > 0 && !r.PrevContext:
		return "a later turn without PrevContext"
	case r.ParentSession != 0 && r.Turn != 0:
		return "ParentSession on a later turn"
	}
	return ""
}

func mustDrain(t testing.TB, src Source, err error) []Request {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := drain(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// wantBadInput checks err matches ErrBadInput and its text contains want.
func wantBadInput(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	if !errors.Is(err, ErrBadInput) {
		t.Errorf("error %q does not match ErrBadInput", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}
