package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"blis/metrics/internal/pytext"
)

// Ordered JSON for the exporters: a tiny document model whose objects keep
// their keys in insertion order, written in the style of the tool whose
// file is mirrored (Python's json.dump or orjson), and read back with each
// value's position so a reader can name the line and JSON path of a bad
// value.

// jObj is a JSON object with keys in insertion order.
type jObj struct {
	keys []string
	vals []any
}

func newObj() *jObj { return &jObj{} }

// set appends k (or replaces its value in place, as a Python dict does).
func (o *jObj) set(k string, v any) *jObj {
	for i, kk := range o.keys {
		if kk == k {
			o.vals[i] = v
			return o
		}
	}
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
	return o
}

// jStyle is how a tool writes JSON.
type jStyle struct {
	indent string // "" writes one line
	// compact uses "," and ":" on one line (orjson); otherwise ", " and
	// ": " (Python's json.dump). With an indent both use ": ".
	compact bool
	float   func(float64) string
	ascii   bool // escape non-ASCII as \uXXXX (Python's ensure_ascii)
}

var (
	// Python's json.dump(obj, f, indent=n): floats as repr, ASCII only.
	pyJSONIndent1 = jStyle{indent: " ", float: pytext.Float, ascii: true}
	pyJSONIndent2 = jStyle{indent: "  ", float: pytext.Float, ascii: true}
	// orjson.dumps(obj) and orjson.dumps(obj, option=OPT_INDENT_2).
	orjsonCompact = jStyle{compact: true, float: orjsonFloat}
	orjsonIndent2 = jStyle{indent: "  ", float: orjsonFloat}
)

// encodeJSON writes v in style st.
func encodeJSON(b *bytes.Buffer, v any, st jStyle) {
	encodeJSONAt(b, v, st, 0)
}

func encodeJSONAt(b *bytes.Buffer, v any, st jStyle, depth int) {
	nl := func(d int) {
		b.WriteByte('\n')
		for range d {
			b.WriteString(st.indent)
		}
	}
	itemSep := ", "
	keySep := ": "
	if st.compact {
		itemSep, keySep = ",", ":"
	}
	if st.indent != "" {
		itemSep = ","
	}
	list := func(n int, each func(i int)) {
		for i := range n {
			if i > 0 {
				b.WriteString(itemSep)
			}
			if st.indent != "" {
				nl(depth + 1)
			}
			each(i)
		}
		if st.indent != "" && n > 0 {
			nl(depth)
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b.WriteString("null")
		} else {
			b.WriteString(st.float(x))
		}
	case string:
		if st.ascii {
			writePyString(b, x)
		} else {
			writeUTF8String(b, x)
		}
	case *jObj:
		b.WriteByte('{')
		list(len(x.keys), func(i int) {
			encodeJSONAt(b, x.keys[i], st, depth+1)
			b.WriteString(keySep)
			encodeJSONAt(b, x.vals[i], st, depth+1)
		})
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		list(len(x), func(i int) { encodeJSONAt(b, x[i], st, depth+1) })
		b.WriteByte(']')
	case []float64:
		b.WriteByte('[')
		list(len(x), func(i int) { encodeJSONAt(b, x[i], st, depth+1) })
		b.WriteByte(']')
	default: // unreachable: only the exporters build values
		panic(fmt.Sprintf("metrics: encodeJSON: unsupported %T", v))
	}
}

// writeUTF8String writes s as orjson does: UTF-8 kept, only '"', '\\' and
// control characters escaped (short escapes where JSON has them). Invalid
// UTF-8 becomes U+FFFD.
func writeUTF8String(b *bytes.Buffer, s string) { pytext.WriteJSONString(b, s, false) }

// orjsonFloat is how orjson (ryu's format64) writes a finite float: the
// shortest digits that round-trip; positional when the decimal point falls
// within 16 digits of the first digit and the value is at least 1e-5,
// otherwise scientific with an unsigned-if-positive exponent ("1e-7",
// "1.759522419154569e18"); integral values keep ".0".
func orjsonFloat(x float64) string {
	if x == 0 {
		if math.Signbit(x) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(x, 'e', -1, 64) // [-]d[.ddd]e±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	n := len(digits)
	kk := exp + 1 // the decimal point sits after kk digits
	switch {
	case kk >= n && kk <= 16:
		return sign + digits + strings.Repeat("0", kk-n) + ".0"
	case kk > 0 && kk <= 16:
		return sign + digits[:kk] + "." + digits[kk:]
	case kk > -5 && kk <= 0:
		return sign + "0." + strings.Repeat("0", -kk) + digits
	case n == 1:
		return sign + digits + "e" + strconv.Itoa(kk-1)
	default:
		return sign + digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(kk-1)
	}
}

// --- reading ---

// jNode is one parsed JSON value with its byte offset in the input.
type jNode struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	off  int64
	keys []string // object keys in first-seen order; a repeated key's last value wins (as in Python)
	vals []*jNode
	arr  []*jNode
	str  string // string value, or the number's literal
	b    bool
}

func (n *jNode) field(k string) *jNode {
	for i, kk := range n.keys {
		if kk == k {
			return n.vals[i]
		}
	}
	return nil
}

func (n *jNode) kindName() string {
	switch n.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	default:
		return "null"
	}
}

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxJSONDepth = 200

// parseJSONTree parses one JSON document (trailing white space allowed).
func parseJSONTree(data []byte) (*jNode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return nil, &jsonPosError{off: dec.InputOffset(), msg: "unexpected data after the JSON value"}
		}
		return nil, jsonSyntax(err, dec)
	}
	return n, nil
}

// jsonPosError is a syntax error at a byte offset.
type jsonPosError struct {
	off int64
	msg string
}

func (e *jsonPosError) Error() string { return e.msg }

func jsonSyntax(err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &jsonPosError{off: se.Offset, msg: "invalid JSON: " + se.Error()}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &jsonPosError{off: dec.InputOffset(), msg: "invalid JSON: unexpected end of input"}
	}
	return &jsonPosError{off: dec.InputOffset(), msg: "invalid JSON: " + err.Error()}
}

func parseJSONValue(dec *json.Decoder, depth int) (*jNode, error) {
	if depth > maxJSONDepth {
		return nil, &jsonPosError{off: dec.InputOffset(), msg: "JSON nested too deeply"}
	}
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonSyntax(err, dec)
	}
	// InputOffset before Token points before any separator; skip to the value.
	n := &jNode{off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.kind = 'o'
			var index map[string]int // for large objects, where a linear search would be quadratic
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, jsonSyntax(err, dec)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, &jsonPosError{off: dec.InputOffset(), msg: "invalid JSON: object key is not a string"}
				}
				v, err := parseJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if index == nil && len(n.keys) >= 16 {
					index = make(map[string]int, 2*len(n.keys))
					for i, kk := range n.keys {
						index[kk] = i
					}
				}
				i := -1
				if index != nil {
					if j, ok := index[k]; ok {
						i = j
					}
				} else {
					i = slices.Index(n.keys, k)
				}
				if i >= 0 {
					n.vals[i] = v // a repeated key: the last value wins, as in Python
					continue
				}
				if index != nil {
					index[k] = len(n.keys)
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonSyntax(err, dec)
			}
		case '[':
			n.kind = 'a'
			for dec.More() {
				v, err := parseJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, jsonSyntax(err, dec)
			}
		default:
			return nil, &jsonPosError{off: dec.InputOffset(), msg: "invalid JSON: unexpected " + t.String()}
		}
	case string:
		n.kind, n.str = 's', t
	case json.Number:
		n.kind, n.str = 'n', string(t)
	case bool:
		n.kind, n.b = 'b', t
	case nil:
		n.kind = 'z'
	}
	return n, nil
}

// jReader reads a parsed document of one file, turning every problem into
// an error that names the file, the line and column, the JSON path, what
// was found and what was expected.
type jReader struct {
	file string
	data []byte
	line int // for JSON Lines: the line of data within the file (1-based); 0 otherwise
	err  error
}

// lineCol maps a byte offset in r.data to a 1-based line and column,
// skipping the white space and separator before the value.
func (r *jReader) lineCol(off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(r.data)) {
		off = int64(len(r.data))
	}
	for off < int64(len(r.data)) {
		c := r.data[off]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' {
			off++
			continue
		}
		break
	}
	line, col := 1, 1
	for _, c := range r.data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	if r.line > 0 {
		line = r.line
	}
	return line, col
}

func (r *jReader) fail(n *jNode, path, format string, args ...any) {
	if r.err != nil {
		return
	}
	var off int64
	if n != nil {
		off = n.off
	}
	line, col := r.lineCol(off)
	r.err = fmt.Errorf("%s:%d:%d: %s: %s", r.file, line, col, path, fmt.Sprintf(format, args...))
}

// syntax converts a parse error to the reader's error form.
func (r *jReader) syntax(err error) error {
	var pe *jsonPosError
	if errors.As(err, &pe) {
		line, col := r.lineCol(pe.off)
		return fmt.Errorf("%s:%d:%d: %s", r.file, line, col, pe.msg)
	}
	return fmt.Errorf("%s: %w", r.file, err)
}

func (r *jReader) obj(n *jNode, path string) *jNode {
	if r.err != nil {
		return nil
	}
	if n == nil || n.kind != 'o' {
		r.fail(n, path, "want an object, got %s", kindOf(n))
		return nil
	}
	return n
}

func kindOf(n *jNode) string {
	if n == nil {
		return "nothing"
	}
	return n.kindName()
}

// req returns the required member k of object n.
func (r *jReader) req(n *jNode, path, k string) *jNode {
	if r.err != nil || n == nil {
		return nil
	}
	v := n.field(k)
	if v == nil {
		r.fail(n, path, "missing key %q", k)
	}
	return v
}

// opt returns member k of object n, or nil when absent or null.
func (r *jReader) opt(n *jNode, k string) *jNode {
	if r.err != nil || n == nil {
		return nil
	}
	v := n.field(k)
	if v == nil || v.kind == 'z' {
		return nil
	}
	return v
}

func (r *jReader) arr(n *jNode, path string) []*jNode {
	if r.err != nil {
		return nil
	}
	if n == nil || n.kind != 'a' {
		r.fail(n, path, "want an array, got %s", kindOf(n))
		return nil
	}
	return n.arr
}

func (r *jReader) str(n *jNode, path string) string {
	if r.err != nil {
		return ""
	}
	if n == nil || n.kind != 's' {
		r.fail(n, path, "want a string, got %s", kindOf(n))
		return ""
	}
	return n.str
}

// optStr is a string or null (""), anything else an error.
func (r *jReader) optStr(n *jNode, path string) string {
	if n == nil || n.kind == 'z' {
		return ""
	}
	return r.str(n, path)
}

// num is a finite JSON number.
func (r *jReader) num(n *jNode, path string) float64 {
	if r.err != nil {
		return 0
	}
	if n == nil || n.kind != 'n' {
		r.fail(n, path, "want a number, got %s", kindOf(n))
		return 0
	}
	f, err := strconv.ParseFloat(n.str, 64)
	if err != nil || math.IsInf(f, 0) {
		r.fail(n, path, "number %s out of range", n.str)
		return 0
	}
	return f
}

// integer is a JSON number with an integral value that fits an int64;
// "550.0" is accepted, as Python's int(550.0) would.
func (r *jReader) integer(n *jNode, path string) int64 {
	if r.err != nil {
		return 0
	}
	if n == nil || n.kind != 'n' {
		r.fail(n, path, "want an integer, got %s", kindOf(n))
		return 0
	}
	if i, err := strconv.ParseInt(n.str, 10, 64); err == nil {
		return i
	}
	f, err := strconv.ParseFloat(n.str, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		r.fail(n, path, "want an integer, got %s", n.str)
		return 0
	}
	return int64(f)
}

// count is a non-negative integer that fits an int.
func (r *jReader) count(n *jNode, path string) int {
	v := r.integer(n, path)
	if r.err == nil && (v < 0 || v > math.MaxInt32) {
		r.fail(n, path, "want a count in [0, %d], got %d", math.MaxInt32, v)
		return 0
	}
	return int(v)
}

func pathKey(path, k string) string { return path + "." + k }

func pathIdx(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
