package scenario

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"blis/catalog"
	"blis/cluster"
	"blis/kernel"
	"blis/router"
)

// Pool is one resolved model-server pool: its spec and its deployment
// bound to the catalog (the serve fields of a Resolved: Model, Chip,
// Deployment, Memory, Pricer, Engine).
type Pool struct {
	Spec PoolSpec
	*Resolved
}

// Endpoints is how many model servers the router spreads requests over.
func (r *Resolved) Endpoints() int {
	n := 0
	for _, p := range r.Pools {
		n += p.Spec.Replicas
	}
	return n
}

// resolveCluster resolves the pools (one of the top-level deployment when
// the scenario has none) and checks the router settings.
func (r *Resolved) resolveCluster() error {
	s := &r.Scenario
	if err := s.pdPools(); err != nil {
		return err
	}
	if len(s.Pools) == 0 {
		if s.Replicas < 1 || s.Replicas > MaxReplicas {
			return bad("replicas", fmt.Sprint(s.Replicas), fmt.Sprintf("an integer from 1 to %d", MaxReplicas))
		}
		r.Pools = []Pool{{Spec: PoolSpec{Name: "vllm", Replicas: s.Replicas, Role: "both"}, Resolved: r}}
	} else {
		if s.Replicas != 1 {
			return bad("replicas", fmt.Sprint(s.Replicas), "give either --replicas or --pools (each pool has its own replicas)")
		}
		decode := false
		for _, ps := range s.Pools {
			ps2, err := ps.apply(*s)
			if err != nil {
				return err
			}
			pr := &Resolved{Scenario: ps2}
			if err := ps2.checkRanges(); err != nil {
				return poolErr(ps, err)
			}
			if err := ps2.resolveServe(pr); err != nil {
				return poolErr(ps, err)
			}
			r.Notes = append(r.Notes, pr.Notes...)
			r.Pools = append(r.Pools, Pool{Spec: ps, Resolved: pr})
			decode = decode || ps.Role != "prefill"
		}
		p0 := r.Pools[0].Resolved
		r.Model, r.Chip, r.Deployment, r.Memory, r.Pricer, r.Engine = p0.Model, p0.Chip, p0.Deployment, p0.Memory, p0.Pricer, p0.Engine
		if !decode {
			return bad("pools", "", "no pool serves decode: every pool has role prefill")
		}
	}
	if err := r.resolvePD(); err != nil {
		return err
	}
	if r.pdRouter {
		// llm-d's P/D config, built in.
	} else if s.Router != "" && s.RouterConfig != "" {
		return bad("router", s.Router, "give either --router or --router-config, not both")
	}
	if s.Router != "" && !slices.Contains(router.Names(), s.Router) {
		return bad("router", s.Router, "one of "+strings.Join(router.Names(), ", "))
	}
	if s.RouterConfig != "" {
		data, err := os.ReadFile(s.RouterConfig)
		if err != nil {
			return bad("router-config", s.RouterConfig, "cannot read it: "+err.Error())
		}
		if r.routerCfg, err = router.Load(data, s.RouterConfig); err != nil {
			return &InputError{Msg: err.Error()}
		}
	}
	if r.Endpoints() > 1 || s.Router != "" || s.RouterConfig != "" {
		if _, err := r.NewRouter(); err != nil {
			return &InputError{Key: "--router", Value: s.Router, Msg: err.Error()}
		}
	}
	return nil
}

// poolErr names the pool in an error from its deployment.
func poolErr(ps PoolSpec, err error) error {
	var ie *InputError
	if errors.As(err, &ie) {
		c := *ie
		c.Key = "pools." + ps.Name + "." + strings.TrimPrefix(c.Key, "--")
		if ie.Key == "" {
			c.Key = "pools." + ps.Name
		}
		return &c
	}
	return fmt.Errorf("pools.%s: %w", ps.Name, err)
}

// RouterName is the router the run uses, as reports name it; "" for one
// replica with no router asked for (a run that is no cluster).
func (r *Resolved) RouterName() string {
	s := &r.Scenario
	switch {
	case r.pdRouter:
		return PDRouterName
	case s.RouterConfig != "":
		return "llm-d (" + s.RouterConfig + ")"
	case s.Router != "":
		return s.Router
	case r.Endpoints() > 1:
		return "k8s-service"
	}
	return ""
}

// NewRouter builds a fresh router for one run (routers keep state); nil
// when there is one endpoint and no router was asked for.
func (r *Resolved) NewRouter() (router.Router, error) {
	s := &r.Scenario
	switch {
	case r.routerCfg != nil:
		return r.routerCfg.New()
	case s.Router != "":
		return router.Named(s.Router)
	case r.Endpoints() > 1:
		return router.Named("k8s-service")
	}
	return nil, nil
}

// clusterPools is the pools as the cluster loop takes them.
func (r *Resolved) clusterPools() []cluster.Pool {
	out := make([]cluster.Pool, len(r.Pools))
	for i, p := range r.Pools {
		role := router.RoleBoth
		switch p.Spec.Role {
		case "decode":
			role = router.RoleDecode
		case "prefill":
			role = router.RolePrefill
		}
		out[i] = cluster.Pool{
			Name: p.Spec.Name, Replicas: p.Spec.Replicas, Role: role, Labels: p.Spec.Labels,
			Engine: withStorage(p.Engine, p.Spec.Replicas*max(p.Scenario.DataParallelSize, 1)), Pricer: p.Pricer,
			DataParallel: p.Scenario.DataParallelSize, Lockstep: p.Model.IsMoE(),
			GPUs: max(p.Deployment.TP, 1) * max(p.Deployment.PP, 1),
			// Every TP rank of every pipeline stage holds its shard of each
			// block (its layers'); NIXL moves them all.
			KVBlockBytes: kvBlockBytes(p.Memory, p.Deployment, p.Engine.BlockSize),
		}
	}
	return out
}

// resolvePD checks the disaggregation settings once the pools are
// resolved: a prefill pool needs a connector that moves KV (NixlConnector
// when none is given, as llm-d's P/D deployments set), and, with no router
// asked for, gets llm-d's P/D router. It sets the transfers' fabric.
func (r *Resolved) resolvePD() error {
	s := &r.Scenario
	notes := map[string]bool{}
	note := func(n string) {
		if !notes[n] {
			notes[n] = true
			r.Notes = append(r.Notes, n)
		}
	}
	prefill := false
	for _, p := range r.Pools {
		for _, n := range p.connector.notes {
			note(n)
		}
		if p.Spec.Role != "prefill" {
			continue
		}
		prefill = true
		switch {
		case p.Scenario.KVTransferConfig == "":
			note(`INFO prefill pool ` + p.Spec.Name + ` has no --kv-transfer-config: BLIS runs it with '{"kv_connector":"NixlConnector","kv_role":"kv_both"}', as llm-d's P/D deployments do`)
		case !p.connector.pd:
			return &InputError{Key: "pools." + p.Spec.Name + ".kv-transfer-config", Value: p.Scenario.KVTransferConfig,
				Msg: "a prefill pool needs a connector that moves KV to the decode replicas: one of " + strings.Join(pdConnectors, ", ")}
		}
	}
	r.TransferFabric = r.Deployment.Fabric
	if r.TransferFabric == nil {
		r.TransferFabric = catalog.DefaultFabric(r.Chip)
	}
	if prefill && s.Router != "" {
		note("INFO --router " + s.Router + " never disaggregates: a request it sends to a prefill replica is served there whole (llm-d's P/D routers are configs: leave --router out for pd-epp-config, or give --router-config)")
	}
	if prefill && s.Router == "" && s.RouterConfig == "" {
		cfg, err := loadPDRouter()
		if err != nil {
			return err // the embedded config is the program's, not the user's
		}
		r.routerCfg, r.pdRouter = cfg, true
	}
	return nil
}

// kvBlockBytes is one block's KV over the whole replica: every TP rank's
// shard, of every pipeline stage's layers (the memory plan's per-token
// bytes are one stage's with --pipeline-parallel-size).
func kvBlockBytes(m kernel.MemoryPlan, d kernel.Deployment, blockSize int) float64 {
	perToken := m.KVBytesPerToken
	if d.PP > 1 {
		whole := d
		whole.PP, whole.PPStage = 0, 0
		if b, err := kernel.KVBytesPerToken(whole); err == nil {
			perToken = b
		}
	}
	return perToken * float64(blockSize) * float64(max(d.TP, 1))
}
