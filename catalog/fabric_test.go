package catalog

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

func TestEmbeddedFabricsLoad(t *testing.T) {
	fs := Fabrics()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	want := "a100-nvlink-ib,a100-nvlink-tcp,b200-nvlink-ib,gb200-nvl72,h100-nvlink-ib,h100-nvlink-roce,h100-nvlink-tcp,h100-nvlink-tcp-25g,h200-nvlink-ib"
	if got := strings.Join(names, ","); got != want {
		t.Fatalf("Fabrics() = %s, want %s", got, want)
	}
	for _, f := range fs {
		t.Run(f.Name, func(t *testing.T) {
			if _, err := LookupChip(f.Chip); err != nil {
				t.Errorf("chip: %v", err)
			}
			for _, field := range []string{"GPUsPerNode", "GPUsPerNIC", "NVLink.Bandwidth", "NVLink.Latency",
				"PCIe.Bandwidth", "PCIe.Latency", "Network.Bandwidth", "Network.Latency"} {
				if strings.TrimSpace(f.Sources[field]) == "" {
					t.Errorf("no source for %s", field)
				}
			}
			// Inside a node NVLink is the fastest path and the network the
			// slowest; RDMA's latency is a few µs, TCP's tens.
			if !(f.NVLink.Bandwidth > f.PCIe.Bandwidth && f.NVLink.Bandwidth > f.Network.Bandwidth) {
				t.Errorf("NVLink %g not above PCIe %g and network %g", f.NVLink.Bandwidth, f.PCIe.Bandwidth, f.Network.Bandwidth)
			}
			switch f.Network.Kind {
			case "infiniband", "roce":
				if f.Network.Latency < time.Microsecond || f.Network.Latency > 10*time.Microsecond {
					t.Errorf("RDMA latency %v", f.Network.Latency)
				}
			case "tcp":
				if f.Network.Latency < 10*time.Microsecond || f.Network.Latency > 100*time.Microsecond {
					t.Errorf("TCP latency %v", f.Network.Latency)
				}
			}
			if f.Source != "catalog/fabrics/"+f.Name+".yaml" {
				t.Errorf("Source %q", f.Source)
			}
		})
	}
}

func TestFabricNumbers(t *testing.T) {
	tests := []struct {
		name           string
		gpus, perNIC   int
		nvl, pcie, net float64
		kind           string
		netLat, nvlLat time.Duration
	}{
		{"h100-nvlink-ib", 8, 1, 450e9, 53e9, 48.3e9, "infiniband", 5 * time.Microsecond, 8 * time.Microsecond},
		{"h100-nvlink-roce", 8, 1, 450e9, 53e9, 47.5e9, "roce", 9 * time.Microsecond, 8 * time.Microsecond},
		{"h100-nvlink-tcp", 8, 8, 450e9, 53e9, 11.87e9, "tcp", 21 * time.Microsecond, 8 * time.Microsecond},
		{"h100-nvlink-tcp-25g", 8, 8, 450e9, 53e9, 2.97e9, "tcp", 21 * time.Microsecond, 8 * time.Microsecond},
		{"h200-nvlink-ib", 8, 1, 450e9, 53e9, 48.3e9, "infiniband", 5 * time.Microsecond, 8 * time.Microsecond},
		{"b200-nvlink-ib", 8, 1, 900e9, 53e9, 48.3e9, "infiniband", 5 * time.Microsecond, 8 * time.Microsecond},
		{"gb200-nvl72", 72, 1, 900e9, 225e9, 48.3e9, "infiniband", 5 * time.Microsecond, 8 * time.Microsecond},
		{"a100-nvlink-ib", 8, 1, 300e9, 25e9, 24.15e9, "infiniband", 5 * time.Microsecond, 8 * time.Microsecond},
		{"a100-nvlink-tcp", 8, 8, 300e9, 25e9, 11.87e9, "tcp", 21 * time.Microsecond, 8 * time.Microsecond},
	}
	for _, tt := range tests {
		f, err := LookupFabric(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if f.GPUsPerNode != tt.gpus || f.GPUsPerNIC != tt.perNIC || f.NVLink.Bandwidth != tt.nvl || f.PCIe.Bandwidth != tt.pcie ||
			f.Network.Bandwidth != tt.net || f.Network.Kind != tt.kind || f.Network.Latency != tt.netLat || f.NVLink.Latency != tt.nvlLat {
			t.Errorf("%s: %+v", tt.name, f)
		}
	}
}

func TestLookupFabric(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"h100-nvlink-ib", "h100-nvlink-ib"}, {"H100-NVLink-IB", "h100-nvlink-ib"}, {" h100_nvlink_ib ", "h100-nvlink-ib"},
		{"GB200-NVL72", "gb200-nvl72"}, {"h100-nvlink-tcp-25g", "h100-nvlink-tcp-25g"},
	} {
		f, err := LookupFabric(tt.in)
		if err != nil || f.Name != tt.want {
			t.Errorf("LookupFabric(%q) = %v, %v; want %s", tt.in, f, err, tt.want)
		}
	}
	for _, bad := range []string{"h100", "", "--", "h100-nvlink-ethernet"} {
		_, err := LookupFabric(bad)
		if err == nil || !strings.Contains(err.Error(), "known fabrics: a100-nvlink-ib, a100-nvlink-tcp,") {
			t.Errorf("LookupFabric(%q) = %v, want an error listing the known fabrics", bad, err)
		}
	}
	// Copies: changing one does not change the catalog.
	f, _ := LookupFabric("h100-nvlink-ib")
	f.Network.Bandwidth, f.Sources["GPUsPerNode"] = 1, "x"
	g, _ := LookupFabric("h100-nvlink-ib")
	if g.Network.Bandwidth == 1 || g.Sources["GPUsPerNode"] == "x" {
		t.Error("LookupFabric returned a shared fabric")
	}
}

func TestDefaultFabric(t *testing.T) {
	h, _ := LookupChip("h100")
	f := DefaultFabric(h)
	if f.GPUsPerNode != 8 || f.NICGPUs() != 1 || f.NVLink.Bandwidth != 450e9 || f.Network.Bandwidth != 50e9 ||
		f.PCIe.Bandwidth != 64e9 || f.Network.Kind != "infiniband" || f.Network.Latency != 10*time.Microsecond || f.Chip != "h100" {
		t.Errorf("DefaultFabric(h100) = %+v", f)
	}
	if !strings.Contains(f.Sources["Network.Bandwidth"], "ConnectX-7") {
		t.Errorf("network source %q does not carry the chip's", f.Sources["Network.Bandwidth"])
	}
	gb, _ := LookupChip("gb200")
	if f := DefaultFabric(gb); f.Network.Kind != "nvlink" || f.GPUsPerNode != 4 {
		t.Errorf("DefaultFabric(gb200) = %+v", f)
	}
	if (&Fabric{}).NICGPUs() != 1 {
		t.Error("a zero GPUsPerNIC is not read as 1")
	}
}

func fabricYAML(t testing.TB) string {
	data, err := fs.ReadFile(fabricFS, "fabrics/h100-nvlink-ib.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestParseFabricStrict(t *testing.T) {
	good := fabricYAML(t)
	if _, err := ParseFabric("f.yaml", []byte(good)); err != nil {
		t.Fatalf("the embedded h100-nvlink-ib.yaml does not parse: %v", err)
	}
	tests := []struct {
		name, data string
		want       []string
	}{
		{"unknown key", good + "\ncolor: green\n", []string{"f.yaml", "color"}},
		{"unknown link key", strings.Replace(good, "  kind: infiniband\n", "  kind: infiniband\n  mtu: 4096\n", 1), []string{"f.yaml", "mtu"}},
		{"missing value", strings.Replace(good, "    value: 48.3e9\n", "", 1), []string{"f.yaml:31:", `"network.bandwidth"`, "missing value"}},
		{"source of a link missing", strings.Replace(good, "    value: 5e-6\n    source:", "    value: 5e-6\n    note:", 1), []string{"f.yaml", "note"}},
		{"empty source", strings.Replace(good, "value: 8\n  source: \"NVIDIA DGX H100 / HGX", "value: 8\n  source: \"\" # HGX", 1), []string{"f.yaml:7:", `"gpus_per_node"`, "missing source"}},
		{"negative bandwidth", strings.Replace(good, "value: 48.3e9", "value: -48.3e9", 1), []string{"f.yaml:31:", `"network.bandwidth"`, "outside"}},
		{"zero bandwidth", strings.Replace(good, "value: 450e9", "value: 0", 1), []string{`"nvlink.bandwidth"`, "outside"}},
		{"latency of a minute", strings.Replace(good, "value: 5e-6", "value: 60", 1), []string{`"network.latency_s"`, "outside"}},
		{"fractional gpus", strings.Replace(good, "value: 8\n", "value: 8.5\n", 1), []string{"f.yaml:7:", `"gpus_per_node"`, "not an integer"}},
		{"more gpus per nic than per node", strings.Replace(good, "value: 1\n", "value: 9\n", 1), []string{`"gpus_per_nic"`, "outside"}},
		{"unknown kind", strings.Replace(good, "kind: infiniband", "kind: carrier-pigeon", 1),
			[]string{"f.yaml:30:", `"network.kind"`, "carrier-pigeon", "infiniband, roce, tcp, nvlink"}},
		{"pcie as nvlink", strings.Replace(good, "  kind: nvlink\n", "  kind: pcie\n", 1), []string{`"nvlink.kind"`, `"pcie"`}},
		{"no network", good[:strings.Index(good, "network:")], []string{`"network.kind"`}},
		{"string number", strings.Replace(good, "value: 48.3e9", `value: "fast"`, 1), []string{"f.yaml"}},
		{"upper-case name", strings.Replace(good, "name: h100-nvlink-ib", "name: H100", 1), []string{"f.yaml:4:", `"name"`}},
		{"no chip", strings.Replace(good, "chip: h100\n", "", 1), []string{`"chip"`}},
		{"two documents", good + "\n---\nname: x\n", []string{"more than one YAML document"}},
		{"empty", "", []string{"empty file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseFabric("f.yaml", []byte(tt.data))
			if err == nil {
				t.Fatalf("no error; got %+v", f)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestFabricFileNamesItself(t *testing.T) {
	good := fabricYAML(t)
	fsys := fstest.MapFS{"fabrics/h100-nvlink-ib.yaml": {Data: []byte(strings.Replace(good, "name: h100-nvlink-ib", "name: h100-other", 1))}}
	_, err := loadNamedYAML(fsys, "fabrics/*.yaml", "name", ParseFabric, func(f *Fabric) string { return f.Name })
	if err == nil || !strings.Contains(err.Error(), "catalog/fabrics/h100-nvlink-ib.yaml") {
		t.Errorf("a misnamed file loads: %v", err)
	}
}

func FuzzParseFabric(f *testing.F) {
	entries, _ := fs.ReadDir(fabricFS, "fabrics")
	for _, e := range entries {
		data, _ := fs.ReadFile(fabricFS, "fabrics/"+e.Name())
		f.Add(data)
	}
	f.Add([]byte("name: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fb, err := ParseFabric("fuzz.yaml", data)
		if err != nil {
			return
		}
		if !(fb.GPUsPerNode >= 1 && fb.GPUsPerNIC >= 1 && fb.GPUsPerNIC <= fb.GPUsPerNode && fb.Chip != "" &&
			fb.NVLink.Bandwidth > 0 && fb.PCIe.Bandwidth > 0 && fb.Network.Bandwidth > 0 &&
			fb.NVLink.Latency >= 0 && fb.PCIe.Latency >= 0 && fb.Network.Latency >= 0) {
			t.Fatalf("accepted %+v", fb)
		}
	})
}
