package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/engine/noop"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/rs/zerolog"
)

// noopApply is an apply that a no-op record (package engine/noop) may
// answer: its key, and the cache directory known before the configuration
// is parsed (flag, $GATEPIPE_CACHE_DIR or the default), where the record
// is kept. A pipeline whose gatepipe block names its own cache is always
// planned.
type noopApply struct {
	key, dir string
	pipeline string // absolute, for the run record
	reads    *readset.Set
	log      zerolog.Logger
}

// readSet is the set the plan records its reads in (nil for none).
func (n *noopApply) readSet() *readset.Set {
	if n == nil {
		return nil
	}
	return n.reads
}

// noopEnvPrefixes are the environment variables that may change what an
// apply plans (cache, mirror, offline, run records, credentials' homes,
// and what runtime = "auto" finds: the GPUs visible and the interpreter
// found on PATH).
var noopEnvPrefixes = []string{"GATEPIPE_", "HF_", "HUGGING_FACE_", "KAGGLE_", "XDG_", "HOME=", "CUDA_VISIBLE_DEVICES=", "PATH="}

// newNoopApply returns the no-op record this apply may use, or nil when
// none may: a saved plan, -replace, -budget, -debug-hash or a non-local
// executor always plan.
func (c *cli) newNoopApply(path string, f *runFlags, eligible bool) *noopApply {
	if !eligible || len(f.replace) > 0 || f.debugHash {
		return nil
	}
	// Flags the planned path would refuse are refused there.
	if f.configFlags.check() != nil || f.parallelism < 0 {
		return nil
	}
	if f.devices != "" {
		if _, err := parseDevices(strings.Split(f.devices, ",")); err != nil {
			return nil
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	e, err := readset.Stat(exe)
	if err != nil || e.Absent {
		return nil
	}
	dir := f.cacheDir
	if dir == "" {
		dir = c.env("GATEPIPE_CACHE_DIR")
	}
	if dir == "" {
		dir = c.cacheDir("", &pipelines.Settings{}, "")
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	parts := []string{"exe " + exe + " " + e.Stamp.String(), "version " + version, "path " + abs, "cache " + dir,
		"mirror " + f.src.mirror, "offline " + strconv.FormatBool(f.src.offline)}
	for _, v := range f.vars {
		parts = append(parts, "var "+v)
	}
	for _, v := range f.varFiles {
		a, _ := filepath.Abs(v)
		parts = append(parts, "var-file "+a)
	}
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GATEPIPE_CPUPROFILE=") {
			continue
		}
		for _, p := range noopEnvPrefixes {
			if strings.HasPrefix(kv, p) {
				env = append(env, kv)
				break
			}
		}
	}
	sort.Strings(env)
	parts = append(parts, env...)
	return &noopApply{key: noop.Key(parts...), dir: dir, pipeline: abs, reads: readset.New(),
		log: c.newLogger(&f.configFlags, nil)}
}

// answerNoop answers the apply from its no-op record when every stamp in it
// is unchanged: it writes the run record and prints what the ordinary
// path would. done is false when the pipeline must be planned.
func (c *cli) answerNoop(ctx context.Context, n *noopApply, start time.Time) (code int, done bool) {
	r, err := noop.Load(n.dir, n.key)
	if err != nil {
		if err != noop.ErrNone {
			n.log.Debug().Err(err).Msg("no-op record unreadable; planning")
		}
		return 0, false
	}
	cc, err := cache.Open(n.dir)
	if err != nil {
		return 0, false
	}
	unlock, err := cc.LockShared(ctx)
	if err != nil {
		return 0, false
	}
	defer unlock()
	if why := r.Check(n.dir, time.Now()); why != "" {
		n.log.Debug().Str("why", why).Msg("no-op record does not stand; planning")
		return 0, false
	}
	n.log.Debug().Int("instances", len(r.Nodes)).Int("files", len(r.Reads)).Msg("no-op record stands: nothing the plan read and no cache entry changed; not planning")
	rec := r.RunRecord()
	rec.Started, rec.Pipeline, rec.PID, rec.Outcome = start.UTC(), n.pipeline, os.Getpid(), engine.OutcomeOK
	if err := rec.Save(cc, r.KeepRuns); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe: writing run record:", err)
		return exitRunFailure, true
	}
	printSummary(c.stdout, rec, time.Since(start), cc.Dir(), sources.HFCache{}) // nothing failed
	fmt.Fprint(c.stdout, r.Stdout)
	return exitOK, true
}

// saveNoop leaves a no-op record for the next apply after a run in which
// every instance ran or was cached and nothing was warned about; when no
// record can stand for the run it says why at debug level.
func (s *session) saveNoop(n *noopApply, rec *engine.RunRecord, stdout string, warned bool) {
	if n == nil {
		return
	}
	if s.cache.Dir() != n.dir {
		s.log.Debug().Msg("no no-op record: the gatepipe block names the cache")
		return
	}
	if warned {
		s.log.Debug().Msg("no no-op record: the configuration has warnings, which every apply shows")
		return
	}
	r, err := noop.Build(s.cache, n.key, n.reads, rec, s.keepRuns, stdout, time.Now())
	if err == nil {
		err = noop.Save(s.cache, r)
	}
	if err != nil {
		s.log.Debug().Err(err).Msg("no no-op record")
	}
}
