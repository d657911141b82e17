package catalog

import (
	"embed"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// One YAML file per fabric (a kind of cluster: its nodes' NVLink domain,
// host link and NICs); every number carries its source.
//
//go:embed fabrics/*.yaml
var fabricFS embed.FS

// Link is one kind of connection between GPUs (or a GPU and its host):
// its bandwidth in one direction and the latency of one transfer (setup
// and wire).
type Link struct {
	Kind string // nvlink, pcie, nvlink-c2c, infiniband, roce, tcp
	// Bandwidth is bytes per second in one direction: per GPU for NVLink
	// and PCIe, per NIC for the network link (a NIC serves GPUsPerNIC
	// GPUs; 1 on rail-optimised GPU clusters, so per GPU there too).
	Bandwidth float64
	Latency   time.Duration // per transfer
}

// Fabric is the network a deployment's GPUs sit on: how many GPUs share an
// NVLink domain (a node), the link inside it, the PCIe link to the host,
// and the NICs that join nodes. Every number has its source in the
// fabric's file under catalog/fabrics/ (Sources, by Go field path).
type Fabric struct {
	Name        string
	Description string
	// Chip is the catalog chip the fabric's nodes hold ("h100").
	Chip        string
	GPUsPerNode int
	// GPUsPerNIC is how many GPUs of a node share one network NIC (GPU g
	// uses NIC g/GPUsPerNIC); 0 is read as 1.
	GPUsPerNIC int
	NVLink     Link // between GPUs of one node
	PCIe       Link // GPU ↔ host, and between GPUs of one node without NVLink
	Network    Link // between nodes, through the GPUs' NICs
	// Source says where the fabric comes from (its catalog file, or the
	// chip it is derived from); Sources maps each number's Go field path
	// ("Network.Bandwidth") to its own source.
	Source  string
	Sources map[string]string
}

// NICGPUs is GPUsPerNIC with its zero value read as 1.
func (f *Fabric) NICGPUs() int {
	if f.GPUsPerNIC < 1 {
		return 1
	}
	return f.GPUsPerNIC
}

// linkFile is the on-disk form of a Link.
type linkFile struct {
	Kind      string  `yaml:"kind"`
	Bandwidth sourced `yaml:"bandwidth"`
	Latency   sourced `yaml:"latency_s"`
}

// fabricFile is the on-disk form of a Fabric.
type fabricFile struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Chip        string   `yaml:"chip"`
	GPUsPerNode sourced  `yaml:"gpus_per_node"`
	GPUsPerNIC  sourced  `yaml:"gpus_per_nic"`
	NVLink      linkFile `yaml:"nvlink"`
	PCIe        linkFile `yaml:"pcie"`
	Network     linkFile `yaml:"network"`
}

// linkKinds lists the kinds each link of a fabric file may be.
var linkKinds = map[string][]string{
	"nvlink":  {"nvlink"},
	"pcie":    {"pcie", "nvlink-c2c"},
	"network": {"infiniband", "roce", "tcp", "nvlink"},
}

// ParseFabric decodes one fabric YAML file strictly: unknown keys, missing
// values or sources, unknown link kinds and impossible numbers are errors
// naming the file, the line and the key.
func ParseFabric(name string, data []byte) (*Fabric, error) {
	var f fabricFile
	if err := decodeStrictYAML(name, data, &f); err != nil {
		return nil, err
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root) // decoded above, so it parses
	at := func(path ...string) string { return name + lineSuffix(&root, path) }
	if strings.TrimSpace(f.Name) == "" || f.Name != strings.ToLower(f.Name) {
		return nil, fmt.Errorf("%s: key \"name\": want a non-empty lower-case name, got %q", at("name"), f.Name)
	}
	if strings.TrimSpace(f.Chip) == "" || f.Chip != strings.ToLower(f.Chip) {
		return nil, fmt.Errorf("%s: key \"chip\": want the lower-case name of a catalog chip, got %q", at("chip"), f.Chip)
	}
	fb := &Fabric{Name: f.Name, Description: f.Description, Chip: f.Chip, Sources: map[string]string{}}
	num := func(key, goName string, v sourced, lo, hi float64, integer bool) (float64, error) {
		x, err := checkSourced(at(strings.Split(key, ".")...), key, v, lo, hi)
		if err != nil {
			return 0, err
		}
		if integer && x != math.Trunc(x) {
			return 0, fmt.Errorf("%s: key %q: %g is not an integer", at(strings.Split(key, ".")...), key, x)
		}
		fb.Sources[goName] = v.Source
		return x, nil
	}
	gpus, err := num("gpus_per_node", "GPUsPerNode", f.GPUsPerNode, 1, 1e6, true)
	if err != nil {
		return nil, err
	}
	nic, err := num("gpus_per_nic", "GPUsPerNIC", f.GPUsPerNIC, 1, gpus, true)
	if err != nil {
		return nil, err
	}
	fb.GPUsPerNode, fb.GPUsPerNIC = int(gpus), int(nic)
	links := []struct {
		key, goName string
		in          linkFile
		dst         *Link
	}{
		{"nvlink", "NVLink", f.NVLink, &fb.NVLink},
		{"pcie", "PCIe", f.PCIe, &fb.PCIe},
		{"network", "Network", f.Network, &fb.Network},
	}
	for _, l := range links {
		kinds := linkKinds[l.key]
		kind := l.in.Kind
		ok := false
		for _, k := range kinds {
			ok = ok || kind == k
		}
		if !ok {
			return nil, fmt.Errorf("%s: key %q: kind %q, want one of %s", at(l.key, "kind"), l.key+".kind", kind, strings.Join(kinds, ", "))
		}
		bw, err := num(l.key+".bandwidth", l.goName+".Bandwidth", l.in.Bandwidth, 1, 1e15, false)
		if err != nil {
			return nil, err
		}
		lat, err := num(l.key+".latency_s", l.goName+".Latency", l.in.Latency, 0, 1, false)
		if err != nil {
			return nil, err
		}
		*l.dst = Link{Kind: kind, Bandwidth: bw, Latency: time.Duration(math.Round(lat * float64(time.Second)))}
	}
	return fb, nil
}

// lineSuffix is ":N" for the line of the value at path in a decoded
// document (the deepest key found), or "" when none is.
func lineSuffix(doc *yaml.Node, path []string) string {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := 0
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			break
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	if line == 0 {
		return ""
	}
	return ":" + strconv.Itoa(line)
}

type fabricRegistry struct {
	byName []*Fabric
	index  map[string]*Fabric // chipKey(name) → fabric
	err    error
}

var (
	fabricOnce sync.Once
	fabricReg  fabricRegistry
)

func fabrics() *fabricRegistry {
	fabricOnce.Do(func() {
		list, err := loadNamedYAML(fabricFS, "fabrics/*.yaml", "name", ParseFabric, func(f *Fabric) string { return f.Name })
		if err != nil {
			fabricReg = fabricRegistry{err: err}
			return
		}
		r := fabricRegistry{index: map[string]*Fabric{}}
		for _, f := range list {
			f.Source = "catalog/fabrics/" + f.Name + ".yaml"
			if other, dup := r.index[chipKey(f.Name)]; dup {
				fabricReg = fabricRegistry{err: fmt.Errorf("catalog/fabrics/%s.yaml: name %q folds onto %s's", f.Name, f.Name, other.Name)}
				return
			}
			r.index[chipKey(f.Name)] = f
			r.byName = append(r.byName, f)
		}
		sort.Slice(r.byName, func(i, j int) bool { return r.byName[i].Name < r.byName[j].Name })
		fabricReg = r
	})
	return &fabricReg
}

func (f *Fabric) clone() *Fabric {
	d := *f
	d.Sources = make(map[string]string, len(f.Sources))
	for k, v := range f.Sources {
		d.Sources[k] = v
	}
	return &d
}

// LookupFabric returns the named fabric of the catalog, ignoring case and
// punctuation ("H100-NVLink-IB", "h100_nvlink_ib"). An unknown name is an
// error that lists the known fabrics. The result is a fresh copy.
func LookupFabric(name string) (*Fabric, error) {
	r := fabrics()
	if r.err != nil {
		return nil, r.err
	}
	if f, ok := r.index[chipKey(name)]; ok && chipKey(name) != "" {
		return f.clone(), nil
	}
	names := make([]string, len(r.byName))
	for i, f := range r.byName {
		names[i] = f.Name
	}
	return nil, fmt.Errorf("unknown fabric %q; known fabrics: %s", name, strings.Join(names, ", "))
}

// Fabrics lists the catalog's fabrics, sorted by name (fresh copies).
func Fabrics() []*Fabric {
	r := fabrics()
	out := make([]*Fabric, 0, len(r.byName))
	for _, f := range r.byName {
		out = append(out, f.clone())
	}
	return out
}

// DefaultFabric is the fabric a deployment gets when it names none: the
// chip's own node (GPUsPerNode), NVLink, PCIe and inter-node numbers, one
// NIC per GPU, and the chip's P2PLatency as every link's per-transfer
// latency. The network is InfiniBand unless the chip's inter-node
// bandwidth reaches its NVLink's (GB200's NVL72 racks: NVLink between
// trays).
func DefaultFabric(c *Chip) *Fabric {
	lat := time.Duration(math.Round(c.P2PLatency * float64(time.Second)))
	net := "infiniband"
	if c.InterNode >= c.NVLinkBW {
		net = "nvlink"
	}
	src := func(field string) string {
		return "chip " + c.Name + " " + field + ": " + c.Sources[field]
	}
	return &Fabric{
		Name:        c.Name + "-default",
		Description: "derived from chip " + c.Name + "'s node numbers",
		Chip:        c.Name,
		GPUsPerNode: c.GPUsPerNode,
		GPUsPerNIC:  1,
		NVLink:      Link{Kind: "nvlink", Bandwidth: c.NVLinkBW, Latency: lat},
		PCIe:        Link{Kind: "pcie", Bandwidth: c.PCIeBW, Latency: lat},
		Network:     Link{Kind: net, Bandwidth: c.InterNode, Latency: lat},
		Source:      "catalog/chips/" + c.Name + ".yaml",
		Sources: map[string]string{
			"GPUsPerNode":       src("GPUsPerNode"),
			"GPUsPerNIC":        "one NIC per GPU (rail-optimised GPU cluster), assumed when no fabric is named",
			"NVLink.Bandwidth":  src("NVLinkBW"),
			"PCIe.Bandwidth":    src("PCIeBW"),
			"Network.Bandwidth": src("InterNode"),
			"NVLink.Latency":    src("P2PLatency"),
			"PCIe.Latency":      src("P2PLatency"),
			"Network.Latency":   src("P2PLatency"),
		},
	}
}
