package dataset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gatepipe/gatepipe/formats/archive"
	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/zclconf/go-cty/cty"
)

// Run fetches, extracts, parses, splits and writes the example store.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	got, release, err := n.fetchInUse(ctx, env)
	if err != nil {
		return cty.NilVal, err
	}
	defer release()
	files := map[string]cty.Value{}
	var metaSources []examplestore.Source
	for _, g := range got {
		files[g.name] = cty.StringVal(g.path)
		metaSources = append(metaSources, examplestore.Source{Name: g.name, URL: g.url, SHA256: g.sha})
	}
	rawDir := filepath.Join(env.OutDir, "raw")
	if n.cfg.Format != "raw" {
		tmp, err := os.MkdirTemp(filepath.Dir(env.OutDir), "raw-")
		if err != nil {
			return cty.NilVal, err
		}
		defer os.RemoveAll(tmp)
		rawDir = tmp
	}
	tree := &rawTree{dir: rawDir}
	defer tree.close()
	if err := n.layOut(env, tree, got); err != nil {
		return cty.NilVal, err
	}

	out := map[string]cty.Value{
		"path":        cty.StringVal(env.OutDir),
		"files":       mapOrEmpty(files),
		"num_classes": cty.NumberIntVal(0),
		"classes":     cty.ListValEmpty(cty.String),
		"shape":       cty.ListValEmpty(cty.Number),
		"splits":      cty.MapValEmpty(cty.Number),
		"task":        cty.StringVal(n.task),
	}
	if n.cfg.Format == "raw" {
		out["path"] = cty.StringVal(rawDir)
		return cty.ObjectVal(out), nil
	}

	env.Progress.Update(0, 0, "parsing")
	train, val, test, err := n.parseSplits(ctx, env, tree)
	if err != nil {
		return cty.NilVal, err
	}
	task, err := n.relabel(train, val, test)
	if err != nil {
		return cty.NilVal, err
	}
	if train, val, test, err = n.keepClasses(train, val, test); err != nil {
		return cty.NilVal, err
	}
	parts, err := n.split(train, val, test)
	if err != nil {
		return cty.NilVal, err
	}
	meta := &examplestore.Meta{
		Format: n.cfg.Format, Task: task, Classes: train.classes, NumClasses: len(train.classes),
		Shape: train.shape, Features: train.features, DType: string(train.dtype), Vocab: train.vocab,
		SplitSeed: n.splitSeed, Sources: metaSources, MetricNames: n.cfg.MetricNames,
	}
	if n.jpegQuality > 0 {
		if err := jpegStorable(train); err != nil {
			return cty.NilVal, err
		}
		meta.Encoding, meta.Quality = examplestore.EncodingJPEG, n.jpegQuality
	}
	if train.group > 1 {
		meta.Group = train.group
	}
	counts, err := n.writeStore(ctx, env, meta, train, parts)
	if err != nil {
		return cty.NilVal, err
	}
	if !n.keepSources() {
		release()
		n.dropSources(env, got)
		out["files"] = cty.MapValEmpty(cty.String)
	}
	out["task"] = cty.StringVal(task)
	storeOutputs(out, train, counts)
	return cty.ObjectVal(out), nil
}

// fetchAll fetches every source: remote ones into the cache (an archive
// source may give several files), local ones checked against the
// fingerprint the plan took.
func (n *Node) fetchAll(ctx context.Context, env *nodes.Env) ([]fetched, error) {
	f := n.newFetcher(env)
	var got []fetched
	for _, s := range n.sources {
		if s.scheme != "file" {
			fs, err := n.fetchRemote(ctx, env, s)
			if err != nil {
				return nil, err
			}
			got = append(got, fs...)
			continue
		}
		v, _ := n.fingerprinted.Load(s.localPath)
		planned, _ := v.(plannedSource)
		p, sum, err := f.fetchLocal(ctx, s, planned)
		if err != nil {
			return nil, err
		}
		got = append(got, fetched{s: s, name: s.name, path: p, url: s.URL, sha: sum})
	}
	return got, nil
}

// layOut puts the fetched files in tree's directory: archives extracted
// (within their limits), other files copied; an image folder's sources
// that can be read in place stay where they are.
func (n *Node) layOut(env *nodes.Env, tree *rawTree, got []fetched) error {
	if err := os.MkdirAll(tree.dir, 0o777); err != nil {
		return err
	}
	var inPlace map[int]bool
	if readsArchivesInPlace(n.cfg.Format) {
		var err error
		if inPlace, err = tree.inPlace(got, streamsCompressedTarballs(n.cfg.Format), env.Progress); err != nil {
			env.Log.Info().Err(err).Msg("extracting the sources: they cannot be read in place")
		}
	}
	for i, g := range got {
		if inPlace[i] {
			continue
		}
		if g.s.extract && archive.Kind(g.name) != "" {
			if _, err := archive.ExtractLimited(g.path, g.name, tree.dir, g.s.limits); err != nil {
				return err
			}
			continue
		}
		// g.name is a checked relative path (sources.CheckRelPath).
		if err := n.placeFile(g.path, filepath.Join(tree.dir, filepath.FromSlash(g.name))); err != nil {
			return err
		}
	}
	return nil
}

// placeFile puts the blob at dst in the raw directory. The store's
// formats read it where it lies, through a symbolic link: the directory is
// temporary and only read, so a 150 GB Parquet source costs no second copy
// on disk. Format "raw" copies it, since its directory is the output and
// must not share an inode with the blob (damage to one would be damage to
// both). An entry already at dst (an earlier source's) is replaced, never
// written through.
func (n *Node) placeFile(blob, dst string) error {
	if n.cfg.Format == "raw" {
		return sources.CopyFile(blob, dst)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
		return err
	}
	if info, err := os.Lstat(dst); err == nil {
		if info.IsDir() {
			return fmt.Errorf("%s: a source file would replace a directory of an earlier source", dst)
		}
		if err := os.Remove(dst); err != nil {
			return err
		}
	}
	abs, err := filepath.Abs(blob)
	if err != nil {
		return err
	}
	return os.Symlink(abs, dst)
}

// readsArchivesInPlace reports whether a format reads its images from
// uncompressed tarballs and zips where they lie (rawTree.inPlace): an image folder,
// or images a table or list names (their tables and lists are copied out).
func readsArchivesInPlace(format string) bool {
	switch format {
	case "image_folder", "image_list", "image_csv", "captions_csv", "vqa_json", "camera_traps", "video_list":
		return true
	}
	return false
}

// streamsCompressedTarballs reports whether a format reads compressed
// tarballs in place too, decompressing each once in its own order as it
// writes the store (video_list: Kinetics' 450 GB of tar.gz parts, each
// video a few MB, copied out one at a time for ffmpeg).
func streamsCompressedTarballs(format string) bool { return format == "video_list" }

// relabel returns the dataset's task (the block's, else what the label
// column holds) and gives the splits the block's class_names.
func (n *Node) relabel(train, val, test *examples) (string, error) {
	task := n.task
	if train.task != "" {
		if n.cfg.Task != nil && *n.cfg.Task != train.task && !(train.task == "classification" && *n.cfg.Task == "regression") {
			return "", fmt.Errorf("task = %q, but the label column holds %s targets", *n.cfg.Task, train.task)
		}
		if n.cfg.Task == nil {
			task = train.task
		}
	}
	if len(n.cfg.ClassNames) > 0 {
		if (task != "classification" && task != "segmentation") || len(n.cfg.ClassNames) != len(train.classes) {
			return "", fmt.Errorf("class_names lists %d names but the data has %d classes", len(n.cfg.ClassNames), len(train.classes))
		}
		train.classes = n.cfg.ClassNames
		for _, e := range []*examples{test, val} {
			if e != nil {
				e.classes = n.cfg.ClassNames
			}
		}
	}
	return task, nil
}

// keepClasses keeps the examples of the block's keep_classes in every
// split there is (all of them without keep_classes).
func (n *Node) keepClasses(train, val, test *examples) (*examples, *examples, *examples, error) {
	if len(n.cfg.KeepClasses) == 0 {
		return train, val, test, nil
	}
	var err error
	if train, err = train.keepClasses(n.cfg.KeepClasses); err != nil {
		return nil, nil, nil, fmt.Errorf("keep_classes: train data: %w", err)
	}
	if test != nil {
		if test, err = test.keepClasses(n.cfg.KeepClasses); err != nil {
			return nil, nil, nil, fmt.Errorf("keep_classes: test data: %w", err)
		}
	}
	if val != nil {
		if val, err = val.keepClasses(n.cfg.KeepClasses); err != nil {
			return nil, nil, nil, fmt.Errorf("keep_classes: validation data: %w", err)
		}
	}
	return train, val, test, nil
}

// storeOutputs sets the block's num_classes, classes, shape and splits
// (counts: the examples each split file holds) from the store written.
func storeOutputs(out map[string]cty.Value, train *examples, counts map[string]int) {
	classes := make([]cty.Value, len(train.classes))
	for i, c := range train.classes {
		classes[i] = cty.StringVal(c)
	}
	shape := make([]cty.Value, len(train.shape))
	for i, d := range train.shape {
		shape[i] = cty.NumberIntVal(int64(d))
	}
	splits := map[string]cty.Value{}
	for name, n := range counts {
		splits[name] = cty.NumberIntVal(int64(n))
	}
	out["num_classes"] = cty.NumberIntVal(int64(len(train.classes)))
	if len(classes) > 0 {
		out["classes"] = cty.ListVal(classes)
	}
	if len(shape) > 0 {
		out["shape"] = cty.ListVal(shape)
	}
	out["splits"] = cty.MapVal(splits)
}

// parseSplits reads the training data and the validation and test data
// the block names (nil when it names none).
func (n *Node) parseSplits(ctx context.Context, env *nodes.Env, tree *rawTree) (train, val, test *examples, err error) {
	switch {
	case n.cfg.Format == "generated":
		env.Progress.Update(0, 0, "generating")
		train, test, err = n.generate()
		return train, nil, test, err
	case annotated(n.cfg.Format):
		train, val, test, err = n.parseAnnotated(ctx, env, tree)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case val != nil && n.valFraction > 0:
			return nil, nil, nil, fmt.Errorf("the annotations have validation rows; remove val_fraction")
		case test != nil && n.testFraction > 0:
			return nil, nil, nil, fmt.Errorf("the annotations have test rows; remove test_fraction")
		}
		return train, val, test, nil
	}
	if train, err = n.parse(ctx, tree, n.cfg.Train, nil); err != nil {
		return nil, nil, nil, fmt.Errorf("train data: %w", err)
	}
	other := func(patterns []string, what string) (*examples, error) {
		if len(patterns) == 0 {
			return nil, nil
		}
		e, err := n.parse(ctx, tree, patterns, train)
		if err != nil {
			return nil, fmt.Errorf("%s data: %w", what, err)
		}
		if fmt.Sprint(e.shape) != fmt.Sprint(train.shape) {
			return nil, fmt.Errorf("%s examples have shape %v but training examples have %v", what, e.shape, train.shape)
		}
		return e, nil
	}
	if test, err = other(n.cfg.Test, "test"); err != nil {
		return nil, nil, nil, err
	}
	if val, err = other(n.cfg.Val, "validation"); err != nil {
		return nil, nil, nil, err
	}
	return train, val, test, nil
}

// fetched is one file of a source, in the blob store.
type fetched struct {
	s    *source
	name string // path in the raw directory
	path string // blob
	url  string
	sha  string
}

// fetchRemote resolves a remote source (its pin comes from the
// configuration, the lock file or the network) and fetches each of its
// files into the blob store.
func (n *Node) fetchRemote(ctx context.Context, env *nodes.Env, s *source) ([]fetched, error) {
	if env.Sources == nil {
		return nil, fmt.Errorf("source %s: no source resolver (internal error)", s.URL)
	}
	pin, err := env.Sources.Resolve(ctx, s.ref, env.Progress)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", s.URL, err)
	}
	jobs := make([]sources.FetchJob, len(pin.Files))
	for i, file := range pin.Files {
		if err := sources.CheckRelPath(file.Path); err != nil {
			return nil, fmt.Errorf("source %s: %w", s.URL, err)
		}
		jobs[i] = sources.FetchJob{Ref: s.ref, File: file}
	}
	if len(jobs) == 1 { // one file: its bytes are the progress
		p, err := env.Sources.Fetch(ctx, s.ref, jobs[0].File, env.Progress)
		if err != nil {
			return nil, err
		}
		return []fetched{{s: s, name: jobs[0].File.Path, path: p, url: jobs[0].File.URL, sha: jobs[0].File.SHA256}}, nil
	}
	// Several (a Hub dataset's shards): side by side, the count of files
	// done as progress; every failure is named.
	done := int64(0)
	results := env.Sources.FetchAll(ctx, jobs, 0, func(sources.FetchResult) {
		done++
		env.Progress.Update(done, int64(len(jobs)), "files fetched")
	})
	var out []fetched
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
			continue
		}
		out = append(out, fetched{s: s, name: r.Job.File.Path, path: r.Path, url: r.Job.File.URL, sha: r.Job.File.SHA256})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("source %s: %d of %d files not fetched: %w", s.URL, len(errs), len(jobs), errors.Join(errs...))
	}
	return out, nil
}

// split assigns examples to train/val/test with a generator seeded by
// split_seed only (never the training seed), then applies max_train,
// max_val and max_test. Validation and test data of their own (val, test;
// nil when the block names none) are capped to seeded subsets instead.
// Only indices and labels are used: no example is decoded here.
func (n *Node) split(train, val, test *examples) ([]splitPart, error) {
	N := train.items()
	rng := rand.New(rand.NewPCG(uint64(n.splitSeed), 0x9e3779b97f4a7c15))
	perm := rng.Perm(N)
	nVal := int(math.Floor(n.valFraction * float64(N)))
	nTest := int(math.Floor(n.testFraction * float64(N)))
	take := func(idx []int) []int {
		out := train.examplesOf(idx)
		sort.Ints(out)
		return out
	}
	rest := train.cap(perm[nVal+nTest:], n.maxTrain)
	parts := []splitPart{{"train", train, take(rest)}}
	if nVal > 0 {
		parts = append(parts, splitPart{"val", train, take(train.cap(perm[:nVal], n.maxVal))})
	}
	if nTest > 0 {
		parts = append(parts, splitPart{"test", train, take(train.cap(perm[nVal:nVal+nTest], n.maxTest))})
	}
	if val != nil {
		parts = append(parts, splitPart{"val", val, n.seededSubset(val, n.maxVal, 0x7a1)})
	}
	if test != nil {
		parts = append(parts, splitPart{"test", test, n.seededSubset(test, n.maxTest, 0x7e57)})
	}
	return parts, nil
}

// seededSubset returns limit indices of e's examples drawn with
// split_seed (and stream), sorted; all of them when limit is 0 or not
// below their count. Classes share the subset evenly (examples.cap).
func (n *Node) seededSubset(e *examples, limit int, stream uint64) []int {
	count := e.items()
	all := rand.New(rand.NewPCG(uint64(n.splitSeed), stream)).Perm(count)
	if limit == 0 || limit >= count {
		for i := range all {
			all[i] = i
		}
		return e.examplesOf(all)
	}
	idx := e.examplesOf(e.cap(all, limit))
	sort.Ints(idx)
	return idx
}

// items is the number of the source's items: examples, or groups of
// examples (examples.group) that are split and capped together.
func (e *examples) items() int { return e.len() / max(e.group, 1) }

// examplesOf returns the examples of the items idx, each item's in order.
func (e *examples) examplesOf(idx []int) []int {
	g := max(e.group, 1)
	if g == 1 {
		return slices.Clone(idx)
	}
	out := make([]int, 0, len(idx)*g)
	for _, i := range idx {
		for k := range g {
			out = append(out, i*g+k)
		}
	}
	return out
}

// cap keeps limit of the shuffled items idx (all when limit is 0). For
// single-label classes the classes take turns, in the order of idx, so a
// small run keeps about limit/classes examples of every class rather than
// the frequent classes' share; other tasks (and groups) keep the first
// limit.
func (e *examples) cap(idx []int, limit int) []int {
	if limit <= 0 || len(idx) <= limit {
		return idx
	}
	if e.y == nil || e.labelsPerExample() != 1 || len(e.classes) < 2 || e.group > 1 {
		return idx[:limit]
	}
	byClass := map[int64][]int{}
	var order []int64
	for _, i := range idx {
		c := e.y[i]
		if _, ok := byClass[c]; !ok {
			order = append(order, c)
		}
		byClass[c] = append(byClass[c], i)
	}
	out := make([]int, 0, limit)
	for round := 0; len(out) < limit; round++ {
		for _, c := range order {
			if round < len(byClass[c]) && len(out) < limit {
				out = append(out, byClass[c][round])
			}
		}
	}
	return out
}

func mapOrEmpty(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.MapValEmpty(cty.String)
	}
	return cty.MapVal(m)
}
