package cliptok

import (
	"embed"
	"io/fs"
)

// subset is a subset of openai/clip-vit-base-patch16's tokenizer in the
// Hub's layout (vocab.json, merges.txt): its first 5,000 merges and a few
// later ones, every token at its real id (subset/README.md says how it
// was made). Words its merges cover get CLIP's ids; rarer words split
// into more pieces than CLIP's.
//
//go:embed subset/clip-vit-base-patch16
var subset embed.FS

// SubsetFiles are the subset's files by name (vocab.json, merges.txt):
// what the smoke mirror serves as the text tower's tokenizer, so that a
// smoke run tokenizes offline.
func SubsetFiles() map[string][]byte {
	out := map[string][]byte{}
	entries, _ := fs.ReadDir(subset, "subset/clip-vit-base-patch16")
	for _, e := range entries {
		b, _ := fs.ReadFile(subset, "subset/clip-vit-base-patch16/"+e.Name())
		out[e.Name()] = b
	}
	return out
}
