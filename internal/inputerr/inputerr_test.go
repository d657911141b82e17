package inputerr

import (
	"errors"
	"strings"
	"testing"
)

func TestErrorForms(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Msg: "no"}, "no"},
		{Error{File: "a.yaml", Msg: "no"}, "a.yaml: no"},
		{Error{File: "a.yaml", Line: 3, Key: "k", Value: "v", Msg: "no"}, `a.yaml:3: k "v": no`},
		{Error{Key: "--k", Msg: "no"}, "--k: no"},
		{Error{Key: "k", Value: "x\x00" + strings.Repeat("y", 70), Msg: "no"}, `k "x\x00` + strings.Repeat("y", 58) + `"…: no`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.e, got, tc.want)
		}
		if !errors.Is(&tc.e, ErrBadInput) {
			t.Errorf("%+v does not match ErrBadInput", tc.e)
		}
	}
}
