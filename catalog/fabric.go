package catalog

import (
	"errors"
	"time"
)

// Link is one kind of connection between GPUs (or a GPU and its host):
// its bandwidth per GPU in one direction and the latency of one transfer
// (setup and wire).
type Link struct {
	Kind      string        // nvlink, pcie, infiniband, roce, tcp
	Bandwidth float64       // bytes per second per GPU, one direction
	Latency   time.Duration // per transfer
}

// Fabric is the network a deployment's GPUs sit on: how many GPUs share an
// NVLink domain (a node), the link inside it, the PCIe link to the host,
// and each GPU's network link to other nodes. Every number has its source
// in the fabric's file under catalog/fabrics/.
type Fabric struct {
	Name        string
	GPUsPerNode int
	NVLink      Link // between GPUs of one node
	PCIe        Link // GPU ↔ host, and between GPUs of one node without NVLink
	Network     Link // between nodes, through each GPU's NIC
	Source      string
}

// LookupFabric returns the named fabric of the catalog.
// (Placeholder: the fabric catalog arrives with catalog/fabrics/.)
func LookupFabric(name string) (*Fabric, error) {
	return nil, errors.New("catalog: no fabrics yet")
}

// Fabrics lists the catalog's fabrics.
func Fabrics() []*Fabric { return nil }
