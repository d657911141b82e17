package jsonx

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// randomDoc builds a document of every value kind Encode takes.
func randomDoc(r *rand.Rand, depth int) any {
	k := r.IntN(9)
	if depth > 3 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.Int64N(1<<40) - 1<<39
	case 3:
		return math.Float64frombits(r.Uint64())
	case 4:
		return []string{"", "plain", "é\n\"\\", "\U0001F600", "x\x01"}[r.IntN(5)]
	case 5:
		return r.Float64() * 1e3
	case 6:
		o := NewObj()
		for i := range r.IntN(4) {
			o.Set("k"+strconv.Itoa(i), randomDoc(r, depth+1))
		}
		return o
	case 7:
		a := make([]any, r.IntN(4))
		for i := range a {
			a[i] = randomDoc(r, depth+1)
		}
		return a
	default:
		f := make([]float64, r.IntN(3))
		for i := range f {
			f[i] = r.Float64()
		}
		return f
	}
}

// encValue writes v through Enc, token by token.
func encValue(e *Enc, v any) {
	switch x := v.(type) {
	case nil:
		e.Null()
	case bool:
		e.Bool(x)
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
			encValue(e, x.Vals[i])
		}
		e.EndObj()
	case []any:
		e.Arr()
		for _, y := range x {
			encValue(e, y)
		}
		e.EndArr()
	case []float64:
		e.Arr()
		for _, y := range x {
			e.Float(y)
		}
		e.EndArr()
	}
}

// Enc writes the bytes Encode writes, in every style, at the top level and
// as a member nested two levels deep.
func TestEncMatchesEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	styles := map[string]Style{"PyOneLine": PyOneLine, "PyIndent1": PyIndent1, "PyIndent2": PyIndent2,
		"OrjsonCompact": OrjsonCompact, "OrjsonIndent2": OrjsonIndent2}
	for range 2000 {
		doc := randomDoc(r, 0)
		for name, st := range styles {
			var want bytes.Buffer
			Encode(&want, doc, st)
			e := NewEnc(st, 0)
			encValue(e, doc)
			if string(e.B) != want.String() {
				t.Fatalf("%s: Enc wrote\n%s\nEncode wrote\n%s", name, e.B, want.String())
			}
			// Nested: [[doc]] written by Encode, the inner value by an Enc at depth 2.
			want.Reset()
			Encode(&want, []any{[]any{doc}}, st)
			e = NewEnc(st, 2)
			encValue(e, doc)
			if !strings.Contains(want.String(), string(e.B)) {
				t.Fatalf("%s: nested Enc wrote\n%s\nnot inside\n%s", name, e.B, want.String())
			}
		}
	}
}

// refOrjsonFloat is OrjsonFloat written with strings, the reference.
func refOrjsonFloat(x float64) string {
	if x == 0 {
		if math.Signbit(x) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(x, 'e', -1, 64)
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	n := len(digits)
	kk := exp + 1
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

func FuzzAppendOrjsonFloat(f *testing.F) {
	for _, x := range []float64{0, 1.759522419154569e18, 550, 1e-5, 1e-7, 1e16, 1e15, -2.5, 5e-324} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		if got, want := string(AppendOrjsonFloat(nil, x)), refOrjsonFloat(x); got != want {
			t.Fatalf("AppendOrjsonFloat(%v) = %s, want %s", x, got, want)
		}
	})
}

func TestEncAllocationFree(t *testing.T) {
	e := NewEnc(OrjsonCompact, 0)
	encode := func() {
		e.Reset()
		e.Obj()
		e.Key("metadata")
		e.Obj()
		e.Key("x_request_id")
		e.Str("12345")
		e.Key("request_start_ns")
		e.Int(1767225600000000000)
		e.EndObj()
		e.Key("gaps")
		e.Arr()
		for i := range 16 {
			e.Float(float64(i) * 12.345678)
		}
		e.EndArr()
		e.EndObj()
	}
	encode()
	if n := testing.AllocsPerRun(100, encode); n != 0 {
		t.Errorf("Enc allocates %v times per record, want 0", n)
	}
}

func TestOrjsonFloatRatio(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for range 200_000 {
		n := r.Int64N(1 << uint(r.IntN(54)))
		for _, scale := range []int{3, 6, 9} {
			p := math.Pow(10, float64(scale))
			for _, x := range []float64{float64(n) / p, float64(n) * (1 / p)} {
				if got, want := string(AppendOrjsonFloatRatio(nil, x, n, scale)), refOrjsonFloat(x); got != want {
					t.Fatalf("AppendOrjsonFloatRatio(%v, %d/1e%d) = %s, want %s", x, n, scale, got, want)
				}
			}
		}
	}
}
