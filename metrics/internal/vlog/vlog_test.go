package vlog

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Values of every kind read back in order, across many chunks, with the
// compact sizes the package promises.
func TestLogRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type val struct {
		kind int
		i    int64
		u    uint64
		f    float64
	}
	var want []val
	var l Log
	for range 200_000 {
		v := val{kind: r.IntN(3)}
		switch v.kind {
		case 0:
			v.i = r.Int64() >> r.IntN(64)
			if r.IntN(2) == 0 {
				v.i = -v.i
			}
			l.Int(v.i)
		case 1:
			v.u = r.Uint64() >> r.IntN(64)
			l.Uint(v.u)
		default:
			v.f = math.Float64frombits(r.Uint64())
			l.Float(v.f)
		}
		want = append(want, v)
	}
	if l.Len() != int64(len(want)) {
		t.Fatalf("Len = %d, want %d", l.Len(), len(want))
	}
	rd := l.Reader()
	for i, v := range want {
		switch v.kind {
		case 0:
			if g := rd.Int(); g != v.i {
				t.Fatalf("value %d: Int = %d, want %d", i, g, v.i)
			}
		case 1:
			if g := rd.Uint(); g != v.u {
				t.Fatalf("value %d: Uint = %d, want %d", i, g, v.u)
			}
		default:
			if g := rd.Float(); math.Float64bits(g) != math.Float64bits(v.f) {
				t.Fatalf("value %d: Float = %v, want %v", i, g, v.f)
			}
		}
	}
}

func TestLogSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(l *Log)
		want int64
	}{
		{"small int", func(l *Log) { l.Int(-3) }, 1},
		{"100 ms in ns", func(l *Log) { l.Int(100_000_000) }, 4},
		{"uint 127", func(l *Log) { l.Uint(127) }, 1},
		{"float", func(l *Log) { l.Float(0.25) }, 8},
	} {
		var l Log
		tc.add(&l)
		if l.Bytes() != tc.want {
			t.Errorf("%s: %d bytes, want %d", tc.name, l.Bytes(), tc.want)
		}
	}
}

func TestLogAppendAllocationFree(t *testing.T) {
	var l Log
	l.Int(1)
	if n := testing.AllocsPerRun(1000, func() { l.Int(123456789) }); n > 0.01 {
		t.Errorf("Int allocates %v times per value, want a chunk per 64 KiB only", n)
	}
}
