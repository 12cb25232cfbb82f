package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
)

// Submitter hands instances to a batch system (Slurm) instead of running
// them here. Every instance that will or may run is submitted before the
// walk, after the jobs of the instances it depends on; the walk then waits
// for each job and reads its output from the (shared) cache.
type Submitter interface {
	// Submit queues addr to run after the jobs in after succeed, and
	// returns the job's ID.
	Submit(ctx context.Context, addr string, res nodes.Resources, after []string) (string, error)
	// Wait blocks until the job ends, returning an error unless it
	// completed successfully.
	Wait(ctx context.Context, job string) error
	// Cancel cancels jobs that have not ended.
	Cancel(jobs []string)
}

// SetSubmitter routes runs to a batch system.
func (e *Engine) SetSubmitter(s Submitter) { e.submitter = s }

// submitAll submits, in dependency order, every instance that will run or
// is blocked (cached ones never are), chaining each after the jobs of its
// upstream instances.
func (a *applier) submitAll(ctx context.Context) error {
	e := a.e
	a.jobs = map[string]string{}
	for _, v := range e.orderedVertices() {
		for _, in := range v.instances {
			if in.status == StatusCached && !in.replace {
				continue
			}
			var after []string
			for _, ui := range e.upstreamInstances(in) {
				if j, ok := a.jobs[ui.key()]; ok {
					after = append(after, j)
				}
			}
			sort.Strings(after)
			job, err := e.submitter.Submit(ctx, in.key(), in.resources, after)
			if err != nil {
				a.cancelJobs()
				return fmt.Errorf("%s: submitting: %w", in.key(), err)
			}
			a.jobs[in.key()] = job
		}
	}
	return nil
}

func (a *applier) cancelJobs() {
	var ids []string
	for _, j := range a.jobs {
		ids = append(ids, j)
	}
	sort.Strings(ids)
	if len(ids) > 0 {
		a.e.submitter.Cancel(ids)
	}
}

// waitJob is applyInstance for submitted instances.
func (a *applier) waitJob(ctx context.Context, in *instance, job string) error {
	e := a.e
	in.start = time.Now()
	e.opts.Reporter.NodeStarted(in.key(), nodes.Assignment{CPUs: in.resources.CPUs})
	err := e.submitter.Wait(ctx, job)
	in.duration = time.Since(in.start)
	if err == nil {
		// A blocked instance is evaluated now its upstream is known.
		if in.node == nil || in.action.IsZero() {
			if d := e.evalInstance(in); d.HasErrors() {
				err = d
			} else if id, ok, aerr := e.actionID(ctx, in); aerr != nil || !ok {
				err = errors.Join(aerr, errors.New("an upstream output is missing"))
			} else {
				in.action = id
			}
		}
	}
	if err == nil {
		var hit bool
		if hit, err = e.lookupCache(in); err == nil && !hit {
			err = fmt.Errorf("job %s completed but stored no output in the cache (is the cache on a path every node shares?)", job)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			in.run = RunNotRun
			return ctx.Err()
		}
		err = fmt.Errorf("%s: job %s: %w", in.key(), job, err)
		in.run, in.err = RunFailed, err
		e.opts.Reporter.NodeFinished(in.key(), RunFailed, in.duration, err)
		return err
	}
	in.run = RunRan
	e.opts.Reporter.NodeFinished(in.key(), RunRan, in.duration, nil)
	return nil
}
