package imagecsv

import (
	"fmt"
	"io/fs"
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

// NewIndex indexes the PNG and JPEG files under each of dirs.
func NewIndex(dirs []string) (*Index, error) {
	ix := &Index{byKey: map[string]string{}, clash: map[string][2]string{}}
	for _, dir := range dirs {
		var found []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && imageExts[strings.ToLower(filepath.Ext(p))] {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, p := range found {
			rel, _ := filepath.Rel(dir, p)
			rel = filepath.ToSlash(rel)
			base := filepath.Base(p)
			stem := strings.TrimSuffix(base, filepath.Ext(base))
			for _, k := range []string{rel, base, stem} {
				ix.add(k, p)
			}
			ix.count++
		}
	}
	return ix, nil
}

// NewIndexFS indexes the PNG and JPEG files under each of dirs in fsys;
// the index holds their names in fsys.
func NewIndexFS(fsys fs.FS, dirs []string) (*Index, error) {
	ix := &Index{byKey: map[string]string{}, clash: map[string][2]string{}}
	for _, dir := range dirs {
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
			return nil, err
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
				ix.add(k, p)
			}
			ix.count++
		}
	}
	return ix, nil
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
