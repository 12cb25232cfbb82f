package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func runExport(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "export", "export [flags] [PATH]\n\nWrites the plan as runnable commands without running anything: every node that\nwould run (cached ones are left out), in dependency order, as a `gatepipe exec`\ncall on the same cache. -format shell is a bash script, slurm a bash script of\nchained sbatch submissions, json a list of nodes with their resources,\ndependencies and commands.")
	var f runFlags
	f.configFlags.register(fs)
	format := fs.String("format", "shell", "shell, slurm or json")
	out := fs.String("o", "", "write to this file instead of standard output")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	path, ok := pathArg(pos, c.stderr)
	if !ok {
		return exitConfigError
	}
	s, code := c.load(ctx, sessionOptions{path: path, flags: &f.configFlags, withCache: true, sources: sourcesPinned})
	if s == nil {
		return code
	}
	if _, diags := s.engine.Plan(ctx); diags.HasErrors() {
		s.view.Diagnostics(diags)
		return exitConfigError
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe export:", err)
		return exitRunFailure
	}
	abs, _ := filepath.Abs(path)
	nodes := s.engine.Export()
	var b strings.Builder
	switch *format {
	case "shell":
		fmt.Fprintf(&b, "#!/usr/bin/env bash\n# gatepipe plan for %s: %d node(s), in dependency order.\nset -euo pipefail\n", abs, len(nodes))
		for _, n := range nodes {
			fmt.Fprintf(&b, "\n# %s (%s, %s)\n%s\n", n.Addr, n.Kind, n.Status, shellQuote(execCommand(self, abs, s.cache.Dir(), &f, n.Addr)))
		}
	case "slurm":
		logDir := filepath.Join(s.cache.Dir(), "slurm")
		fmt.Fprintf(&b, "#!/usr/bin/env bash\n# gatepipe plan for %s as Slurm jobs: %d node(s), chained with afterok.\n# The cache (%s) must be on a path every node shares.\nset -euo pipefail\nmkdir -p %s\n", abs, len(nodes), s.cache.Dir(), shellQuote([]string{logDir}))
		vars := map[string]string{}
		for i, n := range nodes {
			v := fmt.Sprintf("job%d", i)
			vars[n.Addr] = v
			var after []string
			for _, a := range n.After {
				after = append(after, "${"+vars[a]+"}")
			}
			args := sbatchArgs(n.Addr, n.Resources, after, logDir)
			fmt.Fprintf(&b, "\n# %s (%s)\n%s=$(sbatch %s --wrap %s)\necho \"%s: job ${%s}\"\n", n.Addr, n.Kind, v,
				strings.Join(quoteAll(args), " "), shellQuote([]string{shellQuote(execCommand(self, abs, s.cache.Dir(), &f, n.Addr))}), n.Addr, v)
		}
	case "json":
		type jnode struct {
			Node    any      `json:"node"`
			Command []string `json:"command"`
		}
		var out []jnode
		for _, n := range nodes {
			out = append(out, jnode{Node: n, Command: execCommand(self, abs, s.cache.Dir(), &f, n.Addr)})
		}
		data, _ := json.MarshalIndent(map[string]any{"pipeline": abs, "cache_dir": s.cache.Dir(), "nodes": out}, "", "  ")
		b.Write(data)
		b.WriteString("\n")
	default:
		fmt.Fprintf(c.stderr, "gatepipe export: -format must be shell, slurm or json, not %q\n", *format)
		return exitConfigError
	}
	if *out == "" {
		fmt.Fprint(c.stdout, b.String())
		return exitOK
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o755); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe export:", err)
		return exitRunFailure
	}
	return exitOK
}

// quoteAll shell-quotes each argument, leaving ${var} references (job
// IDs) expandable.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.Contains(a, "${") {
			out[i] = `"` + a + `"`
			continue
		}
		out[i] = shellQuote([]string{a})
	}
	return out
}
