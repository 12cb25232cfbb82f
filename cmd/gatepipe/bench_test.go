package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkCLIApply10k times the real binary on a generated pipeline of
// 10,000 command nodes (each runs `true`; layers of 100, two upstream
// dependencies each): a cold apply into an empty cache, then a fully
// cached apply, as a user runs them. Target for the cached apply: < 1 s.
func BenchmarkCLIApply10k(b *testing.B) {
	const n, width = 10000, 100
	dir := b.TempDir()
	var sb strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&sb, "command \"n%d\" {\n  run = [\"true\"]\n  env = { N = \"%d\" }\n", i, i)
		if i >= width {
			l := i/width - 1
			fmt.Fprintf(&sb, "  depends_on = [command.n%d, command.n%d]\n", l*width+i%width, l*width+(i+1)%width)
		}
		sb.WriteString("}\n")
	}
	os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(sb.String()), 0o644)
	for range b.N {
		cache := b.TempDir()
		start := time.Now()
		r := gp(&testing.T{}, cache, "apply", "-log-level", "warn", dir)
		cold := time.Since(start)
		if r.code != 0 {
			b.Fatalf("cold apply: %s%s", r.stdout, r.stderr)
		}
		var cached time.Duration
		const reps = 3
		for range reps {
			start = time.Now()
			r = gp(&testing.T{}, cache, "apply", dir)
			cached += time.Since(start)
			if r.code != 0 || !strings.Contains(r.stdout, "All 10000 node instances were cached") {
				b.Fatalf("cached apply: %s%s", r.stdout, r.stderr)
			}
		}
		b.ReportMetric(cold.Seconds(), "cold-s")
		b.ReportMetric(float64(cold.Microseconds())/n, "cold-µs/node")
		b.ReportMetric(float64(cached.Milliseconds())/reps, "cached-ms")
	}
}
