// Package command implements the `command` block: an external program run
// with templated arguments and environment, cached on its configuration
// and the contents of its declared input files, whose declared output files
// become an artifact other blocks can reference (like a DVC stage).
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/internal/supervise"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/formats/runmeta"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// OutDirSentinel is the value of self.out_dir in configuration; it is
// replaced by the real output directory in arguments and environment.
const OutDirSentinel = "@gatepipe:out@"

// LogFile is the name of the captured stdout+stderr in the output.
const LogFile = "command.log"

// Kind is the command block kind.
type Kind struct{}

// Name returns "command".
func (Kind) Name() string { return "command" }

// Version is bumped when the outputs of an unchanged config would change.
func (Kind) Version() string { return "2" }

var spec = hcldec.ObjectSpec{
	"run":     &hcldec.AttrSpec{Name: "run", Type: cty.List(cty.String), Required: true},
	"env":     &hcldec.AttrSpec{Name: "env", Type: cty.Map(cty.String)},
	"inputs":  &hcldec.AttrSpec{Name: "inputs", Type: cty.List(cty.String)},
	"outputs": &hcldec.AttrSpec{Name: "outputs", Type: cty.Map(cty.String)},
	"dir":     &hcldec.AttrSpec{Name: "dir", Type: cty.String},
	"timeout": &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
	// experiment switches on the external-trainer protocol (trainer.go).
	"experiment": &hcldec.AttrSpec{Name: "experiment", Type: cty.DynamicPseudoType},
}

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType: outputs maps each declared output name to its file path;
// out_dir is the artifact directory; log is the captured output; metrics
// is the trainer's metrics.json ("" without the trainer protocol).
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"outputs": cty.Map(cty.String),
		"out_dir": cty.String,
		"log":     cty.String,
		"metrics": cty.String,
	})
}

type config struct {
	Run     []string          `cty:"run"`
	Env     map[string]string `cty:"env"`
	Inputs  []string          `cty:"inputs"`
	Outputs map[string]string `cty:"outputs"`
	Dir     *string           `cty:"dir"`
	Timeout *string           `cty:"timeout"`
}

// Node is a decoded command block.
type Node struct {
	cfg     config
	dir     string // module directory
	timeout time.Duration
	// experiment is the trainer protocol's config, nil when off.
	experiment any
}

// Decode validates the configuration.
func (Kind) Decode(v cty.Value, decl nodes.Decl) (nodes.Node, hcl.Diagnostics) {
	var cfg config
	exp := v.GetAttr("experiment")
	attrs := v.AsValueMap()
	delete(attrs, "experiment")
	if err := gocty.FromCtyValue(cty.ObjectVal(attrs), &cfg); err != nil {
		return nil, hcl.Diagnostics{decl.Errorf("run", "Invalid command block", "%s", err)}
	}
	var diags hcl.Diagnostics
	if len(cfg.Run) == 0 || cfg.Run[0] == "" {
		diags = append(diags, decl.Errorf("run", "Empty command", "run must list the program and its arguments, as in run = [\"python3\", \"prep.py\"]."))
	}
	for name, p := range cfg.Outputs {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			diags = append(diags, decl.Errorf("outputs", "Invalid output path",
				"Output %q is %q; output paths are relative to the node's output directory (self.out_dir) and must stay inside it.", name, p))
		}
	}
	n := &Node{cfg: cfg, dir: decl.Dir}
	if !exp.IsNull() {
		data, err := ctyjson.Marshal(exp, exp.Type())
		if err == nil {
			err = json.Unmarshal(data, &n.experiment)
		}
		if err != nil {
			diags = append(diags, decl.Errorf("experiment", "Invalid experiment", "experiment must be a JSON-like value: %s.", err))
		}
	}
	if cfg.Timeout != nil {
		d, err := time.ParseDuration(*cfg.Timeout)
		if err != nil || d <= 0 {
			diags = append(diags, decl.Errorf("timeout", "Invalid timeout", "timeout %q is not a positive duration such as \"30m\" or \"2h\".", *cfg.Timeout))
		}
		n.timeout = d
	}
	return n, diags
}

func (n *Node) resolve(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(n.dir, p)
}

// Fingerprint hashes the content of every declared input file.
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	files, err := n.inputFiles(readset.From(ctx))
	if err != nil {
		return err
	}
	for _, f := range files {
		readset.Add(ctx, f.abs)
		sum, size, err := cache.FileSHA256(f.abs)
		if err != nil {
			return fmt.Errorf("input %s: %w", f.rel, err)
		}
		fmt.Fprintf(w, "file %s %d %s\n", f.rel, size, sum)
	}
	return nil
}

type inputFile struct{ rel, abs string }

// hasMeta reports whether a path has glob wildcards.
func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[\\`) }

// inputFiles expands the input patterns, recording in reads what decides
// the matches: the directory a pattern lists, and every directory walked.
// A pattern with wildcards before its last element depends on directories
// no stamp covers, so it marks reads unstable.
func (n *Node) inputFiles(reads *readset.Set) ([]inputFile, error) {
	var out []inputFile
	seen := map[string]bool{}
	for _, pat := range n.cfg.Inputs {
		abs := n.resolve(pat)
		if dir := filepath.Dir(abs); hasMeta(dir) {
			reads.Unstable(fmt.Sprintf("input pattern %q has wildcards in its directories", pat))
		} else if hasMeta(filepath.Base(abs)) {
			reads.Add(dir)
		}
		matches, err := filepath.Glob(abs)
		if err != nil {
			return nil, fmt.Errorf("input pattern %q: %w", pat, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("input pattern %q matches no file (relative to %s)", pat, n.dir)
		}
		sort.Strings(matches)
		for _, m := range matches {
			info, err := os.Stat(m)
			if err != nil {
				return nil, err
			}
			if info.IsDir() {
				err := filepath.Walk(m, func(p string, fi os.FileInfo, err error) error {
					if err == nil && fi.IsDir() {
						reads.Add(p)
					}
					if err == nil && fi.Mode().IsRegular() && !seen[p] {
						seen[p] = true
						rel, _ := filepath.Rel(n.dir, p)
						out = append(out, inputFile{rel: filepath.ToSlash(rel), abs: p})
					}
					return err
				})
				if err != nil {
					return nil, err
				}
				continue
			}
			if !info.Mode().IsRegular() {
				// A device or FIFO would be hashed forever or block the plan.
				return nil, fmt.Errorf("input %q: %s is not a regular file (%s); inputs are hashed whole, so each must be a file with an end", pat, m, info.Mode().Type())
			}
			if !seen[m] {
				seen[m] = true
				rel, _ := filepath.Rel(n.dir, m)
				out = append(out, inputFile{rel: filepath.ToSlash(rel), abs: m})
			}
		}
	}
	return out, nil
}

// Run executes the program with its output directory substituted.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	if n.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.timeout)
		defer cancel()
	}
	sub := func(s string) string { return strings.ReplaceAll(s, OutDirSentinel, env.OutDir) }
	args := make([]string, len(n.cfg.Run))
	for i, a := range n.cfg.Run {
		args[i] = sub(a)
	}
	logPath := filepath.Join(env.OutDir, LogFile)
	logFile, err := os.Create(logPath)
	if err != nil {
		return cty.NilVal, err
	}
	defer logFile.Close()
	tail := &tailBuffer{max: 4096}
	out := &logWriter{file: logFile, tail: tail}

	cmd := n.command(ctx, env, args, out)
	if n.experiment != nil {
		p, err := writeExperiment(env, env.OutDir, n.experiment)
		if err != nil {
			return cty.NilVal, err
		}
		fctx, stop := context.WithCancel(ctx)
		followed := make(chan struct{})
		go followLog(fctx, env, env.OutDir, followed)
		defer func() { stop(); <-followed }()
		env.Log.Debug().Str("experiment", p).Msg("trainer protocol")
	}
	supervised(cmd)

	env.Log.Debug().Strs("args", args).Msg("running command")
	started := time.Now()
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return cty.NilVal, fmt.Errorf("command %q stopped: %w", args[0], ctx.Err())
		}
		return cty.NilVal, fmt.Errorf("command %q failed: %v%s%s\n%s", args[0], err, out.fileError(), lastWords(tail.String()), indent(tail.String()))
	}
	if out.err != nil {
		return cty.NilVal, fmt.Errorf("command %q ran, but its log could not be written%s", args[0], out.fileError())
	}
	outVal, err := n.declaredOutputs(env)
	if err != nil {
		return cty.NilVal, err
	}
	metrics := ""
	if n.experiment != nil {
		metrics = filepath.Join(env.OutDir, MetricsFile)
		if _, err := ReadMetrics(metrics); err != nil {
			return cty.NilVal, fmt.Errorf("trainer finished without valid %s (see the protocol in SPEC.md): %w", MetricsFile, err)
		}
		info := runmeta.Info{Started: started.UTC(), Seconds: time.Since(started).Seconds(), Seed: experimentSeed(n.experiment)}
		if err := WriteRunInfo(env, info); err != nil {
			return cty.NilVal, err
		}
	}
	return cty.ObjectVal(map[string]cty.Value{
		"outputs": outVal,
		"out_dir": cty.StringVal(env.OutDir),
		"log":     cty.StringVal(logPath),
		"metrics": cty.StringVal(metrics),
	}), nil
}

// command is the program to run, args, in its directory (the block's
// dir, else the module's, else for a module embedded in the binary its
// output directory), with gatepipe's variables and the block's env, its
// output to out.
func (n *Node) command(ctx context.Context, env *nodes.Env, args []string, out io.Writer) *exec.Cmd {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = n.dir
	if _, ok := nodes.StdlibPath(n.dir); ok {
		// A module embedded in the binary has no directory on disk: its
		// commands run in their output directory (their scripts come in
		// through file()).
		cmd.Dir = env.OutDir
	}
	if n.cfg.Dir != nil {
		cmd.Dir = n.resolve(*n.cfg.Dir)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = processEnv(env, env.OutDir)
	keys := make([]string, 0, len(n.cfg.Env))
	for k := range n.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmd.Env = append(cmd.Env, k+"="+strings.ReplaceAll(n.cfg.Env[k], OutDirSentinel, env.OutDir))
	}
	return cmd
}

// declaredOutputs is the block's outputs value: each declared output's
// path, which the command must have written.
func (n *Node) declaredOutputs(env *nodes.Env) (cty.Value, error) {
	outs := map[string]cty.Value{}
	for name, rel := range n.cfg.Outputs {
		p := filepath.Join(env.OutDir, rel)
		if _, err := os.Stat(p); err != nil {
			return cty.NilVal, fmt.Errorf("command finished but did not write its declared output %q (%s); write it under $GATEPIPE_OUT_DIR", name, rel)
		}
		outs[name] = cty.StringVal(p)
	}
	if len(outs) == 0 {
		return cty.MapValEmpty(cty.String), nil
	}
	return cty.MapVal(outs), nil
}

// processEnv is the environment of a program a node runs: gatepipe's
// variables (its output directory, node, experiment file in dir, CPU
// share) and the assigned GPUs.
func processEnv(env *nodes.Env, dir string) []string {
	vars := append(os.Environ(), "GATEPIPE_OUT_DIR="+dir, "GATEPIPE_NODE="+env.Addr.String(),
		"GATEPIPE_EXPERIMENT="+filepath.Join(dir, ExperimentFile),
		fmt.Sprintf("GATEPIPE_CPUS=%d", env.Devices.CPUs), fmt.Sprintf("OMP_NUM_THREADS=%d", env.Devices.CPUs))
	if len(env.Devices.GPUs) > 0 {
		vars = append(vars, "CUDA_VISIBLE_DEVICES="+strings.Join(env.Devices.GPUs, ","))
	}
	return vars
}

// supervised runs cmd under a supervisor in its own process group, so
// that cancelling reaches the program's children, and a killed gatepipe
// takes every process the program started with it.
func supervised(cmd *exec.Cmd) {
	supervise.Wrap(cmd)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
}

// RunWorker runs args as a program speaking the trainer protocol for
// config: experiment.json and log.jsonl in dir (progress and messages
// streamed to env), its output appended to logFile, the node's devices in
// its environment, and its process group stopped when ctx ends. A failure
// is one error whose first line is the program's last words, followed by
// the tail of its output. extraEnv (NAME=value) is added to its
// environment.
func RunWorker(ctx context.Context, env *nodes.Env, dir string, args []string, config any, logFile io.Writer, extraEnv ...string) error {
	if _, err := writeExperiment(env, dir, config); err != nil {
		return err
	}
	tail := &tailBuffer{max: 4096}
	out := &logWriter{file: logFile, tail: tail}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.Env = dir, out, out, append(processEnv(env, dir), extraEnv...)
	supervised(cmd)
	fctx, stop := context.WithCancel(ctx)
	followed := make(chan struct{})
	go followLog(fctx, env, dir, followed)
	err := cmd.Run()
	stop()
	<-followed
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s stopped: %w", args[0], ctx.Err())
		}
		return fmt.Errorf("%s failed: %v%s\n%s", args[0], err, lastWords(tail.String()), indent(tail.String()))
	}
	return nil
}

// logWriter copies a command's output to its log file and its tail. A
// failing log file (a full disk) neither stops the copy, which would kill
// the command with SIGPIPE, nor loses the tail, which then holds the
// command's own account of the failure.
type logWriter struct {
	file io.Writer
	tail *tailBuffer
	err  error
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.tail.Write(p)
	if w.err == nil {
		if _, err := w.file.Write(p); err != nil {
			w.err = err
		}
	}
	return len(p), nil
}

func (w *logWriter) fileError() string {
	if w.err == nil {
		return ""
	}
	return fmt.Sprintf(" (and writing its log failed: %v)", w.err)
}

// tailBuffer keeps the last max bytes written, for error messages.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.buf.String() }

// lastWords is the last non-empty line of a command's output, as ": LINE"
// (at most 400 bytes), for the first line of its error: a Python
// trainer's SystemExit or a traceback's exception says why it failed.
func lastWords(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return ""
	}
	if len(last) > 400 {
		last = last[:400] + "…"
	}
	return ": " + last
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "  (no output)"
	}
	return "  | " + strings.ReplaceAll(s, "\n", "\n  | ")
}

// ExperimentCell: a command with experiment = { model = ..., benchmark =
// ... } evaluates that cell.
// A command whose experiment attribute is known to be null is not one.
func (Kind) ExperimentCell(config cty.Value) (string, string, bool, bool) {
	if config != cty.NilVal && config.IsKnown() && !config.IsNull() && config.Type().IsObjectType() && config.Type().HasAttribute("experiment") {
		if e := config.GetAttr("experiment"); e.IsKnown() && e.IsNull() {
			return "", "", false, false
		}
	}
	model, ok1 := nodes.KnownString(config, "experiment", "model")
	bench, ok2 := nodes.KnownString(config, "experiment", "benchmark")
	return model, bench, ok1 && ok2, true
}
