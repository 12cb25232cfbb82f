package archive

import (
	"archive/zip"
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// openZipFS writes data to a file and indexes it.
func openZipFS(t testing.TB, data []byte, lim Limits) (*Tree, error) {
	return openTree(t, data, "x.zip", lim, OpenZipFS)
}

func TestZipFSEqualsExtraction(t *testing.T) {
	data := zipBytes([]entry{
		{name: "HAM10000_images/"},
		{name: "HAM10000_images/ISIC_0024306.jpg", body: strings.Repeat("jpeg bytes ", 300)},
		{name: "HAM10000_images/ISIC_0024307.jpg", body: "two"},
		{name: "meta/HAM10000_metadata.csv", body: "image_id,dx\nISIC_0024306,nv\n"},
		{name: "HAM10000_images/ISIC_0024307.jpg", body: "replaced"}, // a later entry wins
		{name: "a-b/3.png", body: "3"},
		{name: "a.txt", body: "sorts after a/"},
		{name: "a/1", body: "one"},
		{name: "zero", body: ""},
	})
	z, err := openZipFS(t, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	dst, _, err := extractBytes(t, data, "x.zip")
	if err != nil {
		t.Fatal(err)
	}
	got := sameTree(t, z, dst)
	if got["HAM10000_images/ISIC_0024307.jpg"] != "replaced" {
		t.Errorf("a repeated name = %q, want the later entry's bytes", got["HAM10000_images/ISIC_0024307.jpg"])
	}
	if err := fstest.TestFS(z, "HAM10000_images/ISIC_0024306.jpg", "meta/HAM10000_metadata.csv", "a-b/3.png", "a.txt", "a/1", "zero"); err != nil {
		t.Error(err)
	}
}

func TestZipFSRefusesWhatExtractionRefuses(t *testing.T) {
	for name, data := range map[string][]byte{
		"dot-dot":   zipBytes([]entry{{name: "../evil", body: "x"}}),
		"absolute":  zipBytes([]entry{{name: "/etc/evil", body: "x"}}),
		"long name": zipBytes([]entry{{name: "imgs/" + strings.Repeat("n", 300) + ".png", body: "x"}}),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := openZipFS(t, data, Limits{})
			_, _, xerr := extractBytes(t, data, "x.zip")
			if err == nil || xerr == nil || err.Error() != xerr.Error() {
				t.Fatalf("in place: %v; extraction: %v", err, xerr)
			}
		})
	}
	two := zipBytes([]entry{{name: "a", body: strings.Repeat("x", 4096)}, {name: "b", body: "y"}})
	if _, err := openZipFS(t, two[:len(two)/2], Limits{}); err == nil || !strings.Contains(err.Error(), "malformed zip") {
		t.Errorf("truncated: %v", err)
	}
	if _, err := openZipFS(t, two, Limits{MaxEntries: 1}); !errors.Is(err, ErrLimit) {
		t.Errorf("two entries, MaxEntries 1: %v", err)
	}
	if _, err := openZipFS(t, two, Limits{MaxBytes: 4096}); !errors.Is(err, ErrLimit) {
		t.Errorf("4097 bytes, MaxBytes 4096: %v", err)
	}
	// 80 MB of zeros deflate to some 80 KB: past the slack, 1000x the
	// archive's size is a bomb, refused from the declared sizes alone.
	bomb := zipBytes([]entry{{name: "zeros", body: string(make([]byte, 80<<20))}})
	if _, err := openZipFS(t, bomb, Limits{MaxRatio: 100}); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "decompression bomb") {
		t.Errorf("a zip bomb: %v", err)
	}
}

// TestZipFSLeavesLinksToExtraction: a symbolic link is ErrNotInPlace,
// which sends the archive to extraction (which refuses zip links).
func TestZipFSLeavesLinksToExtraction(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "link"}
	h.SetMode(fs.ModeSymlink | 0o777)
	w, _ := zw.CreateHeader(h)
	w.Write([]byte("target"))
	zw.Close()
	if _, err := openZipFS(t, buf.Bytes(), Limits{}); !errors.Is(err, ErrNotInPlace) {
		t.Errorf("a symbolic link: %v, want ErrNotInPlace", err)
	}
}

// TestZipFSChecksTheMembers: a member whose bytes were damaged after it
// was written fails its CRC-32 when read, through ReadFile and Open.
func TestZipFSChecksTheMembers(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "img.jpg", Method: zip.Store})
	w.Write([]byte("intact image bytes"))
	zw.Close()
	data := buf.Bytes()
	i := bytes.Index(data, []byte("intact"))
	data[i] = 'I'
	z, err := openZipFS(t, data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.ReadFile("img.jpg"); !errors.Is(err, zip.ErrChecksum) || !strings.Contains(err.Error(), "x.zip: img.jpg") {
		t.Errorf("ReadFile of a damaged member: %v", err)
	}
	if _, err := fs.ReadFile(onlyOpen{z}, "img.jpg"); !errors.Is(err, zip.ErrChecksum) {
		t.Errorf("reading an opened damaged member: %v", err)
	}
}

// onlyOpen hides a file system's ReadFile, so that fs.ReadFile reads
// through Open.
type onlyOpen struct{ fs.FS }
