package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSilentUnlessTerminal(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "run", "requests", 10, false)
	b.Update(5, time.Second)
	b.Done()
	if b != nil || buf.Len() != 0 {
		t.Errorf("a bar on a buffer wrote %q", buf.String())
	}
}

func TestLine(t *testing.T) {
	for _, c := range []struct {
		name         string
		total, done  int64
		sim, elapsed time.Duration
		want         string
	}{
		{"half way", 1000, 500, 90 * time.Second, 2 * time.Second,
			"run [##########..........] 500/1000 requests (50%), simulated 1m30s, elapsed 2s, ETA 2s"},
		{"unknown total", 0, 42, 0, 1500 * time.Millisecond, "run 42 requests, elapsed 1.5s"},
		{"finished: no ETA", 10, 10, time.Hour, time.Minute + 400*time.Millisecond,
			"run [####################] 10/10 requests (100%), simulated 1h0m0s, elapsed 1m0s"},
		{"nothing done: no ETA", 10, 0, 0, time.Second, "run [....................] 0/10 requests (0%), elapsed 1s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBar(nil, "run", "requests", c.total, time.Now)
			if got := b.line(c.done, c.sim, c.elapsed); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestUpdateIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	b := newBar(&buf, "run", "requests", 100, func() time.Time { return clock })
	b.Update(1, 0)
	b.Update(2, 0) // same instant: not drawn
	clock = clock.Add(redraw)
	b.Update(3, 0)
	b.Done()
	out := buf.String()
	if n := strings.Count(out, "requests ("); n != 2 {
		t.Errorf("drawn %d times, want 2: %q", n, out)
	}
	if !strings.HasSuffix(out, "\r\x1b[K") {
		t.Errorf("Done did not clear the line: %q", out)
	}
	var nilBar *Bar
	nilBar.Update(1, 0)
	nilBar.Done()
}

func TestNote(t *testing.T) {
	b := newBar(nil, "blis sweep", "points", 1000, time.Now)
	b.Note("3 infeasible")
	want := "blis sweep [####................] 200/1000 points (20%), 3 infeasible, elapsed 10s, ETA 40s"
	if got := b.line(200, 0, 10*time.Second); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	var nilBar *Bar
	nilBar.Note("x") // a nil bar ignores it
}
