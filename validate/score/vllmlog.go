package score

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"blis/scenario"
)

// A vLLM server log's start-up lines say what ran: the version and the KV
// pool vLLM sized. The lines read, as vLLM v1 writes them:
//
//	vllm/entrypoints/openai/api_server.py  "vLLM API server version 0.10.1.1"
//	vllm/v1/engine/core.py (via LLMEngine)  "Initializing a V1 LLM engine (v0.10.1.1) with config: ..."
//	vllm/v1/core/kv_cache_utils.py          "GPU KV cache size: 417,552 tokens"
//
// Each may carry a prefix (timestamp, "(EngineCore_DP0 pid=12)", ANSI
// colour). A data-parallel deployment logs one KV line per engine; they
// must agree.

// ServerLog is what a vLLM server log states.
type ServerLog struct {
	File        string
	Version     string // "" when no version line
	VersionLine int
	// KVTokens is the pool from "GPU KV cache size: N tokens" (0 when
	// absent); KVLines counts those lines (one per engine).
	KVTokens int
	KVLine   int
	KVLines  int
}

// maxLogLine bounds one log line (vLLM's config dump is a few kB).
const maxLogLine = 1 << 20

// ReadServerLog reads a vLLM server log. A matching line whose number or
// version does not parse, KV lines that disagree, or versions that
// disagree are errors naming the file and line. A log with neither line is
// an error too: it cannot be the start-up of a vLLM server.
func ReadServerLog(file string, r io.Reader) (*ServerLog, error) {
	sl := &ServerLog{File: file}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLogLine)
	bad := func(line int, value, msg string) error {
		return &scenario.InputError{File: file, Line: line, Value: value, Msg: msg}
	}
	line := 0
	for sc.Scan() {
		line++
		text := stripANSI(sc.Bytes())
		if i := bytes.Index(text, []byte("GPU KV cache size:")); i >= 0 {
			rest := strings.TrimSpace(string(text[i+len("GPU KV cache size:"):]))
			num, unit, _ := strings.Cut(rest, " ")
			if unit != "tokens" {
				return nil, bad(line, rest, `expected "GPU KV cache size: N tokens"`)
			}
			n, err := parseCommaInt(num)
			if err != nil {
				return nil, bad(line, num, "KV cache size: expected a token count such as 417,552")
			}
			if sl.KVLines > 0 && n != sl.KVTokens {
				return nil, bad(line, num, fmt.Sprintf("KV cache size disagrees with line %d (%d tokens); one log per deployment", sl.KVLine, sl.KVTokens))
			}
			if sl.KVLines == 0 {
				sl.KVTokens, sl.KVLine = n, line
			}
			sl.KVLines++
			continue
		}
		v, found, err := versionOf(string(text))
		if !found {
			continue
		}
		if err != nil {
			return nil, bad(line, v, err.Error())
		}
		if sl.Version != "" && v != sl.Version {
			return nil, bad(line, v, fmt.Sprintf("vLLM version disagrees with line %d (%s); one log per server", sl.VersionLine, sl.Version))
		}
		if sl.Version == "" {
			sl.Version, sl.VersionLine = v, line
		}
	}
	if err := sc.Err(); err != nil {
		if err == bufio.ErrTooLong {
			return nil, bad(line+1, "", fmt.Sprintf("line longer than %d bytes", maxLogLine))
		}
		return nil, &scenario.InputError{File: file, Msg: "cannot read: " + err.Error()}
	}
	if sl.Version == "" && sl.KVLines == 0 {
		return nil, bad(0, "", `no vLLM start-up lines: expected "vLLM API server version X" or "GPU KV cache size: N tokens"`)
	}
	return sl, nil
}

var versionMarkers = []struct{ before, after string }{
	{"vLLM API server version ", ""},
	{"vLLM server version ", ""},
	{"LLM engine (v", ") with config"},
}

// versionOf finds a version line; found is false when the line is none.
func versionOf(s string) (v string, found bool, err error) {
	for _, m := range versionMarkers {
		i := strings.Index(s, m.before)
		if i < 0 {
			continue
		}
		rest := s[i+len(m.before):]
		if m.after != "" {
			j := strings.Index(rest, m.after)
			if j < 0 {
				continue
			}
			rest = rest[:j]
		} else if j := strings.IndexAny(rest, " \t"); j >= 0 {
			rest = rest[:j]
		}
		rest = strings.TrimPrefix(strings.TrimSpace(rest), "v")
		if !ValidVersion(rest) {
			return rest, true, fmt.Errorf("vLLM version: expected a version such as 0.10.1.1 or 0.11.0rc2.dev45+g1234abc")
		}
		return rest, true, nil
	}
	return "", false, nil
}

// ValidVersion accepts PEP 440-ish versions: a digit first, then digits,
// letters, '.', '+', '-', '_' only.
func ValidVersion(v string) bool {
	if v == "" || len(v) > 128 || v[0] < '0' || v[0] > '9' {
		return false
	}
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '.', c == '+', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// parseCommaInt parses "417,552" (or "417552"): groups of three digits
// after the first comma, a value in [1, 2^40].
func parseCommaInt(s string) (int, error) {
	if s == "" {
		return 0, strconv.ErrSyntax
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		if p == "" || (i > 0 && len(p) != 3) || (i == 0 && len(parts) > 1 && len(p) > 3) {
			return 0, strconv.ErrSyntax
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return 0, strconv.ErrSyntax
			}
		}
	}
	n, err := strconv.ParseInt(strings.Join(parts, ""), 10, 64)
	if err != nil || n < 1 || n > 1<<40 {
		return 0, strconv.ErrRange
	}
	return int(n), nil
}

// stripANSI removes colour escape sequences (ESC [ ... letter).
func stripANSI(b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '[' {
			j := i + 2
			for j < len(b) && !(b[j] >= '@' && b[j] <= '~') {
				j++
			}
			i = j
			continue
		}
		out = append(out, b[i])
	}
	return out
}
