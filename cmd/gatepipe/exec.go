package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/gatepipe/gatepipe/nodes"
)

func runExec(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "exec", "exec [flags] PATH ADDRESS\n\nRuns one planned instance in this process and stores its output in the cache;\nits dependencies must be cached already. apply uses it to run nodes in their own\nprocesses, Slurm jobs and exported scripts use it too.")
	var f runFlags
	f.configFlags.register(fs)
	fs.StringVar(&f.devices, "devices", "", "devices this process may use, e.g. cpu:2,gpu:1")
	parentLocked := fs.Bool("parent-holds-lock", false, "the calling apply holds the action's lock (internal)")
	fs.Var(&f.replace, "replace", "run even if cached")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		fmt.Fprintln(c.stderr, "gatepipe exec: want PATH and ADDRESS")
		return exitConfigError
	}
	opts, err := f.engineOptions(c)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe exec:", err)
		return exitConfigError
	}
	s, code := c.load(ctx, sessionOptions{path: pos[0], flags: &f.configFlags, withCache: true, engine: opts, devicesFlag: f.devices})
	if s == nil {
		return code
	}
	if _, diags := s.engine.Plan(ctx); diags.HasErrors() {
		s.view.Diagnostics(diags)
		return exitConfigError
	}
	if err := s.engine.ApplyOne(ctx, pos[1], *parentLocked); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe exec:", err)
		return exitRunFailure
	}
	return exitOK
}

// processSpawner runs instances as `gatepipe exec` children with the
// same configuration and the node's devices.
type processSpawner struct {
	c        *cli
	path     string
	flags    *runFlags
	cacheDir string
}

func (p *processSpawner) spawn(ctx context.Context, addr string, dev nodes.Assignment) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	devs := "cpu:" + strconv.Itoa(max(dev.CPUs, 1))
	for _, g := range dev.GPUs {
		devs += ",gpu:" + g
	}
	args := []string{"exec", "-cache-dir", p.cacheDir, "-devices", devs, "-parent-holds-lock", "-log-format", "json", "-log-level", "warn"}
	for _, v := range p.flags.vars {
		args = append(args, "-var", v)
	}
	for _, v := range p.flags.varFiles {
		args = append(args, "-var-file", v)
	}
	for _, r := range p.flags.replace {
		args = append(args, "-replace", r)
	}
	args = append(args, p.path, addr)
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(max(dev.CPUs, 1)), "OMP_NUM_THREADS="+strconv.Itoa(max(dev.CPUs, 1)))
	if len(dev.GPUs) > 0 {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+strings.Join(dev.GPUs, ","))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("its process was killed (signal %d, %s)%s", int(ws.Signal()), ws.Signal(), tail(msg))
		}
		return fmt.Errorf("its process failed (%v)%s", err, tail(msg))
	}
	return nil
}

func tail(s string) string {
	if s == "" {
		return ""
	}
	if len(s) > 2000 {
		s = "..." + s[len(s)-2000:]
	}
	return ":\n" + s
}

// isolation returns the Isolate policy for -isolation.
func isolation(mode string) (func(nodes.Kind) bool, error) {
	switch mode {
	case "auto":
		return func(k nodes.Kind) bool {
			i, ok := k.(nodes.Isolated)
			return ok && i.IsolatedProcess()
		}, nil
	case "process":
		return func(nodes.Kind) bool { return true }, nil
	case "none":
		return nil, nil
	}
	return nil, fmt.Errorf("-isolation must be auto, process or none, not %q", mode)
}
