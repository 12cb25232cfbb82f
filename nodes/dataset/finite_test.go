package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNonFiniteCellsAreRefused: a NaN or infinite feature (in whatever
// split the row would land) or regression target fails the node with the
// file, line and column, and nothing is stored.
func TestNonFiniteCellsAreRefused(t *testing.T) {
	cases := []struct{ name, csv, task, want string }{
		{"feature", "a,b,label\n1,2,x\n3,4,y\n5,nan,x\n7,8,y\n", "classification", `t.csv: byte 22 (line 4, column 3): "nan" in column "b" is not a finite number`},
		{"infinite feature", "a,b,label\n1,2,x\n3,4,y\n-inf,6,x\n7,8,y\n", "classification", `(line 4, column 1): "-inf" in column "a" is not a finite number`},
		{"target", "a,label\n1,0.5\n2,0.25\n3,NaN\n4,1\n", "regression", `t.csv: line 4: regression target "NaN" is not a finite number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "t.csv"), []byte(c.csv), 0o644); err != nil {
				t.Fatal(err)
			}
			n, diags := decode(t, dir, `
source {
  url = "t.csv"
}
format        = "csv"
train         = ["t.csv"]
label_column  = "label"
test_fraction = 0.5
task          = "`+c.task+`"
`)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, out, err := runErr(t, n)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if files, _ := filepath.Glob(filepath.Join(out, "*.safetensors")); len(files) > 0 {
				t.Fatalf("stored %v", files)
			}
		})
	}
}
