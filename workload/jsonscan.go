package workload

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// jscan reads one JSON value from a byte slice without allocating: keys and
// strings come back as slices of the input, numbers as their text. It
// accepts exactly RFC 8259 JSON (no NaN, no trailing commas, no comments)
// and reports the first problem as a short English phrase. The mooncake
// reader uses it so that a line costs no allocation; formats read less
// often use encoding/json.
type jscan struct {
	b []byte
	i int
}

// maxJSONDepth bounds nesting in skipped values, so hostile input cannot
// exhaust the stack.
const maxJSONDepth = 512

type jsonErr string

func (e jsonErr) Error() string { return string(e) }

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jscan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// expect consumes c after optional white space.
func (s *jscan) expect(c byte, what string) error {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return nil
	}
	return s.errAt("expected " + what)
}

func (s *jscan) errAt(msg string) error {
	if s.i >= len(s.b) {
		return jsonErr("invalid JSON: " + msg + " at end of line")
	}
	return jsonErr("invalid JSON: " + msg + " at column " + strconv.Itoa(s.i+1))
}

// str reads a string at s.i (after white space). raw is its content between
// the quotes, escapes left as written; esc says whether it holds any.
func (s *jscan) str() (raw []byte, esc bool, err error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, s.errAt("expected a string")
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], esc, nil
		case c == '\\':
			esc = true
			if j+1 >= len(s.b) {
				s.i = j
				return nil, false, s.errAt("unterminated escape")
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(s.b) || !isHex(s.b[j+2]) || !isHex(s.b[j+3]) || !isHex(s.b[j+4]) || !isHex(s.b[j+5]) {
					s.i = j
					return nil, false, s.errAt(`bad \u escape`)
				}
				j += 5
			default:
				s.i = j
				return nil, false, s.errAt("bad escape")
			}
		case c < 0x20:
			s.i = j
			return nil, false, s.errAt("control character in string")
		}
	}
	s.i = len(s.b)
	return nil, false, s.errAt("unterminated string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// strValue returns the decoded text of a string read by str. Without
// escapes it converts raw (one allocation); with escapes it lets
// encoding/json decode them. Invalid UTF-8 is an error.
func strValue(raw []byte, esc bool) (string, error) {
	if !esc {
		if !utf8.Valid(raw) {
			return "", jsonErr("invalid UTF-8 in string")
		}
		return string(raw), nil
	}
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(quoted, '"')
	quoted = append(quoted, raw...)
	quoted = append(quoted, '"')
	if !utf8.Valid(quoted) {
		return "", jsonErr("invalid UTF-8 in string")
	}
	var out string
	if err := json.Unmarshal(quoted, &out); err != nil {
		return "", jsonErr("invalid string")
	}
	return out, nil
}

// num reads a number at s.i and returns its text; isInt is true when it has
// neither fraction nor exponent.
func (s *jscan) num() (raw []byte, isInt bool, err error) {
	s.ws()
	start := s.i
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	switch {
	case j < len(s.b) && s.b[j] == '0':
		j++
	case j < len(s.b) && '1' <= s.b[j] && s.b[j] <= '9':
		for j < len(s.b) && '0' <= s.b[j] && s.b[j] <= '9' {
			j++
		}
	default:
		s.i = j
		return nil, false, s.errAt("expected a value")
	}
	isInt = true
	if j < len(s.b) && s.b[j] == '.' {
		isInt = false
		j++
		k := j
		for j < len(s.b) && '0' <= s.b[j] && s.b[j] <= '9' {
			j++
		}
		if j == k {
			s.i = j
			return nil, false, s.errAt("expected a digit")
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		isInt = false
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		k := j
		for j < len(s.b) && '0' <= s.b[j] && s.b[j] <= '9' {
			j++
		}
		if j == k {
			s.i = j
			return nil, false, s.errAt("expected a digit")
		}
	}
	s.i = j
	return s.b[start:j], isInt, nil
}

// lit reads true, false or null and reports which.
func (s *jscan) lit() (string, error) {
	s.ws()
	for _, w := range [...]string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
			s.i += len(w)
			return w, nil
		}
	}
	return "", s.errAt("expected a value")
}

// isNull consumes a null if one comes next.
func (s *jscan) isNull() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// skip reads and discards one value of any kind.
func (s *jscan) skip(depth int) error {
	if depth > maxJSONDepth {
		return s.errAt("nested too deeply")
	}
	s.ws()
	switch s.peek() {
	case '{':
		s.i++
		s.ws()
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			if _, _, err := s.str(); err != nil {
				return err
			}
			if err := s.expect(':', "':'"); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return nil
			default:
				return s.errAt("expected ',' or '}'")
			}
		}
	case '[':
		s.i++
		s.ws()
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return s.errAt("expected ',' or ']'")
			}
		}
	case '"':
		_, _, err := s.str()
		return err
	case 't', 'f', 'n':
		_, err := s.lit()
		return err
	default:
		_, _, err := s.num()
		return err
	}
}

// end checks that nothing but white space follows.
func (s *jscan) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.errAt("unexpected text after the object")
	}
	return nil
}

// parseInt converts the text of an integer (as num returned it) without
// allocating; ok is false when it does not fit an int64.
func parseInt(raw []byte) (v int64, ok bool) {
	neg := false
	if len(raw) > 0 && raw[0] == '-' {
		neg, raw = true, raw[1:]
	}
	if len(raw) == 0 || len(raw) > 19 {
		return 0, false
	}
	var u uint64
	for _, c := range raw {
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// parseNum converts a number's text to a float64; integers exactly when
// they fit.
func parseNum(raw []byte, isInt bool) (float64, bool) {
	if isInt {
		if v, ok := parseInt(raw); ok {
			return float64(v), true
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}
