package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gatepipe/gatepipe/formats/archive"
	"github.com/gatepipe/gatepipe/formats/imagefolder"
	"github.com/gatepipe/gatepipe/nodes"
	"golang.org/x/sync/errgroup"
)

// rawTree is a dataset's fetched files as its readers see them: the raw
// directory on disk (extracted archives and copied files) and, for the
// image formats, uncompressed tarballs and zips read where they lie in
// the blob store (archive.Tree), each owning the top-level names it holds. Names
// are slash-separated and relative to the tree's root; any bytes are
// allowed on disk, as the extracted files have them.
type rawTree struct {
	dir      string
	archives map[string]*archive.Tree // top-level name → the archive holding it
}

// errNotInPlace says why the sources are extracted after all.
var errNotInPlace = errors.New("two sources write the same top-level name")

// inPlace indexes the uncompressed tarballs and zips among got that an
// image dataset reads in place (and, with streamGz, compressed tarballs),
// as many at once as there are cores, and returns the indices of got it
// covers. It returns none when any archive is of another kind, a tarball
// holds links or names io/fs cannot carry (archive.ErrNotInPlace), two
// sources write the same top-level name, or indexing fails: extraction
// then runs as before and reports what is wrong, with its usual
// precedence of later sources over earlier ones. progress, when not nil,
// hears how many archives are indexed.
func (t *rawTree) inPlace(got []fetched, streamGz bool, progress nodes.Progress) (map[int]bool, error) {
	opened, err := openInPlace(got, streamGz, progress)
	if err != nil {
		return nil, err
	}
	archives := map[string]*archive.Tree{}
	owner := map[string]int{}
	covered := map[int]bool{}
	fail := func(err error) (map[int]bool, error) {
		for _, tfs := range opened {
			if tfs != nil {
				tfs.Close()
			}
		}
		return nil, err
	}
	for i, g := range got {
		tops := []string{strings.SplitN(g.name, "/", 2)[0]}
		if tfs := opened[i]; tfs != nil {
			root, _ := tfs.ReadDir(".")
			tops = tops[:0]
			for _, e := range root {
				tops = append(tops, e.Name())
				archives[e.Name()] = tfs
			}
			if len(root) == 0 { // an empty archive: nothing reads it
				tfs.Close()
				opened[i] = nil
			}
			covered[i] = true
		}
		for _, top := range tops {
			if j, ok := owner[top]; ok && j != i {
				return fail(fmt.Errorf("%q: %w", top, errNotInPlace))
			}
			owner[top] = i
		}
	}
	t.archives = archives
	return covered, nil
}

// openInPlace opens the archives among got that can be read in place, on
// as many goroutines as there are cores (listing a compressed tarball
// decompresses it whole), into the slots of got; a source that is an
// archive of another kind fails it before any is opened.
func openInPlace(got []fetched, streamGz bool, progress nodes.Progress) ([]*archive.Tree, error) {
	opens := make([]func(src, name string, lim archive.Limits) (*archive.Tree, error), len(got))
	total := 0
	for i, g := range got {
		if !g.s.extract {
			continue
		}
		switch kind := archive.Kind(g.name); {
		case kind == "tar":
			opens[i] = archive.OpenTarFS
		case kind == "zip":
			opens[i] = archive.OpenZipFS
		case kind == "tar.gz" && streamGz:
			opens[i] = archive.OpenTarGzFS
		case kind != "":
			return nil, fmt.Errorf("%s: a %s archive is extracted", g.name, kind)
		}
		if opens[i] != nil {
			total++
		}
	}
	if progress == nil {
		progress = nodes.NoProgress{}
	}
	opened := make([]*archive.Tree, len(got))
	var mu sync.Mutex
	done := 0
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, open := range opens {
		if open == nil {
			continue
		}
		g.Go(func() error {
			tfs, err := open(got[i].path, got[i].name, got[i].s.limits)
			if err != nil {
				return err
			}
			mu.Lock()
			opened[i] = tfs
			done++
			progress.Update(int64(done), int64(total), "indexing the archives read in place")
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		for _, tfs := range opened {
			if tfs != nil {
				tfs.Close()
			}
		}
		return nil, err
	}
	return opened, nil
}

func closeArchives(archives map[string]*archive.Tree) {
	seen := map[*archive.Tree]bool{}
	for _, tfs := range archives {
		if !seen[tfs] {
			seen[tfs] = true
			tfs.Close()
		}
	}
}

// close closes the tarballs read in place.
func (t *rawTree) close() { closeArchives(t.archives) }

// layer routes name to the tarball owning its first element, or to disk
// (nil).
func (t *rawTree) layer(name string) *archive.Tree {
	top, _, _ := strings.Cut(name, "/")
	return t.archives[top]
}

// diskPath is name's path on disk, refusing names that would leave the
// raw directory.
func (t *rawTree) diskPath(op, name string) (string, error) {
	if name == "." {
		return t.dir, nil
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || slices.Contains(strings.Split(name, "/"), "..") {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(t.dir, filepath.FromSlash(name)), nil
}

// Open opens a file or directory of the tree.
func (t *rawTree) Open(name string) (fs.File, error) {
	if tfs := t.layer(name); tfs != nil {
		return tfs.Open(name)
	}
	if name == "." && len(t.archives) > 0 {
		entries, err := t.ReadDir(".")
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(t.dir)
		if err != nil {
			return nil, err
		}
		return archive.NewDirFile(info, entries), nil
	}
	p, err := t.diskPath("open", name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

// ReadFile reads a file of the tree whole.
func (t *rawTree) ReadFile(name string) ([]byte, error) { return t.ReadFileInto(name, nil) }

// ReadFileInto reads a file of the tree whole into buf's storage when it
// is large enough (an image reader reuses one buffer).
func (t *rawTree) ReadFileInto(name string, buf []byte) ([]byte, error) {
	if tfs := t.layer(name); tfs != nil {
		b, err := tfs.ReadFileInto(name, buf)
		if err != nil {
			return nil, fmt.Errorf("%s (in %s): %w", name, tfs.Name(), err)
		}
		return b, nil
	}
	p, err := t.diskPath("read", name)
	if err != nil {
		return nil, err
	}
	return imagefolder.ReadFileInto(p, buf)
}

// Stat describes a file or directory of the tree.
func (t *rawTree) Stat(name string) (fs.FileInfo, error) {
	if tfs := t.layer(name); tfs != nil {
		return tfs.Stat(name)
	}
	p, err := t.diskPath("stat", name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

// ReadDir lists a directory sorted by name; the root lists the disk's
// entries and the tarballs' top-level names together.
func (t *rawTree) ReadDir(name string) ([]fs.DirEntry, error) {
	if tfs := t.layer(name); tfs != nil {
		return tfs.ReadDir(name)
	}
	p, err := t.diskPath("readdir", name)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if err != nil || name != "." || len(t.archives) == 0 {
		return entries, err
	}
	seen := map[*archive.Tree]bool{}
	for _, tfs := range t.archives {
		if seen[tfs] {
			continue
		}
		seen[tfs] = true
		root, err := tfs.ReadDir(".")
		if err != nil {
			return nil, err
		}
		entries = append(entries, root...)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	return entries, nil
}

// resolveNames expands patterns (globs relative to the fetched sources)
// into the tree's names, each pattern's matches sorted.
func resolveNames(tree *rawTree, patterns []string) ([]string, error) {
	var out []string
	for _, p := range patterns {
		if filepath.IsAbs(p) || strings.HasPrefix(filepath.Clean(p), "..") {
			return nil, fmt.Errorf("%q must be a path inside the fetched sources", p)
		}
		matches, err := fs.Glob(tree, path.Clean(filepath.ToSlash(p)))
		if err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%q matches none of the fetched files (%s)", p, strings.Join(listNames(tree), ", "))
		}
		sort.Strings(matches)
		out = append(out, matches...)
	}
	return out, nil
}

// resolveFiles expands patterns inside the raw directory on disk into
// paths.
func resolveFiles(rawDir string, patterns []string) ([]string, error) {
	names, err := resolveNames(&rawTree{dir: rawDir}, patterns)
	for i, name := range names {
		names[i] = filepath.Join(rawDir, filepath.FromSlash(name))
	}
	return names, err
}

// listNames is up to 20 of the tree's files, for an error message.
func listNames(tree *rawTree) []string {
	var names []string
	_ = fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if len(names) >= 20 {
			return fs.SkipAll
		}
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	return names
}

// materialize copies the files patterns name from tarballs read in place
// to the tree's directory on disk, where the readers of tables and lists
// open them (they are small: CSVs, label lists, question files). Patterns
// that match nothing in a tarball are left to those readers' errors.
func (t *rawTree) materialize(patterns []string) error {
	if len(t.archives) == 0 {
		return nil
	}
	for _, p := range patterns {
		names, err := resolveNames(t, []string{p})
		if err != nil {
			continue
		}
		for _, name := range names {
			tfs := t.layer(name)
			if tfs == nil {
				continue
			}
			data, err := tfs.ReadFile(name)
			if err != nil {
				return fmt.Errorf("%s (in %s): %w", name, tfs.Name(), err)
			}
			dst, err := t.diskPath("write", name)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o777); err != nil {
				return err
			}
			if err := os.WriteFile(dst, data, 0o666); err != nil {
				return err
			}
		}
	}
	return nil
}
