package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// slurmReady makes sure a Slurm cluster answers, starting the single-node
// one of scripts/slurm-localhost.sh when we are root; otherwise it says
// why the test cannot run.
func slurmReady(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("sinfo", "-h", "-o", "%t").Output(); err == nil && strings.TrimSpace(string(out)) != "" && !strings.Contains(string(out), "down") {
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("no Slurm cluster answers and starting one (scripts/slurm-localhost.sh) needs root: skipping the Slurm integration test")
	}
	out, err := exec.Command("bash", "../../scripts/slurm-localhost.sh", "start").CombinedOutput()
	if err != nil {
		t.Skipf("could not start a local Slurm cluster, skipping the Slurm integration test:\n%s", out)
	}
}

// TestSlurmExecutor runs a tier of command nodes through a real Slurm
// cluster: dependency order holds, a failing job marks its dependents
// skipped, and re-applying submits nothing once everything is cached.
func TestSlurmExecutor(t *testing.T) {
	slurmReady(t)
	cache, dir := t.TempDir(), t.TempDir()
	logFile := filepath.Join(dir, "order.log")
	writeFile(t, filepath.Join(dir, "main.hcl"), fmt.Sprintf(`
variable "fail" {
  type    = bool
  default = true
}
locals {
  log = %q
}
command "a" {
  run = ["sh", "-c", "echo a >> ${local.log}; echo a > $GATEPIPE_OUT_DIR/o"]
}
command "b" {
  run = ["sh", "-c", "echo b >> ${local.log}; cat ${command.a.out_dir}/o > $GATEPIPE_OUT_DIR/o"]
}
command "c" {
  run = ["sh", "-c", "echo c >> ${local.log}; cat ${command.b.out_dir}/o > $GATEPIPE_OUT_DIR/o"]
}
command "bad" {
  run = var.fail ? ["sh", "-c", "exit 3"] : ["true"]
}
command "after_bad" {
  run        = ["sh", "-c", "echo after_bad >> ${local.log}"]
  depends_on = [command.bad]
}
`, logFile))
	apply := func(args ...string) result {
		cmd := exec.Command(binPath, append([]string{"apply", "-executor", "slurm"}, args...)...)
		cmd.Env = append(os.Environ(), "GATEPIPE_CACHE_DIR="+cache, "GATEPIPE_SLURM_POLL=200ms")
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{so.String(), se.String(), code}
	}
	r := apply(dir)
	if r.code != exitRunFailure || !strings.Contains(r.stdout, "3 ran, 0 cached, 1 failed, 1 skipped") || !strings.Contains(r.stdout, "Submitted 5 Slurm jobs") {
		t.Fatalf("first apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Fields(readFile(logFile)); strings.Join(got, " ") != "a b c" {
		t.Fatalf("jobs ran in order %v, want a b c and not after_bad", got)
	}
	r = apply("-var", "fail=false", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Submitted 2 Slurm jobs") {
		t.Fatalf("second apply: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = apply("-var", "fail=false", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "Submitted 0 Slurm jobs") || !strings.Contains(r.stdout, "All 5 node instances were cached") {
		t.Fatalf("re-apply submitted work: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestExportSlurmScript submits the exported sbatch chain to the cluster
// and checks that afterwards apply finds everything cached.
func TestExportSlurmScript(t *testing.T) {
	slurmReady(t)
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
	if r := gp(t, cache, "export", "-format", "slurm", "-o", script, dir); r.code != 0 {
		t.Fatalf("export: %s%s", r.stdout, r.stderr)
	}
	out, err := exec.Command("bash", script).CombinedOutput()
	if err != nil {
		t.Fatalf("submitting: %v\n%s", err, out)
	}
	var last string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		last = strings.TrimSpace(line[strings.LastIndex(line, " ")+1:])
	}
	// Wait for the last job (b) to leave the queue.
	for i := 0; i < 120; i++ {
		q, _ := exec.Command("squeue", "-h", "-j", last).Output()
		if strings.TrimSpace(string(q)) == "" {
			break
		}
		exec.Command("sleep", "0.5").Run()
	}
	if r := gp(t, cache, "apply", dir); r.code != 0 || !strings.Contains(r.stdout, "All 2 node instances were cached") {
		t.Fatalf("apply after the Slurm script: %s%s", r.stdout, r.stderr)
	}
}
