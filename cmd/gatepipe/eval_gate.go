package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/engine"
)

// evalAskPast is the estimate past which eval asks before it applies.
const evalAskPast = 24 * time.Hour

// evalEstimate is what eval's plan found before it spent anything.
type evalEstimate struct {
	total time.Duration
	gpus  int
}

// needsApproval says why an eval should not start without a yes: a run
// estimated past a day, or GATE's full protocol on a machine with no GPU
// (hundreds of GPU-hours on CPUs, even when no estimate is known).
func (e evalEstimate) needsApproval(scale string) string {
	switch {
	case e.total > evalAskPast:
		return fmt.Sprintf("this evaluation should take %s or more", roughDuration(e.total))
	case scale == "full" && e.gpus == 0:
		return "-scale full is GATE's whole protocol, and this machine has no GPU"
	}
	return ""
}

// planEval plans the pipeline eval wrote in dir with apply's flags (rest)
// and prints the runtime and time block plan prints, to stderr. ok is
// false when the pipeline does not plan: apply then says why.
func (c *cli) planEval(ctx context.Context, dir string, rest []string) (est evalEstimate, ok bool) {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f applyFlags
	f.register(fs)
	if fs.Parse(rest) != nil {
		return est, false
	}
	opts, err := f.engineOptions(c)
	if err != nil {
		return est, false
	}
	if c.smoke == nil {
		c.smoke = &smokeServer{}
	}
	quiet := &cli{stdout: io.Discard, stderr: io.Discard, env: c.env, smoke: c.smoke}
	s, _ := quiet.load(ctx, sessionOptions{path: dir, flags: &f.configFlags, withCache: true, engine: opts, devicesFlag: f.devices, sources: sourcesPinned, logOut: io.Discard})
	if s == nil {
		return est, false
	}
	plan, diags := s.engine.Plan(ctx)
	if diags.HasErrors() {
		return est, false
	}
	counts := plan.Counts()
	fmt.Fprintf(c.stderr, "gatepipe eval: the plan: %d node instance(s) to run, %d cached.\n", counts[engine.StatusWillRun]+counts[engine.StatusBlocked], counts[engine.StatusCached])
	timed := timePlan(ctx, s.engine.Estimates(), newTimings(ctx, c, s, true))
	printRuntimes(c.stderr, timed)
	printProtocols(c.stderr, timed)
	est.total = printTimes(c.stderr, timed, s.devices, autoReasons(timed), cpuModel())
	est.gpus = len(s.devices.GPUs)
	return est, true
}

// approveEval asks on a terminal whether to go on with an evaluation
// that needs a yes (why); without a terminal it says how to go on, and
// the eval exits before anything runs.
func (c *cli) approveEval(why, dir string) bool {
	if c.stdin == nil || !c.stdinIsTTY {
		fmt.Fprintf(c.stderr, "gatepipe eval: not starting: %s. Nothing ran. Run it with -auto-approve to start anyway, or choose a smaller -scale (cpu, test, or smoke to check the encoder offline first); 'gatepipe plan %s' shows the estimate per node.\n", why, dir)
		return false
	}
	fmt.Fprintf(c.stderr, "gatepipe eval: %s. Start it? [y/N] ", why)
	line, _ := bufio.NewReader(c.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	fmt.Fprintln(c.stderr, "gatepipe eval: not started; nothing ran.")
	return false
}

// printRuntimes says on which runtime and devices the timed nodes run:
// "Runtime: go, 1 CPU (auto) for 8 node(s)".
func printRuntimes(w io.Writer, timed []timedNode) {
	count := map[string]int{}
	var order []string
	for _, n := range timed {
		if n.Runtime == "" {
			continue
		}
		d := describeRuntime(n.Estimate)
		if count[d]++; count[d] == 1 {
			order = append(order, d)
		}
	}
	for _, d := range order {
		fmt.Fprintf(w, "Runtime: %s for %d node(s).\n", d, count[d])
	}
}
