package spool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSpoolRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		chunks []string
		repl   []byte
		want   string
	}{
		{"memory", 100, []string{"ab", "c\x00d", ""}, nil, "abc\x00d"},
		{"memory, replaced", 100, []string{"a\x00b", "\x00"}, []byte("XY"), "aXYbXY"},
		{"file", 4, []string{"hello ", "spooled ", "world"}, nil, "hello spooled world"},
		{"file, replaced", 3, []string{"\x00a\x00", strings.Repeat("b", 10), "\x00"}, []byte("1.5"), "1.5a1.5" + strings.Repeat("b", 10) + "1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := New(dir, tc.limit)
			for _, c := range tc.chunks {
				if _, err := s.Write([]byte(c)); err != nil {
					t.Fatal(err)
				}
			}
			if s.Len() != int64(len(strings.Join(tc.chunks, ""))) {
				t.Errorf("Len = %d", s.Len())
			}
			// Read twice: WriteTo leaves the spool as it was.
			for range 2 {
				var b bytes.Buffer
				if err := s.WriteTo(&b, 0, tc.repl); err != nil {
					t.Fatal(err)
				}
				if b.String() != tc.want {
					t.Errorf("WriteTo = %q, want %q", b.String(), tc.want)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			left, _ := filepath.Glob(filepath.Join(dir, "*"))
			if len(left) != 0 {
				t.Errorf("files left behind: %v", left)
			}
		})
	}
}

// A spool that cannot create its file reports the error and keeps it.
func TestSpoolBadDir(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "missing", "dir"), 1)
	if _, err := s.Write([]byte("xx")); err == nil {
		t.Fatal("want an error creating the spool file")
	}
	if err := s.WriteTo(&bytes.Buffer{}, 0, nil); err == nil {
		t.Fatal("WriteTo after a failed Write: want the error")
	}
	_ = s.Close()
	if _, err := os.Stat(s.dir); err == nil {
		t.Fatal("directory should not exist")
	}
}
