package jsonx

import (
	"math"
	"strconv"

	"blis/metrics/internal/pytext"
)

// Enc appends a JSON value token by token, in a Style, to B: the bytes
// Encode writes for the same document, without building one. The
// per-request writers use it: no reflection, no interface values, no
// allocation once B has grown.
//
// Calls must nest: Obj … EndObj, Arr … EndArr, Key before every member
// value. Depth is the nesting depth of the value Enc starts with (for the
// indentation of a value spliced into a larger document).
type Enc struct {
	B     []byte
	st    Style
	item  string
	key   string
	depth int
	open  []int32 // members written so far in each open container
	keyed bool    // a key was written; its value follows without a separator
}

// NewEnc returns an encoder in style st for a value at nesting depth.
func NewEnc(st Style, depth int) *Enc {
	e := &Enc{st: st, depth: depth}
	e.item, e.key = st.seps()
	return e
}

func (e *Enc) nl(d int) {
	e.B = append(e.B, '\n')
	for range d {
		e.B = append(e.B, e.st.Indent...)
	}
}

// before places the separator and indentation a new member needs.
func (e *Enc) before() {
	if e.keyed {
		e.keyed = false
		return
	}
	n := len(e.open)
	if n == 0 {
		return
	}
	if e.open[n-1] > 0 {
		e.B = append(e.B, e.item...)
	}
	e.open[n-1]++
	if e.st.Indent != "" {
		e.nl(e.depth + n)
	}
}

// Key writes an object member's key.
func (e *Enc) Key(k string) {
	e.before()
	e.B = pytext.AppendJSONString(e.B, k, e.st.ASCII)
	e.B = append(e.B, e.key...)
	e.keyed = true
}

// Null writes null.
func (e *Enc) Null() {
	e.before()
	e.B = append(e.B, "null"...)
}

// Bool writes a boolean.
func (e *Enc) Bool(v bool) {
	e.before()
	if v {
		e.B = append(e.B, "true"...)
	} else {
		e.B = append(e.B, "false"...)
	}
}

// Int writes an integer.
func (e *Enc) Int(v int64) {
	e.before()
	e.B = strconv.AppendInt(e.B, v, 10)
}

// Float writes a float in the style's form; NaN and ±Inf as null.
func (e *Enc) Float(v float64) {
	e.before()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		e.B = append(e.B, "null"...)
		return
	}
	e.B = e.st.Float(e.B, v)
}

// FloatRatio writes x, the float nearest n/10^scale (a time in ns as
// seconds or milliseconds), as Float would, faster.
func (e *Enc) FloatRatio(x float64, n int64, scale int) {
	e.before()
	if math.IsNaN(x) || math.IsInf(x, 0) {
		e.B = append(e.B, "null"...)
		return
	}
	e.B = e.st.FloatRatio(e.B, x, n, scale)
}

// Str writes a string.
func (e *Enc) Str(s string) {
	e.before()
	e.B = pytext.AppendJSONString(e.B, s, e.st.ASCII)
}

// Raw writes b as a value, as is.
func (e *Enc) Raw(b []byte) {
	e.before()
	e.B = append(e.B, b...)
}

// IntString writes an integer as a JSON string ("42"): ids that the
// tools write as strings.
func (e *Enc) IntString(v int64) {
	e.before()
	e.B = append(e.B, '"')
	e.B = strconv.AppendInt(e.B, v, 10)
	e.B = append(e.B, '"')
}

// Obj opens an object.
func (e *Enc) Obj() {
	e.before()
	e.B = append(e.B, '{')
	e.open = append(e.open, 0)
}

// EndObj closes an object.
func (e *Enc) EndObj() { e.end('}') }

// Arr opens an array.
func (e *Enc) Arr() {
	e.before()
	e.B = append(e.B, '[')
	e.open = append(e.open, 0)
}

// EndArr closes an array.
func (e *Enc) EndArr() { e.end(']') }

func (e *Enc) end(c byte) {
	n := len(e.open)
	if e.st.Indent != "" && e.open[n-1] > 0 {
		e.nl(e.depth + n - 1)
	}
	e.open = e.open[:n-1]
	e.B = append(e.B, c)
}

// Reset empties B for the next value (keeping its capacity).
func (e *Enc) Reset() {
	e.B, e.open, e.keyed = e.B[:0], e.open[:0], false
}
