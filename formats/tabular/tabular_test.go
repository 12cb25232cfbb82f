package tabular

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	src := "a,b,label\n1,2,cat\n3.5,-1,dog\n0,0,cat\n"
	tab, err := Read(strings.NewReader(src), ',', "label", "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{1, 2, 3.5, -1, 0, 0}, tab.X); diff != "" {
		t.Fatalf("X (-want +got):\n%s", diff)
	}
	classes, y := ClassIndex(tab.Labels)
	if diff := cmp.Diff([]string{"cat", "dog"}, classes); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]int64{0, 1, 0}, y); diff != "" {
		t.Fatal(diff)
	}
	numClasses, _ := ClassIndex([]string{"10", "9", "2"})
	if diff := cmp.Diff([]string{"2", "9", "10"}, numClasses); diff != "" {
		t.Fatalf("numeric labels sort numerically: %s", diff)
	}
}

func TestReadErrors(t *testing.T) {
	tests := map[string]struct{ src, want string }{
		"no label column": {"a,b\n1,2\n", `no column named "label"`},
		"not a number":    {"a,label\n1,x\nfoo,y\n", `byte 12 (line 3, column 1): "foo" in column "a" is not a number`},
		"ragged":          {"a,label\n1,x\n1,2,3\n", "byte 12"},
		"empty":           {"", "empty table"},
		"no rows":         {"a,label\n", "no rows"},
		"NaN":             {"a,b,label\n1,2,x\n3,NaN,y\n", `line 3, column 3): "NaN" in column "b" is not a finite number`},
		"infinity":        {"a,label\n1,x\n-Inf,y\n", `line 3, column 1): "-Inf" in column "a" is not a finite number`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.src), ',', "label", "t.csv")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTargetsAreFinite: a regression target that is not a finite number
// is an error naming the file, the line and the value.
func TestTargetsAreFinite(t *testing.T) {
	tab, err := Read(strings.NewReader("a,label\n1,0.5\n2,nan\n3,+Inf\n4,x\n"), ',', "label", "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := tab.Target(0, "t.csv"); err != nil || v != 0.5 {
		t.Fatalf("row 0: %v, %v", v, err)
	}
	for i, want := range []string{`t.csv: line 3: regression target "nan" is not a finite number`, `t.csv: line 4: regression target "+Inf" is not a finite number`, `t.csv: line 5: regression target "x" is not a number`} {
		if _, err := tab.Target(i+1, "t.csv"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("row %d: %v, want %q", i+1, err, want)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add("a,b,label\n1,2,cat\n3,4,dog\n")
	f.Add("label\tx\n1\t2\n")
	f.Fuzz(func(t *testing.T, src string) {
		tab, err := Read(strings.NewReader(src), ',', "label", "fuzz")
		if err == nil && (len(tab.X) != tab.Rows()*len(tab.Features) || len(tab.Lines) != tab.Rows()) {
			t.Fatalf("%d values and %d lines for %d rows of %d features", len(tab.X), len(tab.Lines), tab.Rows(), len(tab.Features))
		}
		if err != nil {
			return
		}
		for _, v := range tab.X {
			if v != v || v > 3.4e38 || v < -3.4e38 {
				t.Fatalf("non-finite value %v stored", v)
			}
		}
	})
}
