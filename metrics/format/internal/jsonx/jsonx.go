// Package jsonx is the JSON the format packages write and read: a tiny
// document model whose objects keep their keys in insertion order,
// written in the style of the tool whose file is mirrored (Python's
// json.dump or orjson), and read back with each value's position so a
// reader can name the file, line, column and JSON path of a bad value.
// Parsing follows Python's json.loads where the tools' files rely on it:
// a repeated key's last value wins, and "550.0" is an integer.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"blis/metrics/internal/pytext"
)

// Obj is a JSON object with keys in insertion order.
type Obj struct {
	Keys []string
	Vals []any
}

// NewObj returns an empty object.
func NewObj() *Obj { return &Obj{} }

// Set appends k (or replaces its value in place, as a Python dict does).
func (o *Obj) Set(k string, v any) *Obj {
	for i, kk := range o.Keys {
		if kk == k {
			o.Vals[i] = v
			return o
		}
	}
	o.Keys = append(o.Keys, k)
	o.Vals = append(o.Vals, v)
	return o
}

// Style is how a tool writes JSON.
type Style struct {
	Indent string // "" writes one line
	// Compact uses "," and ":" on one line (orjson); otherwise ", " and
	// ": " (Python's json.dump). With an indent both use ": ".
	Compact bool
	Float   func(dst []byte, x float64) []byte // appends a finite float
	// FloatRatio appends a finite float x known to be the float nearest
	// n/10^scale (a time in ns as seconds or ms), faster.
	FloatRatio func(dst []byte, x float64, n int64, scale int) []byte
	ASCII      bool // escape non-ASCII as \uXXXX (Python's ensure_ascii)
}

// How the tools write JSON.
var (
	// Python's json.dumps(obj): one line, ", " and ": ", floats as repr,
	// ASCII only.
	PyOneLine = Style{Float: pytext.AppendFloat, FloatRatio: pytext.AppendFloatRatio, ASCII: true}
	// Python's json.dump(obj, f, indent=n).
	PyIndent1 = Style{Indent: " ", Float: pytext.AppendFloat, FloatRatio: pytext.AppendFloatRatio, ASCII: true}
	PyIndent2 = Style{Indent: "  ", Float: pytext.AppendFloat, FloatRatio: pytext.AppendFloatRatio, ASCII: true}
	// orjson.dumps(obj) and orjson.dumps(obj, option=OPT_INDENT_2).
	OrjsonCompact = Style{Compact: true, Float: AppendOrjsonFloat, FloatRatio: AppendOrjsonFloatRatio}
	OrjsonIndent2 = Style{Indent: "  ", Float: AppendOrjsonFloat, FloatRatio: AppendOrjsonFloatRatio}
)

func (st *Style) seps() (item, key string) {
	switch {
	case st.Indent != "":
		return ",", ": "
	case st.Compact:
		return ",", ":"
	}
	return ", ", ": "
}

// Splice is a value written by its own function, straight to the output:
// a list too long to hold in memory (a streaming writer's spooled
// records). Write gets the nesting depth of the value, for indentation.
type Splice struct {
	Write func(w io.Writer, depth int) error
}

// Encode writes v in style st. v holds nil, bool, int, int64, float64,
// string, *Obj, []any and []float64 values (no Splice).
func Encode(b *bytes.Buffer, v any, st Style) {
	d := docWriter{e: NewEnc(st, 0)}
	d.value(v)
	b.Write(d.e.B)
}

// EncodeTo writes v in style st to w; Splice values write themselves in
// place. The document around them is buffered, the splices are not.
func EncodeTo(w io.Writer, v any, st Style) error {
	d := docWriter{e: NewEnc(st, 0), w: w}
	d.value(v)
	if d.err == nil {
		_, d.err = w.Write(d.e.B)
	}
	return d.err
}

// docWriter walks a document through an Enc, so that a document and a
// record streamed token by token are laid out by the same code.
type docWriter struct {
	e   *Enc
	w   io.Writer // for splices; nil in Encode
	err error
}

func (d *docWriter) value(v any) {
	e := d.e
	switch x := v.(type) {
	case nil:
		e.Null()
	case bool:
		e.Bool(x)
	case int:
		e.Int(int64(x))
	case int64:
		e.Int(x)
	case float64:
		e.Float(x)
	case string:
		e.Str(x)
	case *Obj:
		e.Obj()
		for i, k := range x.Keys {
			e.Key(k)
			d.value(x.Vals[i])
		}
		e.EndObj()
	case []any:
		e.Arr()
		for _, y := range x {
			d.value(y)
		}
		e.EndArr()
	case []float64:
		e.Arr()
		for _, y := range x {
			e.Float(y)
		}
		e.EndArr()
	case Splice:
		if d.w == nil {
			panic("metrics: jsonx.Encode: a Splice needs EncodeTo") // unreachable: only the exporters build values
		}
		e.before()
		if d.err != nil {
			return
		}
		if _, d.err = d.w.Write(e.B); d.err == nil {
			e.B = e.B[:0]
			d.err = x.Write(d.w, e.depth+len(e.open))
		}
	default: // unreachable: only the exporters build values
		panic(fmt.Sprintf("metrics: encodeJSON: unsupported %T", v))
	}
}

// OrjsonFloat is how orjson (ryu's format64) writes a finite float: the
// shortest digits that round-trip; positional when the decimal point falls
// within 16 digits of the first digit and the value is at least 1e-5,
// otherwise scientific with an unsigned-if-positive exponent ("1e-7",
// "1.759522419154569e18"); integral values keep ".0".
func OrjsonFloat(x float64) string {
	var buf [32]byte
	return string(AppendOrjsonFloat(buf[:0], x))
}

// AppendOrjsonFloat appends OrjsonFloat(x) to dst without allocating.
func AppendOrjsonFloat(dst []byte, x float64) []byte {
	if x == 0 {
		if math.Signbit(x) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	var buf [32]byte
	neg, digits, exp := pytext.SplitE(strconv.AppendFloat(buf[:0], x, 'e', -1, 64))
	if neg {
		dst = append(dst, '-')
	}
	if kk := exp + 1; kk > -5 && kk <= 16 { // the point sits after kk digits
		return pytext.AppendPositional(dst, digits, kk, true)
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(exp), 10)
}

// AppendOrjsonFloatRatio appends OrjsonFloat(x) for x the float nearest
// n/10^scale, through pytext.ShortDecimal when it applies.
func AppendOrjsonFloatRatio(dst []byte, x float64, n int64, scale int) []byte {
	var buf [20]byte
	if d, decpt, ok := pytext.ShortDecimal(&buf, x, n, scale); ok && decpt > -5 && decpt <= 16 {
		return pytext.AppendPositional(dst, d, decpt, true)
	}
	return AppendOrjsonFloat(dst, x)
}

// --- reading ---

// Node is one parsed JSON value with its byte offset in the input.
type Node struct {
	Kind Kind
	Off  int64    // byte offset of the value in the input
	Keys []string // object keys in first-seen order; a repeated key's last value wins (as in Python)
	Vals []*Node  // object values, one per key
	Arr  []*Node  // array elements
	Str  string   // string value, or the number's literal
	True bool     // a boolean's value
}

// Kind is the JSON type of a parsed value.
type Kind byte

// The kinds of JSON values.
const (
	Object Kind = 'o'
	Array  Kind = 'a'
	String Kind = 's'
	Number Kind = 'n'
	Bool   Kind = 'b'
	Null   Kind = 'z'
)

// Field is member k of an object, or nil.
func (n *Node) Field(k string) *Node {
	for i, kk := range n.Keys {
		if kk == k {
			return n.Vals[i]
		}
	}
	return nil
}

// KindName is the value's kind as an error message names it.
func (n *Node) KindName() string {
	switch n.Kind {
	case Object:
		return "an object"
	case Array:
		return "an array"
	case String:
		return "a string"
	case Number:
		return "a number"
	case Bool:
		return "a boolean"
	default:
		return "null"
	}
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 200

// Parse parses one JSON document (trailing white space allowed).
func Parse(data []byte) (*Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return nil, &posError{off: dec.InputOffset(), msg: "unexpected data after the JSON value"}
		}
		return nil, syntaxError(err, dec)
	}
	return n, nil
}

// posError is a syntax error at a byte offset.
type posError struct {
	off int64
	msg string
}

func (e *posError) Error() string { return e.msg }

func syntaxError(err error, dec *json.Decoder) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &posError{off: se.Offset, msg: "invalid JSON: " + se.Error()}
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return &posError{off: dec.InputOffset(), msg: "invalid JSON: unexpected end of input"}
	}
	return &posError{off: dec.InputOffset(), msg: "invalid JSON: " + err.Error()}
}

func parseValue(dec *json.Decoder, depth int) (*Node, error) {
	if depth > maxDepth {
		return nil, &posError{off: dec.InputOffset(), msg: "JSON nested too deeply"}
	}
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err, dec)
	}
	// InputOffset before Token points before any separator; skip to the value.
	n := &Node{Off: off}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n.Kind = Object
			var index map[string]int // for large objects, where a linear search would be quadratic
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, syntaxError(err, dec)
				}
				k, ok := kt.(string)
				if !ok {
					return nil, &posError{off: dec.InputOffset(), msg: "invalid JSON: object key is not a string"}
				}
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if index == nil && len(n.Keys) >= 16 {
					index = make(map[string]int, 2*len(n.Keys))
					for i, kk := range n.Keys {
						index[kk] = i
					}
				}
				i := -1
				if index != nil {
					if j, ok := index[k]; ok {
						i = j
					}
				} else {
					i = slices.Index(n.Keys, k)
				}
				if i >= 0 {
					n.Vals[i] = v // a repeated key: the last value wins, as in Python
					continue
				}
				if index != nil {
					index[k] = len(n.Keys)
				}
				n.Keys = append(n.Keys, k)
				n.Vals = append(n.Vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(err, dec)
			}
		case '[':
			n.Kind = Array
			for dec.More() {
				v, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				n.Arr = append(n.Arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, syntaxError(err, dec)
			}
		default:
			return nil, &posError{off: dec.InputOffset(), msg: "invalid JSON: unexpected " + t.String()}
		}
	case string:
		n.Kind, n.Str = String, t
	case json.Number:
		n.Kind, n.Str = Number, string(t)
	case bool:
		n.Kind, n.True = Bool, t
	case nil:
		n.Kind = Null
	}
	return n, nil
}

// Reader reads a parsed document of one file, turning every problem into
// an error that names the file, the line and column, the JSON path, what
// was found and what was expected.
type Reader struct {
	File string
	Data []byte
	Line int   // for JSON Lines: the line of Data within the file (1-based); 0 otherwise
	Err  error // the first problem found; every method does nothing once it is set
}

// lineCol maps a byte offset in r.Data to a 1-based line and column,
// skipping the white space and separator before the value.
func (r *Reader) lineCol(off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(r.Data)) {
		off = int64(len(r.Data))
	}
	for off < int64(len(r.Data)) {
		c := r.Data[off]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ':' {
			off++
			continue
		}
		break
	}
	line, col := 1, 1
	for _, c := range r.Data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	if r.Line > 0 {
		line = r.Line
	}
	return line, col
}

// Fail records a problem at n (the first one wins).
func (r *Reader) Fail(n *Node, path, format string, args ...any) {
	if r.Err != nil {
		return
	}
	var off int64
	if n != nil {
		off = n.Off
	}
	line, col := r.lineCol(off)
	r.Err = fmt.Errorf("%s:%d:%d: %s: %s", r.File, line, col, path, fmt.Sprintf(format, args...))
}

// Syntax converts a Parse error to the reader's error form.
func (r *Reader) Syntax(err error) error {
	var pe *posError
	if errors.As(err, &pe) {
		line, col := r.lineCol(pe.off)
		return fmt.Errorf("%s:%d:%d: %s", r.File, line, col, pe.msg)
	}
	return fmt.Errorf("%s: %w", r.File, err)
}

// Obj is n when it is an object.
func (r *Reader) Obj(n *Node, path string) *Node {
	if r.Err != nil {
		return nil
	}
	if n == nil || n.Kind != Object {
		r.Fail(n, path, "want an object, got %s", kindOf(n))
		return nil
	}
	return n
}

func kindOf(n *Node) string {
	if n == nil {
		return "nothing"
	}
	return n.KindName()
}

// Req returns the required member k of object n.
func (r *Reader) Req(n *Node, path, k string) *Node {
	if r.Err != nil || n == nil {
		return nil
	}
	v := n.Field(k)
	if v == nil {
		r.Fail(n, path, "missing key %q", k)
	}
	return v
}

// Opt returns member k of object n, or nil when absent or null.
func (r *Reader) Opt(n *Node, k string) *Node {
	if r.Err != nil || n == nil {
		return nil
	}
	v := n.Field(k)
	if v == nil || v.Kind == Null {
		return nil
	}
	return v
}

// Arr is n's elements when it is an array.
func (r *Reader) Arr(n *Node, path string) []*Node {
	if r.Err != nil {
		return nil
	}
	if n == nil || n.Kind != Array {
		r.Fail(n, path, "want an array, got %s", kindOf(n))
		return nil
	}
	return n.Arr
}

// Str is n's value when it is a string.
func (r *Reader) Str(n *Node, path string) string {
	if r.Err != nil {
		return ""
	}
	if n == nil || n.Kind != String {
		r.Fail(n, path, "want a string, got %s", kindOf(n))
		return ""
	}
	return n.Str
}

// OptStr is a string or null (""), anything else an error.
func (r *Reader) OptStr(n *Node, path string) string {
	if n == nil || n.Kind == Null {
		return ""
	}
	return r.Str(n, path)
}

// Num is a finite JSON number.
func (r *Reader) Num(n *Node, path string) float64 {
	if r.Err != nil {
		return 0
	}
	if n == nil || n.Kind != Number {
		r.Fail(n, path, "want a number, got %s", kindOf(n))
		return 0
	}
	f, err := strconv.ParseFloat(n.Str, 64)
	if err != nil || math.IsInf(f, 0) {
		r.Fail(n, path, "number %s out of range", n.Str)
		return 0
	}
	return f
}

// Integer is a JSON number with an integral value that fits an int64;
// "550.0" is accepted, as Python's int(550.0) would.
func (r *Reader) Integer(n *Node, path string) int64 {
	if r.Err != nil {
		return 0
	}
	if n == nil || n.Kind != Number {
		r.Fail(n, path, "want an integer, got %s", kindOf(n))
		return 0
	}
	if i, err := strconv.ParseInt(n.Str, 10, 64); err == nil {
		return i
	}
	f, err := strconv.ParseFloat(n.Str, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		r.Fail(n, path, "want an integer, got %s", n.Str)
		return 0
	}
	return int64(f)
}

// Count is a non-negative integer that fits an int.
func (r *Reader) Count(n *Node, path string) int {
	v := r.Integer(n, path)
	if r.Err == nil && (v < 0 || v > math.MaxInt32) {
		r.Fail(n, path, "want a count in [0, %d], got %d", math.MaxInt32, v)
		return 0
	}
	return int(v)
}

// PathKey is the JSON path of member k.
func PathKey(path, k string) string { return path + "." + k }

// PathIdx is the JSON path of element i.
func PathIdx(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
