package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/internal/torchtest"
)

// trainEstimate is a train node's line in plan's output: its address,
// whether its time is "about" or "at least", and the time.
var trainEstimate = regexp.MustCompile(`(module\.gate\.module\.run\.train\.run\["[^"]+"\])  (?:\(replace\)  )?\[[^\]]*· (about|at least) ([0-9.]+)(s| min| h)\]`)

// planEstimates are plan's estimates of the train nodes in its output, in
// seconds, and which of them are lower bounds.
func planEstimates(out string) (map[string]float64, map[string]bool) {
	est, atLeast := map[string]float64{}, map[string]bool{}
	for _, m := range trainEstimate.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		switch m[4] {
		case " min":
			v *= 60
		case " h":
			v *= 3600
		}
		est[m[1]], atLeast[m[1]] = v, m[2] == "at least"
	}
	return est, atLeast
}

// latestDurations are the train nodes' durations in the cache's latest run
// record, in seconds (the nodes that ran).
func latestDurations(b *testing.B, cache string) map[string]float64 {
	out := map[string]float64{}
	for _, n := range latestRunRecord(b, cache).Nodes {
		if strings.Contains(n.Addr, "train.run[") && !n.CacheHit {
			out[n.Addr] = n.DurationMS / 1000
		}
	}
	return out
}

// BenchmarkTierEstimates measures plan's estimates against the apply that
// follows, for every train node of the small tier at the test scale with
// GATE's adapters on the torch runtime (CPU torch here): first on a fresh
// cache (the stores' sizes partly unknown: "at least"), then with the
// stores cached, re-planning and re-running every train node
// (-replace). It prints each node's estimate, time and ratio and reports
// the ratios' range (the target: within 1.5x either way).
func BenchmarkTierEstimates(b *testing.B) {
	torchtest.Need(b, "torch")
	_, srv := newTierHub(b)
	env := []string{"GATEPIPE_MIRROR=" + srv.URL, "GATEPIPE_MIRROR_CREDENTIALS=" + srv.URL, "HOME=" + b.TempDir(), "HF_TOKEN=hf_tier", "KAGGLE_USERNAME=ada", "KAGGLE_KEY=kaggle-key-123"}
	dir := b.TempDir()
	writeFile(b, filepath.Join(dir, "main.hcl"), strings.Replace(tierPipeline, `adapters = "compact"`, fmt.Sprintf("python  = %q", torchtest.Python()), 1))
	for i := 0; i < b.N; i++ {
		cache := filepath.Join(b.TempDir(), "c")
		report := func(phase, planOut string) (lo, hi float64) {
			est, atLeast := planEstimates(planOut)
			took := latestDurations(b, cache)
			lo, hi = 1e9, 0
			names := make([]string, 0, len(took))
			for n := range took {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				e, ok := est[n]
				if !ok {
					fmt.Printf("%s  %-50s  estimate: none (time unknown)  took %.1fs\n", phase, n, took[n])
					continue
				}
				r := e / took[n]
				kind := "about"
				if atLeast[n] {
					kind = "at least"
				} else {
					lo, hi = min(lo, r), max(hi, r)
				}
				fmt.Printf("%s  %-50s  %s %.1fs  took %.1fs  ratio %.2f\n", phase, n, kind, e, took[n], r)
			}
			return lo, hi
		}
		r := gpEnv(b, cache, env, "plan", dir)
		if r.code != exitOK {
			b.Fatalf("plan: %d\n%s", r.code, r.stderr)
		}
		planned := r.stdout
		if r := gpEnv(b, cache, env, "apply", dir); r.code != exitOK {
			b.Fatalf("apply: %d\n%s", r.code, r.stderr)
		}
		report("fresh cache", planned)
		var replace []string
		est, _ := planEstimates(planned)
		for n := range est {
			replace = append(replace, "-replace="+n)
		}
		for _, n := range []string{"acdc", "clevr-math", "cubirds", "iwildcam", "mini"} { // unknown or partial before
			a := fmt.Sprintf(`-replace=module.gate.module.run.train.run[%q]`, n)
			if !strings.Contains(strings.Join(replace, " "), a) {
				replace = append(replace, a)
			}
		}
		r = gpEnv(b, cache, env, append(append([]string{"plan"}, replace...), dir)...)
		if r.code != exitOK {
			b.Fatalf("plan -replace: %d\n%s", r.code, r.stderr)
		}
		planned = r.stdout
		if os.Getenv("GATEPIPE_BENCH_VERBOSE") != "" {
			fmt.Println(planned)
		}
		if r := gpEnv(b, cache, env, append(append([]string{"apply"}, replace...), dir)...); r.code != exitOK {
			b.Fatalf("apply -replace: %d\n%s", r.code, r.stderr)
		}
		lo, hi := report("stores cached", planned)
		b.ReportMetric(lo, "min-ratio")
		b.ReportMetric(hi, "max-ratio")
	}
}
