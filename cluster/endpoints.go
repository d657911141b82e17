package cluster

import (
	"errors"
	"fmt"

	"blis/engine"
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
	for _, p := range pools {
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
				cfg: p.Engine, pricer: p.Pricer, first: len(l.engs), n: max(p.DataParallel, 1)}
			for k := 0; k < e.n; k++ {
				eng, err := engine.New(p.Engine)
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
	return nil
}
