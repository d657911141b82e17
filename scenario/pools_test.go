package scenario

import (
	"strings"
	"testing"
)

func TestPoolsFromYAML(t *testing.T) {
	s := Defaults()
	yml := `model: llama-3.1-70b
max-model-len: 16384
pools:
  - name: tp4
    replicas: 2
    tensor-parallel-size: 4
  - name: tp2
    replicas: 3
    tensor_parallel_size: 2
    max-num-seqs: 128
    labels: {zone: a}
`
	if err := s.ApplyYAML("c.yaml", []byte(yml), nil); err != nil {
		t.Fatal(err)
	}
	if len(s.Pools) != 2 || s.Pools[0].Name != "tp4" || s.Pools[0].Replicas != 2 || s.Pools[1].Replicas != 3 ||
		s.Pools[1].Labels["zone"] != "a" || len(s.Pools[1].Serve) != 2 {
		t.Fatalf("pools = %+v", s.Pools)
	}
	s.Hardware = "h100"
	r, err := s.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if r.Endpoints() != 5 || len(r.Pools) != 2 {
		t.Fatalf("endpoints %d pools %d", r.Endpoints(), len(r.Pools))
	}
	if tp := r.Pools[0].Deployment.TP; tp != 4 {
		t.Errorf("pool tp4 TP = %d", tp)
	}
	if tp, mns := r.Pools[1].Deployment.TP, r.Pools[1].Engine.MaxNumSeqs; tp != 2 || mns != 128 {
		t.Errorf("pool tp2 TP = %d, max-num-seqs %d", tp, mns)
	}
	if r.Pools[0].Engine.NumGPUBlocks <= r.Pools[1].Engine.NumGPUBlocks {
		t.Errorf("TP4 pool should hold more KV blocks than TP2: %d vs %d", r.Pools[0].Engine.NumGPUBlocks, r.Pools[1].Engine.NumGPUBlocks)
	}
	if got := r.RouterName(); got != "k8s-service" {
		t.Errorf("router = %q, want the Service default", got)
	}
	// The flag form reads the same list.
	var f Scenario
	orig := poolsValue{&s.Pools}.String()
	if err := (poolsValue{&f.Pools}).Set(orig); err != nil {
		t.Fatal(err)
	}
	if got := (poolsValue{&f.Pools}).String(); got != orig {
		t.Errorf("round trip: %s vs %s", got, orig)
	}
}

func TestPoolsBadInput(t *testing.T) {
	for _, tc := range []struct{ yml, want string }{
		{"pools: 3", "list of pools"},
		{"pools: [3]", "pool 1 (line 1): a pool is a mapping"},
		{"pools: [{name: A}]", "lower-case"},
		{"pools: [{replicas: 0}]", "replicas \"0\": an integer from 1"},
		{"pools: [{role: worker}]", "one of both, decode, prefill"},
		{"pools: [{tensor-parallel-sise: 2}]", "did you mean tensor-parallel-size"},
		{"pools: [{max-num-seqs: x}]", "max-num-seqs: \"x\" is not an integer"},
		{"pools: [{model: x}]", "every pool serves the scenario's model"},
		{"pools: [{name: a}, {name: a}]", "already used by pool 1"},
		{"pools: [{name: a, name: b}]", "given twice"},
	} {
		s := Defaults()
		err := s.ApplyYAML("c.yaml", []byte(tc.yml), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.yml, err, tc.want)
		}
	}
	for _, tc := range []struct {
		mod  func(*Scenario)
		want string
	}{
		{func(s *Scenario) { s.Replicas = 0 }, "--replicas \"0\": an integer from 1"},
		{func(s *Scenario) { s.Replicas = 2; s.Pools = []PoolSpec{{Name: "a", Replicas: 1, Role: "both"}} }, "either --replicas or --pools"},
		{func(s *Scenario) { s.Pools = []PoolSpec{{Name: "p", Replicas: 1, Role: "prefill"}} }, "no pool serves decode"},
		{func(s *Scenario) {
			s.Pools = []PoolSpec{{Name: "d", Replicas: 1, Role: "decode"}, {Name: "p", Replicas: 1, Role: "prefill"}}
			s.KVTransferConfig = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1e11}}`
		}, "pools.p.kv-transfer-config"},
		{func(s *Scenario) {
			s.Pools = []PoolSpec{{Name: "big", Replicas: 1, Role: "both", Serve: []KV{{Key: "tensor-parallel-size", Value: "0"}}}}
		}, "pools.big.tensor-parallel-size"},
		{func(s *Scenario) { s.Router = "nginx" }, "--router \"nginx\": one of"},
		{func(s *Scenario) { s.Router = "random"; s.RouterConfig = "x.yaml" }, "either --router or --router-config"},
		{func(s *Scenario) { s.RouterConfig = "/nonexistent/epp.yaml" }, "--router-config \"/nonexistent/epp.yaml\": cannot read it"},
	} {
		s := Defaults()
		tc.mod(&s)
		_, err := s.Resolve()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !IsInputError(err) {
			t.Errorf("err %v, want input error %q", err, tc.want)
		}
	}
}

func FuzzPools(f *testing.F) {
	for _, s := range []string{"[{name: a, replicas: 2, tensor-parallel-size: 4}]", "[{labels: {a: b}}]", "{}", "[[1]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p []PoolSpec
		if err := (poolsValue{&p}).Set(s); err != nil {
			return
		}
		for _, ps := range p {
			if ps.Replicas < 1 || ps.Name == "" {
				t.Fatalf("accepted pool %+v", ps)
			}
		}
	})
}
