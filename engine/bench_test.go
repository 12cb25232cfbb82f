package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/nodetest"
	"github.com/gatepipe/gatepipe/pipelines"
	"github.com/rs/zerolog"
)

const benchNodes = 10000

// writeGenerated writes a pipeline of layers x width no-op nodes; every
// node after the first layer depends on two nodes of the layer before.
func writeGenerated(b *testing.B, dir string, n int) {
	width := 100
	var sb strings.Builder
	for i := 0; i < n; i++ {
		layer, pos := i/width, i%width
		if layer == 0 {
			fmt.Fprintf(&sb, "step \"n%d\" {\n  value = \"%d\"\n}\n", i, i)
			continue
		}
		a := (layer-1)*width + pos
		c := (layer-1)*width + (pos+1)%width
		fmt.Fprintf(&sb, "step \"n%d\" {\n  value = \"%d\"\n  inputs = [step.n%d.value, step.n%d.value]\n}\n", i, i, a, c)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

type benchEnv struct {
	dir  string
	kind *nodetest.Kind
	reg  *nodes.Registry
}

func newBenchEnv(b *testing.B) *benchEnv {
	// The gatepipe command runs with GC percent 400 (cmd/gatepipe/main.go).
	old := debug.SetGCPercent(400)
	b.Cleanup(func() { debug.SetGCPercent(old) })
	k := nodetest.New()
	k.NoFiles = true
	env := &benchEnv{dir: b.TempDir(), kind: k, reg: nodes.NewRegistry(k)}
	writeGenerated(b, env.dir, benchNodes)
	return env
}

// run loads, plans and (when apply is set) applies, as the CLI does.
func (env *benchEnv) run(b *testing.B, c *cache.Cache, apply bool) *engine.RunRecord {
	l := pipelines.NewLoader(nil, env.reg.Names())
	mod, diags := l.LoadConfig(env.dir)
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	e, diags := engine.New(env.reg, nil, c, mod, nil, zerolog.Nop(), engine.Options{Parallelism: 8, Devices: engine.Devices{CPUs: 8}})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	if _, diags := e.Plan(context.Background()); diags.HasErrors() {
		b.Fatal(diags)
	}
	if !apply {
		return nil
	}
	rec, err := e.Apply(context.Background())
	if err != nil || rec.Failed() {
		b.Fatalf("apply: %v %v", err, rec.Errors)
	}
	return rec
}

func openCache(b *testing.B) *cache.Cache {
	c, err := cache.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkPlan10k: load, build the graph and plan 10,000 uncached nodes.
func BenchmarkPlan10k(b *testing.B) {
	env := newBenchEnv(b)
	c := openCache(b)
	b.ResetTimer()
	for range b.N {
		env.run(b, c, false)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*benchNodes), "µs/node")
}

// BenchmarkColdApply10k: run every node into an empty cache (each output
// is fsynced and indexed).
func BenchmarkColdApply10k(b *testing.B) {
	env := newBenchEnv(b)
	var total time.Duration
	for range b.N {
		c := openCache(b)
		start := time.Now()
		rec := env.run(b, c, true)
		total += time.Since(start)
		if rec.Counts["ran"] != benchNodes {
			b.Fatalf("ran %d, want %d", rec.Counts["ran"], benchNodes)
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N*benchNodes), "µs/node")
}

// BenchmarkCachedApply10k: a second apply of an unchanged 10,000-node
// pipeline: load, plan (every node a cache hit) and apply. Target < 1 s.
func BenchmarkCachedApply10k(b *testing.B) {
	env := newBenchEnv(b)
	c := openCache(b)
	env.run(b, c, true)
	before := env.kind.Total.Load()
	b.ResetTimer()
	for range b.N {
		rec := env.run(b, c, true)
		if rec.Counts["cached"] != benchNodes {
			b.Fatalf("cached %d, want %d", rec.Counts["cached"], benchNodes)
		}
	}
	if env.kind.Total.Load() != before {
		b.Fatal("a cached apply ran nodes")
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/apply")
}

// BenchmarkMakespan64on8 runs 64 experiments of known, varied durations
// (50-500 ms, seeded) needing one GPU each on 8 simulated GPUs, and
// reports makespan / lower bound, where the lower bound is the larger of
// the longest experiment and the total work divided by 8. With durations
// from earlier runs (as the CLI reads them from run records) the scheduler
// starts the longest expected first. Target: at most 1.10.
func BenchmarkMakespan64on8(b *testing.B) {
	rng := rand.New(rand.NewPCG(11, 11))
	durs := make([]int, 64)
	var total, longest int
	for i := range durs {
		durs[i] = 50 + rng.IntN(451)
		total += durs[i]
		longest = max(longest, durs[i])
	}
	lower := max(float64(longest), float64(total)/8) / 1000
	var sb strings.Builder
	for i, d := range durs {
		fmt.Fprintf(&sb, "step \"e%02d\" {\n  sleep_ms = %d\n  value = \"%d\"\n  resources {\n    gpus = 1\n    cpus = 0\n  }\n}\n", i, d, i)
	}
	for _, mode := range []string{"plan-order", "longest-first"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				k := nodetest.New()
				reg := nodes.NewRegistry(k)
				dir := b.TempDir()
				os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(sb.String()), 0o644)
				l := pipelines.NewLoader(nil, reg.Names())
				mod, diags := l.LoadConfig(dir)
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				opts := engine.Options{Parallelism: 64, Devices: engine.Devices{CPUs: 2, GPUs: []string{"0", "1", "2", "3", "4", "5", "6", "7"}}}
				if mode == "longest-first" {
					opts.ExpectedDurations = func() map[string]time.Duration {
						m := map[string]time.Duration{}
						for i, d := range durs {
							m[fmt.Sprintf("step.e%02d", i)] = time.Duration(d) * time.Millisecond
						}
						return m
					}
				}
				e, diags := engine.New(reg, nil, openCache(b), mod, nil, zerolog.Nop(), opts)
				if diags.HasErrors() {
					b.Fatal(diags)
				}
				e.Plan(context.Background())
				start := time.Now()
				rec, err := e.Apply(context.Background())
				if err != nil || rec.Failed() {
					b.Fatal(err)
				}
				span := time.Since(start).Seconds()
				b.ReportMetric(span, "makespan-s")
				b.ReportMetric(lower, "lower-bound-s")
				b.ReportMetric(span/lower, "ratio")
			}
		})
	}
}
