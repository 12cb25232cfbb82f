package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/all"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/stdlib"
	"github.com/hashicorp/hcl/v2"
	"github.com/rs/zerolog"
)

// session is a loaded pipeline ready to plan or apply.
type session struct {
	loader   *pipelines.Loader
	module   *pipelines.Module
	engine   *engine.Engine
	cache    *cache.Cache
	log      zerolog.Logger
	view     diagView
	warnings hcl.Diagnostics
	// loadTime is how long parsing and graph building took.
	loadTime time.Duration
	// keepRuns is how many run records apply keeps.
	keepRuns int
	// machine answers runtime = "auto" (engine.Options.Defaults);
	// devices are the slots apply schedules on.
	machine *torchrt.Machine
	devices engine.Devices
}

type sessionOptions struct {
	path      string
	flags     *configFlags
	withCache bool
	engine    engine.Options
	// devicesFlag and parallelism override the settings block.
	devicesFlag string
	// logOut, when set, receives log output instead of stderr.
	logOut io.Writer
	// sources says how remote sources are resolved: sourcesNone (no
	// resolver: declared checksums only), sourcesPinned (the lock file, no
	// network), sourcesResolve (pin what is not pinned yet: apply, fetch).
	sources    sourcesMode
	sourceOpts sourceFlags
	// reads, when set, records the files the plan reads (no-op records).
	reads *readset.Set
}

type sourcesMode int

const (
	sourcesNone sourcesMode = iota
	sourcesPinned
	sourcesResolve
)

// sourceFlags are the flags of the verbs that download.
type sourceFlags struct {
	mirror  string
	offline bool
}

func (f *sourceFlags) register(fs *flag.FlagSet, offline bool) {
	fs.StringVar(&f.mirror, "mirror", "", "fetch remote sources from this directory or HTTP server, laid out HOST/PATH (default: $GATEPIPE_MIRROR, then the gatepipe block's mirror)")
	if offline {
		fs.BoolVar(&f.offline, "offline", false, "never touch the network: every source must be pinned in "+sources.LockFileName+" (or, for a Hub dataset, be in the Hugging Face cache) and its files in the cache (run 'gatepipe fetch' first); also $GATEPIPE_OFFLINE=1 or $HF_HUB_OFFLINE=1")
	}
}

func (c *cli) newLogger(flags *configFlags, out io.Writer) zerolog.Logger {
	if out == nil {
		out = c.stderr
	}
	level, err := zerolog.ParseLevel(flags.logLevel)
	if err != nil || flags.logLevel == "" {
		level = zerolog.InfoLevel
	}
	if flags.logFmt == "json" {
		return zerolog.New(out).Level(level).With().Timestamp().Logger()
	}
	w := zerolog.ConsoleWriter{Out: out, NoColor: !c.stderrIsTTY, TimeFormat: "15:04:05"}
	return zerolog.New(w).Level(level).With().Timestamp().Logger()
}

// load parses the configuration, opens the cache and builds the engine.
// On failure it has already printed diagnostics and returns the exit code.
func (c *cli) load(ctx context.Context, o sessionOptions) (*session, int) {
	defer c.interrupts.enter()()
	started := time.Now()
	reg := all.Registry()
	s := &session{loader: pipelines.NewLoader(stdlib.FS(), reg.Names()), log: c.newLogger(o.flags, o.logOut)}
	s.loader.RecordReads(o.reads)
	fail := func(diags hcl.Diagnostics) (*session, int) {
		s.view = newDiagView(o.flags.logFmt, c.stderr, s.loader.Files())
		s.view.Diagnostics(diags)
		return nil, exitConfigError
	}
	if err := o.flags.check(); err != nil {
		fmt.Fprintf(c.stderr, "gatepipe: %v\n", err)
		return nil, exitConfigError
	}
	mod, diags := s.loader.LoadConfig(o.path)
	if diags.HasErrors() {
		return fail(diags)
	}
	s.warnings = diags
	s.module = mod
	given, err := o.flags.varValues(s.loader)
	if err != nil {
		return fail(asDiags(err))
	}
	vals, diags := pipelines.RootVariableValues(mod.Pipeline, given)
	if diags.HasErrors() {
		return fail(diags)
	}
	settings := mod.Pipeline.Settings
	if settings == nil {
		settings = &pipelines.Settings{}
	}
	if o.withCache {
		dir := c.cacheDir(o.flags.cacheDir, settings, mod.Pipeline.Dir)
		cc, err := c.openCache(dir)
		if err != nil {
			return fail(cacheOpenDiags(dir, err))
		}
		s.cache = cc
	}
	opts := o.engine
	opts.Version = version
	devs, note, diags := c.sessionDevices(ctx, o, settings, opts.Devices.GPUShare)
	if diags.HasErrors() {
		return fail(diags)
	}
	opts.Devices, s.devices = devs, devs
	s.machine, err = c.machine(devs, note)
	if err != nil {
		return fail(asDiags(err))
	}
	opts.Defaults = nodes.Defaults{Runtime: settings.Runtime, Python: settings.Python, Machine: s.machine}
	if s.cache != nil {
		opts.ExpectedDurations = expectedDurations(s.cache)
	}
	if o.sources != sourcesNone && s.cache != nil {
		r, diags := c.newResolver(o, settings, mod.Pipeline.Dir, s.cache, s.log)
		if diags.HasErrors() {
			return fail(diags)
		}
		opts.Sources = r
	}
	if opts.Parallelism == 0 {
		opts.Parallelism = settings.Parallelism
	}
	if opts.KeepRuns, err = keepRuns(settings); err != nil {
		return fail(asDiags(err))
	}
	s.keepRuns = opts.KeepRuns
	opts.Reads = o.reads
	e, diags := engine.New(reg, stdlib.FS(), s.cache, mod, vals, s.log, opts)
	if diags.HasErrors() {
		return fail(diags)
	}
	s.engine = e
	s.loadTime = time.Since(started)
	s.view = newDiagView(o.flags.logFmt, c.stderr, s.loader.Files())
	return s, exitOK
}

// sessionDevices returns the device slots: -devices, else the gatepipe
// block's devices, else (with a cache, to run) what the machine has; with
// the GPU share of -gpu-share (share), $GATEPIPE_GPU_SHARE or the block.
// note is what discovery said when it ran.
func (c *cli) sessionDevices(ctx context.Context, o sessionOptions, settings *pipelines.Settings, share int) (out engine.Devices, note string, _ hcl.Diagnostics) {
	devs := settings.Devices
	if o.devicesFlag != "" {
		devs = strings.Split(o.devicesFlag, ",")
	}
	if len(devs) > 0 {
		d, err := parseDevices(devs)
		if err != nil && o.devicesFlag == "" && settings.DevicesRange.Filename != "" {
			return out, note, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid device", Detail: err.Error() + ".", Subject: settings.DevicesRange.Ptr()}}
		}
		if err != nil {
			return out, note, asDiags(fmt.Errorf("-devices: %w", err))
		}
		out = d
	} else if o.withCache {
		d, n, err := c.defaultDevices(ctx)
		note = strings.TrimSuffix(n, ": no GPUs")
		if note == "" && len(d.GPUs) == 0 {
			note = "nvidia-smi lists none"
		}
		if err != nil {
			return out, note, asDiags(fmt.Errorf("discovering devices: %w (set devices explicitly with -devices or the gatepipe block)", err))
		}
		out = d
	}
	share, err := gpuShare(share, settings.GPUShare)
	if err != nil {
		return out, note, asDiags(err)
	}
	out.GPUShare = share
	return out, note, nil
}

// machine is what runtime = "auto" asks: the apply's devices, or (in a
// `gatepipe exec` child) the machine its parent saw, handed down through
// $GATEPIPE_MACHINE so that the child resolves auto as the parent did.
func (c *cli) machine(devs engine.Devices, note string) (*torchrt.Machine, error) {
	if env := c.env(torchrt.MachineEnv); env != "" {
		return torchrt.DecodeMachine(env)
	}
	if len(devs.GPUs) == 0 && note == "" {
		note = "the devices given list none"
	}
	return &torchrt.Machine{GPUs: len(devs.GPUs), CPUs: devs.CPUs, Share: devs.GPUShare, Note: note}, nil
}

// keepRuns is how many run records to keep: $GATEPIPE_KEEP_RUNS (first,
// as GATEPIPE_CACHE_DIR), else the gatepipe block's keep_runs.
func keepRuns(settings *pipelines.Settings) (int, error) {
	v := os.Getenv("GATEPIPE_KEEP_RUNS")
	if v == "" {
		return settings.KeepRuns, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("GATEPIPE_KEEP_RUNS=%q: want a whole number of at least 1", v)
	}
	return n, nil
}

// newResolver builds the sources resolver: the lock file beside the root
// pipeline, the mirror (flag, $GATEPIPE_MIRROR, settings), offline mode
// (flag or $GATEPIPE_OFFLINE).
func (c *cli) newResolver(o sessionOptions, settings *pipelines.Settings, dir string, cc *cache.Cache, log zerolog.Logger) (*sources.Resolver, hcl.Diagnostics) {
	mirror, mirrorDir := o.sourceOpts.mirror, ""
	switch {
	case mirror != "":
	case c.env("GATEPIPE_MIRROR") != "":
		mirror = c.env("GATEPIPE_MIRROR")
	default:
		mirror, mirrorDir = settings.Mirror, dir
	}
	lockName := sources.LockFileName
	if mirror == sources.SmokeMirror {
		url, err := c.smokeMirror()
		if err != nil {
			return nil, asDiags(err)
		}
		mirror, lockName = url, sources.SmokeLockFileName
	}
	o.reads.Add(filepath.Join(dir, lockName))
	lock, diags := sources.LoadLock(filepath.Join(dir, lockName))
	if diags.HasErrors() {
		return nil, diags
	}
	m, err := sources.ParseMirror(mirror, mirrorDir)
	if err != nil {
		d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid mirror", Detail: err.Error() + "."}
		if mirror == settings.Mirror && settings.MirrorRange.Filename != "" {
			d.Subject = settings.MirrorRange.Ptr()
		}
		return nil, hcl.Diagnostics{d}
	}
	offline := o.sourceOpts.offline
	// huggingface_hub's and datasets' offline switches mean the same here.
	for _, name := range []string{"GATEPIPE_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"} {
		if v := strings.ToLower(c.env(name)); v != "" && v != "0" && v != "false" && v != "no" && v != "off" {
			offline = true
		}
	}
	return sources.New(sources.Options{
		Lock: lock, Mirror: m, Offline: offline, NoResolve: o.sources == sourcesPinned, Blobs: cc,
		Getenv: c.env, Home: c.env("HOME"), Logf: func(f string, a ...any) { log.Warn().Msgf(f, a...) },
		Infof: func(f string, a ...any) { log.Info().Msgf(f, a...) },
	}), nil
}

// cacheDir picks the cache: flag, then $GATEPIPE_CACHE_DIR, then the
// settings block (relative to the pipeline), then the user cache dir.
func (c *cli) cacheDir(flagDir string, settings *pipelines.Settings, root string) string {
	switch {
	case flagDir != "":
		return flagDir
	case c.env("GATEPIPE_CACHE_DIR") != "":
		return c.env("GATEPIPE_CACHE_DIR")
	case settings.CacheDir != "":
		if filepath.IsAbs(settings.CacheDir) {
			return settings.CacheDir
		}
		return filepath.Join(root, settings.CacheDir)
	case c.env("XDG_CACHE_HOME") != "":
		return filepath.Join(c.env("XDG_CACHE_HOME"), "gatepipe")
	}
	if home := homeDir(c.env); home != "" {
		return filepath.Join(home, ".cache", "gatepipe")
	}
	return fallbackCacheDir()
}

// homeDir is $HOME, else the home directory the password database gives
// the user (cron and some batch schedulers start jobs without $HOME),
// or "" when neither names an existing directory.
func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" && u.HomeDir != "/" {
		if info, err := os.Stat(u.HomeDir); err == nil && info.IsDir() {
			return u.HomeDir
		}
	}
	return ""
}

// fallbackCacheDir is the cache of a user with no home directory:
// gatepipe-cache-<uid> in the temporary directory, which openCache
// checks is the user's own and private before using it (SPEC §6.3).
func fallbackCacheDir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("gatepipe-cache-%d", os.Getuid()))
}

// openCache opens the cache at dir; the fallback place in a shared
// temporary directory is first made private (mode 0700), and refused
// when it already exists and is not: another user could plant links in it
// or read what it holds.
func (c *cli) openCache(dir string) (*cache.Cache, error) {
	if abs, err := filepath.Abs(dir); err == nil && abs == fallbackCacheDir() {
		if err := privateDir(abs); err != nil {
			return nil, err
		}
		fmt.Fprintf(c.stderr, "Warning: no home directory ($HOME is not set and the user has none): the cache is %s, in the temporary directory; set GATEPIPE_CACHE_DIR to keep it elsewhere.\n", abs)
	}
	return cache.Open(dir)
}

// privateDir makes dir with mode 0700, or checks that the existing one
// is a real directory owned by this user that no one else may enter.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.IsDir():
		return fmt.Errorf("%s is not a directory (%s); gatepipe will not use it as its cache. Set GATEPIPE_CACHE_DIR (or HOME) to a directory of your own", dir, info.Mode().Type())
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to user %d, not to you (%d); gatepipe will not keep its cache in another user's directory. Set GATEPIPE_CACHE_DIR (or HOME) to a directory of your own", dir, st.Uid, os.Getuid())
	case info.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %04o, so other users may enter it; gatepipe will not keep its cache there. Run `chmod 700 %s`, or set GATEPIPE_CACHE_DIR (or HOME) to a directory of your own", dir, info.Mode().Perm(), dir)
	}
	return nil
}

// gpuShare is how many nodes may share a GPU: the -gpu-share flag's
// value, else $GATEPIPE_GPU_SHARE, else the gatepipe block's gpu_share,
// else 1.
func gpuShare(flag, block int) (int, error) {
	if flag < 0 {
		return 0, fmt.Errorf("-gpu-share %d: want a whole number of at least 1", flag)
	}
	if flag > 0 {
		return flag, nil
	}
	if v := os.Getenv("GATEPIPE_GPU_SHARE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("GATEPIPE_GPU_SHARE=%q: want a whole number of at least 1", v)
		}
		return n, nil
	}
	return max(block, 1), nil
}

// parseDevices reads device specs: "cpu:N" (N CPU slots), "cpu" (all
// cores), "gpu:ID" (one GPU, as CUDA_VISIBLE_DEVICES names it).
func parseDevices(specs []string) (engine.Devices, error) {
	var d engine.Devices
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		kind, arg, _ := strings.Cut(spec, ":")
		switch kind {
		case "cpu":
			n := runtime.NumCPU()
			if arg != "" {
				v, err := strconv.Atoi(arg)
				if err != nil || v < 1 {
					return d, fmt.Errorf("device %q: cpu:N needs a positive count", spec)
				}
				n = v
			}
			d.CPUs += n
		case "gpu":
			if arg == "" {
				return d, fmt.Errorf("device %q: name the GPU, as in gpu:0", spec)
			}
			d.GPUs = append(d.GPUs, arg)
		default:
			return d, fmt.Errorf("device %q: want cpu, cpu:N or gpu:ID", spec)
		}
	}
	return d, nil
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}
