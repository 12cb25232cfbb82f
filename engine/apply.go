package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/gatepipe/gatepipe/internal/bug"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/engine/dag"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Apply runs every planned instance that is not cached, in parallel, and
// returns the run record. Plan must have succeeded on this engine first.
// The returned error is non-nil only for problems outside the nodes
// (cache, lock); node failures are in the record.
func (e *Engine) Apply(ctx context.Context) (*RunRecord, error) {
	if e.cache == nil {
		return nil, errors.New("apply needs a cache")
	}
	unlock, err := e.cache.LockShared(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	rec := NewRunRecord()
	if !e.runStarted.IsZero() {
		rec.Started = e.runStarted.UTC()
	}
	rec.Pipeline, rec.PID, rec.Outcome = e.runPipeline, os.Getpid(), OutcomeRunning
	// Saved now too, so that an apply killed before its end leaves a
	// record that runs shows as interrupted.
	if err := rec.Save(e.cache, e.opts.KeepRuns); err != nil {
		e.log.Warn().Err(err).Msg("could not write run record")
	}
	g, items := e.instanceGraph()
	total := 0
	for _, it := range items {
		if it.inst != nil {
			total++
		}
	}
	e.opts.Reporter.Start(total)
	a := e.newApplier(total > 0 && g.Len() > 0)
	if e.submitter != nil {
		if err := a.submitAll(ctx); err != nil {
			return nil, err
		}
	}
	results := g.Walk(ctx, dag.WalkOptions{FailFast: e.opts.FailFast}, func(ctx context.Context, key string) error {
		it := items[key]
		if it.inst == nil {
			if d := e.evalVertex(it.v); d.HasErrors() {
				return d
			}
			return nil
		}
		if e.hold != nil && e.hold(it.inst.key()) {
			it.inst.run = RunHeld
			e.opts.Reporter.NodeFinished(it.inst.key(), RunHeld, 0, nil)
			return fmt.Errorf("%s: %w (held by the budget)", it.inst.key(), dag.ErrNotRun)
		}
		if job, ok := a.jobs[it.inst.key()]; ok {
			return a.waitJob(ctx, it.inst, job)
		}
		return a.applyInstance(ctx, it.inst)
	})
	if e.submitter != nil {
		a.cancelQueued(results)
		rec.Submitted = len(a.jobs)
	}
	e.settle(results)
	for k, r := range results { // failures of locals/outputs
		if it := items[k]; it.inst == nil && r.Status == dag.Failed {
			rec.Errors = append(rec.Errors, fmt.Sprintf("%s: %v", k, r.Err))
		}
	}
	rec.finish(e)
	if ctx.Err() != nil {
		rec.Outcome = OutcomeInterrupted
	}
	if err := rec.Save(e.cache, e.opts.KeepRuns); err != nil {
		e.log.Warn().Err(err).Msg("could not write run record")
	}
	return rec, nil
}

// newApplier makes the walk's applier, its instances ordered longest
// expected first (LPT, when durations are known and there is work), then
// in plan order.
func (e *Engine) newApplier(work bool) *applier {
	a := &applier{e: e, slots: newSlots(e.opts.Parallelism, e.opts.Devices), flights: map[cache.ActionID]*flight{}, priority: map[string]int{}}
	var expected map[string]time.Duration
	if e.opts.ExpectedDurations != nil && work {
		expected = e.opts.ExpectedDurations()
	}
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			a.priority[in.key()] = len(a.priority) - int(expected[in.key()].Milliseconds())*1_000_000
		}
	}
	return a
}

// cancelQueued cancels the submitted jobs still queued after the walk:
// dependents of failures (Slurm kills those with --kill-on-invalid-dep,
// this is a safety net) or, after Ctrl-C, all.
func (a *applier) cancelQueued(results map[string]dag.Result) {
	var left []string
	for addr, job := range a.jobs {
		if r := results[addr]; r.Status != dag.Succeeded && r.Status != dag.Failed {
			left = append(left, job)
		}
	}
	if len(left) > 0 {
		sort.Strings(left)
		a.e.submitter.Cancel(left)
	}
}

// settle gives every instance the walk did not finish its outcome (cached
// at plan time, skipped, not run, failed outside applyInstance) and
// reports it.
func (e *Engine) settle(results map[string]dag.Result) {
	for _, v := range e.graph.order {
		for _, in := range v.instances {
			r, walked := results[in.key()]
			if !walked { // finished at plan time
				in.run = RunCached
				e.opts.Reporter.NodeFinished(in.key(), RunCached, 0, nil)
				continue
			}
			switch r.Status {
			case dag.Skipped:
				in.run, in.err = RunSkipped, fmt.Errorf("skipped: upstream %s failed", r.Cause)
				e.opts.Reporter.NodeFinished(in.key(), RunSkipped, 0, in.err)
			case dag.NotRun:
				if in.run == "" {
					in.run = RunNotRun
					e.opts.Reporter.NodeFinished(in.key(), RunNotRun, 0, nil)
				}
			case dag.Failed:
				if in.run == "" { // failed outside applyInstance's bookkeeping
					in.run, in.err = RunFailed, r.Err
					e.opts.Reporter.NodeFinished(in.key(), RunFailed, 0, r.Err)
				}
			}
		}
	}
}

type walkItem struct {
	v    *vertex
	inst *instance
}

// instanceGraph expands the block-level graph: a block vertex becomes its
// instances, and a dependency on a block becomes a dependency on each of
// its instances. Work that plan already finished — cached instances and
// wholly known values — is left out, so a fully cached apply walks an
// empty graph; finished instances are reported as cached by Apply.
func (e *Engine) instanceGraph() (*dag.Graph, map[string]walkItem) {
	g := dag.New()
	items := map[string]walkItem{}
	done := func(v *vertex, in *instance) bool {
		if in != nil {
			return in.status == StatusCached && !in.replace
		}
		val := e.state.get(v.key)
		return val != cty.NilVal && val.IsWhollyKnown() && !e.fromPlannedValues(v)
	}
	memo := map[string][]string{}
	var targets func(dep string) []string
	targets = func(dep string) []string {
		if got, ok := memo[dep]; ok {
			return got
		}
		var got []string
		switch dv := e.graph.vertices[dep]; {
		case dv.kind == vBlock:
			for _, in := range dv.instances {
				if !done(dv, in) {
					got = append(got, in.key())
				}
			}
		case !done(dv, nil):
			got = []string{dep}
		default:
			// A value known at plan time (a count, say) needs no waiting,
			// but the action ID hashes the outputs of the blocks behind
			// it, so those still come first.
			for _, d := range dv.deps {
				got = append(got, targets(d)...)
			}
		}
		memo[dep] = got
		return got
	}
	connect := func(k string, v *vertex, in *instance) {
		g.Add(k)
		for _, dep := range v.deps {
			if ui, deps, ok := e.keyedItem(v, dep, in); ok {
				// Only the element for this instance's key (narrow.go).
				if ui != nil && !done(e.graph.vertices[dep], ui) {
					g.Connect(k, ui.key())
				}
				for _, d := range deps {
					for _, t := range targets(d) {
						g.Connect(k, t)
					}
				}
				continue
			}
			for _, t := range targets(dep) {
				g.Connect(k, t)
			}
		}
	}
	for _, v := range e.graph.order {
		if v.kind == vBlock {
			for _, in := range v.instances {
				items[in.key()] = walkItem{v: v, inst: in}
				if !done(v, in) {
					connect(in.key(), v, in)
				}
			}
		} else if !done(v, nil) {
			items[v.key] = walkItem{v: v}
			connect(v.key, v, nil)
		}
	}
	return g, items
}

type applier struct {
	e     *Engine
	slots *slots
	// parentLocked: a parent process holds the action's lock (process
	// isolation), so this child must not take it again.
	parentLocked bool
	// priority orders slot requests: the instance's position in the
	// stable plan order.
	priority map[string]int
	// jobs maps instances to their batch jobs when a Submitter is set.
	jobs map[string]string

	mu      sync.Mutex
	flights map[cache.ActionID]*flight
}

// flight deduplicates identical actions within one apply: the first caller
// runs, later ones wait and share the result.
type flight struct {
	done   chan struct{}
	output cache.OutputID
	err    error
}

func (a *applier) applyInstance(ctx context.Context, in *instance) (err error) {
	e := a.e
	rep := e.opts.Reporter
	defer func() {
		if err != nil && in.run == "" {
			in.run, in.err = RunFailed, err
			rep.NodeFinished(in.key(), RunFailed, in.duration, err)
		}
	}()
	if in.status == StatusCached && !in.replace {
		in.run = RunCached
		rep.NodeFinished(in.key(), RunCached, 0, nil)
		return nil
	}
	if in.status != StatusWillRun || in.node == nil {
		// Blocked at plan time: evaluate again now that upstream is done.
		if d := e.evalInstance(in); d.HasErrors() {
			return d
		}
		if in.node == nil {
			return fmt.Errorf("%s: configuration is still unknown after its dependencies finished", in.key())
		}
		id, ok, err := e.actionID(ctx, in)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s: an upstream output is missing", in.key())
		}
		in.action = id
	}

	a.mu.Lock()
	if f, ok := a.flights[in.action]; ok {
		a.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if f.err != nil {
			return f.err
		}
		in.run = RunCached
		rep.NodeFinished(in.key(), RunCached, 0, nil)
		return e.loadOutput(in, f.output)
	}
	f := &flight{done: make(chan struct{})}
	a.flights[in.action] = f
	a.mu.Unlock()
	defer close(f.done)

	f.output, f.err = a.runOrReuse(ctx, in)
	return f.err
}

// runOrReuse takes the action's lock, checks the cache again (another
// process may have finished it) and otherwise runs the node.
func (a *applier) runOrReuse(ctx context.Context, in *instance) (cache.OutputID, error) {
	e := a.e
	if !in.replace {
		if hit, err := e.lookupCache(in); err == nil && hit {
			in.run = RunCached
			e.opts.Reporter.NodeFinished(in.key(), RunCached, 0, nil)
			return in.output, nil
		}
	}
	if !a.parentLocked {
		unlock, err := e.cache.LockAction(ctx, in.action, func() {
			e.log.Info().Str("node", in.key()).Msg("waiting: another gatepipe process is computing this node; its result will be reused")
		})
		if err != nil {
			return cache.OutputID{}, err
		}
		defer unlock()
	}
	if !in.replace {
		if hit, err := e.lookupCache(in); err == nil && hit {
			in.run = RunCached
			e.opts.Reporter.NodeFinished(in.key(), RunCached, 0, nil)
			return in.output, nil
		}
	}
	if err := a.slots.check(in.resources); err != nil {
		return cache.OutputID{}, fmt.Errorf("%s: %w", in.key(), err)
	}
	dev, release, err := a.slots.acquire(ctx, in.resources, a.priority[in.key()])
	if err != nil {
		return cache.OutputID{}, err
	}
	defer release()
	return a.run(ctx, in, dev)
}

func (a *applier) run(ctx context.Context, in *instance, dev nodes.Assignment) (cache.OutputID, error) {
	e := a.e
	if e.opts.Spawn != nil && e.opts.Isolate != nil && e.opts.Isolate(in.v.nodeKind) {
		return a.spawn(ctx, in, dev)
	}
	log := e.log.With().Str("node", in.key()).Logger()
	work, err := e.cache.TempDir(in.v.nodeKind.Name())
	if err != nil {
		return cache.OutputID{}, err
	}
	defer os.RemoveAll(work) // no-op once Put moved it
	in.start, in.device = time.Now(), dev
	e.opts.Reporter.NodeStarted(in.key(), dev)
	log.Debug().Str("action", in.action.Short()).Msg("node started")
	env := &nodes.Env{
		Addr: in.addr, OutDir: work, WorkDir: in.v.mod.Pipeline.Dir, Blobs: e.cache, Parts: e.cache, Sources: e.resolver(),
		Devices: dev, Log: log, Progress: nodeProgress{r: e.opts.Reporter, addr: in.key()},
		ActionID: in.action.String(), Version: e.opts.Version,
	}
	resumeKey := ""
	if r, ok := in.node.(nodes.Resumer); ok && r.Resumes() {
		resumeKey = e.resumeKey(in)
		dir, unlock, err := e.cache.ResumeDir(ctx, resumeKey)
		if err != nil {
			return cache.OutputID{}, a.fail(ctx, in, fmt.Errorf("checkpoint directory: %w", err))
		}
		defer unlock()
		env.ResumeDir = dir
	}
	val, err := runNode(ctx, in.node, env)
	in.duration = time.Since(in.start)
	if err == nil {
		val, err = e.storableValue(in, val, work)
	}
	var out cache.OutputID
	if err == nil {
		var data []byte
		if data, err = ctyjson.Marshal(val, in.v.nodeKind.OutputType()); err == nil {
			out, err = e.cache.Put(in.action, work, data)
		}
	}
	if err == nil {
		err = e.loadOutput(in, out)
	}
	if err == nil && resumeKey != "" {
		// The output is stored: its checkpoints are no longer needed.
		if derr := e.cache.DropResume(resumeKey); derr != nil {
			log.Warn().Err(derr).Msg("could not remove the finished run's checkpoints")
		}
	}
	if err != nil {
		log.Debug().Err(err).Msg("node failed")
		return cache.OutputID{}, a.fail(ctx, in, err)
	}
	in.run = RunRan
	e.opts.Reporter.NodeFinished(in.key(), RunRan, in.duration, nil)
	log.Debug().Dur("duration", in.duration).Str("output", out.Short()).Msg("node finished")
	return out, nil
}

// resumeKey names an instance's resume directory: its address within
// its pipeline directory, so the checkpoints of a run outlive a change
// of its configuration (and are then refused by what reads them, which
// checks the action ID they were written for).
func (e *Engine) resumeKey(in *instance) string {
	h := sha256.Sum256([]byte(in.v.mod.Pipeline.Dir + "\x00" + in.key()))
	return hex.EncodeToString(h[:16])
}

// storableValue converts a node's value to its kind's output type and
// replaces its work directory by the sentinel.
func (e *Engine) storableValue(in *instance, val cty.Value, work string) (cty.Value, error) {
	ty := in.v.nodeKind.OutputType()
	conv, err := convert.Convert(val, ty)
	if err != nil {
		return cty.NilVal, fmt.Errorf("node returned a value that does not match its kind's output type: %w", err)
	}
	if !conv.IsWhollyKnown() {
		return cty.NilVal, errors.New("node returned an unknown value")
	}
	root := e.cache.Dir()
	return replaceStrings(conv, func(s string) string {
		// Work directory first: it lies inside the cache root.
		return strings.ReplaceAll(strings.ReplaceAll(s, work, OutDirSentinel), root, cacheSentinel)
	}), nil
}

// spawn runs the instance in a child process and loads what it stored.
func (a *applier) spawn(ctx context.Context, in *instance, dev nodes.Assignment) (cache.OutputID, error) {
	e := a.e
	in.start, in.device = time.Now(), dev
	e.opts.Reporter.NodeStarted(in.key(), dev)
	err := e.opts.Spawn(ctx, in.key(), dev)
	in.duration = time.Since(in.start)
	if err == nil {
		var hit bool
		if hit, err = e.lookupCache(in); err == nil && !hit {
			err = errors.New("the child process exited successfully but stored no output")
		}
	}
	if err != nil {
		return cache.OutputID{}, a.fail(ctx, in, err)
	}
	in.run = RunRan
	e.opts.Reporter.NodeFinished(in.key(), RunRan, in.duration, nil)
	return in.output, nil
}

// ApplyOne runs the planned instance addr in this process: the child side
// of process isolation, of Slurm jobs and of exported scripts. Its
// dependencies must be cached already. It is a no-op for an instance that
// is cached (unless -replace names it).
func (e *Engine) ApplyOne(ctx context.Context, addr string, parentLocked bool) error {
	if e.cache == nil {
		return errors.New("exec needs a cache")
	}
	unlock, err := e.cache.LockShared(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	var in *instance
	for _, v := range e.graph.order {
		for _, cand := range v.instances {
			if cand.key() == addr {
				in = cand
			}
		}
	}
	if in == nil {
		return fmt.Errorf("the pipeline has no instance %s", addr)
	}
	switch in.status {
	case StatusCached:
		if !in.replace {
			return nil
		}
	case StatusBlocked:
		return fmt.Errorf("%s cannot run yet: %s, and those are not in the cache", addr, in.reason)
	}
	a := &applier{e: e, slots: newSlots(1, e.opts.Devices), flights: map[cache.ActionID]*flight{}, priority: map[string]int{}, parentLocked: parentLocked}
	// The parent already holds this node's devices: take exactly them.
	in.resources.CPUs = min(in.resources.CPUs, e.opts.Devices.CPUs)
	in.resources.GPUs = min(in.resources.GPUs, len(e.opts.Devices.GPUs))
	_, err = a.runOrReuse(ctx, in)
	return err
}

// fail records a run that ended in error: "not run" when the apply was
// cancelled, failed otherwise. It returns the error the walk should see.
func (a *applier) fail(ctx context.Context, in *instance, err error) error {
	rep := a.e.opts.Reporter
	if ctx.Err() != nil {
		in.run, in.err = RunNotRun, fmt.Errorf("%s: cancelled after %s", in.key(), in.duration.Round(time.Millisecond))
		rep.NodeFinished(in.key(), RunNotRun, in.duration, in.err)
		return ctx.Err()
	}
	err = fmt.Errorf("%s: %w", in.key(), err)
	in.run, in.err = RunFailed, err
	rep.NodeFinished(in.key(), RunFailed, in.duration, err)
	return err
}

// runNode runs a node, turning a panic in it into an internal error of
// that node: the others go on, and apply exits with its own code.
func runNode(ctx context.Context, n nodes.Node, env *nodes.Env) (val cty.Value, err error) {
	defer bug.Recover(&err)
	return n.Run(ctx, env)
}

// fromPlannedValues reports whether a variable, local or output vertex was
// computed from planned values (nodes.Planner), which describe and do not
// decide: apply computes it again from what the runs give.
func (e *Engine) fromPlannedValues(v *vertex) bool {
	for _, bv := range e.upstreamBlocks(v) {
		for _, in := range bv.instances {
			if in.isPlanned() {
				return true
			}
		}
	}
	return false
}
