package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pageFixture = "../../validate/internal/fixture/testdata/small_page.yaml"

// TestValidatePageRecordCheck writes a page, pins a baseline, checks it,
// and fails the check once the baseline is made stricter than BLIS.
func TestValidatePageRecordCheck(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--record", "--jobs", "2"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, f := range []string{"small.md", "small.json", "small.baseline.json", "figures/small/llama-fp8-ttft_mean_ms.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, "small.md"))
	for _, want := range []string{"# Small InferenceX page", "### Llama-3.1-70B FP8 H100: PARTIAL", "## KV pool", "no request is paired"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !strings.Contains(out.String(), "TTFT mean") {
		t.Errorf("stdout: %s", out.String())
	}
	// Same page with one worker: same bytes.
	dir1 := t.TempDir()
	if code := run([]string{"validate", "page", pageFixture, "--out", dir1, "--jobs", "1"}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	md1, _ := os.ReadFile(filepath.Join(dir1, "small.md"))
	if !bytes.Equal(md, md1) {
		t.Error("page differs between --jobs 2 and 1")
	}

	out.Reset()
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--check"}, &out, &errb); code != 0 {
		t.Fatalf("check of a fresh baseline: exit %d: %s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "within tolerance") {
		t.Errorf("stdout: %s", out.String())
	}
	// A baseline BLIS cannot meet: every MAPE 0.
	bpath := filepath.Join(dir, "small.baseline.json")
	b, _ := os.ReadFile(bpath)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"mape_pct"`) {
			l = `      "mape_pct": 0,`
		}
		lines = append(lines, l)
	}
	os.WriteFile(bpath, []byte(strings.Join(lines, "\n")), 0o644)
	out.Reset()
	errb.Reset()
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--check"}, &out, &errb); code != 1 {
		t.Fatalf("regressed check: exit %d, want 1: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "regressed") {
		t.Errorf("stdout: %s", out.String())
	}
}

// --html writes NAME.html beside NAME.md: the arm's metric charts and the
// page's tables; without it there is none.
func TestValidatePageHTML(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "page", pageFixture, "--out", dir, "--html", "--jobs", "2"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	page, err := os.ReadFile(filepath.Join(dir, "small.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>Small InferenceX page</title>", `id="llama-fp8-ttft_mean_ms"`, "Llama-3.1-70B FP8 H100: provenance", `<table class="data sortable">`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("small.html lacks %q", want)
		}
	}
	dir2 := t.TempDir()
	if code := run([]string{"validate", "page", pageFixture, "--out", dir2, "--jobs", "1"}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir2, "small.html")); err == nil {
		t.Error("small.html written without --html")
	}
}

func TestValidatePageBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("validation: x\ntitle: X\narms:\n  - name: a\n    label: A\n    colour: red\n"), 0o644)
	missing := filepath.Join(dir, "missing.yaml")
	os.WriteFile(missing, []byte("validation: x\ntitle: X\narms:\n  - name: a\n    label: A\n    inferencex: {csv: none.csv, model: m, hardware: h100}\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate", "page"}, 2, "takes one manifest file"},
		{[]string{"validate", "page", bad}, 2, "bad.yaml:6: arms[0].colour: unknown key"},
		{[]string{"validate", "page", missing}, 2, "missing.yaml:6: arms[0].inferencex.csv \"none.csv\": cannot read"},
		{[]string{"validate", "page", filepath.Join(dir, "nope.yaml")}, 2, "cannot read the manifest"},
		{[]string{"validate", "page", pageFixture, "--record", "--check"}, 2, "exclude each other"},
		{[]string{"validate", "page", pageFixture, "--html", "--check"}, 2, "--html and --check exclude each other"},
		{[]string{"validate", "page", pageFixture, "--out", dir, "--check"}, 2, "no baseline to check against"},
	} {
		var out, errb bytes.Buffer
		if code := run(c.args, &out, &errb); code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

// A manifest missing several keys fails once, listing every one of them
// (file:line: key) under one line naming the file and the count.
func TestValidatePageMissingKeys(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"top level", "description: half written\n",
			[]string{"blis: %s: 3 required keys missing:", "\n  %s:1: validation: required key missing", "\n  %s:1: title: required key missing", "\n  %s:1: arms: required key missing"}},
		{"arms", "validation: x\ntitle: X\narms:\n  - name: a\n    inferencex: {csv: a.csv, hardware: h100}\n  - label: B\n    inferencex: {csv: a.csv, model: m, hardware: h100}\n",
			[]string{"blis: %s: 3 required keys missing:", "\n  %s:4: arms[0].label: required key missing", "\n  %s:5: arms[0].inferencex.model: required key missing", "\n  %s:6: arms[1].name: required key missing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			if code := run([]string{"validate", "page", file, "--out", dir}, &out, &errb); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errb.String())
			}
			if n := strings.Count(errb.String(), "\n  "); n != len(c.want)-1 {
				t.Errorf("%d problems listed, want %d:\n%s", n, len(c.want)-1, errb.String())
			}
			for _, w := range c.want {
				if w = fmt.Sprintf(w, file); !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}
