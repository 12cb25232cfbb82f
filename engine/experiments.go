package engine

import (
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/zclconf/go-cty/cty"
)

// Experiment is a planned instance that evaluates one model on one
// benchmark (its kind implements nodes.Experimenter).
type Experiment struct {
	Addr             string
	Model, Benchmark string
	// Known is false when the cell cannot be read yet (the configuration
	// waits on dependencies); Model and Benchmark are then empty.
	Known bool
	// Cached experiments have Metrics, the path of their metrics.json
	// ("" when the node wrote none).
	Cached  bool
	Metrics string
}

// Experiments lists, after Plan, the instances that evaluate (or may
// evaluate, while their configuration is unknown) a (model, benchmark)
// cell.
func (e *Engine) Experiments() []Experiment {
	var out []Experiment
	for _, v := range e.orderedVertices() {
		ex, ok := v.nodeKind.(nodes.Experimenter)
		if !ok {
			continue
		}
		for _, in := range v.instances {
			model, bench, known, isExp := ex.ExperimentCell(in.config)
			if !isExp {
				continue
			}
			x := Experiment{Addr: in.key(), Model: model, Benchmark: bench, Known: known, Cached: in.status == StatusCached && !in.replace}
			if x.Cached { // the value planning read from the cache
				if val := in.getValue(); val != cty.NilVal {
					x.Metrics, _ = nodes.KnownString(val, "metrics")
				}
			}
			out = append(out, x)
		}
	}
	return out
}
