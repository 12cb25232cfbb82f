package sources

import (
	"context"
	"testing"
)

// TestSizeOfUnpinnedSources: a Hub source's size is its listing's (LFS
// sizes of the files its patterns match, README not among them) and a
// URL's its HEAD's Content-Length; nothing is downloaded and nothing is
// pinned.
func TestSizeOfUnpinnedSources(t *testing.T) {
	base := "huggingface.co/datasets/o/n/resolve/" + commit + "/"
	h, srv := newHub(t, map[string][]byte{
		base + "data/train-00000-of-00002.parquet": make([]byte, 1000),
		base + "data/train-00001-of-00002.parquet": make([]byte, 234),
		base + "README.md":                         []byte("# card"),
		"example.org/big.zip":                      make([]byte, 4321),
	})
	r, _ := newResolver(t, srv, nil, nil)
	cases := []struct {
		ref  Ref
		want Listed
	}{
		{Ref{HF: "o/n", Files: []string{"data/train-*.parquet"}}, Listed{Files: 2, Bytes: 1234}},
		{Ref{URL: "https://example.org/big.zip", Name: "big.zip"}, Listed{Files: 1, Bytes: 4321}},
	}
	for _, c := range cases {
		got, err := r.Size(context.Background(), c.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got.Files != c.want.Files || got.Bytes != c.want.Bytes || got.Unsized != 0 || len(got.Entries) != c.want.Files {
			t.Errorf("%s: %+v, want %+v", c.ref.Key(), got, c.want)
		}
		if _, err := r.Pinned(c.ref); err == nil {
			t.Errorf("%s: sizing it pinned it", c.ref.Key())
		}
	}
	if h.bytes.Load() != 0 {
		t.Fatalf("sizing downloaded %d bytes", h.bytes.Load())
	}
	if _, err := r.Size(context.Background(), Ref{URL: "https://example.org/missing.zip", Name: "missing.zip"}); err == nil {
		t.Fatal("a missing URL has a size")
	}
}
