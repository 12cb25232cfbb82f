// Package scripts holds the tests of the repository's shell scripts.
//
// gpu-check.sh runs on GPU machines that come for short spells and cannot
// be watched: these tests run it here against fake test binaries, a fake
// Python and a fake nvidia-smi, so that its order, its table and its end
// (the first H100 check hung waiting for its own nvidia-smi sampler) are
// checked on every `make test`.
package scripts

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakePython answers the probes gpu-check.sh makes of torch (the number
// of GPUs from $FAKE_GPUS) and runs the worker's unit tests as a step
// logged in $EVENTS.
const fakePython = `#!/bin/sh
if [ "$1" = -c ]; then
	case $2 in
	*device_count*) echo "${FAKE_GPUS:-0}" ;;
	*__version__*) echo "torch 0.0-fake CUDA 0.0-fake" ;;
	esac
	exit 0
fi
echo "start worker $(date +%s%N)" >>"$EVENTS"
sleep "$FAKE_SLEEP"
echo "end worker $(date +%s%N)" >>"$EVENTS"
echo OK
`

// fakeTest stands for every NAME.test binary: it logs its start and end
// under the step's key (NAME:PATTERN of -test.run, or NAME:bench), writes a log
// into $GATEPIPE_TEST_LOGS as the tests' gatepipe runs do, prints a
// benchmark line for bench, and fails where $FAKE_FAIL matches its key.
const fakeTest = `#!/bin/sh
key=""
while [ $# -gt 0 ]; do
	case $1 in
	-test.run) key=$2; shift ;;
	-test.bench) key=bench ;;
	esac
	shift
done
key=$(basename "$0" .test):$key
echo "start $key $(date +%s%N)" >>"$EVENTS"
[ -n "$GATEPIPE_TEST_LOGS" ] && mkdir -p "$GATEPIPE_TEST_LOGS" && echo "a run" >"$GATEPIPE_TEST_LOGS/Run-1.log"
sleep "$FAKE_SLEEP"
echo "end $key $(date +%s%N)" >>"$EVENTS"
if [ "$key" = nodes_torchrt:bench ]; then
	echo "features resnet50 224px fp32: torch runtime 100.0 img/s, bare PyTorch loop 100.0 img/s (cuda, 16 threads; peer env X): 1.00x"
fi
if [ -n "$FAKE_FAIL" ] && [ "$key" = "$FAKE_FAIL" ]; then
	echo "--- FAIL: TestFake"
	exit 1
fi
echo "--- PASS: TestFake"
`

// fakeSMI answers gpu-check.sh's query of the machine, and samples as
// nvidia-smi -lms does: until it is killed.
const fakeSMI = `#!/bin/sh
case "$*" in
*-lms*) while :; do echo "2026/11/27 00:00:00.000, 0, 40 %, 1000 MiB"; sleep 0.1; done ;;
*) echo "Fake GPU, 1000 MiB, 1.0" ;;
esac
`

// steps maps each step of the check to the key its fake logs.
var steps = map[string]string{
	"worker":    "worker",
	"features":  "nodes_features:Torch|Library",
	"families":  "cmd_gatepipe:TestEveryFamilyTrainsOnTorchAsInGo|TestPipelineDefaultRuntime",
	"library":   "cmd_gatepipe:TestLibraryEncoderTrainsEveryFamilyOnTorch|TestLibraryResNetTrainsAsThePreset",
	"resume":    "cmd_gatepipe:TestKilledTrainOnTorchRuntimeResumes",
	"tier":      "cmd_gatepipe:TestSmallTierOnTheTorchTrainer|TestSmallTierOnAutoUsesTheGPU|TestPlanEstimateMatchesTheRun",
	"transform": "cmd_gatepipe:TestEvaluationTransformOnBothRuntimes",
	"probe":     "nodes_probenode:Torch",
	"episodes":  "nodes_episodesnode:Torch",
	"bench":     "nodes_torchrt:bench",
}

type span struct{ start, end int64 }

type checkRun struct {
	out    string // the script's stdout and stderr
	err    error
	outDir string
	spans  map[string][]span // by key
}

// runCheck runs gpu-check.sh with gpus fake GPUs, every fake step taking
// sleep, failing the step whose key is fail.
func runCheck(t *testing.T, gpus int, sleep, fail string, extra ...string) checkRun {
	t.Helper()
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	os.MkdirAll(bin, 0o755)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("python", fakePython)
	write("gatepipe", "#!/bin/sh\nexit 0\n")
	for _, name := range []string{"nodes_features", "nodes_torchrt", "cmd_gatepipe", "nodes_probenode", "nodes_episodesnode"} {
		write(name+".test", fakeTest)
	}
	path := os.Getenv("PATH")
	if gpus > 0 {
		write("nvidia-smi", fakeSMI)
		path = bin + ":" + path
	}
	events, outDir := filepath.Join(tmp, "events"), filepath.Join(tmp, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "gpu-check.sh", outDir)
	cmd.Env = append(os.Environ(), "PATH="+path, "GATEPIPE_TEST_PYTHON="+filepath.Join(bin, "python"),
		"GATEPIPE_TEST_BIN="+bin, "EVENTS="+events, "FAKE_GPUS="+strconv.Itoa(gpus), "FAKE_SLEEP="+sleep,
		"FAKE_FAIL="+fail, "GPU_CHECK_STEPS=", "GPU_CHECK_PARALLEL=")
	cmd.Env = append(cmd.Env, extra...)
	cmd.WaitDelay = 5 * time.Second // the sampler, if the script leaves it behind, holds the pipe
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("gpu-check.sh did not finish in 90 s (steps of %s s each):\n%s", sleep, out)
	}
	r := checkRun{out: string(out), err: err, outDir: outDir, spans: map[string][]span{}}
	f, err := os.Open(events)
	if err != nil {
		t.Fatalf("no step ran: %v\n%s", err, out)
	}
	defer f.Close()
	open := map[string]int64{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			t.Fatalf("event %q", sc.Text())
		}
		at, _ := strconv.ParseInt(fields[2], 10, 64)
		if fields[0] == "start" {
			open[fields[1]] = at
			continue
		}
		r.spans[fields[1]] = append(r.spans[fields[1]], span{open[fields[1]], at})
	}
	return r
}

func (r checkRun) table(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.outDir, "gpu-check.md"))
	if err != nil {
		t.Fatalf("no table: %v\n%s", err, r.out)
	}
	return string(data)
}

// row is the table's row of step, without its time.
func row(table, step string) string {
	for line := range strings.SplitSeq(table, "\n") {
		if strings.HasPrefix(line, "| "+step+" |") {
			return line
		}
	}
	return ""
}

// TestGPUCheckOnAGPU: with a GPU, every agreement check starts before any
// ends (they run at once), the benchmarks start after the last of them
// ends, every row passes, the sampler's figures are in the table, the
// runs' logs are packed, and the script ends though its nvidia-smi
// sampler never would.
func TestGPUCheckOnAGPU(t *testing.T) {
	t.Parallel()
	r := runCheck(t, 1, "2", "")
	if r.err != nil {
		t.Fatalf("gpu-check.sh: %v\n%s", r.err, r.out)
	}
	var checks []span
	for step, key := range steps {
		if len(r.spans[key]) == 0 {
			t.Fatalf("step %s did not run:\n%s", step, r.out)
		}
		if step != "bench" {
			checks = append(checks, r.spans[key]...)
		}
	}
	firstEnd := slices.MinFunc(checks, func(a, b span) int { return int(a.end - b.end) }).end
	lastEnd := slices.MaxFunc(checks, func(a, b span) int { return int(a.end - b.end) }).end
	for step, key := range steps {
		for _, s := range r.spans[key] {
			if step != "bench" && s.start > firstEnd {
				t.Errorf("check %s started after another had ended: the checks did not run at once", step)
			}
			if step == "bench" && s.start < lastEnd {
				t.Errorf("bench started before the checks had ended")
			}
		}
	}
	table := r.table(t)
	for _, step := range []string{"worker", "features", "bench", "families", "library", "resume", "tier", "transform", "probe", "episodes"} {
		if !strings.Contains(row(table, step), "| pass |") {
			t.Errorf("row %s: %q", step, row(table, step))
		}
	}
	if !strings.Contains(row(table, "two-gpus"), "skipped: 1 GPU(s)") {
		t.Errorf("row two-gpus: %q", row(table, "two-gpus"))
	}
	for _, want := range []string{"Machine: Fake GPU, 1000 MiB, 1.0 x 1", "GPU utilisation over the whole check", "CPUs busy over the whole check", "- features resnet50 224px fp32: torch runtime"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if _, err := os.Stat(filepath.Join(r.outDir, "families.runs.tgz")); err != nil {
		t.Errorf("the families step's run logs were not packed: %v", err)
	}
	if strings.Contains(r.out, "no GPU") {
		t.Errorf("a GPU machine reported no GPU:\n%s", r.out)
	}
}

// TestGPUCheckOnCPU: without a GPU the script says so, skips resume and
// two-gpus, runs the steps one after another with bench last, and a
// failing step fails the check without stopping it.
func TestGPUCheckOnCPU(t *testing.T) {
	t.Parallel()
	r := runCheck(t, 0, "0.2", steps["tier"])
	if r.err == nil {
		t.Fatalf("the check passed with the tier step failing:\n%s", r.out)
	}
	if !strings.Contains(r.out, "no GPU: CUDA parts skipped") {
		t.Errorf("no \"no GPU: CUDA parts skipped\" line:\n%s", r.out)
	}
	var all []span
	for _, ss := range r.spans {
		all = append(all, ss...)
	}
	slices.SortFunc(all, func(a, b span) int { return int(a.start - b.start) })
	for i := 1; i < len(all); i++ {
		if all[i].start < all[i-1].end {
			t.Errorf("steps overlapped on CPU: %v", all)
			break
		}
	}
	if b := r.spans[steps["bench"]]; len(b) != 1 || b[0].start < all[len(all)-1].start {
		t.Errorf("bench did not run last: %v", r.spans)
	}
	if len(r.spans[steps["resume"]]) != 0 {
		t.Error("resume ran without a GPU")
	}
	table := r.table(t)
	if !strings.Contains(row(table, "tier"), "| FAIL |") || !strings.Contains(row(table, "episodes"), "| pass |") {
		t.Errorf("tier should fail and the steps after it still run:\n%s", table)
	}
	if !strings.Contains(row(table, "resume"), "skipped: no GPU") {
		t.Errorf("row resume: %q", row(table, "resume"))
	}
	if !strings.Contains(table, "CPUs busy over the whole check") || strings.Contains(table, "GPU utilisation") {
		t.Errorf("want the CPUs' use and no GPU's in the table:\n%s", table)
	}
}

// TestGPUCheckBudget: once under 40 s of GPU_CHECK_BUDGET_S is left, the
// steps still to run are listed as out of time, and the check fails (not
// checked is not passed).
func TestGPUCheckBudget(t *testing.T) {
	t.Parallel()
	r := runCheck(t, 0, "15", "", "GPU_CHECK_BUDGET_S=50", "GPU_CHECK_STEPS=worker features bench")
	table := r.table(t)
	if r.err == nil {
		t.Fatalf("the check passed with steps out of time:\n%s", table)
	}
	if !strings.Contains(row(table, "worker"), "| pass |") {
		t.Errorf("row worker: %q", row(table, "worker"))
	}
	for _, step := range []string{"features", "bench"} {
		if !strings.Contains(row(table, step), "out of time") {
			t.Errorf("row %s: %q\n%s", step, row(table, step), table)
		}
	}
}
