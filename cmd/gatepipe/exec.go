package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/gatepipe/gatepipe/internal/bug"
	"github.com/gatepipe/gatepipe/internal/procattr"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/rs/zerolog"
)

func runExec(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "exec", "exec [flags] PATH ADDRESS\n\nRuns one planned instance in this process and stores its output in the cache;\nits dependencies must be cached already. apply uses it to run nodes in their own\nprocesses, Slurm jobs and exported scripts use it too.")
	var f runFlags
	f.configFlags.register(fs)
	fs.StringVar(&f.devices, "devices", "", "devices this process may use, e.g. cpu:2,gpu:1")
	parentLocked := fs.Bool("parent-holds-lock", false, "the calling apply holds the action's lock (internal)")
	relay := fs.Bool("relay-progress", false, "write the node's progress as JSON lines for the calling apply (internal)")
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
	opts.OneInstance = true
	if *relay {
		opts.Reporter = &progressRelay{w: c.stderr, every: 200 * time.Millisecond}
	}
	s, code := c.load(ctx, sessionOptions{path: pos[0], flags: &f.configFlags, withCache: true, engine: opts, devicesFlag: f.devices, sources: sourcesPinned})
	if s == nil {
		return code
	}
	if _, diags := s.engine.Plan(ctx); diags.HasErrors() {
		s.view.Diagnostics(diags)
		return exitConfigError
	}
	if err := s.engine.ApplyOne(ctx, pos[1], *parentLocked); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe exec:", err)
		if bug.Is(err) {
			return exitInternal
		}
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
	// log receives the child's log lines (the node's own messages:
	// validation metrics, loaded weights...).
	log zerolog.Logger
	// progress receives the child's relayed progress (nil: not asked for).
	progress engine.Reporter
	// machine is what runtime = "auto" saw here; children get it
	// ($GATEPIPE_MACHINE) to resolve auto alike.
	machine *torchrt.Machine
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
	args := []string{"exec", "-cache-dir", p.cacheDir, "-devices", devs, "-parent-holds-lock", "-log-format", "json", "-log-level", p.flags.logLevel}
	if p.progress != nil {
		args = append(args, "-relay-progress")
	}
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
	if p.machine != nil {
		cmd.Env = append(cmd.Env, torchrt.MachineEnv+"="+p.machine.Encode())
	}
	if p.flags.src.mirror == sources.SmokeMirror {
		// The child reads the smoke lock file, as its parent does.
		cmd.Env = append(cmd.Env, "GATEPIPE_MIRROR="+sources.SmokeMirror)
	}
	var stderr strings.Builder
	fw := &logForwarder{log: p.log, other: &stderr}
	if p.progress != nil {
		fw.progress = func(ev progressEvent) { p.progress.NodeProgress(addr, ev.Done, ev.Total, ev.Unit) }
	}
	defer fw.Close()
	cmd.Stderr = fw
	cmd.Stdout = fw
	cmd.SysProcAttr = procattr.Child()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	// A cancelled child ends at its next step, but one step of a large
	// model on a CPU takes long (a Go ResNet-50 at 224 px: 15-20 s on one
	// core, batch 8): past childGrace it is killed. That loses only the
	// step: checkpoints and cache entries are written through a temporary
	// file and a rename, kill -9 safe.
	cmd.WaitDelay = childGrace
	err = cmd.Run()
	fw.Close()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return fmt.Errorf("its process was killed (signal %d, %s)%s", int(ws.Signal()), ws.Signal(), tail(msg))
		}
		return fmt.Errorf("its process failed (%v)%s", err, tail(msg))
	}
	return nil
}

// childGrace is how long a cancelled node's process has to end by itself
// before it is killed.
const childGrace = time.Second

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

// logForwarder re-logs a child's JSON log lines through the parent's
// logger, keeping their level and fields; other output goes to other (for
// error messages).
type logForwarder struct {
	log     zerolog.Logger
	other   io.Writer
	partial []byte
	// progress receives relayed progress lines (nil: they are logged).
	progress func(progressEvent)
}

func (f *logForwarder) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		f.line(f.partial[:i])
		f.partial = f.partial[i+1:]
	}
}

// Close flushes a last unterminated line.
func (f *logForwarder) Close() error {
	if len(f.partial) > 0 {
		f.line(f.partial)
		f.partial = nil
	}
	return nil
}

func (f *logForwarder) line(b []byte) {
	if f.progress != nil && bytes.Contains(b, []byte(progressKey)) {
		var raw map[string]json.RawMessage
		if json.Unmarshal(b, &raw) == nil {
			if ev, ok := parseProgress(raw); ok {
				f.progress(ev)
				return
			}
		}
	}
	var fields map[string]any
	if json.Unmarshal(b, &fields) != nil {
		f.other.Write(append(b, '\n'))
		return
	}
	lvlName, _ := fields[zerolog.LevelFieldName].(string)
	lvl, err := zerolog.ParseLevel(lvlName)
	if err != nil || lvlName == "" {
		f.other.Write(append(b, '\n'))
		return
	}
	msg, _ := fields[zerolog.MessageFieldName].(string)
	if lvl >= zerolog.ErrorLevel {
		f.other.Write(append(b, '\n')) // kept for the failure message too
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		if k != zerolog.LevelFieldName && k != zerolog.MessageFieldName && k != zerolog.TimestampFieldName {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	ev := f.log.WithLevel(lvl)
	for _, k := range keys {
		ev = ev.Interface(k, fields[k])
	}
	ev.Msg(msg)
}
