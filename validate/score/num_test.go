package score

import (
	"math"
	"testing"
)

func TestNumText(t *testing.T) {
	for _, c := range []struct {
		n    Num
		d    int
		want string
	}{
		{-0.001, 1, "0.0"}, {0.55, 2, "0.55"}, {-1.25, 1, "-1.2"}, {NaN(), 1, "--"}, {Num(math.Inf(-1)), 2, "--"},
	} {
		if got := c.n.Fixed(c.d); got != c.want {
			t.Errorf("%v.Fixed(%d) = %q, want %q", c.n, c.d, got, c.want)
		}
	}
	for _, c := range []struct {
		n    Num
		want string
	}{{1.5, "1.5"}, {NaN(), "null"}, {Num(math.Inf(1)), "null"}} {
		if b, err := c.n.MarshalJSON(); err != nil || string(b) != c.want {
			t.Errorf("%v: JSON %s %v, want %s", c.n, b, err, c.want)
		}
	}
}
