package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, body, link string
	typ              byte
}

func tarBytes(entries []entry) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		if e.typ != 0 {
			h.Typeflag, h.Linkname, h.Size = e.typ, e.link, 0
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	return buf.Bytes()
}

func zipBytes(entries []entry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		w, _ := zw.Create(e.name)
		w.Write([]byte(e.body))
	}
	zw.Close()
	return buf.Bytes()
}

func extractBytes(t *testing.T, data []byte, name string) (string, []string, error) {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, name)
	os.WriteFile(src, data, 0o644)
	dst := filepath.Join(dir, "out")
	os.Mkdir(dst, 0o755)
	files, err := Extract(src, name, dst)
	return dst, files, err
}

func TestExtractGood(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(tarBytes([]entry{{name: "d/a.txt", body: "A"}, {name: "d/l", typ: tar.TypeSymlink, link: "a.txt"}}))
	zw.Close()
	for name, data := range map[string][]byte{
		"x.tar":    tarBytes([]entry{{name: "d/a.txt", body: "A"}}),
		"x.tgz":    gz.Bytes(),
		"x.tar.gz": gz.Bytes(),
		"x.zip":    zipBytes([]entry{{name: "d/a.txt", body: "A"}}),
	} {
		t.Run(name, func(t *testing.T) {
			dst, files, err := extractBytes(t, data, name)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(dst, "d", "a.txt"))
			if string(b) != "A" || len(files) != 1 || files[0] != "d/a.txt" {
				t.Fatalf("files %v content %q", files, b)
			}
		})
	}
	var single bytes.Buffer
	zw = gzip.NewWriter(&single)
	zw.Write([]byte("hello"))
	zw.Close()
	dst, files, err := extractBytes(t, single.Bytes(), "data.bin.gz")
	if err != nil || len(files) != 1 || files[0] != "data.bin" {
		t.Fatalf("gz: %v %v", files, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "data.bin")); string(b) != "hello" {
		t.Fatalf("gz content %q", b)
	}
}

func TestExtractRejectsEscapes(t *testing.T) {
	tests := map[string]struct {
		data []byte
		name string
		want string
	}{
		"tar dotdot":         {tarBytes([]entry{{name: "../evil.txt", body: "x"}}), "x.tar", `escapes the target directory`},
		"tar nested dotdot":  {tarBytes([]entry{{name: "a/../../evil.txt", body: "x"}}), "x.tar", `escapes the target directory`},
		"tar absolute":       {tarBytes([]entry{{name: "/etc/evil", body: "x"}}), "x.tar", "absolute path"},
		"tar symlink out":    {tarBytes([]entry{{name: "l", typ: tar.TypeSymlink, link: "../../etc/passwd"}}), "x.tar", "points outside"},
		"tar symlink abs":    {tarBytes([]entry{{name: "l", typ: tar.TypeSymlink, link: "/etc/passwd"}}), "x.tar", "absolute path"},
		"tar write via link": {tarBytes([]entry{{name: "l", typ: tar.TypeSymlink, link: "."}, {name: "l/../../x", body: "x"}}), "x.tar", "escapes"},
		"zip dotdot":         {zipBytes([]entry{{name: "../evil.txt", body: "x"}}), "x.zip", `escapes the target directory`},
		"zip absolute":       {zipBytes([]entry{{name: "/evil.txt", body: "x"}}), "x.zip", "absolute path"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dst, _, err := extractBytes(t, tc.data, tc.name)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dst), "evil.txt")); err == nil {
				t.Fatal("a file was written outside the target directory")
			}
		})
	}
}

func FuzzExtractTar(f *testing.F) {
	f.Add(tarBytes([]entry{{name: "a.txt", body: "A"}}))
	f.Add(tarBytes([]entry{{name: "../x", body: "A"}}))
	f.Add(tarBytes([]entry{{name: "l", typ: tar.TypeSymlink, link: "a"}}))
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzExtract(t, base, data, "f.tar")
	})
}

func FuzzExtractZip(f *testing.F) {
	f.Add(zipBytes([]entry{{name: "a.txt", body: "A"}}))
	f.Add(zipBytes([]entry{{name: "../x", body: "A"}}))
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzExtract(t, base, data, "f.zip")
	})
}

// fuzzExtract checks that nothing ever lands outside the target.
func fuzzExtract(t *testing.T, base string, data []byte, name string) {
	root, err := os.MkdirTemp(base, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(root)
	src := filepath.Join(root, name)
	os.WriteFile(src, data, 0o644)
	dst := filepath.Join(root, "out")
	os.Mkdir(dst, 0o755)
	Extract(src, name, dst)
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.Name() != name && e.Name() != "out" {
			t.Fatalf("extraction wrote %q outside the target", e.Name())
		}
	}
}
