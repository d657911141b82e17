package router

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestConfigErrorsReadWell(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown type", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- type: magic-scorer\n",
			[]string{"x.yaml:4:", `type "magic-scorer": unknown plugin type`, "queue-scorer", "prefix-cache-scorer"}},
		{"unknown parameter", "kind: EndpointPickerConfig\nplugins:\n- type: load-aware-scorer\n  parameters:\n    treshold: 3\n",
			[]string{"x.yaml:5:", "parameters.treshold", "plugin load-aware-scorer", "unknown parameter; accepted: threshold"}},
		{"no-param plugin", "kind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\n  parameters:\n    x: 1\n",
			[]string{"x.yaml:5:", "this plugin takes no parameters"}},
		{"bad value", "kind: EndpointPickerConfig\nplugins:\n- type: prefix-cache-affinity-filter\n  parameters:\n    affinityThreshold: high\n",
			[]string{"x.yaml:5:", `parameters.affinityThreshold "high"`, "must be a finite number"}},
		{"out of range", "kind: EndpointPickerConfig\nplugins:\n- type: utilization-detector\n  parameters:\n    kvCacheUtilThreshold: 1.5\n",
			[]string{"kvCacheUtilThreshold", "must be in (0, 1]"}},
		{"api version", "apiVersion: v9\nkind: EndpointPickerConfig\n", []string{"x.yaml:1:", `apiVersion "v9"`, "llm-d.ai/v1alpha1"}},
		{"top-level key", "kind: EndpointPickerConfig\nschedulingProfile: []\n", []string{"x.yaml:2:", "schedulingProfile", "unknown top-level key"}},
		{"dangling ref", "kind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\nschedulingProfiles:\n- name: default\n  plugins:\n  - pluginRef: kv-scorer\n",
			[]string{"x.yaml:7:", `pluginRef "kv-scorer"`, "no plugin of that name"}},
		{"no config", "router:\n  epp: {}\n", []string{"no EndpointPickerConfig found"}},
		{"embedded line numbers", "router:\n  epp:\n    pluginsConfigFile: a.yaml\n    pluginsCustomConfig:\n      a.yaml: |\n        kind: EndpointPickerConfig\n        plugins:\n        - type: bogus\n",
			[]string{"x.yaml:8:", `"bogus"`}},
		{"missing custom entry", "router:\n  epp:\n    pluginsConfigFile: b.yaml\n    pluginsCustomConfig:\n      a.yaml: |\n        kind: EndpointPickerConfig\n",
			[]string{"pluginsConfigFile \"b.yaml\"", "has: a.yaml"}},
		{"profile handler needed", "kind: EndpointPickerConfig\nplugins:\n- type: queue-scorer\nschedulingProfiles:\n- name: a\n  plugins: [{pluginRef: queue-scorer}]\n- name: b\n  plugins: [{pluginRef: queue-scorer}]\n",
			[]string{"several profiles need a profile handler"}},
		{"not yaml", "kind: [", []string{"x.yaml:1:", "not valid YAML"}},
		{"tree cycle", "kind: EndpointPickerConfig\nplugins:\n- type: decision-tree-filter\n  name: t\n  parameters:\n    current: {pluginRef: t}\n",
			[]string{`plugins "t"`, "refers to itself"}},
		{"flow quantity", "kind: EndpointPickerConfig\nflowControl:\n  maxRequests: lots\n", []string{"x.yaml:3:", `maxRequests "lots"`, "Kubernetes quantity"}},
		{"precise block size", "kind: EndpointPickerConfig\nplugins:\n- type: precise-prefix-cache-scorer\n  parameters:\n    tokenProcessorConfig:\n      blockSize: 16x\n",
			[]string{"x.yaml:6:", `tokenProcessorConfig.blockSize "16x"`, "must be an integer"}},
		{"precise indexer block size", "kind: EndpointPickerConfig\nplugins:\n- type: precise-prefix-cache-producer\n  parameters:\n    indexerConfig:\n      tokenProcessorConfig: {blockSize: [16]}\n",
			[]string{"x.yaml:6:", "indexerConfig.tokenProcessorConfig.blockSize", "single value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.yaml), "x.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrBadInput) {
				t.Errorf("error does not match ErrBadInput: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error: %q", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestEmbeddedConfigsPickTheRightEntry(t *testing.T) {
	data, err := os.ReadFile("testdata/configs/llmd-guides-upstream/optimized-baseline.values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(data, "ob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "router.epp.pluginsCustomConfig.optimized-baseline-plugins.yaml" || c.APIVersion != "llm-d.ai/v1alpha1" {
		t.Fatalf("source %q api %q", c.Source, c.APIVersion)
	}
	r, _ := c.New()
	// approx producer + inflight producer + affinity filter + token-load scorer
	if len(r.prod) != 1 || len(r.pre) != 2 || len(r.order) != 1 || len(r.order[0].filters) != 1 || len(r.order[0].scorers) != 1 {
		t.Fatalf("optimized-baseline assembled wrong: prod %d pre %d filters %d scorers %d", len(r.prod), len(r.pre), len(r.order[0].filters), len(r.order[0].scorers))
	}
	gie, _ := os.ReadFile("testdata/configs/gie-v0.5-plugins-v2.yaml")
	all, err := LoadAll(gie, "gie.yaml")
	if err != nil || len(all) != 2 {
		t.Fatalf("gie: %d configs, %v", len(all), err)
	}
	p, _ := all[0].New()
	ps := p.order[0].scorers[2].s.(*prefixScorer)
	if a := ps.own.(*approxProducer); a.autoTune || a.blockTokens != 16 || a.maxBlocks != 256 || a.lruCap != 31250 {
		t.Fatalf("GIE v0.5 prefix scorer parameters: %+v", a)
	}
	flow, _ := os.ReadFile("testdata/configs/guides/flow-control_router_flow-control.values.yaml")
	fc, err := Load(flow, "flow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fr, _ := fc.New()
	if fr.flow == nil || fr.flow.ttl != 60*time.Second || fr.flow.maxRequests != 1000 || len(fr.flow.bands) != 3 || fr.flow.bands[0].lim.maxRequests != 500 {
		t.Fatalf("flow-control guide: %+v", fr.flow)
	}
	if _, ok := fr.flow.detector.(*concurrencyDetector); !ok {
		t.Fatalf("flow-control guide detector %T", fr.flow.detector)
	}
}

func FuzzLoad(f *testing.F) {
	for _, file := range configFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(flowConfig))
	f.Add([]byte(pdConfig))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfgs, err := LoadAll(data, "fuzz.yaml")
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("error not marked bad input: %v", err)
			}
			return
		}
		for _, c := range cfgs {
			r, err := c.New()
			if err != nil {
				t.Fatal(err)
			}
			r.Start(testEndpoints(3), 1)
			for i := range 5 {
				r.Scrape(time.Duration(i), i%3, Metrics{Waiting: i})
				r.Submit(time.Duration(i), &Request{ID: int64(i), PromptLen: 40, Priority: i - 2})
				for _, a := range r.Ready(time.Duration(i)) {
					if !a.Rejected {
						r.Finished(time.Duration(i), a.Req, a.Endpoint)
					}
				}
			}
		}
	})
}

// A string that reads as itself again (plain text naming the kind) or
// strings nested without end stop with an error instead of recursing.
func TestLoadSelfEmbeddingString(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"pluginsCustomConfig:\n 0: |\n        kind:0EndpointPickerConfig", "holds no EndpointPickerConfig"},
		{"x: 'kind:x EndpointPickerConfig'", "holds no EndpointPickerConfig"},
	} {
		_, err := LoadAll([]byte(tc.yaml), "self.yaml")
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error saying %q", tc.yaml, err, tc.want)
		}
	}
	// Each level a block scalar holding the next, deeper than anyone nests.
	cfg := "kind: EndpointPickerConfig\n"
	for range maxStringDepth + 1 {
		cfg = "kind: x\nv: |\n" + indent(cfg)
	}
	if _, err := LoadAll([]byte(cfg), "deep.yaml"); !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "nest more than") {
		t.Errorf("deep nesting: %v", err)
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}

// A declared plugin named like a producer the builder adds keeps its name
// and hooks; the added producer takes the next free name and runs once.
func TestImplicitProducerNameClash(t *testing.T) {
	c, err := Load([]byte(`kind: EndpointPickerConfig
plugins:
- type: session-affinity-scorer
  name: inflight-load-producer
- type: active-request-scorer
- type: max-score-picker
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: inflight-load-producer
  - pluginRef: active-request-scorer
  - pluginRef: max-score-picker
`), "clash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.New()
	if err != nil {
		t.Fatal(err)
	}
	inflight, session := 0, 0
	for _, p := range e.pre {
		if _, ok := p.(inflightProducer); ok {
			inflight++
		}
	}
	for _, d := range e.done {
		if _, ok := d.(*sessionAffinityScorer); ok {
			session++
		}
	}
	if inflight != 1 || session != 1 {
		t.Fatalf("in-flight producer PreRequest hooks %d, session-affinity completion hooks %d; want 1 and 1", inflight, session)
	}
}
