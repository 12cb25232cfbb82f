package engine

import "github.com/gatepipe/gatepipe/nodes"

// Store is the expected output of a planned instance that will run or
// waits to (a dataset's example store).
type Store struct {
	Addr     string
	Status   PlanStatus
	Estimate nodes.StoreEstimate
}

// Stores lists the expected stores of the instances that are not cached
// and whose configuration is known, in dependency order. Call it after
// Plan.
func (e *Engine) Stores() []Store {
	var out []Store
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			est, ok := in.node.(nodes.StoreEstimator)
			if !ok || (in.status == StatusCached && !in.replace) {
				continue
			}
			out = append(out, Store{Addr: in.key(), Status: in.status, Estimate: est.EstimateStore()})
		}
	}
	return out
}
