package render

import (
	"bufio"
	"fmt"
	"math"
	"strconv"
	"strings"

	"blis/validate/page"
	"blis/validate/score"
)

// The Markdown writer and the text of one table cell: numbers, levels
// and the dash of a missing value, the same bytes for the same page.

// pct is a signed percentage ("+6.7%"), "--" when not computable.
func pct(x score.Num) string { return signedPct(x, 1) }

// signedPct is a signed percentage with d decimals, "--" when not
// computable; one that rounds to zero is "+0.0%" (Num.Fixed drops the
// minus of a rounded zero).
func signedPct(x score.Num, d int) string {
	s := x.Fixed(d)
	if s == "--" {
		return s
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s + "%"
}

// value prints a metric value with 4 significant digits (at least).
func value(x score.Num) string {
	f := float64(x)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "--"
	case math.Abs(f) >= 1000:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 1, 64)
	case math.Abs(f) >= 10:
		return strconv.FormatFloat(f, 'f', 2, 64)
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}

// cell escapes a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if s == "" {
		return " "
	}
	return s
}

type mdw struct {
	w    *bufio.Writer
	err  error
	tail [2]byte // the last two bytes written
}

// p writes formatted text; a leading "\n" is dropped where the text
// written so far already ends in a blank line, so sections are separated
// by exactly one.
func (m *mdw) p(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	for strings.HasPrefix(s, "\n") && m.tail == [2]byte{'\n', '\n'} {
		s = s[1:]
	}
	if m.err == nil && s != "" {
		_, m.err = m.w.WriteString(s)
		if len(s) >= 2 {
			m.tail = [2]byte{s[len(s)-2], s[len(s)-1]}
		} else {
			m.tail = [2]byte{m.tail[1], s[0]}
		}
	}
}

func (m *mdw) row(cells ...string) {
	for i := range cells {
		cells[i] = cell(cells[i])
	}
	m.p("| %s |\n", strings.Join(cells, " | "))
}

func (m *mdw) head(cells ...string) {
	m.row(cells...)
	m.p("|%s\n", strings.Repeat("---|", len(cells)))
}

func levelText(x float64) string {
	if math.IsInf(x, 1) {
		return "inf"
	}
	return strconv.FormatFloat(x, 'f', -1, 64)
}

// notes writes one line per distinct note, naming the arms that share it
// ("every arm" when all do).
func (m *mdw) notes(arms []*page.ArmPage, note func(*page.ArmPage) string) {
	var order []string
	by := map[string][]string{}
	for _, a := range arms {
		if n := note(a); n != "" {
			if _, ok := by[n]; !ok {
				order = append(order, n)
			}
			by[n] = append(by[n], a.Label)
		}
	}
	for _, n := range order {
		who := strings.Join(by[n], "; ")
		if len(by[n]) == len(arms) && len(arms) > 1 {
			who = "Every arm"
		}
		m.p("- %s: %s\n", who, n)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
