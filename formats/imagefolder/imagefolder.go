// Package imagefolder reads a directory of images with one sub-directory
// per class (PNG and JPEG), converting every image to a fixed size and
// channel count (through imagedec, as PIL would).
package imagefolder

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/gatepipe/gatepipe/formats/imagedec"
)

// Images is the decoded folder.
type Images struct {
	Classes []string
	Pixels  []byte // N*C*H*W, channel-major per image
	Labels  []int64
	Files   []string // relative paths, in example order
}

// Listing is a folder's images, listed but not decoded.
type Listing struct {
	Classes []string
	Labels  []int64
	Files   []string // relative paths, in example order
}

// List finds root/<class>/<image> (PNG and JPEG) in fsys without
// decoding them. As torchvision's ImageFolder does, images in
// sub-directories of a class belong to it (root/cat/sub/n.png is a cat),
// listed directory by directory in the sorted order of their paths, each
// directory's files sorted. classes, when non-nil, fixes the class order (so train
// and test folders agree); otherwise the sorted sub-directory names are
// used. A class folder with no image is an error, as in torchvision,
// rather than a class without examples.
func List(fsys fs.FS, root string, classes []string) (*Listing, error) {
	if classes == nil {
		entries, err := fs.ReadDir(fsys, root)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				classes = append(classes, e.Name())
			}
		}
		sort.Strings(classes)
		if len(classes) == 0 {
			return nil, fmt.Errorf("%s: no class sub-directories", root)
		}
	}
	out := &Listing{Classes: classes}
	var empty []string
	for ci, class := range classes {
		files, err := classFiles(fsys, root, class)
		if err != nil {
			return nil, fmt.Errorf("class %q: %w", class, err)
		}
		if len(files) == 0 {
			empty = append(empty, class)
		}
		for _, f := range files {
			out.Labels = append(out.Labels, int64(ci))
			out.Files = append(out.Files, f)
		}
	}
	if len(out.Labels) == 0 {
		return nil, fmt.Errorf("%s: no PNG or JPEG images found", root)
	}
	if len(empty) > 0 {
		return nil, emptyClassesError(root, empty)
	}
	return out, nil
}

// emptyClassesError says that the class folders empty under root hold no
// image: a class without examples would be trained and scored as if it
// existed, so, as torchvision's ImageFolder ("Found no valid file for the
// classes ..."), the folder is refused.
func emptyClassesError(root string, empty []string) error {
	quoted := make([]string, len(empty))
	for i, c := range empty {
		quoted[i] = fmt.Sprintf("%q", c)
	}
	what := fmt.Sprintf("class folder %s has", quoted[0])
	if len(empty) > 1 {
		what = fmt.Sprintf("class folders %s have", strings.Join(quoted, ", "))
	}
	return fmt.Errorf("image_folder %q: %s no PNG or JPEG images (torchvision's ImageFolder refuses this too); remove the folder or add images", root, what)
}

// Read lists root as List does and decodes every image to channels x
// height x width.
func Read(root string, classes []string, channels, height, width int) (*Images, error) {
	if channels != 1 && channels != 3 {
		return nil, fmt.Errorf("channels must be 1 or 3, not %d", channels)
	}
	if height <= 0 || width <= 0 {
		return nil, fmt.Errorf("image size must be positive, not %dx%d", height, width)
	}
	fsys := os.DirFS(root)
	l, err := List(fsys, ".", classes)
	if err != nil {
		return nil, err
	}
	out := &Images{Classes: l.Classes, Labels: l.Labels, Files: l.Files}
	r := &Reader{Dec: imagedec.New()}
	for _, f := range l.Files {
		if out.Pixels, err = r.Append(out.Pixels, fsys, f, channels, height, width); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Reader decodes image files one after another into channel-major
// pixels, reusing its decoder and the buffer it reads each file into.
type Reader struct {
	Dec  *imagedec.Decoder
	data []byte
}

// NewReader returns a Reader whose decoder refuses images declaring more
// than maxPixels pixels (0: the decoder's default bound).
func NewReader(maxPixels int64) *Reader {
	d := imagedec.New()
	d.MaxPixels = maxPixels
	return &Reader{Dec: d}
}

// fileReaderInto is a file system that reads a file into a caller's
// buffer (an archive read in place).
type fileReaderInto interface {
	ReadFileInto(name string, buf []byte) ([]byte, error)
}

// read reads the file p (a name in fsys, or a path on disk when fsys is
// nil) into the reader's buffer.
func (r *Reader) read(fsys fs.FS, p string) ([]byte, error) {
	if fr, ok := fsys.(fileReaderInto); ok {
		return fr.ReadFileInto(p, r.data[:0])
	}
	if fsys != nil {
		return fs.ReadFile(fsys, p)
	}
	return ReadFileInto(p, r.data[:0])
}

// ReadFileInto reads the file at path whole into buf's storage, grown
// when the file does not fit.
func ReadFileInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := bytes.NewBuffer(buf[:0])
	if _, err := b.ReadFrom(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Append decodes the image file p (a name in fsys, or a path on disk
// when fsys is nil), scales it to height x width as imagedec does (PIL's
// bilinear resize) and appends its pixels to out channel-major.
func (r *Reader) Append(out []byte, fsys fs.FS, p string, channels, height, width int) ([]byte, error) {
	data, err := r.read(fsys, p)
	if err != nil {
		return out, err
	}
	if cap(data) > cap(r.data) {
		r.data = data[:0]
	}
	out, err = r.Dec.AppendCHW(out, data, channels, height, width)
	if err != nil {
		return out, fmt.Errorf("%s: cannot decode image: %w", p, err)
	}
	return out, nil
}

// classFiles lists the PNG and JPEG files under root/class, at any depth,
// as paths relative to root, in torchvision's order: directories sorted
// by path (a directory's files before its sub-directories'), then files
// by name.
func classFiles(fsys fs.FS, root, class string) ([]string, error) {
	byDir := map[string][]string{}
	top := path.Join(root, class)
	err := fs.WalkDir(fsys, top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(path.Ext(d.Name())) {
		case ".png", ".jpg", ".jpeg":
			rel := class + strings.TrimPrefix(p, top) // class/sub/n.png
			byDir[path.Dir(rel)] = append(byDir[path.Dir(rel)], rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// torchvision sorts os.walk's (root, dirs, files) tuples: by the
	// directory's whole path, so "a" < "a-b" < "a/b".
	dirs := slices.Sorted(maps.Keys(byDir))
	var out []string
	for _, d := range dirs {
		files := byDir[d]
		sort.Strings(files)
		out = append(out, files...)
	}
	return out, nil
}
