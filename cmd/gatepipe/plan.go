package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/hashicorp/hcl/v2"
)

// runFlags are shared by plan and apply.
type runFlags struct {
	configFlags
	replace     stringList
	parallelism int
	devices     string
	gpuShare    int
	failFast    bool
	debugHash   bool
	// src: mirror and offline (apply only; child processes read the lock).
	src sourceFlags
}

func (f *runFlags) engineOptions(c *cli) (engine.Options, error) {
	opts := engine.Options{Parallelism: f.parallelism, FailFast: f.failFast}
	opts.Devices.GPUShare = f.gpuShare
	for _, r := range f.replace {
		a, err := addrs.ParseInstance(r)
		if err != nil {
			return opts, fmt.Errorf("-replace: %w", err)
		}
		opts.Replace = append(opts.Replace, a)
	}
	if f.debugHash {
		opts.DebugHash = c.stderr
	}
	return opts, nil
}

// planFile is what `plan -out` saves and `apply FILE` runs.
type planFile struct {
	Format     int                      `json:"gatepipe_plan"`
	Path       string                   `json:"path"`
	Vars       []string                 `json:"vars,omitempty"`
	VarFiles   []string                 `json:"var_files,omitempty"`
	CacheDir   string                   `json:"cache_dir"`
	ConfigHash string                   `json:"config_hash"`
	Instances  []engine.PlannedInstance `json:"instances"`
	Replace    []string                 `json:"replace,omitempty"`
}

func runPlan(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "plan", "plan [flags] [PATH]\n\nShows every node instance and whether apply will find it cached, run it, or\nwait on upstream nodes that will run (blocked); for train and features nodes,\nthe runtime and devices each gets (runtime \"auto\": the torch runtime on a GPU\nwhere there is one, else Go) and how long it should take, from timings of its\nmodel on this machine (taken once, kept in the cache), with the whole apply's\ntime; then the downloads (sizes of sources not pinned yet asked of their\nservers), the stores' sizes and the cache disk's peak. With -out, saves the plan for\n'gatepipe apply FILE', which refuses it if the configuration or cache changed.")
	var f runFlags
	f.configFlags.register(fs)
	var out string
	fs.StringVar(&out, "out", "", "save the plan to this file for a later 'apply FILE'")
	fs.Var(&f.replace, "replace", "plan to run this instance even if cached, e.g. -replace='train.x[\"cnn\"]' (repeatable)")
	fs.BoolVar(&f.debugHash, "debug-hash", false, "print every input hashed into action IDs to stderr")
	fs.StringVar(&f.devices, "devices", "", "device slots to plan for, as apply's -devices (default: the gatepipe block's devices, else what this machine has)")
	timing := fs.Bool("timing", true, "time, once per machine, the models that have no timing here yet, so that every train and features node gets an estimate (false: print what is already timed, unknown otherwise)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	path, ok := pathArg(pos, c.stderr)
	if !ok {
		return exitConfigError
	}
	opts, err := f.engineOptions(c)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitConfigError
	}
	s, code := c.load(ctx, sessionOptions{path: path, flags: &f.configFlags, withCache: true, engine: opts, devicesFlag: f.devices, sources: sourcesPinned})
	if s == nil {
		return code
	}
	leave := c.interrupts.enter()
	plan, diags := s.engine.Plan(ctx)
	leave()
	s.view.Diagnostics(append(s.warnings, diags...))
	c.hintIfUnreachable(diags)
	if diags.HasErrors() {
		return exitConfigError
	}
	timed := timePlan(ctx, s.engine.Estimates(), newTimings(ctx, c, s, *timing))
	printPlan(c.stdout, plan, annotations(timed))
	printProtocols(c.stdout, timed)
	printTimes(c.stdout, timed, s.devices, autoReasons(timed), cpuModel())
	dls := s.engine.Downloads()
	listings := listUnpinned(ctx, s.engine.Options().Sources, dls)
	printDownloads(c.stdout, s, listings)
	stores := s.engine.Stores()
	printStores(c.stdout, stores)
	planDisk(dls, listings, stores, s.engine.LocalCopies()).print(c.stdout, s.cache.Dir())
	if out != "" {
		abs, _ := filepath.Abs(path)
		pf := planFile{Format: 1, Path: abs, Vars: f.vars, VarFiles: absAll(f.varFiles), CacheDir: s.cache.Dir(),
			ConfigHash: configHash(s.loader.Files(), f.vars), Instances: plan.Instances, Replace: f.replace}
		data, _ := json.MarshalIndent(pf, "", "  ")
		if err := os.WriteFile(out, data, 0o666); err != nil {
			fmt.Fprintln(c.stderr, "gatepipe: saving plan:", err)
			return exitRunFailure
		}
		fmt.Fprintf(c.stdout, "\nSaved the plan to %s. Run it with: gatepipe apply %s\n", out, out)
	}
	return exitOK
}

// printProtocols prints each train node's protocol card in words, the
// nodes that share one card on one line.
func printProtocols(w io.Writer, timed []timedNode) {
	var cards []string
	nodesOf := map[string][]string{}
	for _, n := range timed {
		if n.Protocol == "" {
			continue
		}
		if _, ok := nodesOf[n.Protocol]; !ok {
			cards = append(cards, n.Protocol)
		}
		nodesOf[n.Protocol] = append(nodesOf[n.Protocol], n.Addr)
	}
	if len(cards) == 0 {
		return
	}
	fmt.Fprintf(w, "\nProtocol: GATE's adapters (stdlib/data/gate_protocol.json; export -format json gives each node's card):\n")
	for _, c := range cards {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(nodesOf[c], ", "), c)
	}
}

// autoReasons are the reasons runtime = "auto" gave, when some instance
// left its runtime to it.
func autoReasons(timed []timedNode) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range timed {
		if n.Auto != nil && !seen[n.Auto.Why] {
			seen[n.Auto.Why] = true
			out = append(out, n.Auto.Why)
		}
	}
	return out
}

// printPlan prints every instance's status; notes, by address, follow an
// instance's line (its runtime and time).
func printPlan(w io.Writer, plan *engine.Plan, notes map[string]string) {
	counts := plan.Counts()
	fmt.Fprintf(w, "Plan: %d to run, %d blocked, %d cached (%d instances)\n\n",
		counts[engine.StatusWillRun], counts[engine.StatusBlocked], counts[engine.StatusCached], len(plan.Instances))
	for _, in := range plan.Instances {
		mark := map[engine.PlanStatus]string{engine.StatusCached: "  cached  ", engine.StatusWillRun: "+ will run", engine.StatusBlocked: "~ blocked "}[in.Status]
		line := fmt.Sprintf("%s  %s", mark, in.Addr)
		if in.Replace {
			line += "  (replace)"
		}
		if note := notes[in.Addr]; note != "" {
			line += "  " + note
		}
		if in.Reason != "" {
			line += "  (" + in.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	if counts[engine.StatusWillRun]+counts[engine.StatusBlocked] == 0 {
		fmt.Fprintln(w, "\nEverything is cached: apply will run nothing.")
	}
}

// configHash covers every loaded file (pipeline, modules, var files) and
// the -var values, so a saved plan notices any edit.
func configHash(files map[string]*hcl.File, vars []string) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "file %q %d\n", n, len(files[n].Bytes))
		h.Write(files[n].Bytes)
	}
	fmt.Fprintf(h, "vars %q\n", strings.Join(vars, "\x00"))
	return hex.EncodeToString(h.Sum(nil))
}

func absAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i], _ = filepath.Abs(p)
	}
	return out
}

// printStores says, for each dataset that will run, how large its store
// will be and how much memory the node expects at its peak.
func printStores(w io.Writer, stores []engine.Store) {
	var total int64
	shown := 0
	for _, st := range stores {
		e := st.Estimate
		if e.Shape == nil && !e.Known {
			continue
		}
		if shown == 0 {
			fmt.Fprintln(w, "\nStores to write:")
		}
		shown++
		per := int64(1)
		for _, d := range e.Shape {
			per *= int64(d)
		}
		shape := fmt.Sprint(e.Shape)
		if e.Shape == nil {
			shape = "(shape known when read)"
		}
		if !e.Known {
			fmt.Fprintf(w, "  %s  %s %s examples of %s each; how many is %s\n", st.Addr, shape, e.DType, humanBytes(per), e.Basis)
			continue
		}
		total += e.Bytes
		fmt.Fprintf(w, "  %s  %s examples of %s %s: %s on disk, about %s of memory at the peak\n",
			st.Addr, groupDigits(e.Examples), shape, e.DType, humanBytes(e.Bytes), humanBytes(e.PeakMemory))
	}
	if shown > 1 && total > 0 {
		fmt.Fprintf(w, "  in all: %s of stores (lower image_size, or max_train and friends, to shrink them)\n", humanBytes(total))
	}
}

// groupDigits writes n with thousands separators (1,281,167).
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
