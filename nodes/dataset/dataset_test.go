package dataset

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatepipe/gatepipe/engine/cache"
	"github.com/gatepipe/gatepipe/formats/examplestore"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/pipelines/addrs"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func idxBytes(dims []int, data []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, uint32(d))
	}
	b.Write(data)
	return b.Bytes()
}

// decode evaluates HCL source for the dataset kind, as the engine does.
func decode(t *testing.T, dir, src string) (*Node, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	cfg, diags := hcldec.Decode(f.Body, spec, nil)
	if diags.HasErrors() {
		return nil, diags
	}
	n, diags := Kind{}.Decode(cfg, nodes.Decl{Addr: addrs.AbsInstance{Instance: addrs.Block{Kind: "dataset", Name: "t"}.Instance(addrs.NoKey)}, Body: f.Body, Dir: dir})
	if diags.HasErrors() {
		return nil, diags
	}
	return n.(*Node), nil
}

func run(t *testing.T, n *Node) (cty.Value, string) {
	t.Helper()
	v, out, err := runErr(t, n)
	if err != nil {
		t.Fatal(err)
	}
	return v, out
}

// runErr runs n in a fresh cache and returns its error.
func runErr(t *testing.T, n *Node) (cty.Value, string, error) {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := c.TempDir("dataset")
	env := &nodes.Env{OutDir: out, Blobs: c, Log: zerolog.Nop(), Progress: nodes.NoProgress{}}
	v, err := n.Run(context.Background(), env)
	return v, out, err
}

func writeIDXFixture(t *testing.T, dir string, n int) {
	images := make([]byte, n*4)
	labels := make([]byte, n)
	for i := 0; i < n; i++ {
		for p := 0; p < 4; p++ {
			images[i*4+p] = byte(i*10 + p)
		}
		labels[i] = byte(i % 3)
	}
	os.WriteFile(filepath.Join(dir, "imgs-idx3-ubyte.gz"), gz(idxBytes([]int{n, 2, 2}, images)), 0o644)
	os.WriteFile(filepath.Join(dir, "labels-idx1-ubyte.gz"), gz(idxBytes([]int{n}, labels)), 0o644)
}

const idxConfig = `
source {
  url = "imgs-idx3-ubyte.gz"
}
source {
  url = "labels-idx1-ubyte.gz"
}
format       = "idx"
train        = ["imgs-idx3-ubyte", "labels-idx1-ubyte"]
val_fraction = 0.2
test_fraction = 0.2
split_seed   = %d
`

func TestIDXSplitIsSeededAndRecorded(t *testing.T) {
	dir := t.TempDir()
	writeIDXFixture(t, dir, 20)
	indices := func(seed int) map[string][]int64 {
		n, diags := decode(t, dir, fmt.Sprintf(idxConfig, seed))
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		v, out := run(t, n)
		if got := v.GetAttr("splits"); !got.RawEquals(cty.MapVal(map[string]cty.Value{"train": cty.NumberIntVal(12), "val": cty.NumberIntVal(4), "test": cty.NumberIntVal(4)})) {
			t.Fatalf("splits = %#v", got)
		}
		m := map[string][]int64{}
		seen := map[int64]bool{}
		for _, name := range []string{"train", "val", "test"} {
			s, err := examplestore.ReadSplit(out, name)
			if err != nil {
				t.Fatal(err)
			}
			m[name] = s.Index
			for k, idx := range s.Index {
				if seen[idx] {
					t.Fatalf("example %d in two splits", idx)
				}
				seen[idx] = true
				// The stored pixels and label are those of the source example.
				if s.X.Data[k*4] != byte(idx*10) || s.Y.Int64s()[k] != idx%3 {
					t.Fatalf("%s[%d]: pixels %v label %d do not match source example %d", name, k, s.X.Data[k*4:k*4+4], s.Y.Int64s()[k], idx)
				}
			}
		}
		if len(seen) != 20 {
			t.Fatalf("%d distinct examples, want 20", len(seen))
		}
		return m
	}
	a, b, c := indices(1), indices(1), indices(2)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same split seed gave different splits:\n%s", diff)
	}
	if cmp.Equal(a, c) {
		t.Fatal("different split seeds gave the same split")
	}
}

func TestNormalizationFromTrainingSplit(t *testing.T) {
	dir := t.TempDir()
	writeIDXFixture(t, dir, 10)
	n, _ := decode(t, dir, strings.Replace(fmt.Sprintf(idxConfig, 0), "val_fraction = 0.2\ntest_fraction = 0.2", "", 1))
	_, out := run(t, n)
	meta, err := examplestore.ReadMeta(out)
	if err != nil {
		t.Fatal(err)
	}
	// Pixels are i*10+p for i<10, p<4: mean over all = (45*10*4/40 + 1.5)... compute directly.
	var sum, sq float64
	for i := 0; i < 10; i++ {
		for p := 0; p < 4; p++ {
			x := float64(i*10+p) / 255
			sum += x
			sq += x * x
		}
	}
	mean := sum / 40
	std := math.Sqrt(sq/40 - mean*mean)
	if math.Abs(meta.Normalize.Mean[0]-mean) > 1e-9 || math.Abs(meta.Normalize.Std[0]-std) > 1e-9 || meta.Normalize.Scale != 1.0/255 {
		t.Fatalf("normalize = %+v, want mean %g std %g", meta.Normalize, mean, std)
	}
	if diff := cmp.Diff([]int{1, 2, 2}, meta.Shape); diff != "" {
		t.Fatal(diff)
	}
}

func TestCSVWithTestFile(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "train.csv"), []byte("a,b,kind\n1,2,x\n3,4,y\n5,6,x\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "test.csv"), []byte("a,b,kind\n7,8,y\n"), 0o644)
	n, diags := decode(t, dir, `
source {
  url = "train.csv"
}
source {
  url = "test.csv"
}
format       = "csv"
train        = ["train.csv"]
test         = ["test.csv"]
label_column = "kind"
normalize    = "none"
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if !v.GetAttr("num_classes").RawEquals(cty.NumberIntVal(2)) {
		t.Fatalf("value %#v", v)
	}
	test, err := examplestore.ReadSplit(out, "test")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{7, 8}, test.X.Float32s()); diff != "" {
		t.Fatal(diff)
	}
	if test.Y.Int64s()[0] != 1 { // y is class 1 in the training class order
		t.Fatalf("test label %v", test.Y.Int64s())
	}
}

func TestImageFolderInTarball(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		c    color.Gray
	}{{"imgs/cat/1.png", color.Gray{200}}, {"imgs/dog/1.png", color.Gray{10}}, {"imgs/dog/2.png", color.Gray{20}}} {
		img := image.NewGray(image.Rect(0, 0, 5, 5))
		for i := range img.Pix {
			img.Pix[i] = e.c.Y
		}
		var pb bytes.Buffer
		png.Encode(&pb, img)
		tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o644, Size: int64(pb.Len()), Typeflag: tar.TypeReg})
		tw.Write(pb.Bytes())
	}
	tw.Close()
	os.WriteFile(filepath.Join(dir, "imgs.tar.gz"), gz(buf.Bytes()), 0o644)
	n, diags := decode(t, dir, `
source {
  url = "imgs.tar.gz"
}
format     = "image_folder"
train      = ["imgs"]
image_size = [2, 2]
channels   = 1
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if !v.GetAttr("classes").RawEquals(cty.ListVal([]cty.Value{cty.StringVal("cat"), cty.StringVal("dog")})) {
		t.Fatalf("classes %#v", v.GetAttr("classes"))
	}
	s, _ := examplestore.ReadSplit(out, "train")
	if diff := cmp.Diff([]int{3, 1, 2, 2}, s.X.Shape); diff != "" {
		t.Fatal(diff)
	}
	if s.X.Data[0] != 200 || s.X.Data[4] != 10 {
		t.Fatalf("pixels %v", s.X.Data)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := map[string]struct{ src, want string }{
		"neither url nor hf":      {"\nsource {\nextract = true\n}\nformat = \"raw\"", "needs url"},
		"url and hf":              {"source {\nurl = \"a\"\nhf = \"o/n\"\nfiles = [\"x\"]\n}\nformat = \"raw\"", "not both"},
		"hf without files":        {"\nsource {\nhf = \"o/n\"\n}\nformat = \"raw\"", "needs files"},
		"hf bad repo":             {"source {\nhf = \"../x\"\nfiles = [\"a\"]\n}\nformat = \"raw\"", "OWNER/NAME"},
		"hf pattern leaves":       {"source {\nhf = \"o/n\"\nfiles = [\"../*.parquet\"]\n}\nformat = \"raw\"", "not a relative path pattern"},
		"hf with sha256":          {"source {\nhf = \"o/n\"\nfiles = [\"a\"]\nsha256 = \"" + strings.Repeat("a", 64) + "\"\n}\nformat = \"raw\"", "remove sha256"},
		"unknown credentials":     {"source {\nurl = \"https://x.org/a\"\ncredentials = \"aws\"\n}\nformat = \"raw\"", `credentials = "aws"`},
		"local with credentials":  {"source {\nurl = \"a\"\ncredentials = \"hf\"\n}\nformat = \"raw\"", "needs no credentials"},
		"bad sha":                 {`source {` + "\n" + `url = "a"` + "\n" + `sha256 = "abc"` + "\n}\nformat = \"raw\"", "not 64 hex digits"},
		"bad scheme":              {`source { url = "ftp://x.org/a" }` + "\nformat = \"raw\"", "unsupported URL scheme"},
		"idx without train":       {`source { url = "a" }` + "\nformat = \"idx\"", "needs train"},
		"csv without label":       {`source { url = "a" }` + "\nformat = \"csv\"\ntrain = [\"a\"]", "label_column"},
		"folder without size":     {`source { url = "a" }` + "\nformat = \"image_folder\"\ntrain = [\"a\"]", "image_size"},
		"fractions sum":           {`source { url = "a" }` + "\nformat = \"raw\"\nval_fraction = 0.6\ntest_fraction = 0.5", "below 1"},
		"test files and fraction": {`source { url = "a" }` + "\nformat = \"idx\"\ntrain = [\"a\"]\ntest = [\"b\"]\ntest_fraction = 0.1", "not both"},
		"name dotdot":             {"source {\nurl = \"a\"\nname = \"..\"\n}\nformat = \"raw\"", `name = ".." is not a file name`},
		"name with slash":         {"source {\nurl = \"a\"\nname = \"x/y\"\n}\nformat = \"raw\"", "not a file name"},
		"zero extract limit":      {"source {\nurl = \"a.tar\"\nmax_extract_bytes = 0\n}\nformat = \"raw\"", "max_extract_bytes must be positive"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, diags := decode(t, t.TempDir(), tc.src)
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Fatalf("diags %v, want %q", diags, tc.want)
			}
			// Errors in a source block point at the attribute at fault.
			if strings.Contains(tc.src, "source {\n") && (diags[0].Subject == nil || diags[0].Subject.Start.Line < 2) {
				t.Fatalf("diagnostic without a source range: %v", diags)
			}
		})
	}
}

func TestMalformedDataNamesFileAndOffset(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "imgs-idx3-ubyte"), idxBytes([]int{5, 2, 2}, make([]byte, 7)), 0o644)
	os.WriteFile(filepath.Join(dir, "labels-idx1-ubyte"), idxBytes([]int{5}, make([]byte, 5)), 0o644)
	n, _ := decode(t, dir, `
source {
  url = "imgs-idx3-ubyte"
}
source {
  url = "labels-idx1-ubyte"
}
format = "idx"
train  = ["imgs-idx3-ubyte", "labels-idx1-ubyte"]
`)
	c, _ := cache.Open(t.TempDir())
	out, _ := c.TempDir("d")
	_, err := n.Run(context.Background(), &nodes.Env{OutDir: out, Blobs: c, Log: zerolog.Nop(), Progress: nodes.NoProgress{}})
	if err == nil || !strings.Contains(err.Error(), "imgs-idx3-ubyte: byte 23: truncated IDX data") {
		t.Fatalf("err = %v", err)
	}
}

// TestKeepClassesFiltersAndRelabels: keep_classes keeps the listed classes
// only, relabelled in the listed order; an unknown class is an error
// naming the classes there are.
func TestKeepClassesFiltersAndRelabels(t *testing.T) {
	dir := t.TempDir()
	writeIDXFixture(t, dir, 20)
	n, diags := decode(t, dir, fmt.Sprintf(idxConfig, 1)+`keep_classes = ["2", "0"]`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	v, out := run(t, n)
	if got := v.GetAttr("classes"); !got.RawEquals(cty.ListVal([]cty.Value{cty.StringVal("2"), cty.StringVal("0")})) {
		t.Fatalf("classes = %#v", got)
	}
	total := 0
	for _, name := range []string{"train", "val", "test"} {
		s, err := examplestore.ReadSplit(out, name)
		if err != nil {
			t.Fatal(err)
		}
		for k, y := range s.Y.Int64s() {
			source := int(s.X.Data[k*4]) / 10 // the fixture's pixel 0 is 10 x its example index
			want := map[int]int64{2: 0, 0: 1}[source%3]
			if source%3 == 1 || y != want {
				t.Fatalf("%s[%d]: source example %d (class %d) has label %d", name, k, source, source%3, y)
			}
			total++
		}
	}
	if total != 13 { // examples 0..19 of classes 0 and 2
		t.Fatalf("%d examples kept, want 13", total)
	}
	n, diags = decode(t, dir, fmt.Sprintf(idxConfig, 1)+`keep_classes = ["7"]`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	c, _ := cache.Open(t.TempDir())
	o, _ := c.TempDir("dataset")
	_, err := n.Run(context.Background(), &nodes.Env{OutDir: o, Blobs: c, Log: zerolog.Nop(), Progress: nodes.NoProgress{}})
	if err == nil || !strings.Contains(err.Error(), `no class "7"; the classes are 0, 1, 2`) {
		t.Fatalf("err = %v", err)
	}
}

// TestCapsKeepEveryClass: max_train and max_test on imbalanced classes
// (90 "common", 10 "rare") keep about as many of each class as the cap
// allows, not the frequent class's share.
func TestCapsKeepEveryClass(t *testing.T) {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("x,label\n")
	for i := range 100 {
		label := "common"
		if i%10 == 0 {
			label = "rare"
		}
		fmt.Fprintf(&csv, "%d,%s\n", i, label)
	}
	os.WriteFile(filepath.Join(dir, "t.csv"), []byte(csv.String()), 0o644)
	n, diags := decode(t, dir, `
source { url = "t.csv" }
format        = "csv"
train         = ["t.csv"]
label_column  = "label"
test_fraction = 0.3
max_train     = 10
max_test      = 4
split_seed    = 3
`)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	_, out := run(t, n)
	for split, want := range map[string][2]int{"train": {5, 5}, "test": {2, 2}} {
		s, err := examplestore.ReadSplit(out, split)
		if err != nil {
			t.Fatal(err)
		}
		var count [2]int
		for _, y := range s.Y.Int64s() {
			count[y]++
		}
		if count != want {
			t.Errorf("%s split has %v examples of (common, rare), want %v", split, count, want)
		}
	}
}
