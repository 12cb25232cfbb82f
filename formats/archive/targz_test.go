package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

func gzipBytes(data []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

func openTarGzFS(t testing.TB, data []byte, lim Limits) (*Tree, error) {
	return openTree(t, gzipBytes(data), "x.tar.gz", lim, OpenTarGzFS)
}

// A compressed tarball listed in place reads as its extraction does: the
// same names and bytes, a later entry replacing an earlier one.
func TestTarGzFSEqualsExtraction(t *testing.T) {
	data := tarBytes([]entry{
		{name: "part/", typ: tar.TypeDir},
		{name: "part/b.mp4", body: "bbb"},
		{name: "part/a.mp4", body: "aaaa"},
		{name: "c.mp4", body: strings.Repeat("c", 70000)},
		{name: "part/a.mp4", body: "replaced"},
		{name: "zero", body: ""},
		{name: "fifo", typ: tar.TypeFifo},
	})
	tfs, err := openTarGzFS(t, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dst, _, err := extractBytes(t, gzipBytes(data), "x.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, tfs, dst)
	if !tfs.Streamed() {
		t.Error("a compressed tarball's tree should say it is streamed")
	}
	if err := fstest.TestFS(tfs, "part/a.mp4", "part/b.mp4", "c.mp4", "zero"); err != nil {
		t.Error(err)
	}
}

// A Stream copies files in any order: forward in one decompression,
// backward by starting again; positions give the archive's order.
func TestStreamCopiesInAnyOrder(t *testing.T) {
	var entries []entry
	for _, n := range []string{"v0", "v1", "v2", "v3"} {
		entries = append(entries, entry{name: n + ".mp4", body: strings.Repeat(n, 3000)})
	}
	data := tarBytes(entries)
	for kind, open := range map[string]func() (*Tree, error){
		"tar.gz": func() (*Tree, error) { return openTarGzFS(t, data, Limits{}) },
		"tar":    func() (*Tree, error) { return openTarFS(t, data, Limits{}) },
	} {
		t.Run(kind, func(t *testing.T) {
			tfs, err := open()
			if err != nil {
				t.Fatal(err)
			}
			var last int64 = -1
			for _, n := range []string{"v0", "v1", "v2", "v3"} {
				p, err := tfs.Position(n + ".mp4")
				if err != nil || p <= last {
					t.Fatalf("%s: position %d (%v) after %d", n, p, err, last)
				}
				last = p
			}
			s := tfs.Stream()
			for _, n := range []string{"v1", "v3", "v0", "v3", "v2"} {
				var buf bytes.Buffer
				if err := s.Copy(n+".mp4", &buf); err != nil {
					t.Fatalf("%s: %v", n, err)
				}
				if buf.String() != strings.Repeat(n, 3000) {
					t.Fatalf("%s: %d bytes, not its own", n, buf.Len())
				}
			}
			if err := s.Copy("none.mp4", &bytes.Buffer{}); err == nil {
				t.Error("a missing file was copied")
			}
		})
	}
}

func TestTarGzFSRefusesWhatExtractionRefuses(t *testing.T) {
	for name, data := range map[string][]byte{
		"dot-dot":  tarBytes([]entry{{name: "../evil", body: "x"}}),
		"absolute": tarBytes([]entry{{name: "/etc/evil", body: "x"}}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openTarGzFS(t, data, Limits{})
			_, _, xerr := extractBytes(t, gzipBytes(data), "x.tar.gz")
			if err == nil || xerr == nil || err.Error() != xerr.Error() {
				t.Fatalf("in place: %v; extraction: %v", err, xerr)
			}
		})
	}
	if _, err := openTarGzFS(t, tarBytes([]entry{{name: "a", body: "A"}, {name: "l", typ: tar.TypeSymlink, link: "a"}}), Limits{}); !errors.Is(err, ErrNotInPlace) {
		t.Errorf("a link: %v, want ErrNotInPlace", err)
	}
	full := gzipBytes(tarBytes([]entry{{name: "a", body: strings.Repeat("x", 4096)}, {name: "b", body: "y"}}))
	if _, err := openTree(t, full[:len(full)/2], "x.tar.gz", Limits{}, OpenTarGzFS); err == nil {
		t.Error("a truncated tar.gz was listed")
	}
	if _, err := openTree(t, []byte("not gzip"), "x.tar.gz", Limits{}, OpenTarGzFS); err == nil || !strings.Contains(err.Error(), "not gzip data") {
		t.Errorf("not gzip: %v", err)
	}
	if _, err := openTarGzFS(t, tarBytes([]entry{{name: "a"}, {name: "b"}, {name: "c"}}), Limits{MaxEntries: 2}); !errors.Is(err, ErrLimit) {
		t.Errorf("three entries, MaxEntries 2: %v", err)
	}
	// The default ratio: 80 MiB of zeros in a few tens of KB.
	var bomb bytes.Buffer
	tw := tar.NewWriter(&bomb)
	tw.WriteHeader(&tar.Header{Name: "zeros", Mode: 0o644, Size: 80 << 20, Typeflag: tar.TypeReg})
	tw.Write(make([]byte, 80<<20))
	tw.Close()
	if _, err := openTarGzFS(t, bomb.Bytes(), Limits{}); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Errorf("80 MiB of zeros: %v", err)
	}
}

// The archive replaced after it was listed: a Stream says so rather
// than returning other bytes.
func TestStreamNoticesAChangedArchive(t *testing.T) {
	data := tarBytes([]entry{{name: "a", body: "aaaa"}, {name: "b", body: "bbbb"}})
	tfs, err := openTarGzFS(t, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	other := gzipBytes(tarBytes([]entry{{name: "a", body: "aaaa"}, {name: "b", body: "bbbbbb"}}))
	if err := os.WriteFile(tfs.f.Name(), other, 0o644); err != nil {
		t.Fatal(err)
	}
	tfs.size = int64(len(other))
	if err := tfs.Stream().Copy("b", &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "changed since it was listed") {
		t.Errorf("err = %v, want the archive named as changed", err)
	}
}
