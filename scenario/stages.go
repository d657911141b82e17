package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"blis/workload"
)

// stagesValue is --stages: inference-perf's load.stages list, written as
// inference-perf's config writes it — a YAML (or JSON) list of
// {rate, duration} mappings, e.g. `[{rate: 10, duration: 60}, {rate: 20,
// duration: 60}]` on the command line or a block list in a scenario file
// (kubernetes-sigs/inference-perf config/loadgen/config.py StandardLoadStage).
type stagesValue struct{ p *[]workload.LoadStage }

func (v stagesValue) Type() string { return "stages" }

func (v stagesValue) String() string {
	if len(*v.p) == 0 {
		return ""
	}
	parts := make([]string, len(*v.p))
	for i, st := range *v.p {
		parts[i] = "{rate: " + strconv.FormatFloat(st.Rate, 'g', -1, 64) + ", duration: " + strconv.FormatFloat(st.Duration, 'g', -1, 64) + "}"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// stageFile is one stage as written; pointers tell a missing key from 0.
type stageFile struct {
	Rate     *float64 `yaml:"rate"`
	Duration *float64 `yaml:"duration"`
}

func (v stagesValue) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		*v.p = nil
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(s)))
	dec.KnownFields(true)
	var list []stageFile
	if err := dec.Decode(&list); err != nil {
		if errors.Is(err, io.EOF) {
			*v.p = nil
			return nil
		}
		return fmt.Errorf("not a list of {rate, duration} stages (inference-perf's load.stages, e.g. [{rate: 10, duration: 60}]): %s",
			strings.TrimPrefix(err.Error(), "yaml: "))
	}
	out := make([]workload.LoadStage, len(list))
	for i, st := range list {
		if st.Rate == nil || st.Duration == nil {
			return fmt.Errorf("stage %d: give both rate (requests per second) and duration (seconds)", i+1)
		}
		out[i] = workload.LoadStage{Rate: *st.Rate, Duration: *st.Duration}
	}
	*v.p = out
	return nil
}

// setNode takes the list straight from a scenario file's YAML node.
func (v stagesValue) setNode(n *yaml.Node) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	return v.Set(string(b))
}
