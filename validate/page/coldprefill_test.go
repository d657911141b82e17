package page

import (
	"testing"
	"time"

	"blis/validate/score"
)

func TestFirstCold(t *testing.T) {
	ms := func(x int64) int64 { return x * 1e6 }
	req := func(start, end, ttft int64, ok bool) score.Req {
		return score.Req{Start: ms(start), End: ms(end), TTFT: time.Duration(ms(ttft)), OK: ok}
	}
	for _, c := range []struct {
		name string
		reqs []score.Req
		want int
	}{
		{"none", nil, -1},
		{"one request", []score.Req{req(0, 100, 30, true)}, 0},
		{"earliest is found wherever it is listed", []score.Req{req(200, 300, 30, true), req(100, 150, 30, true)}, 1},
		{"the next sent after the first token", []score.Req{req(0, 100, 30, true), req(30, 130, 30, true)}, 0},
		{"the next sent during the prefill", []score.Req{req(0, 100, 30, true), req(29, 130, 30, true)}, -1},
		{"two sent at once", []score.Req{req(0, 100, 30, true), req(0, 100, 30, true)}, -1},
		{"the first failed", []score.Req{req(0, 10, 0, false), req(50, 100, 30, true)}, -1},
		{"a zero TTFT still excludes a simultaneous send", []score.Req{req(5, 10, 0, true), req(5, 10, 0, true)}, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FirstCold(c.reqs); got != c.want {
				t.Errorf("FirstCold = %d, want %d", got, c.want)
			}
		})
	}
}
