package engine

import (
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/zclconf/go-cty/cty"
)

// PlanStatus is what plan expects for one instance.
type PlanStatus string

// Plan statuses.
const (
	// StatusCached: the output is in the cache; apply will not run it.
	StatusCached PlanStatus = "cached"
	// StatusWillRun: the action ID is known and not cached.
	StatusWillRun PlanStatus = "will run"
	// StatusBlocked: it waits on upstream nodes that will run; whether it
	// runs depends on what they produce.
	StatusBlocked PlanStatus = "blocked"
)

// RunStatus is what apply did with one instance.
type RunStatus string

// Run statuses.
const (
	RunCached  RunStatus = "cached"
	RunRan     RunStatus = "ran"
	RunFailed  RunStatus = "failed"
	RunSkipped RunStatus = "skipped"
	RunNotRun  RunStatus = "not run"
)

// instance is one expanded node block instance.
type instance struct {
	v                  *vertex
	addr               addrs.AbsInstance
	eachKey, eachValue cty.Value

	mu    sync.Mutex
	value cty.Value // the block value; known once cached or run

	// Filled by planning (and again by apply when it was not known).
	status    PlanStatus
	reason    string
	replace   bool
	config    cty.Value
	node      nodes.Node
	resources nodes.Resources
	action    cache.ActionID
	output    cache.OutputID

	// Filled by apply.
	run      RunStatus
	start    time.Time
	duration time.Duration
	err      error
	device   nodes.Assignment
}

func (in *instance) setValue(v cty.Value) {
	in.mu.Lock()
	in.value = v
	in.mu.Unlock()
}

func (in *instance) getValue() cty.Value {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.value
}

func (in *instance) key() string { return in.addr.String() }
