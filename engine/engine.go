package engine

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// Options controls planning and applying.
type Options struct {
	// Parallelism bounds how many nodes run at once (default: CPU slots).
	Parallelism int
	// KeepRuns is how many run records to keep in the cache's runs
	// directory, newest first (0: DefaultKeepRuns).
	KeepRuns int
	// Devices are the slots nodes are scheduled on.
	Devices Devices
	// FailFast stops starting nodes after the first failure; by default
	// unrelated nodes keep going.
	FailFast bool
	// Replace forces these instances to run even when cached.
	Replace []addrs.AbsInstance
	// DebugHash, when set, receives every byte hashed into action IDs.
	DebugHash io.Writer
	// Reporter receives progress events; nil means none.
	Reporter Reporter
	// Spawn, when set, runs an instance in a child process (which stores
	// its output in the cache) instead of in this one; Isolate decides for
	// which instances.
	Spawn   func(ctx context.Context, addr string, dev nodes.Assignment) error
	Isolate func(kind nodes.Kind) bool
	// ExpectedDurations, when set, returns how long instances took in
	// earlier runs, by address; apply calls it only when something will
	// run, and starts the longest expected work first.
	ExpectedDurations func() map[string]time.Duration
	// Sources resolves and downloads remote sources (lock file, mirror,
	// credentials, offline mode); nil resolves from declared checksums
	// only and downloads nothing.
	Sources *sources.Resolver
	// Version is the gatepipe version, passed to nodes for their run
	// metadata; it is not part of action IDs (kind versions are).
	Version string
	// Reads, when set, records every local file the plan reads outside
	// the configuration (configuration functions, node fingerprints).
	Reads *readset.Set
	// Defaults are the pipeline's block defaults (the gatepipe block's
	// runtime and python), given to every kind's Decode.
	Defaults nodes.Defaults
	// OneInstance says the engine serves one instance (gatepipe exec) on
	// the devices a parent apply or a Slurm job handed it: the other
	// nodes' GPU counts are not checked against those devices, which hold
	// no GPU when the instance needs none (the parent checked them).
	OneInstance bool
}

// Devices are the schedulable resources of this machine.
type Devices struct {
	CPUs int
	GPUs []string
	// GPUShare is how many nodes may run on one GPU at once (0 or 1: one
	// node per GPU). Small torch jobs (probes, heads on small encoders)
	// leave most of a large GPU idle, and each pays the worker's start-up
	// alone; sharing runs several at once, CUDA time-slicing the GPU. A
	// node asking for several GPUs still gets distinct ones.
	GPUShare int
}

// DefaultDevices is every CPU core and no GPU.
func DefaultDevices() Devices { return Devices{CPUs: runtime.NumCPU()} }

// Engine plans and applies one loaded configuration.
type Engine struct {
	reg    *nodes.Registry
	stdlib fs.FS
	cache  *cache.Cache // nil when only validating
	log    zerolog.Logger
	opts   Options
	// runStarted and runPipeline go into the run record (SetRunInfo).
	runStarted  time.Time
	runPipeline string
	// hold, when set, holds instances back (SetHold).
	hold func(addr string) bool

	root     *pipelines.Module
	rootVals map[string]cty.Value
	graph    *graphBuilder
	state    *state

	upMu     sync.Mutex
	upstream map[string][]*vertex

	submitter Submitter

	defaultResolverOnce sync.Once
	defaultResolver     *sources.Resolver
}

// New builds the graph of a loaded configuration. c may be nil, in which
// case Plan treats nothing as cached (that is what validate does).
func New(reg *nodes.Registry, stdlib fs.FS, c *cache.Cache, root *pipelines.Module, rootVals map[string]cty.Value, log zerolog.Logger, opts Options) (*Engine, hcl.Diagnostics) {
	if opts.Devices.CPUs == 0 && len(opts.Devices.GPUs) == 0 {
		opts.Devices = DefaultDevices()
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = max(opts.Devices.CPUs, 1)
	}
	if opts.Reporter == nil {
		opts.Reporter = NopReporter{}
	}
	e := &Engine{
		reg: reg, stdlib: stdlib, cache: c, log: log, opts: opts,
		root: root, rootVals: rootVals, state: newState(root),
		upstream: map[string][]*vertex{},
	}
	g, diags := buildGraph(reg, root)
	e.graph = g
	if !diags.HasErrors() {
		diags = append(diags, e.checkReplace()...)
	}
	return e, diags
}

func (e *Engine) checkReplace() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, r := range e.opts.Replace {
		key := r.Module.Prefix() + r.Instance.Block.String()
		if v, ok := e.graph.vertices[key]; !ok || v.kind != vBlock {
			var names []string
			for _, v := range e.graph.order {
				if v.kind == vBlock {
					names = append(names, v.key)
				}
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid -replace address",
				Detail:   fmt.Sprintf("The pipeline has no block %s.%s", key, pipelines.DidYouMean(key, names)),
			})
		}
	}
	return diags
}

func (e *Engine) replaces(in *instance) bool {
	for _, r := range e.opts.Replace {
		if r.Module == in.addr.Module && r.Instance.Block == in.addr.Instance.Block &&
			(r.Instance.Key == nil || r.Instance.Key == in.addr.Instance.Key) {
			return true
		}
	}
	return false
}

// DOT writes the block-level dependency graph in Graphviz format.
func (e *Engine) DOT(w io.Writer) error { return e.graph.g.DOT(w) }

// SetHold makes apply hold back the instances hold returns true for: they
// and their dependents are not run (status held / not run), and nothing
// fails (apply -budget).
func (e *Engine) SetHold(hold func(addr string) bool) { e.hold = hold }

// SetRunInfo says when the apply began (the command, not its planning)
// and which pipeline it applies, for the run record.
func (e *Engine) SetRunInfo(started time.Time, pipeline string) {
	e.runStarted, e.runPipeline = started, pipeline
}

// SetSpawner installs process isolation after construction (the CLI needs
// the loaded session to build the child's command line).
func (e *Engine) SetSpawner(spawn func(ctx context.Context, addr string, dev nodes.Assignment) error, isolate func(nodes.Kind) bool) {
	e.opts.Spawn, e.opts.Isolate = spawn, isolate
}

// Options returns the engine's options.
func (e *Engine) Options() Options { return e.opts }
