package workload

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	inf := math.Inf(1)
	good := []struct {
		in   string
		want float64
	}{
		{"inf", inf}, {"Inf", inf}, {"INF", inf}, {"+inf", inf}, {"infinity", inf}, {"Infinity", inf},
		{"10", 10}, {"0.5", 0.5}, {".5", 0.5}, {"5.", 5}, {"+2", 2}, {"1e3", 1000}, {"1E-3", 0.001},
		{" 10 ", 10}, {"\t7\n", 7}, {" inf", inf},
	}
	for _, c := range good {
		got, err := ParseRate(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, value string }{
		{"", `""`}, {"  ", `"  "`}, {"0", "0"}, {"0.0", "0.0"}, {"-0", "-0"}, {"-1", "-1"},
		{"-inf", "-inf"}, {"nan", "nan"}, {"NaN", "NaN"}, {"abc", "abc"}, {"10rps", "10rps"},
		{"0x10", "0x10"}, {"1_000", "1_000"}, {"1e400", "1e400"}, {"1e-400", "1e-400"},
		{"infinite", "infinite"}, {"10 20", `"10 20"`}, {"\x00", `"\x00"`},
	}
	for _, c := range bad {
		got, err := ParseRate(c.in)
		if err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", c.in, got)
			continue
		}
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("ParseRate(%q): %v does not match ErrBadInput", c.in, err)
		}
		want := "--request-rate " + c.value + ": must be a number > 0"
		if !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ParseRate(%q) error %q, want prefix %q", c.in, err, want)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"inf", "Inf", "10", "0.5", "1e3", "", "-1", "nan", "0x1p4", "1e400", " 3 ", "+infinity"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("ParseRate(%q): %v is not ErrBadInput", s, err)
			}
			return
		}
		if !(v > 0) {
			t.Fatalf("ParseRate(%q) = %v, want > 0", s, v)
		}
		// Every accepted rate builds a source (or is refused as input, never a panic).
		sp := DefaultRandomSpec()
		sp.NumPrompts, sp.RequestRate = 2, v
		if _, err := NewRandom(sp, 0); err != nil && !errors.Is(err, ErrBadInput) {
			t.Fatalf("NewRandom at rate %v: %v", v, err)
		}
	})
}
