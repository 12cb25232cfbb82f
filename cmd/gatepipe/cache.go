package main

import (
	"context"
	"fmt"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/pipelines"
)

func runCache(ctx context.Context, c *cli, args []string) int {
	usage := `cache <ls|du|verify|gc> [flags]

  ls       list cached outputs, oldest first (as runs), with the node and pipeline that made each
  du       show disk usage per area
  verify   re-hash every output and download; -repair removes damaged entries
  gc       remove entries unused for -older-than (default 720h), outputs no
           entry refers to, and leftovers of interrupted runs; while an apply
           runs, only what no run holds (downloads no node is reading, outputs
           no entry refers to), unless -wait waits for the applies to end`
	if code, done := c.subcommandHelp(args, usage); done {
		return code
	}
	sub := args[0]
	fs := newFlagSet(c, "cache "+sub, usage)
	dir := fs.String("cache-dir", "", "cache directory (default: $GATEPIPE_CACHE_DIR or $XDG_CACHE_HOME/gatepipe)")
	olderThan := fs.Duration("older-than", 720*time.Hour, "gc: remove entries not used for this long")
	repair := fs.Bool("repair", false, "verify: remove damaged entries so the next apply recomputes them")
	wait := fs.Bool("wait", false, "gc: wait for running applies to end, then collect everything (default: collect now what no run holds)")
	if _, code, ok := parseArgs(fs, args[1:]); !ok {
		return code
	}
	root := c.cacheDir(*dir, &pipelines.Settings{}, ".")
	cc, err := c.openCache(root)
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe cache:", err)
		return exitRunFailure
	}
	code := exitOK
	switch sub {
	case "ls":
		err = c.cacheList(cc)
	case "du":
		err = c.cacheUsage(cc)
	case "verify":
		code, err = c.cacheVerify(cc, *repair)
	case "gc":
		err = c.cacheGC(ctx, cc, *olderThan, *wait)
	default:
		fmt.Fprintf(c.stderr, "gatepipe cache: unknown subcommand %q.%s Use ls, du, verify or gc.\n", sub, didYouMean(sub, []string{"ls", "du", "verify", "gc"}))
		return exitConfigError
	}
	if err != nil {
		fmt.Fprintln(c.stderr, "gatepipe cache:", err)
		return exitRunFailure
	}
	return code
}

// cacheList prints the cached outputs, oldest first (as runs lists the
// applies that made them), with the node and pipeline that made each.
func (c *cli) cacheList(cc *cache.Cache) error {
	entries, err := cc.List()
	if err != nil {
		return err
	}
	slices.Reverse(entries)
	made := madeBy(cc)
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tOUTPUT\tFILES\tSIZE\tCREATED\tNODE\tPIPELINE")
	for _, e := range entries {
		m, ok := made[e.Action.String()]
		if !ok {
			m = maker{"-", "-"}
		}
		if e.Part != "" {
			m.addr = e.Part // a part of a node's work: one seed of a training
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.Action.Short(), e.Output.Short(), e.Files, humanBytes(e.Size), e.Time.Format(time.DateTime), m.addr, m.pipeline)
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "%d entries in %s\n", len(entries), cc.Dir())
	return nil
}

// cacheUsage prints the disk usage of each area.
func (c *cli) cacheUsage(cc *cache.Cache) error {
	u, err := cc.DiskUsage()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 2, 4, 2, ' ', 0)
	for _, row := range []struct {
		name string
		n    int64
	}{{"outputs", u.Objects}, {"downloads", u.Blobs}, {"partial downloads", u.Partial}, {"training checkpoints", u.Resume}, {"work dirs", u.Tmp}, {"run records", u.Runs}, {"total", u.Total}} {
		fmt.Fprintf(tw, "%s\t%s\n", row.name, humanBytes(row.n))
	}
	return tw.Flush()
}

// cacheVerify re-hashes every output and download and prints the damaged
// ones (removed with repair); damage left in place is a failure.
func (c *cli) cacheVerify(cc *cache.Cache, repair bool) (int, error) {
	problems, err := cc.Verify(repair)
	if err != nil {
		return exitRunFailure, err
	}
	for _, p := range problems {
		fmt.Fprintf(c.stdout, "damaged: %s: %v\n", p.What, p.Err)
	}
	if len(problems) == 0 {
		fmt.Fprintln(c.stdout, "The cache is intact.")
		return exitOK, nil
	}
	if repair {
		fmt.Fprintf(c.stdout, "%d damaged entries removed; the next apply recomputes them.\n", len(problems))
		return exitOK, nil
	}
	fmt.Fprintf(c.stdout, "%d damaged entries (they are cache misses; -repair removes them).\n", len(problems))
	return exitRunFailure, nil
}

// cacheGC removes what GC removes and says how much.
func (c *cli) cacheGC(ctx context.Context, cc *cache.Cache, olderThan time.Duration, wait bool) error {
	gc := cc.GCNow
	if wait {
		gc = cc.GC
	}
	st, err := gc(ctx, olderThan)
	if err != nil {
		return err
	}
	if st.Beside {
		fmt.Fprintln(c.stdout, "An apply is using the cache: removing only what no run holds (downloads no node is reading, outputs no entry refers to). Run `gatepipe cache gc` again when it ends, or with -wait, for the rest.")
	}
	for _, p := range st.Planted {
		fmt.Fprintf(c.stdout, "Removed a file planted in the cache, never followed: %s\n", p)
	}
	fmt.Fprintf(c.stdout, "Removed %d entries, %d outputs, %d downloads and %d leftovers (%s).\n", st.Actions, st.Objects, st.Blobs, st.Other, humanBytes(st.Bytes))
	return nil
}

// maker is the node and pipeline a cache entry was last seen for.
type maker struct{ addr, pipeline string }

// madeBy maps action IDs to the node address and pipeline that the run
// records name them under (the latest record wins; an entry whose records
// were pruned is not in it).
func madeBy(cc *cache.Cache) map[string]maker {
	out := map[string]maker{}
	paths, err := cc.Runs()
	if err != nil {
		return out
	}
	for _, r := range loadRuns(paths) {
		for _, n := range r.Nodes {
			if n.ActionID != "" {
				out[n.ActionID] = maker{n.Addr, orDash(r.Pipeline)}
			}
		}
	}
	return out
}
