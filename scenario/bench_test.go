package scenario

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseGoodput(t *testing.T) {
	for _, c := range []struct {
		in   string
		want SLO
		err  string
	}{
		{"ttft:100", SLO{Metric: "ttft", MS: 100}, ""},
		{"tpot: 2.5", SLO{Metric: "tpot", MS: 2.5}, ""},
		{"e2el:inf", SLO{Metric: "e2el", MS: math.Inf(1)}, ""},
		{"e2el:0", SLO{Metric: "e2el", MS: 0}, ""},
		{"ttft", SLO{}, "invalid format"},
		{"ttft:1:2", SLO{}, "invalid format"},
		{"ttft:fast", SLO{}, "invalid format"},
		{"ttft:nan", SLO{}, "invalid format"},
		{"itl:5", SLO{}, "invalid metric name found"},
		{"tpot:-1", SLO{}, "non-negative"},
	} {
		got, err := ParseGoodput(c.in)
		if c.err == "" && (err != nil || got != c.want) || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%q: got %+v, %v; want %+v, %q", c.in, got, err, c.want, c.err)
		}
	}
}

func TestParseMetadata(t *testing.T) {
	for _, c := range []struct {
		in   string
		want KV
		ok   bool
	}{
		{"a=1", KV{Key: "a", Value: "1"}, true},
		{" a = b=c ", KV{Key: "a", Value: "b=c"}, true},
		{"a=", KV{Key: "a", Value: ""}, true},
		{"a", KV{}, false},
	} {
		got, err := ParseMetadata(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: got %+v, %v", c.in, got, err)
		}
	}
}

// A scenario file gives the list flags as YAML lists or single items.
func TestListFlagsInYAML(t *testing.T) {
	s := Defaults()
	y := "goodput: [ttft:100, tpot:50]\nmetadata: version=1\n"
	if err := s.ApplyYAML("x.yaml", []byte(y), nil); err != nil {
		t.Fatal(err)
	}
	if len(s.Goodput) != 2 || s.Goodput[1] != (SLO{Metric: "tpot", MS: 50}) || len(s.Metadata) != 1 || s.Metadata[0] != (KV{Key: "version", Value: "1"}) {
		t.Fatalf("got %+v %+v", s.Goodput, s.Metadata)
	}
	s = Defaults()
	err := s.ApplyYAML("x.yaml", []byte("goodput:\n  - ttft:1\n  - bogus\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "x.yaml:3: goodput") {
		t.Fatalf("got %v", err)
	}
}

func FuzzParseGoodput(f *testing.F) {
	for _, s := range []string{"ttft:100", "tpot:1e3", "e2el:-0", "x:y:z", ":", "ttft:\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseGoodput(s)
		if err != nil {
			if m := err.Error(); !utf8.ValidString(m) || strings.ContainsAny(m, "\x00\x1b") {
				t.Fatalf("message carries raw bytes: %q", m)
			}
			return
		}
		if slo.MS < 0 || math.IsNaN(slo.MS) || (slo.Metric != "ttft" && slo.Metric != "tpot" && slo.Metric != "e2el") {
			t.Fatalf("%q accepted as %+v", s, slo)
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	for _, s := range []string{"a=1", "=", "a", " k = v ", "\x00=\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := ParseMetadata(s)
		if err != nil {
			if strings.Contains(s, "=") {
				t.Fatalf("%q refused: %v", s, err)
			}
			if m := err.Error(); !utf8.ValidString(m) || strings.ContainsAny(m, "\x00\x1b") {
				t.Fatalf("message carries raw bytes: %q", m)
			}
			return
		}
		if kv.Key != strings.TrimSpace(kv.Key) || kv.Value != strings.TrimSpace(kv.Value) {
			t.Fatalf("%q: untrimmed %+v", s, kv)
		}
	})
}
