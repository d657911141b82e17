package jsonx

import (
	"bytes"
	"strings"
	"testing"
)

func TestOrjsonFloat(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1.759522419154569e18, "1.759522419154569e18"}, {255.88656799999998, "255.88656799999998"},
		{550, "550.0"}, {0.0001, "0.0001"}, {1e-5, "0.00001"}, {1e-7, "1e-7"}, {1.5e-7, "1.5e-7"},
		{1e16, "1e16"}, {1e15, "1000000000000000.0"}, {-2.5, "-2.5"}, {0, "0.0"}, {123456.789, "123456.789"},
	} {
		if got := OrjsonFloat(c.x); got != c.want {
			t.Errorf("OrjsonFloat(%v) = %s, want %s", c.x, got, c.want)
		}
	}
}

// One document in each style: key order kept, a repeated Set replacing
// in place, non-ASCII escaped only in Python's styles.
func TestEncodeStyles(t *testing.T) {
	doc := NewObj().Set("b", 1).Set("a", []any{0.5, nil, true}).Set("s", "é").Set("b", 2)
	for _, c := range []struct {
		st   Style
		want string
	}{
		{PyOneLine, `{"b": 2, "a": [0.5, null, true], "s": "\u00e9"}`},
		{OrjsonCompact, `{"b":2,"a":[0.5,null,true],"s":"é"}`},
		{PyIndent1, "{\n \"b\": 2,\n \"a\": [\n  0.5,\n  null,\n  true\n ],\n \"s\": \"\\u00e9\"\n}"},
		{OrjsonIndent2, "{\n  \"b\": 2,\n  \"a\": [\n    0.5,\n    null,\n    true\n  ],\n  \"s\": \"é\"\n}"},
	} {
		var b bytes.Buffer
		Encode(&b, doc, c.st)
		if b.String() != c.want {
			t.Errorf("got\n%s\nwant\n%s", b.String(), c.want)
		}
	}
}

// Parse keeps Python's reading of a document (the last repeated key wins;
// an integral float is an integer), and the Reader names the file, line,
// column and JSON path of a bad value.
func TestParseAndReader(t *testing.T) {
	data := []byte("{\"n\": 1, \"n\": 550.0,\n \"list\": [1, \"x\"], \"deep\": {\"k\": -3}}")
	root, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{File: "f.json", Data: data}
	if got := r.Integer(r.Req(root, "$", "n"), "$.n"); got != 550 || r.Err != nil {
		t.Errorf("n = %d, %v; want the last value, 550", got, r.Err)
	}
	l := r.Arr(r.Req(root, "$", "list"), "$.list")
	r.Count(r.Req(r.Obj(root.Field("deep"), "$.deep"), "$.deep", "k"), "$.deep.k")
	if r.Err == nil || !strings.Contains(r.Err.Error(), "f.json:2:34: $.deep.k: want a count") {
		t.Errorf("negative count: %v", r.Err)
	}
	r.Err = nil
	r.Num(l[1], PathIdx("$.list", 1))
	if r.Err == nil || r.Err.Error() != "f.json:2:14: $.list[1]: want a number, got a string" {
		t.Errorf("string as number: %v", r.Err)
	}
	for _, bad := range []string{"{", "[1,]", "{} x", strings.Repeat("[", maxDepth+2)} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		} else if e := (&Reader{File: "f.json", Data: []byte(bad)}).Syntax(err); !strings.HasPrefix(e.Error(), "f.json:1:") {
			t.Errorf("%q: %v does not name the line", bad, e)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "{}", `{"a": [1, 2.5e3, "x", null, true], "a": {}}`, "[[[]]]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if (n == nil) == (err == nil) {
			t.Fatalf("node %v and error %v", n, err)
		}
		if err != nil {
			(&Reader{File: "f", Data: data}).Syntax(err)
		}
	})
}
