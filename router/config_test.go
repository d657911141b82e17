package router

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// deliberateErrors are testdata files that must fail, with the reason.
var deliberateErrors = map[string]string{
	// A Helm template ({{ ... }} directives), not YAML: render it first.
	"configs/scheduler-HEAD/config_charts_epplib_templates__config.yaml": "not valid YAML",
	// llm-d's config-loader fixture made of test-only plugin types.
	"configs/scheduler-HEAD/test_testdata_configloader_1_test.yaml": `type "test-one": unknown plugin type`,
	// llm-d's integration fixture with a mock metrics source.
	"configs/scheduler-HEAD/test_integration_epp_testdata_datalayer-config.yaml": `type "mock-metrics-source": unknown plugin type`,
}

func configFiles(t testing.TB) []string {
	var files []string
	err := filepath.WalkDir("testdata/configs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestEveryTestdataConfigLoads(t *testing.T) {
	files := configFiles(t)
	if len(files) < 60 {
		t.Fatalf("only %d config files found", len(files))
	}
	for _, f := range files {
		rel := strings.TrimPrefix(f, "testdata/")
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfgs, err := LoadAll(data, rel)
			if want, ok := deliberateErrors[rel]; ok {
				if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrBadInput) {
					t.Fatalf("want error containing %q, got %v", want, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cfgs {
				r, err := c.New()
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Start(testEndpoints(4), 1); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
