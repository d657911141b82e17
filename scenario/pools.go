package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PoolSpec is one model-server pool of a cluster as a scenario file writes
// it: llm-d's model-service deployments (one per role), each its own
// `vllm serve` with its replicas behind the router. Keys other than name,
// replicas, role and labels are `vllm serve` settings (the "serve" group)
// that override the scenario's own for this pool, e.g.
//
//	pools:
//	  - {name: tp4, replicas: 2, tensor-parallel-size: 4}
//	  - {name: tp2, replicas: 4, tensor-parallel-size: 2, max-num-seqs: 128}
type PoolSpec struct {
	Name     string
	Replicas int
	Role     string            // both (default), decode or prefill: llm-d.ai/role
	Labels   map[string]string // pod labels the router's label filters read
	Serve    []KV              // serve settings, in the order written
}

// PoolRoles are the values of a pool's role (llm-d.ai/role).
func PoolRoles() []string { return []string{"both", "decode", "prefill"} }

// poolKeys are a pool's own keys besides serve settings.
var poolKeys = []string{"name", "replicas", "role", "labels"}

// poolsValue is --pools: a YAML (or JSON) list of pools; in a scenario
// file, a block list.
type poolsValue struct{ p *[]PoolSpec }

func (v poolsValue) Type() string { return "pools" }

func (v poolsValue) String() string {
	if len(*v.p) == 0 {
		return ""
	}
	parts := make([]string, len(*v.p))
	for i, ps := range *v.p {
		f := []string{"name: " + ps.Name, "replicas: " + strconv.Itoa(ps.Replicas)}
		if ps.Role != "" && ps.Role != "both" {
			f = append(f, "role: "+ps.Role)
		}
		if len(ps.Labels) > 0 {
			var l []string
			for _, k := range slices.Sorted(maps.Keys(ps.Labels)) {
				l = append(l, strconv.Quote(k)+": "+strconv.Quote(ps.Labels[k]))
			}
			f = append(f, "labels: {"+strings.Join(l, ", ")+"}")
		}
		for _, kv := range ps.Serve {
			f = append(f, kv.Key+": "+kv.Value)
		}
		parts[i] = "{" + strings.Join(f, ", ") + "}"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (v poolsValue) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*v.p = nil
		return nil
	}
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader([]byte(s))).Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			*v.p = nil
			return nil
		}
		return fmt.Errorf("not a list of pools (e.g. [{name: a, replicas: 2, tensor-parallel-size: 4}]): %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		*v.p = nil
		return nil
	}
	return v.setNode(doc.Content[0])
}

// setNode reads the list from a scenario file's node, so errors carry
// the pool's own line.
func (v poolsValue) setNode(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		return errors.New("pools is a list of pools, each a mapping (name, replicas, role, labels and vllm serve keys)")
	}
	serveNames := poolServeNames()
	out := make([]PoolSpec, 0, len(n.Content))
	names := map[string]int{}
	for i, pn := range n.Content {
		where := fmt.Sprintf("pool %d (line %d)", i+1, pn.Line)
		if pn.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: a pool is a mapping of keys to values", where)
		}
		ps := PoolSpec{Replicas: 1, Role: "both"}
		seen := map[string]bool{}
		for j := 0; j+1 < len(pn.Content); j += 2 {
			k, val := pn.Content[j], pn.Content[j+1]
			key := strings.ReplaceAll(k.Value, "_", "-")
			if seen[key] {
				return fmt.Errorf("%s: %s given twice", where, key)
			}
			seen[key] = true
			if key == "labels" {
				if val.Kind != yaml.MappingNode {
					return fmt.Errorf("%s: labels is a mapping of label to value", where)
				}
				ps.Labels = map[string]string{}
				for m := 0; m+1 < len(val.Content); m += 2 {
					if val.Content[m+1].Kind != yaml.ScalarNode {
						return fmt.Errorf("%s: label %s: a label's value is a plain string", where, val.Content[m].Value)
					}
					ps.Labels[val.Content[m].Value] = val.Content[m+1].Value
				}
				continue
			}
			if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
				return fmt.Errorf("%s: %s must be a plain value", where, key)
			}
			switch key {
			case "name":
				if !nameOK(val.Value) {
					return fmt.Errorf("%s: name %s: lower-case letters, digits and '-', at most 40", where, quote(val.Value))
				}
				ps.Name = val.Value
			case "replicas":
				r, err := strconv.Atoi(strings.TrimSpace(val.Value))
				if err != nil || r < 1 || r > MaxReplicas {
					return fmt.Errorf("%s: replicas %s: an integer from 1 to %d", where, quote(val.Value), MaxReplicas)
				}
				ps.Replicas = r
			case "role":
				if !slices.Contains(PoolRoles(), val.Value) {
					return fmt.Errorf("%s: role %s: one of %s", where, quote(val.Value), strings.Join(PoolRoles(), ", "))
				}
				ps.Role = val.Value
			case "model":
				return fmt.Errorf("%s: model: every pool serves the scenario's model (set model at the top level)", where)
			default:
				if !slices.Contains(serveNames, key) {
					return fmt.Errorf("%s: unknown key %s%s", where, quote(k.Value), suggest(key, append(slices.Clone(poolKeys), serveNames...)))
				}
				if err := checkServeValue(key, val.Value); err != nil {
					return fmt.Errorf("%s: %s: %v", where, key, err)
				}
				ps.Serve = append(ps.Serve, KV{Key: key, Value: val.Value})
			}
		}
		if ps.Name == "" {
			ps.Name = "pool-" + strconv.Itoa(i+1)
		}
		if prev, dup := names[ps.Name]; dup {
			return fmt.Errorf("%s: name %s already used by pool %d", where, quote(ps.Name), prev)
		}
		names[ps.Name] = i + 1
		out = append(out, ps)
	}
	*v.p = out
	return nil
}

func nameOK(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// MaxReplicas bounds one pool's replicas (and --replicas): BLIS keeps every
// replica's engine in memory.
const MaxReplicas = 100000

// apply returns s with the pool's serve settings applied.
func (ps PoolSpec) apply(s Scenario) (Scenario, error) {
	s.Pools = nil
	s.Replicas = ps.Replicas
	sets := s.Settings()
	for _, kv := range ps.Serve {
		if err := setNamed(sets, kv.Key, kv.Value); err != nil {
			return s, &InputError{Key: "pools." + ps.Name + "." + kv.Key, Value: kv.Value, Msg: err.Error()}
		}
	}
	return s, nil
}
