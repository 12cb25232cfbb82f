package dataset

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/rs/zerolog"
)

// An image_folder tarball read in place stores the same bytes as the same
// images extracted (from a .tar.gz, and from a tarball with a link, which
// is extracted too).
func TestImageFolderTarInPlaceEqualsExtracted(t *testing.T) {
	dir := t.TempDir()
	writeImageFolder(t, dir, 12)
	tarTree(t, dir, "imgs")
	data, err := os.ReadFile(filepath.Join(dir, "imgs.tar"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "imgs.tgz"), gz(data), 0o644)
	withLink := appendTarEntry(t, data, &tar.Header{Name: "imgs/c0/link.png", Typeflag: tar.TypeSymlink, Linkname: "00.png"})
	os.WriteFile(filepath.Join(dir, "linked.tar"), withLink, 0o644)

	stores := map[string]string{}
	for _, src := range []string{"imgs.tar", "imgs.tgz", "linked.tar"} {
		n, diags := decode(t, dir, `
source { url = "`+src+`" }
format        = "image_folder"
train         = ["imgs"]
image_size    = [6, 5]
val_fraction  = 0.25
test_fraction = 0.25
`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		_, stores[src] = run(t, n)
	}
	for _, split := range []string{"train", "val", "test"} {
		want, err := os.ReadFile(filepath.Join(stores["imgs.tgz"], split+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(filepath.Join(stores["imgs.tar"], split+".safetensors")); !bytes.Equal(got, want) {
			t.Errorf("%s: the tarball read in place stores other bytes than extracted", split)
		}
	}
	// The link adds an example (the symlink is an image of class c0).
	linked, err := examplestore.ReadMeta(stores["linked.tar"])
	if err != nil {
		t.Fatal(err)
	}
	if total := linked.Splits["train"] + linked.Splits["val"] + linked.Splits["test"]; total != 13 {
		t.Errorf("extracted tarball with a link: %d examples, want 13", total)
	}
}

// appendTarEntry adds a header-only entry to a tarball's end.
func appendTarEntry(t *testing.T, data []byte, hdr *tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		tw.WriteHeader(h)
		body, _ := io.ReadAll(tr)
		tw.Write(body)
	}
	tw.WriteHeader(hdr)
	tw.Close()
	return buf.Bytes()
}

// Which sources are read in place: uncompressed tarballs, unless another
// archive is extracted, two sources share a top-level name, or a tarball
// must be extracted (links).
func TestRawTreeInPlace(t *testing.T) {
	dir := t.TempDir()
	tarOf := func(name string, entries ...*tar.Header) string {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, h := range entries {
			if h.Typeflag == 0 {
				h.Typeflag, h.Size = tar.TypeReg, 1
			}
			tw.WriteHeader(h)
			if h.Typeflag == tar.TypeReg {
				tw.Write([]byte("x"))
			}
		}
		tw.Close()
		p := filepath.Join(dir, name)
		os.WriteFile(p, buf.Bytes(), 0o644)
		return p
	}
	a := tarOf("a.tar", &tar.Header{Name: "train/c/1.jpg"})
	b := tarOf("b.tar", &tar.Header{Name: "val/c/1.jpg"})
	clash := tarOf("clash.tar", &tar.Header{Name: "train/c/2.jpg"})
	link := tarOf("link.tar", &tar.Header{Name: "x/1.jpg"}, &tar.Header{Name: "x/2.jpg", Typeflag: tar.TypeSymlink, Linkname: "1.jpg"})
	src := func(name, p string) fetched {
		return fetched{s: &source{extract: true}, name: name, path: p}
	}
	tests := map[string]struct {
		got  []fetched
		want string // covered indices
	}{
		"one tarball":            {[]fetched{src("a.tar", a)}, "0"},
		"two tarballs":           {[]fetched{src("a.tar", a), src("b.tar", b)}, "01"},
		"tarball and a file":     {[]fetched{src("a.tar", a), src("labels.csv", a)}, "0"},
		"file under a tar's top": {[]fetched{src("a.tar", a), src("train/extra.csv", a)}, ""},
		"same top-level name":    {[]fetched{src("a.tar", a), src("clash.tar", clash)}, ""},
		"another archive kind":   {[]fetched{src("a.tar", a), src("b.zip", b)}, ""},
		"a link":                 {[]fetched{src("link.tar", link)}, ""},
		"not extracted":          {[]fetched{{s: &source{}, name: "a.tar", path: a}}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tree := &rawTree{dir: dir}
			defer tree.close()
			covered, _ := tree.inPlace(tc.got, false, nil)
			var got strings.Builder
			for i := range tc.got {
				if covered[i] {
					got.WriteByte(byte('0' + i))
				}
			}
			if got.String() != tc.want {
				t.Errorf("read in place: %q, want %q", got.String(), tc.want)
			}
		})
	}
}

// TestSourcesAreReadInPlace: a plain source file (a Parquet shard) is put
// in the temporary raw directory as a link to its blob, not a copy, and a
// later source of the same name replaces the link without writing through
// it; format "raw", whose directory is the output, gets a copy.
func TestSourcesAreReadInPlace(t *testing.T) {
	dir := t.TempDir()
	blob, later := filepath.Join(dir, "blob1"), filepath.Join(dir, "blob2")
	os.WriteFile(blob, []byte("first"), 0o444)
	os.WriteFile(later, []byte("second"), 0o444)
	for _, format := range []string{"parquet", "raw"} {
		n := &Node{}
		n.cfg.Format = format
		tree := &rawTree{dir: filepath.Join(t.TempDir(), "raw")}
		env := &nodes.Env{Log: zerolog.Nop()}
		got := []fetched{{s: &source{}, name: "data/train.parquet", path: blob}}
		if err := n.layOut(env, tree, got); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tree.dir, "data", "train.parquet")
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if linked := info.Mode()&os.ModeSymlink != 0; linked != (format != "raw") {
			t.Errorf("%s: the source is a link: %v", format, linked)
		}
		if err := n.layOut(env, tree, []fetched{{s: &source{}, name: "data/train.parquet", path: later}}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != "second" {
			t.Errorf("%s: the later source reads %q", format, b)
		}
		if b, _ := os.ReadFile(blob); string(b) != "first" {
			t.Fatalf("%s: the first blob was written through: %q", format, b)
		}
	}
}

// TestImageListTarsInPlaceEqualExtracted: an image_list whose list and
// images come in uncompressed tarballs reads them where they lie (the list
// copied out, the images decoded from the tarball: plan counts nothing
// unpacked) and stores the bytes the same sources extracted from .tar.gz
// give.
func TestImageListTarsInPlaceEqualExtracted(t *testing.T) {
	dir := t.TempDir()
	writeSmoothFolder(t, dir, 12) // imgs/cK/NN.png
	var list strings.Builder
	for i := range 12 {
		fmt.Fprintf(&list, "/c%d/%02d.png %d\n", i%3, i, i%3)
	}
	os.MkdirAll(filepath.Join(dir, "lists"), 0o755)
	os.WriteFile(filepath.Join(dir, "lists", "train.txt"), []byte(list.String()), 0o644)
	tarTree(t, dir, "imgs")
	tarTree(t, dir, "lists")
	for _, n := range []string{"imgs", "lists"} {
		data, _ := os.ReadFile(filepath.Join(dir, n+".tar"))
		os.WriteFile(filepath.Join(dir, n+".tgz"), gz(data), 0o644)
		zipTree(t, dir, n)
	}
	stores := map[string][]byte{}
	for _, ext := range []string{"tar", "zip", "tgz"} {
		n, diags := decode(t, dir, `
source { url = "lists.`+ext+`" }
source { url = "imgs.`+ext+`" }
format        = "image_list"
train         = ["lists/train.txt"]
images        = ["imgs"]
image_size    = [24, 32]
val_fraction  = 0.25
test_fraction = 0.25
`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if ext != "tgz" {
			// Laid out: the tarballs and zips are read in place, nothing
			// is extracted, and the remote form would plan nothing
			// unpacked.
			tree := &rawTree{dir: filepath.Join(t.TempDir(), "raw")}
			got := []fetched{{s: &source{extract: true}, name: "lists." + ext, path: filepath.Join(dir, "lists."+ext)},
				{s: &source{extract: true}, name: "imgs." + ext, path: filepath.Join(dir, "imgs."+ext)}}
			if err := n.layOut(&nodes.Env{Log: zerolog.Nop()}, tree, got); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(tree.dir, "imgs")); err == nil || len(tree.archives) != 2 {
				t.Errorf("the %s archives were extracted (%d read in place)", ext, len(tree.archives))
			}
			tree.close()
			n.sources[1].scheme, n.sources[1].extract = "https", true
			if n.Extracts(n.sources[1].ref, "imgs."+ext) {
				t.Errorf("plan counts an image_list %s archive as unpacked", ext)
			}
			n.sources[1].scheme = "file"
		}
		_, out := run(t, n)
		for _, split := range []string{"train", "val", "test"} {
			data, err := os.ReadFile(filepath.Join(out, split+".safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			stores[ext] = append(stores[ext], data...)
		}
	}
	if !bytes.Equal(stores["tar"], stores["tgz"]) || !bytes.Equal(stores["zip"], stores["tgz"]) {
		t.Fatal("the tarballs or zips read in place store other bytes than extracted")
	}
}

// zipTree zips dir/sub (deflated, as Kaggle's archives are) into
// dir/sub.zip.
func zipTree(t *testing.T, dir, sub string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.Walk(filepath.Join(dir, sub), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, sub+".zip"), buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}
