package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
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

// snapshot lists every path under base except those under skip, with the
// content of regular files and the target of links.
func snapshot(t *testing.T, base, skip string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p == skip {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(base, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = string(b)
		default:
			out[rel] = "dir"
		}
		return nil
	})
	return out
}

// hostile lists archive shapes that try to create or modify something
// outside the target directory.
func hostile() map[string]struct {
	data []byte
	name string
} {
	type sample = struct {
		data []byte
		name string
	}
	sym, hard := byte(tar.TypeSymlink), byte(tar.TypeLink)
	var gzTar bytes.Buffer
	zw := gzip.NewWriter(&gzTar)
	zw.Write(tarBytes([]entry{{name: "a", typ: sym, link: "."}, {name: "a/b", typ: sym, link: "../outside"}, {name: "b/new.txt", body: "pwned"}}))
	zw.Close()
	return map[string]sample{
		// a -> "." makes a/b land in the target itself, so "../outside"
		// is lexically inside but really the sibling directory.
		"symlink chain then write": {tarBytes([]entry{
			{name: "a", typ: sym, link: "."},
			{name: "a/b", typ: sym, link: "../outside"},
			{name: "b/new.txt", body: "pwned"},
		}), "x.tar"},
		"symlink chain in tar.gz": {gzTar.Bytes(), "x.tgz"},
		"hard link through symlink chain": {tarBytes([]entry{
			{name: "a", typ: sym, link: "."},
			{name: "a/b", typ: sym, link: "../outside"},
			{name: "h", typ: hard, link: "b/victim.txt"},
			{name: "h", body: "pwned"},
		}), "x.tar"},
		// p is dangling when made and escapes once q exists.
		"dangling link made to escape later": {tarBytes([]entry{
			{name: "p", typ: sym, link: "q/.."},
			{name: "q", typ: sym, link: "."},
			{name: "p/outside/new.txt", body: "pwned"},
		}), "x.tar"},
		"dotdot":               {tarBytes([]entry{{name: "../outside/new.txt", body: "pwned"}}), "x.tar"},
		"nested dotdot":        {tarBytes([]entry{{name: "a/../../outside/victim.txt", body: "pwned"}}), "x.tar"},
		"absolute":             {tarBytes([]entry{{name: "/tmp/gatepipe-archive-test-evil", body: "pwned"}}), "x.tar"},
		"symlink absolute":     {tarBytes([]entry{{name: "l", typ: sym, link: "/"}, {name: "l/tmp/gatepipe-archive-test-evil", body: "pwned"}}), "x.tar"},
		"symlink out":          {tarBytes([]entry{{name: "l", typ: sym, link: "../outside"}, {name: "l/new.txt", body: "pwned"}}), "x.tar"},
		"hard link out":        {tarBytes([]entry{{name: "h", typ: hard, link: "../outside/victim.txt"}, {name: "h", body: "pwned"}}), "x.tar"},
		"write through link":   {tarBytes([]entry{{name: "l", typ: sym, link: "."}, {name: "l/../../outside/new.txt", body: "pwned"}}), "x.tar"},
		"device entries":       {tarBytes([]entry{{name: "null", typ: tar.TypeChar}, {name: "disk", typ: tar.TypeBlock}, {name: "fifo", typ: tar.TypeFifo}}), "x.tar"},
		"zip dotdot":           {zipBytes([]entry{{name: "../outside/new.txt", body: "pwned"}}), "x.zip"},
		"zip absolute":         {zipBytes([]entry{{name: "/tmp/gatepipe-archive-test-evil", body: "pwned"}}), "x.zip"},
		"zip backslash dotdot": {zipBytes([]entry{{name: `..\outside\new.txt`, body: "pwned"}}), "x.zip"},
	}
}

// TestHostileArchivesWriteNothingOutside extracts each hostile shape next
// to a directory holding a victim file and checks that nothing outside
// the target was created or changed.
func TestHostileArchivesWriteNothingOutside(t *testing.T) {
	for name, tc := range hostile() {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			os.Mkdir(filepath.Join(base, "outside"), 0o755)
			os.WriteFile(filepath.Join(base, "outside", "victim.txt"), []byte("original"), 0o644)
			src := filepath.Join(base, tc.name)
			os.WriteFile(src, tc.data, 0o644)
			dst := filepath.Join(base, "out")
			os.Mkdir(dst, 0o755)
			before := snapshot(t, base, dst)
			_, err := Extract(src, tc.name, dst)
			if after := snapshot(t, base, dst); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("extraction changed what lies outside the target (err %v):\nbefore %v\nafter  %v", err, before, after)
			}
			if _, err := os.Lstat("/tmp/gatepipe-archive-test-evil"); err == nil {
				t.Fatal("an absolute entry was written")
			}
			if name == "device entries" {
				if err != nil {
					t.Fatalf("device entries should be skipped, got %v", err)
				}
				if ents, _ := os.ReadDir(dst); len(ents) != 0 {
					t.Fatalf("device entries were created: %v", ents)
				}
			} else if err == nil {
				t.Fatal("a hostile archive extracted without an error")
			}
		})
	}
}

// TestExtractReplacesRatherThanWritesInto: a file already in the target
// that is a hard link to a file elsewhere (a dataset's raw directory held
// links to cached blobs) is replaced by an entry of the same name, not
// written into.
func TestExtractReplacesRatherThanWritesInto(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "blob")
	os.WriteFile(victim, []byte("original"), 0o644)
	dst := filepath.Join(base, "out")
	os.Mkdir(dst, 0o755)
	if err := os.Link(victim, filepath.Join(dst, "f.txt")); err != nil {
		t.Skip("no hard links here:", err)
	}
	src := filepath.Join(base, "x.tar")
	os.WriteFile(src, tarBytes([]entry{{name: "f.txt", body: "new"}}), 0o644)
	if _, err := Extract(src, "x.tar", dst); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "original" {
		t.Fatalf("the linked file was written into: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f.txt")); string(b) != "new" {
		t.Fatalf("entry content %q", b)
	}
}

func zeroGzip(n int) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(make([]byte, n))
	zw.Close()
	return buf.Bytes()
}

func TestBombsStopAtTheLimits(t *testing.T) {
	zeros := make([]byte, 8<<20)
	var bigTar bytes.Buffer
	tw := tar.NewWriter(&bigTar)
	tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: int64(len(zeros)), Typeflag: tar.TypeReg})
	tw.Write(zeros)
	tw.Close()
	var tgz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&tgz, gzip.BestCompression)
	zw.Write(bigTar.Bytes())
	zw.Close()
	var zbuf bytes.Buffer
	z := zip.NewWriter(&zbuf)
	w, _ := z.Create("zeros")
	w.Write(zeros)
	z.Close()
	tests := []struct {
		name string
		data []byte
		lim  Limits
		want string
	}{
		{"x.gz", zeroGzip(8 << 20), Limits{MaxBytes: 1 << 20}, "more than 1048576 bytes"},
		{"x.tgz", tgz.Bytes(), Limits{MaxBytes: 1 << 20}, "more than 1048576 bytes"},
		{"x.zip", zbuf.Bytes(), Limits{MaxBytes: 1 << 20}, "more than 1048576 bytes"},
		{"x.tar", tarBytes([]entry{{name: "a"}, {name: "b"}, {name: "c"}}), Limits{MaxEntries: 2}, "more than 2 entries"},
		// The default ratio: 80 MiB of zeros from about 80 KB.
		{"bomb.gz", zeroGzip(80 << 20), Limits{}, "decompression bomb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, tc.name)
			os.WriteFile(src, tc.data, 0o644)
			dst := filepath.Join(dir, "out")
			os.Mkdir(dst, 0o755)
			_, err := ExtractLimited(src, tc.name, dst, tc.lim)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrLimit mentioning %q", err, tc.want)
			}
			var total int64
			filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
				if info, err := d.Info(); err == nil && d.Type().IsRegular() {
					total += info.Size()
				}
				return nil
			})
			if total > 0 {
				t.Fatalf("the partly written file was left behind (%d bytes)", total)
			}
		})
	}
	// Raised limits let a trusted archive through.
	dir := t.TempDir()
	src := filepath.Join(dir, "x.gz")
	os.WriteFile(src, zeroGzip(2<<20), 0o644)
	if _, err := ExtractLimited(src, "x.gz", dir, Limits{MaxBytes: 4 << 20}); err != nil {
		t.Fatal(err)
	}
}

func FuzzExtractTar(f *testing.F) {
	for _, tc := range hostile() {
		if tc.name == "x.tar" {
			f.Add(tc.data)
		}
	}
	f.Add(tarBytes([]entry{{name: "a.txt", body: "A"}, {name: "d/l", typ: tar.TypeSymlink, link: "../a.txt"}}))
	f.Add(tarBytes([]entry{{name: "a.txt", body: "A"}, {name: "h", typ: tar.TypeLink, link: "a.txt"}}))
	fuzzExtract(f, "tar")
}

func FuzzExtractZip(f *testing.F) {
	for _, tc := range hostile() {
		if tc.name == "x.zip" {
			f.Add(tc.data)
		}
	}
	f.Add(zipBytes([]entry{{name: "a.txt", body: "A"}, {name: "d/b.txt", body: "B"}}))
	fuzzExtract(f, "zip")
}

// fuzzExtract checks that nothing ever lands outside the target. It
// extracts from memory into a directory on tmpfs when there is one (no
// source file, no fsync), so that a run makes thousands of executions a
// second.
func fuzzExtract(f *testing.F, kind string) {
	base := fuzzDir(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		dir, err := os.MkdirTemp(base, "x")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		dst := filepath.Join(dir, "out")
		os.Mkdir(dst, 0o755)
		os.WriteFile(filepath.Join(dir, "victim"), []byte("v"), 0o644)
		root, err := os.OpenRoot(dst)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		ExtractReader(bytes.NewReader(data), int64(len(data)), kind, "f."+kind, root, Limits{MaxBytes: 1 << 20, MaxEntries: 1000})
		entries, _ := os.ReadDir(dir)
		if len(entries) != 2 {
			t.Fatalf("extraction wrote outside the target: %v", entries)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "victim")); string(b) != "v" {
			t.Fatalf("extraction changed a file outside the target: %q", b)
		}
	})
}

// fuzzDir is a directory for a fuzz target's files: in /dev/shm where
// there is one (creating files on a virtual disk costs more than the
// target's work), removed at the end.
func fuzzDir(f *testing.F) string {
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "gatepipe-fuzz-"); err == nil {
			f.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return f.TempDir()
}
