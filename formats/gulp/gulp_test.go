package gulp

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

const meta = `{"702766": {"frame_info": [[0, 3, 7260], [7260, 3, 7252]], "meta_data": [{"label": "x", "id": 702766}]},
 "803959": {"frame_info": [[14512, 1, 9256]], "meta_data": []}}`

func TestReadMeta(t *testing.T) {
	got, err := ReadMeta(strings.NewReader(meta), "meta_0.gmeta", "data_0.gulp", 23768)
	if err != nil {
		t.Fatal(err)
	}
	v := got["702766"]
	if len(got) != 2 || v.Chunk != "data_0.gulp" || len(v.Frames) != 2 || v.Frames[1] != (Frame{7260, 7249}) || got["803959"].Frames[0] != (Frame{14512, 9255}) {
		t.Fatalf("%+v", got)
	}
	for _, tc := range []struct {
		in   string
		size int64
		want string
	}{
		{`[]`, -1, "not a JSON object"},
		{meta, 20000, "does not fit a data file of 20000 bytes"},
		{`{"a": {"frame_info": []}}`, -1, `video "a" has 0 frames`},
		{`{"a": {"frame_info": [[0, 1]]}}`, -1, "is not [offset, padding, length]"},
		{`{"a": {"frame_info": [[0, 5, 8]]}}`, -1, "does not fit"},
		{`{"a": {"frame_info": [[0, 0, 8]]}, "a": {"frame_info": [[8, 0, 8]]}}`, -1, "listed twice"},
		{`{"a": {"frame_info": [[0, 0, 8]]}`, -1, "meta_0.gmeta at byte"},
	} {
		if _, err := ReadMeta(strings.NewReader(tc.in), "meta_0.gmeta", "data_0.gulp", tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReadSplit(t *testing.T) {
	clips, err := ReadSplit(strings.NewReader("0\nbrush_hair/a 0 0 0 39\n\nwave/b 1 50 0 9\n"), "train1.csv")
	if err != nil || len(clips) != 2 || clips[1] != (Clip{"wave/b", 1, 50, 0, 9}) {
		t.Fatalf("%+v %v", clips, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "empty"},
		{"51\n", "only single-label lists"},
		{"0\na 0 0 0\n", "line 2: 4 fields"},
		{"0\na x 0 0 1\n", "line 2"},
		{"0\na 0 0 5 1\n", "line 2: label 0, frames 5..1"},
	} {
		if _, err := ReadSplit(strings.NewReader(tc.in), "train1.csv"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestSparseIndices follows GATE's sparse_frame_indices(uniform=True):
// segment starts, frames repeated when the video is short.
func TestSparseIndices(t *testing.T) {
	for _, tc := range []struct {
		n, out int
		want   []int
	}{
		{40, 8, []int{0, 5, 10, 15, 20, 25, 30, 35}},
		{8, 8, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{3, 8, []int{0, 0, 0, 1, 1, 1, 2, 2}},
		{10, 4, []int{0, 2, 5, 7}},
		{1, 3, []int{0, 0, 0}},
	} {
		if got := SparseIndices(tc.n, tc.out); !slices.Equal(got, tc.want) {
			t.Errorf("SparseIndices(%d, %d) = %v, want %v", tc.n, tc.out, got, tc.want)
		}
	}
}

// FuzzReadMeta: frames always lie inside the data file, or an error.
func FuzzReadMeta(f *testing.F) {
	f.Add([]byte(meta), int64(23768))
	f.Add([]byte(`{"a": {"frame_info": [[0, 0, 8]], "meta_data": [{"x": [1, {"y": 2}]}]}}`), int64(-1))
	f.Fuzz(func(t *testing.T, data []byte, size int64) {
		got, err := ReadMeta(bytes.NewReader(data), "m", "d", size)
		if err != nil {
			return
		}
		for k, v := range got {
			for _, fr := range v.Frames {
				if fr.Offset < 0 || fr.Length <= 0 || (size >= 0 && fr.Offset+fr.Length > size) {
					t.Fatalf("video %q: frame %+v outside %d bytes", k, fr, size)
				}
			}
		}
	})
}

// FuzzReadSplit: clips have a frame range, or an error.
func FuzzReadSplit(f *testing.F) {
	f.Add([]byte("0\nbrush_hair/a 0 0 0 39\nwave/b 1 50 0 9\n"))
	f.Add([]byte("0\nabseiling/x_000001_000011.mp4 0 0 0 249 340 256\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		clips, err := ReadSplit(bytes.NewReader(data), "s")
		if err != nil {
			return
		}
		for _, c := range clips {
			if c.End < c.Start || c.Start < 0 || c.Label < 0 || c.Key == "" {
				t.Fatalf("%+v", c)
			}
		}
	})
}
