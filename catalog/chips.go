package catalog

import (
	"embed"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strings"
	"sync"
)

// One YAML file per chip; every number carries its source.
//
//go:embed chips/*.yaml
var chipFS embed.FS

// sourced is one number with where it comes from.
type sourced struct {
	Value  *float64 `yaml:"value"`
	Source string   `yaml:"source"`
}

type ncclTable struct {
	Source string          `yaml:"source"`
	ByTP   map[int]float64 `yaml:"by_tp"`
}

// chipFile is the on-disk form of a Chip.
type chipFile struct {
	Name               string    `yaml:"name"`
	Aliases            []string  `yaml:"aliases"`
	Vendor             string    `yaml:"vendor"`
	Description        string    `yaml:"description"`
	MemoryBytes        sourced   `yaml:"memory_bytes"`
	VisibleMemoryBytes sourced   `yaml:"visible_memory_bytes"`
	HBMBandwidth       sourced   `yaml:"hbm_bandwidth"`
	MemBWEfficiency    sourced   `yaml:"mem_bw_efficiency"`
	BF16FLOPS          sourced   `yaml:"bf16_flops"`
	FP8FLOPS           sourced   `yaml:"fp8_flops"`
	FP4FLOPS           sourced   `yaml:"fp4_flops"`
	SMs                sourced   `yaml:"sms"`
	NVLinkBandwidth    sourced   `yaml:"nvlink_bandwidth"`
	InterNodeBandwidth sourced   `yaml:"inter_node_bandwidth"`
	PCIeBandwidth      sourced   `yaml:"pcie_bandwidth"`
	HostLinkBandwidth  *sourced  `yaml:"host_link_bandwidth"` // optional: pcie_bandwidth when absent
	GPUsPerNode        sourced   `yaml:"gpus_per_node"`
	P2PLatency         sourced   `yaml:"p2p_latency_s"`
	NCCLMemory         ncclTable `yaml:"nccl_memory_bytes"`
	CoefficientsFrom   *named    `yaml:"coefficients_from"`
}

// named is a chip name with the reason it stands in.
type named struct {
	Value  string `yaml:"value"`
	Source string `yaml:"source"`
}

// ParseChip decodes one chip YAML file strictly: unknown keys, missing
// values or sources, and impossible numbers are errors naming the file and
// the key.
func ParseChip(name string, data []byte) (*Chip, error) {
	var f chipFile
	if err := decodeStrictYAML(name, data, &f); err != nil {
		return nil, err
	}
	if strings.TrimSpace(f.Name) == "" || f.Name != strings.ToLower(f.Name) {
		return nil, fmt.Errorf("%s: key \"name\": want a non-empty lower-case name, got %q", name, f.Name)
	}
	c := &Chip{
		Name: f.Name, Vendor: f.Vendor, Description: f.Description,
		Sources: map[string]string{},
	}
	for _, a := range f.Aliases {
		if a = strings.ToLower(strings.TrimSpace(a)); a != "" {
			c.Aliases = append(c.Aliases, a)
		}
	}
	type field struct {
		key      string
		goName   string
		v        sourced
		dst      *float64
		min, max float64 // allowed range, inclusive
		integer  bool
	}
	var sms, gpus float64
	fields := []field{
		{"memory_bytes", "MemBytes", f.MemoryBytes, &c.MemBytes, 1, math.Inf(1), false},
		{"visible_memory_bytes", "VisibleMemBytes", f.VisibleMemoryBytes, &c.VisibleMemBytes, 1, math.Inf(1), false},
		{"hbm_bandwidth", "MemBW", f.HBMBandwidth, &c.MemBW, 1, math.Inf(1), false},
		{"mem_bw_efficiency", "MemBWEfficiency", f.MemBWEfficiency, &c.MemBWEfficiency, 1e-9, 1, false},
		{"bf16_flops", "BF16FLOPS", f.BF16FLOPS, &c.BF16FLOPS, 1, math.Inf(1), false},
		{"fp8_flops", "FP8FLOPS", f.FP8FLOPS, &c.FP8FLOPS, 0, math.Inf(1), false},
		{"fp4_flops", "FP4FLOPS", f.FP4FLOPS, &c.FP4FLOPS, 0, math.Inf(1), false},
		{"sms", "SMs", f.SMs, &sms, 0, 1e6, true},
		{"nvlink_bandwidth", "NVLinkBW", f.NVLinkBandwidth, &c.NVLinkBW, 1, math.Inf(1), false},
		{"inter_node_bandwidth", "InterNode", f.InterNodeBandwidth, &c.InterNode, 1, math.Inf(1), false},
		{"pcie_bandwidth", "PCIeBW", f.PCIeBandwidth, &c.PCIeBW, 1, math.Inf(1), false},
		{"gpus_per_node", "GPUsPerNode", f.GPUsPerNode, &gpus, 1, 1e6, true},
		{"p2p_latency_s", "P2PLatency", f.P2PLatency, &c.P2PLatency, 0, 1, false},
	}
	for _, fl := range fields {
		v, err := checkSourced(name, fl.key, fl.v, fl.min, fl.max)
		if err != nil {
			return nil, err
		}
		if fl.integer && v != math.Trunc(v) {
			return nil, fmt.Errorf("%s: key %q: %g is not an integer", name, fl.key, v)
		}
		*fl.dst = v
		c.Sources[fl.goName] = fl.v.Source
	}
	c.SMs, c.GPUsPerNode = int(sms), int(gpus)
	// The host link is PCIe unless the file says otherwise.
	c.HostLinkBW, c.Sources["HostLinkBW"] = c.PCIeBW, "pcie_bandwidth (no host_link_bandwidth): "+c.Sources["PCIeBW"]
	if h := f.HostLinkBandwidth; h != nil {
		v, err := checkSourced(name, "host_link_bandwidth", *h, 1, math.Inf(1))
		if err != nil {
			return nil, err
		}
		c.HostLinkBW, c.Sources["HostLinkBW"] = v, h.Source
	}
	if c.VisibleMemBytes > c.MemBytes {
		return nil, fmt.Errorf("%s: key \"visible_memory_bytes\": %g exceeds memory_bytes %g", name, c.VisibleMemBytes, c.MemBytes)
	}
	if strings.TrimSpace(f.NCCLMemory.Source) == "" {
		return nil, fmt.Errorf("%s: key \"nccl_memory_bytes.source\": missing", name)
	}
	if len(f.NCCLMemory.ByTP) == 0 {
		return nil, fmt.Errorf("%s: key \"nccl_memory_bytes.by_tp\": missing or empty", name)
	}
	c.NCCLMemBytes = map[int]float64{}
	for tp, v := range f.NCCLMemory.ByTP {
		if tp < 1 || math.IsNaN(v) || v < 0 || v > c.MemBytes {
			return nil, fmt.Errorf("%s: key \"nccl_memory_bytes.by_tp\": entry %d: %g is not a size for TP ≥ 1", name, tp, v)
		}
		c.NCCLMemBytes[tp] = v
	}
	c.Sources["NCCLMemBytes"] = f.NCCLMemory.Source
	if cf := f.CoefficientsFrom; cf != nil {
		v := strings.ToLower(strings.TrimSpace(cf.Value))
		if v == "" || v == c.Name {
			return nil, fmt.Errorf("%s: key \"coefficients_from.value\": want another chip's name, got %q", name, cf.Value)
		}
		if strings.TrimSpace(cf.Source) == "" {
			return nil, fmt.Errorf("%s: key \"coefficients_from.source\": missing (say why that chip's laws apply)", name)
		}
		c.CoefficientsFrom = v
		c.Sources["CoefficientsFrom"] = cf.Source
	}
	return c, nil
}

type chipRegistry struct {
	byName []*Chip
	index  map[string]*Chip // normalised name or alias → chip
	err    error
}

var (
	chipOnce sync.Once
	chipReg  chipRegistry
)

func chips() *chipRegistry {
	chipOnce.Do(func() { chipReg = loadChips(chipFS) })
	return &chipReg
}

// chipKey folds case and drops everything but letters and digits, so
// "H100", "h100_sxm" and "h100-sxm" meet.
func chipKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func loadChips(fsys fs.FS) chipRegistry {
	r := chipRegistry{index: map[string]*Chip{}}
	chips, err := loadNamedYAML(fsys, "chips/*.yaml", "name", ParseChip, func(c *Chip) string { return c.Name })
	if err != nil {
		return chipRegistry{err: err}
	}
	for _, c := range chips {
		file := "chips/" + c.Name + ".yaml"
		for _, a := range append([]string{c.Name}, c.Aliases...) {
			k := chipKey(a)
			if other, dup := r.index[k]; dup && other != c {
				return chipRegistry{err: fmt.Errorf("catalog/%s: alias %q is also %s's", file, a, other.Name)}
			}
			r.index[k] = c
		}
		r.byName = append(r.byName, c)
	}
	sort.Slice(r.byName, func(i, j int) bool { return r.byName[i].Name < r.byName[j].Name })
	return r
}

func (c *Chip) clone() *Chip {
	d := *c
	d.Aliases = append([]string(nil), c.Aliases...)
	d.Sources = make(map[string]string, len(c.Sources))
	for k, v := range c.Sources {
		d.Sources[k] = v
	}
	d.NCCLMemBytes = make(map[int]float64, len(c.NCCLMemBytes))
	for k, v := range c.NCCLMemBytes {
		d.NCCLMemBytes[k] = v
	}
	return &d
}

// Chips returns every embedded chip, sorted by name (fresh copies).
func Chips() []*Chip {
	r := chips()
	out := make([]*Chip, 0, len(r.byName))
	for _, c := range r.byName {
		out = append(out, c.clone())
	}
	return out
}

// LookupChip finds a chip by name or alias, ignoring case and punctuation
// ("h100", "H100", "h100_sxm", "h100-sxm"). An unknown name is an error that
// lists the known chips. The result is a fresh copy.
func LookupChip(name string) (*Chip, error) {
	r := chips()
	if r.err != nil {
		return nil, r.err
	}
	if c, ok := r.index[chipKey(name)]; ok && chipKey(name) != "" {
		return c.clone(), nil
	}
	names := make([]string, len(r.byName))
	for i, c := range r.byName {
		names[i] = c.Name
	}
	return nil, fmt.Errorf("unknown chip %q; known chips: %s", name, strings.Join(names, ", "))
}
