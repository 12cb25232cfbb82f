package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/pipelines"
)

func runRuns(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "runs", "runs [flags] [RUN-ID]\n\nLists the run records of earlier applies, newest last. Given a run ID (or a\nunique prefix), prints that record as JSON.")
	dir := fs.String("cache-dir", "", "cache directory (default: $GATEPIPE_CACHE_DIR or $XDG_CACHE_HOME/gatepipe)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	cc, err := cache.Open(c.cacheDir(*dir, &pipelines.Settings{}, "."))
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe runs:", err)
		return exitRunFailure
	}
	paths, err := cc.Runs()
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe runs:", err)
		return exitRunFailure
	}
	if len(pos) == 1 {
		var match []string
		for _, p := range paths {
			if strings.HasPrefix(filepath.Base(p), pos[0]) {
				match = append(match, p)
			}
		}
		if len(match) != 1 {
			fmt.Fprintf(c.stderr, "gatepipe runs: %d run records match %q\n", len(match), pos[0])
			return exitConfigError
		}
		data, err := os.ReadFile(match[0])
		if err != nil {
			fmt.Fprintln(c.stderr, "gatepipe runs:", err)
			return exitRunFailure
		}
		c.stdout.Write(data)
		fmt.Fprintln(c.stdout)
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tDURATION\tRAN\tCACHED\tFAILED\tSKIPPED")
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r engine.RunRecord
		if json.Unmarshal(data, &r) != nil {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\n", r.ID, r.Started.Local().Format(time.DateTime),
			formatDuration(r.Finished.Sub(r.Started)), r.Counts["ran"], r.Counts["cached"], r.Counts["failed"], r.Counts["skipped"])
	}
	tw.Flush()
	return exitOK
}
