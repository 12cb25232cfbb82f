package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/pipelines"
)

func runRuns(_ context.Context, c *cli, args []string) int {
	fs := newFlagSet(c, "runs", `runs [flags] [show [-json]] [RUN-ID]

Lists the run records of earlier applies, newest last, with their totals.
"runs show RUN-ID" prints one run's per-node table (status, duration, device,
output, error); RUN-ID is an ID, a unique prefix of one, or "last". With
-json, or as "runs RUN-ID", it prints the record as JSON.`)
	dir := fs.String("cache-dir", "", "cache directory (default: $GATEPIPE_CACHE_DIR or $XDG_CACHE_HOME/gatepipe)")
	asJSON := fs.Bool("json", false, "with show: print the record as JSON")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	cc, err := c.openCache(c.cacheDir(*dir, &pipelines.Settings{}, "."))
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe runs:", err)
		return exitRunFailure
	}
	paths, err := cc.Runs()
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe runs:", err)
		return exitRunFailure
	}
	show := len(pos) > 0 && pos[0] == "show"
	if show {
		pos = pos[1:]
		if len(pos) != 1 {
			fmt.Fprintln(c.stderr, "gatepipe runs show: want one RUN-ID (or \"last\")")
			return exitConfigError
		}
	}
	if len(pos) > 1 {
		fmt.Fprintln(c.stderr, "gatepipe runs: want at most one RUN-ID")
		return exitConfigError
	}
	if len(pos) == 1 {
		var match []string
		for _, p := range paths {
			if strings.HasPrefix(filepath.Base(p), pos[0]) || (pos[0] == "last" && p == paths[len(paths)-1]) {
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
		if !show || *asJSON {
			c.stdout.Write(data)
			fmt.Fprintln(c.stdout)
			return exitOK
		}
		var r engine.RunRecord
		if err := json.Unmarshal(data, &r); err != nil {
			fmt.Fprintf(c.stderr, "gatepipe runs: %s: %v\n", match[0], err)
			return exitRunFailure
		}
		writeRunTable(c.stdout, &r)
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tDURATION\tOUTCOME\tRAN\tCACHED\tFAILED\tSKIPPED\tPIPELINE")
	for _, r := range loadRuns(paths) {
		took := "-"
		if !r.Finished.IsZero() {
			took = formatDuration(r.Finished.Sub(r.Started))
		}
		pipeline := r.Pipeline
		if pipeline == "" {
			pipeline = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.ID, r.Started.Local().Format(time.DateTime),
			took, r.DisplayOutcome(), r.Counts["ran"], r.Counts["cached"], r.Counts["failed"], r.Counts["skipped"], pipeline)
	}
	tw.Flush()
	return exitOK
}

// writeRunTable prints one run: its totals, then a row per node.
func writeRunTable(w io.Writer, r *engine.RunRecord) {
	took := "unfinished"
	if !r.Finished.IsZero() {
		took = formatDuration(r.Finished.Sub(r.Started))
	}
	fmt.Fprintf(w, "Run %s of %s, started %s, took %s, %s: %d ran, %d cached, %d failed, %d skipped.\n\n",
		r.ID, orDash(r.Pipeline), r.Started.Local().Format(time.DateTime), took, r.DisplayOutcome(),
		r.Counts["ran"], r.Counts["cached"], r.Counts["failed"], r.Counts["skipped"])
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tKIND\tSTATUS\tDURATION\tDEVICE\tOUTPUT\tERROR")
	for _, n := range r.Nodes {
		dur, out := "-", "-"
		if n.Status == engine.RunRan || n.Status == engine.RunFailed {
			dur = formatDuration(time.Duration(n.DurationMS * float64(time.Millisecond)))
		}
		if len(n.OutputID) >= 12 {
			out = n.OutputID[:12]
		}
		dev := n.Device
		if dev == "" {
			dev = "-"
		}
		errText := ""
		if n.Error != "" {
			errText = printable(strings.SplitN(n.Error, "\n", 2)[0])
			if len(errText) > 80 {
				errText = errText[:77] + "..."
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Addr, n.Kind, n.Status, dur, dev, out, errText)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// loadRuns reads the run records at paths, in their order, leaving out
// those that cannot be read.
func loadRuns(paths []string) []engine.RunRecord {
	var out []engine.RunRecord
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r engine.RunRecord
		if json.Unmarshal(data, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}
