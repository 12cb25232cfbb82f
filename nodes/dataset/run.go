package dataset

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/formats/archive"
	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/formats/safetensors"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/zclconf/go-cty/cty"
)

// Run fetches, extracts, parses, splits and writes the example store.
func (n *Node) Run(ctx context.Context, env *nodes.Env) (cty.Value, error) {
	f := newFetcher(env)
	files := map[string]cty.Value{}
	var metaSources []examplestore.Source
	var got []fetched
	for _, s := range n.sources {
		if s.scheme != "file" {
			fs, err := n.fetchRemote(ctx, env, s)
			if err != nil {
				return cty.NilVal, err
			}
			for _, g := range fs {
				files[g.name] = cty.StringVal(g.path)
				metaSources = append(metaSources, examplestore.Source{Name: g.name, URL: g.url, SHA256: g.sha})
			}
			got = append(got, fs...)
			continue
		}
		p, sum, err := f.fetchLocal(ctx, s)
		if err != nil {
			return cty.NilVal, err
		}
		files[s.name] = cty.StringVal(p)
		metaSources = append(metaSources, examplestore.Source{Name: s.name, URL: s.URL, SHA256: sum})
		got = append(got, fetched{s: s, name: s.name, path: p, url: s.URL, sha: sum})
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
	if err := os.MkdirAll(rawDir, 0o777); err != nil {
		return cty.NilVal, err
	}
	for _, g := range got {
		if g.s.extract && archive.Kind(g.name) != "" {
			if _, err := archive.ExtractLimited(g.path, g.name, rawDir, g.s.limits); err != nil {
				return cty.NilVal, err
			}
			continue
		}
		// A copy, never a link: the output must not share an inode with
		// the blob, or damage to one would be damage to both. g.name is a
		// checked relative path (sources.CheckRelPath).
		if err := copyFile(g.path, filepath.Join(rawDir, filepath.FromSlash(g.name))); err != nil {
			return cty.NilVal, err
		}
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
	var train, test *examples
	var err error
	if n.cfg.Format == "generated" {
		env.Progress.Update(0, 0, "generating")
		if train, test, err = n.generate(); err != nil {
			return cty.NilVal, err
		}
	} else if train, err = n.parse(rawDir, n.cfg.Train, nil); err != nil {
		return cty.NilVal, fmt.Errorf("train data: %w", err)
	}
	if len(n.cfg.Test) > 0 {
		if test, err = n.parse(rawDir, n.cfg.Test, train.classes); err != nil {
			return cty.NilVal, fmt.Errorf("test data: %w", err)
		}
		if fmt.Sprint(test.shape) != fmt.Sprint(train.shape) {
			return cty.NilVal, fmt.Errorf("test examples have shape %v but training examples have %v", test.shape, train.shape)
		}
	}
	var val *examples
	if len(n.cfg.Val) > 0 {
		if val, err = n.parse(rawDir, n.cfg.Val, train.classes); err != nil {
			return cty.NilVal, fmt.Errorf("validation data: %w", err)
		}
		if fmt.Sprint(val.shape) != fmt.Sprint(train.shape) {
			return cty.NilVal, fmt.Errorf("validation examples have shape %v but training examples have %v", val.shape, train.shape)
		}
	}
	task := n.task
	if train.task != "" {
		if n.cfg.Task != nil && *n.cfg.Task != train.task && !(train.task == "classification" && *n.cfg.Task == "regression") {
			return cty.NilVal, fmt.Errorf("task = %q, but the label column holds %s targets", *n.cfg.Task, train.task)
		}
		if n.cfg.Task == nil {
			task = train.task
		}
	}
	out["task"] = cty.StringVal(task)
	if len(n.cfg.ClassNames) > 0 {
		if task != "classification" || len(n.cfg.ClassNames) != len(train.classes) {
			return cty.NilVal, fmt.Errorf("class_names lists %d names but the data has %d classes", len(n.cfg.ClassNames), len(train.classes))
		}
		train.classes = n.cfg.ClassNames
		for _, e := range []*examples{test, val} {
			if e != nil {
				e.classes = n.cfg.ClassNames
			}
		}
	}
	if len(n.cfg.KeepClasses) > 0 {
		if train, err = train.keepClasses(n.cfg.KeepClasses); err != nil {
			return cty.NilVal, fmt.Errorf("keep_classes: train data: %w", err)
		}
		if test != nil {
			if test, err = test.keepClasses(n.cfg.KeepClasses); err != nil {
				return cty.NilVal, fmt.Errorf("keep_classes: test data: %w", err)
			}
		}
		if val != nil {
			if val, err = val.keepClasses(n.cfg.KeepClasses); err != nil {
				return cty.NilVal, fmt.Errorf("keep_classes: validation data: %w", err)
			}
		}
	}

	splits := n.split(train, test)
	if val != nil {
		// A seeded subset of the validation files when max_val caps them.
		splits["val"] = val.subset(n.seededSubset(val.len(), n.maxVal, 0x7a1))
	}
	meta := &examplestore.Meta{
		Format: n.cfg.Format, Task: task, Classes: train.classes, NumClasses: len(train.classes),
		Shape: train.shape, Features: train.features, DType: string(train.dtype), Vocab: train.vocab,
		Normalize: n.normalization(train, splits["train"]), SplitSeed: n.splitSeed, Sources: metaSources,
	}
	if err := examplestore.Write(env.OutDir, meta, splits); err != nil {
		return cty.NilVal, err
	}
	classes := make([]cty.Value, len(train.classes))
	for i, c := range train.classes {
		classes[i] = cty.StringVal(c)
	}
	shape := make([]cty.Value, len(train.shape))
	for i, d := range train.shape {
		shape[i] = cty.NumberIntVal(int64(d))
	}
	counts := map[string]cty.Value{}
	for name, s := range splits {
		counts[name] = cty.NumberIntVal(int64(s.Len()))
	}
	out["num_classes"] = cty.NumberIntVal(int64(len(train.classes)))
	if len(classes) > 0 {
		out["classes"] = cty.ListVal(classes)
	}
	if len(shape) > 0 {
		out["shape"] = cty.ListVal(shape)
	}
	out["splits"] = cty.MapVal(counts)
	return cty.ObjectVal(out), nil
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
	var out []fetched
	for _, file := range pin.Files {
		if err := sources.CheckRelPath(file.Path); err != nil {
			return nil, fmt.Errorf("source %s: %w", s.URL, err)
		}
		p, err := env.Sources.Fetch(ctx, s.ref, file, env.Progress)
		if err != nil {
			return nil, err
		}
		out = append(out, fetched{s: s, name: file.Path, path: p, url: file.URL, sha: file.SHA256})
	}
	return out, nil
}

// split assigns examples to train/val/test with a generator seeded by
// split_seed only (never the training seed), then applies max_train,
// max_val and max_test.
func (n *Node) split(train, test *examples) map[string]*examplestore.Split {
	N := train.len()
	rng := rand.New(rand.NewPCG(uint64(n.splitSeed), 0x9e3779b97f4a7c15))
	perm := rng.Perm(N)
	nVal := int(math.Floor(n.valFraction * float64(N)))
	nTest := int(math.Floor(n.testFraction * float64(N)))
	take := func(idx []int) []int {
		out := append([]int(nil), idx...)
		sort.Ints(out)
		return out
	}
	capped := func(idx []int, limit int) []int {
		if limit > 0 && len(idx) > limit {
			return idx[:limit]
		}
		return idx
	}
	valIdx := take(capped(perm[:nVal], n.maxVal))
	testIdx := take(capped(perm[nVal:nVal+nTest], n.maxTest))
	rest := perm[nVal+nTest:]
	if n.maxTrain > 0 && len(rest) > n.maxTrain {
		rest = rest[:n.maxTrain]
	}
	splits := map[string]*examplestore.Split{"train": train.subset(take(rest))}
	if nVal > 0 {
		splits["val"] = train.subset(valIdx)
	}
	if nTest > 0 {
		splits["test"] = train.subset(testIdx)
	}
	if test != nil {
		// A seeded subset of the test file when max_test caps it.
		splits["test"] = test.subset(n.seededSubset(test.len(), n.maxTest, 0x7e57))
	}
	return splits
}

// seededSubset returns limit indices of 0..count-1 drawn with split_seed
// (and stream), sorted; all of them when limit is 0 or not below count.
func (n *Node) seededSubset(count, limit int, stream uint64) []int {
	all := rand.New(rand.NewPCG(uint64(n.splitSeed), stream)).Perm(count)
	if limit == 0 || limit >= count {
		for i := range all {
			all[i] = i
		}
		return all
	}
	idx := append([]int(nil), all[:limit]...)
	sort.Ints(idx)
	return idx
}

// normalization computes per-channel statistics on the training split.
func (n *Node) normalization(ex *examples, train *examplestore.Split) examplestore.Normalization {
	scale := 1.0
	if ex.dtype == safetensors.U8 && n.normalize != "none" {
		scale = 1.0 / 255
	}
	channels, inner := examplestore.ChannelLayout(ex.shape)
	norm := examplestore.Normalization{Scale: scale, Mean: make([]float64, channels), Std: make([]float64, channels)}
	for c := range norm.Std {
		norm.Std[c] = 1
	}
	if n.normalize != "standard" {
		return norm
	}
	per := ex.exampleSize() / channels
	sum := make([]float64, channels)
	sq := make([]float64, channels)
	vals := train.X.Float32s()
	size := ex.exampleSize()
	for i, v := range vals {
		c := (i % size / inner) % channels
		x := float64(v) * scale
		sum[c] += x
		sq[c] += x * x
	}
	count := float64(train.Len() * per)
	for c := range sum {
		if count == 0 {
			break
		}
		mean := sum[c] / count
		variance := sq[c]/count - mean*mean
		norm.Mean[c] = mean
		if variance > 1e-12 {
			norm.Std[c] = math.Sqrt(variance)
		}
	}
	return norm
}

func mapOrEmpty(m map[string]cty.Value) cty.Value {
	if len(m) == 0 {
		return cty.MapValEmpty(cty.String)
	}
	return cty.MapVal(m)
}

// resolveFiles expands patterns inside the raw directory.
func resolveFiles(rawDir string, patterns []string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return nil, fmt.Errorf("%q must be a path inside the fetched sources", p)
		}
		matches, err := filepath.Glob(filepath.Join(rawDir, p))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%q matches none of the fetched files (%s)", p, strings.Join(listFiles(rawDir), ", "))
		}
		sort.Strings(matches)
		out = append(out, matches...)
	}
	return out, nil
}

func listFiles(dir string) []string {
	var names []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && len(names) < 20 {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	return names
}
