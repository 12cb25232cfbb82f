package archive

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// openTarFS writes data to a file and indexes it.
func openTarFS(t testing.TB, data []byte, lim Limits) (*Tree, error) {
	return openTree(t, data, "x.tar", lim, OpenTarFS)
}

// openTree writes data to a file named name and indexes it with open.
func openTree(t testing.TB, data []byte, name string, lim Limits, open func(src, name string, lim Limits) (*Tree, error)) (*Tree, error) {
	t.Helper()
	src := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tree, err := open(src, name, lim)
	if err == nil {
		t.Cleanup(func() { tree.Close() })
	}
	return tree, err
}

// sameTree compares the tree read in place with the extraction in dst
// and returns the former's files and directories.
func sameTree(t *testing.T, tfs fs.FS, dst string) map[string]string {
	t.Helper()
	got, want := treeOf(t, tfs), treeOf(t, os.DirFS(dst))
	if len(got) != len(want) {
		t.Errorf("in place: %d entries, extracted: %d", len(got), len(want))
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("%s: in place %q (present %v), extracted %q", p, g, ok, w)
		}
	}
	return got
}

// treeOf is every file (with its bytes) and directory of fsys.
func treeOf(t testing.TB, fsys fs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[p] = "<dir>"
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTarFSEqualsExtraction(t *testing.T) {
	long := strings.Repeat("deep/", 30) + "name-longer-than-a-ustar-header-holds.JPEG"
	data := tarBytes([]entry{
		{name: "imgs/", typ: tar.TypeDir},
		{name: "imgs/b/2.jpg", body: "two"},
		{name: "imgs/a/1.jpg", body: "one"},
		{name: "imgs/a.txt", body: "sorts after imgs/a/"},
		{name: "imgs/a-b/3.png", body: "3"},
		{name: "imgs/empty/", typ: tar.TypeDir},
		{name: "./top.csv", body: "x,y\n"},
		{name: "imgs/a/1.jpg", body: "replaced"}, // a later entry wins
		{name: "zero", body: ""},
		{name: "fifo", typ: tar.TypeFifo},
		{name: long, body: strings.Repeat("L", 5000)},
	})
	tfs, err := openTarFS(t, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dst, _, err := extractBytes(t, data, "x.tar")
	if err != nil {
		t.Fatal(err)
	}
	got := sameTree(t, tfs, dst)
	if got["imgs/a/1.jpg"] != "replaced" {
		t.Errorf("imgs/a/1.jpg = %q, want the later entry's bytes", got["imgs/a/1.jpg"])
	}
	if err := fstest.TestFS(tfs, "imgs/a/1.jpg", "imgs/b/2.jpg", "imgs/a.txt", "imgs/a-b/3.png", "top.csv", "zero", long); err != nil {
		t.Error(err)
	}
}

func TestTarFSRefusesWhatExtractionRefuses(t *testing.T) {
	for name, data := range map[string][]byte{
		"dot-dot":  tarBytes([]entry{{name: "../evil", body: "x"}}),
		"absolute": tarBytes([]entry{{name: "/etc/evil", body: "x"}}),
		// A 300-byte name component: read in place it used to be stored,
		// extracted it failed (ENAMETOOLONG); now one check refuses both.
		"long name": tarBytes([]entry{{name: "imgs/cat/" + strings.Repeat("n", 300) + ".png", body: "x"}}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openTarFS(t, data, Limits{})
			_, _, xerr := extractBytes(t, data, "x.tar")
			if err == nil || xerr == nil || err.Error() != xerr.Error() {
				t.Fatalf("in place: %v; extraction: %v", err, xerr)
			}
		})
	}
	full := tarBytes([]entry{{name: "a", body: strings.Repeat("x", 4096)}, {name: "b", body: "y"}})
	if _, err := openTarFS(t, full[:1024], Limits{}); err == nil || !strings.Contains(err.Error(), "malformed tar") {
		t.Errorf("truncated inside a file: %v", err)
	}
	if _, err := openTarFS(t, full, Limits{MaxEntries: 1}); !errors.Is(err, ErrLimit) {
		t.Errorf("two entries, MaxEntries 1: %v", err)
	}
	if _, err := openTarFS(t, full, Limits{MaxBytes: 4096}); !errors.Is(err, ErrLimit) {
		t.Errorf("4097 bytes, MaxBytes 4096: %v", err)
	}
}

func TestTarFSLeavesLinksToExtraction(t *testing.T) {
	for name, data := range map[string][]byte{
		"symlink":        tarBytes([]entry{{name: "a", body: "A"}, {name: "l", typ: tar.TypeSymlink, link: "a"}}),
		"hard link":      tarBytes([]entry{{name: "a", body: "A"}, {name: "h", typ: tar.TypeLink, link: "a"}}),
		"file then dir":  tarBytes([]entry{{name: "a", body: "A"}, {name: "a/b", body: "B"}}),
		"dir then file":  tarBytes([]entry{{name: "a/", typ: tar.TypeDir}, {name: "a", body: "A"}}),
		"file named dot": tarBytes([]entry{{name: ".", body: "A"}}),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := openTarFS(t, data, Limits{}); !errors.Is(err, ErrNotInPlace) {
				t.Fatalf("err = %v, want ErrNotInPlace", err)
			}
		})
	}
}

func TestTarFSLookups(t *testing.T) {
	tfs, err := openTarFS(t, tarBytes([]entry{{name: "d/f", body: "F"}}), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want error
	}{{"d/g", fs.ErrNotExist}, {"../d/f", fs.ErrInvalid}, {"/d/f", fs.ErrInvalid}, {"d/", fs.ErrInvalid}} {
		if _, err := tfs.ReadFile(tc.name); !errors.Is(err, tc.want) {
			t.Errorf("ReadFile(%q) = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := tfs.ReadFile("d"); err == nil {
		t.Error("ReadFile of a directory succeeded")
	}
	if _, err := tfs.ReadDir("d/f"); err == nil {
		t.Error("ReadDir of a file succeeded")
	}
}

// FuzzTarFS: whatever the bytes, indexing does not panic, and an archive
// it indexes extracts to the same tree.
func FuzzTarFS(f *testing.F) {
	f.Add(tarBytes([]entry{{name: "a/b.jpg", body: "B"}, {name: "a/c/", typ: tar.TypeDir}, {name: "a/b.jpg", body: "B2"}}))
	f.Add(tarBytes([]entry{{name: strings.Repeat("x", 200), body: "long"}}))
	for _, tc := range hostile() {
		if tc.name == "x.tar" {
			f.Add(tc.data)
		}
	}
	base := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxBytes: 1 << 20, MaxEntries: 1000}
		dir, err := os.MkdirTemp(base, "x")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		// The same tarball compressed: listed by streaming, it must read
		// as extraction writes it too.
		gzSrc := filepath.Join(dir, "x.tar.gz")
		os.WriteFile(gzSrc, gzipBytes(data), 0o644)
		if gfs, err := OpenTarGzFS(gzSrc, "x.tar.gz", lim); err == nil {
			defer gfs.Close()
			sameAsExtracted(t, gfs, data, filepath.Join(dir, "gz-out"), lim)
		}
		src := filepath.Join(dir, "x.tar")
		os.WriteFile(src, data, 0o644)
		tfs, err := OpenTarFS(src, "x.tar", lim)
		if err != nil {
			return
		}
		defer tfs.Close()
		sameAsExtracted(t, tfs, data, filepath.Join(dir, "out"), lim)
	})
}

// sameAsExtracted extracts the tarball data into dst and compares it with
// the tree read in place.
func sameAsExtracted(t *testing.T, tfs *Tree, data []byte, dst string, lim Limits) {
	t.Helper()
	os.Mkdir(dst, 0o755)
	root, err := os.OpenRoot(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := ExtractReader(bytes.NewReader(data), int64(len(data)), "tar", "x.tar", root, lim); err != nil {
		t.Fatalf("%s indexed in place, but extraction fails: %v", tfs.Name(), err)
	}
	got, want := treeOf(t, tfs), treeOf(t, os.DirFS(dst))
	if len(got) != len(want) {
		t.Fatalf("%s: in place %v, extracted %v", tfs.Name(), got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Fatalf("%s: %s: in place %q, extracted %q", tfs.Name(), p, got[p], w)
		}
	}
}
