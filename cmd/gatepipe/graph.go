package main

import (
	"context"
	"fmt"
)

func runGraph(ctx context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "graph", "graph [flags] [PATH]\n\nPrints the block-level dependency graph in Graphviz DOT format, edges pointing\nthe way data flows. Render it with: gatepipe graph | dot -Tsvg > graph.svg")
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
	s, code := c.load(ctx, sessionOptions{path: path, flags: &flags})
	if s == nil {
		return code
	}
	if err := s.engine.DOT(c.stdout); err != nil {
		fmt.Fprintln(c.stderr, "gatepipe:", err)
		return exitRunFailure
	}
	return exitOK
}
