package imagecsv

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// imageExts are the file types an index holds.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true}

// Index finds image files by the names a table gives them: a path
// relative to one of the indexed directories, a file name, or a file name
// without its extension (HAM10000's image_id, the diabetic retinopathy
// set's image column).
type Index struct {
	byKey map[string]string
	// clash holds keys that name two different files, with both.
	clash map[string][2]string
	count int
}

// NewIndex indexes the PNG and JPEG files under each of dirs (on disk);
// the index holds their paths.
func NewIndex(dirs []string) (*Index, error) {
	ix := newIndex()
	for _, dir := range dirs {
		err := ix.addTree(os.DirFS(dir), ".", func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) })
		if err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// NewIndexFS indexes the PNG and JPEG files under each of dirs in fsys;
// the index holds their names in fsys.
func NewIndexFS(fsys fs.FS, dirs []string) (*Index, error) {
	ix := newIndex()
	for _, dir := range dirs {
		if err := ix.addTree(fsys, dir, func(p string) string { return p }); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

func newIndex() *Index {
	return &Index{byKey: map[string]string{}, clash: map[string][2]string{}}
}

// addTree indexes the images under dir in fsys, in name order, by their
// name relative to dir, their file name and its stem; each key finds the
// image's file(p).
func (ix *Index) addTree(fsys fs.FS, dir string, file func(p string) string) error {
	var found []string
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && imageExts[strings.ToLower(path.Ext(p))] {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(found)
	for _, p := range found {
		rel := strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			rel = p
		}
		base := path.Base(p)
		stem := strings.TrimSuffix(base, path.Ext(base))
		for _, k := range []string{rel, base, stem} {
			ix.add(k, file(p))
		}
		ix.count++
	}
	return nil
}

func (ix *Index) add(key, p string) {
	if old, ok := ix.byKey[key]; ok && old != p {
		if _, seen := ix.clash[key]; !seen {
			ix.clash[key] = [2]string{old, p}
		}
		return
	}
	ix.byKey[key] = p
}

// Len is the number of image files indexed.
func (ix *Index) Len() int { return ix.count }

// Find returns the file a table names.
func (ix *Index) Find(name string) (string, error) {
	name = strings.TrimSpace(filepath.ToSlash(name))
	if c, ok := ix.clash[name]; ok {
		return "", fmt.Errorf("image %q is ambiguous: both %s and %s match; list only one of their directories in images", name, c[0], c[1])
	}
	if p, ok := ix.byKey[name]; ok {
		return p, nil
	}
	return "", fmt.Errorf("image %q is not among the %d images found", name, ix.count)
}
