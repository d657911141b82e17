package vlog

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

type val struct {
	kind int
	i    int64
	u    uint64
	f    float64
}

// Values of every kind read back in order, twice, across many chunks, in
// memory and spilled to a file that Close removes.
func TestLogRoundTrip(t *testing.T) {
	for _, spill := range []bool{false, true} {
		r := rand.New(rand.NewPCG(5, 6))
		dir := t.TempDir()
		var want []val
		var l Log
		if spill {
			l.Spill(dir, 3*chunkSize)
		}
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
		if spill && (l.MemBytes() > 3*chunkSize || l.fileSize == 0) {
			t.Fatalf("spilling log holds %d bytes in memory, %d on disk", l.MemBytes(), l.fileSize)
		}
		for range 2 {
			rd := l.Reader()
			for i, v := range want {
				ok := false
				switch v.kind {
				case 0:
					ok = rd.Int() == v.i
				case 1:
					ok = rd.Uint() == v.u
				default:
					ok = math.Float64bits(rd.Float()) == math.Float64bits(v.f)
				}
				if !ok {
					t.Fatalf("spill %v: value %d read back wrong", spill, i)
				}
			}
		}
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
			t.Errorf("files left behind: %v", left)
		}
	}
}

// A log that cannot create its spill file says so.
func TestSpillError(t *testing.T) {
	var l Log
	l.Spill(filepath.Join(t.TempDir(), "missing"), chunkSize)
	for i := range 100_000 {
		l.Int(int64(i))
	}
	if l.Err() == nil {
		t.Fatal("no error for a missing spill directory")
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
	l.Spill(t.TempDir(), 2*chunkSize)
	l.Int(1)
	if n := testing.AllocsPerRun(100_000, func() { l.Int(123456789) }); n > 0.001 {
		t.Errorf("Int allocates %v times per value, want none in steady state", n)
	}
	l.Close()
}
