package dag

import (
	"context"
	"errors"
	"sync"
)

// Status is the outcome of one vertex in a walk.
type Status int

// Walk outcomes.
const (
	// NotRun: the walk ended before the vertex could start.
	NotRun Status = iota
	// Succeeded: the visit function returned nil.
	Succeeded
	// Failed: the visit function returned an error.
	Failed
	// Skipped: a dependency failed or was skipped, so it never ran.
	Skipped
)

func (s Status) String() string {
	return [...]string{"not run", "succeeded", "failed", "skipped"}[s]
}

// Result is the outcome of one vertex.
type Result struct {
	Status Status
	Err    error
	// Cause is the failed vertex that made this one skip.
	Cause string
}

// WalkOptions controls a walk.
type WalkOptions struct {
	// FailFast stops starting new vertices after the first failure;
	// otherwise unrelated vertices keep going.
	FailFast bool
}

// Walk calls visit for every vertex once all its dependencies succeeded,
// running independent vertices concurrently. Limiting how many run at once
// is the visit function's job (it acquires a slot after its dependencies are
// done, so waiting vertices hold none). A vertex whose dependency failed is
// skipped and its result names the root cause. Walk returns when every
// vertex has a result. The graph must be acyclic.
func (d *Graph) Walk(ctx context.Context, opts WalkOptions, visit func(ctx context.Context, key string) error) map[string]Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	w := &walker{
		d:       d,
		visit:   visit,
		opts:    opts,
		cancel:  cancel,
		results: make(map[string]Result, len(d.keys)),
		pending: make(map[string]int, len(d.keys)),
		cause:   map[string]string{},
	}
	w.mu.Lock()
	var ready []string
	for _, k := range d.keys {
		w.pending[k] = len(d.deps[k])
		if w.pending[k] == 0 {
			ready = append(ready, k)
		}
	}
	w.outstanding = len(d.keys)
	w.mu.Unlock()
	if len(d.keys) == 0 {
		return w.results
	}
	w.done = make(chan struct{})
	for _, k := range ready {
		w.start(ctx, k)
	}
	<-w.done
	return w.results
}

type walker struct {
	d      *Graph
	visit  func(context.Context, string) error
	opts   WalkOptions
	cancel context.CancelFunc

	mu          sync.Mutex
	results     map[string]Result
	pending     map[string]int
	cause       map[string]string // vertex -> failed root cause, for skips
	outstanding int
	stopped     bool
	done        chan struct{}
}

func (w *walker) start(ctx context.Context, key string) {
	go func() {
		var err error
		if ctx.Err() != nil {
			err = ctx.Err()
		} else {
			err = w.visit(ctx, key)
		}
		w.finish(ctx, key, err)
	}()
}

// ErrNotRun, returned (wrapped) by a visit, marks the vertex and its
// dependents NotRun rather than failed, and does not stop a fail-fast
// walk: the vertex was held back on purpose.
var ErrNotRun = errors.New("not run")

// finish records a result and releases or skips the vertex's dependents.
func (w *walker) finish(ctx context.Context, key string, err error) {
	w.mu.Lock()
	var toStart []string
	var resolve func(k string, res Result)
	resolve = func(k string, res Result) {
		w.results[k] = res
		w.outstanding--
		for _, u := range w.d.users[k] {
			if _, done := w.results[u]; done {
				continue
			}
			if res.Status != Succeeded {
				cause := k
				if res.Status == Skipped {
					cause = res.Cause
				}
				if res.Status == NotRun {
					resolve(u, Result{Status: NotRun})
				} else {
					resolve(u, Result{Status: Skipped, Cause: cause})
				}
				continue
			}
			w.pending[u]--
			if w.pending[u] == 0 {
				toStart = append(toStart, u)
			}
		}
	}
	switch {
	case err == nil:
		resolve(key, Result{Status: Succeeded})
	case errors.Is(err, ErrNotRun):
		resolve(key, Result{Status: NotRun, Err: err})
	case (w.stopped || ctx.Err() != nil) && errors.Is(err, context.Canceled):
		resolve(key, Result{Status: NotRun, Err: err})
	default:
		resolve(key, Result{Status: Failed, Err: err})
		if w.opts.FailFast && !w.stopped {
			w.stopped = true
			w.cancel()
		}
	}
	if w.stopped || ctx.Err() != nil {
		for _, k := range toStart {
			resolve(k, Result{Status: NotRun, Err: context.Canceled})
		}
		toStart = nil
	}
	finished := w.outstanding == 0
	w.mu.Unlock()
	for _, k := range toStart {
		w.start(ctx, k)
	}
	if finished {
		close(w.done)
	}
}
