// Package progress draws a one-line progress bar on a terminal for long
// runs (requests simulated, rows validated, laws fitted), so a user sees the
// run is alive and how long it has left. It writes nothing when its writer
// is not a terminal, so files, pipes and CI logs stay byte-identical.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar is one progress line. The zero value and a nil *Bar are silent.
type Bar struct {
	w     io.Writer
	label string
	unit  string
	total int64
	start time.Time
	last  time.Time
	drawn bool
	now   func() time.Time
	note  string
}

// redraw is the least wall time between two draws: the simulation calls
// Update per request, the terminal needs a few frames a second.
const redraw = 150 * time.Millisecond

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// New returns a bar counting units ("requests", "rows") towards total
// (0: unknown), drawn on w only when w is a terminal and quiet is false;
// otherwise it returns nil, whose methods do nothing.
func New(w io.Writer, label, unit string, total int64, quiet bool) *Bar {
	if quiet || !IsTerminal(w) {
		return nil
	}
	return newBar(w, label, unit, total, time.Now)
}

func newBar(w io.Writer, label, unit string, total int64, now func() time.Time) *Bar {
	t := now()
	return &Bar{w: w, label: label, unit: unit, total: total, start: t, now: now}
}

// Update reports done units and, when sim > 0, the simulated time reached.
// It draws at most every 150 ms of wall time.
func (b *Bar) Update(done int64, sim time.Duration) {
	if b == nil {
		return
	}
	t := b.now()
	if b.drawn && t.Sub(b.last) < redraw {
		return
	}
	b.last, b.drawn = t, true
	fmt.Fprint(b.w, "\r"+b.line(done, sim, t.Sub(b.start))+"\x1b[K")
}

// Note sets a short text drawn after the count from the next Update on
// ("3 infeasible" on a sweep's bar).
func (b *Bar) Note(note string) {
	if b != nil {
		b.note = note
	}
}

// Done erases the line, so what follows starts on a clean terminal line.
func (b *Bar) Done() {
	if b == nil || !b.drawn {
		return
	}
	fmt.Fprint(b.w, "\r\x1b[K")
	b.drawn = false
}

// line is the bar's text: label, count, share and bar, simulated time,
// elapsed time and ETA.
func (b *Bar) line(done int64, sim, elapsed time.Duration) string {
	var s strings.Builder
	s.WriteString(b.label + " ")
	if b.total > 0 {
		f := min(float64(done)/float64(b.total), 1)
		const width = 20
		n := int(f * width)
		s.WriteString("[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "] ")
		fmt.Fprintf(&s, "%d/%d %s (%.0f%%)", done, b.total, b.unit, 100*f)
	} else {
		fmt.Fprintf(&s, "%d %s", done, b.unit)
	}
	if b.note != "" {
		s.WriteString(", " + b.note)
	}
	if sim > 0 {
		s.WriteString(", simulated " + round(sim).String())
	}
	s.WriteString(", elapsed " + round(elapsed).String())
	if b.total > 0 && done > 0 && done < b.total {
		eta := time.Duration(float64(elapsed) * float64(b.total-done) / float64(done))
		s.WriteString(", ETA " + round(eta).String())
	}
	return s.String()
}

// round keeps a duration readable: whole seconds from a minute on, tenths
// below.
func round(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
