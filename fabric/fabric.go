// Package fabric simulates data moving between GPUs over a deployment's
// network (catalog.Fabric): KV-cache transfers between a prefill and a
// decode replica, each crossing NVLink inside a node, or the GPUs' NICs
// (RDMA, RoCE, TCP) between nodes, sharing those links with every other
// transfer in flight.
package fabric

import (
	"math"
	"time"

	"blis/catalog"
)

// Place is where one replica's GPUs are: its node and the first of its
// GPUs on that node (a replica wider than a node spans the next ones).
type Place struct {
	Node, GPU, GPUs int
}

// Transfers is every transfer in flight on one fabric. The loop starts a
// transfer, asks when the next one completes, and collects the completed
// ones; each transfer's rate is its fair share of the busiest link on its
// path, recomputed whenever a transfer starts or ends.
type Transfers struct {
	f *catalog.Fabric
}

// New returns an idle fabric.
func New(f *catalog.Fabric) *Transfers { return &Transfers{f: f} }

// Start begins moving bytes from src to dst at now; id names it in Done.
func (t *Transfers) Start(now time.Duration, id int64, src, dst Place, bytes int64) {}

// Next is when the next transfer completes (math.MaxInt64: none in flight).
func (t *Transfers) Next() time.Duration { return math.MaxInt64 }

// Done appends to dst the ids of the transfers complete by now, in
// completion order, and forgets them.
func (t *Transfers) Done(now time.Duration, dst []int64) []int64 { return dst }
