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

func FuzzRead(f *testing.F) {
	f.Add("a,b,label\n1,2,cat\n3,4,dog\n")
	f.Add("label\tx\n1\t2\n")
	f.Fuzz(func(t *testing.T, src string) {
		tab, err := Read(strings.NewReader(src), ',', "label", "fuzz")
		if err == nil && len(tab.X) != tab.Rows()*len(tab.Features) {
			t.Fatalf("%d values for %d rows of %d features", len(tab.X), tab.Rows(), len(tab.Features))
		}
	})
}
