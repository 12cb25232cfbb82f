// Command gatepipe evaluates model encoders the way the GATE benchmark
// does: it reads HCL pipelines of datasets, commands, training runs and
// EEVEE searches, plans what is not cached, and runs it in parallel.
//
// Each verb lives in its own file and stays thin: parse flags into a
// struct, call the engine, render the result, pick an exit code.
package main

import (
	"context"
	"fmt"
	"github.com/gatepipe/gatepipe/internal/bug"
	"github.com/gatepipe/gatepipe/sources"
	"golang.org/x/term"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"
)

// Exit codes.
const (
	exitOK          = 0
	exitRunFailure  = 1
	exitConfigError = 2
	// exitInternal is a bug in gatepipe (a recovered panic), never the
	// user's configuration or data.
	exitInternal = 3
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) int
}

func commands() []command {
	return []command{
		{"validate", "Check a pipeline's configuration without touching the cache", runValidate},
		{"plan", "Show what apply would run, reuse or wait for", runPlan},
		{"apply", "Run everything that is not cached yet", runApply},
		{"eval", "Evaluate one encoder on a GATE tier in one line (writes the pipeline, then applies it)", runEval},
		{"fetch", "Download and pin every remote source, for a later apply -offline", runFetch},
		{"lock", "Pin every remote source again and rewrite " + sources.LockFileName, runLock},
		{"mirror", "Write a mirror directory of every remote file the pipeline pins, for -mirror", runMirror},
		{"graph", "Print the dependency graph in Graphviz DOT format", runGraph},
		{"show", "Show one node's cached result: value, files, metrics, log tail", runShow},
		{"open", "Print the path of the report (or of a node's output) to open", runOpen},
		{"fmt", "Rewrite .hcl files in canonical style", runFmt},
		{"cache", "Inspect and trim the cache (ls, du, verify, gc)", runCache},
		{"runs", "List the run records of earlier applies", runRuns},
		{"devices", "List the CPUs and GPUs apply schedules on", runDevices},
		{"export", "Write the plan as shell, Slurm or JSON without running it", runExport},
		{"exec", "Run one planned instance (used by apply's process isolation and Slurm)", runExec},
		{"report", "Write tables, figures and an HTML report for a results matrix", runReport},
		{"eevee", "EEVEE tools: check-published scores the paper's published subsets; loo validates a tier's predictions leaving one model out", runEEVEE},
		{"pmf", "performance prediction: eval (masked-ratio protocol), active (active-evaluation simulation)", runPMF},
		{"version", "Print the gatepipe version", runVersion},
	}
}

// cli carries the process's streams, so tests can run verbs in-process.
type cli struct {
	stdout, stderr io.Writer
	stderrIsTTY    bool
	env            func(string) string
	// interrupts, when set, ends the process at once on a signal while
	// the command loads or plans (nil in-process, in tests).
	interrupts *interrupts
	// stdin answers questions (eval's "Start it?") where stdinIsTTY.
	stdin      io.Reader
	stdinIsTTY bool
	// smoke is the fixture server of -mirror smoke, started once (nil
	// until then).
	smoke *smokeServer
	// started is when the process began (zero in tests that run the
	// command in-process): a run record's duration counts from it.
	started time.Time
}

// gcPercent trades memory for speed: planning allocates many short-lived
// values, and a pipeline's working set is small next to today's memory.
// Not for `exec`, which runs one node's numeric work (training allocates
// large transient tensors, so Go's default keeps the peak down). GOGC in
// the environment still wins.
const gcPercent = 400

// nodeGC sets Go's default collector percent while nodes run in this
// process (dataset stores above all: decoding churns far more than it
// keeps, and at gcPercent the heap grew to five times what was live,
// 309 MB for a 24,000-image store against 156 MB) and returns what
// restores planning's. GOGC in the environment still wins.
func nodeGC(env func(string) string) func() {
	if env("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(100)
	return func() { debug.SetGCPercent(old) }
}

func main() {
	started := time.Now()
	if os.Getenv("GOGC") == "" && (len(os.Args) < 2 || os.Args[1] != "exec") {
		debug.SetGCPercent(gcPercent)
	}
	// GATEPIPE_CPUPROFILE=FILE writes a CPU profile of the whole command
	// (for performance work; see 'go tool pprof').
	// os.Exit skips deferred calls, so the profile is stopped explicitly.
	var profile *os.File
	if p := os.Getenv("GATEPIPE_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil && pprof.StartCPUProfile(f) == nil {
			profile = f
		}
	}
	var stopProfile sync.Once
	stopCPUProfile := func() {
		stopProfile.Do(func() {
			if profile != nil {
				pprof.StopCPUProfile()
				profile.Close()
			}
		})
	}
	// The first signal cancels work gracefully, or, while the command
	// loads or plans, ends the process at once (see interrupts).
	ctx, intr := watchInterrupts(os.Stderr, func(code int) { stopCPUProfile(); os.Exit(code) })
	c := &cli{stdout: os.Stdout, stderr: os.Stderr, stderrIsTTY: isTerminal(os.Stderr), env: os.Getenv, stdin: os.Stdin, stdinIsTTY: isTerminal(os.Stdin), interrupts: intr, started: started}
	code := c.main(ctx, os.Args[1:])
	stopCPUProfile()
	// GATEPIPE_MEMPROFILE=FILE writes the allocations' profile at the end
	// to FILE.PID, one a process (nodes in worker processes write theirs;
	// 'go tool pprof -sample_index=alloc_space' finds what allocated most).
	if p := os.Getenv("GATEPIPE_MEMPROFILE"); p != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", p, os.Getpid())); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	os.Exit(code)
}

func (c *cli) main(ctx context.Context, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(c.stderr, "gatepipe: %s: panic: %v\n%s", bug.Marker, r, debug.Stack())
			code = exitInternal
		}
	}()
	if len(args) == 0 || isHelp(args[0]) {
		c.usage(c.stdout)
		if len(args) == 0 {
			return exitConfigError
		}
		return exitOK
	}
	if args[0] == "-v" || args[0] == "--version" {
		args[0] = "version"
	}
	for _, cmd := range commands() {
		if cmd.name == args[0] {
			return cmd.run(ctx, c, args[1:])
		}
	}
	var names []string
	for _, cmd := range commands() {
		names = append(names, cmd.name)
	}
	fmt.Fprintf(c.stderr, "gatepipe: unknown command %q.%s\nRun 'gatepipe --help' for the list of commands.\n", args[0], didYouMean(args[0], names))
	return exitConfigError
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprint(w, `gatepipe runs GATE-style model evaluation pipelines written in HCL.

Usage: gatepipe <command> [flags] [PATH]

PATH is a directory of *.hcl files or a single .hcl file (default ".").

Commands:
`)
	for _, cmd := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, `
Run 'gatepipe <command> --help' for a command's flags.
Exit codes: 0 success, 1 a node failed, 2 configuration or usage error,
3 internal error (a bug in gatepipe: please report it).
The language and every flag are documented in SPEC.md.
`)
}

// isTerminal reports whether f is a terminal: /dev/null and other
// character devices are not, so `apply > /dev/null 2>&1` gets plain log
// lines, not progress bars.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
