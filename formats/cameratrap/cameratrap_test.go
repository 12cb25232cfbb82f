package cameratrap

import (
	"bytes"
	"strings"
	"testing"
)

const coco = `{"info": {"version": "1.0"}, "categories": [{"id": 0, "name": "empty"}],
 "images": [
  {"id": "b", "file_name": "b.jpg", "seq_id": "s1", "seq_frame_num": 1, "location": 3, "width": 1920},
  {"id": "a", "file_name": "a.jpg", "seq_id": "s1", "seq_frame_num": 0},
  {"id": "c", "file_name": "c.jpg", "seq_id": "s2", "seq_frame_num": 0, "gps": {"lat": [1, 2]}}
 ],
 "annotations": [{"id": "x", "image_id": "a", "category_id": 372}]}`

func TestReadSequences(t *testing.T) {
	seqs, err := ReadSequences(strings.NewReader(coco), "ann.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 2 || len(seqs["s1"]) != 2 || seqs["s1"][0].File != "a.jpg" || seqs["s1"][1].File != "b.jpg" || seqs["s2"][0].File != "c.jpg" {
		t.Fatalf("%+v", seqs)
	}
	for _, tc := range []struct{ in, want string }{
		{`[]`, "not a JSON object"},
		{`{"categories": []}`, `no "images" list`},
		{`{"images": [{"id": "a", "file_name": "a.jpg", "seq_frame_num": 0}]}`, "has no file_name or seq_id"},
		{`{"images": [{"id": "a", "file_name": "a.jpg", "seq_id": "s"}]}`, "has no seq_frame_num"},
		{`{"images": [{"id": "a", "file_name": "a.jpg", "seq_id": "s", "seq_frame_num": -1}]}`, "has no seq_frame_num"},
		{`{"images": [{"id": "a", "file_name": "a.jpg", "seq_id": "s", "seq_frame_num": 0}`, "ann.json at byte"},
		{`{"images": {}}`, "images is not a list"},
	} {
		if _, err := ReadSequences(strings.NewReader(tc.in), "ann.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReadCounts(t *testing.T) {
	got, err := ReadCounts(strings.NewReader("\ufeffseq_id,count\ns1,2\ns2,0\n"), "counts.csv")
	if err != nil || len(got) != 2 || got["s1"] != 2 || got["s2"] != 0 {
		t.Fatalf("%v %v", got, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no header"},
		{"seq,n\n", "lacks seq_id or count"},
		{"seq_id,count\ns1,-1\n", "line 2"},
		{"seq_id,count\ns1,x\n", "line 2"},
		{"seq_id,count\ns1,1\ns1,2\n", "line 3: sequence \"s1\" is empty or listed twice"},
		{"seq_id,count\ns1,1,9\n", "counts.csv"},
	} {
		if _, err := ReadCounts(strings.NewReader(tc.in), "counts.csv"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.in, err, tc.want)
		}
	}
}

// FuzzReadSequences: any input is a list of sequences or an error, never
// a panic.
func FuzzReadSequences(f *testing.F) {
	f.Add([]byte(coco))
	f.Add([]byte(`{"images": [{"file_name": "a", "seq_id": "s", "seq_frame_num": 3}], "x": [[{}]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		seqs, err := ReadSequences(bytes.NewReader(data), "f.json")
		if err != nil {
			return
		}
		for id, frames := range seqs {
			for i := 1; i < len(frames); i++ {
				if frames[i].Num < frames[i-1].Num || id == "" {
					t.Fatalf("sequence %q out of order: %+v", id, frames)
				}
			}
		}
	})
}

// FuzzReadCounts: counts are finite and at least 0, or an error.
func FuzzReadCounts(f *testing.F) {
	f.Add([]byte("seq_id,count\ns1,2\ns2,0\n"))
	f.Add([]byte("count,seq_id\n1e3,\"a,b\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		counts, err := ReadCounts(bytes.NewReader(data), "f.csv")
		if err != nil {
			return
		}
		for k, v := range counts {
			if v < 0 || v != v || k == "" {
				t.Fatalf("count %q = %v", k, v)
			}
		}
	})
}
