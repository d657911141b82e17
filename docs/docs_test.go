// Package docs holds BLIS's documentation; its tests keep the documents
// honest: they describe the product as it is (no development history), every
// relative link resolves, and nothing in the repository points outside it.
package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's top directory, seen from this package.
const root = ".."

// history matches wording that narrates how the code got here rather than
// what it does: git keeps that.
var history = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bsessions? ?\d+\b`),
	regexp.MustCompile(`(?i)\b(first|second|last|previous|earlier|this) session\b`),
	regexp.MustCompile(`(?i)\bwhat changed in\b`),
	regexp.MustCompile(`(?i)\bchangelog\b`),
}

// outside matches a path that leaves the repository for the workplace
// around it.
var outside = regexp.MustCompile(`\.\./shared\b|\bshared/(data|seeds)\b|\bDESIGN\.md\b`)

// files returns the repository's files whose names end in one of exts,
// skipping .git and test fixtures (testdata: golden pages link figures
// their tests do not store).
func files(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		for _, e := range exts {
			if !d.IsDir() && strings.HasSuffix(p, e) {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lines calls f with each line of a file and its number.
func lines(t *testing.T, path string, f func(n int, line string)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(data), "\n") {
		f(i+1, l)
	}
}

func TestDocsDescribeTheProductNotItsHistory(t *testing.T) {
	for _, p := range files(t, ".md") {
		lines(t, p, func(n int, l string) {
			for _, re := range history {
				if m := re.FindString(l); m != "" {
					t.Errorf("%s:%d: %q narrates development history (git keeps it; say what BLIS does now): %s", p, n, m, strings.TrimSpace(l))
				}
			}
		})
	}
}

func TestNothingPointsOutsideTheRepository(t *testing.T) {
	for _, p := range files(t, ".md", ".go", ".yaml", ".yml", ".txt", "/run") {
		if strings.HasSuffix(p, "docs_test.go") {
			continue
		}
		lines(t, p, func(n int, l string) {
			if m := outside.FindString(l); m != "" {
				t.Errorf("%s:%d: %q points outside the repository: name the public origin instead: %s", p, n, m, strings.TrimSpace(l))
			}
		})
	}
}

// link is a Markdown inline link or image: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestRelativeLinksResolve(t *testing.T) {
	for _, p := range files(t, ".md") {
		lines(t, p, func(n int, l string) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
					t.Errorf("%s:%d: link %q does not resolve inside the repository", p, n, m[1])
				}
			}
		})
	}
}

// module is the repository's Go module path.
const module = "blis"

// TestArchitectureTableIsTrue checks docs/architecture.md's package table
// against the code: every package is listed, and no package imports one
// listed above it.
func TestArchitectureTableIsTrue(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	// Rows of the packages table: | layer | `pkg`, `pkg/...` | job |
	var rows [][]string
	inTable := false
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "| layer | package |") {
			inTable = true
			continue
		}
		if inTable && !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(l, "|")
		if !inTable || len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") {
			continue
		}
		var pats []string
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[2], -1) {
			pats = append(pats, m[1])
		}
		rows = append(rows, pats)
	}
	if len(rows) == 0 {
		t.Fatal("no package table in architecture.md")
	}
	rowOf := func(pkg string) int {
		best, bestLen := -1, -1
		for i, pats := range rows {
			for _, p := range pats {
				exact := p == pkg
				prefix := strings.HasSuffix(p, "/...") && strings.HasPrefix(pkg+"/", strings.TrimSuffix(p, "..."))
				if (exact || prefix) && len(p) > bestLen {
					best, bestLen = i, len(p)
				}
			}
		}
		return best
	}
	for pkg, imports := range packageImports(t) {
		r := rowOf(pkg)
		if r < 0 {
			t.Errorf("package %s is not in architecture.md's package table", pkg)
			continue
		}
		for _, imp := range imports {
			if ri := rowOf(imp); ri >= 0 && ri < r {
				t.Errorf("architecture.md lists %s above %s, but %s imports it", imp, pkg, pkg)
			}
		}
	}
}

// packageImports maps every package of the module (its directory relative
// to the repository) to the module's packages its non-test files import.
func packageImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, p := range files(t, ".go") {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.ToSlash(dir)
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			if rel, ok := strings.CutPrefix(path, module+"/"); ok {
				out[dir] = append(out[dir], rel)
			}
		}
	}
	return out
}
