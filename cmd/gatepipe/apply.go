package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/internal/bug"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pmf"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

func runApply(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "apply", "apply [flags] [PATH | PLANFILE]\n\nRuns every node instance that is not cached, in parallel, then prints the\npipeline's outputs. A second apply of an unchanged pipeline runs nothing.\nGiven a file saved by 'plan -out', runs exactly that plan, refusing it when the\nconfiguration or the cache changed since.")
	var f applyFlags
	f.register(fs)
	begun := time.Now()
	if !c.started.IsZero() {
		begun = c.started // the whole command, as its user waited for it
	}
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	isolate, err := isolation(f.isolationMode)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitConfigError
	}
	if !f.keepGoing {
		f.failFast = true
	}
	path, ok := pathArg(pos, c.stderr)
	if !ok {
		return exitConfigError
	}
	saved, err := readPlanFile(path)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitConfigError
	}
	if saved != nil {
		path = saved.Path
		f.vars, f.varFiles, f.replace = saved.Vars, saved.VarFiles, saved.Replace
		if f.cacheDir == "" {
			f.cacheDir = saved.CacheDir
		}
	}
	opts, err := f.engineOptions(c)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitConfigError
	}
	bud, err := f.budget(saved != nil)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitConfigError
	}
	a := &applyRun{c: c, f: &f, path: path, planArg: pos, saved: saved, bud: bud, isolate: isolate, opts: opts, begun: begun}
	a.noop = c.newNoopApply(path, &f.runFlags, saved == nil && bud == nil && f.executor == "local")
	if a.noop != nil {
		if code, done := c.answerNoop(ctx, a.noop, begun); done {
			return code
		}
	}
	for round := 1; ; round++ {
		if code, done := a.round(ctx, round); done {
			return code
		}
	}
}

// applyFlags are apply's flags: plan's, and how and where nodes run.
type applyFlags struct {
	runFlags
	keepGoing               bool
	isolationMode, executor string
	budgetN, budgetBatch    int
	budgetRule              string
	budgetMethod            string
	budgetPrior             string
}

func (f *applyFlags) register(fs *flag.FlagSet) {
	f.configFlags.register(fs)
	fs.Var(&f.replace, "replace", "run this instance even if cached, e.g. -replace='dataset.fashion' (repeatable)")
	fs.IntVar(&f.parallelism, "parallelism", 0, "run at most N nodes at once (default: the gatepipe block's parallelism, else the CPU slots)")
	fs.StringVar(&f.devices, "devices", "", "device slots, e.g. cpu:8,gpu:0,gpu:1 (default: the gatepipe block's devices, else all CPU cores)")
	fs.IntVar(&f.gpuShare, "gpu-share", 0, "let N nodes run on one GPU at once, for small torch jobs (default: $GATEPIPE_GPU_SHARE, else the gatepipe block's gpu_share, else 1)")
	fs.BoolVar(&f.failFast, "fail-fast", false, "stop starting nodes after the first failure")
	fs.BoolVar(&f.keepGoing, "keep-going", true, "after a failure, finish every node that does not depend on it (-keep-going=false is -fail-fast)")
	fs.BoolVar(&f.debugHash, "debug-hash", false, "print every input hashed into action IDs to stderr")
	f.src.register(fs, true)
	fs.StringVar(&f.isolationMode, "isolation", "auto", "run nodes in their own processes: auto (kinds that train), process (every node) or none")
	fs.StringVar(&f.executor, "executor", "local", "where nodes run: local, or slurm (each node an sbatch job on a shared cache)")
	fs.IntVar(&f.budgetN, "budget", 0, "run at most N experiments (train blocks, commands with experiment = {model, benchmark}), the most informative first, refitting PMF between batches; others are held")
	fs.IntVar(&f.budgetBatch, "budget-batch", 4, "experiments per batch under -budget")
	fs.StringVar(&f.budgetRule, "budget-rule", "variance", "how -budget chooses: variance (expected error reduction), uncertainty (largest posterior std) or random")
	fs.StringVar(&f.budgetMethod, "budget-method", "bpmf", "matrix completion under -budget: pmf, bpmf, ptf or bptf")
	fs.StringVar(&f.budgetPrior, "budget-prior", "", "results matrix of known cells (long CSV, e.g. stdlib/data/gate_table3.csv) that -budget completes with the experiments' results")
}

// budget returns the -budget settings, nil without -budget.
func (f *applyFlags) budget(savedPlan bool) (*budget, error) {
	if f.budgetN < 0 || f.budgetBatch < 1 {
		return nil, errors.New("-budget must be at least 0 and -budget-batch at least 1")
	}
	if f.budgetN == 0 {
		return nil, nil
	}
	if savedPlan {
		return nil, errors.New("-budget chooses experiments as it goes and cannot apply a saved plan")
	}
	if !slices.Contains(pmf.Rules(), f.budgetRule) || f.budgetRule == "oracle" {
		return nil, fmt.Errorf("-budget-rule must be random, uncertainty or variance, not %q", f.budgetRule)
	}
	if m, err := pmf.New(f.budgetMethod, pmf.DefaultOptions()); err != nil || !isSampler(m) {
		return nil, fmt.Errorf("-budget-method must be pmf, bpmf, ptf or bptf, not %q", f.budgetMethod)
	}
	return &budget{n: f.budgetN, batch: f.budgetBatch, rule: f.budgetRule, method: f.budgetMethod, prior: f.budgetPrior}, nil
}

// applyRun is one apply: its settings, and what its rounds share (one
// round without -budget; under it, one per batch of experiments).
type applyRun struct {
	c       *cli
	f       *applyFlags
	path    string
	planArg []string
	saved   *planFile
	bud     *budget
	noop    *noopApply
	isolate func(nodes.Kind) bool
	opts    engine.Options
	begun   time.Time
}

// round loads, plans and applies the pipeline once; done says whether
// apply ends here, with code.
func (a *applyRun) round(ctx context.Context, round int) (code int, done bool) {
	c, f := a.c, a.f
	view, logOut := newProgressView(c.stderr, c.stderrIsTTY && f.logFmt != "json")
	a.opts.Reporter = view
	s, code := c.load(ctx, sessionOptions{path: a.path, flags: &f.configFlags, withCache: true, engine: a.opts, devicesFlag: f.devices, logOut: logOut,
		sources: sourcesResolve, sourceOpts: f.src, reads: a.noop.readSet()})
	if s == nil {
		return code, true
	}
	view.setLogger(s.log)
	abs, _ := filepath.Abs(a.path)
	runStart := a.begun
	if round > 1 {
		runStart = time.Now()
	}
	s.engine.SetRunInfo(runStart, abs)
	if code := a.setExecutor(s, abs, view); code != exitOK {
		return code, true
	}
	// The cache is held (shared) from the plan on: a plan counts on the
	// entries it found, which a gc between plan and apply would remove.
	unlock, err := s.cache.LockShared(ctx)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitRunFailure, true
	}
	defer unlock()
	start := time.Now()
	s.log.Debug().Dur("took", s.loadTime).Msg("configuration loaded")
	leave := c.interrupts.enter()
	plan, diags := s.engine.Plan(ctx)
	leave()
	s.log.Debug().Dur("took", time.Since(start)).Msg("planned")
	s.view.Diagnostics(append(s.warnings, diags...))
	c.hintIfUnreachable(diags)
	if diags.HasErrors() {
		return exitConfigError, true
	}
	warned := len(s.warnings)+len(diags) > 0
	if code := c.checkDownloads(s); code != exitOK {
		return code, true
	}
	if a.saved != nil {
		if reason := staleReason(a.saved, plan, configHash(s.loader.Files(), f.vars)); reason != "" {
			fmt.Fprintf(c.stderr, "Error: Saved plan is stale\n%s\nRun 'gatepipe plan -out %s' again and apply the new plan.\n", reason, a.planArg[0])
			return exitRunFailure, true
		}
	}
	ch, err := a.choose(ctx, s, round)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe: budget:", err)
		return exitRunFailure, true
	}
	applyStart := time.Now()
	restoreGC := nodeGC(c.env)
	rec, err := s.engine.Apply(ctx)
	restoreGC()
	view.finish()
	s.log.Debug().Dur("took", time.Since(applyStart)).Msg("applied")
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitRunFailure, true
	}
	printSummary(c.stdout, rec, time.Since(start)+s.loadTime, s.cache.Dir(), sources.FindHFCache(c.env, c.env("HOME")))
	last := a.bud == nil || ch.done || rec.Failed() || ctx.Err() != nil || (ch.resolve && rec.Counts["ran"] == 0)
	if !last {
		return 0, false
	}
	return a.finish(ctx, s, rec, warned), true
}

// setExecutor hands the session's engine its spawner (local, isolated
// kinds in their own processes) or its Slurm submitter.
func (a *applyRun) setExecutor(s *session, abs string, view *progressView) int {
	switch a.f.executor {
	case "local":
		if a.isolate != nil {
			sp := &processSpawner{c: a.c, path: abs, flags: &a.f.runFlags, cacheDir: s.cache.Dir(), log: s.log, progress: view, machine: s.machine}
			s.engine.SetSpawner(sp.spawn, a.isolate)
		}
	case "slurm":
		sub, err := newSlurmSubmitter(s.log, abs, &a.f.runFlags, s.cache.Dir())
		if err != nil {
			fmt.Fprintln(a.c.stderr, "gatepipe:", err)
			return exitConfigError
		}
		sub.machine = s.machine
		s.engine.SetSubmitter(sub)
	default:
		fmt.Fprintf(a.c.stderr, "gatepipe: -executor must be local or slurm, not %q\n", a.f.executor)
		return exitConfigError
	}
	return exitOK
}

// choose picks this round's experiments under -budget, holds the rest and
// says so; without -budget it holds nothing.
func (a *applyRun) choose(ctx context.Context, s *session, round int) (choice, error) {
	if a.bud == nil {
		return choice{}, nil
	}
	bud, out := a.bud, a.c.stdout
	ch, err := bud.next(ctx, s.engine.Experiments(), s.log, 0)
	if err != nil {
		return ch, err
	}
	s.engine.SetHold(ch.hold)
	switch {
	case ch.done:
		fmt.Fprintf(out, "Budget round %d: budget spent (%d of %d experiments chosen) or nothing left to choose; pending experiments are held.\n", round, bud.spent, bud.n)
	case ch.resolve:
		fmt.Fprintf(out, "Budget round %d: the pending experiments' cells wait on dependencies; running everything else first.\n", round)
	default:
		fmt.Fprintf(out, "Budget round %d: running %d experiment(s) chosen by %s: %s (%d of %d).\n", round, len(ch.chosen), ch.rule, describe(ch.chosen), bud.spent, bud.n)
	}
	return ch, nil
}

// finish prints the last round's outputs and reports (and remembers them
// for the next unchanged apply), and returns apply's exit code.
func (a *applyRun) finish(ctx context.Context, s *session, rec *engine.RunRecord, warned bool) int {
	c := a.c
	if a.f.executor == "slurm" {
		fmt.Fprintf(c.stdout, "Submitted %d Slurm jobs.\n", rec.Submitted)
	}
	if !rec.Failed() {
		var shown bytes.Buffer
		w := io.MultiWriter(c.stdout, &shown)
		printOutputs(w, s.engine.Outputs())
		printReports(w, s.engine, rec)
		if ctx.Err() == nil {
			s.saveNoop(a.noop, rec, shown.String(), warned)
		}
	}
	if ctx.Err() != nil {
		fmt.Fprintln(c.stderr, "Interrupted: running nodes were cancelled; finished nodes are cached and the next apply resumes from them.")
		return exitRunFailure
	}
	if rec.Failed() {
		for _, n := range rec.Nodes {
			if bug.IsMessage(n.Error) {
				return exitInternal
			}
		}
		return exitRunFailure
	}
	return exitOK
}

// readPlanFile returns the saved plan at path, or nil when path is not a
// plan file.
func readPlanFile(path string) (*planFile, error) {
	info, err := os.Stat(path)
	if err != nil || info.IsDir() || filepath.Ext(path) == ".hcl" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, nil
	}
	var pf planFile
	if err := json.Unmarshal(data, &pf); err != nil || pf.Format == 0 {
		return nil, fmt.Errorf("%s is neither a .hcl file nor a plan saved by 'gatepipe plan -out'", path)
	}
	return &pf, nil
}

func staleReason(saved *planFile, now *engine.Plan, hash string) string {
	if saved.ConfigHash != hash {
		return "The configuration (or a variable file) changed since the plan was saved."
	}
	if len(saved.Instances) != len(now.Instances) {
		return "The set of node instances changed since the plan was saved."
	}
	for i, in := range now.Instances {
		old := saved.Instances[i]
		if old.Addr != in.Addr || old.Status != in.Status || old.ActionID != in.ActionID {
			return fmt.Sprintf("%s was %q and is now %q: the cache changed since the plan was saved.", in.Addr, old.Status, in.Status)
		}
	}
	return ""
}

func printSummary(w io.Writer, rec *engine.RunRecord, took time.Duration, cacheDir string, hfCache sources.HFCache) {
	n := rec.Counts
	total := len(rec.Nodes)
	if n["cached"] == total && total > 0 {
		fmt.Fprintf(w, "All %d node instances were cached; nothing ran (%s).\n", total, formatDuration(took))
	} else {
		fmt.Fprintf(w, "Apply finished in %s: %d ran, %d cached, %d failed, %d skipped", formatDuration(took), n["ran"], n["cached"], n["failed"], n["skipped"])
		if n["held"] > 0 {
			fmt.Fprintf(w, ", %d held by the budget", n["held"])
		}
		if n["not run"] > 0 {
			fmt.Fprintf(w, ", %d not run", n["not run"])
		}
		fmt.Fprintln(w, ".")
	}
	unreachable := 0
	for _, node := range rec.Nodes {
		if node.Status == engine.RunFailed {
			fmt.Fprintf(w, "\nFailed: %s\n%s\n", node.Addr, node.Error)
			if strings.Contains(node.Error, sources.UnreachablePhrase) {
				unreachable++
			}
		}
	}
	if unreachable > 0 {
		fmt.Fprintf(w, "\n%s", noNetworkHint(unreachable, hfCache))
	}
	fmt.Fprintf(w, "Run record: %s\n", filepath.Join(cacheDir, "runs", rec.ID+".json"))
}

// hintIfUnreachable prints the no-network hint once, on stderr, when
// planning failed because sources' hosts could not be reached (pinning a
// source resolves it while planning).
func (c *cli) hintIfUnreachable(diags hcl.Diagnostics) {
	n := 0
	for _, d := range diags {
		if d.Severity == hcl.DiagError && strings.Contains(d.Detail, sources.UnreachablePhrase) {
			n++
		}
	}
	if n > 0 {
		fmt.Fprint(c.stderr, "\n"+noNetworkHint(n, sources.FindHFCache(c.env, c.env("HOME"))))
	}
}

// noNetworkHint is said once after a run in which n nodes failed because a
// source's host could not be reached: the ways to run without a network.
func noNetworkHint(n int, hfCache sources.HFCache) string {
	where := "no Hugging Face cache was found ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)"
	if !hfCache.IsZero() {
		where = "the Hugging Face cache at " + hfCache.Root + " is read in place, pinned files first (offline, unpinned Hub datasets too)"
	}
	return fmt.Sprintf("%d source(s) failed because their host could not be reached: is this machine offline? Without a network:\n"+
		"  - run `gatepipe fetch PATH` where the network is reachable, with the same cache, then `gatepipe apply -offline PATH` here;\n"+
		"  - or `-mirror DIR|URL` (or $GATEPIPE_MIRROR) to a copy of the sources laid out HOST/PATH (SPEC §5.1);\n"+
		"  - %s; HF_HUB_OFFLINE=1 means -offline.\n", n, where)
}

func printOutputs(w io.Writer, outs map[string]cty.Value) {
	if len(outs) == 0 {
		return
	}
	names := make([]string, 0, len(outs))
	for k := range outs {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "\nOutputs:")
	for _, k := range names {
		v := outs[k]
		if !v.IsWhollyKnown() {
			fmt.Fprintf(w, "  %s = (unknown)\n", k)
			continue
		}
		if v.Type() == cty.String {
			if text := v.AsString(); strings.Contains(strings.TrimRight(text, "\n"), "\n") {
				// Multi-line text (a results table) prints as is, indented.
				fmt.Fprintf(w, "  %s =\n", k)
				for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
					fmt.Fprintf(w, "    %s\n", line)
				}
				continue
			}
			fmt.Fprintf(w, "  %s = %q\n", k, v.AsString())
			continue
		}
		data, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "  %s = %s\n", k, data)
	}
}

// printReports prints where each report of the run now lies in the cache
// (the node logs only its work directory, which is moved on success).
func printReports(w io.Writer, e *engine.Engine, rec *engine.RunRecord) {
	for _, n := range rec.Nodes {
		if n.Kind != "report" || (n.Status != engine.RunRan && n.Status != engine.RunCached) {
			continue
		}
		r, err := e.Result(n.Addr)
		if err != nil || r.Manifest == nil || !r.Value.Type().IsObjectType() || !r.Value.Type().HasAttribute("html") {
			continue
		}
		fmt.Fprintf(w, "Report %s: %s\n", n.Addr, r.Value.GetAttr("html").AsString())
	}
}

// isSampler reports whether m samples a posterior (the -budget rules need
// its spread), as the baselines do not.
func isSampler(m pmf.Method) bool {
	_, ok := m.(*pmf.Sampler)
	return ok
}
