package specs

import (
	"encoding/csv"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/gatepipe/gatepipe/internal/imageops"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/gatepipe/gatepipe/stdlib"
)

// torchvisionPrefix marks weights torchvision publishes:
// weights = "torchvision:resnet50.IMAGENET1K_V2".
const torchvisionPrefix = "torchvision:"

// IsTorchvisionWeights reports whether an encoder's weights name a
// torchvision weight set.
func IsTorchvisionWeights(w string) bool { return strings.HasPrefix(w, torchvisionPrefix) }

// TorchvisionWeights is one row of stdlib/data/torchvision_weights.csv
// (made by scripts/make_torchvision_weights.py from torchvision's own
// weight enums): where the file is, the preset it fits and the transform
// torchvision evaluates it with.
type TorchvisionWeights struct {
	Name, URL, Preset string
	Preprocess        imageops.Preprocess
}

// hashPrefix is torchvision's HASH_REGEX: the start of the file's SHA-256
// in its name (resnet50-11ad3fa6.pth).
var hashPrefix = regexp.MustCompile(`-([a-f0-9]+)\.`)

// Ref is the file's source: the URL, pinned on first download like any
// URL source, whose SHA-256 must start with the prefix in its name, as
// torchvision checks it.
func (w TorchvisionWeights) Ref() sources.Ref {
	name := path.Base(w.URL)
	ref := sources.Ref{URL: w.URL, Name: name}
	if m := hashPrefix.FindStringSubmatch(name); m != nil {
		ref.SHA256Prefix = m[1]
	}
	return ref
}

// LookupTorchvision finds weights = "torchvision:ARCH.WEIGHTS"; an unknown
// name is refused with the closest known ones.
func LookupTorchvision(w string) (TorchvisionWeights, error) {
	name := strings.TrimPrefix(w, torchvisionPrefix)
	table, err := torchvisionTable()
	if err != nil {
		return TorchvisionWeights{}, err
	}
	for _, t := range table {
		if t.Name == name {
			return t, nil
		}
	}
	names := make([]string, len(table))
	for i, t := range table {
		names[i] = t.Name
	}
	sort.SliceStable(names, func(i, j int) bool {
		return levenshtein.Distance(name, names[i], nil) < levenshtein.Distance(name, names[j], nil)
	})
	return TorchvisionWeights{}, fmt.Errorf("%s is not a torchvision weight set gatepipe knows; the closest: %s (stdlib/data/torchvision_weights.csv lists them)", w, strings.Join(names[:min(4, len(names))], ", "))
}

func torchvisionTable() ([]TorchvisionWeights, error) {
	f, err := stdlib.FS().Open("data/torchvision_weights.csv")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readTorchvisionTable(f)
}

func readTorchvisionTable(f fs.File) ([]TorchvisionWeights, error) {
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("torchvision_weights.csv: %v", err)
	}
	var out []TorchvisionWeights
	for _, r := range rows[1:] {
		if len(r) < 8 {
			return nil, fmt.Errorf("torchvision_weights.csv: row %v", r)
		}
		crop, _ := strconv.Atoi(r[3])
		resize, _ := strconv.Atoi(r[4])
		p := imageops.Preprocess{Size: [2]int{crop, crop}, ResizeTo: resize, Interpolation: imageops.Interpolation(r[5]), Channels: 3,
			Mean: floats(r[6]), Std: floats(r[7])}
		out = append(out, TorchvisionWeights{Name: r[0], URL: r[1], Preset: r[2], Preprocess: p})
	}
	return out, nil
}

func floats(s string) []float32 {
	var out []float32
	for _, f := range strings.Fields(s) {
		v, _ := strconv.ParseFloat(f, 32)
		out = append(out, float32(v))
	}
	return out
}
