package imagecsv

import (
	"strings"
	"testing"
)

func TestParseLabelList(t *testing.T) {
	got, err := ParseLabelList(strings.NewReader("\ufeff/a/airfield/00000001.jpg 0\n\n  /b/bar/2.jpg\t12  \r\nval_3.jpg 7"), "places365_train_standard.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []LabelledImage{{"/a/airfield/00000001.jpg", "0"}, {"/b/bar/2.jpg", "12"}, {"val_3.jpg", "7"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: got %v, want %v", i, got[i], want[i])
		}
	}
	for _, c := range []struct{ in, want string }{
		{"a.jpg 1\nb.jpg\n", "l.txt:2: want IMAGE LABEL, got 1 fields"},
		{"a.jpg 1 extra\n", "l.txt:1: want IMAGE LABEL, got 3 fields"},
		{"\n\n", "l.txt: no IMAGE LABEL lines"},
		{strings.Repeat("x", 70<<10) + " 1\n", "longer than 65536 bytes"},
	} {
		if _, err := ParseLabelList(strings.NewReader(c.in), "l.txt"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.20q: error %v, want %q", c.in, err, c.want)
		}
	}
}

// FuzzParseLabelList: any input gives lines of two fields or an error,
// never a panic.
func FuzzParseLabelList(f *testing.F) {
	f.Add([]byte("/a/airfield/00000001.jpg 0\nPlaces365_val_00000001.jpg 165\n"))
	f.Add([]byte("a 1\nb\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseLabelList(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			return
		}
		for _, l := range got {
			if l.Image == "" || l.Label == "" || strings.ContainsAny(l.Image+l.Label, " \t\n") {
				t.Fatalf("bad line %q", l)
			}
		}
	})
}
