package main

import (
	"context"
	"fmt"

	"github.com/gatepipe/gatepipe/engine"
)

func runValidate(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "validate", "validate [flags] [PATH]\n\nChecks syntax, references, types and every block's arguments without reading or\nwriting the cache. Values known only after apply are treated as unknown.")
	var flags configFlags
	flags.register(fs)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	path, ok := pathArg(pos, c.stderr)
	if !ok {
		return exitConfigError
	}
	s, code := c.load(ctx, sessionOptions{path: path, flags: &flags, engine: engine.Options{}})
	if s == nil {
		return code
	}
	leave := c.interrupts.enter()
	plan, diags := s.engine.Plan(ctx)
	leave()
	s.view.Diagnostics(append(s.warnings, diags...))
	if diags.HasErrors() {
		return exitConfigError
	}
	fmt.Fprintf(c.stdout, "The configuration is valid: %d node instance(s).\n", len(plan.Instances))
	return exitOK
}
