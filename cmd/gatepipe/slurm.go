package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/nodes/torchrt"
	"github.com/rs/zerolog"
)

// slurmSubmitter runs instances as Slurm batch jobs: each job runs
// `gatepipe exec` on the same (shared) cache.
type slurmSubmitter struct {
	// machine is what runtime = "auto" saw on the submitting machine;
	// each job gets it ($GATEPIPE_MACHINE) so that it resolves auto alike.
	machine  *torchrt.Machine
	log      zerolog.Logger
	self     string
	path     string
	flags    *runFlags
	cacheDir string
	logDir   string
	poll     time.Duration

	mu    sync.Mutex
	addrs map[string]string // job -> address, for messages
}

func newSlurmSubmitter(log zerolog.Logger, path string, flags *runFlags, cacheDir string) (*slurmSubmitter, error) {
	for _, tool := range []string{"sbatch", "squeue", "scontrol", "scancel"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("-executor slurm needs %s on PATH: %w", tool, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	poll := time.Second
	if v, err := time.ParseDuration(os.Getenv("GATEPIPE_SLURM_POLL")); err == nil && v > 0 {
		poll = v
	}
	logDir := filepath.Join(cacheDir, "slurm")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	return &slurmSubmitter{log: log, self: self, path: path, flags: flags, cacheDir: cacheDir, logDir: logDir, poll: poll, addrs: map[string]string{}}, nil
}

// execCommand is the command line a job runs.
func execCommand(self, path, cacheDir string, f *runFlags, addr string) []string {
	args := []string{self, "exec", "-cache-dir", cacheDir, "-log-format", "json", "-log-level", "warn"}
	for _, v := range f.vars {
		args = append(args, "-var", v)
	}
	for _, v := range f.varFiles {
		args = append(args, "-var-file", v)
	}
	for _, r := range f.replace {
		args = append(args, "-replace", r)
	}
	return append(args, path, addr)
}

// shellQuote quotes args for sh.
func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// sbatchArgs returns the sbatch flags for an instance.
func sbatchArgs(addr string, res nodes.Resources, after []string, logDir string) []string {
	name := unsafeName.ReplaceAllString(addr, "_")
	args := []string{"--parsable", "--job-name=gp:" + name, "--output=" + filepath.Join(logDir, name+"-%j.log"),
		"--cpus-per-task=" + strconv.Itoa(max(res.CPUs, 1))}
	if res.Memory > 0 {
		args = append(args, fmt.Sprintf("--mem=%dM", (res.Memory+(1<<20)-1)>>20))
	}
	if res.GPUs > 0 {
		args = append(args, "--gres=gpu:"+strconv.Itoa(res.GPUs))
	}
	if len(after) > 0 {
		args = append(args, "--dependency=afterok:"+strings.Join(after, ":"), "--kill-on-invalid-dep=yes")
	}
	return args
}

func (s *slurmSubmitter) Submit(ctx context.Context, addr string, res nodes.Resources, after []string) (string, error) {
	args := append(sbatchArgs(addr, res, after, s.logDir), "--wrap", shellQuote(execCommand(s.self, s.path, s.cacheDir, s.flags, addr)))
	cmd := exec.CommandContext(ctx, "sbatch", args...)
	if s.machine != nil { // sbatch exports its environment to the job
		cmd.Env = append(os.Environ(), torchrt.MachineEnv+"="+s.machine.Encode())
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch: %v: %s", err, strings.TrimSpace(string(out)))
	}
	job := strings.TrimSpace(strings.Split(strings.TrimSpace(string(out)), ";")[0])
	if _, err := strconv.Atoi(job); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job ID", out)
	}
	s.mu.Lock()
	s.addrs[job] = addr
	s.mu.Unlock()
	ev := s.log.Info().Str("node", addr).Str("job", job)
	if len(after) > 0 {
		ev = ev.Str("after", strings.Join(after, ","))
	}
	ev.Msg("submitted to slurm")
	return job, nil
}

var jobState = regexp.MustCompile(`JobState=(\S+)`)
var exitCode = regexp.MustCompile(`ExitCode=(\S+)`)

func (s *slurmSubmitter) Wait(ctx context.Context, job string) error {
	s.mu.Lock()
	addr := s.addrs[job]
	s.mu.Unlock()
	last := ""
	for {
		out, err := exec.CommandContext(ctx, "squeue", "-h", "-j", job, "-o", "%T").Output()
		state := strings.TrimSpace(string(out))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil && state != "" {
			if state != last {
				s.log.Info().Str("node", addr).Str("job", job).Str("state", state).Msg("slurm")
				last = state
			}
			select {
			case <-time.After(s.poll):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		break
	}
	out, err := exec.CommandContext(ctx, "scontrol", "show", "job", "-o", job).CombinedOutput()
	if err != nil {
		// Purged from the controller: the cache tells whether it worked.
		return nil
	}
	st := jobState.FindSubmatch(out)
	if st == nil || string(st[1]) == "COMPLETED" {
		s.log.Info().Str("node", addr).Str("job", job).Str("state", "COMPLETED").Msg("slurm")
		return nil
	}
	code := ""
	if m := exitCode.FindSubmatch(out); m != nil {
		code = " exit " + string(m[1])
	}
	s.log.Warn().Str("node", addr).Str("job", job).Str("state", string(st[1])).Msg("slurm")
	return fmt.Errorf("slurm job ended %s%s%s", st[1], code, s.jobLog(addr, job))
}

func (s *slurmSubmitter) jobLog(addr, job string) string {
	data, err := os.ReadFile(filepath.Join(s.logDir, unsafeName.ReplaceAllString(addr, "_")+"-"+job+".log"))
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	return tail(strings.TrimSpace(string(data)))
}

func (s *slurmSubmitter) Cancel(jobs []string) {
	if len(jobs) == 0 {
		return
	}
	if err := exec.Command("scancel", jobs...).Run(); err == nil {
		s.log.Info().Strs("jobs", jobs).Msg("scancel")
	}
}
