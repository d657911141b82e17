package catalog

import (
	"io/fs"
	"strings"
	"testing"
)

func TestEmbeddedChipsLoad(t *testing.T) {
	cs := Chips()
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	if got := strings.Join(names, ","); got != "a100,b200,b300,gb200,h100,h200" {
		t.Fatalf("Chips() = %s", got)
	}
	for _, c := range cs {
		t.Run(c.Name, func(t *testing.T) {
			for _, field := range []string{"MemBytes", "VisibleMemBytes", "MemBW", "MemBWEfficiency", "BF16FLOPS", "FP8FLOPS",
				"FP4FLOPS", "SMs", "NVLinkBW", "InterNode", "PCIeBW", "HostLinkBW", "GPUsPerNode", "P2PLatency", "NCCLMemBytes"} {
				if strings.TrimSpace(c.Sources[field]) == "" {
					t.Errorf("no source for %s", field)
				}
			}
			if !(c.VisibleMemBytes > 0.9*c.MemBytes && c.VisibleMemBytes <= c.MemBytes) {
				t.Errorf("visible memory %g against %g", c.VisibleMemBytes, c.MemBytes)
			}
			if c.FP8FLOPS != 0 && c.FP8FLOPS < c.BF16FLOPS {
				t.Errorf("FP8 %g below BF16 %g", c.FP8FLOPS, c.BF16FLOPS)
			}
			if c.GPUsPerNode < 1 || c.MemBWEfficiency <= 0 || c.MemBWEfficiency > 1 {
				t.Errorf("%+v", c)
			}
		})
	}
}

func TestChipNumbers(t *testing.T) {
	tests := []struct {
		name                          string
		mem, bw, bf16, fp8, fp4, link float64
		sms                           int
	}{
		{"h100", 80 << 30, 3.35e12, 989e12, 1978e12, 0, 450e9, 132},
		{"h200", 141 << 30, 4.8e12, 989e12, 1978e12, 0, 450e9, 132},
		{"a100", 80 << 30, 2.039e12, 312e12, 0, 0, 300e9, 108},
		{"b200", 180 << 30, 7.7e12, 2.25e15, 4.5e15, 9e15, 900e9, 148},
	}
	for _, tt := range tests {
		c, err := LookupChip(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if c.MemBytes != tt.mem || c.MemBW != tt.bw || c.BF16FLOPS != tt.bf16 || c.FP8FLOPS != tt.fp8 ||
			c.FP4FLOPS != tt.fp4 || c.NVLinkBW != tt.link || c.SMs != tt.sms {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
	h, _ := LookupChip("h100")
	if gib := h.VisibleMemBytes / (1 << 30); gib < 79.18 || gib > 79.2 {
		t.Errorf("H100 visible memory %.3f GiB, want vLLM's 79.19", gib)
	}
}

func TestLookupChip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"h100", "h100"}, {"H100", "h100"}, {"h100_sxm", "h100"}, {"h100-sxm", "h100"}, {" H100-SXM5 ", "h100"},
		{"h200", "h200"}, {"H200_SXM", "h200"}, {"a100", "a100"}, {"a100-80gb", "a100"}, {"b200", "b200"},
		{"B300", "b300"}, {"gb200", "gb200"}, {"GB200-NVL72", "gb200"},
	}
	for _, tt := range tests {
		c, err := LookupChip(tt.in)
		if err != nil {
			t.Errorf("LookupChip(%q): %v", tt.in, err)
			continue
		}
		if c.Name != tt.want {
			t.Errorf("LookupChip(%q) = %s, want %s", tt.in, c.Name, tt.want)
		}
	}
	for _, bad := range []string{"h300", "", "--", "mi300x"} {
		_, err := LookupChip(bad)
		if err == nil || !strings.Contains(err.Error(), "known chips: a100, b200, b300, gb200, h100, h200") {
			t.Errorf("LookupChip(%q) = %v, want an error listing the known chips", bad, err)
		}
	}
}

func TestNCCLBytes(t *testing.T) {
	c, _ := LookupChip("h100")
	for _, tt := range []struct {
		tp   int
		want float64
	}{{1, 0}, {2, 358612992}, {3, 358612992}, {4, 411041792}, {8, 411041792}, {16, 411041792}} {
		if got := c.NCCLBytes(tt.tp); got != tt.want {
			t.Errorf("NCCLBytes(%d) = %g, want %g", tt.tp, got, tt.want)
		}
	}
}

func chipYAML(t *testing.T) string {
	data, err := fs.ReadFile(chipFS, "chips/h100.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestParseChipStrict(t *testing.T) {
	good := chipYAML(t)
	tests := []struct {
		name, data string
		want       []string
	}{
		{"unknown key", good + "\ncolor: green\n", []string{"c.yaml", "color"}},
		{"missing value", strings.Replace(good, "  value: 3.35e12\n", "", 1), []string{`"hbm_bandwidth"`, "missing value"}},
		{"missing source", strings.Replace(good, `source: "aic h100_sxm.yaml gpu.mem_bw; NVIDIA H100 SXM datasheet: 3.35 TB/s"`, `source: ""`, 1),
			[]string{`"hbm_bandwidth"`, "missing source"}},
		{"negative", strings.Replace(good, "value: 3.35e12", "value: -3.35e12", 1), []string{`"hbm_bandwidth"`, "outside"}},
		{"efficiency over 1", strings.Replace(good, "value: 0.8", "value: 1.5", 1), []string{`"mem_bw_efficiency"`}},
		{"fractional sms", strings.Replace(good, "value: 132", "value: 132.5", 1), []string{`"sms"`, "not an integer"}},
		{"string number", strings.Replace(good, "value: 3.35e12", `value: "fast"`, 1), []string{"c.yaml"}},
		{"two documents", good + "\n---\nname: x\n", []string{"more than one YAML document"}},
		{"empty", "", []string{"empty file"}},
		{"upper-case name", strings.Replace(good, "name: h100", "name: H100", 1), []string{`"name"`}},
		{"no nccl", good[:strings.Index(good, "nccl_memory_bytes:")], []string{"nccl_memory_bytes"}},
		{"borrows from itself", good + "coefficients_from: {value: h100, source: x}\n", []string{`"coefficients_from.value"`, "another chip"}},
		{"borrow without source", good + "coefficients_from: {value: h200}\n", []string{`"coefficients_from.source"`, "missing"}},
		{"host link without source", good + "host_link_bandwidth: {value: 1e11}\n", []string{`"host_link_bandwidth"`, "missing source"}},
		{"host link without value", good + "host_link_bandwidth: {source: x}\n", []string{`"host_link_bandwidth"`, "missing value"}},
		{"host link zero", good + "host_link_bandwidth: {value: 0, source: x}\n", []string{`"host_link_bandwidth"`, "outside"}},
	}
	if _, err := ParseChip("c.yaml", []byte(good)); err != nil {
		t.Fatalf("the embedded h100.yaml does not parse: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseChip("c.yaml", []byte(tt.data))
			if err == nil {
				t.Fatalf("no error; got %+v", c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzParseChip(f *testing.F) {
	entries, _ := fs.ReadDir(chipFS, "chips")
	for _, e := range entries {
		data, _ := fs.ReadFile(chipFS, "chips/"+e.Name())
		f.Add(data)
	}
	f.Add([]byte("name: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseChip("fuzz.yaml", data)
		if err != nil {
			return
		}
		if !(c.MemBytes > 0 && c.VisibleMemBytes > 0 && c.VisibleMemBytes <= c.MemBytes && c.MemBW > 0 && c.BF16FLOPS > 0 && c.GPUsPerNode >= 1 &&
			c.HostLinkBW > 0 && c.Sources["HostLinkBW"] != "") {
			t.Fatalf("accepted %+v", c)
		}
	})
}

// TestChipHostLink: the host link defaults to PCIe; GB200 reaches its Grace
// CPU over NVLink-C2C, its 450 GB/s each way shared by two GPUs.
func TestChipHostLink(t *testing.T) {
	for _, tt := range []struct {
		chip string
		want float64
	}{
		{"h100", 64e9}, {"h200", 64e9}, {"a100", 32e9}, {"b200", 128e9}, {"gb200", 225e9},
	} {
		c, err := LookupChip(tt.chip)
		if err != nil {
			t.Fatal(err)
		}
		if c.HostLinkBW != tt.want {
			t.Errorf("%s: host link %g B/s, want %g", tt.chip, c.HostLinkBW, tt.want)
		}
		if tt.chip != "gb200" && (c.HostLinkBW != c.PCIeBW || !strings.Contains(c.Sources["HostLinkBW"], "pcie_bandwidth")) {
			t.Errorf("%s: host link %g (%s), want pcie_bandwidth %g", tt.chip, c.HostLinkBW, c.Sources["HostLinkBW"], c.PCIeBW)
		}
	}
	c, err := ParseChip("c.yaml", []byte(chipYAML(t)+"host_link_bandwidth: {value: 1.5e11, source: x}\n"))
	if err != nil || c.HostLinkBW != 1.5e11 || c.PCIeBW != 64e9 || c.Sources["HostLinkBW"] != "x" {
		t.Errorf("explicit host link: %v, %+v", err, c)
	}
}
