package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/engine"
	"github.com/gatepipe/gatepipe/sources"
	"golang.org/x/sys/unix"
)

// downloadNeeds sums what the will-run and blocked instances must
// download: bytes of pinned files not in the cache, and sources not
// pinned yet (size unknown).
type downloadNeeds struct {
	files    int
	bytes    int64
	unsized  int // files whose size nobody published
	unpinned []string
	missing  []string // "addr: url (sha256 …)"
	// sources are the pinned sources with files to fetch: "addr: ref
	// (N files, size)", a dataset's files or an encoder's weights.
	sources []string
}

func needsOf(dls []engine.Download) downloadNeeds {
	var n downloadNeeds
	seen := map[string]bool{}
	for _, d := range dls {
		if d.Status == engine.StatusCached {
			continue
		}
		if !d.Pinned {
			if !seen["ref "+d.Ref.Key()] {
				seen["ref "+d.Ref.Key()] = true
				n.unpinned = append(n.unpinned, fmt.Sprintf("%s: %s", d.Addr, d.Ref.Key()))
			}
			continue
		}
		files, bytes := 0, int64(0)
		for _, f := range d.Missing {
			if seen[f.SHA256] {
				continue
			}
			seen[f.SHA256] = true
			n.files++
			n.bytes += f.Size
			files, bytes = files+1, bytes+f.Size
			if f.Size == 0 {
				n.unsized++
			}
			n.missing = append(n.missing, fmt.Sprintf("%s: %s (sha256 %s…)", d.Addr, f.URL, f.SHA256[:12]))
		}
		if files > 0 {
			n.sources = append(n.sources, fmt.Sprintf("%s: %s (%d file(s), %s)", d.Addr, d.Ref.Key(), files, humanBytes(bytes)))
		}
	}
	return n
}

// freeBytes is the space left to unprivileged users on dir's disk.
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// printDownloads is plan's summary of what apply will download; the
// sources not pinned yet show the sizes their servers listed.
func printDownloads(w io.Writer, s *session, listings map[string]listing) {
	dls := s.engine.Downloads()
	n := needsOf(dls)
	if n.files == 0 && len(n.unpinned) == 0 {
		return
	}
	fmt.Fprintf(w, "\nDownloads: %d pinned file(s), %s to fetch", n.files, humanBytes(n.bytes))
	if n.unsized > 0 {
		fmt.Fprintf(w, " (and %d of unknown size)", n.unsized)
	}
	if len(n.unpinned) > 0 {
		fmt.Fprintf(w, ", plus %d source(s) not pinned yet", len(n.unpinned))
	}
	fmt.Fprintln(w, ".")
	for _, src := range n.sources {
		fmt.Fprintln(w, "  "+src)
	}
	if len(n.unpinned) == 0 {
		return
	}
	fmt.Fprintf(w, "%d source(s) not pinned in %s yet (apply or `gatepipe fetch` pins them; offline, Hub datasets in the Hugging Face cache are read there):\n", len(n.unpinned), sources.LockFileName)
	seen := map[string]bool{}
	for _, d := range dls {
		if d.Status == engine.StatusCached || d.Pinned || seen[d.Ref.Key()] {
			continue
		}
		seen[d.Ref.Key()] = true
		l, asked := listings[d.Ref.Key()]
		size := "size unknown until it is fetched"
		switch {
		case asked && l.err != nil:
			size = "size unknown: " + l.err.Error()
		case asked && l.Files > 0 && l.Unsized == 0:
			size = fmt.Sprintf("%d file(s), %s as its server lists them", l.Files, humanBytes(l.Bytes))
		case asked && l.Files > 0:
			size = fmt.Sprintf("%d file(s), %s and %d of unstated size as its server lists them", l.Files, humanBytes(l.Bytes), l.Unsized)
		}
		fmt.Fprintf(w, "  %s: %s (%s)\n", d.Addr, d.Ref.Key(), size)
	}
}

// checkDownloads runs before apply: offline, every file must already be
// in the cache; online, the cache disk must hold what is to download.
func (c *cli) checkDownloads(s *session) int {
	r := s.engine.Options().Sources
	if r == nil {
		return exitOK
	}
	n := needsOf(s.engine.Downloads())
	if r.Offline() && len(n.missing)+len(n.unpinned) > 0 {
		fmt.Fprintf(c.stderr, "Error: offline, and %d file(s) are not in the cache and %d source(s) are not pinned:\n", len(n.missing), len(n.unpinned))
		for _, m := range append(n.missing, n.unpinned...) {
			fmt.Fprintln(c.stderr, "  "+m)
		}
		fmt.Fprintln(c.stderr, "Run `gatepipe fetch` for this pipeline where the network is reachable (same cache), then apply -offline again.")
		return exitRunFailure
	}
	if free, ok := freeBytes(s.cache.Dir()); ok && n.bytes > free {
		fmt.Fprintf(c.stderr, "Error: apply must download %s (%d files) but the cache disk (%s) has %s free. Free space (gatepipe cache gc), or point -cache-dir at a larger disk.\n",
			humanBytes(n.bytes), n.files, s.cache.Dir(), humanBytes(free))
		return exitRunFailure
	}
	return exitOK
}

// loadSources parses the flags of fetch and lock and loads the pipeline
// with a sources resolver in the given mode.
func loadSources(ctx context.Context, c *cli, args []string, name, usage string, mode sourcesMode) (*session, int) {
	s, _, code := loadSourcesWith(ctx, c, args, name, usage, mode, 0, nil)
	return s, code
}

// loadSourcesWith is loadSources for a command that takes lead positional
// arguments before PATH (mirror's DIR), which it returns, or flags of its
// own (registered by more, when not nil).
func loadSourcesWith(ctx context.Context, c *cli, args []string, name, usage string, mode sourcesMode, lead int, more func(*flag.FlagSet)) (*session, []string, int) {
	fs := newFlagSet(c, name, usage)
	var f runFlags
	f.configFlags.register(fs)
	f.src.register(fs, false)
	if more != nil {
		more(fs)
	}
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return nil, nil, code
	}
	if len(pos) < lead {
		fmt.Fprintf(c.stderr, "gatepipe %s: expected %d argument(s) before PATH.\n\nUsage: gatepipe %s\n", name, lead, usage)
		return nil, nil, exitConfigError
	}
	path, ok := pathArg(pos[lead:], c.stderr)
	if !ok {
		return nil, nil, exitConfigError
	}
	s, code := c.load(ctx, sessionOptions{path: path, flags: &f.configFlags, withCache: true, sources: mode, sourceOpts: f.src})
	return s, pos[:lead], code
}

// pinnedFile is one file of a planned download.
type pinnedFile struct {
	d    engine.Download
	file sources.File
}

// pinnedFiles plans the session, which pins every source whose block is
// known, and lists the files of every pinned download, each URL once;
// sources not pinned yet are named on stderr with what becomes of them
// (later). It returns nil, with the exit code, when planning failed.
func (c *cli) pinnedFiles(ctx context.Context, s *session, later string) ([]pinnedFile, int) {
	_, diags := s.engine.Plan(ctx)
	s.view.Diagnostics(append(s.warnings, diags...))
	c.hintIfUnreachable(diags)
	if diags.HasErrors() {
		return nil, exitConfigError
	}
	out := []pinnedFile{}
	at := map[string]int{} // URL -> its index in out
	for _, d := range s.engine.Downloads() {
		if !d.Pinned {
			fmt.Fprintf(c.stderr, "gatepipe: %s: %s is not pinned (its block waits on others); %s\n", d.Addr, d.Ref.Key(), later)
			continue
		}
		for _, f := range d.Pin.Files {
			i, ok := at[f.URL]
			switch {
			case !ok:
				at[f.URL] = len(out)
				out = append(out, pinnedFile{d, f})
			case out[i].d.Status == engine.StatusCached && d.Status != engine.StatusCached:
				out[i] = pinnedFile{d, f} // a node that will run needs it
			}
		}
	}
	return out, exitOK
}

func runFetch(ctx context.Context, c *cli, args []string) int {
	var toHF bool
	var parallel int
	s, _, code := loadSourcesWith(ctx, c, args, "fetch", "fetch [flags] [PATH]\n\nDownloads every remote source the pipeline declares into the cache and pins\nits checksums in "+sources.LockFileName+", without running anything: run it on\na login node, then `apply -offline` on a compute node that shares the cache.\nWith -hf-cache, Hub files also go into the Hugging Face cache, as\nhuggingface_hub lays it out, for Python tools to share.", sourcesResolve, 0,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&toHF, "hf-cache", false, "also write every Hub file into the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub), as huggingface_hub would")
			fs.IntVar(&parallel, "parallel", sources.DefaultParallel, fmt.Sprintf("download up to N files at once (at most %d from one host)", sources.DefaultPerHost))
		})
	if s == nil {
		return code
	}
	var hf sources.HFCache
	if toHF {
		hf = sources.HFCache{Root: sources.HFCacheRoot(c.env, c.env("HOME"))}
	}
	pinned, code := c.pinnedFiles(ctx, s, "apply will fetch it")
	if pinned == nil {
		return code
	}
	r := s.engine.Options().Sources
	var files, fetched, spared int
	var bytes, sparedBytes int64
	// Every file once, fetched side by side (sources.FetchAll: a few at a
	// time, fewer from one host); a failure is reported and the others go
	// on.
	var jobs []sources.FetchJob
	var owners []engine.Download
	seen := map[string]bool{}
	for _, pf := range pinned {
		if seen[pf.file.SHA256] {
			continue
		}
		seen[pf.file.SHA256] = true
		files++
		have := r.Has(pf.file)
		if have && (hf.IsZero() || pf.d.Ref.HF == "") {
			continue
		}
		if !have && pf.d.Status == engine.StatusCached {
			// Only a node whose output is cached reads it: a dataset
			// with keep_sources = false let it go once its store was
			// written, and apply will not need it again.
			spared++
			sparedBytes += pf.file.Size
			continue
		}
		if !have {
			fmt.Fprintf(c.stdout, "fetching %s (%s)\n", pf.file.URL, humanBytes(pf.file.Size))
			fetched++
			bytes += pf.file.Size
		}
		jobs = append(jobs, sources.FetchJob{Ref: pf.d.Ref, File: pf.file})
		owners = append(owners, pf.d)
	}
	var failures []string
	for i, res := range r.FetchAll(ctx, jobs, parallel, nil) {
		d, err := owners[i], res.Err
		if err == nil && !hf.IsZero() && d.Ref.HF != "" {
			err = hf.Store(d.Ref, d.Pin.Commit, res.Job.File, res.Path)
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %s: %v", d.Addr, res.Job.File.URL, err))
			if !r.Has(res.Job.File) {
				fetched--
				bytes -= res.Job.File.Size
			}
		}
	}
	if !hf.IsZero() {
		fmt.Fprintf(c.stdout, "Hub files also in the Hugging Face cache %s.\n", hf.Root)
	}
	if spared > 0 {
		fmt.Fprintf(c.stdout, "%d file(s) (%s) not fetched: only nodes whose outputs are cached read them (keep_sources = false let them go).\n", spared, humanBytes(sparedBytes))
	}
	pins := "pins in " + r.Lock().Path()
	switch _, err := os.Stat(r.Lock().Path()); {
	case files == 0:
		pins = "no remote source to pin"
	case err != nil:
		pins = "no lock file written: the configuration pins every source itself"
	}
	if len(failures) > 0 {
		fmt.Fprintf(c.stdout, "%d file(s) in the cache, %d downloaded now (%s); %s.\n", files-spared-len(failures), fetched, humanBytes(bytes), pins)
		fmt.Fprintf(c.stderr, "Error: %d file(s) could not be fetched (the others were):\n", len(failures))
		for _, f := range failures {
			fmt.Fprintln(c.stderr, "  "+f)
		}
		return exitRunFailure
	}
	fmt.Fprintf(c.stdout, "%d file(s) in the cache, %d downloaded now (%s); %s.\n", files-spared, fetched, humanBytes(bytes), pins)
	return exitOK
}

func runLock(ctx context.Context, c *cli, args []string) int {
	s, code := loadSources(ctx, c, args, "lock", "lock [flags] [PATH]\n\nPins every remote source again from upstream and rewrites "+sources.LockFileName+",\nreporting what changed; pins of sources no longer declared are dropped. Run it\nwhen an upstream file changed on purpose (apply refuses a changed file).", sourcesPinned)
	if s == nil {
		return code
	}
	if _, diags := s.engine.Plan(ctx); diags.HasErrors() {
		s.view.Diagnostics(append(s.warnings, diags...))
		return exitConfigError
	}
	old := s.engine.Options().Sources
	lock := old.Lock()
	fresh := sources.New(sources.Options{Mirror: old.Mirror(), Blobs: s.cache, Getenv: c.env, Home: c.env("HOME")})
	keep := map[string]bool{}
	changed := 0
	var lines []string
	for _, d := range s.engine.Downloads() {
		key := d.Ref.Key()
		if keep[key] || (d.Ref.HF == "" && d.Ref.SHA256 != "") {
			continue // declared in the configuration: not the lock's
		}
		keep[key] = true
		pin, err := fresh.Resolve(ctx, d.Ref, nil)
		if err != nil {
			fmt.Fprintf(c.stderr, "Error: %s: %v\n", d.Addr, err)
			return exitRunFailure
		}
		before, had := lock.Get(key)
		switch {
		case !had:
			lines = append(lines, "+ "+key)
			changed++
		case !samePin(before, pin):
			lines = append(lines, "~ "+key+describeChange(before, pin))
			changed++
		}
		lock.Set(key, pin)
	}
	for _, k := range lock.Keys() {
		if !keep[k] {
			lines = append(lines, "- "+k)
			changed++
		}
	}
	lock.Retain(keep)
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(c.stdout, l)
	}
	if err := lock.Save(); err != nil {
		fmt.Fprintln(c.stderr, "Error:", err)
		return exitRunFailure
	}
	fmt.Fprintf(c.stdout, "%d source(s) pinned, %d changed; wrote %s.\n", len(keep), changed, lock.Path())
	return exitOK
}

func samePin(a, b sources.Pin) bool {
	if a.Commit != b.Commit || len(a.Files) != len(b.Files) {
		return false
	}
	for i := range a.Files {
		if a.Files[i].Path != b.Files[i].Path || a.Files[i].SHA256 != b.Files[i].SHA256 {
			return false
		}
	}
	return true
}

func describeChange(a, b sources.Pin) string {
	var parts []string
	if a.Commit != b.Commit {
		parts = append(parts, fmt.Sprintf("commit %s -> %s", a.Commit, b.Commit))
	}
	old := map[string]string{}
	for _, f := range a.Files {
		old[f.Path] = f.SHA256
	}
	for _, f := range b.Files {
		if o, ok := old[f.Path]; ok && o != f.SHA256 {
			parts = append(parts, fmt.Sprintf("%s sha256 %s -> %s", f.Path, o, f.SHA256))
		}
	}
	if len(parts) == 0 {
		return " (files changed)"
	}
	return " (" + strings.Join(parts, "; ") + ")"
}
