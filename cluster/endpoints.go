package cluster

import (
	"errors"
	"fmt"
	"time"

	"blis/engine"
	"blis/fabric"
	"blis/kernel"
	"blis/router"
)

// endpoint is one model server: one replica of a vLLM deployment, all its
// DP ranks behind one address (vLLM's DP balancer inside, dp.go).
type endpoint struct {
	name, pool string
	role       router.Role
	labels     map[string]string
	cfg        engine.Config
	pricer     kernel.Pricer
	engs       []*engine.Engine // its ranks (a slice of loop.engs)
	first, n   int              // global index of its first rank, and how many it has
	ready      bool             // queued in loop.ready
	poolIdx    int              // index of its pool in Result.Pools
	blockBytes float64          // Pool.KVBlockBytes
	batches    []kernel.Batch   // lockstep DP: every rank's batch of the group step (nil: ranks step alone)
}

// buildEndpoints makes the endpoints: one replica of Config.Engine with no
// Pools, else every pool's replicas, pool by pool.
func (l *loop) buildEndpoints() error {
	cfg := &l.cfg
	pools := cfg.Pools
	if len(pools) == 0 {
		if cfg.DataParallel < 0 {
			return fmt.Errorf("cluster: data parallel size %d must be ≥ 1", cfg.DataParallel)
		}
		pools = []Pool{{Name: "vllm", Replicas: 1, Engine: cfg.Engine, Pricer: cfg.Pricer,
			DataParallel: cfg.DataParallel, Lockstep: cfg.Lockstep}}
	}
	names := map[string]bool{}
	for pi, p := range pools {
		switch {
		case p.Name == "" || names[p.Name]:
			return fmt.Errorf("cluster: pool name %q: each pool needs a name of its own", p.Name)
		case p.Role > router.RoleDecode:
			return fmt.Errorf("cluster: pool %q: role %d is not both, prefill or decode", p.Name, p.Role)
		case p.Pricer == nil:
			return fmt.Errorf("cluster: pool %q has no step pricer", p.Name)
		}
		names[p.Name] = true
		if p.Replicas < 1 {
			return fmt.Errorf("cluster: pool %q has %d replicas, must be ≥ 1", p.Name, p.Replicas)
		}
		if p.DataParallel < 0 {
			return fmt.Errorf("cluster: pool %q: data parallel size %d must be ≥ 1", p.Name, p.DataParallel)
		}
		for i := 0; i < p.Replicas; i++ {
			e := endpoint{name: fmt.Sprintf("%s-%d", p.Name, i), pool: p.Name, role: p.Role, labels: p.Labels,
				cfg: p.Engine, pricer: p.Pricer, first: len(l.engs), n: max(p.DataParallel, 1),
				poolIdx: pi, blockBytes: p.KVBlockBytes}
			for k := 0; k < e.n; k++ {
				// Every engine draws speculative acceptance from a
				// stream of its own: its global rank.
				ec := p.Engine
				ec.Spec.Stream = uint64(len(l.engs))
				eng, err := engine.New(ec)
				if err != nil {
					return err
				}
				l.engs = append(l.engs, eng)
				l.home = append(l.home, int32(len(l.eps)))
			}
			if p.DataParallel > 1 && p.Lockstep {
				e.batches = make([]kernel.Batch, p.DataParallel)
			}
			l.eps = append(l.eps, e)
		}
	}
	for i := range l.eps {
		e := &l.eps[i]
		e.engs = l.engs[e.first : e.first+e.n : e.first+e.n]
	}
	if len(l.eps) > 1 && cfg.Router == nil {
		return errors.New("cluster: several endpoints need a router")
	}
	l.res.Replicas = make([]ReplicaResult, len(l.eps))
	for i, e := range l.eps {
		l.res.Replicas[i] = ReplicaResult{Name: e.name, Pool: e.pool, Role: e.role}
	}
	l.res.Pools = make([]PoolResult, len(pools))
	l.xferTimes = make([][]time.Duration, len(pools))
	for i, p := range pools {
		l.res.Pools[i] = PoolResult{Name: p.Name, Role: p.Role, Replicas: p.Replicas}
	}
	per := 8
	if cfg.Fabric != nil && cfg.Fabric.GPUsPerNode > 0 {
		per = cfg.Fabric.GPUsPerNode
	}
	gpus := make([]int, len(pools))
	for i, p := range pools {
		gpus[i] = max(p.GPUs, 1)
	}
	l.places = placement(l.eps, gpus, per)
	return nil
}

// placement packs the endpoints' ranks onto nodes of perNode GPUs, in
// endpoint order (pool by pool, replica by replica), each rank using its
// pool's GPUs (gpus, by pool). An endpoint that fits in a node never
// straddles two: when the current node has too few GPUs left it starts on
// the next. A wider one starts on a fresh node and spans the next ones.
// This is how a Kubernetes scheduler fills equal nodes when the pools'
// pods are created in order with no anti-affinity; it returns each global
// rank's place.
func placement(eps []endpoint, gpus []int, perNode int) []fabric.Place {
	var out []fabric.Place
	next := 0 // next free GPU, counted over all nodes
	for _, e := range eps {
		g := gpus[e.poolIdx]
		width := g * e.n
		if off := next % perNode; off != 0 && (width > perNode || off+width > perNode) {
			next += perNode - off
		}
		for k := 0; k < e.n; k++ {
			out = append(out, fabric.Place{Node: next / perNode, GPU: next % perNode, GPUs: g})
			next += g
		}
	}
	return out
}
