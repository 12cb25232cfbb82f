// Package stdlib embeds gatepipe's standard library: reusable pipeline
// modules (referenced as source = "stdlib/<dir>": datasets/fashion_mnist,
// tiers/small, tiers/base, tiers/big) and the GATE paper's data tables
// (stdlib/data: the results matrix, its summary, the published subsets).
package stdlib

import (
	"embed"
	"io/fs"
)

//go:embed datasets data tiers trainers
var files embed.FS

// FS returns the embedded files, rooted so that "datasets/fashion_mnist"
// is the module the configuration names "stdlib/datasets/fashion_mnist".
func FS() fs.FS { return files }
