// Package dataset implements the `dataset` block: sources fetched once into
// the content-addressed blob store (HTTP(S) with checksum, resume and
// retry; file:// and local paths), archives extracted safely, real formats
// parsed (IDX, CIFAR-10/100 binary, CSV/TSV, image folders), seeded
// train/val/test splits, and normalisation statistics, written as an
// example store (package formats/examplestore) that is itself cached.
package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gatepipe/gatepipe/formats/archive"
	"github.com/gatepipe/gatepipe/formats/hfparquet"
	"github.com/gatepipe/gatepipe/internal/readset"
	"github.com/gatepipe/gatepipe/internal/safefile"
	"github.com/gatepipe/gatepipe/nodes"
	"github.com/gatepipe/gatepipe/sources"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// Kind is the dataset block kind.
type Kind struct{}

// Name returns "dataset".
func (Kind) Name() string { return "dataset" }

// Version is bumped whenever processing changes for the same config.
// 2: images are decoded and resized as PIL does (formats/imagedec) and
// splits are written as they are decoded. 3: U8 normalisation statistics
// from exact byte counts (the last digits of mean and std may change).
// 4: image_folder reads images in sub-directories of a class, as
// torchvision's ImageFolder does; a bad example may be skipped. 5:
// masks are stored as U8 (U16 past 256 classes), Parquet masks read a
// batch at a time, paletted masks by their palette index.
func (Kind) Version() string { return "5" }

// Formats lists the accepted format values.
var Formats = []string{"idx", "cifar10", "cifar100", "csv", "tsv", "image_folder", "parquet", "image_csv", "captions_csv", "image_list", "vqa_json", "camera_traps", "gulp", "voc_mat", "hdf5", "video_list", "raw", "generated"}

var spec = hcldec.ObjectSpec{
	"generator": &hcldec.BlockSpec{TypeName: "generator", Nested: hcldec.ObjectSpec{
		"task":        &hcldec.AttrSpec{Name: "task", Type: cty.String, Required: true},
		"train":       &hcldec.AttrSpec{Name: "train", Type: cty.Number, Required: true},
		"test":        &hcldec.AttrSpec{Name: "test", Type: cty.Number, Required: true},
		"size":        &hcldec.AttrSpec{Name: "size", Type: cty.Number},
		"max_objects": &hcldec.AttrSpec{Name: "max_objects", Type: cty.Number},
		"frames":      &hcldec.AttrSpec{Name: "frames", Type: cty.Number},
		"seed":        &hcldec.AttrSpec{Name: "seed", Type: cty.Number},
	}},
	"source": &hcldec.BlockListSpec{TypeName: "source", Nested: hcldec.ObjectSpec{
		"url":         &hcldec.AttrSpec{Name: "url", Type: cty.String},
		"urls":        &hcldec.AttrSpec{Name: "urls", Type: cty.List(cty.String)},
		"hf":          &hcldec.AttrSpec{Name: "hf", Type: cty.String},
		"revision":    &hcldec.AttrSpec{Name: "revision", Type: cty.String},
		"files":       &hcldec.AttrSpec{Name: "files", Type: cty.List(cty.String)},
		"credentials": &hcldec.AttrSpec{Name: "credentials", Type: cty.String},
		"sha256":      &hcldec.AttrSpec{Name: "sha256", Type: cty.String},
		"insecure":    &hcldec.AttrSpec{Name: "insecure", Type: cty.Bool},
		"extract":     &hcldec.AttrSpec{Name: "extract", Type: cty.Bool},
		"name":        &hcldec.AttrSpec{Name: "name", Type: cty.String},
		// Limits on what extracting the source may write (archive bombs).
		"max_extract_bytes":   &hcldec.AttrSpec{Name: "max_extract_bytes", Type: cty.Number},
		"max_extract_ratio":   &hcldec.AttrSpec{Name: "max_extract_ratio", Type: cty.Number},
		"max_extract_entries": &hcldec.AttrSpec{Name: "max_extract_entries", Type: cty.Number},
	}},
	"format":        &hcldec.AttrSpec{Name: "format", Type: cty.String, Required: true},
	"examples":      &hcldec.AttrSpec{Name: "examples", Type: cty.Map(cty.Number)},
	"train":         &hcldec.AttrSpec{Name: "train", Type: cty.List(cty.String)},
	"test":          &hcldec.AttrSpec{Name: "test", Type: cty.List(cty.String)},
	"val":           &hcldec.AttrSpec{Name: "val", Type: cty.List(cty.String)},
	"image_column":  &hcldec.AttrSpec{Name: "image_column", Type: cty.String},
	"val_fraction":  &hcldec.AttrSpec{Name: "val_fraction", Type: cty.Number},
	"test_fraction": &hcldec.AttrSpec{Name: "test_fraction", Type: cty.Number},
	"split_seed":    &hcldec.AttrSpec{Name: "split_seed", Type: cty.Number},
	"max_train":     &hcldec.AttrSpec{Name: "max_train", Type: cty.Number},
	"max_val":       &hcldec.AttrSpec{Name: "max_val", Type: cty.Number},
	"max_test":      &hcldec.AttrSpec{Name: "max_test", Type: cty.Number},
	"label_column":  &hcldec.AttrSpec{Name: "label_column", Type: cty.String},
	"task":          &hcldec.AttrSpec{Name: "task", Type: cty.String},
	"image_size":    &hcldec.AttrSpec{Name: "image_size", Type: cty.List(cty.Number)},
	"channels":      &hcldec.AttrSpec{Name: "channels", Type: cty.Number},
	"normalize":     &hcldec.AttrSpec{Name: "normalize", Type: cty.String},
	"cifar_label":   &hcldec.AttrSpec{Name: "cifar_label", Type: cty.String},
	"class_names":   &hcldec.AttrSpec{Name: "class_names", Type: cty.List(cty.String)},
	"keep_classes":  &hcldec.AttrSpec{Name: "keep_classes", Type: cty.List(cty.String)},
	// image_csv and captions_csv (annotated.go).
	"annotations":     &hcldec.AttrSpec{Name: "annotations", Type: cty.List(cty.String)},
	"images":          &hcldec.AttrSpec{Name: "images", Type: cty.List(cty.String)},
	"label_separator": &hcldec.AttrSpec{Name: "label_separator", Type: cty.String},
	"caption_column":  &hcldec.AttrSpec{Name: "caption_column", Type: cty.String},
	"split_column":    &hcldec.AttrSpec{Name: "split_column", Type: cty.String},
	"max_tokens":      &hcldec.AttrSpec{Name: "max_tokens", Type: cty.Number},
	"question_column": &hcldec.AttrSpec{Name: "question_column", Type: cty.String},
	"max_vocabulary":  &hcldec.AttrSpec{Name: "max_vocabulary", Type: cty.Number},
	// camera_traps (cameratraps.go): frames per clip.
	"frames": &hcldec.AttrSpec{Name: "frames", Type: cty.Number},
	// parquet image-caption pairs (captions.go).
	"image_columns":   &hcldec.AttrSpec{Name: "image_columns", Type: cty.List(cty.String)},
	"caption_columns": &hcldec.AttrSpec{Name: "caption_columns", Type: cty.List(cty.String)},
	"metric_names":    &hcldec.AttrSpec{Name: "metric_names", Type: cty.Map(cty.String)},
	// Hostile media (media.go): what a file that cannot or may not be
	// decoded does, the pixels an image may declare, ffmpeg's limit.
	"on_bad_example":   &hcldec.AttrSpec{Name: "on_bad_example", Type: cty.String},
	"max_image_pixels": &hcldec.AttrSpec{Name: "max_image_pixels", Type: cty.Number},
	"ffmpeg_timeout":   &hcldec.AttrSpec{Name: "ffmpeg_timeout", Type: cty.String},
	// How the inputs are kept (storage.go).
	"store":        &hcldec.AttrSpec{Name: "store", Type: cty.String},
	"jpeg_quality": &hcldec.AttrSpec{Name: "jpeg_quality", Type: cty.Number},
	"keep_sources": &hcldec.AttrSpec{Name: "keep_sources", Type: cty.Bool},
}

// Spec returns the block schema.
func (Kind) Spec() hcldec.Spec { return spec }

// OutputType is the value other blocks see.
func (Kind) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{
		"path":        cty.String,
		"files":       cty.Map(cty.String),
		"num_classes": cty.Number,
		"classes":     cty.List(cty.String),
		"shape":       cty.List(cty.Number),
		"splits":      cty.Map(cty.Number),
		"task":        cty.String,
	})
}

type sourceConfig struct {
	URL         *string  `cty:"url"`
	URLs        []string `cty:"urls"`
	HF          *string  `cty:"hf"`
	Revision    *string  `cty:"revision"`
	Files       []string `cty:"files"`
	Credentials *string  `cty:"credentials"`
	SHA256      *string  `cty:"sha256"`
	Insecure    *bool    `cty:"insecure"`
	Extract     *bool    `cty:"extract"`
	Name        *string  `cty:"name"`

	MaxExtractBytes   *int64   `cty:"max_extract_bytes"`
	MaxExtractRatio   *float64 `cty:"max_extract_ratio"`
	MaxExtractEntries *int     `cty:"max_extract_entries"`
}

type generatorConfig struct {
	Task       string  `cty:"task"`
	Train      int     `cty:"train"`
	Test       int     `cty:"test"`
	Size       *int    `cty:"size"`
	MaxObjects *int    `cty:"max_objects"`
	Frames     *int    `cty:"frames"`
	Seed       *uint64 `cty:"seed"`
}

type config struct {
	Generator    *generatorConfig `cty:"generator"`
	Source       []sourceConfig   `cty:"source"`
	Format       string           `cty:"format"`
	Train        []string         `cty:"train"`
	Test         []string         `cty:"test"`
	Val          []string         `cty:"val"`
	ImageColumn  *string          `cty:"image_column"`
	ValFraction  *float64         `cty:"val_fraction"`
	TestFraction *float64         `cty:"test_fraction"`
	SplitSeed    *int64           `cty:"split_seed"`
	MaxTrain     *int             `cty:"max_train"`
	MaxVal       *int             `cty:"max_val"`
	MaxTest      *int             `cty:"max_test"`
	LabelColumn  *string          `cty:"label_column"`
	Task         *string          `cty:"task"`
	ImageSize    []int            `cty:"image_size"`
	Channels     *int             `cty:"channels"`
	Normalize    *string          `cty:"normalize"`
	CifarLabel   *string          `cty:"cifar_label"`
	ClassNames   []string         `cty:"class_names"`
	KeepClasses  []string         `cty:"keep_classes"`

	Annotations    []string `cty:"annotations"`
	Images         []string `cty:"images"`
	LabelSeparator *string  `cty:"label_separator"`
	CaptionColumn  *string  `cty:"caption_column"`
	SplitColumn    *string  `cty:"split_column"`
	MaxTokens      *int     `cty:"max_tokens"`
	QuestionColumn *string  `cty:"question_column"`
	MaxVocabulary  *int     `cty:"max_vocabulary"`
	Frames         *int     `cty:"frames"`

	ImageColumns   []string          `cty:"image_columns"`
	CaptionColumns []string          `cty:"caption_columns"`
	MetricNames    map[string]string `cty:"metric_names"`

	OnBadExample   *string `cty:"on_bad_example"`
	MaxImagePixels *int64  `cty:"max_image_pixels"`
	FFmpegTimeout  *string `cty:"ffmpeg_timeout"`
	Store          *string `cty:"store"`
	JPEGQuality    *int    `cty:"jpeg_quality"`
	KeepSources    *bool   `cty:"keep_sources"`
	// Examples are the source's published example counts per split
	// (train, val, test), for plan's estimate of the store's size.
	Examples map[string]int64 `cty:"examples"`
}

// source is one validated source.
type source struct {
	URL       string
	SHA256    string
	scheme    string // http, https, file, hf
	localPath string
	// ref is a remote source (http, https, hf), resolved and fetched by
	// the engine's sources.Resolver.
	ref     sources.Ref
	name    string // file name in the raw directory
	extract bool
	limits  archive.Limits
}

// sourceError is a source that failed to decode, with the attribute to
// point at.
type sourceError struct {
	attr string
	err  error
}

func (e *sourceError) Error() string { return e.err.Error() }

// Node is a decoded dataset block.
type Node struct {
	cfg          config
	sources      []*source
	valFraction  float64
	testFraction float64
	splitSeed    int64
	maxTrain     int
	// maxVal and maxTest cap the validation and test splits (0: all),
	// keeping a seeded subset.
	maxVal, maxTest int
	normalize       string
	task            string
	// pairs are a parquet dataset's image and caption columns (image-text
	// retrieval); more than one makes each row a group.
	pairs []hfparquet.Pair
	// batchBytes bounds one batch of a split's inputs as it is decoded
	// and written (defaultBatchBytes; tests make it small).
	batchBytes int
	// fingerprinted holds the plannedSource (SHA-256 and stamp) that
	// Fingerprint found for each local source's path: the action ID
	// stands for those bytes, so Run stores them (and refuses a file that
	// changed since), hashing the copy only when the stamp cannot vouch
	// for it.
	fingerprinted sync.Map
	// media is how hostile or damaged media are met (media.go).
	media mediaPolicy
	// jpegQuality, above 0, keeps the images as JPEGs of that quality
	// (store = "jpeg", storage.go).
	jpegQuality int
	// resolver, when set, verifies local sources with a declared sha256
	// against their stamps (Fingerprint).
	resolver *sources.Resolver
}

// decodeSources decodes a source block: one source, or one per entry of
// urls. A urls entry is named by its URL's last path element, prefixed
// with the element before it ("train-part_0.tar.gz") where two entries
// would share a name.
func decodeSources(sc sourceConfig, dir string) ([]*source, error) {
	if sc.URLs == nil {
		s, err := decodeSource(sc, dir)
		if err != nil {
			return nil, err
		}
		return []*source{s}, nil
	}
	if sc.URL != nil || sc.HF != nil || sc.Name != nil || sc.SHA256 != nil {
		return nil, &sourceError{"urls", fmt.Errorf("urls lists several files; url, hf, name and sha256 (pinned in the lock file instead) do not go with it")}
	}
	if len(sc.URLs) == 0 {
		return nil, &sourceError{"urls", fmt.Errorf("urls is empty")}
	}
	count := map[string]int{}
	for _, u := range sc.URLs {
		count[path.Base(u)]++
	}
	var out []*source
	for _, u := range sc.URLs {
		one := sc
		one.URLs, one.URL = nil, &u
		if count[path.Base(u)] > 1 {
			name := path.Base(path.Dir(u)) + "-" + path.Base(u)
			one.Name = &name
		}
		s, err := decodeSource(one, dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func decodeSource(sc sourceConfig, dir string) (*source, error) {
	s := &source{extract: true}
	if sc.SHA256 != nil {
		s.SHA256 = strings.ToLower(*sc.SHA256)
		if len(s.SHA256) != 64 || strings.Trim(s.SHA256, "0123456789abcdef") != "" {
			return nil, &sourceError{"sha256", fmt.Errorf("sha256 %q is not 64 hex digits", *sc.SHA256)}
		}
	}
	if sc.Extract != nil {
		s.extract = *sc.Extract
	}
	if sc.Credentials != nil {
		c := *sc.Credentials
		if c != sources.CredsHF && c != sources.CredsKaggle {
			return nil, &sourceError{"credentials", fmt.Errorf("credentials = %q: use \"hf\" (a Hugging Face token) or \"kaggle\" (a Kaggle API key)", c)}
		}
		s.ref.Credentials = c
	}
	if sc.HF != nil {
		return decodeHFSource(s, sc)
	}
	if sc.URL == nil {
		return nil, fmt.Errorf("a source needs url = \"...\" (a file) or hf = \"OWNER/NAME\" (a Hugging Face dataset repository)")
	}
	if sc.Revision != nil || sc.Files != nil {
		return nil, &sourceError{"files", fmt.Errorf("revision and files belong to hf sources; a url source is one file")}
	}
	s.URL = *sc.URL
	u, err := url.Parse(s.URL)
	switch {
	case err == nil && (u.Scheme == "http" || u.Scheme == "https"):
		s.scheme = u.Scheme
		s.name = filepath.Base(u.Path)
	case err == nil && u.Scheme == "file":
		s.scheme, s.localPath = "file", u.Path
		s.name = filepath.Base(u.Path)
	case err == nil && u.Scheme != "" && len(u.Scheme) > 1:
		return nil, fmt.Errorf("unsupported URL scheme %q in %s (use https://, http://, file:// or a path)", u.Scheme, s.URL)
	default:
		p := s.URL
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		s.scheme, s.localPath = "file", p
		s.name = filepath.Base(p)
	}
	if s.scheme == "file" && s.ref.Credentials != "" {
		return nil, &sourceError{"credentials", fmt.Errorf("a local file needs no credentials")}
	}
	badName := func(n string) bool {
		return n == "" || n == "." || n == ".." || strings.ContainsAny(n, "/\\\x00")
	}
	if sc.Name != nil {
		s.name = *sc.Name
		if badName(s.name) {
			return nil, &sourceError{"name", fmt.Errorf("name = %q is not a file name: it must be one path element, not empty, \".\" or \"..\", and without / or \\", s.name)}
		}
	}
	if badName(s.name) {
		return nil, fmt.Errorf("cannot derive a file name from %s; set name = \"...\"", s.URL)
	}
	if s.scheme == "http" || s.scheme == "https" {
		s.ref.URL, s.ref.Name, s.ref.SHA256 = s.URL, s.name, s.SHA256
	}
	if err := s.decodeLimits(sc); err != nil {
		return nil, err
	}
	return s, nil
}

// decodeLimits reads the source's limits on what its archive may
// extract (max_extract_bytes, _ratio, _entries).
func (s *source) decodeLimits(sc sourceConfig) error {
	if sc.MaxExtractBytes != nil {
		if *sc.MaxExtractBytes < 1 {
			return &sourceError{"max_extract_bytes", fmt.Errorf("max_extract_bytes must be positive")}
		}
		s.limits.MaxBytes = *sc.MaxExtractBytes
	}
	if sc.MaxExtractRatio != nil {
		if *sc.MaxExtractRatio < 1 {
			return &sourceError{"max_extract_ratio", fmt.Errorf("max_extract_ratio must be at least 1")}
		}
		s.limits.MaxRatio = *sc.MaxExtractRatio
	}
	if sc.MaxExtractEntries != nil {
		if *sc.MaxExtractEntries < 1 {
			return &sourceError{"max_extract_entries", fmt.Errorf("max_extract_entries must be positive")}
		}
		s.limits.MaxEntries = *sc.MaxExtractEntries
	}
	return nil
}

// decodeHFSource reads a Hugging Face dataset repository source.
func decodeHFSource(s *source, sc sourceConfig) (*source, error) {
	if sc.URL != nil {
		return nil, &sourceError{"hf", fmt.Errorf("a source has either url or hf, not both")}
	}
	if sc.SHA256 != nil || sc.Name != nil {
		return nil, &sourceError{"hf", fmt.Errorf("an hf source takes its files' checksums and names from the Hub: remove sha256 and name")}
	}
	if len(sc.Files) == 0 {
		return nil, &sourceError{"files", fmt.Errorf("an hf source needs files = [\"data/train-*.parquet\", ...]: path patterns in the repository")}
	}
	for _, f := range sc.Files {
		if _, err := path.Match(f, ""); err != nil || sources.CheckRelPath(strings.ReplaceAll(f, "*", "x")) != nil {
			return nil, &sourceError{"files", fmt.Errorf("files: %q is not a relative path pattern in the repository", f)}
		}
	}
	s.scheme = "hf"
	s.URL = "hf://" + *sc.HF
	s.ref.HF, s.ref.Files = *sc.HF, sc.Files
	if sc.Revision != nil {
		s.ref.Revision = *sc.Revision
	}
	if err := sources.CheckRepo(s.ref.HF); err != nil {
		return nil, &sourceError{"hf", err}
	}
	return s, nil
}

// Downloads lists the remote sources, which the engine pins (lock file)
// and whose checksums go into the action ID.
func (n *Node) Downloads() []sources.Ref {
	var refs []sources.Ref
	for _, s := range n.sources {
		if s.scheme != "file" {
			refs = append(refs, s.ref)
		}
	}
	return refs
}

// Extracts reports whether the file at path of ref's files is unpacked
// into the node's temporary directory: an archive of an extracted
// source, unless a tarball or zip that the format reads in place (or, for
// video_list, a compressed tarball it streams).
func (n *Node) Extracts(ref sources.Ref, path string) bool {
	for _, s := range n.sources {
		if s.scheme == "file" || s.ref.Key() != ref.Key() || !s.extract {
			continue
		}
		return n.unpacks(path)
	}
	return false
}

// unpacks reports whether an archive named name (of an extracted
// source) is unpacked into the temporary directory rather than read in
// place.
func (n *Node) unpacks(name string) bool {
	kind := archive.Kind(name)
	inPlace := kind == "tar" || kind == "zip" || kind == "tar.gz" && streamsCompressedTarballs(n.cfg.Format)
	return kind != "" && !(readsArchivesInPlace(n.cfg.Format) && inPlace)
}

// LocalCopies lists the local source files the node copies into the blob
// store, with the hash planning found (Fingerprint) or the one declared.
func (n *Node) LocalCopies() []nodes.LocalCopy {
	var out []nodes.LocalCopy
	for _, s := range n.sources {
		if s.scheme != "file" {
			continue
		}
		c := nodes.LocalCopy{Path: s.localPath, SHA256: strings.ToLower(s.SHA256), Extracts: s.extract && n.unpacks(s.name)}
		if v, ok := n.fingerprinted.Load(s.localPath); ok {
			planned := v.(plannedSource)
			c.SHA256, c.Size = planned.sum, planned.size
		} else if info, err := os.Stat(s.localPath); err == nil {
			c.Size = info.Size()
		}
		out = append(out, c)
	}
	return out
}

// Fingerprint hashes local sources that have no declared sha256, so that
// editing the file re-runs the dataset.
func (n *Node) Fingerprint(ctx context.Context, w io.Writer) error {
	for _, s := range n.sources {
		if s.scheme != "file" {
			continue
		}
		if info, err := os.Stat(s.localPath); err != nil {
			return missingSource(s, err)
		} else if err := regularSource(s, info); err != nil {
			return err
		}
		readset.Add(ctx, s.localPath)
		if s.SHA256 != "" {
			if err := n.verifyDeclared(s); err != nil {
				return err
			}
			continue
		}
		planned, err := hashLocal(s.localPath)
		if err != nil {
			return fmt.Errorf("source %s: %w", s.URL, err)
		}
		n.fingerprinted.Store(s.localPath, planned)
		fmt.Fprintf(w, "source %s %d %s\n", s.URL, planned.size, planned.sum)
	}
	return nil
}

// regularSource refuses, at plan and before any read, a local source
// that is not a regular file: a device such as /dev/zero would be hashed
// forever, and a FIFO or socket blocks the read until some other program
// writes to it.
func regularSource(s *source, info fs.FileInfo) error {
	if info.Mode().IsRegular() {
		return nil
	}
	what := safefile.Kind(info.Mode())
	where := s.localPath
	if s.URL != s.localPath {
		where = s.URL + " (" + s.localPath + ")"
	}
	return fmt.Errorf("source %s is %s, not a regular file: gatepipe reads, hashes and copies a source whole, so it must be a file with an end (save the data to a file and name that)", where, what)
}

// missingSource explains a local source that cannot be read, at plan
// time: a file under /usr/share/datasets is what one of Debian's
// dataset-NAME packages installs.
func missingSource(s *source, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("source %s: %w", s.URL, err)
	}
	hint := "check the path (a module's dir variable, or -var) or fetch the file first"
	if rest, ok := strings.CutPrefix(s.localPath, "/usr/share/datasets/"); ok {
		pkg, _, _ := strings.Cut(rest, "/")
		hint = fmt.Sprintf("it is installed by Debian's dataset-%s package: apt-get install dataset-%s (or point the module's dir variable at another copy)", pkg, pkg)
	}
	if s.URL == s.localPath {
		return fmt.Errorf("source %s does not exist; %s", s.URL, hint)
	}
	return fmt.Errorf("source %s: %s does not exist; %s", s.URL, s.localPath, hint)
}

// DefaultResources: parsing is single-threaded.
func (n *Node) DefaultResources() nodes.Resources { return nodes.Resources{CPUs: 1} }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
