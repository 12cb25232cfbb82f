package engine

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
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
	// RunHeld: held back by the apply's budget (apply -budget).
	RunHeld RunStatus = "held"
)

// instance is one expanded node block instance.
type instance struct {
	v                  *vertex
	addr               addrs.AbsInstance
	eachKey, eachValue cty.Value

	mu    sync.Mutex
	value cty.Value // the block value; known once cached or run
	// stored, when set, is the value as stored in the cache, decoded into
	// value on first use: most cached values are never read.
	stored *storedValue
	// planned says value is what plan could tell before the node ran
	// (nodes.Planner): it describes, it is never memoized as the block's
	// value, and running replaces it.
	planned bool

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

type storedValue struct {
	json []byte
	dir  string // replaces OutDirSentinel
	root string // replaces cacheSentinel
}

func (in *instance) setValue(v cty.Value) {
	in.mu.Lock()
	in.value, in.stored, in.planned = v, nil, false
	in.mu.Unlock()
}

// setPlanned sets a value plan could tell before the node ran.
func (in *instance) setPlanned(v cty.Value) {
	in.mu.Lock()
	in.value, in.stored, in.planned = v, nil, true
	in.mu.Unlock()
}

// isPlanned reports whether the value is a planned one.
func (in *instance) isPlanned() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.planned
}

func (in *instance) getValue() cty.Value {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stored != nil {
		in.value = decodeStored(in.stored, in.v.nodeKind.OutputType())
		in.stored = nil
	}
	return in.value
}

// decodeStored turns a stored value back into cty, pointing its paths at
// the output directory. A value that cannot be decoded (a kind changed its
// output type without bumping its version) becomes unknown, so dependents
// fail with a clear message instead of using a wrong value.
func decodeStored(s *storedValue, ty cty.Type) cty.Value {
	val, err := ctyjson.Unmarshal(s.json, ty)
	if err != nil {
		return cty.UnknownVal(ty)
	}
	if bytes.Contains(s.json, []byte(OutDirSentinel)) || bytes.Contains(s.json, []byte(cacheSentinel)) {
		val = replaceStrings(val, func(str string) string {
			return strings.ReplaceAll(strings.ReplaceAll(str, OutDirSentinel, s.dir), cacheSentinel, s.root)
		})
	}
	return val
}

func (in *instance) key() string { return in.addr.String() }
