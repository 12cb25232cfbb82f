package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatepipe/gatepipe/formats/imagedec"
	"github.com/gatepipe/gatepipe/train/cblas"
)

var binPath string

func TestMain(m *testing.M) {
	// A machine without Go (make gpu-check's GPU machine) tests a
	// prebuilt binary.
	if prebuilt := os.Getenv("GATEPIPE_TEST_BINARY"); prebuilt != "" {
		binPath = prebuilt
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gatepipe-bin-")
	if err != nil {
		panic(err)
	}
	binPath = filepath.Join(dir, "gatepipe")
	// The same BLAS as this test binary (make test passes -tags openblas
	// when OpenBLAS is installed).
	tags := ""
	if cblas.Name == "openblas" {
		tags = "openblas"
	}
	if imagedec.LibjpegTurbo() {
		tags += " turbojpeg"
	}
	if out, err := exec.Command("go", "build", "-tags", tags, "-o", binPath, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building gatepipe: %v\n%s", err, out)
		os.Exit(1)
	}
	// The small supervisor beside it, as make build lays them out (the
	// fallback, gatepipe re-executing itself, is tested in internal/supervise).
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "gatepipe-supervisor"), "../gatepipe-supervisor").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building gatepipe-supervisor: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// gp runs the real binary with its cache in cacheDir.
func gp(t testing.TB, cacheDir string, args ...string) result {
	t.Helper()
	return gpWith(t, append(os.Environ(), "GATEPIPE_CACHE_DIR="+cacheDir), args...)
}

// gpWith runs the real binary with exactly the environment env. With
// GATEPIPE_TEST_LOGS set (gpu-check sets it), its stderr also goes, as it
// comes, to a file there named after the test, so that a test cut off by
// its time limit still shows what each run was doing.
func gpWith(t testing.TB, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	defer liveLog(t, cmd, args)()
	code := runExitCode(t, cmd.Run())
	return result{out.String(), errb.String(), code}
}

// runExitCode is the exit status cmd.Run's err says; a command that could
// not start fails the test.
func runExitCode(t testing.TB, err error) int {
	t.Helper()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func countActions(cache string) int {
	n := 0
	filepath.Walk(filepath.Join(cache, "actions"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasPrefix(info.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}

func TestKill9ThenReapplyResumes(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	logFile, release := filepath.Join(dir, "runs.log"), filepath.Join(dir, "release")
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
locals {
  log     = %q
  release = %q
}
command "a" {
  run = ["sh", "-c", "echo a >> ${local.log}; echo a > $GATEPIPE_OUT_DIR/o"]
}
command "b" {
  run = ["sh", "-c", "echo b >> ${local.log}; echo b > $GATEPIPE_OUT_DIR/o"]
}
command "slow" {
  run = ["sh", "-c", "echo slow >> ${local.log}; while [ ! -f ${local.release} ]; do sleep 0.05; done"]
}
command "after" {
  run = ["sh", "-c", "echo after >> ${local.log}"]
  depends_on = [command.a, command.slow]
}
`, logFile, release))
	cmd := exec.Command(binPath, "apply", "-parallelism", "3", dir)
	cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for countActions(cache) < 2 || !strings.Contains(readFile(logFile), "slow") {
		if time.Now().After(deadline) {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("a and b did not finish in time; log:\n%s", readFile(logFile))
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()

	writeFile(t, release, "go")
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("re-apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Fields(readFile(logFile))
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	if count["a"] != 1 || count["b"] != 1 || count["slow"] != 2 || count["after"] != 1 {
		t.Fatalf("runs after kill -9 and re-apply: %v (a and b must not re-run)", count)
	}
	if v := gp(t, cache, "cache", "verify"); v.code != 0 {
		t.Fatalf("cache verify after kill -9: %s%s", v.stdout, v.stderr)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

func TestConcurrentAppliesShareOneCache(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	logFile := filepath.Join(dir, "runs.log")
	var b strings.Builder
	fmt.Fprintf(&b, "locals {\n  log = %q\n}\n", logFile)
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		fmt.Fprintf(&b, "command %q {\n  run = [\"sh\", \"-c\", \"echo %s >> ${local.log}; sleep 0.3; echo %s > $GATEPIPE_OUT_DIR/o\"]\n}\n", n, n, n)
	}
	fmt.Fprintf(&b, "command \"join\" {\n  run = [\"sh\", \"-c\", \"echo join >> ${local.log}\"]\n  depends_on = [command.n1, command.n2, command.n3, command.n4]\n}\n")
	writeFile(t, filepath.Join(dir, "main.hcl"), b.String())
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = gp(t, cache, "apply", "-parallelism", "2", dir)
		}(i)
	}
	wg.Wait()
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("apply %d: %d\n%s%s", i, r.code, r.stdout, r.stderr)
		}
	}
	if lines := strings.Fields(readFile(logFile)); len(lines) != 5 {
		t.Fatalf("nodes ran %d times in total, want 5 (each once): %v", len(lines), lines)
	}
	if v := gp(t, cache, "cache", "verify"); v.code != 0 {
		t.Fatalf("cache verify: %s%s", v.stdout, v.stderr)
	}
}

func TestSavedPlanIsRefusedWhenStale(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	src := "command \"c\" {\n  run = [\"sh\", \"-c\", \"echo one > $GATEPIPE_OUT_DIR/o\"]\n}\n"
	writeFile(t, filepath.Join(dir, "main.hcl"), src)
	planFile := filepath.Join(dir, "p.plan")
	if r := gp(t, cache, "plan", "-out", planFile, dir); r.code != 0 {
		t.Fatalf("plan: %s%s", r.stdout, r.stderr)
	}
	if r := gp(t, cache, "apply", planFile); r.code != 0 || !strings.Contains(r.stdout, "1 ran") {
		t.Fatalf("apply plan: %d %s%s", r.code, r.stdout, r.stderr)
	}
	// The cache changed since the plan (c is now cached): refuse.
	if r := gp(t, cache, "apply", planFile); r.code != exitRunFailure || !strings.Contains(r.stderr, "Saved plan is stale") {
		t.Fatalf("stale (cache) plan: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := gp(t, cache, "plan", "-out", planFile, dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	writeFile(t, filepath.Join(dir, "main.hcl"), strings.Replace(src, "one", "two", 1))
	if r := gp(t, cache, "apply", planFile); r.code != exitRunFailure || !strings.Contains(r.stderr, "configuration") {
		t.Fatalf("stale (config) plan: %d %s%s", r.code, r.stdout, r.stderr)
	}
}

func TestExitCodesAndReplace(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
command "ok" {
  run = ["true"]
}
command "bad" {
  run = ["sh", "-c", "echo doomed; exit 3"]
}
command "after_bad" {
  run        = ["true"]
  depends_on = [command.bad]
}
`)
	r := gp(t, cache, "apply", dir)
	if r.code != exitRunFailure || !strings.Contains(r.stdout, "1 ran, 0 cached, 1 failed, 1 skipped") || !strings.Contains(r.stdout, "doomed") {
		t.Fatalf("failing apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := gp(t, cache, "apply", "-replace=command.ok", "-replace=command.bad", dir); !strings.Contains(r.stdout, "1 ran") {
		t.Fatalf("replace: %s%s", r.stdout, r.stderr)
	}
	if r := gp(t, cache, "validate", filepath.Join(dir, "nope")); r.code != exitConfigError {
		t.Fatalf("missing path: exit %d", r.code)
	}
	if r := gp(t, cache, "frobnicate"); r.code != exitConfigError || !strings.Contains(r.stderr, "unknown command") {
		t.Fatalf("unknown verb: %d %s", r.code, r.stderr)
	}
	for _, verb := range []string{"validate", "plan", "apply", "graph", "fmt", "cache", "runs", "version"} {
		if r := gp(t, cache, verb, "--help"); r.code != 0 || !strings.Contains(r.stderr, "Usage: gatepipe "+verb) {
			t.Errorf("%s --help: exit %d\n%s", verb, r.code, r.stderr)
		}
	}
	if r := gp(t, cache, "runs"); r.code != 0 || strings.Count(r.stdout, "\n") < 3 {
		t.Fatalf("runs: %s%s", r.stdout, r.stderr)
	}
}

func TestPlanGolden(t *testing.T) {
	cache := t.TempDir()
	r := gp(t, cache, "plan", "testdata/golden/pipeline")
	if r.code != 0 {
		t.Fatalf("plan: %s%s", r.stdout, r.stderr)
	}
	golden := "testdata/golden/plan.txt"
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.WriteFile(golden, []byte(r.stdout), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(want) {
		t.Fatalf("plan output differs from %s (UPDATE_GOLDEN=1 rewrites it):\n--- got ---\n%s--- want ---\n%s", golden, r.stdout, want)
	}
	g := gp(t, cache, "graph", "testdata/golden/pipeline")
	if g.code != 0 || !strings.Contains(g.stdout, `"command.prepare" -> "command.train"`) {
		t.Fatalf("graph: %s%s", g.stdout, g.stderr)
	}
}

func TestFmt(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.hcl"), "command \"c\" {\nrun=[\"true\"]\n}\n")
	if r := gp(t, t.TempDir(), "fmt", "-check", dir); r.code != exitRunFailure || !strings.Contains(r.stdout, "a.hcl") {
		t.Fatalf("fmt -check: %d %s%s", r.code, r.stdout, r.stderr)
	}
	if r := gp(t, t.TempDir(), "fmt", dir); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := readFile(filepath.Join(dir, "a.hcl")); got != "command \"c\" {\n  run = [\"true\"]\n}\n" {
		t.Fatalf("formatted:\n%s", got)
	}
	writeFile(t, filepath.Join(dir, "b.hcl"), "command \"c\" {\n")
	if r := gp(t, t.TempDir(), "fmt", dir); r.code != exitConfigError {
		t.Fatalf("syntax error: exit %d", r.code)
	}
}

func TestEEVEECommands(t *testing.T) {
	r := gp(t, t.TempDir(), "eevee", "check-published", "-random", "4", "-k-min", "2", "-k-max", "3", "-seeds", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "mean") || !strings.Contains(r.stdout, "seed 0") ||
		!strings.Contains(r.stdout, "Figure 3: single benchmarks (k = 1)") || !strings.Contains(r.stdout, "importance in the k = 8 set") {
		t.Fatalf("check-published: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bad := filepath.Join(t.TempDir(), "single.csv")
	writeFile(t, bad, "rank,benchmark\n1,ade20k\n1,nycc\n")
	if r := gp(t, t.TempDir(), "eevee", "check-published", "-random", "1", "-k-max", "2", "-seeds", "0", "-single", bad); r.code != exitRunFailure || !strings.Contains(r.stderr, "given to both") {
		t.Fatalf("bad single ranking: %d %s", r.code, r.stderr)
	}
	r = gp(t, t.TempDir(), "eevee", "loo", "-tier", "acdc,clevr-math")
	if r.code != 0 || !strings.Contains(r.stdout, "eevee meta-model") || !strings.Contains(r.stdout, "pool mean") {
		t.Fatalf("loo: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := gp(t, t.TempDir(), "eevee", "loo", "-tier", "clev"); r.code != exitRunFailure || !strings.Contains(r.stderr, `"clev"`) {
		t.Fatalf("unknown tier benchmark: %d %s", r.code, r.stderr)
	}
}

// TestFakeGPUsRunOneExperimentPerGPU: with a fake nvidia-smi reporting 4
// GPUs, 16 GPU experiments run at most 4 at a time, each child sees
// exactly one GPU in CUDA_VISIBLE_DEVICES and no two running children
// share one; a child killed with SIGKILL fails only its own node.
func TestFakeGPUsRunOneExperimentPerGPU(t *testing.T) {
	cache, dir, bin := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(bin, "nvidia-smi"), "#!/bin/sh\n"+
		"echo '0, GPU-0000, Fake GPU, 81559 MiB'\necho '1, GPU-1111, Fake GPU, 81559 MiB'\n"+
		"echo '2, GPU-2222, Fake GPU, 81559 MiB'\necho '3, GPU-3333, Fake GPU, 81559 MiB'\n")
	os.Chmod(filepath.Join(bin, "nvidia-smi"), 0o755)
	logFile := filepath.Join(dir, "gpu.log")
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
locals {
  log = %q
  run = "echo start $CUDA_VISIBLE_DEVICES >> ${local.log}; sleep 0.4; echo end $CUDA_VISIBLE_DEVICES >> ${local.log}"
}
command "exp" {
  count = 16
  run   = count.index == 5 ? ["sh", "-c", "kill -9 $$"] : ["sh", "-c", "${local.run} # ${count.index}"]
  resources {
    gpus = 1
    cpus = 0
  }
}
`, logFile))
	cmd := exec.Command(binPath, "apply", "-parallelism", "16", dir)
	cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache, "PATH="+bin+":"+os.Getenv("PATH"))
	cmd.Env = slicesDelete(cmd.Env, "CUDA_VISIBLE_DEVICES=")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitRunFailure {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "15 ran, 0 cached, 1 failed, 0 skipped") {
		t.Fatalf("want exactly the killed experiment to fail:\n%s", out)
	}
	running := map[string]bool{}
	peak := 0
	for _, line := range strings.Split(strings.TrimSpace(readFile(logFile)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("child saw CUDA_VISIBLE_DEVICES %q, want exactly one GPU", strings.Join(f[1:], " "))
		}
		gpu := f[1]
		if gpu != "0" && gpu != "1" && gpu != "2" && gpu != "3" {
			t.Fatalf("unexpected CUDA_VISIBLE_DEVICES=%q", gpu)
		}
		switch f[0] {
		case "start":
			if running[gpu] {
				t.Fatalf("two children ran on GPU %s at once", gpu)
			}
			running[gpu] = true
			peak = max(peak, len(running))
		case "end":
			delete(running, gpu)
		}
	}
	if peak != 4 {
		t.Fatalf("at most %d experiments ran at once, want 4", peak)
	}
	if r := gp(t, cache, "devices"); !strings.Contains(r.stdout, "cpu:") {
		t.Fatalf("devices: %s", r.stdout)
	}
}

func slicesDelete(env []string, prefix string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

// TestExternalTrainerFeedsResults runs examples/external_trainer's
// stdlib-only trainer through the trainer protocol on a small generated
// IDX dataset and checks its metrics reach the results matrix.
// toyDatasetHCL declares the dataset of writeToyIDX's files, with a
// quarter of the training images held out for validation.
const toyDatasetHCL = `
dataset "toy" {
  source {
    url = "train-img"
  }
  source {
    url = "train-lab"
  }
  source {
    url = "test-img"
  }
  source {
    url = "test-lab"
  }
  format       = "idx"
  train        = ["train-img", "train-lab"]
  test         = ["test-img", "test-lab"]
  val_fraction = 0.25
}
`

// writeToyIDX writes a two-class 4x4 image dataset in IDX files
// (train-img, train-lab: 40 images; test-img, test-lab: 20): bright images
// are class 1, dark ones class 0.
func writeToyIDX(t *testing.T, dir string) {
	t.Helper()
	idx := func(dims []int, data []byte) []byte {
		var b bytes.Buffer
		b.Write([]byte{0, 0, 8, byte(len(dims))})
		for _, d := range dims {
			b.Write([]byte{byte(d >> 24), byte(d >> 16), byte(d >> 8), byte(d)})
		}
		b.Write(data)
		return b.Bytes()
	}
	mk := func(n int) ([]byte, []byte) {
		var img, lab []byte
		for i := 0; i < n; i++ {
			c := byte(i % 2)
			for p := 0; p < 16; p++ {
				img = append(img, 30+c*180+byte((i*7+p)%20))
			}
			lab = append(lab, c)
		}
		return img, lab
	}
	ti, tl := mk(40)
	vi, vl := mk(20)
	writeFile(t, filepath.Join(dir, "train-img"), string(idx([]int{40, 4, 4}, ti)))
	writeFile(t, filepath.Join(dir, "train-lab"), string(idx([]int{40}, tl)))
	writeFile(t, filepath.Join(dir, "test-img"), string(idx([]int{20, 4, 4}, vi)))
	writeFile(t, filepath.Join(dir, "test-lab"), string(idx([]int{20}, vl)))
}

func TestExternalTrainerFeedsResults(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	cache, dir := t.TempDir(), t.TempDir()
	writeToyIDX(t, dir)
	trainer, _ := filepath.Abs("../../examples/external_trainer")
	writeFile(t, filepath.Join(dir, "main.hcl"), toyDatasetHCL+fmt.Sprintf(`
command "train" {
  run = ["python3", "%[1]s/trainer.py"]
  env = { PYTHONPATH = "%[1]s" }
  experiment = {
    model     = "centroid"
    benchmark = "toy"
    category  = "Img Class"
    dataset   = dataset.toy.path
    seed      = 7
  }
}
results "toy" {
  metrics = [command.train.metrics]
}
output "matrix" {
  value = results.toy.matrix
}
`, trainer))
	r := gp(t, cache, "apply", dir)
	if r.code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var matrix string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "matrix = ") {
			matrix = strings.Trim(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "matrix = ")), `"`)
		}
	}
	got := readFile(matrix)
	if !strings.Contains(got, "Img Class,toy,Acc@1,centroid,100,true") {
		t.Fatalf("matrix lacks the trainer's Acc@1:\n%s", got)
	}
	// gatepipe records the run's metadata beside the trainer's metrics.
	runs, _ := filepath.Glob(filepath.Join(cache, "objects", "*", "*", "run.json"))
	if len(runs) != 1 {
		t.Fatalf("want one run.json in the cache, found %v", runs)
	}
	info := readFile(runs[0])
	for _, want := range []string{`"seed": 7`, `"node": "command.train"`, `"action_id": "`, `"device": "cpu x`} {
		if !strings.Contains(info, want) {
			t.Errorf("run.json lacks %s:\n%s", want, info)
		}
	}
}

// TestProcessIsolation: nodes run as `gatepipe exec` children store the
// same outputs as in-process runs, and a child killed with SIGKILL fails
// only its own node.
func TestProcessIsolation(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "data.bin"), "some bytes")
	writeFile(t, filepath.Join(dir, "main.hcl"), `
variable "victims" {
  default = 2
}
dataset "d" {
  source {
    url = "data.bin"
  }
  format = "raw"
}
command "ok" {
  run = ["sh", "-c", "cat ${dataset.d.path}/data.bin > $GATEPIPE_OUT_DIR/copy"]
}
command "victim" {
  count = var.victims
  # The second instance kills its parent: the gatepipe exec child when
  # isolated (only in that case does the test create it).
  run = count.index == 1 ? ["sh", "-c", "kill -9 $PPID; sleep 5"] : ["true"]
}
`)
	outputs := func(cache string, isolation string, victims string) (map[string]string, result) {
		r := gp(t, cache, "apply", "-isolation", isolation, "-var", "victims="+victims, dir)
		recs, _ := filepath.Glob(filepath.Join(cache, "runs", "*.json"))
		if len(recs) == 0 {
			t.Fatalf("no run record; apply said %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		var rec struct {
			Nodes []struct {
				Addr     string `json:"addr"`
				OutputID string `json:"output_id"`
			} `json:"nodes"`
		}
		data := readFile(recs[len(recs)-1])
		if err := json.Unmarshal([]byte(data), &rec); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, n := range rec.Nodes {
			m[n.Addr] = n.OutputID
		}
		return m, r
	}
	iso, r := outputs(t.TempDir(), "process", "2")
	if r.code != exitRunFailure || !strings.Contains(r.stdout, "3 ran, 0 cached, 1 failed") || !strings.Contains(r.stdout, "killed") {
		t.Fatalf("isolated apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	inproc, _ := outputs(t.TempDir(), "none", "1")
	for _, addr := range []string{"dataset.d", "command.ok", "command.victim[0]"} {
		if iso[addr] == "" || iso[addr] != inproc[addr] {
			t.Errorf("%s: output %q in a child process, %q in process", addr, iso[addr], inproc[addr])
		}
	}
}

// TestExportShellRunsThePlan: the script `export -format shell` writes,
// run with bash, leaves every node cached for the next apply.
func TestExportShellRunsThePlan(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.hcl"), `
command "a" {
  run = ["sh", "-c", "echo a > $GATEPIPE_OUT_DIR/o"]
}
command "b" {
  run = ["sh", "-c", "cat ${command.a.out_dir}/o > $GATEPIPE_OUT_DIR/o"]
}
`)
	script := filepath.Join(t.TempDir(), "plan.sh")
	if r := gp(t, cache, "export", "-format", "shell", "-o", script, dir); r.code != 0 {
		t.Fatalf("export: %s%s", r.stdout, r.stderr)
	}
	if out, err := exec.Command("bash", script).CombinedOutput(); err != nil {
		t.Fatalf("running the exported script: %v\n%s", err, out)
	}
	if r := gp(t, cache, "apply", dir); r.code != 0 || !strings.Contains(r.stdout, "All 2 node instances were cached") {
		t.Fatalf("apply after the script: %s%s", r.stdout, r.stderr)
	}
	r := gp(t, cache, "export", "-format", "json", dir)
	if r.code != 0 || !strings.Contains(r.stdout, `"nodes": null`) {
		t.Fatalf("a fully cached plan should export no nodes:\n%s", r.stdout)
	}
}

// TestCacheGCBesideAnApply: `cache gc` while an apply runs (a node
// waiting for a file the test writes after the gc) does not wait for it and removes only
// what no run holds: the apply's cached first node, planned as cached and
// older than -older-than, stays, so the apply ends well; a gc after it
// takes the rest.
func TestCacheGCBesideAnApply(t *testing.T) {
	cache, dir := t.TempDir(), t.TempDir()
	gate, started := filepath.Join(dir, "go-on"), filepath.Join(dir, "started")
	first := "command \"first\" {\n  run = [\"sh\", \"-c\", \"echo one > $GATEPIPE_OUT_DIR/o\"]\n}\n"
	writeFile(t, filepath.Join(dir, "main.hcl"), first)
	if r := gp(t, cache, "apply", dir); r.code != 0 {
		t.Fatalf("first apply: %d\n%s", r.code, r.stderr)
	}
	time.Sleep(1100 * time.Millisecond) // the entry is older than -older-than 1s
	writeFile(t, filepath.Join(dir, "main.hcl"), first+fmt.Sprintf(
		"command \"waits\" {\n  run = [\"sh\", \"-c\", \"touch %s; while [ ! -e %s ]; do sleep 0.05; done; echo two > $GATEPIPE_OUT_DIR/o\"]\n  depends_on = [command.first]\n}\n", started, gate))
	done := make(chan result, 1)
	go func() { done <- gp(t, cache, "apply", dir) }()
	deadline := time.Now().Add(20 * time.Second)
	for _, err := os.Stat(started); err != nil && time.Now().Before(deadline); _, err = os.Stat(started) {
		time.Sleep(20 * time.Millisecond)
	}
	gc := gp(t, cache, "cache", "gc", "-older-than", "1s")
	os.WriteFile(gate, nil, 0o644)
	r := <-done
	if gc.code != 0 || !strings.Contains(gc.stdout, "An apply is using the cache") || !strings.Contains(gc.stdout, "Removed 0 entries") {
		t.Fatalf("gc beside the apply: exit %d\n%s%s", gc.code, gc.stdout, gc.stderr)
	}
	if r.code != 0 {
		t.Fatalf("the apply beside gc: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	time.Sleep(1100 * time.Millisecond)
	if after := gp(t, cache, "cache", "gc", "-older-than", "1s"); after.code != 0 || strings.Contains(after.stdout, "An apply is using") || strings.Contains(after.stdout, "Removed 0 entries") {
		t.Fatalf("gc after the apply: exit %d\n%s%s", after.code, after.stdout, after.stderr)
	}
}
