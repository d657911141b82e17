package pytext

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {-2, "-2.0"}, {0.1, "0.1"},
		{0.30000000000000004, "0.30000000000000004"}, {233.33333333333334, "233.33333333333334"},
		{1e-4, "0.0001"}, {1e-5, "1e-05"}, {1.5e-7, "1.5e-07"}, {1e15, "1000000000000000.0"},
		{1e16, "1e+16"}, {2.5e20, "2.5e+20"}, {123456789.125, "123456789.125"}, {5e-324, "5e-324"},
	}
	for _, tc := range tests {
		if got := Float(tc.in); got != tc.want {
			t.Errorf("Float(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestJSONStringASCII(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{"caf\u00e9", `"caf\u00e9"`},
		{"\U0001F600", `"\ud83d\ude00"`},
		{"<&>", `"<&>"`},
		{"a\"b\\c\n\t\r\b\f", `"a\"b\\c\n\t\r\b\f"`},
		{"\x01\x7f", `"\u0001\u007f"`},
		{"\xff", `"\ufffd"`},
	}
	for _, tc := range tests {
		if got := string(AppendJSONString(nil, tc.in, true)); got != tc.want {
			t.Errorf("AppendJSONString(%q, ascii) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// The orjson-style writer keeps UTF-8 and escapes only controls.
func TestJSONStringUTF8(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a\"b\\c", `"a\"b\\c"`},
		{"tab\tnl\n\x01\x7f", "\"tab\\tnl\\n\\u0001\x7f\""},
		{"héllo 世界 🙂", "\"héllo 世界 🙂\""},
		{"bad\xffutf8", "\"bad\uFFFDutf8\""},
	} {
		if got := string(AppendJSONString(nil, tc.in, false)); got != tc.want {
			t.Errorf("AppendJSONString(%q, utf-8) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestFixed2(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0.00"}, {1, "1.00"}, {2.675, "2.67"}, {0.125, "0.12"}, {0.375, "0.38"}, {-0.001, "-0.00"},
		{1234567.891, "1234567.89"}, {math.NaN(), "nan"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"},
	} {
		if got := Fixed2(tc.in); got != tc.want {
			t.Errorf("Fixed2(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestISOFormat(t *testing.T) {
	const y2026 = 1767225600 * int64(1e9)
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{y2026, "2026-01-01T00:00:00"},
		{y2026 + 123456789, "2026-01-01T00:00:00.123457"},
		{y2026 + 500, "2026-01-01T00:00:00"},         // half a microsecond to the even 0
		{y2026 + 1500, "2026-01-01T00:00:00.000002"}, // half to the even 2
		{y2026 + 999_999_500, "2026-01-01T00:00:01"}, // rounds into the next second
		{-1, "1970-01-01T00:00:00"},
	} {
		if got := ISOFormat(tc.ns); got != tc.want {
			t.Errorf("ISOFormat(%d) = %q, want %q", tc.ns, got, tc.want)
		}
	}
}

// refFloat is Float written the plain way (FormatFloat twice), the
// reference AppendFloat must match.
func refFloat(x float64) string {
	e := strconv.FormatFloat(x, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.LastIndexByte(e, 'e')+1:])
	if decpt := exp + 1; decpt <= -4 || decpt > 16 {
		return e
	}
	f := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.ContainsRune(f, '.') {
		f += ".0"
	}
	return f
}

func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -2.5, 1e-4, 1e-5, 1e16, 1e15, 123456789.125, 5e-324, math.MaxFloat64, 0.1, 1767225600.123456} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		if got, want := string(AppendFloat([]byte("x"), x)), "x"+refFloat(x); got != want {
			t.Fatalf("AppendFloat(%v) = %s, want %s", x, got, want)
		}
	})
}

func TestAppendFloatRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var x float64
		switch r.IntN(3) {
		case 0:
			x = math.Float64frombits(r.Uint64())
		case 1:
			x = r.Float64() * math.Pow(10, float64(r.IntN(40)-20))
		default:
			x = float64(r.Int64N(1<<53)) / 1e9
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		if got, want := string(AppendFloat(nil, x)), refFloat(x); got != want {
			t.Fatalf("AppendFloat(%v) = %s, want %s", x, got, want)
		}
	}
}

func TestAppendAllocationFree(t *testing.T) {
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendFloat(buf[:0], 1767225600.123456)
		buf = AppendJSONString(buf, "max_model_len: prompt too long", true)
	}); n != 0 {
		t.Errorf("AppendFloat and AppendJSONString allocate %v times per call, want 0", n)
	}
}

// The ratio path writes exactly what AppendFloat writes.
func TestAppendFloatRatio(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	for range 300_000 {
		var n int64
		switch r.IntN(4) {
		case 0:
			n = r.Int64N(100_000_000) // a gap in ns
		case 1:
			n = r.Int64N(1 << 53)
		case 2:
			n = r.Int64N(10_000) * 1_000_000 // round milliseconds
		default:
			n = r.Int64N(4_000_000_000_000) // hours of simulated time
		}
		for _, scale := range []int{6, 9} {
			x := float64(n) / pow10[scale]
			if got, want := string(AppendFloatRatio(nil, x, n, scale)), refFloat(x); got != want {
				t.Fatalf("AppendFloatRatio(%d/1e%d) = %s, want %s", n, scale, got, want)
			}
			// x need not be the ratio: then AppendFloat's path is taken.
			y := float64(n) * (1 / pow10[scale])
			if got, want := string(AppendFloatRatio(nil, y, n, scale)), refFloat(y); got != want {
				t.Fatalf("AppendFloatRatio(%v for %d/1e%d) = %s, want %s", y, n, scale, got, want)
			}
		}
	}
}

func BenchmarkAppendFloat(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.Run("strconv", func(b *testing.B) {
		for i := range b.N {
			buf = AppendFloat(buf[:0], float64(1_234_567_891+i)/1e9)
		}
	})
	b.Run("ratio", func(b *testing.B) {
		for i := range b.N {
			n := int64(1_234_567_891 + i)
			buf = AppendFloatRatio(buf[:0], float64(n)/1e9, n, 9)
		}
	})
}
