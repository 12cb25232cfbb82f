package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// timingFormat changes when a stored timing's meaning changes, so that
// older ones are measured again.
const timingFormat = 1

// longRun is the estimate past which plan warns.
const longRun = 24 * time.Hour

// timedNode is one estimated instance with its time.
type timedNode struct {
	engine.Estimate
	// d is the estimated time; known whether there is one (the work's
	// rate was measured or timed here).
	d     time.Duration
	known bool
	// why says what the estimate lacks ("" when whole).
	why string
}

// timings measures and remembers how fast models run on this machine:
// one file per timing under the cache's timings/ directory, named by a
// hash of what the speed depends on (the work's key, the devices, the CPU,
// the GPU, the architecture), so that a second plan reads it.
type timings struct {
	dir     string
	cpu     string
	log     io.Writer
	measure bool
	mem     map[string]*nodes.Rate
	// failed holds why a timing failed, by its work's key.
	failed map[string]string
	// env is where a timing runs: the cache (the torch worker's copy),
	// this machine's devices.
	blobs   nodes.BlobStore
	devices engine.Devices
	gpuName func() string
}

// storedTiming is a timing's file.
type storedTiming struct {
	Format   int        `json:"format"`
	Key      string     `json:"key"`
	Devices  string     `json:"devices"`
	CPU      string     `json:"cpu"`
	Measured time.Time  `json:"measured"`
	Rate     nodes.Rate `json:"rate"`
}

func newTimings(ctx context.Context, c *cli, s *session, measure bool) *timings {
	t := &timings{dir: filepath.Join(s.cache.Dir(), "timings"), cpu: cpuModel(), log: c.stderr, measure: measure,
		mem: map[string]*nodes.Rate{}, failed: map[string]string{}, blobs: s.cache, devices: s.devices}
	name := ""
	t.gpuName = func() string {
		if name == "" {
			name = "unknown GPU"
			if inv, err := c.discover(ctx); err == nil && len(inv.GPUs) > 0 {
				name = inv.GPUs[0].Name
			}
		}
		return name
	}
	return t
}

// rate returns w's rate on res: stored, else measured now (and stored)
// when w can be measured and measuring is on; nil when unknown.
func (t *timings) rate(ctx context.Context, w *nodes.Work, res nodes.Resources) *nodes.Rate {
	if w.Key == "" {
		return nil
	}
	dev := nodes.Assignment{CPUs: min(max(res.CPUs, 1), max(t.devices.CPUs, 1))}
	devs := fmt.Sprintf("%d CPU threads", dev.CPUs)
	if res.GPUs > 0 && len(t.devices.GPUs) > 0 {
		dev.GPUs = t.devices.GPUs[:min(res.GPUs, len(t.devices.GPUs))]
		devs += fmt.Sprintf(", %d x %s", len(dev.GPUs), t.gpuName())
	}
	id := t.id(w.Key, devs)
	if r, ok := t.mem[id]; ok {
		return r
	}
	path := filepath.Join(t.dir, id+".json")
	var st storedTiming
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &st) == nil && st.Format == timingFormat && st.Key == w.Key {
		t.mem[id] = &st.Rate
		return &st.Rate
	}
	if w.Measure == nil || !t.measure {
		t.mem[id] = nil
		return nil
	}
	fmt.Fprintf(t.log, "Timing %s on %s (once on this machine; kept in %s)...\n", workName(*w), devs, t.dir)
	r, err := t.run(ctx, w, dev)
	if err != nil {
		fmt.Fprintf(t.log, "  could not time it: %v\n", err)
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.mem[id], t.failed[w.Key] = nil, first
		return nil
	}
	t.mem[id] = &r
	st = storedTiming{Format: timingFormat, Key: w.Key, Devices: devs, CPU: t.cpu, Measured: time.Now().UTC(), Rate: r}
	if data, err := json.MarshalIndent(st, "", "  "); err == nil && os.MkdirAll(t.dir, 0o755) == nil {
		tmp := path + ".tmp"
		if os.WriteFile(tmp, data, 0o644) == nil {
			os.Rename(tmp, path)
		}
	}
	return &r
}

// run measures w on dev, in a scratch directory under timings/.
func (t *timings) run(ctx context.Context, w *nodes.Work, dev nodes.Assignment) (nodes.Rate, error) {
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return nodes.Rate{}, err
	}
	scratch, err := os.MkdirTemp(t.dir, ".run-")
	if err != nil {
		return nodes.Rate{}, err
	}
	defer os.RemoveAll(scratch)
	env := &nodes.Env{OutDir: scratch, WorkDir: scratch, Blobs: t.blobs, Devices: dev, Log: zerolog.Nop(), Progress: nodes.NoProgress{}}
	return w.Measure(ctx, env)
}

func (t *timings) id(key, devices string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "timing %d\n%s\ndevices %s\ncpu %s\n%s/%s\n", timingFormat, key, devices, t.cpu, runtime.GOOS, runtime.GOARCH))
	return hex.EncodeToString(h[:12])
}

// workName is what a timing is of, as a person reads it.
func workName(w nodes.Work) string {
	if w.Label != "" {
		return w.Label
	}
	return w.Key
}

// cpuModel is the CPU's name from /proc/cpuinfo ("" where unreadable).
func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(line, "model name"); ok {
			return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return ""
}

// timePlan times every estimated instance.
func timePlan(ctx context.Context, ests []engine.Estimate, t *timings) []timedNode {
	out := make([]timedNode, 0, len(ests))
	for _, e := range ests {
		tn := timedNode{Estimate: e}
		switch {
		case e.Work == nil:
		case e.Work.Key == "":
			tn.why = e.Work.Partial
		default:
			if r := t.rate(ctx, e.Work, e.Resources); r != nil {
				tn.d, tn.known = r.Time(*e.Work), true
				tn.why = e.Work.Partial
			} else if why, ok := t.failed[e.Work.Key]; ok {
				tn.why = "timing it failed: " + why
			} else if e.Work.Measure == nil {
				tn.why = fmt.Sprintf("the %s runtime has not been timed on this machine", e.Runtime)
			} else {
				tn.why = "not timed yet (plan -timing=false)"
			}
		}
		out = append(out, tn)
	}
	return out
}

// annotations are what plan prints after each estimated instance's
// address: its runtime and devices, and its time.
func annotations(nodes []timedNode) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		var parts []string
		if n.Runtime != "" {
			parts = append(parts, describeRuntime(n.Estimate))
		}
		if n.Work != nil {
			switch {
			case n.known && n.why != "":
				parts = append(parts, "at least "+roughDuration(n.d))
			case n.known:
				parts = append(parts, "about "+roughDuration(n.d))
			default:
				parts = append(parts, "time unknown")
			}
		}
		if len(parts) > 0 {
			out[n.Addr] = "[" + strings.Join(parts, " · ") + "]"
		}
	}
	return out
}

// describeRuntime is "go, 1 CPU (auto)" or "torch, 1 GPU, 8 CPUs (auto)".
func describeRuntime(e engine.Estimate) string {
	s := e.Runtime
	if r := e.Resources; r.GPUs > 0 {
		s += ", " + plural(r.GPUs, "GPU")
	}
	s += ", " + plural(max(e.Resources.CPUs, 1), "CPU")
	if e.Auto != nil {
		s += " (auto)"
	}
	return s
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// roughDuration prints an estimate as precisely as it deserves: "2.4s", "40s",
// "12 min", "3.4 h", "2.1 days".
func roughDuration(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", max(d.Seconds(), 0.1))
	case d < time.Minute:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%.0f min", d.Minutes())
	case d < 48*time.Hour:
		return fmt.Sprintf("%.1f h", d.Hours())
	}
	return fmt.Sprintf("%.1f days", d.Hours()/24)
}

// wallTime is how long the timed instances take on devs: each starts, in
// dependency order and longest first, as soon as what it waits on is done
// and its CPUs and GPUs are free, as apply's scheduler starts them.
func wallTime(nodes []timedNode, devs engine.Devices) time.Duration {
	cpus, gpus := max(devs.CPUs, 1), len(devs.GPUs)*max(devs.GPUShare, 1)
	type job struct {
		n          *timedNode
		cpus, gpus int
		start, end time.Duration
		started    bool
	}
	jobs := map[string]*job{}
	var order []*job
	for i := range nodes {
		n := &nodes[i]
		j := &job{n: n, cpus: min(max(n.Resources.CPUs, 1), cpus), gpus: min(n.Resources.GPUs, gpus)}
		jobs[n.Addr] = j
		order = append(order, j)
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].n.d > order[b].n.d })
	var now, wall time.Duration
	freeCPU, freeGPU := cpus, gpus
	var running []*job
	for done := 0; done < len(order); {
		startedAny := false
		for _, j := range order {
			if j.started || j.cpus > freeCPU || j.gpus > freeGPU {
				continue
			}
			ready := true
			for _, a := range j.n.After {
				if u, ok := jobs[a]; ok && (!u.started || u.end > now) {
					ready = false
					break
				}
			}
			if !ready {
				continue
			}
			j.started, j.start, j.end = true, now, now+j.n.d
			freeCPU, freeGPU = freeCPU-j.cpus, freeGPU-j.gpus
			running = append(running, j)
			startedAny = true
		}
		if len(running) == 0 {
			if !startedAny {
				break // nothing can start: a cycle cannot happen, but never loop
			}
			continue
		}
		sort.Slice(running, func(a, b int) bool { return running[a].end < running[b].end })
		next := running[0]
		running = running[1:]
		now = next.end
		freeCPU, freeGPU = freeCPU+next.cpus, freeGPU+next.gpus
		wall = max(wall, now)
		done++
	}
	return wall
}

// printTimes prints the runtime choice's reason, the whole apply's
// estimated time and, past a day, what would shorten it; it returns that
// time (a lower bound where some nodes' times are unknown).
func printTimes(w io.Writer, timed []timedNode, devs engine.Devices, reasons []string, cpu string) time.Duration {
	if len(timed) == 0 {
		return 0
	}
	for _, r := range reasons {
		fmt.Fprintf(w, "\nRuntime auto: %s.\n", r)
	}
	var work, unknown []timedNode
	partial := 0
	usesGPU, onGo := false, false
	for _, n := range timed {
		if n.Work == nil {
			continue
		}
		if !n.known {
			unknown = append(unknown, n)
			continue
		}
		if n.why != "" {
			partial++
		}
		usesGPU = usesGPU || n.Resources.GPUs > 0
		onGo = onGo || n.Runtime == "go"
		work = append(work, n)
	}
	if len(work)+len(unknown) == 0 {
		return 0
	}
	machine := plural(max(devs.CPUs, 1), "CPU")
	if len(devs.GPUs) > 0 {
		machine += " and " + plural(len(devs.GPUs), "GPU")
	}
	if cpu != "" {
		machine += " (" + cpu + ")"
	}
	fmt.Fprintf(w, "\nTime, from timings on this machine, %s:\n", machine)
	var total time.Duration
	if len(work) > 0 {
		total = wallTime(work, devs)
		bound := "about"
		if partial > 0 || len(unknown) > 0 {
			bound = "at least"
		}
		fmt.Fprintf(w, "  training and features: %s %s of wall time for %d node(s)", bound, roughDuration(total), len(work))
		if partial > 0 {
			fmt.Fprintf(w, " (%d counted in part: the split sizes not yet known)", partial)
		}
		fmt.Fprintln(w)
	}
	reasons, count := []string{}, map[string]int{}
	for _, n := range unknown {
		if count[n.why]++; count[n.why] == 1 {
			reasons = append(reasons, n.why)
		}
	}
	for _, why := range reasons {
		fmt.Fprintf(w, "  unknown for %d node(s): %s\n", count[why], why)
	}
	fmt.Fprintln(w, "  not counted: downloads and dataset stores (plan lists their sizes)")
	if total > longRun {
		fmt.Fprintf(w, "  Warning: this apply should take %s or more. %s\n", roughDuration(total), shortenHint(usesGPU, onGo, len(devs.GPUs) > 0))
	}
	return total
}

// shortenHint names what would shorten a long apply.
func shortenHint(usesGPU, onGo, haveGPU bool) string {
	var ways []string
	switch {
	case !haveGPU:
		ways = append(ways, "a machine with NVIDIA GPUs and PyTorch with CUDA (runtime \"auto\", the default, uses them: one GPU per node)")
	case onGo:
		ways = append(ways, "the torch runtime on this machine's GPUs (trainer = \"torch\" with gpus = 1, or runtime = \"torch\" with resources { gpus = 1 })")
	case usesGPU:
		ways = append(ways, "more GPUs (nodes run on every GPU at once)")
	}
	ways = append(ways, "a smaller scale (scale = \"cpu\": 2,000 training examples at 64 px, 300 steps)")
	return "Shorter: " + strings.Join(ways, "; or ") + "."
}
