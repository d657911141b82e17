package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"blis/validate/page"
)

var update = flag.Bool("update", false, "rewrite the golden pages under testdata/golden/ (review the diff)")

// goldenPage compares a page's Markdown with testdata/golden/NAME.md (the
// manifest's directory written as DIR); -update rewrites it.
func goldenPage(t *testing.T, name string, pg *page.Page) {
	t.Helper()
	got := bytes.ReplaceAll(markdown(t, pg), []byte(filepath.Dir(pg.Manifest)), []byte("DIR"))
	path := filepath.Join("testdata", "golden", name+".md")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("page differs from %s (go test -update rewrites it; review the diff):\n%s", path, got)
	}
}

// markdown is the page as Markdown writes it.
func markdown(t *testing.T, pg *page.Page) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Markdown(&b, pg); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pageJSON is the page's JSON.
func pageJSON(t *testing.T, pg *page.Page) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := pg.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
